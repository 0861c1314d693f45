//! Schedule files: the `schedules/` folders of a templates folder, each file one
//! [`ScheduleSpec`], read with the same bounds and in the same child process as templates.

use super::loading::{read_all, schedule_files, yaml_files};
use super::{Error, ErrorKind, Position, Positions, child};
use crate::time::ScheduleSpec;

/// Schedule files: every `*.yaml` / `*.yml` in a `schedules/` folder below `dir` (a templates
/// folder; template loading leaves `schedules/` folders out), each one [`ScheduleSpec`],
/// checked, sorted by path. A problem names the file and, where it can be found, the line.
pub fn load_schedules(
    dir: &std::path::Path,
) -> Result<Vec<(std::path::PathBuf, ScheduleSpec)>, Error> {
    if dir.is_file() {
        // A single template file has no `schedules/` folder below it.
        return Ok(Vec::new());
    }
    let files = yaml_files(dir, schedule_files)?;
    let texts = read_all(&files)?;
    files
        .into_iter()
        .zip(child::parse_schedules(texts, child::PARSE_BUDGET))
        .map(|(file, spec)| spec.map(|s| (file, s)))
        .collect()
}

/// What is checked of a schedule's text before any parser reads it: its size and the
/// pre-scan's bounds (`super::bounds`).
pub fn precheck_schedule(src: &str, file: &str) -> Result<(), Error> {
    precheck_small(src, file, "a schedule file", 64 * 1024)
}

/// A small file's text (a schedule's, an alert file's) checked before any parser reads it: at
/// most `max` bytes, and within the pre-scan's bounds.
pub(super) fn precheck_small(src: &str, file: &str, what: &str, max: usize) -> Result<(), Error> {
    if src.len() > max {
        return Err(Error::of_file(
            file,
            ErrorKind::InvalidField {
                field: "(file)".into(),
                problem: format!("{what} may be at most {max} bytes"),
            },
        ));
    }
    super::bounds::check(src).map_err(|(line, kind)| Error {
        line: Some(line),
        ..Error::of_file(file, kind)
    })
}

/// One schedule's YAML (or JSON) text from `file` (a label for errors), checked; a problem with
/// its line and column where known (the YAML parser's positions).
pub fn parse_schedule(src: &str, file: &str) -> Result<ScheduleSpec, Error> {
    precheck_schedule(src, file)?;
    let spec: ScheduleSpec = serde_norway::from_str(src).map_err(|e| {
        let at = e.location().map(|l| Position {
            line: l.line(),
            column: l.column(),
        });
        Error::at(file, at, ErrorKind::Syntax(e.to_string()))
    })?;
    spec.check().map_err(|e| {
        let at = Positions::scan(src).key(&e.field);
        Error::at(
            file,
            at,
            ErrorKind::InvalidField {
                field: e.field,
                problem: e.problem,
            },
        )
    })?;
    Ok(spec)
}
