//! An API fuzzer: thousands of generated requests — valid ones mutated field by field, hostile
//! strings, odd methods, paths and query strings — against a real orchestrator's router (real
//! PostgreSQL, no socket). Every answer must be a JSON document, no answer may be a 5xx, and
//! every error must carry a stable code.
//!
//! `TASKER_API_FUZZ_REQUESTS` sets the number of requests (default 2,000, the short form CI
//! runs; `cargo make fuzz-api` runs 10,000). `TASKER_API_FUZZ_SEED` replays a run.

use axum::body::Body;
use axum::http::{Method, Request};
use serde_json::{Value, json};
use tower::ServiceExt;

use tasker::Cluster;

/// SplitMix64: small, seedable, good enough to pick cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const NASTY: &[&str] = &[
    "",
    " ",
    "\u{0}",
    "a\u{0}b",
    "\u{1b}[31m",
    "%",
    "%00",
    "%FF",
    "..",
    "../../etc/passwd",
    "💥",
    "'; DROP TABLE tasks; --",
    "\\",
    "\"",
    "{}",
    "[]",
    "null",
    "-1",
    "1e999",
    "NaN",
    "018f2c1e-0000-7000-8000-000000000000",
    "rust_examples",
    "linear",
    "1.0.0",
];

fn nasty_value(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => json!(null),
        1 => json!(rng.next() as i64),
        2 => json!(u64::MAX),
        3 => json!(-1.5e300),
        4 => json!(true),
        5 => json!([rng.pick(NASTY), 1, null]),
        6 => {
            let mut v = json!(0);
            for _ in 0..rng.below(200) {
                v = json!({ "d": v });
            }
            v
        }
        7 => json!({ *rng.pick(NASTY): *rng.pick(NASTY) }),
        8 => json!("x".repeat(rng.below(5000))),
        _ => json!(*rng.pick(NASTY)),
    }
}

/// `body` as JSON, now and then cut short or with a random byte inserted.
fn serialize_mangled(rng: &mut Rng, body: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(body).unwrap_or_default();
    match rng.below(12) {
        0 => bytes.truncate(rng.below(bytes.len().max(1))),
        1 => {
            let at = rng.below(bytes.len().max(1));
            bytes.insert(at, (rng.next() & 0xff) as u8);
        }
        _ => {}
    }
    bytes
}

/// A create request, valid or mutated.
fn create_body(rng: &mut Rng) -> Vec<u8> {
    let mut body = json!({
        "namespace": "rust_examples",
        "name": *rng.pick(&["linear", "diamond", "conditional", "nope"]),
        "context": {"value": rng.below(100)},
    });
    for _ in 0..rng.below(3) {
        let field = *rng.pick(&[
            "namespace",
            "name",
            "version",
            "context",
            "idempotency_key",
            "extra",
        ]);
        if rng.below(4) == 0 {
            body.as_object_mut().map(|o| o.remove(field));
        } else if field == "context" && body["context"].is_object() && rng.below(2) == 0 {
            let key = *rng.pick(NASTY);
            body["context"][key] = nasty_value(rng);
        } else {
            body[field] = nasty_value(rng);
        }
    }
    serialize_mangled(rng, &body)
}

/// A template registration body (JSON, which is YAML), valid or mutated: versions repeat, so
/// some registrations are no-ops and some conflict.
fn template_body(rng: &mut Rng) -> Vec<u8> {
    let mut body = json!({
        "namespace": "fuzz",
        "name": *rng.pick(&["a", "b"]),
        "version": *rng.pick(&["1", "2", "3"]),
        "steps": [{"name": "s", "handler": *rng.pick(&["double", "square"])}],
    });
    for _ in 0..rng.below(3) {
        match rng.below(6) {
            0 => body["steps"][0]["retry"] = json!({"max_attempts": nasty_value(rng)}),
            1 => body["steps"][0]["depends_on"] = json!([nasty_value(rng)]),
            2 => body["context_schema"] = nasty_value(rng),
            3 => body["steps"][0]["timeout_seconds"] = nasty_value(rng),
            _ => {
                let field = *rng.pick(&["namespace", "name", "version", "description", "x"]);
                body[field] = nasty_value(rng);
            }
        }
    }
    serialize_mangled(rng, &body)
}

fn path(rng: &mut Rng) -> String {
    let id = match rng.below(4) {
        0 => uuid::Uuid::now_v7().to_string(),
        1 => rng.pick(NASTY).to_string(),
        2 => format!("%{:02X}%{:02X}", rng.next() & 0xff, rng.next() & 0xff),
        _ => "018f2c1e-0000-7000-8000-000000000000".into(),
    };
    let id = id
        .replace(['/', ' ', '\u{0}', '\\', '"'], "%20")
        .replace('%', "%25");
    let base = match rng.below(14) {
        11 => format!("/v1/tasks/{id}/retry"),
        12 => format!("/v1/tasks/{id}/steps/{id}/retry"),
        13 => format!("/v1/tasks/{id}/steps/{id}/resolve"),
        9 => format!("/v1/templates/{id}/{id}"),
        10 => "/v1/templates/rust_examples/linear".to_owned(),
        0 => "/v1/tasks".to_owned(),
        1 => format!("/v1/tasks/{id}"),
        2 => format!("/v1/tasks/{id}/steps"),
        3 => format!("/v1/tasks/{id}/history"),
        4 => format!("/v1/tasks/{id}/cancel"),
        5 => "/v1/templates".to_owned(),
        6 => "/health".to_owned(),
        7 => "/ready".to_owned(),
        _ => format!("/v1/{id}"),
    };
    if rng.below(2) == 0 {
        return base;
    }
    let key = *rng.pick(&[
        "state",
        "namespace",
        "name",
        "version",
        "limit",
        "before",
        "wait",
        "registered_by",
        "source",
        "x",
    ]);
    let value = match key {
        // A real wait on a task that never ends would only measure the clock.
        "wait" => rng
            .pick(&["0", "-1", "nan", "1e999", "abc", "301", ""])
            .to_string(),
        _ => rng.pick(NASTY).to_string(),
    };
    let value: String = value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("{base}?{key}={value}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_gets_a_5xx_or_a_body_that_is_not_json() -> anyhow::Result<()> {
    let requests: usize = std::env::var("TASKER_API_FUZZ_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let seed: u64 = std::env::var("TASKER_API_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| uuid::Uuid::now_v7().as_u64_pair().1);
    println!("api fuzz: {requests} requests, TASKER_API_FUZZ_SEED={seed}");
    let mut rng = Rng(seed);
    let cluster = Cluster::start().await?;
    let app = tasker_orchestration::api::router(cluster.orchestrator.shared.clone());
    let mut by_status = std::collections::BTreeMap::<u16, usize>::new();
    for n in 0..requests {
        let (method, uri, body) = if rng.below(3) == 0 {
            (Method::POST, "/v1/tasks".to_owned(), create_body(&mut rng))
        } else if rng.below(5) == 0 {
            // A random query string (`registered_by`, `source`, ... with hostile values).
            let uri = match path(&mut rng).split_once('?') {
                Some((_, query)) => format!("/v1/templates?{query}"),
                None => "/v1/templates".to_owned(),
            };
            (Method::POST, uri, template_body(&mut rng))
        } else {
            let method = rng
                .pick(&[
                    Method::GET,
                    Method::GET,
                    Method::POST,
                    Method::DELETE,
                    Method::PUT,
                ])
                .clone();
            (method, path(&mut rng), Vec::new())
        };
        let shown = format!("#{n} {method} {uri} {}", String::from_utf8_lossy(&body));
        let Ok(req) = Request::builder()
            .method(method)
            .uri(&uri)
            .header("content-type", "application/json")
            .body(Body::from(body))
        else {
            continue; // not a request a client could send at all
        };
        let resp = app.clone().oneshot(req).await?;
        let status = resp.status();
        *by_status.entry(status.as_u16()).or_default() += 1;
        let bytes = axum::body::to_bytes(resp.into_body(), 64 << 20).await?;
        assert!(!status.is_server_error(), "{shown}: {status} {bytes:?}");
        if uri.starts_with("/metrics") {
            continue;
        }
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("{shown}: {status}, body not JSON ({e}): {bytes:?}"))?;
        if status.is_client_error() {
            assert!(v["error"]["code"].is_string(), "{shown}: {v}");
            assert!(v["error"]["message"].is_string(), "{shown}: {v}");
        }
    }
    println!("api fuzz: answers by status {by_status:?}");
    assert!(
        by_status.keys().any(|s| (200..300).contains(s)),
        "some requests succeed"
    );
    assert!(
        by_status.keys().any(|s| (400..500).contains(s)),
        "some requests are refused"
    );
    cluster.shutdown().await
}
