//! The CLI's tables: plain columns (no borders) two spaces apart, laid out by comfy-table.

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

/// Prints `rows` under `heads`; a head starting with `>` right-aligns its column (numbers; the
/// `>` is not printed).
pub(super) fn print(heads: &[&str], rows: impl IntoIterator<Item = Vec<String>>) {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(
            heads
                .iter()
                .map(|h| h.trim_start_matches('>'))
                .collect::<Vec<_>>(),
        )
        .add_rows(rows);
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
