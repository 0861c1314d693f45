//! Fair sharing: a task's priority, concurrency limits per key and rate limits, as a template
//! says them, how they are checked, and how a new task's steps get their limits resolved
//! against its context. The engine (slots claimed under a row lock, rate tokens, throttled
//! steps) lives in the orchestrator's SQL (`tasker_dispatch`, `tasker_claim`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The longest key value a limit may have, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// The most slots one concurrency key may have.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The longest period of a rate limit.
pub const MAX_RATE_PERIOD: Duration = Duration::from_secs(24 * 3600);

/// How soon a task's steps run when workers have more work than they can start at once.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    #[default]
    Normal,
    Low,
}

impl Priority {
    pub const ALL: [Priority; 3] = [Priority::High, Priority::Normal, Priority::Low];

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    /// The engine's rank: 0 high, 1 normal, 2 low (smaller goes first).
    pub fn rank(self) -> i16 {
        match self {
            Priority::High => 0,
            Priority::Normal => 1,
            Priority::Low => 2,
        }
    }

    pub fn from_rank(rank: i16) -> Priority {
        match rank {
            0 => Priority::High,
            2 => Priority::Low,
            _ => Priority::Normal,
        }
    }

    pub fn parse(s: &str) -> Option<Priority> {
        Priority::ALL.into_iter().find(|p| p.as_str() == s)
    }

    pub fn is_normal(&self) -> bool {
        *self == Priority::Normal
    }
}

/// `concurrency:` — at most `limit` steps with the same key value in flight at once, across
/// the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencySpec {
    /// A JSON pointer into the task's context; its value is the key.
    pub key: String,
    pub limit: u32,
}

/// `rate_limit:` — at most `limit` step starts per `per` for one key, `burst` of them at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    /// A name shared cluster-wide, or a JSON pointer into the context whose value names it.
    pub key: String,
    pub limit: u32,
    /// The period, as a duration (`"1s"`, `"1m"`).
    pub per: String,
    /// How many may start at once (default: `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// A problem with a limit, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub problem: String,
}

fn problem(field: String, problem: impl Into<String>) -> Problem {
    Problem {
        field,
        problem: problem.into(),
    }
}

fn check_pointer(field: &str, pointer: &str) -> Result<(), Problem> {
    if crate::time::pointer_path(pointer).is_none_or(|p| p.is_empty()) {
        return Err(problem(
            field.to_owned(),
            format!(
                "{pointer:?} is not a JSON pointer into the context (such as \"/customer_id\")"
            ),
        ));
    }
    Ok(())
}

fn check_limit(field: String, limit: u32, most: u32) -> Result<(), Problem> {
    if limit == 0 || limit > most {
        return Err(problem(
            field,
            format!("must be between 1 and {most} (got {limit})"),
        ));
    }
    Ok(())
}

/// Whether `name` can be a rate limit's literal key.
fn is_key_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_KEY_BYTES
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

impl ConcurrencySpec {
    /// Checks it; `at` names it (`concurrency`, `steps.<name>.concurrency`).
    pub fn check(&self, at: &str) -> Result<(), Problem> {
        check_pointer(&format!("{at}.key"), &self.key)?;
        check_limit(format!("{at}.limit"), self.limit, MAX_CONCURRENCY)
    }
}

impl RateLimitSpec {
    /// Its numbers as the engine keeps them: the limit, the period in milliseconds (at least
    /// 1), the burst (the limit unless given).
    pub fn numbers(&self) -> (u32, u64, u32) {
        let per = self
            .period("rate_limit")
            .map_or(1000, |d| d.as_millis() as u64);
        (self.limit, per.max(1), self.burst.unwrap_or(self.limit))
    }

    /// Checks it; `at` names it (`rate_limit`, `steps.<name>.rate_limit`).
    pub fn check(&self, at: &str) -> Result<(), Problem> {
        if self.key.starts_with('/') {
            check_pointer(&format!("{at}.key"), &self.key)?;
        } else if !is_key_name(&self.key) {
            return Err(problem(
                format!("{at}.key"),
                format!(
                    "{:?} is neither a JSON pointer into the context nor a name of 1 to 128 ASCII \
                     letters, digits, `_`, `-`, `.` and `:`",
                    self.key
                ),
            ));
        }
        check_limit(format!("{at}.limit"), self.limit, u32::MAX)?;
        if let Some(b) = self.burst {
            check_limit(format!("{at}.burst"), b, u32::MAX)?;
        }
        self.period(at).map(|_| ())
    }

    /// The period, checked: more than zero, at most a day.
    pub fn period(&self, at: &str) -> Result<Duration, Problem> {
        let field = format!("{at}.per");
        let d = crate::time::parse_duration(&field, &self.per)
            .map_err(|e| problem(e.field, e.problem))?;
        if d.is_zero() || d > MAX_RATE_PERIOD {
            return Err(problem(
                field,
                format!("must be more than 0s and at most 24h (got {:?})", self.per),
            ));
        }
        Ok(d)
    }
}

/// Why a new task's limits could not be resolved against its context: the API's 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KeyError {
    /// `concurrency_key_missing`, `concurrency_key_too_long`, `rate_limit_key_missing` or
    /// `rate_limit_key_too_long`.
    pub code: &'static str,
    pub message: String,
}

/// The key value a pointer reads from the context: a string as it is, a number or boolean as
/// its JSON text.
fn key_value(context: &Value, pointer: &str, what: &str, step: &str) -> Result<String, KeyError> {
    let missing = if what == "concurrency" {
        "concurrency_key_missing"
    } else {
        "rate_limit_key_missing"
    };
    let value = match context.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
        found => {
            return Err(KeyError {
                code: missing,
                message: format!(
                    "step {step:?}: the {what} key {pointer:?} {} in the task's context; it must \
                     be a string, number or boolean",
                    match found {
                        None => "is missing".to_owned(),
                        Some(v) => format!("is {}", json_kind(v)),
                    }
                ),
            });
        }
    };
    if value.is_empty() || value.len() > MAX_KEY_BYTES {
        return Err(KeyError {
            code: if what == "concurrency" {
                "concurrency_key_too_long"
            } else {
                "rate_limit_key_too_long"
            },
            message: format!(
                "step {step:?}: the {what} key {pointer:?} must be 1 to {MAX_KEY_BYTES} bytes \
                 (got {})",
                value.len()
            ),
        });
    }
    Ok(value)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        _ => "a scalar",
    }
}

/// The limits of one step of a new task, resolved against its context, in the engine's form
/// (`steps.limits`): `{"concurrency": {"key", "limit"}, "rate": {"key", "limit", "per_ms",
/// "burst"}}`, either absent; `None` when neither applies (or the step runs on no worker).
pub fn resolve(
    template: &crate::TaskTemplate,
    step: &crate::StepTemplate,
    context: &Value,
) -> Result<Option<Value>, KeyError> {
    if !step.runs_on_worker() {
        return Ok(None);
    }
    let mut limits = serde_json::Map::new();
    let own = step.concurrency.is_some();
    if let Some(c) = step.concurrency.as_ref().or(template.concurrency.as_ref()) {
        let value = key_value(context, &c.key, "concurrency", &step.name)?;
        let scope = if own {
            format!("{}/{}/{}", template.namespace, template.name, step.name)
        } else {
            format!("{}/{}", template.namespace, template.name)
        };
        limits.insert(
            "concurrency".into(),
            json!({"key": format!("{scope}:{value}"), "limit": c.limit}),
        );
    }
    if let Some(r) = step.rate_limit.as_ref().or(template.rate_limit.as_ref()) {
        // A key read from the context is the template's namespace's own (`<namespace>/<value>`:
        // a name has no `/`), so one team's keys never share a bucket with, or show, another's.
        let key = if r.key.starts_with('/') {
            let value = key_value(context, &r.key, "rate limit", &step.name)?;
            format!("{}/{value}", template.namespace)
        } else {
            r.key.clone()
        };
        let (limit, per_ms, burst) = r.numbers();
        limits.insert(
            "rate".into(),
            json!({"key": key, "limit": limit, "per_ms": per_ms, "burst": burst}),
        );
    }
    Ok((!limits.is_empty()).then_some(Value::Object(limits)))
}

/// The named rate keys (`stripe`, not a pointer) a template's steps use, each with its numbers
/// (limit, per in milliseconds, burst): what the first template to name a key declares.
pub fn named_rate_keys(template: &crate::TaskTemplate) -> Vec<(String, (u32, u64, u32))> {
    let mut keys: Vec<(String, (u32, u64, u32))> = template
        .rate_limit
        .iter()
        .chain(template.steps.iter().filter_map(|s| s.rate_limit.as_ref()))
        .filter(|r| !r.key.starts_with('/'))
        .map(|r| (r.key.clone(), r.numbers()))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(yaml: &str) -> crate::TaskTemplate {
        crate::TaskTemplate::load(yaml, "t.yaml").unwrap().template
    }

    const LIMITED: &str = "namespace: shop
name: charge
version: '1'
priority: low
concurrency: {key: /customer, limit: 2}
steps:
  - name: a
    handler: a
  - name: b
    handler: b
    depends_on: [a]
    concurrency: {key: /customer, limit: 1}
    rate_limit: {key: stripe, limit: 100, per: 1s, burst: 20}
  - name: c
    depends_on: [b]
    wait: {sleep: 1s}
";

    #[test]
    fn limits_resolve_per_step_with_the_template_level_as_default() {
        let t = template(LIMITED);
        assert_eq!(t.priority, Some(Priority::Low));
        let ctx = json!({"customer": "A"});
        assert_eq!(
            resolve(&t, &t.steps[0], &ctx).unwrap(),
            Some(json!({"concurrency": {"key": "shop/charge:A", "limit": 2}}))
        );
        assert_eq!(
            resolve(&t, &t.steps[1], &ctx).unwrap(),
            Some(json!({
                "concurrency": {"key": "shop/charge/b:A", "limit": 1},
                "rate": {"key": "stripe", "limit": 100, "per_ms": 1000, "burst": 20},
            }))
        );
        assert_eq!(resolve(&t, &t.steps[2], &ctx).unwrap(), None, "a wait step");
        let n = json!({"customer": 42});
        assert_eq!(
            resolve(&t, &t.steps[0], &n).unwrap().unwrap()["concurrency"]["key"],
            "shop/charge:42"
        );
    }

    #[test]
    fn a_key_missing_or_too_long_is_a_named_error() {
        let t = template(LIMITED);
        let e = resolve(&t, &t.steps[0], &json!({})).unwrap_err();
        assert_eq!(e.code, "concurrency_key_missing");
        assert!(e.message.contains("/customer"), "{}", e.message);
        let e = resolve(&t, &t.steps[0], &json!({"customer": {"id": 1}})).unwrap_err();
        assert_eq!(e.code, "concurrency_key_missing");
        assert!(e.message.contains("an object"), "{}", e.message);
        let e = resolve(&t, &t.steps[0], &json!({"customer": "x".repeat(129)})).unwrap_err();
        assert_eq!(e.code, "concurrency_key_too_long");
        let rate = LIMITED.replace("key: stripe", "key: /account");
        let t = template(&rate);
        let e = resolve(&t, &t.steps[1], &json!({"customer": "A"})).unwrap_err();
        assert_eq!(e.code, "rate_limit_key_missing");
        let ok = resolve(
            &t,
            &t.steps[1],
            &json!({"customer": "A", "account": "acct_1"}),
        );
        // A key read from the context is its template's namespace's own.
        assert_eq!(ok.unwrap().unwrap()["rate"]["key"], "shop/acct_1");
        assert_eq!(named_rate_keys(&t), []);
    }

    #[test]
    fn named_keys_are_declared_with_their_numbers() {
        let t = template(LIMITED);
        assert_eq!(
            named_rate_keys(&t),
            [("stripe".to_owned(), (100, 1000, 20))]
        );
    }

    #[test]
    fn bad_declarations_name_their_field() {
        for (from, to, field) in [
            ("limit: 2}", "limit: 0}", "concurrency.limit"),
            (
                "key: /customer, limit: 2",
                "key: customer, limit: 2",
                "concurrency.key",
            ),
            ("per: 1s", "per: 0s", "steps.b.rate_limit.per"),
            ("per: 1s", "per: 2d", "steps.b.rate_limit.per"),
            ("burst: 20", "burst: 0", "steps.b.rate_limit.burst"),
            ("key: stripe", "key: 'no spaces'", "steps.b.rate_limit.key"),
            (
                "key: /customer, limit: 1",
                "key: /customer, limit: 1, extra: 1",
                "steps[1].concurrency",
            ),
        ] {
            let yaml = LIMITED.replace(from, to);
            let e = crate::TaskTemplate::load(&yaml, "t.yaml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{to}: {e}");
        }
        let on_wait = LIMITED.replace(
            "wait: {sleep: 1s}",
            "wait: {sleep: 1s}\n    concurrency: {key: /customer, limit: 1}",
        );
        let e = crate::TaskTemplate::load(&on_wait, "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("concurrency"), "{e}");
    }

    #[test]
    fn priorities_order_and_parse() {
        assert!(Priority::High < Priority::Normal && Priority::Normal < Priority::Low);
        for p in Priority::ALL {
            assert_eq!(Priority::parse(p.as_str()), Some(p));
            assert_eq!(Priority::from_rank(p.rank()), p);
        }
        assert_eq!(Priority::parse("urgent"), None);
    }
}
