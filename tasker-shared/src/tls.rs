//! Reading the PEM files of the TLS settings (`tls_ca_file`, `orchestrator.tls_cert_file` and
//! `tls_key_file`), with errors that name the file and say what it lacks. The configuration reads
//! them once at load, so that a wrong or unreadable file stops a process at start with its key
//! named, rather than failing its first connection; the orchestrator builds its server from them.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The certificates of a PEM file: at least one, or an error naming the file.
pub fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", file.display()));
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1), or an error naming the file.
pub fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(file).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => {
            format!("{} holds no PEM private key", file.display())
        }
        e => format!("{}: {e}", file.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // PEM framing only: these functions read blocks; whether the DER inside is a usable
    // certificate or key is for rustls to say when it builds a connection or a server.
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAwQF\n-----END PRIVATE KEY-----\n";

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tasker-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn each_file_holds_what_its_setting_needs_or_says_which_file_lacks_it() {
        let certs = file("certs.pem", &format!("{CERT}{CERT}"));
        assert_eq!(certificates(&certs).unwrap().len(), 2);
        let key = file("key.pem", KEY);
        assert_eq!(private_key(&key).unwrap().secret_der(), &[3, 4, 5]);

        let err = certificates(&key).unwrap_err();
        assert!(err.contains("key.pem holds no PEM certificate"), "{err}");
        let err = private_key(&certs).unwrap_err();
        assert!(err.contains("certs.pem holds no PEM private key"), "{err}");
        let missing = std::env::temp_dir().join("tasker-tls-no-such-file.pem");
        let err = certificates(&missing).unwrap_err();
        assert!(err.contains("no-such-file.pem"), "{err}");
        let err = private_key(&missing).unwrap_err();
        assert!(err.contains("no-such-file.pem"), "{err}");
    }
}
