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
    /// The token's id: what work it creates or saves records.
    pub id: i64,
    pub name: String,
    pub scope: Scope,
    /// The namespaces it covers; `None`: every namespace.
    pub namespaces: Option<Patterns>,
    /// When it stops working; `None`: never.
    pub expires_at: Option<DateTime<Utc>>,
}

impl Principal {
    /// Whether this token may touch `namespace`'s tasks, steps, templates and dead letters.
    pub fn covers(&self, namespace: &str) -> bool {
        self.namespaces.as_ref().is_none_or(|p| p.covers(namespace))
    }

    /// Whether it has expired by `now` (a cached principal is never trusted past its expiry).
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|e| e <= now)
    }

    /// Whether this token covers every namespace of `namespaces` (`None`: every namespace).
    pub fn covers_all(&self, namespaces: Option<&Patterns>) -> bool {
        match (&self.namespaces, namespaces) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(mine), Some(theirs)) => theirs.within(mine),
        }
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
    /// The token creating it through the API: the new one never outlives it, is revoked with
    /// it, and takes over a broker user only from tokens within its namespaces. `None`: an
    /// operator at the database (`tasker-orchestrator token create`).
    pub minter: Option<&'a Principal>,
}

/// When a token asked to expire at `asked` (`None`: never) expires when `minter` creates it:
/// never after `minter` itself.
pub fn lifetime_within(
    asked: Option<DateTime<Utc>>,
    minter: Option<&Principal>,
) -> Option<DateTime<Utc>> {
    match (asked, minter.and_then(|m| m.expires_at)) {
        (Some(asked), Some(limit)) => Some(asked.min(limit)),
        (asked, limit) => asked.or(limit),
    }
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
    expires_at: Option<DateTime<Utc>>,
}

const PRINCIPAL: &str = "SELECT id, name, scope, namespaces, expires_at FROM api_tokens";

impl PrincipalRow {
    /// `None` for a row this release cannot read (an unknown scope, a bad pattern): such a
    /// token works for nothing rather than for more than it says.
    fn principal(self) -> Option<Principal> {
        let namespaces = match self.namespaces {
            None => None,
            Some(list) => Some(Patterns::new(list).ok()?),
        };
        Some(Principal {
            id: self.id,
            scope: Scope::parse(&self.scope)?,
            name: self.name,
            namespaces,
            expires_at: self.expires_at,
        })
    }
}

/// A token as listed: never the token itself.
pub use tasker_shared::api::TokenInfo as TokenView;

/// A token just created.
#[derive(Debug, Clone)]
pub struct Minted {
    /// The token itself: shown this once, never stored.
    pub token: String,
    pub id: i64,
    /// The broker user whose results speak for it (`None`: its name already spoke for a token
    /// of namespaces its creator does not cover, so none does).
    pub broker_user: Option<String>,
}

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
    /// Creates a token; returns it (the only time it is seen), its id and the broker user it
    /// speaks for.
    pub async fn create_token(
        &self,
        new: &NewToken<'_>,
    ) -> std::result::Result<Minted, CreateError> {
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
        let expires_at = lifetime_within(new.expires_at, new.minter);
        let broker_user = self
            .broker_user_for(name, new.minter)
            .await
            .map_err(super::Error::from)?;
        let inserted = sqlx::query_scalar(
            "INSERT INTO api_tokens (name, scope, hash, created_by, namespaces, expires_at,
                                     minted_by, broker_user)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING
             RETURNING id",
        )
        .bind(name)
        .bind(new.scope.as_str())
        .bind(digest(&token))
        .bind(created_by.filter(|b| !b.is_empty()))
        .bind(new.namespaces.map(Patterns::as_slice))
        .bind(expires_at)
        .bind(new.minter.map(|m| m.id))
        .bind(&broker_user)
        .fetch_optional(&self.pool)
        .await
        .map_err(super::Error::from)?;
        match inserted {
            Some(id) => Ok(Minted {
                token,
                id,
                broker_user,
            }),
            None => Err(CreateError::NameTaken(name.to_owned())),
        }
    }

    /// The broker user a new token named `name` speaks for: its own name, unless that user
    /// already spoke for a token (live or revoked) of namespaces `minter` does not cover — one
    /// team cannot take over another team's broker user by reusing a token name.
    async fn broker_user_for(
        &self,
        name: &str,
        minter: Option<&Principal>,
    ) -> sqlx::Result<Option<String>> {
        let Some(minter) = minter else {
            return Ok(Some(name.to_owned()));
        };
        let earlier: Vec<Option<Vec<String>>> =
            sqlx::query_scalar("SELECT namespaces FROM api_tokens WHERE broker_user = $1")
                .bind(name)
                .fetch_all(&self.pool)
                .await?;
        let takes_over = earlier.into_iter().all(|namespaces| match namespaces {
            None => minter.namespaces.is_none(),
            Some(list) => Patterns::new(list).is_ok_and(|p| minter.covers_all(Some(&p))),
        });
        Ok(takes_over.then(|| name.to_owned()))
    }

    /// The holder of `token`, if it is a live token (not revoked, not expired).
    pub async fn principal(&self, token: &str) -> Result<Option<Principal>> {
        let row: Option<PrincipalRow> = sqlx::query_as(&format!(
            "{PRINCIPAL} WHERE hash = $1 AND revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > now())"
        ))
        .bind(digest(token))
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(PrincipalRow::principal))
    }

    /// The live token with id `id` (work records it: a child start, a schedule's fire is
    /// judged with it); `None` if it was revoked, has expired, or never was.
    pub async fn principal_by_id(&self, id: i64) -> Result<Option<Principal>> {
        let row: Option<PrincipalRow> = sqlx::query_as(&format!(
            "{PRINCIPAL} WHERE id = $1 AND revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > now())"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(PrincipalRow::principal))
    }

    /// Who a broker user speaks for: the live token bound to it (made with its name, see
    /// [`NewToken::minter`]), if it may write (a worker's token); `None` if there is none.
    pub async fn sender(&self, broker_user: &str) -> Result<Option<Principal>> {
        let row: Option<PrincipalRow> = sqlx::query_as(&format!(
            "{PRINCIPAL} WHERE broker_user = $1 AND revoked_at IS NULL
               AND scope IN ('write', 'admin')
               AND (expires_at IS NULL OR expires_at > now())"
        ))
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

    /// Revokes the live token named `name` and every live token it minted, theirs too, down
    /// the tree; the names revoked (empty: there was no such token).
    pub async fn revoke_token(&self, name: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "WITH RECURSIVE tree AS (
                 SELECT id FROM api_tokens WHERE name = $1 AND revoked_at IS NULL
                 UNION
                 SELECT t.id FROM api_tokens t JOIN tree ON t.minted_by = tree.id
             )
             UPDATE api_tokens SET revoked_at = now()
             WHERE id IN (SELECT id FROM tree) AND revoked_at IS NULL
             RETURNING name",
        )
        .bind(name)
        .fetch_all(&self.pool)
        .await?)
    }
}
