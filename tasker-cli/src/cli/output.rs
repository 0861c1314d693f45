//! What the CLI prints for a program rather than a person (`--output json|jsonl`, `--json`),
//! decided once at start: one shape for every list, `{"items": […], "next": …}` (`next`: what
//! to pass as `--before` for the page after, `null` at the end), or with `jsonl` one item per
//! line and nothing else on stdout (the next page's hint goes to stderr). A single object (a
//! task, an operation) is printed as itself: pretty with `json`, on one line with `jsonl`.

use std::sync::OnceLock;

use serde::Serialize;

/// `--output`: how answers are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// Tables and summaries for a person (colour and width on a terminal).
    #[default]
    Table,
    /// JSON: lists as `{"items": [...], "next": ...}`, one object as itself.
    Json,
    /// JSON lines: one item of a list per line (a single object on one line).
    Jsonl,
}

static OUTPUT: OnceLock<Output> = OnceLock::new();

/// Decides once, from `--output` (and `--json`, the same as `--output json`).
pub(super) fn init(output: Output) {
    let _ = OUTPUT.set(output);
}

fn get() -> Output {
    *OUTPUT.get().unwrap_or(&Output::Table)
}

/// The JSON of one list: its items and the cursor of the page after (`None`: the last page).
#[derive(Serialize)]
struct Envelope<'a, T: Serialize, N: Serialize> {
    items: &'a [T],
    next: Option<N>,
}

/// Prints a list as `--output` says: the envelope, or one item per line. `next` is the cursor
/// the command's `--before` takes; with `jsonl` it is left to the caller's stderr hint.
pub(super) fn list<T: Serialize, N: Serialize>(items: &[T], next: Option<N>) -> anyhow::Result<()> {
    match get() {
        Output::Jsonl => {
            for item in items {
                out!("{}", serde_json::to_string(item)?);
            }
        }
        _ => out!(
            "{}",
            serde_json::to_string_pretty(&Envelope { items, next })?
        ),
    }
    Ok(())
}

/// Prints one answer (a task, an operation, a count): pretty JSON, or one line with `jsonl`.
pub(super) fn one<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    match get() {
        Output::Jsonl => out!("{}", serde_json::to_string(value)?),
        _ => out!("{}", serde_json::to_string_pretty(value)?),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_envelope_names_its_items_and_next_page() {
        let page = Envelope {
            items: &[1, 2],
            next: Some("abc"),
        };
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            serde_json::json!({"items": [1, 2], "next": "abc"})
        );
        let last = Envelope::<u8, u8> {
            items: &[],
            next: None,
        };
        assert_eq!(
            serde_json::to_value(&last).unwrap(),
            serde_json::json!({"items": [], "next": null})
        );
    }
}
