//! Webhook signatures: each format's HMAC-SHA256 of the request, checked in constant time
//! against the webhook's secret, and its timestamp against the replay window. A request is
//! refused as `Bad` (no signature that this secret made) before it is judged `Stale` (signed,
//! but too long ago or ahead: a replay), so a stale answer never helps forge one.

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tasker_shared::api::WebhookFormat;

/// The generic format's headers.
pub const TIMESTAMP_HEADER: &str = "x-tasker-timestamp";
pub const SIGNATURE_HEADER: &str = "x-tasker-signature";
const GITHUB_HEADER: &str = "x-hub-signature-256";
const STRIPE_HEADER: &str = "stripe-signature";

/// Why a request's signature is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Missing, malformed, or made with another secret.
    Bad(String),
    /// Signed, but its timestamp is outside the replay window.
    Stale(String),
}

/// Checks `body` and `headers` against `secret` as `format` signs them; `now` and `tolerance`
/// in seconds.
pub fn verify(
    format: WebhookFormat,
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
    tolerance: i64,
) -> Result<(), Refusal> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Refusal::Bad(format!("no `{name}` header")))
    };
    let (timestamp, signatures): (Option<&str>, Vec<&str>) = match format {
        WebhookFormat::Generic => {
            let t = header(TIMESTAMP_HEADER)?;
            let sigs = header(SIGNATURE_HEADER)?
                .split(',')
                .filter_map(|p| p.trim().strip_prefix("v1="))
                .collect();
            (Some(t), sigs)
        }
        WebhookFormat::Github => {
            let sig = header(GITHUB_HEADER)?;
            (
                None,
                sig.trim().strip_prefix("sha256=").into_iter().collect(),
            )
        }
        WebhookFormat::Stripe => {
            let mut t = None;
            let mut sigs = Vec::new();
            for part in header(STRIPE_HEADER)?.split(',') {
                match part.trim().split_once('=') {
                    Some(("t", v)) => t = Some(v),
                    Some(("v1", v)) => sigs.push(v),
                    _ => {}
                }
            }
            let t = t.ok_or_else(|| Refusal::Bad(format!("`{STRIPE_HEADER}` has no `t=`")))?;
            (Some(t), sigs)
        }
    };
    if signatures.is_empty() {
        return Err(Refusal::Bad(format!(
            "no signature of the {} format in the request",
            format.as_str()
        )));
    }
    let prefix = timestamp.map(|t| format!("{t}."));
    let signed = signatures.iter().any(|hex_sig| {
        hex::decode(hex_sig).is_ok_and(|expected| {
            let mut mac = keyed(secret);
            if let Some(p) = &prefix {
                mac.update(p.as_bytes());
            }
            mac.update(body);
            mac.verify_slice(&expected).is_ok()
        })
    });
    if !signed {
        return Err(Refusal::Bad(
            "the signature does not match the body and this webhook's secret".into(),
        ));
    }
    if let Some(t) = timestamp {
        let at: i64 = t
            .trim()
            .parse()
            .map_err(|_| Refusal::Bad(format!("the timestamp {t:?} is not unix seconds")))?;
        if (now - at).abs() > tolerance {
            return Err(Refusal::Stale(format!(
                "signed at {at}, {}s from now; the window is {tolerance}s",
                now - at
            )));
        }
    }
    Ok(())
}

/// The headers a sender of `format` sets for `body` signed with `secret` at `timestamp`
/// (unix seconds; GitHub's format has none): what `verify` accepts.
pub fn sign(
    format: WebhookFormat,
    secret: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let mac = |prefix: Option<String>| {
        let mut mac = keyed(secret);
        if let Some(p) = prefix {
            mac.update(p.as_bytes());
        }
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    };
    match format {
        WebhookFormat::Generic => vec![
            (TIMESTAMP_HEADER, timestamp.to_string()),
            (
                SIGNATURE_HEADER,
                format!("v1={}", mac(Some(format!("{timestamp}.")))),
            ),
        ],
        WebhookFormat::Github => vec![(GITHUB_HEADER, format!("sha256={}", mac(None)))],
        WebhookFormat::Stripe => vec![(
            STRIPE_HEADER,
            format!("t={timestamp},v1={}", mac(Some(format!("{timestamp}.")))),
        )],
    }
}

fn keyed(secret: &str) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn githubs_own_example_is_accepted() {
        // The example of GitHub's "Validating webhook deliveries" page.
        let h = headers(&[(
            GITHUB_HEADER,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17".into(),
        )]);
        let secret = "It's a Secret to Everybody";
        assert_eq!(
            verify(WebhookFormat::Github, secret, &h, b"Hello, World!", 0, 300),
            Ok(())
        );
        let forged = verify(
            WebhookFormat::Github,
            "another",
            &h,
            b"Hello, World!",
            0,
            300,
        );
        assert!(matches!(forged, Err(Refusal::Bad(_))), "{forged:?}");
        assert_eq!(
            sign(WebhookFormat::Github, secret, 0, b"Hello, World!"),
            [(
                GITHUB_HEADER,
                "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
                    .to_owned()
            )]
        );
    }

    #[test]
    fn a_signed_timestamp_outside_the_window_is_stale_and_a_changed_body_is_bad() {
        for format in [WebhookFormat::Generic, WebhookFormat::Stripe] {
            let h = headers(&sign(format, "whsec_test", 1_000, b"{}"));
            assert_eq!(verify(format, "whsec_test", &h, b"{}", 1_200, 300), Ok(()));
            assert!(matches!(
                verify(format, "whsec_test", &h, b"{}", 1_301, 300),
                Err(Refusal::Stale(_))
            ));
            assert!(matches!(
                verify(format, "whsec_test", &h, b"{ }", 1_000, 300),
                Err(Refusal::Bad(_))
            ));
            assert!(matches!(
                verify(format, "whsec_test", &HeaderMap::new(), b"{}", 1_000, 300),
                Err(Refusal::Bad(_))
            ));
        }
    }

    #[test]
    fn a_stripe_header_with_several_signatures_passes_on_any_of_them() {
        let signed = sign(WebhookFormat::Stripe, "whsec_new", 50, b"x");
        let v1 = signed[0].1.split_once(",v1=").unwrap().1.to_owned();
        let h = headers(&[(
            STRIPE_HEADER,
            format!("t=50,v1={},v0=ignored,v1={v1}", "00".repeat(32)),
        )]);
        assert_eq!(
            verify(WebhookFormat::Stripe, "whsec_new", &h, b"x", 50, 300),
            Ok(())
        );
    }
}
