//! Alert files: one namespace's alert rules, declared in YAML beside its templates and applied
//! with `tasker alerts apply` (each rule saved as `PUT /v1/alerts/{name}` would), read with the
//! same bounds and in the same child process as templates and schedules.
//!
//! ```yaml
//! namespace: shop
//! alerts:
//!   charges_failing:
//!     when: { kind: failures, template: charge_customer, count: 5, within: 1m }
//!     sink: { kind: webhook, url: "https://ops.example.com/hooks/tasker" }
//!     secret_env: SHOP_ALERTS_SECRET   # else Tasker makes one for a new rule
//!     suppress: 15m
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Error, ErrorKind, Position, Positions};
use crate::alerting::{AlertCondition, AlertSink};
use crate::names::identifier_problem;

/// A namespace's alert rules, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertsFile {
    /// The namespace every rule of the file watches.
    pub namespace: String,
    /// The rules, by name (names are unique across namespaces).
    #[serde(default)]
    pub alerts: BTreeMap<String, AlertRule>,
}

/// One rule of an [`AlertsFile`]: what `PUT /v1/alerts/{name}` takes but its namespace (the
/// file's), its secret named by an environment variable rather than written in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertRule {
    pub when: AlertCondition,
    pub sink: AlertSink,
    /// The environment variable holding a webhook sink's secret (read where the file is
    /// applied). Left out, a new rule gets a secret made by Tasker and a saved one keeps its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_env: Option<String>,
    /// How long after a firing notice another is held back (`15m` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress: Option<String>,
}

/// An alert file may be at most this long.
const MAX_BYTES: usize = 64 * 1024;

/// What is checked of an alert file's text before any parser reads it: its size and the
/// pre-scan's bounds (`super::bounds`).
pub fn precheck_alerts(src: &str, file: &str) -> Result<(), Error> {
    super::schedules::precheck_small(src, file, "an alert file", MAX_BYTES)
}

/// One alert file's YAML (or JSON) text from `file` (a label for errors), checked offline as
/// far as a file can be (the orchestrator checks the rest when each rule is saved); a problem
/// with its line and column where the parser knows it, else naming its field
/// (`alerts.<rule>.secret_env`).
pub fn parse_alerts(src: &str, file: &str) -> Result<AlertsFile, Error> {
    precheck_alerts(src, file)?;
    let parsed: AlertsFile = serde_norway::from_str(src).map_err(|e| {
        let at = e.location().map(|l| Position {
            line: l.line(),
            column: l.column(),
        });
        Error::at(file, at, ErrorKind::Syntax(e.to_string()))
    })?;
    let invalid = |field: &str, problem: String| {
        let at = Positions::scan(src).key(field);
        Error::at(
            file,
            at,
            ErrorKind::InvalidField {
                field: field.to_owned(),
                problem,
            },
        )
    };
    if let Some(problem) = identifier_problem(&parsed.namespace) {
        return Err(invalid("namespace", problem.to_owned()));
    }
    for (name, rule) in &parsed.alerts {
        if let Some(problem) = identifier_problem(name) {
            return Err(invalid(
                &format!("alerts.{name}"),
                format!("is not a rule name: it {problem}"),
            ));
        }
        if let Some(var) = &rule.secret_env {
            if !matches!(rule.sink, AlertSink::Webhook { .. }) {
                return Err(invalid(
                    &format!("alerts.{name}.secret_env"),
                    format!(
                        "is only for a webhook sink (this one is {})",
                        rule.sink.kind()
                    ),
                ));
            }
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                return Err(invalid(
                    &format!("alerts.{name}.secret_env"),
                    "must name an environment variable".into(),
                ));
            }
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerting::AlertKind;

    #[test]
    fn a_file_of_rules_reads_into_its_namespace() {
        let file = parse_alerts(
            "namespace: shop\nalerts:\n  charges_failing:\n    when: {kind: failures, template: charge, count: 5, within: 1m}\n    sink: {kind: webhook, url: \"https://ops.example/h\"}\n    secret_env: SHOP_SECRET\n  letters:\n    when: {kind: dead_letters}\n    sink: {kind: email, to: [ops@example.com]}\n",
            "shop.yaml",
        )
        .unwrap();
        assert_eq!(file.namespace, "shop");
        assert_eq!(file.alerts.len(), 2);
        let rule = &file.alerts["charges_failing"];
        assert_eq!(rule.when.kind, AlertKind::Failures);
        assert_eq!(rule.when.count, Some(5));
        assert_eq!(rule.secret_env.as_deref(), Some("SHOP_SECRET"));
        assert_eq!(
            file.alerts["letters"].sink,
            AlertSink::Email {
                to: vec!["ops@example.com".into()]
            }
        );
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line() {
        let unknown = parse_alerts(
            "namespace: shop\nalerts:\n  a:\n    when: {kind: failures}\n    sink: {kind: pager, url: x}\n",
            "f.yaml",
        )
        .unwrap_err();
        assert_eq!(unknown.line, Some(5), "{unknown}");
        let secret = parse_alerts(
            "namespace: shop\nalerts:\n  a:\n    when: {kind: failures}\n    sink: {kind: slack, url: x}\n    secret_env: S\n",
            "f.yaml",
        )
        .unwrap_err();
        assert!(
            secret
                .to_string()
                .contains("`alerts.a.secret_env` is only for a webhook sink (this one is slack)"),
            "{secret}"
        );
        let name = parse_alerts(
            "namespace: shop\nalerts:\n  bad name!:\n    when: {kind: failures}\n    sink: {kind: slack, url: x}\n",
            "f.yaml",
        )
        .unwrap_err();
        assert!(name.to_string().contains("not a rule name"), "{name}");
        let empty = parse_alerts("namespace: \"\"\n", "f.yaml").unwrap_err();
        assert!(
            empty.to_string().contains("`namespace` must not be empty"),
            "{empty}"
        );
    }
}
