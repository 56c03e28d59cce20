//! omniORB's `interop_client` (built from `tests/interop/cpp`) against an
//! Armillary server, in GIOP 1.0, 1.1 and 1.2: every operation of
//! `Interop::Everything` (tests/interop/idl/interop.idl), checked by the
//! omniORB side. The servant here is written against the dynamic
//! skeleton: each operation's parameters are read and written from their
//! TypeCodes, so no generated code is needed.
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip.

use armillary::WaitForCompletion;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use armillary::config::OrbConfig;
use armillary::giop::any::{read_value, write_value, DynValue};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::giop::typecode::{StructMember, TCKind, TypeCode, UnionMember};
use armillary::poa::PoaCurrent;
use armillary::{ObjectRef, Orb, ReplyBody, Servant, ServerRequest, UserException};
use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};

fn member(name: &str, type_code: TypeCode) -> StructMember {
    StructMember {
        name: name.into(),
        type_code,
    }
}

fn id(name: &str) -> String {
    format!("IDL:Interop/{name}:1.0")
}

struct Types {
    shape: TypeCode,
}

fn point() -> TypeCode {
    TypeCode::struct_tc(
        &id("Point"),
        "Point",
        vec![member("x", TypeCode::long()), member("y", TypeCode::long())],
    )
}

fn color() -> TypeCode {
    TypeCode::enum_tc(&id("Color"), "Color", &["red", "green", "blue"])
}

fn shape() -> TypeCode {
    TypeCode::struct_tc(
        &id("Shape"),
        "Shape",
        vec![
            member("name", TypeCode::string(0)),
            member("hue", color()),
            member(
                "points",
                TypeCode::alias(&id("PointSeq"), "PointSeq", TypeCode::sequence(point(), 0)),
            ),
            member("origin", point()),
        ],
    )
}

/// The TypeCode of each `echo_*` operation's parameter and result.
fn echo_type(op: &str) -> Option<TypeCode> {
    let union_member = |label: i128, name: &str, tc: TypeCode| UnionMember {
        label,
        name: name.into(),
        type_code: tc,
    };
    Some(match op {
        "echo_short" => TypeCode::short(),
        "echo_ushort" => TypeCode::ushort(),
        "echo_long" => TypeCode::long(),
        "echo_ulong" => TypeCode::ulong(),
        "echo_longlong" => TypeCode::longlong(),
        "echo_ulonglong" => TypeCode::ulonglong(),
        "echo_float" => TypeCode::float(),
        "echo_double" => TypeCode::double(),
        "echo_boolean" => TypeCode::boolean(),
        "echo_char" => TypeCode::char(),
        "echo_wchar" => TypeCode::wchar(),
        "echo_octet" => TypeCode::octet(),
        "echo_primitives" => TypeCode::struct_tc(
            &id("Primitives"),
            "Primitives",
            vec![
                member("s", TypeCode::short()),
                member("us", TypeCode::ushort()),
                member("l", TypeCode::long()),
                member("ul", TypeCode::ulong()),
                member("ll", TypeCode::longlong()),
                member("ull", TypeCode::ulonglong()),
                member("f", TypeCode::float()),
                member("d", TypeCode::double()),
                member("b", TypeCode::boolean()),
                member("c", TypeCode::char()),
                member("wc", TypeCode::wchar()),
                member("o", TypeCode::octet()),
            ],
        ),
        "echo_money" => TypeCode::fixed(10, 2),
        "echo_string" => TypeCode::string(0),
        "echo_wstring" => TypeCode::wstring(0),
        "echo_short_string" => TypeCode::string(16),
        "echo_longs" => TypeCode::sequence(TypeCode::long(), 0),
        "echo_strings" => TypeCode::sequence(TypeCode::string(0), 0),
        "echo_octets" => TypeCode::sequence(TypeCode::octet(), 0),
        "echo_bounded" => TypeCode::sequence(TypeCode::long(), 4),
        "echo_matrix" => TypeCode::array(TypeCode::array(TypeCode::long(), 4), 3),
        "echo_shape" => shape(),
        "echo_color" => color(),
        "echo_value" => TypeCode::union_tc(
            &id("Value"),
            "Value",
            TypeCode::long(),
            4,
            vec![
                union_member(1, "as_long", TypeCode::long()),
                union_member(2, "as_string", TypeCode::string(0)),
                union_member(3, "as_point", point()),
                union_member(4, "as_point", point()),
                union_member(0, "as_double", TypeCode::double()),
            ],
        ),
        "echo_choice" => TypeCode::union_tc(
            &id("Choice"),
            "Choice",
            color(),
            -1,
            vec![
                union_member(0, "label", TypeCode::string(0)),
                union_member(1, "numbers", TypeCode::sequence(TypeCode::short(), 0)),
            ],
        ),
        "echo_flag" => TypeCode::union_tc(
            &id("Flag"),
            "Flag",
            TypeCode::boolean(),
            -1,
            vec![
                union_member(1, "yes", TypeCode::ulong()),
                union_member(0, "no", TypeCode::char()),
            ],
        ),
        "echo_any" => TypeCode::any(),
        _ => return None,
    })
}

#[derive(Debug)]
struct Failure {
    code: i32,
    reason: String,
    details: Vec<String>,
}

impl CdrEncode for Failure {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_long(self.code);
        w.write_string(&self.reason)?;
        self.details.encode(w)
    }
}

impl CdrDecode for Failure {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Failure {
            code: r.read_long()?,
            reason: r.read_string()?,
            details: r.read()?,
        })
    }
}

impl UserException for Failure {
    const REPOSITORY_ID: &'static str = "IDL:Interop/Failure:1.0";
}

#[derive(Debug)]
struct Empty;

impl CdrEncode for Empty {
    fn encode(&self, _: &mut CdrWriter) -> Result<(), CdrError> {
        Ok(())
    }
}

impl CdrDecode for Empty {
    fn decode(_: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Empty)
    }
}

impl UserException for Empty {
    const REPOSITORY_ID: &'static str = "IDL:Interop/Empty:1.0";
}

struct Everything {
    types: Types,
    counter: AtomicI32,
    oneways: AtomicI32,
}

fn marshal(e: CdrError) -> SystemException {
    SystemException::from_cdr_error(&e, CompletionStatus::No)
}

impl Servant for Everything {
    fn repository_id(&self) -> &'static str {
        "IDL:Interop/Everything:1.0"
    }

    fn is_a(&self, repository_id: &str) -> bool {
        matches!(
            repository_id,
            "IDL:Interop/Everything:1.0" | "IDL:Interop/Base:1.0"
        )
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let op = req.operation();
        if let Some(tc) = echo_type(op) {
            let v = read_value(&tc, req.args()).map_err(marshal)?;
            return write_value(&tc, &v, req.results()).map_err(marshal);
        }
        match op {
            "base_op" => req.results().write_string("base").map_err(marshal),
            "_get_base_name" => req
                .results()
                .write_string("Armillary base")
                .map_err(marshal),
            "_get_name" => req
                .results()
                .write_string("Armillary everything")
                .map_err(marshal),
            "_get_counter" => {
                req.results()
                    .write_long(self.counter.load(Ordering::SeqCst));
                Ok(())
            }
            "_set_counter" => {
                let v = req.args().read_long().map_err(marshal)?;
                self.counter.store(v, Ordering::SeqCst);
                req.results();
                Ok(())
            }
            "split" => {
                let a = req.args().read_long().map_err(marshal)?;
                let b = req.args().read_long().map_err(marshal)?;
                let w = req.results();
                w.write_long(a + b);
                w.write_long(b * 2);
                w.write_long(a - b);
                Ok(())
            }
            "out_shape" => {
                let points = (0..3)
                    .map(|i| DynValue::Struct(vec![DynValue::Long(i), DynValue::Long(i * i)]))
                    .collect();
                let shape = DynValue::Struct(vec![
                    DynValue::String("triangle".into()),
                    DynValue::Enum(2),
                    DynValue::Sequence(points),
                    DynValue::Struct(vec![DynValue::Long(-1), DynValue::Long(-2)]),
                ]);
                let w = req.results();
                write_value(&self.types.shape, &shape, w).map_err(marshal)?;
                w.write_string("out").map_err(marshal)
            }
            "fail" => {
                let code = req.args().read_long().map_err(marshal)?;
                if code == 0 {
                    req.raise(&Empty)
                } else {
                    req.raise(&Failure {
                        code,
                        reason: "failed on purpose".into(),
                        details: vec!["first".into(), "second".into()],
                    })
                }
            }
            "fail_system" => {
                let minor = req.args().read_long().map_err(marshal)?;
                Err(SystemException::no_permission(
                    minor as u32,
                    CompletionStatus::Yes,
                ))
            }
            "get_self" | "get_base" => {
                let me = PoaCurrent
                    .get_reference()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                me.encode(req.results()).map_err(marshal)
            }
            "call_peer" => {
                let peer: ObjectRef = req.args().read().map_err(marshal)?;
                let text = req.args().read_string().map_err(marshal)?;
                let answer: String =
                    peer.invoke("hello", &|w| w.write_string(&text), |reply| match reply {
                        ReplyBody::Result(r) => Ok(Ok(r.read_string()?)),
                        ReplyBody::UserException { .. } => {
                            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
                        }
                    })?;
                req.results().write_string(&answer).map_err(marshal)
            }
            "same_object" => {
                let a: ObjectRef = req.args().read().map_err(marshal)?;
                let b: ObjectRef = req.args().read().map_err(marshal)?;
                req.results().write_bool(a == b);
                Ok(())
            }
            "ping" => {
                let n = req.args().read_long().map_err(marshal)?;
                if n >= 0 {
                    self.oneways.fetch_add(1, Ordering::SeqCst);
                }
                Ok(())
            }
            "oneway_count" => {
                req.results()
                    .write_long(self.oneways.load(Ordering::SeqCst));
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

#[test]
fn omniorb_client_against_armillary_server_in_every_giop_version() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let peers = armillary_testkit::build_peers();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = orb.root_poa();
    poa.the_poa_manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Everything {
        types: Types { shape: shape() },
        counter: AtomicI32::new(0),
        oneways: AtomicI32::new(0),
    });
    assert_eq!(TypeCode::any().kind(), TCKind::Any);
    let obj = poa.servant_to_reference(&servant).unwrap();
    let ior_file = peers.join(format!("armillary-server-{}.ior", std::process::id()));
    std::fs::write(&ior_file, orb.object_to_string(&obj)).unwrap();
    for (version, extra) in [
        ("1.0", Some("--no-wchar")),
        ("1.1", Some("--no-wchar")),
        ("1.2", None),
    ] {
        let mut cmd = Command::new(peers.join("interop_client"));
        cmd.arg(&ior_file);
        if let Some(flag) = extra {
            cmd.arg(flag);
        }
        let started = std::time::Instant::now();
        let out = cmd.args(["-ORBmaxGIOPVersion", version]).output().unwrap();
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or("");
        assert!(
            out.status.success() && last.ends_with(" 0 failed"),
            "GIOP {version}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("GIOP {version}: {last} ({took:.2?})");
    }
    let _ = std::fs::remove_file(&ior_file);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// omniORB's SSL transport against an Armillary TLS server:
/// `interop_ssl_client` (the same suite, over omniORB's `giop:ssl`) reads
/// the TLS endpoint from the `TAG_SSL_SEC_TRANS` / CSIv2 components of a
/// TLS-only reference and presents its certificate, as the server
/// requires. A client certificate from a CA the server does not trust is
/// refused.
#[test]
fn omniorb_ssl_client_against_armillary_tls_server() {
    use armillary::config::ListenEndpoint;
    use armillary::tls::{ClientAuth, TlsConfig};
    use armillary_testkit::tls::{pem_dir, write_pem, Pki};

    if !armillary_testkit::omniorb_available() {
        return;
    }
    let peers = armillary_testkit::build_peers();
    let pki = Pki::generate();
    let dir = pem_dir("omniorb-client");
    let ca = write_pem(&dir, "ca.pem", &pki.ca);
    let client_key = write_pem(&dir, "client.pem", &pki.client.combined());
    let rogue_key = write_pem(&dir, "rogue.pem", &pki.rogue_client.combined());
    let orb = Orb::with_config(OrbConfig {
        tls: TlsConfig::default()
            .listen(ListenEndpoint {
                host: "127.0.0.1".into(),
                port: 0,
            })
            .certificate_pem(pki.server.cert.as_bytes())
            .private_key_pem(pki.server.key.as_bytes())
            .trusted_roots_pem(pki.ca.as_bytes())
            .client_auth(ClientAuth::Required),
        ..OrbConfig::default()
    })
    .unwrap();
    let poa = orb.root_poa();
    poa.the_poa_manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Everything {
        types: Types { shape: shape() },
        counter: AtomicI32::new(0),
        oneways: AtomicI32::new(0),
    });
    let obj = poa.servant_to_reference(&servant).unwrap();
    assert_eq!(obj.ior().iiop_profiles()[0].port, 0, "TLS only");
    let ior_file = dir.join("armillary-tls-server.ior");
    std::fs::write(&ior_file, orb.object_to_string(&obj)).unwrap();
    let run = |key: &str| {
        Command::new(peers.join("interop_ssl_client"))
            .args(["--ssl-ca", &ca, "--ssl-key", key])
            .arg(&ior_file)
            .output()
            .unwrap()
    };
    let out = run(&client_key);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        out.status.success() && last.ends_with(" 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("over SSL: {last}");
    let refused = run(&rogue_key);
    assert!(
        !refused.status.success(),
        "{}",
        String::from_utf8_lossy(&refused.stdout)
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
