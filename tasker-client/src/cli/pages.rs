//! The paging of the list commands whose pages go back by id (`--before`, `--all`): one page,
//! or with `--all` every page, printed as JSON or handed back as rows for a table.

use std::future::Future;

use serde::Serialize;

/// What [`read`] did: printed the JSON already, or read these rows, newest first.
pub(super) enum Listed<T> {
    Printed,
    Rows(Vec<T>),
}

/// Reads pages from `before` on with `fetch` (which returns a page, its rows and the
/// `next_before`): the first page, or with `all` every one. With `json`, prints the first page
/// as the API answered it (or, with `all`, every row as one array); without, returns the rows.
/// When a page was left unread, says on stderr how to read on: `more: {command} --before N`.
pub(super) async fn read<P, T, F, Fut>(
    mut before: Option<i64>,
    all: bool,
    json: bool,
    command: &str,
    mut fetch: F,
) -> anyhow::Result<Listed<T>>
where
    P: Serialize,
    T: Serialize,
    F: FnMut(Option<i64>) -> Fut,
    Fut: Future<Output = anyhow::Result<(P, Vec<T>, Option<i64>)>>,
{
    let mut every = Vec::new();
    loop {
        let (page, rows, next) = fetch(before).await?;
        if json && !all {
            out!("{}", serde_json::to_string_pretty(&page)?);
            return Ok(Listed::Printed);
        }
        every.extend(rows);
        match next {
            Some(next) if all => before = Some(next),
            Some(next) => {
                eprintln!("more: {command} --before {next}");
                break;
            }
            None => break,
        }
    }
    if json {
        out!("{}", serde_json::to_string_pretty(&every)?);
        return Ok(Listed::Printed);
    }
    Ok(Listed::Rows(every))
}
