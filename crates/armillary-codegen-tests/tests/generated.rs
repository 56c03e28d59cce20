//! Generated code at work, in process: every generated type round-trips
//! through CDR in both byte orders and in GIOP 1.1 and 1.2; the generated
//! stub calls every operation of `Interop::Everything` on the generated
//! skeleton through a real ORB; marshalling rules (bounds, union branches,
//! recursion depth) fail with clear errors instead of wrong bytes or a
//! crash.

use armillary::WaitForCompletion;
use std::fmt::Debug;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{CompletionStatus, SystemExceptionKind};
use armillary::runtime::{
    ByteOrder, CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, CodeSets, GiopVersion,
    ReplyBody,
};
use armillary::{Any, Fixed, IdlType, ObjectRef, Orb, SystemException};
use armillary_codegen_tests::everything::everything as ev;
use armillary_codegen_tests::interop::interop::{
    everything::FailError, Base, Choice, Color, Everything, EverythingSkeleton, Failure, Flag,
    Peer, PeerServant, PeerSkeleton, Point, Primitives, Shape, Value,
};
use armillary_codegen_tests::quoter::stock;
use armillary_codegen_tests::EverythingImpl;
use proptest::prelude::*;

fn encode<T: CdrEncode>(
    value: &T,
    order: ByteOrder,
    version: GiopVersion,
) -> Result<Vec<u8>, CdrError> {
    let mut w = CdrWriter::new(order, version).with_codesets(CodeSets::NATIVE);
    value.encode(&mut w)?;
    Ok(w.into_bytes())
}

fn decode<T: CdrDecode>(
    bytes: &[u8],
    order: ByteOrder,
    version: GiopVersion,
) -> Result<T, CdrError> {
    let mut r = CdrReader::new(bytes, order, version).with_codesets(CodeSets::NATIVE);
    let value = T::decode(&mut r)?;
    assert!(r.is_empty(), "{} bytes left over", r.remaining());
    Ok(value)
}

/// Encodes and decodes `value` in both byte orders and GIOP 1.1 and 1.2.
fn round_trip<T: CdrEncode + CdrDecode + PartialEq + Debug>(value: &T) {
    for order in [ByteOrder::Big, ByteOrder::Little] {
        for version in [GiopVersion::V1_1, GiopVersion::V1_2] {
            let bytes = encode(value, order, version).unwrap();
            let back: T = decode(&bytes, order, version).unwrap();
            assert_eq!(&back, value, "{order:?} {version:?}");
        }
    }
}

fn shape() -> Shape {
    Shape {
        name: "square".into(),
        hue: Color::Green,
        points: vec![
            Point { x: 0, y: 0 },
            Point { x: 1, y: 0 },
            Point { x: 1, y: 1 },
        ],
        origin: Point { x: -5, y: 7 },
    }
}

fn primitives() -> Primitives {
    Primitives {
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
    }
}

#[test]
fn interop_types_round_trip() {
    round_trip(&shape());
    round_trip(&primitives());
    for value in [
        Value::AsLong(7),
        Value::AsString("seven".into()),
        Value::AsPoint {
            discriminator: 4,
            value: Point { x: 1, y: 2 },
        },
        Value::AsDouble {
            discriminator: 99,
            value: 0.5,
        },
    ] {
        round_trip(&value);
    }
    for choice in [
        Choice::Label("red".into()),
        Choice::Numbers(vec![1, -2, 3]),
        Choice::Unselected(Color::Blue),
    ] {
        round_trip(&choice);
    }
    round_trip(&Flag::Yes(3));
    round_trip(&Flag::No('n'));
    round_trip(&Failure {
        code: 3,
        reason: "why".into(),
        details: vec!["a".into(), "b".into()],
    });
    round_trip(&Color::Blue);
}

#[test]
fn everything_types_round_trip() {
    let tree = ev::TreeNode {
        value: 1,
        children: vec![
            ev::TreeNode {
                value: 2,
                children: vec![],
            },
            ev::TreeNode {
                value: 3,
                children: vec![ev::TreeNode {
                    value: 4,
                    children: vec![],
                }],
            },
        ],
    };
    round_trip(&tree);
    round_trip(&ev::List {
        head: 1,
        tail: vec![ev::List {
            head: 2,
            tail: vec![],
        }],
    });
    round_trip(&ev::ByLong::SmallValue {
        discriminator: 2,
        value: 5,
    });
    round_trip(&ev::ByLong::NegativeText("minus three".into()));
    round_trip(&ev::ByLong::Fallback {
        discriminator: 10,
        value: ev::Point { x: 1.0, y: 2.0 },
    });
    round_trip(&ev::ByBoolean::Yes("yes".into()));
    round_trip(&ev::ByBoolean::No(0));
    round_trip(&ev::ByChar::LetterA(1));
    round_trip(&ev::ByEnum::Other {
        discriminator: ev::Color::Blue,
        value: "blue".into(),
    });
    round_trip(&ev::Expression::Operands(vec![
        ev::Expression::Literal(1),
        ev::Expression::Operands(vec![ev::Expression::Literal(2)]),
    ]));
    round_trip(&ev::ByWChar::A(1));
    round_trip(&ev::Failure {
        reason: "no".into(),
        code: -1,
    });
    let shape = ev::Shape {
        label: "label".into(),
        outline: vec![ev::Point { x: 0.5, y: 1.5 }],
        corners: [
            [ev::Point { x: 1.0, y: 1.0 }, ev::Point { x: 2.0, y: 2.0 }],
            [ev::Point { x: 3.0, y: 3.0 }, ev::Point { x: 4.0, y: 4.0 }],
        ],
        fill: ev::Color::Red,
        price: Fixed::new(1999, 2).unwrap(),
        shape_kind: ev::shape::Kind::Polygon,
        extra: Any::from(42i32),
    };
    round_trip(&shape);
}

#[test]
fn constants_carry_their_idl_values() {
    assert_eq!(ev::LONG_VALUE, 32);
    assert_eq!(ev::ULONG_MASK, u32::MAX);
    assert_eq!(ev::FROM_CONSTANTS, 80);
    assert_eq!(ev::GREETING, "Hello, world");
    assert_eq!(ev::WCHAR_VALUE, 'é');
    assert_eq!(ev::FAVOURITE, ev::Color::Blue);
    assert_eq!(*ev::PRICE, Fixed::new(1999, 2).unwrap());
    assert_eq!(ev::LONG_DOUBLE_VALUE.to_f64(), 0.25);
    assert_eq!(ev::NOT_SIGNED, -6);
}

#[test]
fn type_codes_describe_the_types_and_anys_carry_them() {
    assert_eq!(Shape::type_code().id().unwrap(), "IDL:Interop/Shape:1.0");
    let any = shape().to_any().unwrap();
    assert_eq!(Shape::from_any(&any), Some(shape()));
    assert_eq!(Point::from_any(&any), None);
    // Recursive TypeCodes encode (through an indirection) and decode.
    let tc = ev::TreeNode::type_code();
    let bytes = encode(&tc, ByteOrder::Little, GiopVersion::V1_2).unwrap();
    let back: armillary::TypeCode = decode(&bytes, ByteOrder::Little, GiopVersion::V1_2).unwrap();
    assert!(back.equal(&tc));
    let tree = ev::TreeNode {
        value: 1,
        children: vec![ev::TreeNode {
            value: 2,
            children: vec![],
        }],
    };
    assert_eq!(ev::TreeNode::from_any(&tree.to_any().unwrap()), Some(tree));
}

#[test]
fn marshalling_rules_are_enforced() {
    let order = ByteOrder::Big;
    let v12 = GiopVersion::V1_2;
    // A union whose discriminator does not select the variant's member.
    let wrong = Value::AsPoint {
        discriminator: 1,
        value: Point { x: 0, y: 0 },
    };
    assert!(matches!(
        encode(&wrong, order, v12),
        Err(CdrError::Invalid { .. })
    ));
    let wrong_default = Value::AsDouble {
        discriminator: 2,
        value: 0.0,
    };
    assert!(encode(&wrong_default, order, v12).is_err());
    // A bounded member over its bound.
    let long_name = ev::Shape {
        label: "x".repeat(40),
        outline: vec![],
        corners: std::array::from_fn(|_| std::array::from_fn(|_| ev::Point { x: 0.0, y: 0.0 })),
        fill: ev::Color::Red,
        price: Fixed::default(),
        shape_kind: ev::shape::Kind::Circle,
        extra: Any::null(),
    };
    assert!(matches!(
        encode(&long_name, order, v12),
        Err(CdrError::BoundExceeded { bound: 32, .. })
    ));
    // An enum value out of range.
    let bytes = encode(&7u32, order, v12).unwrap();
    assert!(matches!(
        decode::<Color>(&bytes, order, v12),
        Err(CdrError::InvalidEnum {
            value: 7,
            count: 3,
            ..
        })
    ));
    // Hostile nesting of a recursive type stops at the depth limit
    // instead of exhausting the stack.
    let mut w = CdrWriter::new(order, v12);
    for _ in 0..100_000 {
        w.write_long(1);
        w.write_ulong(1);
    }
    let bytes = w.into_bytes();
    assert!(matches!(
        decode::<ev::List>(&bytes, order, v12),
        Err(CdrError::TooDeep { .. })
    ));
    // Truncated input.
    let bytes = encode(&shape(), order, v12).unwrap();
    assert!(decode::<Shape>(&bytes[..bytes.len() - 1], order, v12).is_err());
}

proptest! {
    #[test]
    fn shapes_round_trip(name in ".{0,20}", xs in proptest::collection::vec((any::<i32>(), any::<i32>()), 0..20), hue in 0u32..3) {
        let shape = Shape {
            name,
            hue: Color::from_u32(hue).unwrap(),
            points: xs.iter().map(|&(x, y)| Point { x, y }).collect(),
            origin: Point { x: 1, y: 2 },
        };
        round_trip(&shape);
    }

    #[test]
    fn primitives_round_trip(s: i16, l: i32, ll: i64, d: f64, b: bool, o: u8, c in proptest::char::range('\0', '\u{7f}'), wc in proptest::char::range('\0', '\u{d7ff}')) {
        let value = Primitives { s, us: s as u16, l, ul: l as u32, ll, ull: ll as u64, f: d as f32, d, b, c, wc, o };
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let bytes = encode(&value, order, GiopVersion::V1_2).unwrap();
            let back: Primitives = decode(&bytes, order, GiopVersion::V1_2).unwrap();
            // NaN never equals itself: compare the encodings.
            prop_assert_eq!(encode(&back, order, GiopVersion::V1_2).unwrap(), bytes);
        }
    }
}

struct Greeter;

impl PeerServant for Greeter {
    fn hello(&self, text: String) -> Result<String, SystemException> {
        Ok(format!("hello, {text}"))
    }
}

/// A greeter that counts its calls and answers with its own reference's
/// repository id (through the typed `_this()`).
#[derive(Default)]
struct CountingGreeter {
    calls: std::sync::atomic::AtomicU32,
}

impl PeerServant for CountingGreeter {
    fn hello(&self, text: String) -> Result<String, SystemException> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let me: Peer = armillary::poa::PoaCurrent.this()?;
        // Asking for an interface the servant does not implement fails,
        // and converts into a system exception with `?`.
        let wrong = armillary::poa::PoaCurrent
            .this::<Everything>()
            .map_err(SystemException::from);
        assert_eq!(wrong.unwrap_err().kind(), SystemExceptionKind::BadParam);
        Ok(format!("{text} from {}", me.as_object().type_id()))
    }
}

#[test]
fn typed_activation_keeps_a_servant_handle_and_gives_a_typed_reference() {
    use armillary::poa::{PoaCurrent, PoaError};
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();

    let skeleton = PeerSkeleton::new(CountingGreeter::default());
    let handle = skeleton.servant().clone();
    let peer: Peer = skeleton.activate(&poa).unwrap();
    assert_eq!(peer.as_object().type_id(), Peer::REPOSITORY_ID);
    assert_eq!(peer.hello("hi").unwrap(), "hi from IDL:Interop/Peer:1.0");
    assert_eq!(
        peer.hello("again").unwrap(),
        "again from IDL:Interop/Peer:1.0"
    );
    // The handle kept before activation sees the calls.
    assert_eq!(handle.calls.load(std::sync::atomic::Ordering::SeqCst), 2);

    // The same servant under a chosen id, in a USER_ID POA.
    let child = poa
        .create_poa(
            "typed",
            Some(poa.manager()),
            &[armillary::poa::Policy::IdAssignment(
                armillary::poa::IdAssignmentPolicy::UserId,
            )],
        )
        .unwrap();
    let named = PeerSkeleton::from_arc(handle.clone())
        .activate_with_id(&child, b"greeter")
        .unwrap();
    assert_eq!(
        named.hello("named").unwrap(),
        "named from IDL:Interop/Peer:1.0"
    );
    assert_eq!(handle.calls.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(
        child.reference_to_id(named.as_object()).unwrap(),
        b"greeter"
    );
    // A USER_ID POA cannot choose the id itself.
    assert_eq!(
        PeerSkeleton::new(Greeter).activate(&child).unwrap_err(),
        PoaError::WrongPolicy
    );
    // Activating the same id twice fails with a typed error.
    assert_eq!(
        PeerSkeleton::new(Greeter)
            .activate_with_id(&child, b"greeter")
            .unwrap_err(),
        PoaError::ObjectAlreadyActive
    );
    // Outside an upcall there is no current object.
    assert_eq!(PoaCurrent.this::<Peer>().unwrap_err(), PoaError::NoContext);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn every_idl_type_goes_into_an_any() {
    use armillary::giop::typecode::TCKind;
    use armillary_codegen_tests::interop::interop as io;

    // Typedefs, under their own TypeCodes.
    let longs: io::LongSeq = vec![1, -2, 3];
    let any = io::long_seq_to_any(&longs).unwrap();
    assert_eq!(any.type_code.kind(), TCKind::Alias);
    assert_eq!(any.type_code.name().unwrap(), "LongSeq");
    assert_eq!(io::long_seq_from_any(&any), Some(longs.clone()));
    let matrix: io::Matrix = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]];
    assert_eq!(
        io::matrix_from_any(&io::matrix_to_any(&matrix).unwrap()),
        Some(matrix)
    );
    let money = Fixed::new(-1234567, 2).unwrap();
    assert_eq!(
        io::money_from_any(&io::money_to_any(&money).unwrap()),
        Some(money)
    );
    // Bounds are checked on the way in.
    assert!(io::bounded_long_seq_to_any(&vec![1, 2, 3, 4, 5]).is_err());
    assert!(io::short_string_to_any(&"x".repeat(17)).is_err());
    // A typedef's any is not another type's.
    assert_eq!(io::string_seq_from_any(&any), None);

    // Anonymous types through IdlType, by their Rust types.
    assert_eq!(Vec::<i32>::from_any(&longs.to_any().unwrap()), Some(longs));
    assert_eq!(
        <[[i32; 4]; 3]>::from_any(&matrix.to_any().unwrap()),
        Some(matrix)
    );
    assert_eq!(
        String::from_any(&"text".to_owned().to_any().unwrap()).as_deref(),
        Some("text")
    );
    assert_eq!(u64::from_any(&u64::MAX.to_any().unwrap()), Some(u64::MAX));
    // wstring and any in any.
    assert_eq!(Any::wstring("wide").to_wstring().as_deref(), Some("wide"));
    let nested = 7i32.to_any().unwrap().to_any().unwrap();
    assert_eq!(nested.type_code.kind(), TCKind::Any);
    assert_eq!(
        Any::from_any(&nested).and_then(|a| i32::from_any(&a)),
        Some(7)
    );
}

#[test]
fn references_taken_out_of_anys_belong_to_the_orb_that_received_them() {
    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let served: Everything = EverythingSkeleton::new(EverythingImpl::default())
        .activate(&poa)
        .unwrap();
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let e = Everything::from_object(client.ior_to_object(served.as_object().ior().clone()));
    // The newest running ORB: references with no receiving ORB bind to it.
    let other = Orb::with_config(OrbConfig::default()).unwrap();

    let sent = e.as_object().to_any().unwrap();
    let received = e.echo_any(&sent).unwrap();
    assert!(received.origin().is_some());
    // Taken out after the call, outside any decoding: bound to `client`.
    let object = ObjectRef::from_any(&received).expect("an object reference");
    let object = Everything::from_object(object);
    assert_eq!(object.echo_long(5).unwrap(), 5);
    // Once `client` is shut down it fails, though `other` still runs.
    client.shutdown(WaitForCompletion::Yes).unwrap();
    let error = object.echo_long(5).unwrap_err();
    assert_eq!(error.minor(), armillary::minor::ORB_SHUT_DOWN, "{error:?}");
    // The control: the same reference from an any made here, with no
    // receiving ORB, binds to the newest running ORB (`other`).
    let local = ObjectRef::from_any(&sent).unwrap();
    assert_eq!(Everything::from_object(local).echo_long(5).unwrap(), 5);

    other.shutdown(WaitForCompletion::Yes).unwrap();
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn stubs_call_skeletons_through_an_orb() {
    // Two server threads: `call_peer` calls back into this same ORB while
    // its request is being served, and a thread blocked waiting for a reply
    // serves nothing meanwhile (wait-on-read).
    let config = OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(2));
    let orb = Orb::with_config(config).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant = EverythingSkeleton::new(EverythingImpl::default()).into_servant();
    let object = poa.servant_to_reference(&servant).unwrap();
    // Through a stringified reference, as a remote client would.
    let object = orb
        .string_to_object(&orb.object_to_string(&object))
        .unwrap();
    let e = Everything::narrow(&object).unwrap().expect("an Everything");
    assert!(stock::Quoter::narrow(&object).unwrap().is_none());
    assert!(Base::narrow(&object).unwrap().is_some());

    assert_eq!(e.echo_long(-42).unwrap(), -42);
    assert_eq!(e.echo_ulonglong(u64::MAX).unwrap(), u64::MAX);
    assert_eq!(e.echo_wchar('Ж').unwrap(), 'Ж');
    assert_eq!(e.echo_char('e').unwrap(), 'e');
    assert_eq!(e.echo_primitives(&primitives()).unwrap(), primitives());
    let money = Fixed::new(12345, 2).unwrap();
    assert_eq!(e.echo_money(money).unwrap(), money);
    assert_eq!(e.echo_wstring("wide ✓").unwrap(), "wide ✓");
    assert_eq!(e.echo_short_string("short").unwrap(), "short");
    assert_eq!(e.echo_longs(&[1, 2, 3]).unwrap(), vec![1, 2, 3]);
    assert_eq!(
        e.echo_strings(&["a".into(), "b".into()]).unwrap(),
        vec!["a", "b"]
    );
    assert_eq!(e.echo_octets(&[0; 1000]).unwrap(), vec![0; 1000]);
    assert_eq!(e.echo_bounded(&[1, 2, 3, 4]).unwrap(), vec![1, 2, 3, 4]);
    let matrix = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]];
    assert_eq!(e.echo_matrix(&matrix).unwrap(), matrix);
    assert_eq!(e.echo_shape(&shape()).unwrap(), shape());
    assert_eq!(e.echo_color(Color::Blue).unwrap(), Color::Blue);
    let value = Value::AsPoint {
        discriminator: 3,
        value: Point { x: 1, y: 1 },
    };
    assert_eq!(e.echo_value(&value).unwrap(), value);
    assert_eq!(
        e.echo_choice(&Choice::Unselected(Color::Blue)).unwrap(),
        Choice::Unselected(Color::Blue)
    );
    assert_eq!(e.echo_flag(&Flag::No('x')).unwrap(), Flag::No('x'));
    let any = shape().to_any().unwrap();
    assert_eq!(Shape::from_any(&e.echo_any(&any).unwrap()), Some(shape()));

    // in, inout and out parameters.
    let mut b = 5;
    assert_eq!(e.split(7, &mut b).unwrap(), (12, 2));
    assert_eq!(b, 10);
    let (out, name) = e.out_shape().unwrap();
    assert_eq!((out.name.as_str(), name.as_str()), ("triangle", "out"));

    // Typed user exceptions and system exceptions.
    match e.fail(3) {
        Err(FailError::Failure(failure)) => {
            assert_eq!(failure.code, 3);
            assert_eq!(failure.details, vec!["first", "second"]);
        }
        other => panic!("expected Failure, got {other:?}"),
    }
    assert!(matches!(e.fail(0), Err(FailError::Empty(_))));
    let system = e.fail_system(5).unwrap_err();
    assert_eq!(system.kind(), SystemExceptionKind::NoPermission);
    assert_eq!(system.minor(), 5);

    // Object references as results and parameters, a callback.
    let me = e.get_self().unwrap();
    assert_eq!(me.echo_long(9).unwrap(), 9);
    assert_eq!(e.get_base().unwrap().base_op().unwrap(), "base");
    let greeter = poa
        .servant_to_reference(&PeerSkeleton::new(Greeter).into_servant())
        .unwrap();
    assert_eq!(
        e.call_peer(&Peer::from_object(greeter), "you").unwrap(),
        "hello, you"
    );
    assert!(e.same_object(me.as_object(), e.as_object()).unwrap());

    // Inherited operations and attributes.
    assert_eq!(e.base_op().unwrap(), "base");
    assert_eq!(e.base_name().unwrap(), "Armillary base");
    e.set_counter(41).unwrap();
    assert_eq!(e.counter().unwrap(), 41);
    assert_eq!(e.name().unwrap(), "Armillary everything");
    let base: Base = e.clone().into();
    assert_eq!(base.base_name().unwrap(), "Armillary base");

    // Oneways arrive (the count is asked on the same connection, after).
    e.ping(1).unwrap();
    e.ping(2).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while e.oneway_count().unwrap() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(e.oneway_count().unwrap(), 2);

    // A bounded sequence over its bound fails on the client, before sending.
    let err = e.echo_bounded(&[1, 2, 3, 4, 5]).unwrap_err();
    assert_eq!(err.kind(), SystemExceptionKind::BadParam);
    assert_eq!(err.completed(), CompletionStatus::No);
    // An operation the skeleton does not have is BAD_OPERATION.
    let unknown: Result<(), SystemException> =
        object.invoke("no_such_op", &|_| Ok(()), |reply| match reply {
            ReplyBody::Result(_) => Ok(Ok(())),
            ReplyBody::UserException { .. } => Ok(Ok(())),
        });
    assert_eq!(
        unknown.unwrap_err().kind(),
        SystemExceptionKind::BadOperation
    );
    // So is one whose name is as long as an operation's (`echo_long`),
    // or differs from it only in case: the skeleton compares the name,
    // not only its length.
    for name in ["echo_lonh", "ECHO_LONG"] {
        let unknown: Result<(), SystemException> =
            object.invoke(name, &|_| Ok(()), |reply| match reply {
                ReplyBody::Result(_) => Ok(Ok(())),
                ReplyBody::UserException { .. } => Ok(Ok(())),
            });
        assert_eq!(
            unknown.unwrap_err().kind(),
            SystemExceptionKind::BadOperation,
            "{name}"
        );
    }
    // A nil reference as a typed stub.
    let nil = Everything::from_object(ObjectRef::nil());
    assert!(nil.is_nil());
    assert_eq!(
        nil.echo_long(1).unwrap_err().kind(),
        SystemExceptionKind::InvObjref
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn generated_code_is_rustfmt_clean() {
    let out_dir = std::path::Path::new(env!("OUT_DIR"));
    let Ok(status) = std::process::Command::new("rustfmt")
        .args(["--edition", "2021", "--check"])
        .arg(out_dir.join("quoter.rs"))
        .arg(out_dir.join("interop.rs"))
        .arg(out_dir.join("everything.rs"))
        .status()
    else {
        println!("SKIPPED: rustfmt is not installed");
        return;
    };
    assert!(status.success(), "rustfmt --check found differences");
}

/// A generated error enum is a `std::error::Error` whose source is the
/// exception it carries, user or system, and `?` reaches it from the
/// ORB's and the POA's errors.
#[test]
fn generated_errors_expose_their_exception_as_source() {
    use armillary::poa::PoaError;
    use armillary::{minor, OrbError};
    use std::error::Error;

    let failure = Failure {
        code: 3,
        reason: "why".into(),
        details: vec![],
    };
    let e = FailError::from(failure.clone());
    let source = e.source().expect("the user exception is the source");
    assert_eq!(source.downcast_ref::<Failure>(), Some(&failure));

    let system = SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No);
    let e = FailError::from(system.clone());
    let source = e.source().expect("the system exception is the source");
    assert_eq!(source.downcast_ref::<SystemException>(), Some(&system));

    let e = FailError::from(PoaError::AdapterInactive);
    let source = e.source().and_then(|s| s.downcast_ref::<SystemException>());
    assert_eq!(source.map(|s| s.minor()), Some(minor::ADAPTER_INACTIVE));
    let e = FailError::from(OrbError::Destroyed);
    let source = e.source().and_then(|s| s.downcast_ref::<SystemException>());
    assert_eq!(source.map(|s| s.minor()), Some(minor::ORB_SHUT_DOWN));
}
