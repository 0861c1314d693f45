//! The paging of the list commands whose pages go back by id (a number or a UUID) (`--before`, `--all`): one page,
//! or with `--all` every page, printed as JSON or handed back as rows for a table.

use std::future::Future;

use serde::Serialize;

/// What [`read`] did: printed the JSON already, or read these rows, newest first.
pub(super) enum Listed<T> {
    Printed,
    Rows(Vec<T>),
}

/// Reads pages from `before` on with `fetch` (which returns a page's rows and its
/// `next_before`): the first page, or with `all` every one. With `json`, prints the rows read as
/// one list (`--output`: `{"items", "next"}` or JSON lines); without, returns them. When a page
/// was left unread, says on stderr how to read on: `more: {command} --before N`.
pub(super) async fn read<T, C, F, Fut>(
    mut before: Option<C>,
    all: bool,
    json: bool,
    command: &str,
    mut fetch: F,
) -> anyhow::Result<Listed<T>>
where
    T: Serialize,
    C: Copy + std::fmt::Display + Serialize,
    F: FnMut(Option<C>) -> Fut,
    Fut: Future<Output = anyhow::Result<(Vec<T>, Option<C>)>>,
{
    let mut every = Vec::new();
    let mut more = None;
    loop {
        let (rows, next) = fetch(before).await?;
        every.extend(rows);
        match next {
            Some(next) if all => before = Some(next),
            Some(next) => {
                eprintln!("more: {command} --before {next}");
                more = Some(next);
                break;
            }
            None => break,
        }
    }
    if json {
        super::output::list(&every, more)?;
        return Ok(Listed::Printed);
    }
    Ok(Listed::Rows(every))
}
