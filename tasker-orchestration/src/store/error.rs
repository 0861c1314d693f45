//! How a storage call fails: unreachable (worth retrying), refused by PostgreSQL, or answered
//! with something this release cannot read.

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database cannot be reached (connection refused or lost, pool exhausted, server
    /// shutting down): worth retrying later.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The database answered with an error: a bug or bad data, not worth retrying as is.
    #[error("database: {0}")]
    Query(#[source] sqlx::Error),
    /// A statement ran past its timeout (a list query past `orchestrator.list_timeout_ms`).
    #[error("database statement timed out: {0}")]
    TimedOut(#[source] sqlx::Error),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("creating SQL function {name}: {source}")]
    Function {
        name: &'static str,
        #[source]
        source: sqlx::Error,
    },
    /// A function's parameters or result differ from the one in the database: replacing it
    /// would mean dropping it under every orchestrator running, so this start refuses instead.
    #[error(
        "SQL function {name} is in the database with other parameters or another result; it is \
         not dropped, since running orchestrators may call it: a changed signature needs a new \
         function name"
    )]
    IncompatibleFunction { name: &'static str },
    /// An engine function answered with JSON this release cannot read.
    #[error("{function} answered what cannot be read: {source}")]
    Answer {
        function: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A batch of results could not be encoded to send.
    #[error("a result batch does not encode: {0}")]
    Encode(#[source] serde_json::Error),
    /// A state stored in the database that this release does not know.
    #[error("unknown task state {0:?} stored")]
    UnknownState(String),
    /// A new task's context lacks a key its limits read (or has one too long): nothing was
    /// created. The API answers 422 with its code.
    #[error("{0}")]
    Limits(tasker_shared::flow::KeyError),
    /// A template names a rate key another namespace declared, with other numbers: nothing
    /// was registered. The API answers 409 `rate_key_owned`.
    #[error(
        "the rate key {key:?} is declared by namespace {owner:?} as {declared}; a template of \
         another namespace may name it only with the same limit, per and burst (or use a key \
         of its own)"
    )]
    RateKeyOwned {
        key: String,
        owner: String,
        declared: String,
    },
}

impl Error {
    /// Sorts a driver error into [`Error::Unavailable`] or [`Error::Query`] by its kind and,
    /// for server errors, by SQLSTATE class, never by message text.
    pub fn from_sqlx(e: sqlx::Error) -> Self {
        let unavailable = match &e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|c| {
                // 08: connection exception; 57P0x: admin/crash shutdown, cannot connect now;
                // 53300: too many connections.
                c.starts_with("08") || c.starts_with("57P0") || c == "53300"
            }),
            _ => false,
        };
        let canceled =
            matches!(&e, sqlx::Error::Database(db) if db.code().as_deref() == Some("57014"));
        if unavailable {
            Error::Unavailable(e)
        } else if canceled {
            Error::TimedOut(e)
        } else {
            Error::Query(e)
        }
    }

    /// Whether the failure is the moment's, not the data's: the database unreachable or
    /// restarting, a deadlock or a serialization conflict, a lock or a statement timed out, a
    /// function replaced under a cached plan (`XX000 cache lookup failed`), anything but what
    /// PostgreSQL refuses a value for on its merits — classes 22 (data exception: a NUL, an
    /// out-of-range number), 23 (integrity) and 54 (a program limit: too large). Worth
    /// retrying whole; never a reason to fail a step.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Unavailable(_) => true,
            Error::Query(sqlx::Error::Database(db)) => !db
                .code()
                .is_some_and(|c| c.starts_with("22") || c.starts_with("23") || c.starts_with("54")),
            Error::Query(_) => true,
            _ => false,
        }
    }

    /// A deadlock or serialization failure: the transaction can be retried as a whole.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Query(sqlx::Error::Database(e)) => {
                matches!(e.code().as_deref(), Some("40001" | "40P01"))
            }
            _ => false,
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::from_sqlx(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;
