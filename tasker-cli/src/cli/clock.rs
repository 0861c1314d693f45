//! How the CLI writes a time: one format everywhere, always with its zone, decided once at start.
//! The zone is `TZ` (an IANA name such as `Europe/Paris`; unset: UTC), the format
//! `--time-format`: `default` (`2026-11-30 14:05:09.123 CET`), `rfc3339`
//! (`2026-11-30T14:05:09.123+01:00`) or any strftime pattern (`%H:%M:%S %Z`). JSON output is
//! left as the API wrote it (RFC 3339, UTC).

use std::str::FromStr;
use std::sync::OnceLock;

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;

/// The `default` format: a time to the millisecond and its zone's abbreviation.
const DEFAULT: &str = "%Y-%m-%d %H:%M:%S%.3f %Z";

#[derive(Debug, Clone)]
struct Clock {
    zone: Tz,
    /// `None`: RFC 3339.
    pattern: Option<String>,
}

static CLOCK: OnceLock<Clock> = OnceLock::new();

/// The zone `TZ` names (a leading `:` as in `TZ=:Europe/Paris` is allowed); unset or empty: UTC.
pub(super) fn zone(tz: Option<&str>) -> anyhow::Result<Tz> {
    let name = tz.map(|z| z.trim_start_matches(':')).unwrap_or_default();
    if name.is_empty() {
        return Ok(Tz::UTC);
    }
    Tz::from_str(name).map_err(|_| {
        anyhow::anyhow!(
            "TZ={name:?} is not a time zone name: use an IANA name such as Europe/Paris or UTC"
        )
    })
}

/// Checks `--time-format` and `TZ` once (a bad one is a usage error before anything is sent).
pub(super) fn init(format: &str) -> anyhow::Result<()> {
    let zone = zone(std::env::var("TZ").ok().as_deref())?;
    let pattern = match format {
        "default" => Some(DEFAULT.to_owned()),
        "rfc3339" => None,
        pattern => {
            // chrono reports a pattern it cannot write only when writing: try one now.
            use std::fmt::Write as _;
            let mut probe = String::new();
            write!(probe, "{}", Utc::now().format(pattern)).map_err(|_| {
                anyhow::anyhow!(
                    "--time-format {pattern:?} is not a strftime pattern (or default, rfc3339)"
                )
            })?;
            Some(pattern.to_owned())
        }
    };
    let _ = CLOCK.set(Clock { zone, pattern });
    Ok(())
}

/// `t` in the chosen zone and format.
pub(super) fn time(t: DateTime<Utc>) -> String {
    let clock = CLOCK.get().cloned().unwrap_or(Clock {
        zone: Tz::UTC,
        pattern: Some(DEFAULT.to_owned()),
    });
    write(t, clock.zone, clock.pattern.as_deref())
}

/// A time that may be absent: `-` for none.
pub(super) fn maybe(t: Option<DateTime<Utc>>) -> String {
    t.map(time).unwrap_or_else(|| "-".into())
}

fn write(t: DateTime<Utc>, zone: Tz, pattern: Option<&str>) -> String {
    let local = t.with_timezone(&zone);
    match pattern {
        Some(p) => local.format(p).to_string(),
        None => local.to_rfc3339_opts(SecondsFormat::Millis, zone == Tz::UTC),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        "2026-07-01T12:00:00.5Z".parse().unwrap()
    }

    #[test]
    fn a_time_carries_its_zone() {
        assert_eq!(
            write(at(), Tz::UTC, Some(DEFAULT)),
            "2026-07-01 12:00:00.500 UTC"
        );
        let paris = zone(Some(":Europe/Paris")).unwrap();
        assert_eq!(
            write(at(), paris, Some(DEFAULT)),
            "2026-07-01 14:00:00.500 CEST"
        );
        assert_eq!(write(at(), paris, None), "2026-07-01T14:00:00.500+02:00");
        assert_eq!(write(at(), Tz::UTC, None), "2026-07-01T12:00:00.500Z");
    }

    #[test]
    fn an_unknown_zone_is_refused_by_name() {
        assert_eq!(zone(None).unwrap(), Tz::UTC);
        assert_eq!(zone(Some("")).unwrap(), Tz::UTC);
        let err = zone(Some("Mars/Olympus")).unwrap_err().to_string();
        assert!(err.contains("Mars/Olympus"), "{err}");
    }
}
