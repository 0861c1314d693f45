//! What the attacks share: tokens of a namespace, templates on the Rust fixture handlers.
#![allow(dead_code)]

use tasker::RunningOrchestrator;
use tasker_orchestration::store::{NewToken, Scope};
use tasker_shared::namespaces::Patterns;

/// A two-step template of `namespace` on the Rust fixture handlers.
pub fn pair(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: pair\nversion: 1.0.0\nsteps:\n  - name: first\n    \
         handler: double\n  - name: second\n    handler: add_ten\n    depends_on: [first]\n"
    )
}

/// A token named `name` of `scope` for `namespaces` (`None`: every namespace), made in the
/// test's database.
pub async fn token(
    o: &RunningOrchestrator,
    name: &str,
    scope: Scope,
    namespaces: Option<&str>,
) -> anyhow::Result<String> {
    let patterns = namespaces.map(Patterns::parse).transpose()?;
    let (token, _) = o
        .shared
        .store
        .create_token(&NewToken {
            name,
            scope,
            namespaces: patterns.as_ref(),
            expires_at: None,
            created_by: Some("test"),
        })
        .await?;
    Ok(token)
}
