//! Generated code against omniORB, both ways, in GIOP 1.0, 1.1 and 1.2:
//!
//! - omniORB's `interop_client` (tests/interop/cpp) calls every operation of
//!   `Interop::Everything` on an Armillary server whose servant is written
//!   against the generated skeleton (`EverythingSkeleton<EverythingImpl>`);
//! - the generated `Everything` stub calls every operation on omniORB's
//!   `interop_server`, including a callback to an Armillary `Peer`.
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip.

use armillary::WaitForCompletion;
use std::process::Command;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{CompletionStatus, SystemExceptionKind};
use armillary::runtime::GiopVersion;
use armillary::{Any, Fixed, IdlType, ObjectRef, Orb, SystemException};
use armillary_codegen_tests::interop::interop;
use armillary_codegen_tests::interop::interop::{
    everything::FailError, Base, Choice, Color, Everything, EverythingSkeleton, Flag, Peer,
    PeerServant, PeerSkeleton, Point, Primitives, Shape, Value,
};
use armillary_codegen_tests::EverythingImpl;
use armillary_testkit::{build_peers, omniorb_available, start_interop_server};

#[test]
fn omniorb_client_against_a_generated_skeleton_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant = EverythingSkeleton::new(EverythingImpl::default()).into_servant();
    let object = poa.servant_to_reference(&servant).unwrap();
    let ior_file = peers.join(format!("generated-server-{}.ior", std::process::id()));
    std::fs::write(&ior_file, orb.object_to_string(&object)).unwrap();
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
        let out = cmd.args(["-ORBmaxGIOPVersion", version]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or("");
        assert!(
            out.status.success() && last.ends_with(" 0 failed"),
            "GIOP {version}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("GIOP {version}: {last}");
    }
    let _ = std::fs::remove_file(&ior_file);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

struct Greeter;

impl PeerServant for Greeter {
    fn hello(&self, text: String) -> Result<String, SystemException> {
        Ok(format!("hello, {text}"))
    }
}

fn shape(points: usize) -> Shape {
    Shape {
        name: "square".into(),
        hue: Color::Green,
        points: (0..points as i32).map(|i| Point { x: i, y: -i }).collect(),
        origin: Point { x: -5, y: 7 },
    }
}

fn generated_stub_session(version: GiopVersion, ior: &str) {
    let config = OrbConfig::new()
        .max_giop_version(version.try_into().unwrap())
        // The Peer callback arrives while the test thread waits for
        // `call_peer`'s reply: a server thread must be free to serve it.
        .concurrency(ConcurrencyModel::ThreadPool(2));
    let orb = Orb::with_config(config).unwrap();
    let object = orb.string_to_object(ior).unwrap();
    let e = Everything::narrow(&object)
        .unwrap()
        .expect("omniORB's object is an Everything");
    assert!(Peer::narrow(&object).unwrap().is_none());

    // Primitives, text, fixed.
    assert_eq!(e.echo_short(i16::MIN).unwrap(), i16::MIN);
    assert_eq!(e.echo_ushort(u16::MAX).unwrap(), u16::MAX);
    assert_eq!(e.echo_long(-42).unwrap(), -42);
    assert_eq!(e.echo_ulong(u32::MAX).unwrap(), u32::MAX);
    assert_eq!(e.echo_longlong(i64::MIN).unwrap(), i64::MIN);
    assert_eq!(e.echo_ulonglong(u64::MAX).unwrap(), u64::MAX);
    assert_eq!(e.echo_float(1.5).unwrap(), 1.5);
    assert_eq!(e.echo_double(-2.25e300).unwrap(), -2.25e300);
    assert!(e.echo_boolean(true).unwrap());
    assert_eq!(e.echo_char('x').unwrap(), 'x');
    assert_eq!(e.echo_octet(0xfe).unwrap(), 0xfe);
    let money = Fixed::new(-1234567, 2).unwrap();
    assert_eq!(e.echo_money(money).unwrap(), money);
    assert_eq!(e.echo_string("ünïcödé").unwrap(), "ünïcödé");
    assert_eq!(e.echo_short_string("short").unwrap(), "short");
    let wide = version >= GiopVersion::V1_2;
    if wide {
        // omniORB negotiates wchar code sets from GIOP 1.1 on, but its
        // client peer only exercises them in 1.2; do the same.
        assert_eq!(e.echo_wchar('Ж').unwrap(), 'Ж');
        assert_eq!(e.echo_wstring("wide ☺").unwrap(), "wide ☺");
        let p = Primitives {
            s: -2,
            us: 65535,
            l: i32::MIN,
            ul: u32::MAX,
            ll: i64::MIN,
            ull: u64::MAX,
            f: 1.5,
            d: -2.25,
            b: true,
            c: 'e',
            wc: 'Ж',
            o: 0xfe,
        };
        assert_eq!(e.echo_primitives(&p).unwrap(), p);
    }

    // Sequences, arrays, structs, enums, unions, any.
    let longs: Vec<i32> = (0..100_000).map(|i| i * 7919 - 500_000).collect();
    assert!(e.echo_longs(&longs).unwrap() == longs, "100000 longs");
    let strings = vec!["a".to_owned(), String::new(), "ç".to_owned()];
    assert_eq!(e.echo_strings(&strings).unwrap(), strings);
    let big: Vec<u8> = (0..1u32 << 20).map(|i| (i * 31 + 7) as u8).collect();
    assert!(e.echo_octets(&big).unwrap() == big, "1 MiB of octets");
    assert_eq!(e.echo_bounded(&[1, 2, 3, 4]).unwrap(), vec![1, 2, 3, 4]);
    let matrix = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]];
    assert_eq!(e.echo_matrix(&matrix).unwrap(), matrix);
    assert_eq!(e.echo_shape(&shape(3)).unwrap(), shape(3));
    assert_eq!(e.echo_shape(&shape(5000)).unwrap(), shape(5000));
    assert_eq!(e.echo_color(Color::Blue).unwrap(), Color::Blue);
    for value in [
        Value::AsLong(7),
        Value::AsString("text".into()),
        Value::AsPoint {
            discriminator: 3,
            value: Point { x: 1, y: 2 },
        },
        Value::AsDouble {
            discriminator: 99,
            value: 0.5,
        },
    ] {
        assert_eq!(e.echo_value(&value).unwrap(), value);
    }
    for choice in [
        Choice::Label("red".into()),
        Choice::Numbers(vec![1, -1]),
        Choice::Unselected(Color::Blue),
    ] {
        assert_eq!(e.echo_choice(&choice).unwrap(), choice);
    }
    for flag in [Flag::Yes(7), Flag::No('n')] {
        assert_eq!(e.echo_flag(&flag).unwrap(), flag);
    }
    let any = shape(2).to_any().unwrap();
    assert_eq!(
        Shape::from_any(&e.echo_any(&any).unwrap()),
        Some(shape(2)),
        "a struct in an any"
    );
    // Typedefs under their own TypeCodes, anonymous types, an any in an
    // any and an object reference, as omniORB echoes them.
    let seq = interop::long_seq_to_any(&vec![3, -1, 4]).unwrap();
    let back = e.echo_any(&seq).unwrap();
    assert_eq!(back.type_code.name().unwrap(), "LongSeq");
    assert_eq!(interop::long_seq_from_any(&back), Some(vec![3, -1, 4]));
    let matrix = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]];
    let back = e
        .echo_any(&interop::matrix_to_any(&matrix).unwrap())
        .unwrap();
    assert_eq!(interop::matrix_from_any(&back), Some(matrix));
    let back = e.echo_any(&vec![1.5f64, -2.0].to_any().unwrap()).unwrap();
    assert_eq!(Vec::<f64>::from_any(&back), Some(vec![1.5, -2.0]));
    let back = e.echo_any(&Any::nested(Any::from(9u32))).unwrap();
    assert_eq!(back.to_nested().and_then(|a| a.get::<u32>()), Some(9));
    if wide {
        let back = e.echo_any(&Any::wstring("wide ☺")).unwrap();
        assert_eq!(back.to_wstring().as_deref(), Some("wide ☺"));
    }
    let back = e.echo_any(&e.as_object().to_any().unwrap()).unwrap();
    let me = ObjectRef::from_any(&back).expect("an object reference");
    assert_eq!(Everything::from_object(me).echo_long(11).unwrap(), 11);

    // in, inout, out.
    let mut b = 5;
    assert_eq!(e.split(10, &mut b).unwrap(), (15, 5));
    assert_eq!(b, 10);
    let (out, name) = e.out_shape().unwrap();
    assert_eq!((out.name.as_str(), out.points.len()), ("triangle", 3));
    assert_eq!(name, "out");

    // Typed user exceptions with members; system exceptions.
    match e.fail(7) {
        Err(FailError::Failure(f)) => {
            assert_eq!(f.code, 7);
            assert_eq!(f.reason, "failed on purpose");
            assert_eq!(f.details, vec!["first", "second"]);
        }
        other => panic!("expected Failure, got {other:?}"),
    }
    assert!(matches!(e.fail(0), Err(FailError::Empty(_))));
    let system = e.fail_system(5).unwrap_err();
    assert_eq!(
        (system.kind(), system.minor(), system.completed()),
        (SystemExceptionKind::NoPermission, 5, CompletionStatus::Yes)
    );

    // Object references as results and parameters; a callback into this
    // process's Peer.
    let me = e.get_self().unwrap();
    assert_eq!(me.echo_long(99).unwrap(), 99);
    let base: Base = e.get_base().unwrap();
    assert_eq!(base.base_op().unwrap(), "base");
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let greeter = poa
        .servant_to_reference(&PeerSkeleton::new(Greeter).into_servant())
        .unwrap();
    assert_eq!(
        e.call_peer(&Peer::from_object(greeter), "omniORB").unwrap(),
        "hello, omniORB"
    );
    assert!(e.same_object(me.as_object(), e.as_object()).unwrap());

    // Inherited operations and attributes, through the derived stub.
    assert_eq!(e.base_op().unwrap(), "base");
    assert_eq!(e.base_name().unwrap(), "omniORB base");
    e.set_counter(41).unwrap();
    assert_eq!(e.counter().unwrap(), 41);
    assert_eq!(e.name().unwrap(), "omniORB everything");

    // Oneways arrive (omniORB may run them on other threads than the
    // count, so wait for them, up to a bound that only guards a hang).
    let before = e.oneway_count().unwrap();
    for n in 0..3 {
        e.ping(n).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while e.oneway_count().unwrap() < before + 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(e.oneway_count().unwrap(), before + 3);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn generated_stubs_against_omniorb_server_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "generated-stubs", &[]);
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        generated_stub_session(version, &ior);
        println!("GIOP {version}: every operation through the generated stub");
    }
}
