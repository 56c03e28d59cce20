//! IIOP over TLS: what an ORB is configured with ([`TlsConfig`], the `tls`
//! block of [`OrbConfig`](crate::config::OrbConfig)) and how that becomes
//! rustls configurations (with the `ring` crypto provider).
//!
//! One identity (a certificate chain and its private key) serves both
//! roles, as omniORB's `sslContext::key_file` does: a server presents it to
//! its clients, a client presents it to servers that ask for one. One set
//! of trusted roots verifies both the servers this ORB calls and the
//! client certificates its TLS endpoints receive.
//!
//! - The server side is on when TLS endpoints are configured
//!   ([`TlsConfig::listen`], `-ORBListenEndpoints iiops://host:port`); it needs a certificate and
//!   a key. Its references announce the TLS endpoints in the IIOP profile
//!   (`TAG_SSL_SEC_TRANS` and a CSIv2 `TAG_CSI_SEC_MECH_LIST` with a
//!   `TAG_TLS_SEC_TRANS`, see `transport::tls`). A TLS endpoint serves
//!   nothing but TLS; plain IIOP is served only on plain endpoints.
//! - The client side is on when trusted roots are configured
//!   ([`TlsConfig::trusted_roots_file`], `-ORBTlsCa`):
//!   references that announce TLS endpoints are then called over TLS only
//!   (never downgraded to their plain address). With
//!   [`TlsConfig::require`] a reference without a TLS endpoint is refused
//!   with `NO_PERMISSION` ([`minor::TLS_REQUIRED`](crate::giop::system_exception::minor::TLS_REQUIRED)).
//!
//! What this module is not: it does not check who a peer is beyond the
//! certificate verification rustls does (the server's certificate must name
//! the host the reference names; a client certificate must chain to a
//! trusted root).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::ListenEndpoint;

/// Where PEM text comes from: a file, or bytes already in memory.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PemSource {
    /// A PEM file, read when the ORB starts.
    File(PathBuf),
    /// PEM text.
    Pem(Vec<u8>),
}

impl std::fmt::Debug for PemSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PemSource::File(p) => f.debug_tuple("File").field(p).finish(),
            // Never print key material.
            PemSource::Pem(b) => write!(f, "Pem({} bytes)", b.len()),
        }
    }
}

impl PemSource {
    fn describe(&self) -> String {
        match self {
            PemSource::File(p) => p.display().to_string(),
            PemSource::Pem(_) => "PEM text".to_owned(),
        }
    }

    fn bytes(&self) -> Result<Vec<u8>, TlsError> {
        match self {
            PemSource::File(path) => std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.clone(),
                source: Arc::new(source),
            }),
            PemSource::Pem(b) => Ok(b.clone()),
        }
    }

    fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, TlsError> {
        let bytes = self.bytes()?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Pem {
                what: self.describe(),
                reason: e.to_string(),
            })?;
        if certs.is_empty() {
            return Err(TlsError::NoCertificate(self.describe()));
        }
        Ok(certs)
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>, TlsError> {
        let bytes = self.bytes()?;
        PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
            rustls_pki_types::pem::Error::NoItemsFound => TlsError::NoPrivateKey(self.describe()),
            e => TlsError::Pem {
                what: self.describe(),
                reason: e.to_string(),
            },
        })
    }
}

/// Whether a TLS endpoint asks its clients for a certificate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// A client may present a certificate (it must then be trusted); one
    /// without is served too.
    Optional,
    /// A client must present a trusted certificate; one without is refused
    /// during the handshake.
    Required,
}

/// The TLS block of an ORB's configuration
/// ([`OrbConfig::tls`](crate::config::OrbConfig::tls)). Build it with the
/// chained setters below or with the `-ORBTls…` options; as with
/// [`OrbConfig`](crate::config::OrbConfig), each setter takes the
/// configuration by value and returns it, and each value reads back with
/// a `get_` getter. PEM files are read when the ORB starts, so a missing
/// file is an error of [`Orb::with_config`](crate::Orb::with_config), not
/// of a setter.
///
/// ```
/// use armillary::config::{ListenEndpoint, OrbConfig};
/// use armillary::tls::{ClientAuth, TlsConfig};
/// let config = OrbConfig::new().tls(
///     TlsConfig::new()
///         .listen(ListenEndpoint::new("127.0.0.1", 0))
///         .certificate_file("server.pem")
///         .private_key_file("server.key")
///         .trusted_roots_file("ca.pem")
///         .client_auth(ClientAuth::Required),
/// );
/// assert!(config.get_tls().is_server());
/// assert_eq!(config.get_tls().get_client_auth(), ClientAuth::Required);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsConfig {
    /// Where to listen for IIOP over TLS (`iiops://host:port`).
    pub(crate) endpoints: Vec<ListenEndpoint>,
    /// This ORB's certificate chain (leaf first); the file may hold the
    /// private key too.
    pub(crate) certificate_chain: Option<PemSource>,
    /// This ORB's private key; when absent, it is looked for in
    /// `certificate_chain`.
    pub(crate) private_key: Option<PemSource>,
    /// The roots that verify servers' and clients' certificates.
    pub(crate) trusted_roots: Vec<PemSource>,
    /// Whether TLS endpoints ask clients for a certificate.
    pub(crate) client_auth: ClientAuth,
    /// Client side: call only over TLS, refusing references that announce
    /// no TLS endpoint.
    pub(crate) require: bool,
}

impl TlsConfig {
    /// An empty TLS configuration (the same as [`TlsConfig::default`]):
    /// no TLS endpoints, no identity, no trusted roots.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a TLS listening endpoint (`-ORBListenEndpoints
    /// iiops://host:port`); it turns the server side on, which then needs
    /// a certificate and a key.
    pub fn listen(mut self, endpoint: impl Into<ListenEndpoint>) -> Self {
        self.endpoints.push(endpoint.into());
        self
    }

    /// The certificate chain, from a PEM file.
    pub fn certificate_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.certificate_chain = Some(PemSource::File(path.into()));
        self
    }

    /// The certificate chain, as PEM text.
    pub fn certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.certificate_chain = Some(PemSource::Pem(pem.into()));
        self
    }

    /// The private key, from a PEM file.
    pub fn private_key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.private_key = Some(PemSource::File(path.into()));
        self
    }

    /// The private key, as PEM text.
    pub fn private_key_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.private_key = Some(PemSource::Pem(pem.into()));
        self
    }

    /// Adds trusted roots from a PEM file.
    pub fn trusted_roots_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.trusted_roots.push(PemSource::File(path.into()));
        self
    }

    /// Adds trusted roots given as PEM text.
    pub fn trusted_roots_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.trusted_roots.push(PemSource::Pem(pem.into()));
        self
    }

    /// Sets whether TLS endpoints ask clients for a certificate.
    pub fn client_auth(mut self, auth: ClientAuth) -> Self {
        self.client_auth = auth;
        self
    }

    /// Sets whether the client calls only over TLS (`-ORBTlsRequire`): a
    /// reference without a TLS endpoint then raises NO_PERMISSION.
    pub fn require(mut self, require: bool) -> Self {
        self.require = require;
        self
    }

    /// The TLS endpoints to listen on, in the order added.
    pub fn get_endpoints(&self) -> &[ListenEndpoint] {
        &self.endpoints
    }

    /// This ORB's certificate chain, if one is set.
    pub fn get_certificate_chain(&self) -> Option<&PemSource> {
        self.certificate_chain.as_ref()
    }

    /// This ORB's private key, if one is set apart from the certificate
    /// chain.
    pub fn get_private_key(&self) -> Option<&PemSource> {
        self.private_key.as_ref()
    }

    /// The sources of trusted roots, in the order added.
    pub fn get_trusted_roots(&self) -> &[PemSource] {
        &self.trusted_roots
    }

    /// Whether TLS endpoints ask clients for a certificate.
    pub fn get_client_auth(&self) -> ClientAuth {
        self.client_auth
    }

    /// Whether the client calls only over TLS.
    pub fn get_require(&self) -> bool {
        self.require
    }

    /// Whether the ORB listens for TLS.
    pub fn is_server(&self) -> bool {
        !self.endpoints.is_empty()
    }

    /// Whether the ORB calls servers over TLS when they offer it.
    pub fn is_client(&self) -> bool {
        !self.trusted_roots.is_empty()
    }

    /// Applies one `-ORBTls…` option (the caller has split off its value).
    pub(crate) fn apply_option(
        &mut self,
        option: &str,
        value: String,
    ) -> Result<(), crate::config::OrbOptionError> {
        let bad = |reason| crate::config::OrbOptionError::BadValue {
            option: option.to_owned(),
            value: value.clone(),
            reason,
        };
        match option {
            "-ORBTlsCert" => self.certificate_chain = Some(PemSource::File(value.into())),
            "-ORBTlsKey" => self.private_key = Some(PemSource::File(value.into())),
            "-ORBTlsCa" => self.trusted_roots.push(PemSource::File(value.into())),
            "-ORBTlsClientAuth" => {
                self.client_auth = match value.as_str() {
                    "none" => ClientAuth::None,
                    "optional" => ClientAuth::Optional,
                    "required" => ClientAuth::Required,
                    _ => return Err(bad("expected none, optional or required")),
                }
            }
            "-ORBTlsRequire" => self.require = crate::config::parse_yes_no(option, &value)?,
            _ => return Err(crate::config::OrbOptionError::Unknown(option.to_owned())),
        }
        Ok(())
    }

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn roots(&self) -> Result<RootCertStore, TlsError> {
        let mut roots = RootCertStore::empty();
        for source in &self.trusted_roots {
            for cert in source.certificates()? {
                roots.add(cert).map_err(|e| TlsError::Rustls {
                    what: source.describe(),
                    reason: e.to_string(),
                })?;
            }
        }
        Ok(roots)
    }

    /// The certificate chain and key, if a certificate is configured.
    fn identity(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, TlsError> {
        let Some(chain) = &self.certificate_chain else {
            return match &self.private_key {
                Some(key) => Err(TlsError::NoCertificate(key.describe())),
                None => Ok(None),
            };
        };
        let key = self.private_key.as_ref().unwrap_or(chain).private_key()?;
        Ok(Some((chain.certificates()?, key)))
    }

    /// Checks that references can announce the TLS endpoints in profiles
    /// of `version`.
    pub(crate) fn check_version(
        &self,
        version: armillary_giop::GiopVersion,
    ) -> Result<(), TlsError> {
        if self.is_server() && version < armillary_giop::GiopVersion::V1_1 {
            return Err(TlsError::NeedsIiop11);
        }
        Ok(())
    }

    /// The rustls configuration of the TLS endpoints.
    pub(crate) fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let (chain, key) = self.identity()?.ok_or(TlsError::ServerWithoutCertificate)?;
        let provider = Self::provider();
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| rustls_error("protocol versions", e))?;
        let builder = match self.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            auth => {
                if self.trusted_roots.is_empty() {
                    return Err(TlsError::ClientAuthWithoutRoots);
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(self.roots()?), provider);
                let verifier = if auth == ClientAuth::Optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                builder.with_client_cert_verifier(verifier.build().map_err(|e| {
                    TlsError::Rustls {
                        what: "trusted roots".to_owned(),
                        reason: e.to_string(),
                    }
                })?)
            }
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| rustls_error("certificate and key", e))?;
        Ok(Arc::new(config))
    }

    /// The rustls configuration of outgoing TLS connections (`None` when
    /// no trusted roots are configured).
    pub(crate) fn client_config(&self) -> Result<Option<Arc<rustls::ClientConfig>>, TlsError> {
        if self.trusted_roots.is_empty() {
            return if self.require {
                Err(TlsError::RequireWithoutRoots)
            } else {
                Ok(None)
            };
        }
        let builder = rustls::ClientConfig::builder_with_provider(Self::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| rustls_error("protocol versions", e))?
            .with_root_certificates(self.roots()?);
        let config = match self.identity()? {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| rustls_error("certificate and key", e))?,
            None => builder.with_no_client_auth(),
        };
        Ok(Some(Arc::new(config)))
    }
}

fn rustls_error(what: &str, e: rustls::Error) -> TlsError {
    TlsError::Rustls {
        what: what.to_owned(),
        reason: e.to_string(),
    }
}

/// Why the TLS configuration cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        source: Arc<std::io::Error>,
    },
    /// PEM text that does not parse.
    #[error("bad PEM in {what}: {reason}")]
    Pem {
        /// The file, or "PEM text".
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// No certificate where one was expected.
    #[error("no certificate in {0}")]
    NoCertificate(String),
    /// No private key in the key (or certificate) source.
    #[error("no private key in {0}")]
    NoPrivateKey(String),
    /// TLS endpoints are configured without a certificate (`-ORBTlsCert`).
    #[error("TLS endpoints need a certificate and a private key (-ORBTlsCert, -ORBTlsKey)")]
    ServerWithoutCertificate,
    /// Client authentication is asked for without roots to verify clients
    /// with (`-ORBTlsCa`).
    #[error("client authentication needs trusted roots (-ORBTlsCa)")]
    ClientAuthWithoutRoots,
    /// TLS endpoints with GIOP 1.0 as the highest version: an IIOP 1.0
    /// profile has no components to announce them in.
    #[error("TLS endpoints need GIOP 1.1 or later (IIOP 1.0 profiles cannot announce them)")]
    NeedsIiop11,
    /// `-ORBTlsRequire` without roots to verify servers with.
    #[error("requiring TLS needs trusted roots (-ORBTlsCa)")]
    RequireWithoutRoots,
    /// rustls refused the certificates, key or roots.
    #[error("TLS {what}: {reason}")]
    Rustls {
        /// Which part of the configuration.
        what: String,
        /// rustls's reason.
        reason: String,
    },
}
