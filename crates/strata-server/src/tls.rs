//! TLS material from the config into a rustls acceptor.

use std::sync::Arc;

use crate::config::{Https, Pem};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ServerError;

fn read(pem: &Pem, what: &str) -> Result<Vec<u8>, ServerError> {
    match pem {
        Pem::Bytes(bytes) => Ok(bytes.clone()),
        Pem::File(path) => std::fs::read(path).map_err(|e| {
            ServerError::Tls(format!("cannot read the {what} {}: {e}", path.display()))
        }),
    }
}

/// An acceptor for `https`, announcing HTTP/2 and HTTP/1.1 by ALPN.
pub(crate) fn acceptor(https: &Https) -> Result<TlsAcceptor, ServerError> {
    let (Some(cert), Some(key)) = (&https.cert, &https.key) else {
        return Err(ServerError::Config(
            "https needs both `cert` and `key`".into(),
        ));
    };
    let cert = read(cert, "certificate")?;
    let key = read(key, "private key")?;
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServerError::Tls(format!("the certificate is not valid PEM: {e}")))?;
    if chain.is_empty() {
        return Err(ServerError::Tls(
            "the certificate PEM holds no certificate".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|e| ServerError::Tls(format!("the private key is not valid PEM: {e}")))?;
    // ring, for a build without a C toolchain. rustls 0.23.48 deprecates its provider for
    // lacking post-quantum key exchange; a server that wants that brings its own configuration
    // (`create_server(..).listener(Listener::tls(..))`, with aws-lc-rs).
    #[allow(deprecated)]
    let provider = ring::default_provider();
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| ServerError::Tls(format!("certificate and key do not fit: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
