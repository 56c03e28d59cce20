//! omniORB's `interop_client` (built from `tests/interop/cpp`) against an
//! Armillary server, in GIOP 1.0, 1.1 and 1.2: every operation of
//! `Interop::Everything` (tests/interop/idl/interop.idl), checked by the
//! omniORB side. The servant here is a `DynamicServant` (the public DSI):
//! each operation's parameters are read and written as `any`s by
//! TypeCode, so no generated code is needed.
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip.

use armillary::WaitForCompletion;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use armillary::config::OrbConfig;
use armillary::dii::{ArgMode, NvList};
use armillary::dsi::{DynamicRequest, DynamicServant};
use armillary::giop::any::DynValue;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::giop::typecode::{TCKind, TypeCode};
use armillary::poa::PoaCurrent;
use armillary::Any;
use armillary::{ObjectRef, Orb, Servant};

mod interop_types;
use interop_types::{echo_type, empty, everything, failure, peer, shape};

/// `Interop::Everything`, served through the dynamic skeleton: each
/// operation declares its parameters by TypeCode and answers with `any`s.
struct Everything {
    counter: AtomicI32,
    oneways: AtomicI32,
}

impl Everything {
    fn new() -> Self {
        Everything {
            counter: AtomicI32::new(0),
            oneways: AtomicI32::new(0),
        }
    }
}

/// An `any` of `tc` holding `value` (the tests build only values that fit).
fn any(tc: TypeCode, value: DynValue) -> Any {
    Any::new(tc, value).expect("the value fits its TypeCode")
}

fn long_of(args: &NvList, i: usize) -> i32 {
    args.value(i)
        .and_then(|v| v.get::<i32>())
        .unwrap_or_default()
}

impl DynamicServant for Everything {
    fn primary_interface(&self) -> &'static str {
        "IDL:Interop/Everything:1.0"
    }

    fn base_interfaces(&self) -> &[&'static str] {
        &["IDL:Interop/Base:1.0"]
    }

    fn invoke(&self, req: &mut DynamicRequest<'_, '_>) -> Result<(), SystemException> {
        let op = req.operation();
        let ins = |tcs: &[TypeCode]| {
            tcs.iter()
                .fold(NvList::new(), |l, tc| l.with_param(ArgMode::In, tc.clone()))
        };
        if let Some(tc) = echo_type(op) {
            let v = req.arguments(ins(&[tc]))?.value(0).cloned();
            return req.set_result(v.unwrap_or_else(Any::null));
        }
        match op {
            "base_op" => req.set_result(Any::from("base")),
            "_get_base_name" => req.set_result(Any::from("Armillary base")),
            "_get_name" => req.set_result(Any::from("Armillary everything")),
            "_get_counter" => req.set_result(Any::from(self.counter.load(Ordering::SeqCst))),
            "_set_counter" => {
                let args = req.arguments(ins(&[TypeCode::long()]))?;
                self.counter.store(long_of(args, 0), Ordering::SeqCst);
                Ok(())
            }
            "split" => {
                let args = req.arguments(
                    NvList::new()
                        .with_param(ArgMode::In, TypeCode::long())
                        .with_param(ArgMode::InOut, TypeCode::long())
                        .with_param(ArgMode::Out, TypeCode::long()),
                )?;
                let (a, b) = (long_of(args, 0), long_of(args, 1));
                args.set_value(1, Any::from(b * 2))?;
                args.set_value(2, Any::from(a - b))?;
                req.set_result(Any::from(a + b))
            }
            "out_shape" => {
                let args = req.arguments(
                    NvList::new()
                        .with_param(ArgMode::Out, shape())
                        .with_param(ArgMode::Out, TypeCode::string(0)),
                )?;
                let points = (0..3)
                    .map(|i| DynValue::Struct(vec![DynValue::Long(i), DynValue::Long(i * i)]))
                    .collect();
                let value = DynValue::Struct(vec![
                    DynValue::String("triangle".into()),
                    DynValue::Enum(2),
                    DynValue::Sequence(points),
                    DynValue::Struct(vec![DynValue::Long(-1), DynValue::Long(-2)]),
                ]);
                args.set_value(0, any(shape(), value))?;
                args.set_value(1, Any::from("out"))?;
                Ok(())
            }
            "fail" => {
                let code = long_of(req.arguments(ins(&[TypeCode::long()]))?, 0);
                req.set_exception(if code == 0 {
                    any(empty(), DynValue::Struct(Vec::new()))
                } else {
                    let details = ["first", "second"].map(|d| DynValue::String(d.into()));
                    any(
                        failure(),
                        DynValue::Struct(vec![
                            DynValue::Long(code),
                            DynValue::String("failed on purpose".into()),
                            DynValue::Sequence(details.to_vec()),
                        ]),
                    )
                })
            }
            "fail_system" => {
                let minor = long_of(req.arguments(ins(&[TypeCode::long()]))?, 0);
                Err(SystemException::no_permission(
                    minor as u32,
                    CompletionStatus::Yes,
                ))
            }
            "get_self" | "get_base" => {
                let me = PoaCurrent
                    .reference()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                req.set_result(any(everything(), DynValue::ObjRef(me.ior().clone())))
            }
            "call_peer" => {
                let args = req.arguments(ins(&[peer(), TypeCode::string(0)]))?;
                // The reference belongs to the ORB that received the request.
                let peer: ObjectRef = args
                    .value(0)
                    .and_then(|p| p.to_cdr_value(&peer()))
                    .ok_or_else(|| SystemException::bad_param(0, CompletionStatus::No))?;
                let text = args.value(1).cloned().unwrap_or_else(Any::null);
                let mut hello = peer
                    .request("hello")
                    .with_in(text)
                    .returns(TypeCode::string(0));
                hello.invoke()?;
                let answer = hello.return_value().cloned().unwrap_or_else(Any::null);
                req.set_result(answer)
            }
            "same_object" => {
                let object = TypeCode::objref("IDL:omg.org/CORBA/Object:1.0", "Object");
                let args = req.arguments(ins(&[object.clone(), object]))?;
                let same = args.value(0).map(|a| &a.value) == args.value(1).map(|b| &b.value);
                req.set_result(Any::from(same))
            }
            "ping" => {
                if long_of(req.arguments(ins(&[TypeCode::long()]))?, 0) >= 0 {
                    self.oneways.fetch_add(1, Ordering::SeqCst);
                }
                Ok(())
            }
            "oneway_count" => req.set_result(Any::from(self.oneways.load(Ordering::SeqCst))),
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
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Everything::new());
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
    let orb = Orb::with_config(
        OrbConfig::new().tls(
            TlsConfig::new()
                .listen(ListenEndpoint::new("127.0.0.1", 0))
                .certificate_pem(pki.server.cert.as_bytes())
                .private_key_pem(pki.server.key.as_bytes())
                .trusted_roots_pem(pki.ca.as_bytes())
                .client_auth(ClientAuth::Required),
        ),
    )
    .unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Everything::new());
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
