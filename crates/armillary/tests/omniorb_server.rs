//! An Armillary client against omniORB's `interop_server` (built from
//! `tests/interop/cpp`), in GIOP 1.0, 1.1 and 1.2: hand-written calls
//! through `ObjectRef::invoke`, checking values, user and system
//! exceptions, object references in replies, oneways and inout/out
//! parameters.
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip.

use armillary::config::OrbConfig;
use armillary::giop::system_exception::{CompletionStatus, SystemException, SystemExceptionKind};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_giop::{CdrEncode, GiopVersion};
use armillary_testkit::{build_peers, omniorb_available, start_interop_server};

type Result<T> = std::result::Result<T, SystemException>;

fn echo_long(obj: &ObjectRef, v: i32) -> Result<i32> {
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

fn echo_string(obj: &ObjectRef, op: &str, v: &str) -> Result<String> {
    let wide = op == "echo_wstring";
    obj.invoke(
        op,
        &|w| {
            if wide {
                w.write_wstring(v)
            } else {
                w.write_string(v)
            }
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(if wide {
                r.read_wstring()?
            } else {
                r.read_string()?
            })),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    )
}

/// What `fail` raises, typed the way generated stubs type it.
#[derive(Debug, PartialEq)]
enum FailError {
    Failure {
        code: i32,
        reason: String,
        details: Vec<String>,
    },
    Empty,
    System(SystemException),
}

impl From<SystemException> for FailError {
    fn from(e: SystemException) -> Self {
        FailError::System(e)
    }
}

fn fail(obj: &ObjectRef, code: i32) -> std::result::Result<(), FailError> {
    obj.invoke(
        "fail",
        &|w| {
            w.write_long(code);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(_) => Ok(Ok(())),
            ReplyBody::UserException { id, members } => Ok(Err(match id.as_str() {
                "IDL:Interop/Failure:1.0" => FailError::Failure {
                    code: members.read_long()?,
                    reason: members.read_string()?,
                    details: members.read()?,
                },
                "IDL:Interop/Empty:1.0" => FailError::Empty,
                _ => FailError::System(SystemException::unknown(1, CompletionStatus::Yes)),
            })),
        },
    )
}

fn run_session(version: GiopVersion, ior: &str) {
    let config = OrbConfig::new().max_giop_version(version.try_into().unwrap());
    let orb = Orb::with_config(config).unwrap();
    let obj = orb.string_to_object(ior).unwrap();
    assert!(obj.is_a("IDL:Interop/Everything:1.0").unwrap());
    assert!(
        obj.is_a("IDL:Interop/Base:1.0").unwrap(),
        "inherited interface, asked remotely"
    );
    assert!(!obj.is_a("IDL:Interop/Peer:1.0").unwrap());
    assert!(!obj.non_existent().unwrap());
    for v in [0, -1, i32::MIN, i32::MAX, 42] {
        assert_eq!(echo_long(&obj, v).unwrap(), v);
    }
    for s in ["", "hello, GIOP", "ünïcödé"] {
        assert_eq!(echo_string(&obj, "echo_string", s).unwrap(), s);
    }
    if version == GiopVersion::V1_2 {
        assert_eq!(
            echo_string(&obj, "echo_wstring", "wide ☺").unwrap(),
            "wide ☺"
        );
    }
    // Large replies: omniORB fragments them in GIOP 1.1 and 1.2.
    let big: Vec<u8> = (0..1u32 << 20).map(|i| (i * 31 + 7) as u8).collect();
    let back: Vec<u8> = obj
        .invoke::<_, SystemException>("echo_octets", &|w| w.write_octet_seq(&big), |reply| {
            match reply {
                ReplyBody::Result(r) => Ok(Ok(r.read_octet_seq()?.to_vec())),
                ReplyBody::UserException { .. } => {
                    Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
                }
            }
        })
        .unwrap();
    assert!(back == big, "1 MiB echo in GIOP {version}");
    let longs: Vec<i32> = (0..100_000).map(|i| i * 7919 - 500_000).collect();
    let back: Vec<i32> = obj
        .invoke::<_, SystemException>("echo_longs", &|w| longs.encode(w), |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        })
        .unwrap();
    assert!(back == longs, "100000 longs in GIOP {version}");
    // User exceptions with members, and an empty one.
    assert_eq!(
        fail(&obj, 7),
        Err(FailError::Failure {
            code: 7,
            reason: "failed on purpose".into(),
            details: vec!["first".into(), "second".into()]
        })
    );
    assert_eq!(fail(&obj, 0), Err(FailError::Empty));
    // A system exception raised by the servant.
    let e = obj
        .invoke::<(), SystemException>(
            "fail_system",
            &|w| {
                w.write_long(5);
                Ok(())
            },
            |_| Ok(Ok(())),
        )
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (SystemExceptionKind::NoPermission, 5, CompletionStatus::Yes)
    );
    // An unknown operation.
    let e = obj
        .invoke::<(), SystemException>("no_such_op", &|_| Ok(()), |_| Ok(Ok(())))
        .unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadOperation);
    // inout and out parameters.
    let (r, b, c) = obj
        .invoke::<_, SystemException>(
            "split",
            &|w| {
                w.write_long(10);
                w.write_long(5);
                Ok(())
            },
            |reply| match reply {
                ReplyBody::Result(r) => Ok(Ok((r.read_long()?, r.read_long()?, r.read_long()?))),
                ReplyBody::UserException { .. } => {
                    Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
                }
            },
        )
        .unwrap();
    assert_eq!((r, b, c), (15, 10, 5));
    // An object reference in a reply, then a call on it.
    let me: ObjectRef = obj
        .invoke::<_, SystemException>("get_self", &|_| Ok(()), |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        })
        .unwrap();
    assert_eq!(me.type_id(), "IDL:Interop/Everything:1.0");
    assert_eq!(echo_long(&me, 99).unwrap(), 99);
    // Oneways, then two-way calls see them.
    let count = |o: &ObjectRef| {
        o.invoke::<i32, SystemException>("oneway_count", &|_| Ok(()), |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        })
        .unwrap()
    };
    let before = count(&obj);
    for n in 0..3 {
        obj.invoke_oneway("ping", &|w| {
            w.write_long(n);
            Ok(())
        })
        .unwrap();
    }
    // omniORB may run the oneways on other threads than the count: wait
    // for them, up to a bound that only guards a hang.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while count(&obj) < before + 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(count(&obj), before + 3);
    // Attributes.
    obj.invoke::<(), SystemException>(
        "_set_counter",
        &|w| {
            w.write_long(41);
            Ok(())
        },
        |_| Ok(Ok(())),
    )
    .unwrap();
    let counter = obj
        .invoke::<i32, SystemException>("_get_counter", &|_| Ok(()), |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        })
        .unwrap();
    assert_eq!(counter, 41);
    // A key the server does not know.
    let bogus = orb
        .string_to_object(&format!(
            "corbaloc:iiop:{version}@{}:{}/NoSuchObject",
            me.ior().iiop_profiles()[0].host,
            me.ior().iiop_profiles()[0].port
        ))
        .unwrap();
    let e = echo_long(&bogus, 1).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);
    // omniORB answers `_non_existent` for it with OBJECT_NOT_EXIST, which
    // means true (as omniORB's own client has it).
    assert_eq!(bogus.non_existent(), Ok(true));
    // LocateRequest, answered by omniORB.
    assert_eq!(obj.locate().unwrap(), armillary::Location::Here);
    assert_eq!(bogus.locate().unwrap(), armillary::Location::Unknown);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn armillary_client_against_omniorb_server_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "client-test", &[]);
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        run_session(version, &ior);
    }
}

#[test]
fn a_vanished_server_is_a_clean_exception() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (server, ior) = start_interop_server(&peers, "vanish", &[]);
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let obj = orb.string_to_object(&ior).unwrap();
    assert_eq!(echo_long(&obj, 1).unwrap(), 1);
    drop(server);
    let e = echo_long(&obj, 2).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            SystemExceptionKind::Transient | SystemExceptionKind::CommFailure
        ),
        "{e}"
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
