//! `tasker templates`: list, validate offline, register and show task templates; the JSON Schema
//! of their format.

use super::output;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use tasker_client::Client;

use super::args::current_user;

#[derive(Debug, Subcommand)]
pub(super) enum TemplatesCommand {
    /// List every registered version, with when and by whom it was registered.
    List {
        /// Only the templates of this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Only the versions of templates with this name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Register every template below each DIR with the orchestrator; a running orchestrator
    /// uses them at once. Exit 1 if any was refused (invalid, or a changed definition under a
    /// version already registered).
    Register {
        /// Folders to search for template files (YAML), recursively.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Recorded as who registered them (default `user:$USER`).
        #[arg(long)]
        by: Option<String>,
    },
    /// Check every template below each DIR (or each FILE) offline, exactly as an orchestrator
    /// would at start-up, and the schedules of its `schedules/` folders; prints
    /// `file:line: problem` and exits 1 on the first invalid one. Each file is parsed in a
    /// child process stopped after 2 s.
    Validate {
        /// Folders to search for template files (YAML), recursively, or template files.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Print the JSON Schema of the template file format (or, with --schedule, of a schedule
    /// file), for an editor that checks YAML as you type (docs/templates.md).
    Schema {
        /// The schedule file format instead.
        #[arg(long)]
        schedule: bool,
    },
    /// Show one template version (the newest unless --version) and its DAG.
    Show {
        /// The template's namespace.
        namespace: String,
        /// The template's name.
        name: String,
        /// This version rather than the newest.
        #[arg(long)]
        version: Option<String>,
    },
}

pub(super) async fn run(
    client: &Client,
    action: Option<TemplatesCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(TemplatesCommand::List {
        namespace: None,
        name: None,
    }) {
        TemplatesCommand::List { namespace, name } => list(client, namespace, name, json).await,
        TemplatesCommand::Validate { dirs } => validate(&dirs, json),
        TemplatesCommand::Schema { schedule } => {
            use tasker_shared::template::{SchemaKind, json_schema};
            let kind = if schedule {
                SchemaKind::Schedule
            } else {
                SchemaKind::Template
            };
            out!("{}", serde_json::to_string_pretty(&json_schema(kind))?);
            Ok(ExitCode::SUCCESS)
        }
        TemplatesCommand::Register { dirs, by } => register(client, &dirs, by, json).await,
        TemplatesCommand::Show {
            namespace,
            name,
            version,
        } => show(client, &namespace, &name, version, json).await,
    }
}

/// Every registered version, with when and by whom.
async fn list(
    client: &Client,
    namespace: Option<String>,
    name: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let list = client
        .templates(namespace.as_deref(), name.as_deref())
        .await?;
    if json {
        output::list(&list, None::<()>)?;
        return Ok(ExitCode::SUCCESS);
    }
    super::table::print(
        &["TEMPLATE", "REGISTERED", "BY", "DESCRIPTION"],
        list.into_iter().map(|t| {
            vec![
                t.key(),
                t.registered_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                t.registered_by.clone().unwrap_or_else(|| "-".into()),
                t.description.clone().unwrap_or_default(),
            ]
        }),
    );
    Ok(ExitCode::SUCCESS)
}

/// Every template below `dirs`, checked offline as an orchestrator would at start-up.
fn validate(dirs: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let mut templates = Vec::new();
    let mut schedules = Vec::new();
    for dir in dirs {
        let loaded = tasker_shared::template::load_dir(dir).map_err(|e| Invalid(e.to_string()))?;
        if loaded.is_empty() {
            return Err(Invalid(format!(
                "{}: no templates (*.yaml, *.yml) found",
                dir.display()
            ))
            .into());
        }
        for t in loaded {
            if !json {
                out!("ok  {}  {}", t.template.key(), t.source.display());
            }
            templates.push(serde_json::json!({
                "namespace": t.template.namespace, "name": t.template.name,
                "version": t.template.version, "file": t.source,
            }));
        }
        // And the schedules of its `schedules/` folders, as a worker registers them.
        for (file, s) in
            tasker_shared::template::load_schedules(dir).map_err(|e| Invalid(e.to_string()))?
        {
            if !json {
                out!(
                    "ok  schedule {}/{}  {}",
                    s.namespace,
                    s.name,
                    file.display()
                );
            }
            schedules
                .push(serde_json::json!({"namespace": s.namespace, "name": s.name, "file": file}));
        }
    }
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"templates": templates, "schedules": schedules})
            )?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A template or schedule file `templates validate` refused: exit 1, and under `--json` the
/// code `invalid_template`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Every template below `dirs`, registered; exit 1 if any was refused.
async fn register(
    client: &Client,
    dirs: &[PathBuf],
    by: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let by = by.unwrap_or_else(current_user);
    let (mut registered, mut refused) = (Vec::new(), Vec::new());
    for dir in dirs {
        // Validated here first: the same errors, before anything reaches the server.
        let loaded = tasker_shared::template::load_dir(dir).map_err(|e| Invalid(e.to_string()))?;
        for t in loaded {
            let file = t.source.display().to_string();
            let text =
                std::fs::read_to_string(&t.source).with_context(|| format!("reading {file}"))?;
            match client
                .register_template(&text, Some(&file), Some(&by))
                .await
            {
                Ok(r) => {
                    if !json {
                        let what = if r.created {
                            "registered"
                        } else {
                            "unchanged "
                        };
                        out!("{what}  {}  {file}", r.template.key());
                    }
                    registered.push(serde_json::json!({
                        "template": r.template.key(), "file": file, "created": r.created,
                    }));
                }
                Err(tasker_client::Error::Api {
                    status,
                    code,
                    message,
                }) if (400..500).contains(&status) => {
                    if !json {
                        eprintln!("refused     {}  {file}: {message}", t.template.key());
                    }
                    refused.push(serde_json::json!({
                        "template": t.template.key(), "file": file, "code": code, "message": message,
                    }));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"registered": registered, "refused": refused})
            )?
        );
    }
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One version and its DAG.
async fn show(
    client: &Client,
    namespace: &str,
    name: &str,
    version: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let t = client.template(namespace, name, version.as_deref()).await?;
    if json {
        output::one(&t)?;
        return Ok(ExitCode::SUCCESS);
    }
    out!("template   {}", t.key());
    if let Some(d) = &t.description {
        out!("           {d}");
    }
    out!(
        "registered {} by {}",
        t.registered_at.format("%Y-%m-%d %H:%M:%S UTC"),
        t.registered_by.as_deref().unwrap_or("unknown")
    );
    let template: tasker_shared::TaskTemplate = serde_json::from_value(t.definition)
        .context("the server sent a definition this CLI cannot read")?;
    let loaded = template
        .validate("<server>")
        .context("the server sent a definition that does not validate")?;
    for line in dag_lines(&loaded) {
        out!("{line}");
    }
    for u in t.unserved_steps.iter().flatten() {
        out!(
            "UNSERVED   step {}: no live worker serves namespace {} / handler {} (tasker workers)",
            u.step,
            u.namespace,
            u.handler
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The DAG as text, one step per line in dependency order, indented by depth:
///
/// ```text
/// steps (depth, name, handler, after):
///   0  start       double
///   1    left      square        after start
/// ```
fn dag_lines(loaded: &tasker_shared::template::Loaded) -> Vec<String> {
    let dag = &loaded.dag;
    let depths = dag.depths();
    let mut order: Vec<usize> = (0..dag.len()).collect();
    order.sort_by_key(|&i| (depths[i], i));
    let width = order
        .iter()
        .map(|&i| 2 * depths[i] + dag.name(i).len())
        .max()
        .unwrap_or(0);
    let mut lines = vec![format!("steps ({}), by depth:", dag.len())];
    for i in order {
        let step = &loaded.template.steps[i];
        let named = format!("{}{}", "  ".repeat(depths[i]), dag.name(i));
        let after: Vec<&str> = dag.parents(i).iter().map(|&p| dag.name(p)).collect();
        let runs = match (&step.child, &step.namespace) {
            (Some(c), _) => format!(
                "child → {}/{}",
                c.namespace.as_deref().unwrap_or(&loaded.template.namespace),
                c.template
            ),
            (None, Some(ns)) => format!("{} [{ns}]", step.handler),
            (None, None) => step.handler.clone(),
        };
        let mut line = format!(
            "  {:>2}  {named:<width$}  {:<8}  {runs}",
            depths[i],
            step.engine_type().as_str(),
        );
        if !after.is_empty() {
            line.push_str(&format!("  after {}", after.join(", ")));
        }
        lines.push(line);
    }
    lines
}
