//! What a process knows of its host: its name, and whether a database URL leaves it.

/// `<host>-<pid>`: how a process names itself in results and registrations unless configured.
pub fn process_name() -> String {
    format!("{}-{}", host_name(), std::process::id())
}

/// This machine's host name (`localhost` if it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// `url` with `sslmode=require` added when it names a database host that is not on this
/// machine's loopback and says nothing of TLS itself: PostgreSQL's default (`prefer`) falls
/// back to plaintext without a word. `sslmode=verify-full&sslrootcert=…` also checks the server
/// (docs/tls.md); `sslmode=disable` says plaintext on purpose.
pub fn require_tls_off_loopback(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let says = query
        .split('&')
        .any(|p| p.starts_with("sslmode=") || p.starts_with("host="));
    let authority = base
        .split_once("://")
        .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match hostport.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => hostport.split(':').next().unwrap_or(""),
    };
    let local = host.is_empty()
        || host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if says || local {
        return url.to_owned();
    }
    let joiner = if query.is_empty() { "?" } else { "&" };
    format!("{url}{joiner}sslmode=require")
}
