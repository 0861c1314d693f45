//! The API over TLS (`orchestrator.tls_cert_file` / `tls_key_file`): rustls with the ring
//! provider, HTTP/1.1. Connections are accepted and their handshakes bounded by `crate::serve`.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;

/// A certificate or key that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("TLS: {0}")]
pub struct Error(String);

/// The server configuration from a PEM certificate chain and its private key.
pub fn server_config(cert_file: &Path, key_file: &Path) -> Result<Arc<ServerConfig>, Error> {
    let certs = tasker_shared::tls::certificates(cert_file).map_err(Error)?;
    let key = tasker_shared::tls::private_key(key_file).map_err(Error)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            Error(format!(
                "{} and {}: {e}",
                cert_file.display(),
                key_file.display()
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
