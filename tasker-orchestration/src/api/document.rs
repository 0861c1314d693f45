//! The OpenAPI document: its own parts (title, tags, the bearer scheme) and the answers every
//! operation may give besides its own; the operations come from the routes.

use utoipa::OpenApi;
use utoipa::openapi::OpenApi as Document;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};

use tasker_shared::api::ErrorBody;

/// The OpenAPI 3.1 document of every route: what `GET /openapi.json` serves.
pub fn openapi() -> Document {
    let mut document = super::routes().split_for_parts().1;
    common_responses(&mut document);
    document
}

/// [`openapi`] as the repository keeps it in `openapi.json` (what `tasker-orchestrator openapi`
/// prints): pretty-printed JSON, keys in the document's order, no trailing newline. The Python
/// and TypeScript clients are generated from that file; `tests/fast/openapi.rs` fails when it
/// is not this text.
pub fn openapi_json() -> String {
    serde_json::to_string_pretty(&openapi()).expect("the OpenAPI document serializes")
}

/// The answers any operation may give besides its own, with their error codes: the layers in
/// front of every handler (`guard`, `auth`) and a failure of the server. An operation that lists
/// one of these statuses itself keeps its own description.
pub(super) fn common_responses(document: &mut Document) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let answer = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build()
    };
    let refused_host = "`host_not_allowed` (a Host this server does not answer to), `cross_origin` (a browser request from another site)";
    for item in document.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
            &mut item.head,
        ];
        for op in operations.into_iter().flatten() {
            // Open operations name an empty requirement (`security(())`); the others use the
            // document's bearer token.
            let open = op
                .security
                .as_ref()
                .is_some_and(|s| s.iter().all(|r| r == &Default::default()));
            let mut extra = Vec::new();
            if open {
                extra.push(("403", refused_host.to_owned()));
            } else {
                extra.push(("401", "`unauthenticated`: no token, or one that is unknown, revoked or expired (when the orchestrator requires tokens)".to_owned()));
                extra.push(("403", format!("`forbidden`: the token's scope or namespaces do not reach this; {refused_host}")));
            }
            if op.request_body.is_some() {
                extra.push((
                    "415",
                    "`unsupported_media_type`: a request body that is not JSON".to_owned(),
                ));
            }
            extra.push((
                "500",
                "`internal`: the server failed; its log says why".to_owned(),
            ));
            for (status, description) in extra {
                op.responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| answer(&description).into());
            }
        }
    }
}

/// The document's own parts; the operations come from the routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tasker",
        description = "Tasker's orchestration API: create tasks from registered templates, wait \
                       for them, read their steps and history, repair them; templates, dead \
                       letters and API tokens. Every error is `{\"error\": {\"code\", \"message\", \
                       \"details\"?}}` with a stable code. Tokens are required unless \
                       `orchestrator.auth = \"off\"`: every route but /health, /ready, \
                       /openapi.json and the dashboard's assets needs `Authorization: Bearer \
                       <token>`, of scope `read` for GET, `write` to create, cancel and repair \
                       tasks and register templates, `admin` for dead-letter replay and discard \
                       and for tokens; a token limited to namespaces gets 403 `forbidden` on \
                       anything of another. On every route, whatever the auth mode: 403 \
                       `host_not_allowed` for a Host that is not an IP address, localhost or in \
                       `orchestrator.allowed_hosts`; 403 `cross_origin` for a browser request \
                       from another site; 415 `unsupported_media_type` for a body that is not \
                       JSON (YAML on POST /v1/templates)."
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    components(schemas(ErrorBody)),
    tags(
        (name = "tasks", description = "Create, wait for, read and cancel tasks"),
        (name = "repair", description = "Retry or resolve a task that failed"),
        (name = "bulk", description = "Operations by filter: retry, resolve or cancel every task a filter matches"),
        (name = "templates", description = "Registered task templates"),
        (name = "schedules", description = "Cron schedules that start tasks"),
        (name = "events", description = "Events that start the tasks of templates whose triggers match them"),
        (name = "dead-letters", description = "Messages no one could process"),
        (name = "workers", description = "The workers registry: who is up and what each serves"),
        (name = "limits", description = "Concurrency and rate keys; pausing a rate key"),
        (name = "retention", description = "Purging finished tasks"),
        (name = "tokens", description = "API tokens (admin scope)"),
        (name = "clock", description = "The engine's clock; in test mode, moving it"),
        (name = "audit", description = "The audit log: every request that changed something (admin scope)"),
        (name = "operations", description = "Health, readiness, metrics, this document"),
        (name = "dashboard", description = "The dashboard's page and assets")
    )
)]
pub(super) struct ApiDoc;

/// The `bearer` security scheme the operations name.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, doc: &mut Document) {
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
    }
}
