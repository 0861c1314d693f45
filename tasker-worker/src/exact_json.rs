//! JSON that keeps its integers exact in JavaScript. A JavaScript number holds integers exactly
//! only up to 2^53 − 1, and `JSON.parse` rounds larger ones without a word; so the TypeScript
//! binding hands such integers over as strings marked `"\u0000int:<decimal>"`, which its
//! JavaScript side turns into `BigInt`, and turns the marked strings a handler's outcome holds
//! back into the exact integers. Text without such integers (nearly all) crosses unchanged and
//! unparsed.

use serde_json::Value;

/// The mark of an integer carried as a string.
pub const MARK: &str = "\u{0}int:";

/// The largest integer a JavaScript number holds exactly.
const SAFE: u64 = (1 << 53) - 1;

/// `json` with every integer beyond ±(2^53 − 1) replaced by its marked string.
pub fn mark_big_integers(json: String) -> String {
    // Such an integer has at least 16 digits; text without a run of 16 needs nothing.
    if !has_digit_run(json.as_bytes(), 16) {
        return json;
    }
    let Ok(mut value) = serde_json::from_str::<Value>(&json) else {
        return json;
    };
    if !mark(&mut value) {
        return json;
    }
    serde_json::to_string(&value).unwrap_or(json)
}

/// `json` with every marked string replaced by its integer (the text unchanged if it has none).
pub fn unmark_big_integers(json: &str) -> std::borrow::Cow<'_, str> {
    // In JSON text the mark's NUL is the escape `\u0000`.
    if !json.contains("\\u0000int:") {
        return json.into();
    }
    let Ok(mut value) = serde_json::from_str::<Value>(json) else {
        return json.into();
    };
    unmark(&mut value);
    serde_json::to_string(&value).map_or(json.into(), Into::into)
}

fn has_digit_run(bytes: &[u8], n: usize) -> bool {
    let mut run = 0;
    for b in bytes {
        if b.is_ascii_digit() {
            run += 1;
            if run >= n {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// Marks the big integers of `v`; whether there was one.
fn mark(v: &mut Value) -> bool {
    match v {
        Value::Number(n) => {
            let big = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > SAFE,
                (None, Some(i)) => i.unsigned_abs() > SAFE,
                _ => false,
            };
            if big {
                *v = Value::String(format!("{MARK}{n}"));
            }
            big
        }
        Value::Array(items) => items.iter_mut().fold(false, |any, i| mark(i) | any),
        Value::Object(map) => map.values_mut().fold(false, |any, i| mark(i) | any),
        _ => false,
    }
}

fn unmark(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Some(digits) = s.strip_prefix(MARK)
                && let Ok(n) = digits.parse::<serde_json::Number>()
            {
                *v = Value::Number(n);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unmark),
        Value::Object(map) => map.values_mut().for_each(unmark),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_integers_cross_marked_and_come_back_exact() {
        let text = r#"{"n":9007199254740993,"m":-9007199254740993,"ok":9007199254740991,"s":"𝄞 1234567890123456789","f":1.5}"#;
        let marked = mark_big_integers(text.to_owned());
        let v: Value = serde_json::from_str(&marked).unwrap();
        assert_eq!(v["n"], format!("{MARK}9007199254740993"));
        assert_eq!(v["m"], format!("{MARK}-9007199254740993"));
        assert_eq!(v["ok"], 9007199254740991_u64);
        assert_eq!(v["s"], "𝄞 1234567890123456789");
        let back: Value = serde_json::from_str(&unmark_big_integers(&marked)).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn text_without_big_integers_is_left_alone() {
        let text = r#"[{"a":123,"b":"x"}]"#.to_owned();
        assert_eq!(mark_big_integers(text.clone()), text);
        assert!(matches!(
            unmark_big_integers(&text),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
