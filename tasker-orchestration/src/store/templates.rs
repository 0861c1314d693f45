//! The template registry: every registered version of every template, immutable once stored.
//! Registering announces the new version with `pg_notify` so every orchestrator loads it at once.

use uuid::Uuid;

use tasker_shared::TaskTemplate;
use tasker_shared::template::is_identifier;

use super::{Result, Store};

/// Channel of the `pg_notify` sent when a template version is registered; the payload is its id.
pub const TEMPLATE_REGISTERED_CHANNEL: &str = "tasker_template_registered";

pub use tasker_shared::api::RegisteredTemplate as TemplateView;

/// What registering a template version did.
#[derive(Debug, Clone)]
pub enum Registration {
    /// A new version was stored.
    Created(TemplateView),
    /// This version was already registered with the same definition: nothing changed.
    Unchanged(TemplateView),
    /// This version is registered with a different definition; nothing changed.
    Conflict(TemplateView),
}

impl Registration {
    /// The stored version (the existing one for `Unchanged` and `Conflict`).
    pub fn view(&self) -> &TemplateView {
        match self {
            Registration::Created(v) | Registration::Unchanged(v) | Registration::Conflict(v) => v,
        }
    }
}

const COLUMNS: &str =
    "id, namespace, name, version, description, definition, registered_at, registered_by";

/// Which versions [`Store::template_views`] lists.
#[derive(Debug, Clone, Default)]
pub struct TemplateFilter {
    pub namespace: Option<String>,
    /// Only namespaces matching this PostgreSQL regular expression (a scoped token's).
    pub namespaces: Option<String>,
    pub name: Option<String>,
}

impl Store {
    /// Stores `template` as a new version, or confirms that the same definition is already
    /// registered under its version. Definitions are compared parsed, so formatting, comments
    /// and key order do not matter. Concurrent registrations of one version are safe: the loser
    /// of the insert reads the winner's definition.
    pub async fn register_template(
        &self,
        template: &TaskTemplate,
        registered_by: &str,
    ) -> Result<Registration> {
        let mut tx = self.pool().begin().await?;
        declare_rate_keys(&mut tx, template).await?;
        let inserted: Option<TemplateView> = sqlx::query_as(&format!(
            "INSERT INTO task_templates
                 (id, namespace, name, version, description, definition, registered_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (namespace, name, version) DO NOTHING
             RETURNING {COLUMNS}"
        ))
        .bind(Uuid::now_v7())
        .bind(&template.namespace)
        .bind(&template.name)
        .bind(&template.version)
        .bind(&template.description)
        .bind(sqlx::types::Json(template))
        .bind(registered_by)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(view) = inserted {
            // Delivered when the transaction commits, never before the row is visible.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(TEMPLATE_REGISTERED_CHANNEL)
                .bind(view.id.to_string())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            return Ok(Registration::Created(view));
        }
        let existing: TemplateView = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM task_templates
             WHERE namespace = $1 AND name = $2 AND version = $3"
        ))
        .bind(&template.namespace)
        .bind(&template.name)
        .bind(&template.version)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        let same = existing.template().is_ok_and(|t| &t == template);
        Ok(if same {
            Registration::Unchanged(existing)
        } else {
            Registration::Conflict(existing)
        })
    }

    /// One registered version by id.
    pub async fn template_by_id(&self, id: Uuid) -> Result<Option<TemplateView>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM task_templates WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// `namespace/name@version`, or its newest registered version when `version` is `None`.
    /// A part that cannot be an identifier names no template and never reaches SQL (a NUL
    /// would be a database error, not a "not found").
    pub async fn template(
        &self,
        namespace: &str,
        name: &str,
        version: Option<&str>,
    ) -> Result<Option<TemplateView>> {
        let parts = [Some(namespace), Some(name), version];
        if !parts.into_iter().flatten().all(is_identifier) {
            return Ok(None);
        }
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM task_templates
             WHERE namespace = $1 AND name = $2 AND ($3::text IS NULL OR version = $3)
             ORDER BY registered_at DESC, id DESC LIMIT 1"
        ))
        .bind(namespace)
        .bind(name)
        .bind(version)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Every registered version, oldest registration first.
    pub async fn templates(&self) -> Result<Vec<TemplateView>> {
        self.template_views(&TemplateFilter::default()).await
    }

    /// Registered versions matching `filter`, by namespace and name, oldest registration first.
    pub async fn template_views(&self, filter: &TemplateFilter) -> Result<Vec<TemplateView>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM task_templates
             WHERE ($1::text IS NULL OR namespace = $1) AND ($2::text IS NULL OR name = $2)
               AND ($3::text IS NULL OR namespace ~ $3)
             ORDER BY namespace, name, registered_at, id"
        ))
        .bind(&filter.namespace)
        .bind(&filter.name)
        .bind(&filter.namespaces)
        .fetch_all(self.pool())
        .await?)
    }
}

/// Records the named rate keys `template` uses: the first template to name a key declares it
/// for its namespace; the owner's later templates may change its numbers; another namespace's
/// template may name it only with the same numbers ([`super::Error::RateKeyOwned`] otherwise,
/// and its transaction is not committed). Every namespace that names a key may see it.
async fn declare_rate_keys(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    template: &TaskTemplate,
) -> Result<()> {
    for (key, (limit, per_ms, burst)) in tasker_shared::template::named_rate_keys(template) {
        let (limit, per_ms, burst) = (limit as i32, per_ms as i64, burst as i32);
        let (owner, declared): (String, Option<(i32, i64, i32)>) = {
            let row: (String, Option<i32>, Option<i64>, Option<i32>) = sqlx::query_as(
                "INSERT INTO rate_keys AS k (key, namespace, lim, per_ms, burst)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (key) DO UPDATE SET
                     lim = CASE WHEN k.namespace = EXCLUDED.namespace THEN EXCLUDED.lim ELSE k.lim END,
                     per_ms = CASE WHEN k.namespace = EXCLUDED.namespace THEN EXCLUDED.per_ms
                                   ELSE k.per_ms END,
                     burst = CASE WHEN k.namespace = EXCLUDED.namespace THEN EXCLUDED.burst
                                  ELSE k.burst END
                 RETURNING namespace, lim, per_ms, burst",
            )
            .bind(&key)
            .bind(&template.namespace)
            .bind(limit)
            .bind(per_ms)
            .bind(burst)
            .fetch_one(&mut **tx)
            .await?;
            let numbers = match row {
                (_, Some(l), Some(p), Some(b)) => Some((l, p, b)),
                _ => None,
            };
            (row.0, numbers)
        };
        if let Some(numbers) = declared
            && owner != template.namespace
            && numbers != (limit, per_ms, burst)
        {
            return Err(super::Error::RateKeyOwned {
                key,
                owner,
                declared: format!(
                    "limit {} per {} ms, burst {}",
                    numbers.0, numbers.1, numbers.2
                ),
            });
        }
        sqlx::query(
            "INSERT INTO rate_key_users (key, namespace) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(&key)
        .bind(&template.namespace)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
