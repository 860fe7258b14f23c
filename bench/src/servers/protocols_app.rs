//! The servers of `strata-bench protocols`: each of hyper, axum and Strata on two loopback
//! listeners, one plain (HTTP/1.1, or HTTP/2 with prior knowledge: hyper-util's auto builder
//! tells them apart by the HTTP/2 preface) and one TLS (rustls with the `ring` provider, ALPN
//! `h2` then `http/1.1`), with the routes of every scenario.
//!
//! Strata serves both from its own config (`https(..)` next to `listen(..)`). hyper and axum get
//! the usual hand-written accept loop, one task per connection, `set_nodelay`, the TLS handshake
//! in the connection's task, then `hyper_util::server::conn::auto::Builder` on the stream:
//! hyper's `service_fn` as in `hyper_ref.rs`, axum's `Router` through `TowerToHyperService`.
//! The TLS settings of the three are the same: Strata's `tls.rs` builds its acceptor as
//! [`acceptor`] does.
//!
//! The certificate is self-signed, made by rcgen for `127.0.0.1` and `localhost` when the run
//! starts ([`Certificate::generate`]); the parent writes it to a temporary directory
//! ([`CertificateFiles`]) and passes the paths to each server.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::scenario::ServerKind;
use crate::servers::{axum_ref, hyper_ref, loopback, strata_app};

/// The names the certificate is valid for.
pub(crate) const CERTIFICATE_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// The ALPN protocols every TLS listener offers, in order of preference.
pub(crate) const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A self-signed certificate and its private key, PEM.
#[derive(Clone)]
pub(crate) struct Certificate {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

impl Certificate {
    /// A new self-signed certificate (ECDSA P-256, rcgen's default) for
    /// [`CERTIFICATE_NAMES`]: `127.0.0.1` as an IP address, `localhost` as a DNS name.
    pub(crate) fn generate() -> Result<Self, String> {
        let names: Vec<String> = CERTIFICATE_NAMES.iter().map(|&n| n.to_owned()).collect();
        let generated = rcgen::generate_simple_self_signed(names)
            .map_err(|e| format!("generating the certificate: {e}"))?;
        Ok(Self {
            cert_pem: generated.cert.pem(),
            key_pem: generated.signing_key.serialize_pem(),
        })
    }

    /// A client configuration trusting this certificate alone, offering `alpn`.
    pub(crate) fn client_config(&self, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, String> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.cert_pem.as_bytes()) {
            let cert = cert.map_err(|e| format!("the certificate is not valid PEM: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("the certificate is not a valid root: {e}"))?;
        }
        let mut config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }

    /// A connector trusting this certificate alone, offering `alpn`.
    pub(crate) fn connector(&self, alpn: &[&[u8]]) -> Result<TlsConnector, String> {
        Ok(TlsConnector::from(self.client_config(alpn)?))
    }
}

/// A certificate written to `cert.pem` and `key.pem` in a temporary directory of its own,
/// removed when dropped.
pub(crate) struct CertificateFiles {
    dir: PathBuf,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

impl CertificateFiles {
    /// Writes `certificate` to a new directory under the system's temporary directory.
    pub(crate) fn write(certificate: &Certificate) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!(
            "strata-bench-protocols-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let files = Self {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
            dir,
        };
        for (path, pem) in [
            (&files.cert, &certificate.cert_pem),
            (&files.key, &certificate.key_pem),
        ] {
            std::fs::write(path, pem).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(files)
    }
}

impl Drop for CertificateFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The TLS acceptor of the hyper and axum servers: Strata's settings (`tls.rs`): the `ring`
/// provider, rustls' safe default protocol versions, no client authentication, ALPN `h2` and
/// `http/1.1`.
pub(crate) fn acceptor(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsAcceptor, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the certificate is not valid PEM: {e}"))?;
    if chain.is_empty() {
        return Err("the certificate PEM holds no certificate".to_owned());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("the private key is not valid PEM: {e}"))?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("certificate and key do not fit: {e}"))?;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A server of `strata-bench protocols`, listening twice on loopback.
pub(crate) struct Running {
    /// The plain listener: HTTP/1.1 and HTTP/2 with prior knowledge.
    pub(crate) plain: SocketAddr,
    /// The TLS listener: HTTP/2 or HTTP/1.1 by ALPN.
    pub(crate) tls: SocketAddr,
    handle: Handle,
}

enum Handle {
    Tasks(Vec<JoinHandle<()>>),
    Strata(Box<strata::Server>),
}

impl Running {
    /// Stops accepting connections.
    pub(crate) async fn stop(self) {
        match self.handle {
            Handle::Tasks(tasks) => tasks.iter().for_each(JoinHandle::abort),
            Handle::Strata(server) => server.shutdown().await,
        }
    }
}

/// Starts `kind` (hyper, axum or Strata) with the routes of every scenario (and the 10,000
/// generated ones when `many_routes`), plain and over TLS with the certificate chain and key
/// in the PEM files `cert` and `key`. Call from a tokio runtime.
pub(crate) async fn start(
    kind: ServerKind,
    many_routes: bool,
    cert: &Path,
    key: &Path,
) -> io::Result<Running> {
    match kind {
        ServerKind::Strata => start_strata(many_routes, cert, key).await,
        ServerKind::Hyper => {
            let app = hyper_ref::HyperApp::new(many_routes);
            let service = hyper::service::service_fn(move |request| app.clone().handle(request));
            serve_both(service, cert, key).await
        }
        ServerKind::Axum => {
            let service = hyper_util::service::TowerToHyperService::new(axum_ref::app(many_routes));
            serve_both(service, cert, key).await
        }
        ServerKind::ExpressZodApi | ServerKind::QuickStart => Err(io::Error::other(format!(
            "{kind} is another program: strata-bench protocols measures hyper, axum and strata"
        ))),
    }
}

/// Strata's bench app with its own HTTPS listener next to the plain one.
async fn start_strata(many_routes: bool, cert: &Path, key: &Path) -> io::Result<Running> {
    let mut config = strata_app::config(loopback());
    config.server.https = strata::server::Https::default()
        .cert(strata::server::Pem::File(cert.to_path_buf()))
        .key(strata::server::Pem::File(key.to_path_buf()))
        .listen(strata::server::Listen::Addr(loopback()));
    let server = strata::create_server(&config, &strata_app::routing(many_routes))
        .await
        .map_err(io::Error::other)?;
    let addr_of = |protocol| {
        server
            .servers()
            .iter()
            .filter(|listening| listening.protocol == protocol)
            .find_map(|listening| match &listening.local_addr {
                strata::server::LocalAddr::Tcp(addr) => Some(*addr),
                strata::server::LocalAddr::Unix(_) => None,
            })
            .ok_or_else(|| io::Error::other(format!("Strata listens on no {protocol:?} address")))
    };
    let plain = addr_of(strata::server::Protocol::Http)?;
    let tls = addr_of(strata::server::Protocol::Https)?;
    Ok(Running {
        plain,
        tls,
        handle: Handle::Strata(Box::new(server)),
    })
}

/// `service` on a plain listener and a TLS one (the certificate and key read from `cert`
/// and `key`), both on loopback.
async fn serve_both<S, B>(service: S, cert: &Path, key: &Path) -> io::Result<Running>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let acceptor =
        acceptor(&std::fs::read(cert)?, &std::fs::read(key)?).map_err(io::Error::other)?;
    let plain = TcpListener::bind(loopback()).await?;
    let tls = TcpListener::bind(loopback()).await?;
    let (plain_addr, tls_addr) = (plain.local_addr()?, tls.local_addr()?);
    let tasks = vec![
        tokio::spawn(accept_loop(plain, None, service.clone())),
        tokio::spawn(accept_loop(tls, Some(acceptor), service)),
    ];
    Ok(Running {
        plain: plain_addr,
        tls: tls_addr,
        handle: Handle::Tasks(tasks),
    })
}

/// The hand-written accept loop: one task per connection, the TLS handshake (when `tls`) in
/// that task, then hyper-util's auto builder (HTTP/1.1 or HTTP/2 by preface).
async fn accept_loop<S, B>(listener: TcpListener, tls: Option<TlsAcceptor>, service: S)
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (builder, service, tls) = (builder.clone(), service.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::pki_types::ServerName;

    /// The certificate round-trips through its files, and a client trusting it completes a
    /// handshake for both names (127.0.0.1 as an IP address) and negotiates `h2`, but not for
    /// a name it was not made for.
    #[tokio::test]
    async fn the_certificate_is_valid_for_its_names_only() {
        let certificate = Certificate::generate().unwrap();
        assert!(
            certificate
                .cert_pem
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(certificate.key_pem.contains("PRIVATE KEY-----"));
        let files = CertificateFiles::write(&certificate).unwrap();
        let acceptor = acceptor(
            &std::fs::read(&files.cert).unwrap(),
            &std::fs::read(&files.key).unwrap(),
        )
        .unwrap();
        let connector = certificate.connector(&ALPN).unwrap();
        for (name, valid) in [
            ("127.0.0.1", true),
            ("localhost", true),
            ("example.com", false),
            ("127.0.0.2", false),
        ] {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let acceptor = acceptor.clone();
            let accepted = tokio::spawn(async move {
                let mut stream = acceptor.accept(server).await.ok()?;
                let mut byte = [0u8; 1];
                stream.read_exact(&mut byte).await.ok()?;
                Some(byte[0])
            });
            let server_name = ServerName::try_from(name.to_owned()).unwrap();
            match connector.connect(server_name, client).await {
                Ok(mut stream) => {
                    assert!(
                        valid,
                        "{name}: a handshake for a name not in the certificate"
                    );
                    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
                    stream.write_all(b"x").await.unwrap();
                    stream.flush().await.unwrap();
                    assert_eq!(accepted.await.unwrap(), Some(b'x'));
                }
                Err(e) => {
                    assert!(!valid, "{name}: {e}");
                    accepted.abort();
                }
            }
        }
        let dir = files.dir.clone();
        assert!(dir.join("cert.pem").is_file());
        drop(files);
        assert!(!dir.exists(), "the files are removed");
        // Another certificate is another key: not trusted by this one's clients.
        let other = Certificate::generate().unwrap();
        assert_ne!(other.key_pem, certificate.key_pem);
        assert!(acceptor_of_garbage().is_err());
    }

    fn acceptor_of_garbage() -> Result<TlsAcceptor, String> {
        acceptor(b"not a certificate", b"not a key")
    }
}
