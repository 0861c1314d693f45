//! How the CLI shows things on a terminal, decided once at start: long values cut to fit
//! (`--full`: whole), tables as wide as the terminal, states coloured — colour only on a
//! terminal and never with `NO_COLOR` set (or `CLICOLOR=0`); a pipe gets plain text.

use std::sync::OnceLock;

use comfy_table::Color;

#[derive(Debug, Clone, Copy)]
struct Display {
    full: bool,
    colour: bool,
    /// The terminal's width when stdout is one that says it (and is not absurdly narrow).
    width: Option<u16>,
}

/// Narrower than this, a terminal's width is not trusted (a pseudo-terminal that reports 0).
const MIN_WIDTH: u16 = 40;

static DISPLAY: OnceLock<Display> = OnceLock::new();

/// Longest value shown in a table cell or a summary line without `--full`, in characters.
const CLIP: usize = 160;

/// Decides once, from `--full` and the terminal.
pub(super) fn init(full: bool) {
    let term = console::Term::stdout();
    let width = term
        .is_term()
        .then(|| term.size_checked())
        .flatten()
        .map(|(_, cols)| cols)
        .filter(|cols| *cols >= MIN_WIDTH);
    let _ = DISPLAY.set(Display {
        full,
        colour: console::colors_enabled() && term.is_term(),
        width,
    });
}

fn get() -> Display {
    *DISPLAY.get_or_init(|| Display {
        full: false,
        colour: false,
        width: None,
    })
}

/// The width tables fit in: a terminal's, when it says one; `None`: as wide as they are.
pub(super) fn width() -> Option<u16> {
    get().width
}

/// Whether states are coloured.
pub(super) fn colour() -> bool {
    get().colour
}

/// `text` whole with `--full`, else cut to [`CLIP`] characters with how much was left out.
pub(super) fn clip(text: &str) -> String {
    let count = text.chars().count();
    if get().full || count <= CLIP {
        return text.to_owned();
    }
    let kept: String = text.chars().take(CLIP).collect();
    format!("{kept}… (+{} chars; --full)", count - CLIP)
}

/// The colour of a task's or a step's state.
pub(super) fn state_colour(state: &str) -> Option<Color> {
    Some(match state {
        "complete" | "completed" => Color::Green,
        "error" | "failed" => Color::Red,
        "running" => Color::Cyan,
        "enqueued" | "waiting" | "waiting_retry" | "scheduled" | "throttled" => Color::Yellow,
        "cancelled" | "skipped" => Color::DarkGrey,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_say_so() {
        let long = "x".repeat(CLIP + 40);
        let cut = clip(&long);
        assert!(cut.starts_with(&"x".repeat(CLIP)));
        assert!(cut.ends_with("… (+40 chars; --full)"), "{cut}");
        assert_eq!(clip("short"), "short");
    }
}
