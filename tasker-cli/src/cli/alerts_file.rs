//! `tasker alerts apply FILE…`: a namespace's alert rules declared in files (one namespace per
//! file, `tasker_shared::template::AlertsFile`), saved rule by rule; with `--prune`, the rules
//! of those namespaces that no file declares are removed, so the files are the whole truth.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tasker_client::{Alert, Client, PutAlert};
use tasker_shared::template::{AlertsFile, child};

/// Checks every file offline first (file:line for a problem, a secret's variable set, no rule
/// declared twice), then saves each rule; exit 1 if any was refused.
pub(super) async fn apply(
    client: &Client,
    paths: &[PathBuf],
    prune: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Declared {
        rules: declared,
        namespaces,
    } = read(paths)?;
    let saved: BTreeMap<String, Alert> = client
        .alerts()
        .await?
        .into_iter()
        .map(|a| (a.name.clone(), a))
        .collect();
    let mut refused = false;
    for (name, (file, spec)) in &declared {
        if let Some(other) = saved.get(name).filter(|a| a.namespace != spec.namespace) {
            eprintln!(
                "{}: refused: alert {name} is a rule of namespace {} (remove it there, or rename this one)",
                file.display(),
                other.namespace
            );
            refused = true;
            continue;
        }
        match client.put_alert(name, spec).await {
            Ok((alert, created)) => {
                if json {
                    out!("{}", serde_json::to_string(&alert)?);
                    continue;
                }
                let how = if created { "created" } else { "updated" };
                out!("{how} alert {name} ({})", file.display());
                if let Some(secret) = &alert.secret {
                    out!("  secret {secret}  (shown this once: give it to the receiver now)");
                }
            }
            Err(tasker_client::Error::Api {
                status,
                code,
                message,
            }) if status < 500 => {
                eprintln!(
                    "{}: alert {name} refused: {message} ({code})",
                    file.display()
                );
                refused = true;
            }
            Err(e) => return Err(e.into()),
        }
    }
    for alert in saved.values() {
        if !namespaces.contains(&alert.namespace) || declared.contains_key(&alert.name) {
            continue;
        }
        if prune {
            client.delete_alert(&alert.name).await?;
            if !json {
                out!("removed alert {} (no file declares it)", alert.name);
            }
        } else if !json {
            out!(
                "kept alert {} of {}: no file declares it (--prune removes it)",
                alert.name,
                alert.namespace
            );
        }
    }
    Ok(if refused {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the files declare.
struct Declared {
    /// Every rule, by name, with its file and what `PUT` takes.
    rules: BTreeMap<String, (PathBuf, PutAlert)>,
    /// The namespaces the files are of (a file may declare no rule: `--prune` then empties its
    /// namespace).
    namespaces: BTreeSet<String>,
}

fn read(paths: &[PathBuf]) -> anyhow::Result<Declared> {
    let mut texts = Vec::with_capacity(paths.len());
    for path in paths {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{label}: cannot read it: {e}"))?;
        texts.push((label, text));
    }
    // Parsed in a child of this program, killed at its budget.
    let files = child::parse_alerts(texts, child::PARSE_BUDGET);
    let mut declared: BTreeMap<String, (PathBuf, PutAlert)> = BTreeMap::new();
    let mut namespaces = BTreeSet::new();
    for (path, file) in paths.iter().zip(files) {
        let file = file?;
        namespaces.insert(file.namespace.clone());
        for (name, spec) in rules(path, file)? {
            if let Some((first, _)) = declared.get(&name) {
                anyhow::bail!(
                    "{}: alert {name} is declared twice (first in {})",
                    path.display(),
                    first.display()
                );
            }
            declared.insert(name, (path.clone(), spec));
        }
    }
    Ok(Declared {
        rules: declared,
        namespaces,
    })
}

/// A file's rules as `PUT /v1/alerts/{name}` takes them, each secret read from its variable.
fn rules(path: &Path, file: AlertsFile) -> anyhow::Result<Vec<(String, PutAlert)>> {
    let AlertsFile { namespace, alerts } = file;
    alerts
        .into_iter()
        .map(|(name, rule)| {
            let secret = match &rule.secret_env {
                None => None,
                Some(var) => Some(std::env::var(var).map_err(|_| {
                    anyhow::anyhow!(
                        "{}: alert {name}: its secret's variable {var} is not set",
                        path.display()
                    )
                })?),
            };
            let spec = PutAlert {
                namespace: namespace.clone(),
                when: rule.when,
                sink: rule.sink,
                secret,
                suppress: rule.suppress,
            };
            Ok((name, spec))
        })
        .collect()
}
