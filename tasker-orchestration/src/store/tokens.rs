//! API tokens (migrations 0010, 0013): created with a scope, optionally limited to namespaces
//! and to a lifetime, stored as their SHA-256 (computed here: the token itself never reaches
//! PostgreSQL, nor its statement log), looked up by the API on each request that needs one,
//! revoked by name. A broker user named like a live token speaks for it ([`Store::sender`]).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tasker_shared::namespaces::Patterns;

use super::{Result, Store};

/// What a token may do; each scope includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every `GET`: tasks, steps, history, templates, dead letters, `/metrics`.
    Read,
    /// And create, cancel and repair tasks, register templates.
    Write,
    /// And replay and discard dead letters.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The holder of a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's id (`api_tokens.id`): unlike its name, never reused after a revocation.
    pub id: i64,
    pub name: String,
    pub scope: Scope,
    /// The namespaces it covers; `None`: every namespace.
    pub namespaces: Option<Patterns>,
}

impl Principal {
    /// Whether this token may touch `namespace`'s tasks, steps, templates and dead letters.
    pub fn covers(&self, namespace: &str) -> bool {
        self.namespaces.as_ref().is_none_or(|p| p.covers(namespace))
    }
}

/// A token to create.
#[derive(Debug, Clone)]
pub struct NewToken<'a> {
    pub name: &'a str,
    pub scope: Scope,
    /// `None`: every namespace.
    pub namespaces: Option<&'a Patterns>,
    /// When it stops working; `None`: never.
    pub expires_at: Option<DateTime<Utc>>,
    pub created_by: Option<&'a str>,
}

/// What PostgreSQL stores of a token: its SHA-256.
fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

#[derive(sqlx::FromRow)]
struct PrincipalRow {
    id: i64,
    name: String,
    scope: String,
    namespaces: Option<Vec<String>>,
}

impl PrincipalRow {
    /// `None` for a row this release cannot read (an unknown scope, a bad pattern): such a
    /// token works for nothing rather than for more than it says.
    fn principal(self) -> Option<Principal> {
        let namespaces = match self.namespaces {
            None => None,
            Some(list) => Some(Patterns::new(list).ok()?),
        };
        Some(Principal {
            scope: Scope::parse(&self.scope)?,
            id: self.id,
            name: self.name,
            namespaces,
        })
    }
}

/// A token as listed: never the token itself.
pub use tasker_shared::api::TokenInfo as TokenView;

/// Why a token could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("a token named {0:?} exists; revoke it first or choose another name")]
    NameTaken(String),
    #[error("a token name must be 1 to 128 characters, none of them control characters")]
    InvalidName,
    /// The operating system gave no random bytes for the token.
    #[error("no randomness for a token: {0}")]
    NoRandomness(String),
    #[error(transparent)]
    Store(#[from] super::Error),
}

impl Store {
    /// Creates a token; returns it (the only time it is seen) and its id.
    pub async fn create_token(
        &self,
        new: &NewToken<'_>,
    ) -> std::result::Result<(String, i64), CreateError> {
        let name = new.name;
        if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
            return Err(CreateError::InvalidName);
        }
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| CreateError::NoRandomness(e.to_string()))?;
        let token = format!(
            "tsk_{}",
            secret
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let created_by = new
            .created_by
            .map(|b| b.chars().take(256).collect::<String>());
        let inserted = sqlx::query_scalar(
            "INSERT INTO api_tokens (name, scope, hash, created_by, namespaces, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING
             RETURNING id",
        )
        .bind(name)
        .bind(new.scope.as_str())
        .bind(digest(&token))
        .bind(created_by.filter(|b| !b.is_empty()))
        .bind(new.namespaces.map(Patterns::as_slice))
        .bind(new.expires_at)
        .fetch_optional(&self.pool)
        .await
        .map_err(super::Error::from)?;
        match inserted {
            Some(id) => Ok((token, id)),
            None => Err(CreateError::NameTaken(name.to_owned())),
        }
    }

    /// The holder of `token`, if it is a live token (not revoked, not expired).
    pub async fn principal(&self, token: &str) -> Result<Option<Principal>> {
        let row: Option<PrincipalRow> = sqlx::query_as(
            "SELECT id, name, scope, namespaces FROM api_tokens
             WHERE hash = $1 AND revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > now())",
        )
        .bind(digest(token))
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(PrincipalRow::principal))
    }

    /// Who a broker user speaks for: the live token of the same name, if it may write (a
    /// worker's token); `None` if there is none.
    pub async fn sender(&self, broker_user: &str) -> Result<Option<Principal>> {
        let row: Option<PrincipalRow> = sqlx::query_as(
            "SELECT id, name, scope, namespaces FROM api_tokens
             WHERE name = $1 AND revoked_at IS NULL AND scope IN ('write', 'admin')
               AND (expires_at IS NULL OR expires_at > now())",
        )
        .bind(broker_user)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(PrincipalRow::principal))
    }

    /// Live tokens, oldest first (expired ones included, with `expires_at`).
    pub async fn tokens(&self) -> Result<Vec<TokenView>> {
        Ok(sqlx::query_as(
            "SELECT id, name, scope, created_at, created_by, namespaces, expires_at
             FROM api_tokens WHERE revoked_at IS NULL ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Revokes the live token named `name`; whether there was one.
    pub async fn revoke_token(&self, name: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL",
        )
        .bind(name)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
