//! The database beyond `database_url` (`[database]`): a streaming replica for the API's reads.

use serde::{Deserialize, Serialize};

use super::Error;

/// Where orchestrators read what may lag a little (`[database]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// A PostgreSQL streaming replica of `database_url` (read-only; `postgres://`). Set, the
    /// API reads task lists, tasks, steps, history and the cluster's gauges there, except for
    /// a caller whose own write the replica has not replayed yet (docs/scaling.md). Unset: every
    /// read goes to `database_url`.
    pub read_url: Option<String>,
}

impl DatabaseConfig {
    /// A read URL is a PostgreSQL URL.
    pub fn validate(&self) -> Result<(), Error> {
        match &self.read_url {
            Some(url) if !url.starts_with("postgres://") && !url.starts_with("postgresql://") => {
                Err(Error::Invalid {
                    key: "database.read_url",
                    problem: "must start with postgres:// or postgresql://".into(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The same, TLS required off this machine's loopback as for `database_url`.
    pub fn normalized(mut self) -> Self {
        self.read_url = self
            .read_url
            .map(|url| super::require_tls_off_loopback(&url));
        self
    }
}
