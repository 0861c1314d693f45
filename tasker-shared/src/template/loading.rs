//! Templates from a folder: every `*.yaml` / `*.yml` below it, loaded and checked together.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{Error, ErrorKind, Loaded};

/// Loads every `*.yaml` / `*.yml` template below `dir` (or `dir` itself, a file), sorted by
/// path, each parsed within [`super::child::PARSE_BUDGET`] (in a child process when this
/// program can run one). The first invalid file fails the whole load, as does the same
/// `namespace/name@version` in two files.
pub fn load_dir(dir: &Path) -> Result<Vec<Loaded>, Error> {
    let files = if dir.is_file() {
        vec![dir.to_path_buf()]
    } else {
        yaml_files(dir, collect_yaml)?
    };
    let texts = read_all(&files)?;
    let parsed = super::child::load_templates(texts, super::child::PARSE_BUDGET);
    let mut loaded: Vec<Loaded> = Vec::with_capacity(files.len());
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for (file, t) in files.into_iter().zip(parsed) {
        let mut t = t?;
        t.source = file.clone();
        let key = t.template.key();
        if let Some(first) = seen.insert(key.clone(), file.clone()) {
            return Err(Error::of_file(
                file.display().to_string(),
                ErrorKind::DuplicateTemplate(format!("{key} (also in {})", first.display())),
            ));
        }
        loaded.push(t);
    }
    Ok(loaded)
}

/// The `*.yaml` / `*.yml` files `collect` finds below `dir`, sorted by path.
pub(crate) fn yaml_files(
    dir: &Path,
    collect: fn(&Path, &mut Vec<PathBuf>) -> std::io::Result<()>,
) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    collect(dir, &mut files)
        .map_err(|e| Error::of_file(dir.display().to_string(), ErrorKind::Io(e.to_string())))?;
    files.sort();
    Ok(files)
}

/// Each file's label (its path) and text.
pub(crate) fn read_all(files: &[PathBuf]) -> Result<Vec<(String, String)>, Error> {
    files
        .iter()
        .map(|file| {
            let label = file.display().to_string();
            std::fs::read_to_string(file)
                .map(|text| (label.clone(), text))
                .map_err(|e| Error::of_file(label, ErrorKind::Io(e.to_string())))
        })
        .collect()
}

/// The distinct namespaces of `templates`, sorted: the step queues a worker for them consumes.
pub fn namespaces(templates: &[Loaded]) -> Vec<String> {
    let set: std::collections::BTreeSet<&str> = templates
        .iter()
        .map(|t| t.template.namespace.as_str())
        .collect();
    set.into_iter().map(str::to_owned).collect()
}

/// The namespaces a worker with `handlers` consumes: those of the templates' steps whose handler
/// it has (a step's own `namespace:` or its template's). Every step a worker runs counts when
/// `handlers` is `None` (a worker that does not say what it has).
pub fn served_namespaces(templates: &[Loaded], handlers: Option<&[String]>) -> Vec<String> {
    let set: std::collections::BTreeSet<&str> = templates
        .iter()
        .flat_map(|t| {
            t.template
                .steps
                .iter()
                .filter(|s| s.runs_on_worker())
                .filter(|s| handlers.is_none_or(|h| h.contains(&s.handler)))
                .map(|s| crate::compose::step_namespace(s, &t.template.namespace))
        })
        .collect();
    set.into_iter().map(str::to_owned).collect()
}

/// The folder name that holds schedules, not templates (`crate::time::load_schedules`).
pub const SCHEDULES_DIR: &str = "schedules";

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n == SCHEDULES_DIR) {
            continue;
        }
        if path.is_dir() {
            collect_yaml(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

/// Every `*.yaml` / `*.yml` in a `schedules/` folder below `dir`.
pub fn schedule_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == SCHEDULES_DIR) {
            collect_yaml(&path, out)?;
        } else {
            schedule_files(&path, out)?;
        }
    }
    Ok(())
}
