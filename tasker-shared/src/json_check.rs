//! Limits on JSON that Tasker stores: PostgreSQL's `jsonb` refuses a NUL character (`\u0000`)
//! anywhere in a string or key, and deeply nested documents exhaust its parser's stack. A value
//! that crosses either is refused where it enters — an API request, a template, a handler's
//! result — with the JSON pointer of the first offending place, instead of failing later in a
//! transaction other work shares.

use serde_json::Value;

/// Deepest nesting of arrays and objects accepted (the top level is depth 1).
pub const MAX_DEPTH: usize = 64;

/// Why a JSON value cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("{at}: contains a NUL character (\\u0000), which cannot be stored")]
    Nul { at: String },
    #[error("{at}: nested deeper than {max} levels")]
    TooDeep { at: String, max: usize },
}

impl Problem {
    /// A stable, machine-readable name.
    pub fn code(&self) -> &'static str {
        match self {
            Problem::Nul { .. } => "nul_character",
            Problem::TooDeep { .. } => "too_deep",
        }
    }
}

/// Checks `value` for NUL characters and for nesting deeper than `max_depth`. Iterative, so a
/// hostile document cannot overflow this stack either.
pub fn check(value: &Value, max_depth: usize) -> Result<(), Problem> {
    // (value, depth, JSON pointer of value)
    let mut stack: Vec<(&Value, usize, String)> = vec![(value, 1, String::new())];
    while let Some((v, depth, at)) = stack.pop() {
        let pointer = |at: &str| {
            if at.is_empty() {
                "/".to_owned()
            } else {
                at.to_owned()
            }
        };
        match v {
            Value::String(s) if s.contains('\0') => return Err(Problem::Nul { at: pointer(&at) }),
            Value::Array(_) | Value::Object(_) if depth > max_depth => {
                return Err(Problem::TooDeep {
                    at: pointer(&at),
                    max: max_depth,
                });
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    stack.push((item, depth + 1, format!("{at}/{i}")));
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let child = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    if k.contains('\0') {
                        return Err(Problem::Nul { at: child });
                    }
                    stack.push((item, depth + 1, child));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The path segments of a JSON pointer (`/a/b~1c` is `["a", "b/c"]`), or `None` if it is not
/// one (it must start with `/` and name something).
pub fn pointer_path(pointer: &str) -> Option<Vec<String>> {
    let rest = pointer.strip_prefix('/')?;
    if pointer.len() > 256 || pointer.chars().any(char::is_control) {
        return None;
    }
    Some(
        rest.split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// A pointer into an event: `/id`, `/name`, `/key` or `/data…`.
pub fn event_pointer(pointer: &str) -> Result<Vec<String>, String> {
    let path = pointer_path(pointer)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("{pointer:?} is not a JSON pointer (such as \"/data/order_id\")"))?;
    match path[0].as_str() {
        "id" | "name" | "key" if path.len() == 1 => Ok(path),
        "data" => Ok(path),
        _ => Err(format!(
            "{pointer:?} reads neither /id, /name, /key nor /data… of the event"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..depth {
            v = json!([v]);
        }
        v
    }

    #[test]
    fn nul_in_a_value_or_a_key_is_found_with_its_pointer() {
        assert_eq!(
            check(&json!({"a": [1, "x\u{0}y"]}), MAX_DEPTH),
            Err(Problem::Nul { at: "/a/1".into() })
        );
        assert_eq!(
            check(&json!({"k\u{0}": 1}), MAX_DEPTH),
            Err(Problem::Nul {
                at: "/k\u{0}".into()
            })
        );
        assert_eq!(
            check(&json!("\u{0}"), MAX_DEPTH),
            Err(Problem::Nul { at: "/".into() })
        );
    }

    #[test]
    fn depth_is_bounded_and_counted_from_the_top_level() {
        assert_eq!(check(&nested(MAX_DEPTH), MAX_DEPTH), Ok(()));
        let err = check(&nested(MAX_DEPTH + 1), MAX_DEPTH).unwrap_err();
        assert_eq!(err.code(), "too_deep");
        // Much deeper: still a clean answer, found without recursion.
        assert_eq!(
            check(&nested(500), MAX_DEPTH).unwrap_err().code(),
            "too_deep"
        );
    }

    #[test]
    fn ordinary_documents_pass() {
        let v = json!({"order": {"id": 7, "lines": [{"sku": "a/b~c", "qty": 2}], "note": "ok\n"}});
        assert_eq!(check(&v, MAX_DEPTH), Ok(()));
    }
}
