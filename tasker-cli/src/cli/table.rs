//! The CLI's tables: plain columns (no borders) two spaces apart, laid out by comfy-table; on a
//! terminal, as wide as it is (long cells wrap) with the STATE column coloured
//! ([`super::display`]).

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};

use super::display;

/// Prints `rows` under `heads`; a head starting with `>` right-aligns its column (numbers; the
/// `>` is not printed).
pub(super) fn print(heads: &[&str], rows: impl IntoIterator<Item = Vec<String>>) {
    let mut table = Table::new();
    let state = heads.iter().position(|h| *h == "STATE");
    let colour = display::colour();
    table.load_style(presets::NOTHING);
    match display::width() {
        Some(width) => {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(width);
        }
        None => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    table.set_header(
        heads
            .iter()
            .map(|h| h.trim_start_matches('>'))
            .collect::<Vec<_>>(),
    );
    if colour {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    for row in rows {
        table.add_row(row.into_iter().enumerate().map(|(i, text)| {
            let tint = (colour && Some(i) == state)
                .then(|| display::state_colour(&text))
                .flatten();
            match tint {
                Some(c) => Cell::new(text).fg(c),
                None => Cell::new(text),
            }
        }));
    }
    for (i, head) in heads.iter().enumerate() {
        if let Some(column) = table.column_mut(i) {
            column.set_padding((0, 2));
            if head.starts_with('>') {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    out!("{}", table.trim_fmt());
}
