//! IIOP over TLS on loopback: an Armillary client and server in every
//! concurrency model, client authentication (none, optional, required),
//! untrusted certificates, plain text sent to a TLS endpoint, clients that
//! require TLS or have none, the `-ORBTls…` options, the IOR components a
//! TLS server publishes (as omniORB's `catior` reads them), and omniORB's
//! SSL transport (`interop_ssl_server`, built from `tests/interop/cpp`) as
//! the server. (omniORB's SSL client against an Armillary TLS server is in
//! `omniorb_client.rs`, which has the servant it needs.)
//!
//! The certificates are made when the tests run
//! (`armillary_testkit::tls`); nothing secret is stored. No assertion depends on timing: waits are bounded by
//! deadlines that only a broken ORB reaches.

use armillary::WaitForCompletion;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use armillary::config::{ConcurrencyModel, ListenEndpoint, OrbConfig};
use armillary::giop::ior::security::{
    association, SslSecTrans, TAG_CSI_SEC_MECH_LIST, TAG_SSL_SEC_TRANS,
};
use armillary::giop::ior::{Ior, KnownComponent, TaggedComponent};
use armillary::giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};
use armillary::runtime::ReplyBody;
use armillary::tls::{ClientAuth, TlsConfig};
use armillary::{ObjectRef, Orb, OrbError, Servant, ServerRequest};
use armillary_giop::cdr::CdrError;
use armillary_giop::giop::{MessageBody, MessageBuilder, RequestHeader, TargetAddress};
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::tls::{pem_dir, write_pem as write, Identity, Pki};

/// Far beyond anything a working ORB needs; reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

/// Echoes longs and octet sequences.
struct Echo;

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Echo:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        match req.operation() {
            "echo_long" => {
                let v = req.args().read_long().map_err(bad)?;
                req.results().write_long(v);
            }
            "echo_octets" => {
                let v = req.args().read_octet_seq().map_err(bad)?.to_vec();
                req.results().write_octet_seq(&v).map_err(bad)?;
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

fn echo_long(obj: &ObjectRef, v: i32) -> Result<i32, SystemException> {
    obj.invoke(
        "echo_long",
        &|w| {
            w.write_long(v);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    )
}

fn echo_octets(obj: &ObjectRef, v: &[u8]) -> Result<Vec<u8>, SystemException> {
    obj.invoke(
        "echo_octets",
        &|w| w.write_octet_seq(v),
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_octet_seq()?.to_vec())),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    )
}

fn loopback() -> ListenEndpoint {
    ListenEndpoint::new("127.0.0.1", 0)
}

/// The TLS block of a server presenting `identity`, trusting `ca` for
/// client certificates.
fn server_tls(identity: &Identity, ca: &str, auth: ClientAuth) -> TlsConfig {
    TlsConfig::default()
        .listen(loopback())
        .certificate_pem(identity.cert.as_bytes())
        .private_key_pem(identity.key.as_bytes())
        .trusted_roots_pem(ca.as_bytes())
        .client_auth(auth)
}

/// The TLS block of a client trusting `ca`, presenting `identity` if any.
fn client_tls(ca: &str, identity: Option<&Identity>) -> TlsConfig {
    let tls = TlsConfig::default().trusted_roots_pem(ca.as_bytes());
    match identity {
        Some(id) => tls
            .certificate_pem(id.cert.as_bytes())
            .private_key_pem(id.key.as_bytes()),
        None => tls,
    }
}

/// A server ORB with `config`, an Echo object and a string for it.
fn server(config: OrbConfig) -> (Orb, String) {
    let orb = Orb::with_config(config).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Echo);
    let obj = poa.servant_to_reference(&servant).unwrap();
    let ior = orb.object_to_string(&obj);
    (orb, ior)
}

fn client(tls: TlsConfig) -> Orb {
    Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .tls(tls),
    )
    .unwrap()
}

fn assert_refused(e: &SystemException, minor_code: u32) {
    assert_eq!(e.kind(), SystemExceptionKind::NoPermission, "{e}");
    assert_eq!(e.minor(), minor_code, "{e}");
    assert_eq!(e.completed(), CompletionStatus::No, "{e}");
}

#[test]
fn every_concurrency_model_serves_tls() {
    let pki = Pki::generate();
    for concurrency in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPool(3),
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ApplicationThreads,
    ] {
        let (server_orb, ior) = server(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .concurrency(concurrency)
                .tls(server_tls(&pki.server, &pki.ca, ClientAuth::None)),
        );
        // With application threads, one of the application's threads
        // serves.
        let runner = (concurrency == ConcurrencyModel::ApplicationThreads).then(|| {
            let orb = server_orb.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        let orb = client(client_tls(&pki.ca, None));
        let obj = orb.string_to_object(&ior).unwrap();
        for v in [0, -1, i32::MIN, i32::MAX] {
            assert_eq!(echo_long(&obj, v).unwrap(), v, "{concurrency:?}");
        }
        // Larger than a TLS record (16 KiB) and than a socket buffer.
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(echo_octets(&obj, &big).unwrap(), big, "{concurrency:?}");
        // Several threads on the one (multiplexed) TLS connection.
        std::thread::scope(|s| {
            for t in 0..4 {
                let obj = &obj;
                s.spawn(move || {
                    for i in 0..50 {
                        let v = t * 1000 + i;
                        assert_eq!(echo_long(obj, v).unwrap(), v);
                    }
                });
            }
        });
        assert!(obj.is_a("IDL:Test/Echo:1.0").unwrap());
        assert_eq!(obj.locate().unwrap(), armillary::Location::Here);
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        server_orb.shutdown(WaitForCompletion::Yes).unwrap();
        if let Some(runner) = runner {
            runner.join().unwrap();
        }
    }
}

#[test]
fn the_ior_announces_the_tls_endpoint() {
    let pki = Pki::generate();
    for (auth, supports, requires) in [
        (ClientAuth::None, 0x26, 0x06),
        (ClientAuth::Optional, 0x66, 0x06),
        (ClientAuth::Required, 0x66, 0x46),
    ] {
        let (orb, ior) = server(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .tls(server_tls(&pki.server, &pki.ca, auth)),
        );
        let port = orb.endpoints().iter().find(|e| e.is_tls()).unwrap().port();
        let obj = orb.string_to_object(&ior).unwrap();
        let profile = &obj.ior().iiop_profiles()[0];
        // Only TLS: the profile's own port is 0, as omniORB publishes it.
        assert_eq!(profile.port, 0);
        assert_eq!(profile.tls_addresses(), [("127.0.0.1".to_owned(), port)]);
        let ssl = profile
            .components
            .iter()
            .find(|c| c.tag == TAG_SSL_SEC_TRANS)
            .unwrap();
        let Ok(Some(KnownComponent::SslSecTrans(ssl))) = ssl.decode_known() else {
            panic!("TAG_SSL_SEC_TRANS does not decode");
        };
        assert_eq!(
            (ssl.target_supports, ssl.target_requires, ssl.port),
            (supports, requires, port)
        );
        let csi = profile
            .components
            .iter()
            .find(|c| c.tag == TAG_CSI_SEC_MECH_LIST)
            .unwrap();
        let Ok(Some(KnownComponent::CsiSecMechList(list))) = csi.decode_known() else {
            panic!("TAG_CSI_SEC_MECH_LIST does not decode");
        };
        let tls = list.mechanisms[0].tls().unwrap();
        assert_eq!(
            (tls.target_supports, tls.target_requires),
            (supports, requires)
        );
        assert_eq!(tls.addresses, [("127.0.0.1".to_owned(), port)]);
        assert_eq!(list.mechanisms[0].target_requires, requires);
        // What omniORB's catior reads from it.
        if armillary_testkit::omniorb_available() {
            let out = Command::new("catior").arg(&ior).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{text}");
            assert!(text.contains("IIOP 1.2 127.0.0.1 0 "), "{text}");
            assert!(
                text.contains(&format!(
                    "TAG_SSL_SEC_TRANS port = {port} supports {supports} requires {requires}"
                )),
                "{text}"
            );
            assert!(
                text.contains(&format!("TAG_CSI_SEC_MECH_LIST endpoints 127.0.0.1:{port}")),
                "{text}"
            );
        }
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
    assert_eq!(
        association::names(0x46),
        ["Integrity", "Confidentiality", "EstablishTrustInClient"]
    );
}

#[test]
fn a_server_with_plain_and_tls_endpoints_requires_nothing() {
    let pki = Pki::generate();
    let (orb, ior) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .listen(loopback())
            .tls(server_tls(&pki.server, &pki.ca, ClientAuth::None)),
    );
    let plain_port = orb.endpoints()[0].port();
    let tls_port = orb.endpoints().iter().find(|e| e.is_tls()).unwrap().port();
    let obj = orb.string_to_object(&ior).unwrap();
    let profile = &obj.ior().iiop_profiles()[0];
    assert_eq!(profile.port, plain_port);
    let Some(KnownComponent::SslSecTrans(ssl)) = profile.component(TAG_SSL_SEC_TRANS) else {
        panic!("no TAG_SSL_SEC_TRANS");
    };
    assert_eq!(
        (ssl.target_supports, ssl.target_requires, ssl.port),
        (0x27, 0, tls_port)
    );
    // Both kinds of client are served, each on its own endpoint.
    let plain = client(TlsConfig::default());
    assert_eq!(
        echo_long(&plain.string_to_object(&ior).unwrap(), 7).unwrap(),
        7
    );
    let secure = client(client_tls(&pki.ca, None).require(true));
    assert_eq!(
        echo_long(&secure.string_to_object(&ior).unwrap(), 8).unwrap(),
        8
    );
    plain.shutdown(WaitForCompletion::Yes).unwrap();
    secure.shutdown(WaitForCompletion::Yes).unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn client_authentication_required() {
    let pki = Pki::generate();
    let (orb, ior) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .tls(server_tls(&pki.server, &pki.ca, ClientAuth::Required)),
    );
    let with_cert = client(client_tls(&pki.ca, Some(&pki.client)));
    let obj = with_cert.string_to_object(&ior).unwrap();
    assert_eq!(echo_long(&obj, 1).unwrap(), 1);
    // No certificate, or one from a CA the server does not trust: the
    // server ends the handshake, and every later call is refused too.
    for identity in [None, Some(&pki.rogue_client)] {
        let refused = client(client_tls(&pki.ca, identity));
        let obj = refused.string_to_object(&ior).unwrap();
        for _ in 0..2 {
            assert_refused(&echo_long(&obj, 2).unwrap_err(), minor::TLS_REFUSED);
        }
        refused.shutdown(WaitForCompletion::Yes).unwrap();
    }
    // The server still serves the client it trusts.
    assert_eq!(echo_long(&obj, 3).unwrap(), 3);
    with_cert.shutdown(WaitForCompletion::Yes).unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn client_authentication_optional() {
    let pki = Pki::generate();
    let (orb, ior) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .tls(server_tls(&pki.server, &pki.ca, ClientAuth::Optional)),
    );
    for identity in [None, Some(&pki.client)] {
        let c = client(client_tls(&pki.ca, identity));
        assert_eq!(echo_long(&c.string_to_object(&ior).unwrap(), 4).unwrap(), 4);
        c.shutdown(WaitForCompletion::Yes).unwrap();
    }
    // A certificate that is presented must be trusted.
    let rogue = client(client_tls(&pki.ca, Some(&pki.rogue_client)));
    let e = echo_long(&rogue.string_to_object(&ior).unwrap(), 5).unwrap_err();
    assert_refused(&e, minor::TLS_REFUSED);
    rogue.shutdown(WaitForCompletion::Yes).unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn an_untrusted_server_certificate_is_refused() {
    let pki = Pki::generate();
    // The server's certificate comes from a CA the client does not trust.
    let (orb, ior) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .tls(server_tls(&pki.rogue_server, &pki.ca, ClientAuth::None)),
    );
    let c = client(client_tls(&pki.ca, None));
    let e = echo_long(&c.string_to_object(&ior).unwrap(), 1).unwrap_err();
    assert_refused(&e, minor::TLS_REFUSED);
    // Trusting the rogue CA, the same client is served.
    let trusting = client(client_tls(&pki.rogue_ca, None));
    assert_eq!(
        echo_long(&trusting.string_to_object(&ior).unwrap(), 2).unwrap(),
        2
    );
    c.shutdown(WaitForCompletion::Yes).unwrap();
    trusting.shutdown(WaitForCompletion::Yes).unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A GIOP 1.2 request for `echo_long(1)` on `key`.
fn plain_request(key: &[u8]) -> Vec<u8> {
    let header = MessageBody::Request(RequestHeader {
        request_id: 1,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: "echo_long".into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let mut b = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Big, &header).unwrap();
    b.body().write_long(1);
    b.finish(false)
}

#[test]
fn plain_text_to_a_tls_endpoint_is_refused() {
    let pki = Pki::generate();
    for concurrency in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPerConnection,
    ] {
        let (orb, ior) = server(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .concurrency(concurrency)
                .tls(server_tls(&pki.server, &pki.ca, ClientAuth::None)),
        );
        let port = orb.endpoints().iter().find(|e| e.is_tls()).unwrap().port();
        let key = orb.string_to_object(&ior).unwrap().ior().iiop_profiles()[0]
            .object_key
            .clone();
        // A plain GIOP request: the server answers with a TLS alert at
        // most, never a GIOP reply, and closes the connection.
        let mut raw = TcpStream::connect(("127.0.0.1", port)).unwrap();
        raw.set_read_timeout(Some(DEADLINE)).unwrap();
        raw.write_all(&plain_request(&key)).unwrap();
        let mut answer = Vec::new();
        // A server that never closed makes this a WouldBlock error.
        let end = raw.read_to_end(&mut answer);
        assert!(
            end.is_ok()
                || matches!(
                    end.as_ref().map_err(|e| e.kind()),
                    Err(std::io::ErrorKind::ConnectionReset)
                ),
            "{end:?}"
        );
        assert!(!answer.starts_with(b"GIOP"), "{answer:?}");
        // A TLS alert record (content type 21), if anything.
        assert!(answer.is_empty() || answer[0] == 21, "{answer:?}");
        // An Armillary client without TLS, sent there by a corbaloc,
        // gets a clean exception.
        let plain = client(TlsConfig::default());
        let obj = plain
            .string_to_object(&format!("corbaloc:iiop:1.2@127.0.0.1:{port}/x"))
            .unwrap();
        let e = echo_long(&obj, 1).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                SystemExceptionKind::CommFailure | SystemExceptionKind::Transient
            ),
            "{e}"
        );
        // The server is still well.
        let good = client(client_tls(&pki.ca, None));
        assert_eq!(
            echo_long(&good.string_to_object(&ior).unwrap(), 9).unwrap(),
            9
        );
        plain.shutdown(WaitForCompletion::Yes).unwrap();
        good.shutdown(WaitForCompletion::Yes).unwrap();
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn clients_refuse_what_their_tls_settings_forbid() {
    let pki = Pki::generate();
    let (tls_orb, tls_ior) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .tls(server_tls(&pki.server, &pki.ca, ClientAuth::None)),
    );
    let (plain_orb, plain_ior) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    // No trusted roots: a TLS-only reference cannot be called.
    let plain = client(TlsConfig::default());
    let e = echo_long(&plain.string_to_object(&tls_ior).unwrap(), 1).unwrap_err();
    assert_refused(&e, minor::TLS_NOT_CONFIGURED);
    // Requiring TLS: a plain-only reference is refused, before any
    // connection.
    let strict = client(client_tls(&pki.ca, None).require(true));
    let e = echo_long(&strict.string_to_object(&plain_ior).unwrap(), 1).unwrap_err();
    assert_refused(&e, minor::TLS_REQUIRED);
    let e = strict
        .string_to_object(&plain_ior)
        .unwrap()
        .locate()
        .unwrap_err();
    assert_refused(&e, minor::TLS_REQUIRED);
    assert_eq!(
        echo_long(&strict.string_to_object(&tls_ior).unwrap(), 2).unwrap(),
        2
    );
    // Not requiring it, a client with roots calls plain references plainly.
    let relaxed = client(client_tls(&pki.ca, None));
    assert_eq!(
        echo_long(&relaxed.string_to_object(&plain_ior).unwrap(), 3).unwrap(),
        3
    );
    // A reference that announces TLS on a plain endpoint: the handshake
    // meets GIOP, and the call fails cleanly.
    let mut profile = relaxed
        .string_to_object(&plain_ior)
        .unwrap()
        .ior()
        .iiop_profiles()[0]
        .clone();
    profile.components.push(
        TaggedComponent::ssl_sec_trans(&SslSecTrans {
            target_supports: 0x26,
            target_requires: 0x06,
            port: profile.port,
        })
        .unwrap(),
    );
    let lying = Ior::iiop("IDL:Test/Echo:1.0", &profile)
        .unwrap()
        .to_string();
    let e = echo_long(&relaxed.string_to_object(&lying).unwrap(), 4).unwrap_err();
    assert_refused(&e, minor::TLS_REFUSED);
    for orb in [plain, strict, relaxed, tls_orb, plain_orb] {
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn orb_options_configure_tls() {
    let pki = Pki::generate();
    let dir = pem_dir("options");
    let ca = write(&dir, "ca.pem", &pki.ca);
    let cert = write(&dir, "server.pem", &pki.server.cert);
    let key = write(&dir, "server.key", &pki.server.key);
    // The client's certificate and key in one file, as omniORB keeps them.
    let both = write(&dir, "client-and-key.pem", &pki.client.combined());
    let (server_orb, rest) = Orb::init([
        "server",
        "-ORBListenEndpoints",
        "iiops://127.0.0.1:0",
        "-ORBTlsCert",
        &cert,
        "-ORBTlsKey",
        &key,
        "-ORBTlsCa",
        &ca,
        "-ORBTlsClientAuth",
        "required",
        "--app-flag",
    ])
    .unwrap();
    assert_eq!(rest, ["server", "--app-flag"]);
    // Only the TLS endpoint: no plain IIOP one.
    let endpoints = server_orb.endpoints();
    assert!(!endpoints.is_empty() && endpoints.iter().all(|e| e.is_tls()));
    let poa = server_orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Echo);
    let ior = server_orb.object_to_string(&poa.servant_to_reference(&servant).unwrap());
    let (client_orb, _) = Orb::init([
        "client",
        "-ORBTlsCa",
        &ca,
        "-ORBTlsCert",
        &both,
        "-ORBTlsRequire",
        "yes",
    ])
    .unwrap();
    assert_eq!(
        echo_long(&client_orb.string_to_object(&ior).unwrap(), 6).unwrap(),
        6
    );
    // Configurations that cannot work are refused when the ORB starts.
    for (args, what) in [
        (
            vec!["-ORBListenEndpoints", "iiops://127.0.0.1:0"],
            "need a certificate",
        ),
        (
            vec![
                "-ORBListenEndpoints",
                "ssliop://127.0.0.1:0",
                "-ORBTlsCert",
                &cert,
                "-ORBTlsKey",
                &key,
                "-ORBTlsClientAuth",
                "optional",
            ],
            "needs trusted roots",
        ),
        (vec!["-ORBTlsRequire", "yes"], "needs trusted roots"),
        (
            vec![
                "-ORBListenEndpoints",
                "iiops://127.0.0.1:0",
                "-ORBTlsCert",
                &cert,
                "-ORBTlsKey",
                &key,
                "-ORBGIOPVersion",
                "1.0",
            ],
            "need GIOP 1.1",
        ),
        (vec!["-ORBTlsCa", "/nonexistent/ca.pem"], "cannot read"),
        (vec!["-ORBTlsCa", &key], "no certificate"),
        (
            vec!["-ORBEndpoint", "giop:ssl:127.0.0.1:0", "-ORBTlsCert", &cert],
            "no private key",
        ),
    ] {
        match Orb::init(args.clone()) {
            Err(e @ OrbError::Tls(_)) => assert!(e.to_string().contains(what), "{args:?}: {e}"),
            Err(e) => panic!("{args:?}: {e}"),
            Ok(_) => panic!("{args:?} accepted"),
        }
    }
    assert!(Orb::init(["-ORBTlsClientAuth", "sometimes"]).is_err());
    client_orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts omniORB's `interop_ssl_server` listening only on SSL, with
/// `verify` as its OpenSSL verify mode; returns it with its IOR.
fn omniorb_ssl_server(
    peers: &Path,
    dir: &Path,
    pki: &Pki,
    verify: &str,
) -> (armillary_testkit::Peer, String) {
    let ca = write(dir, "ca.pem", &pki.ca);
    let key = write(dir, "omniorb-server.pem", &pki.server.combined());
    let ior_file = dir.join(format!("omniorb-ssl-{verify}.ior"));
    let _ = std::fs::remove_file(&ior_file);
    let peer = armillary_testkit::Peer(
        Command::new(peers.join("interop_ssl_server"))
            .args(["--ssl-ca", &ca, "--ssl-key", &key, "--ssl-verify", verify])
            .arg("--ior-file")
            .arg(&ior_file)
            .args(["-ORBendPoint", "giop:ssl:127.0.0.1:0"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("interop_ssl_server starts"),
    );
    let ior = armillary_testkit::wait_for_file(&ior_file);
    (peer, ior)
}

fn echo_string(obj: &ObjectRef, v: &str) -> Result<String, SystemException> {
    obj.invoke("echo_string", &|w| w.write_string(v), |reply| match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_string()?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    })
}

#[test]
fn armillary_client_against_omniorb_ssl_server() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let peers = armillary_testkit::build_peers();
    let pki = Pki::generate();
    let dir = pem_dir("omniorb-server");
    // omniORB's default: a client certificate is required.
    let (_server, ior) = omniorb_ssl_server(&peers, &dir, &pki, "require");
    let orb = client(client_tls(&pki.ca, Some(&pki.client)).require(true));
    let obj = orb.string_to_object(&ior).unwrap();
    // omniORB publishes port 0 and TAG_SSL_SEC_TRANS.
    let profile = &obj.ior().iiop_profiles()[0];
    assert_eq!(profile.port, 0);
    assert_eq!(profile.tls_addresses().len(), 1);
    assert!(obj.is_a("IDL:Interop/Everything:1.0").unwrap());
    for v in [0, -1, i32::MIN, i32::MAX] {
        assert_eq!(echo_long(&obj, v).unwrap(), v);
    }
    for s in ["", "hello over TLS", "ünïcödé"] {
        assert_eq!(echo_string(&obj, s).unwrap(), s);
    }
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    assert_eq!(echo_octets(&obj, &big).unwrap(), big);
    assert_eq!(obj.locate().unwrap(), armillary::Location::Here);
    // Without a certificate omniORB ends the handshake.
    let anonymous = client(client_tls(&pki.ca, None));
    let e = echo_long(&anonymous.string_to_object(&ior).unwrap(), 1).unwrap_err();
    assert_refused(&e, minor::TLS_REFUSED);
    // Not trusting omniORB's certificate, the client refuses it.
    let wary = client(client_tls(&pki.rogue_ca, Some(&pki.client)));
    let e = echo_long(&wary.string_to_object(&ior).unwrap(), 1).unwrap_err();
    assert_refused(&e, minor::TLS_REFUSED);
    // Without TLS, the SSL-only reference cannot be called.
    let plain = client(TlsConfig::default());
    let e = echo_long(&plain.string_to_object(&ior).unwrap(), 1).unwrap_err();
    assert_refused(&e, minor::TLS_NOT_CONFIGURED);
    // An omniORB server that asks for no certificate serves the anonymous
    // client.
    let (_open_server, open_ior) = omniorb_ssl_server(&peers, &dir, &pki, "none");
    assert_eq!(
        echo_long(&anonymous.string_to_object(&open_ior).unwrap(), 11).unwrap(),
        11
    );
    for o in [orb, anonymous, wary, plain] {
        o.shutdown(WaitForCompletion::Yes).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
