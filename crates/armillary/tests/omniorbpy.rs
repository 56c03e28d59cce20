//! Differential tests against omniORBpy 4.3, the second omniORB
//! (`armillary_testkit::omniorbpy`: PyPI's `jeteve-omniorb` in a virtual
//! environment the test suite makes; the peer is
//! `tests/interop/python/diff_peer.py`, IDL
//! `tests/interop/idl/differential.idl`).
//!
//! omniORBpy marshals every value of a sequence on its own: in GIOP 1.1,
//! each fragment of a block of 8-byte values starts with 4 bytes of
//! padding, where omniORB's C++ library (`differential.rs`) runs the block
//! on unaligned. Armillary reads both (`armillary_giop::cdr::fragments`).
//! Here every kind of sequence, values of every primitive size (1, 2, 4
//! and 8 bytes), crosses fragment boundaries in both directions and every
//! GIOP version: omniORBpy's client against an Armillary server, and an
//! Armillary client against omniORBpy's server, through a relay that
//! counts the fragments. Issue 25's two cases are tests of their own.
//!
//! Set `ARMILLARY_SKIP_OMNIORBPY=1` to skip.

mod differential_echo;

use armillary::giop::any::{Any, DynValue};
use armillary::giop::typecode::TypeCode;
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_giop::cdr::{CdrDecode, CdrEncode};
use armillary_giop::GiopVersion;
use armillary_testkit::omniorbpy::{self, omniorbpy};
use differential_echo::*;

const VERSIONS: [GiopVersion; 3] = [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2];

/// Elements per sequence: 1,001 (an 8 KB block of 8-byte values, which
/// omniORB's C++ library also cuts) and 3,001 (odd, so boundaries fall at
/// varied places; 24 KB blocks, about 30 fragments in all).
const COUNTS: [u32; 2] = [1001, 3001];

/// Every primitive sequence of `s` as an `any` of its `differential.idl`
/// typedef: element sizes 1, 2, 4 and 8.
fn primitive_anys(s: &Sequences) -> Vec<(&'static str, Any)> {
    fn any<T: Copy>(
        name: &'static str,
        element: TypeCode,
        values: &[T],
        f: fn(T) -> DynValue,
    ) -> (&'static str, Any) {
        let tc = TypeCode::alias(
            &format!("IDL:Differential/{name}:1.0"),
            name,
            TypeCode::sequence(element, 0),
        );
        let value = DynValue::Sequence(values.iter().map(|v| f(*v)).collect());
        (name, Any::new(tc, value).unwrap())
    }
    vec![
        any("ShortSeq", TypeCode::short(), &s.shorts, DynValue::Short),
        any(
            "UShortSeq",
            TypeCode::ushort(),
            &s.ushorts,
            DynValue::UShort,
        ),
        any("LongSeq", TypeCode::long(), &s.longs, DynValue::Long),
        any("ULongSeq", TypeCode::ulong(), &s.ulongs, DynValue::ULong),
        any(
            "LongLongSeq",
            TypeCode::longlong(),
            &s.longlongs,
            DynValue::LongLong,
        ),
        any(
            "ULongLongSeq",
            TypeCode::ulonglong(),
            &s.ulonglongs,
            DynValue::ULongLong,
        ),
        any("FloatSeq", TypeCode::float(), &s.floats, DynValue::Float),
        any(
            "DoubleSeq",
            TypeCode::double(),
            &s.doubles,
            DynValue::Double,
        ),
        any(
            "BooleanSeq",
            TypeCode::boolean(),
            &s.booleans,
            DynValue::Boolean,
        ),
        any("CharSeq", TypeCode::char(), &s.chars, DynValue::Char),
        any("Bytes", TypeCode::octet(), &s.octets, DynValue::Octet),
    ]
}

/// A reference to `target` through `relay`.
fn through(orb: &Orb, target: &ObjectRef, relay: &Relay) -> ObjectRef {
    orb.string_to_object(&with_port(target.ior(), relay.port).to_string())
        .unwrap()
}

#[test]
fn every_kind_of_value_in_fragmented_requests_from_omniorbpy() {
    if !omniorbpy::available() {
        return;
    }
    let py = omniorbpy();
    let server = EchoServer::start(make_sequences_for_omniorbpy);
    fragmented_requests_from(
        &server,
        py.scratch_dir(),
        &COUNTS,
        |ior_file, n, version| {
            let args = [&n.to_string(), "-ORBmaxGIOPVersion", &version.to_string()];
            py.run_diff_client("sequences", ior_file, &args)
        },
        |run| run.success && run.stdout.lines().last() == Some("17 passed, 0 failed"),
    );
}

#[test]
fn every_kind_of_value_in_fragmented_replies_from_omniorbpy() {
    if !omniorbpy::available() {
        return;
    }
    let (_server, ior) = omniorbpy().start_diff_server("fragments", &[]);
    for version in VERSIONS {
        let orb = client_orb(version);
        let target = orb.string_to_object(&ior).unwrap();
        let profile = target.ior().iiop_profiles().into_iter().next().unwrap();
        for n in COUNTS {
            let relay = Relay::start((profile.host.clone(), profile.port));
            let obj = through(&orb, &target, &relay);
            let sent = make_sequences_for_omniorbpy(n);
            let back: Sequences =
                call(&obj, "echo_sequences", &|w| sent.encode(w), |r| r.read()).unwrap();
            assert!(back == sent, "GIOP {version}, {n}: echo_sequences differs");
            for (name, any) in primitive_anys(&sent) {
                let back = call(&obj, "echo_any", &|w| any.encode(w), Any::decode)
                    .unwrap_or_else(|e| panic!("GIOP {version}, {n}: echo_any {name}: {e}"));
                assert!(back == any, "GIOP {version}, {n}: echo_any {name} differs");
            }
            let samples: Vec<Sample> = call(
                &obj,
                "make_samples",
                &|w| {
                    w.write_long(1000);
                    Ok(())
                },
                |r| r.read(),
            )
            .unwrap();
            assert_eq!(samples, make_samples(1000), "GIOP {version}");
            let [request, reply] = relay.traffic();
            println!("GIOP {version}, {n}: requests {request:?}, replies {reply:?}");
            assert_fragmented(version, &reply, &request);
        }
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// Issue 25, server side: omniORBpy's client at GIOP 1.1 sends
/// `sum_longlongs` (a `sequence<long long>` of 0 to 9,999) in several
/// fragments, each starting with 4 bytes of padding; Armillary read the
/// block as omniORB's C++ library lays it out and answered
/// 113827886181767910 instead of 49995000, with no exception. The client
/// checks the sum.
#[test]
fn issue_25_a_fragmented_long_long_sequence_from_omniorbpys_client() {
    if !omniorbpy::available() {
        return;
    }
    let py = omniorbpy();
    let server = EchoServer::start(make_sequences_for_omniorbpy);
    let ior_file = server.ior_file(py.scratch_dir(), "issue25", None);
    let run = py.run_diff_client("issue25", &ior_file, &["-ORBmaxGIOPVersion", "1.1"]);
    let _ = std::fs::remove_file(&ior_file);
    assert!(
        run.passed("sum_longlongs of 10000"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
}

/// Issue 25, client side: an Armillary client at GIOP 1.1 gets omniORBpy's
/// echo of an `any` holding 3,000 long longs in a fragmented reply; from
/// index 1010 every value read shifted (`1010` as `1010 << 32`), with no
/// exception.
#[test]
fn issue_25_a_fragmented_long_long_sequence_from_omniorbpys_server() {
    if !omniorbpy::available() {
        return;
    }
    let (_server, ior) = omniorbpy().start_diff_server("issue25", &[]);
    let orb = client_orb(GiopVersion::V1_1);
    let obj = orb.string_to_object(&ior).unwrap();
    let values: Vec<i64> = (0..3000).collect();
    let tc = TypeCode::alias(
        "IDL:Differential/LongLongSeq:1.0",
        "LongLongSeq",
        TypeCode::sequence(TypeCode::longlong(), 0),
    );
    let any = Any::new(
        tc,
        DynValue::Sequence(values.iter().map(|v| DynValue::LongLong(*v)).collect()),
    )
    .unwrap();
    let back = call(&obj, "echo_any", &|w| any.encode(w), Any::decode).unwrap();
    let DynValue::Sequence(items) = &back.value else {
        panic!("not a sequence: {back:?}");
    };
    let first_wrong = items
        .iter()
        .zip(&values)
        .position(|(got, want)| *got != DynValue::LongLong(*want));
    assert_eq!(first_wrong, None, "{} values came back", items.len());
    assert_eq!(items.len(), 3000);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
