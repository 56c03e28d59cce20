//! Test certificates for IIOP over TLS, made by rcgen when a test runs (so
//! no key is ever stored): a CA with a server and a client certificate it
//! signs, and a second ("rogue") CA that nobody trusts, with its own.
//! Every leaf names `127.0.0.1` and `localhost` and may serve as a server
//! or a client certificate.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};

/// A certificate and its private key, in PEM.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The certificate.
    pub cert: String,
    /// The private key (PKCS#8).
    pub key: String,
}

impl Identity {
    /// The certificate followed by the key, as omniORB's
    /// `sslContext::key_file` wants them.
    pub fn combined(&self) -> String {
        format!("{}{}", self.cert, self.key)
    }
}

/// A test PKI.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The trusted CA's certificate.
    pub ca: String,
    /// A server signed by `ca`.
    pub server: Identity,
    /// A client signed by `ca`.
    pub client: Identity,
    /// A CA nobody trusts.
    pub rogue_ca: String,
    /// A server signed by `rogue_ca`.
    pub rogue_server: Identity,
    /// A client signed by `rogue_ca`.
    pub rogue_client: Identity,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("a key pair"))
        .expect("a self-signed CA")
}

fn leaf(issuer: &CertifiedIssuer<'static, KeyPair>, name: &str) -> Identity {
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .expect("leaf parameters");
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().expect("a key pair");
    let cert = params.signed_by(&key, issuer).expect("a signed leaf");
    Identity {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

impl Pki {
    /// A fresh PKI (ECDSA P-256 keys).
    pub fn generate() -> Pki {
        let trusted = ca("Armillary test CA");
        let rogue = ca("Rogue test CA");
        Pki {
            ca: trusted.pem(),
            server: leaf(&trusted, "armillary test server"),
            client: leaf(&trusted, "armillary test client"),
            rogue_ca: rogue.pem(),
            rogue_server: leaf(&rogue, "rogue server"),
            rogue_client: leaf(&rogue, "rogue client"),
        }
    }
}

/// A fresh directory for a test's PEM files, under the system's temporary
/// directory, named after `tag` and the process.
pub fn pem_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armillary-tls-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// Writes `text` to `dir/name` and returns the path as a string (for a
/// command line).
pub fn write_pem(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("a PEM file");
    path.display().to_string()
}
