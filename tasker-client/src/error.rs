//! How a call fails: not sent or not answered, refused by the API with its code, or answered
//! with what this client cannot read.

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not sent, or no answer: the message carries the whole chain of causes (a refused
    /// connection, a certificate that could not be verified, a timeout).
    #[error("cannot reach the Tasker API: {}", causes(.0))]
    Http(reqwest::Error),
    /// The CA file of [`crate::client::ClientOptions::tls_ca_file`] cannot be read or holds no certificate.
    #[error("TLS: {0}")]
    Tls(String),
    /// Answered with something this client cannot read.
    #[error("cannot read the Tasker API's answer: {0}")]
    Answer(String),
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: String,
        message: String,
    },
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        Error::Http(e)
    }
}

/// An error and its sources, `: `-separated, each said once: reqwest's own message names only
/// the request, the reason is in its sources.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(e) = next {
        let text = e.to_string();
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        next = e.source();
    }
    said.join(": ")
}
