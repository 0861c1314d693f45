//! A template's limits for one new task: its concurrency and rate keys resolved against the
//! task's context (`crate::flow` says what the declarations are), and the named rate keys a
//! template declares.

use serde_json::{Value, json};

use super::{StepTemplate, TaskTemplate};
use crate::flow::{KeyError, MAX_KEY_BYTES};

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
    template: &TaskTemplate,
    step: &StepTemplate,
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
pub fn named_rate_keys(template: &TaskTemplate) -> Vec<(String, (u32, u64, u32))> {
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
    use crate::flow::Priority;

    fn template(yaml: &str) -> TaskTemplate {
        TaskTemplate::load(yaml, "t.yaml").unwrap().template
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
            let e = TaskTemplate::load(&yaml, "t.yaml").unwrap_err().to_string();
            assert!(e.contains(field), "{to}: {e}");
        }
        let on_wait = LIMITED.replace(
            "wait: {sleep: 1s}",
            "wait: {sleep: 1s}\n    concurrency: {key: /customer, limit: 1}",
        );
        let e = TaskTemplate::load(&on_wait, "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("concurrency"), "{e}");
    }
}
