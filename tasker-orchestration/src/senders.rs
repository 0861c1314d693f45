//! Who sent a result, and which namespaces' steps it may move.
//!
//! RabbitMQ validates a message's `user_id` against the login that published it, so the
//! orchestrator reads the sender from there, never from the body. A worker's own broker user
//! speaks for the live API token of the same name (scope `write` or `admin`): its results may
//! move steps of that token's namespaces only. Trusted, and free to move any step:
//! - the orchestrator's own broker user, and whatever reached the results queue through the
//!   default exchange (only a user allowed to write to every queue can publish there, which a
//!   worker's user is not); such a publisher may name another sender ([`dead::SENDER_HEADER`]:
//!   a dead letter it replays keeps its first sender's permissions, and one that named none,
//!   [`dead::NO_SENDER`], may move nothing).
//!
//! A result with no `user_id`, or from a user no live token speaks for, may move nothing.

use std::sync::Arc;

use tasker_broker::{Delivery, dead};

use crate::recent::Recent;
use crate::store::{self, Store};

/// What a sender's results may move: `None`, any step; `Some(regex)`, steps of the namespaces
/// the PostgreSQL regular expression matches (`^$`, which no namespace matches: none).
pub type Permit = Option<Arc<str>>;

/// A result message's sender as judged: who (for logs and dead letters) and what it may move.
#[derive(Debug, Clone)]
pub struct Sender {
    pub name: Option<String>,
    pub permit: Permit,
}

/// The senders seen lately, by broker user.
#[derive(Debug)]
pub struct Senders {
    /// The orchestrator's own broker user.
    own: String,
    /// What each broker user may move, as its token said lately (a revoked token stops its
    /// user within `recent::TRUST_FOR`).
    seen: Recent<Permit>,
}

fn nothing() -> Permit {
    Some(Arc::from("^$"))
}

impl Senders {
    pub fn new(own_user: &str) -> Self {
        Self {
            own: own_user.to_owned(),
            seen: Recent::default(),
        }
    }

    /// The sender of `delivery` and what it may move.
    pub async fn judge(&self, store: &Store, delivery: &Delivery) -> store::Result<Sender> {
        let publisher = dead::publisher(&delivery.properties);
        let trusted = delivery.exchange.as_str().is_empty() || publisher == Some(self.own.as_str());
        let name = if trusted {
            match dead::named_sender(&delivery.properties) {
                // A replayed message that named no sender when it first came: no trust.
                Some(named) if named == dead::NO_SENDER => {
                    return Ok(Sender {
                        name: None,
                        permit: nothing(),
                    });
                }
                Some(named) if named != self.own => named,
                _ => {
                    return Ok(Sender {
                        name: publisher.map(str::to_owned),
                        permit: None,
                    });
                }
            }
        } else {
            match publisher {
                Some(user) => user.to_owned(),
                None => {
                    return Ok(Sender {
                        name: None,
                        permit: nothing(),
                    });
                }
            }
        };
        let permit = self.permit(store, &name).await?;
        Ok(Sender {
            name: Some(name),
            permit,
        })
    }

    async fn permit(&self, store: &Store, user: &str) -> store::Result<Permit> {
        if let Some(permit) = self.seen.get(user) {
            return Ok(permit);
        }
        let permit = match store.sender(user).await? {
            Some(p) => p.namespaces.map(|n| Arc::from(n.to_regex())),
            None => nothing(),
        };
        self.seen.put(user, permit.clone());
        Ok(permit)
    }

    /// Forgets what a broker user may do (its token was revoked here).
    pub fn forget(&self, user: &str) {
        self.seen.forget(|u, _| u == user);
    }
}
