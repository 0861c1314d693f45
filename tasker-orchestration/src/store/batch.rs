//! What the two kinds of operations by filter share ([`super::operations`] over tasks,
//! [`super::letter_operations`] over dead letters): what one batch did, and how their queries'
//! arguments are bound.

use sqlx::Arguments;
use sqlx::postgres::PgArguments;

use crate::effects::Effects;

/// What one batch did (`Store::operate`, `Store::discard_batch`).
#[derive(Debug, Default)]
pub struct Batch {
    /// The operation's state after it: `running`, `complete`, `cancelled`, `failed`, or `busy`
    /// (another transaction held it; nothing done).
    pub state: String,
    pub acted: u64,
    pub skipped: u64,
    /// What the tasks acted on leave to do.
    pub effects: Effects,
}

/// Adds `value` to `args`: values of these types always encode.
pub(super) fn bind<'q, T>(args: &mut PgArguments, value: T)
where
    T: 'q + sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    args.add(value)
        .expect("a text, time, uuid or JSON value always encodes");
}
