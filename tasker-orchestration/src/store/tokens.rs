//! API tokens (migration 0010): created with a scope, stored as their SHA-256, looked up by the
//! API on each request that needs one, revoked by name.

use serde::Serialize;

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
    pub name: String,
    pub scope: Scope,
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
    #[error(transparent)]
    Store(#[from] super::Error),
}

impl Store {
    /// Creates a token; returns it (the only time it is seen) and its id.
    pub async fn create_token(
        &self,
        name: &str,
        scope: Scope,
        created_by: Option<&str>,
    ) -> std::result::Result<(String, i64), CreateError> {
        if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
            return Err(CreateError::InvalidName);
        }
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| {
            CreateError::Store(super::Error::Corrupt(format!("no randomness: {e}")))
        })?;
        let token = format!(
            "tsk_{}",
            secret
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let created_by = created_by.map(|b| b.chars().take(256).collect::<String>());
        let inserted = sqlx::query_scalar(
            "INSERT INTO api_tokens (name, scope, hash, created_by)
             VALUES ($1, $2, sha256(convert_to($3, 'UTF8')), $4)
             ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING
             RETURNING id",
        )
        .bind(name)
        .bind(scope.as_str())
        .bind(&token)
        .bind(created_by.filter(|b| !b.is_empty()))
        .fetch_optional(&self.pool)
        .await
        .map_err(super::Error::from)?;
        match inserted {
            Some(id) => Ok((token, id)),
            None => Err(CreateError::NameTaken(name.to_owned())),
        }
    }

    /// The holder of `token`, if it is a live token.
    pub async fn principal(&self, token: &str) -> Result<Option<Principal>> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT name, scope FROM api_tokens
             WHERE hash = sha256(convert_to($1, 'UTF8')) AND revoked_at IS NULL",
        )
        .bind(token)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row
            .and_then(|(name, scope)| Scope::parse(&scope).map(|scope| Principal { name, scope })))
    }

    /// Live tokens, oldest first.
    pub async fn tokens(&self) -> Result<Vec<TokenView>> {
        Ok(sqlx::query_as(
            "SELECT id, name, scope, created_at, created_by FROM api_tokens
             WHERE revoked_at IS NULL ORDER BY id",
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
