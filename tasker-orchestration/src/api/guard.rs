//! What every request must satisfy before any route sees it, whatever `orchestrator.auth` says,
//! so a browser can never be made to act on the API for another site:
//!
//! - **Host** (DNS rebinding): an IP address, `localhost`, or a name listed in
//!   `orchestrator.allowed_hosts` (`"*"` allows any); else 403 `host_not_allowed`. A page of
//!   `evil.example` whose name was pointed at 127.0.0.1 sends `Host: evil.example`.
//! - **Origin** (cross-site requests): a browser request from another origin (its `Origin` is
//!   not this server's, or `Sec-Fetch-Site` says `cross-site`/`same-site`) is refused with 403
//!   `cross_origin`, unless the origin is listed in `orchestrator.allowed_origins`. A link
//!   followed to the dashboard (a top-level `GET` navigation) is not refused.
//! - **Content type** (forms and `text/plain` posts): a request that changes state and carries
//!   a body must say `application/json` (the template route also takes YAML); a body-less one
//!   must say nothing else. Else 415 `unsupported_media_type`.
//!
//! Responses over HTTPS carry `Strict-Transport-Security`.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::Error;
use crate::shared::Shared;

/// What HSTS asks of browsers: HTTPS only, for a year.
const HSTS: HeaderValue = HeaderValue::from_static("max-age=31536000");

/// The middleware (a layer over every route and the fallbacks).
pub(super) async fn check(State(shared): State<Shared>, req: Request, next: Next) -> Response {
    let o = &shared.config.orchestrator;
    let tls = o.tls_cert_file.is_some();
    if let Err(e) = host(req.headers(), &o.allowed_hosts)
        .and_then(|()| origin(req.method(), req.headers(), tls, &o.allowed_origins))
        .and_then(|()| content_type(req.method(), req.uri().path(), req.headers()))
    {
        return with_hsts(e.into_response(), tls);
    }
    with_hsts(next.run(req).await, tls)
}

fn with_hsts(mut response: Response, tls: bool) -> Response {
    if tls {
        response
            .headers_mut()
            .insert(header::STRICT_TRANSPORT_SECURITY, HSTS);
    }
    response
}

/// The host part of a `Host` value (`name`, `1.2.3.4`, `[::1]`, each with an optional port),
/// lowercased and without brackets.
fn host_name(value: &str) -> String {
    let value = value.trim();
    let name = if let Some(rest) = value.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        value.rsplit_once(':').map_or(value, |(h, _)| h)
    };
    name.to_ascii_lowercase()
}

fn host(headers: &HeaderMap, allowed: &[String]) -> Result<(), Error> {
    // HTTP/1.0 without Host: not a browser (browsers always send it).
    let Some(value) = headers.get(header::HOST) else {
        return Ok(());
    };
    let Ok(value) = value.to_str() else {
        return Err(refuse_host("<not text>"));
    };
    let name = host_name(value);
    let ok = name.parse::<IpAddr>().is_ok()
        || name == "localhost"
        || allowed
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(&name));
    if ok { Ok(()) } else { Err(refuse_host(value)) }
}

fn refuse_host(value: &str) -> Error {
    Error::new(
        StatusCode::FORBIDDEN,
        "host_not_allowed",
        format!(
            "the Host {value:?} is not one this server answers to; add the name to \
             orchestrator.allowed_hosts (TASKER_ORCHESTRATOR__ALLOWED_HOSTS) if it is its own"
        ),
    )
    .with_details(json!({ "host": value }))
}

/// The port a URL authority names, or its scheme's default.
fn port_of(authority: &str, scheme: &str) -> Option<u16> {
    let after = match authority.rfind(']') {
        Some(end) => &authority[end + 1..],
        None => authority,
    };
    match after.rsplit_once(':') {
        Some((_, p)) => p.parse().ok(),
        None => match scheme {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        },
    }
}

/// Whether the browser origin `origin` (`scheme://host[:port]`) is this server as the request
/// names it (`Host`), the scheme aside (a proxy in front may terminate TLS): the same host and
/// the same port, a port left out being the default of the scheme each side speaks.
fn same_origin(origin: &str, host_header: &str, tls: bool) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let ours = if tls { "https" } else { "http" };
    host_name(authority) == host_name(host_header)
        && (port_of(authority, scheme) == port_of(host_header, ours)
            // A proxy terminating TLS: `https://name` reached us as `Host: name`.
            || (!host_header.contains(':') || host_header.ends_with(']'))
                && !authority.contains(':'))
}

fn origin(
    method: &Method,
    headers: &HeaderMap,
    tls: bool,
    allowed: &[String],
) -> Result<(), Error> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let origin = text(header::ORIGIN.as_str());
    if let Some(o) = origin
        && allowed.iter().any(|a| a.eq_ignore_ascii_case(o))
    {
        return Ok(());
    }
    let reading = matches!(*method, Method::GET | Method::HEAD);
    // A link followed to a page: the browser shows it, the linking site reads nothing.
    let navigation = reading && text("sec-fetch-mode") == Some("navigate");
    if let Some(site) = text("sec-fetch-site")
        && matches!(site, "cross-site" | "same-site")
        && !navigation
    {
        return Err(refuse_origin(origin.unwrap_or(site)));
    }
    if let Some(o) = origin
        && !navigation
    {
        let host = text(header::HOST.as_str()).unwrap_or_default();
        if !same_origin(o, host, tls) {
            return Err(refuse_origin(o));
        }
    }
    Ok(())
}

fn refuse_origin(origin: &str) -> Error {
    Error::new(
        StatusCode::FORBIDDEN,
        "cross_origin",
        format!(
            "requests from another site ({origin}) are refused; list the origin in \
             orchestrator.allowed_origins if it is trusted"
        ),
    )
    .with_details(json!({ "origin": origin }))
}

/// The media types a request body may have at `path`.
fn accepted(path: &str) -> &'static [&'static str] {
    if path == "/v1/templates" {
        &[
            "application/json",
            "application/yaml",
            "application/x-yaml",
            "text/yaml",
            "text/x-yaml",
        ]
    } else {
        &["application/json"]
    }
}

fn content_type(method: &Method, path: &str, headers: &HeaderMap) -> Result<(), Error> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let media = headers.get(header::CONTENT_TYPE).map(|v| {
        v.to_str()
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    let accepted = accepted(path);
    match media {
        Some(m) if accepted.contains(&m.as_str()) => Ok(()),
        Some(m) => Err(refuse_type(&m, accepted)),
        None => {
            let empty = headers
                .get(header::CONTENT_LENGTH)
                .is_none_or(|l| l.as_bytes() == b"0")
                && !headers.contains_key(header::TRANSFER_ENCODING);
            if empty {
                Ok(())
            } else {
                Err(refuse_type("none", accepted))
            }
        }
    }
}

fn refuse_type(got: &str, accepted: &[&str]) -> Error {
    Error::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "a request body must be sent as {} (Content-Type), not {got}",
            accepted.join(" or ")
        ),
    )
    .with_details(json!({ "content_type": got, "accepted": accepted }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn hosts_are_addresses_localhost_or_listed_names() {
        let listed = vec!["tasker.example.com".to_owned()];
        for ok in [
            "127.0.0.1:8080",
            "10.0.0.7",
            "[::1]:8080",
            "localhost:8080",
            "LOCALHOST",
            "Tasker.Example.com:443",
        ] {
            assert!(host(&headers(&[("host", ok)]), &listed).is_ok(), "{ok}");
        }
        for bad in ["evil.example:8080", "localhost.evil.example", "example.com"] {
            assert!(host(&headers(&[("host", bad)]), &listed).is_err(), "{bad}");
        }
        assert!(host(&headers(&[("host", "any.name")]), &["*".to_owned()]).is_ok());
        assert!(host(&HeaderMap::new(), &[]).is_ok());
    }

    #[test]
    fn only_this_servers_own_origin_may_send_requests() {
        let get = &Method::GET;
        let post = &Method::POST;
        let host = ("host", "127.0.0.1:8080");
        let own = headers(&[host, ("origin", "http://127.0.0.1:8080")]);
        assert!(origin(post, &own, false, &[]).is_ok());
        for other in [
            "http://127.0.0.1:3000",
            "http://evil.example",
            "null",
            "http://localhost:8080",
        ] {
            let h = headers(&[host, ("origin", other)]);
            assert!(origin(post, &h, false, &[]).is_err(), "{other}");
            assert!(origin(get, &h, false, &[]).is_err(), "{other}");
        }
        let listed = vec!["http://127.0.0.1:3000".to_owned()];
        let h = headers(&[host, ("origin", "http://127.0.0.1:3000")]);
        assert!(origin(post, &h, false, &listed).is_ok());
        // Fetch metadata without an Origin.
        let cross = headers(&[host, ("sec-fetch-site", "cross-site")]);
        assert!(origin(post, &cross, false, &[]).is_err());
        assert!(origin(get, &cross, false, &[]).is_err());
        let followed = headers(&[
            host,
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
        ]);
        assert!(origin(get, &followed, false, &[]).is_ok());
        assert!(origin(post, &followed, false, &[]).is_err());
        let same = headers(&[host, ("sec-fetch-site", "same-origin")]);
        assert!(origin(post, &same, false, &[]).is_ok());
        // No browser headers at all: a program, not a page.
        assert!(origin(post, &headers(&[host]), false, &[]).is_ok());
    }

    #[test]
    fn a_proxy_terminating_tls_keeps_the_origin_the_same() {
        let h = headers(&[
            ("host", "tasker.example.com"),
            ("origin", "https://tasker.example.com"),
        ]);
        assert!(origin(&Method::POST, &h, false, &[]).is_ok());
        let h = headers(&[
            ("host", "tasker.example.com:8443"),
            ("origin", "https://tasker.example.com:8443"),
        ]);
        assert!(origin(&Method::POST, &h, true, &[]).is_ok());
        let h = headers(&[
            ("host", "tasker.example.com:8443"),
            ("origin", "https://tasker.example.com"),
        ]);
        assert!(origin(&Method::POST, &h, true, &[]).is_err());
    }

    #[test]
    fn bodies_must_be_json_or_on_the_template_route_yaml() {
        let post = &Method::POST;
        let json = headers(&[
            ("content-type", "application/json; charset=utf-8"),
            ("content-length", "2"),
        ]);
        assert!(content_type(post, "/v1/tasks", &json).is_ok());
        let plain = headers(&[("content-type", "text/plain"), ("content-length", "2")]);
        assert!(content_type(post, "/v1/tasks", &plain).is_err());
        let form = headers(&[
            ("content-type", "application/x-www-form-urlencoded"),
            ("content-length", "0"),
        ]);
        assert!(content_type(post, "/v1/tasks/x/cancel", &form).is_err());
        let yaml = headers(&[
            ("content-type", "application/yaml"),
            ("content-length", "9"),
        ]);
        assert!(content_type(post, "/v1/templates", &yaml).is_ok());
        assert!(content_type(post, "/v1/tasks", &yaml).is_err());
        assert!(content_type(post, "/v1/tasks/x/cancel", &HeaderMap::new()).is_ok());
        let untyped = headers(&[("content-length", "12")]);
        assert!(content_type(post, "/v1/tasks", &untyped).is_err());
        assert!(content_type(&Method::GET, "/v1/tasks", &plain).is_ok());
        assert!(content_type(&Method::DELETE, "/v1/tokens/x", &HeaderMap::new()).is_ok());
    }
}
