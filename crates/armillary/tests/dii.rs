//! The Dynamic Invocation Interface against omniORB's `interop_server`
//! (built from `tests/interop/cpp`), in GIOP 1.0, 1.1 and 1.2: requests
//! built at run time from `any`s and TypeCodes — invoke, oneway, deferred,
//! several at once — with results, inout/out values and user exceptions
//! read by TypeCode; and timeouts against servers that do not answer (a
//! socket that never replies, and omniORB's server stuck calling back a
//! peer that is held).
//!
//! The omniORB part needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip it.

use std::collections::BTreeSet;
use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use armillary::config::OrbConfig;
use armillary::dii::{ArgMode, NvList};
use armillary::giop::any::DynValue;
use armillary::giop::typecode::TypeCode;
use armillary::Any;
use armillary::{
    minor, CompletionStatus, ObjectRef, Orb, RequestError, SystemExceptionKind, WaitForCompletion,
};
use armillary_giop::GiopVersion;
use armillary_testkit::{build_peers, omniorb_available, start_interop_server, wait_until};

mod interop_types;
use interop_types::{echo_type, empty, everything, failure, shape, string_seq};

fn echo_long(obj: &ObjectRef, v: i32) -> armillary::Request {
    obj.request("echo_long")
        .with_in(Any::from(v))
        .returns(TypeCode::long())
}

fn long_result(request: &armillary::Request) -> Option<i32> {
    request.return_value().and_then(|v| v.get::<i32>())
}

fn run_session(version: GiopVersion, ior: &str) {
    let orb =
        Orb::with_config(OrbConfig::new().max_giop_version(version.try_into().unwrap())).unwrap();
    let obj = orb.string_to_object(ior).unwrap();

    // invoke: values of several kinds, each read back by its TypeCode.
    let mut request = echo_long(&obj, -42);
    request.invoke().unwrap();
    assert_eq!(long_result(&request), Some(-42));
    let point = |x, y| DynValue::Struct(vec![DynValue::Long(x), DynValue::Long(y)]);
    let a_shape = Any::new(
        shape(),
        DynValue::Struct(vec![
            DynValue::String("square".into()),
            DynValue::Enum(1),
            DynValue::Sequence(vec![point(0, 0), point(0, 1), point(1, 1)]),
            point(5, -5),
        ]),
    )
    .unwrap();
    let nested = Any::nested(Any::from("inside"));
    for (op, value) in [
        ("echo_string", Any::from("dynamic ünïcödé")),
        ("echo_shape", a_shape),
        ("echo_any", nested),
    ] {
        let mut request = obj
            .request(op)
            .with_in(value.clone())
            .returns(echo_type(op).unwrap());
        request.invoke().unwrap();
        assert_eq!(request.return_value(), Some(&value), "{op}");
        // The request is spent: sending it again is out of order.
        let again = request.invoke().unwrap_err();
        let again = again.system_exception().unwrap();
        assert_eq!(
            (again.kind(), again.minor()),
            (
                SystemExceptionKind::BadInvOrder,
                minor::REQUEST_ALREADY_SENT
            )
        );
    }

    // inout and out parameters: split(7, 5) = 12, b = 10, c = 2.
    let mut split = obj
        .request("split")
        .with_arguments(
            NvList::new()
                .with_in(Any::from(7))
                .with_inout(Any::from(5))
                .with_out(TypeCode::long()),
        )
        .returns(TypeCode::long());
    split.invoke().unwrap();
    assert_eq!(long_result(&split), Some(12));
    let values: Vec<Option<i32>> = split
        .arguments()
        .iter()
        .map(|a| a.value().and_then(|v| v.get::<i32>()))
        .collect();
    assert_eq!(values, [Some(7), Some(10), Some(2)]);
    assert_eq!(split.arguments().get(2).unwrap().mode(), ArgMode::Out);
    let mut out_shape = obj
        .request("out_shape")
        .with_out(shape())
        .with_out(TypeCode::string(0));
    out_shape.invoke().unwrap();
    assert_eq!(
        out_shape.return_value().map(|v| v.type_code.kind()),
        Some(armillary::giop::typecode::TCKind::Void)
    );
    let name = out_shape
        .arguments()
        .value(1)
        .and_then(|v| v.get::<String>());
    assert_eq!(name.as_deref(), Some("out"));
    match &out_shape.arguments().value(0).unwrap().value {
        DynValue::Struct(members) => assert_eq!(members[0], DynValue::String("triangle".into())),
        other => panic!("not a struct: {other:?}"),
    }

    // A user exception, decoded by the TypeCode the request declared.
    let fail = |code: i32| {
        obj.request("fail")
            .with_in(Any::from(code))
            .raises(failure())
            .raises(empty())
    };
    let error = fail(3).invoke().unwrap_err();
    let exception = error.user_exception().expect("a user exception");
    assert_eq!(exception.type_code.id(), Ok("IDL:Interop/Failure:1.0"));
    let details = Any::new(
        string_seq(),
        DynValue::Sequence(vec![
            DynValue::String("first".into()),
            DynValue::String("second".into()),
        ]),
    )
    .unwrap();
    assert_eq!(
        exception.value,
        DynValue::Struct(vec![
            DynValue::Long(3),
            DynValue::String("failed on purpose".into()),
            details.value,
        ])
    );
    let error = fail(0).invoke().unwrap_err();
    assert_eq!(
        error.user_exception().map(|e| e.type_code.id()),
        Some(Ok("IDL:Interop/Empty:1.0"))
    );
    // Undeclared: UNKNOWN, as a stub that does not know it.
    let mut undeclared = obj.request("fail").with_in(Any::from(1));
    match undeclared.invoke() {
        Err(RequestError::System(e)) => assert_eq!(
            (e.kind(), e.minor(), e.completed()),
            (
                SystemExceptionKind::Unknown,
                minor::UNLISTED_USER_EXCEPTION,
                CompletionStatus::Yes
            )
        ),
        other => panic!("{other:?}"),
    }
    // A system exception raised by the server.
    let mut system = obj.request("fail_system").with_in(Any::from(7));
    let e = system.invoke().unwrap_err();
    let e = e.system_exception().unwrap();
    assert_eq!(
        (e.kind(), e.minor()),
        (SystemExceptionKind::NoPermission, 7)
    );

    // An object reference in the result: it belongs to this ORB.
    let mut get_self = obj.request("get_self").returns(everything());
    get_self.invoke().unwrap();
    let me: ObjectRef = get_self
        .return_value()
        .and_then(|v| v.to_cdr_value(&everything()))
        .unwrap();
    let mut again = echo_long(&me, 99);
    again.invoke().unwrap();
    assert_eq!(long_result(&again), Some(99));

    // Oneways, then a two-way call sees them.
    let count = || {
        let mut count = obj.request("oneway_count").returns(TypeCode::long());
        count.invoke().unwrap();
        long_result(&count).unwrap()
    };
    let before = count();
    for n in 0..3 {
        obj.request("ping")
            .with_in(Any::from(n))
            .send_oneway()
            .unwrap();
    }
    // omniORB may run the oneways on other threads than the count.
    wait_until("the oneways", || count() >= before + 3);
    assert_eq!(count(), before + 3);

    // Deferred: sent now, collected later, polled or waited for.
    let mut first = echo_long(&obj, 1);
    let mut second = echo_long(&obj, 2);
    let e = first.poll_response().unwrap_err();
    assert_eq!(e.minor(), minor::REQUEST_NOT_SENT);
    first.send_deferred().unwrap();
    second.send_deferred().unwrap();
    second.get_response().unwrap();
    assert_eq!(long_result(&second), Some(2));
    wait_until("the first deferred reply", || {
        first.poll_response().unwrap()
    });
    first.get_response().unwrap();
    assert_eq!(long_result(&first), Some(1));
    // A deferred user exception.
    let mut failing = fail(9);
    failing.send_deferred().unwrap();
    let error = failing.get_response().unwrap_err();
    assert_eq!(
        error.user_exception().map(|e| e.type_code.id()),
        Some(Ok("IDL:Interop/Failure:1.0"))
    );
    // Asked again, the outcome is the same.
    assert_eq!(failing.get_response().unwrap_err(), error);

    // Several at once: each comes back once, with its own result.
    let sent: BTreeSet<i32> = (100..120).collect();
    orb.send_multiple_requests(sent.iter().map(|&v| echo_long(&obj, v)))
        .unwrap();
    let mut received = BTreeSet::new();
    for _ in 0..sent.len() {
        let mut done = orb.get_next_response().unwrap();
        done.get_response().unwrap();
        let sent_value = done.arguments().value(0).and_then(|v| v.get::<i32>());
        assert_eq!(long_result(&done), sent_value);
        received.insert(long_result(&done).unwrap());
    }
    assert_eq!(received, sent);
    assert!(!orb.poll_next_response());
    let e = orb.get_next_response().unwrap_err();
    assert_eq!(
        (e.kind(), e.minor()),
        (SystemExceptionKind::BadInvOrder, minor::REQUEST_NOT_SENT)
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn dii_against_omniorb_server_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "dii", &[]);
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        run_session(version, &ior);
    }
}

/// A server that accepts connections and reads whatever comes, but never
/// answers; it stops when the returned listener's port is dropped with
/// the test process.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    port
}

fn assert_timeout(outcome: Result<(), RequestError>) {
    let error = outcome.unwrap_err();
    let e = error.system_exception().expect("a system exception");
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (
            SystemExceptionKind::Timeout,
            minor::CALL_TIMEOUT,
            CompletionStatus::Maybe
        ),
        "{e:?}"
    );
}

#[test]
fn requests_to_a_server_that_never_answers_time_out() {
    let port = silent_server();
    let orb = Orb::with_config(OrbConfig::new().call_timeout(Duration::from_millis(200))).unwrap();
    let obj = orb
        .string_to_object(&format!("corbaloc::1.2@127.0.0.1:{port}/silent"))
        .unwrap();
    // Synchronous.
    assert_timeout(echo_long(&obj, 1).invoke());
    // Deferred, waited for.
    let mut waited = echo_long(&obj, 2);
    waited.send_deferred().unwrap();
    assert_timeout(waited.get_response());
    // Deferred, polled: the poll itself ends it at its deadline.
    let mut polled = echo_long(&obj, 3);
    polled.send_deferred().unwrap();
    wait_until("the deferred request's deadline", || {
        polled.poll_response().unwrap()
    });
    assert_timeout(polled.get_response());
    // Several at once: every one comes back timed out.
    orb.send_multiple_requests((0..4).map(|v| echo_long(&obj, v)))
        .unwrap();
    for _ in 0..4 {
        assert_timeout(orb.get_next_response().unwrap().get_response());
    }
    // A oneway needs no answer.
    obj.request("ping")
        .with_in(Any::from(1))
        .send_oneway()
        .unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn deferred_requests_left_behind_are_released_at_shutdown() {
    let port = silent_server();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let obj = orb
        .string_to_object(&format!("corbaloc::1.2@127.0.0.1:{port}/silent"))
        .unwrap();
    orb.send_multiple_requests((0..3).map(|v| echo_long(&obj, v)))
        .unwrap();
    assert!(!orb.poll_next_response());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    // The ORB forgot them: nothing is outstanding any more.
    let e = orb.get_next_response().unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
    // A request sent after shutdown fails at once.
    let e = echo_long(&obj, 4).send_deferred().unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
}

/// `Interop::Peer`, served dynamically, whose `hello` waits until the gate
/// opens (or 10 s pass: a bound that only guards a hang).
struct GatedPeer {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl armillary::dsi::DynamicServant for GatedPeer {
    fn primary_interface(&self) -> &'static str {
        "IDL:Interop/Peer:1.0"
    }

    fn invoke(
        &self,
        req: &mut armillary::dsi::DynamicRequest<'_, '_>,
    ) -> Result<(), armillary::SystemException> {
        let args = req.arguments(NvList::new().with_param(ArgMode::In, TypeCode::string(0)))?;
        let text = args.value(0).cloned().unwrap_or_else(Any::null);
        let open = self.open.lock().unwrap();
        let _open = self
            .opened
            .wait_timeout_while(open, Duration::from_secs(10), |open| !*open)
            .unwrap();
        req.set_result(text)
    }
}

/// omniORB's server made to hang: its `call_peer` calls back a peer that
/// does not answer until the test lets it. A deferred request times out
/// with the client's call timeout, and its reply, arriving late, is
/// dropped; calls go on.
#[test]
fn a_deferred_request_to_an_omniorb_server_that_does_not_answer_times_out() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "dii-timeout", &[]);
    let peer_orb = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = peer_orb.root_poa();
    poa.manager().activate().unwrap();
    let gated = std::sync::Arc::new(GatedPeer {
        open: std::sync::Mutex::new(false),
        opened: std::sync::Condvar::new(),
    });
    let servant: std::sync::Arc<dyn armillary::Servant> = gated.clone();
    let peer = poa.servant_to_reference(&servant).unwrap();
    let client =
        Orb::with_config(OrbConfig::new().call_timeout(Duration::from_millis(300))).unwrap();
    let obj = client.string_to_object(&ior).unwrap();
    let peer_any = Any::new(interop_types::peer(), DynValue::ObjRef(peer.ior().clone())).unwrap();
    let mut hanging = obj
        .request("call_peer")
        .with_in(peer_any)
        .with_in(Any::from("anyone there?"))
        .returns(TypeCode::string(0));
    hanging.send_deferred().unwrap();
    assert_timeout(hanging.get_response());
    // Let omniORB's call finish: its reply to the timed-out request comes
    // late and is dropped.
    *gated.open.lock().unwrap() = true;
    gated.opened.notify_all();
    let mut next = echo_long(&obj, 5);
    next.invoke().unwrap();
    assert_eq!(long_result(&next), Some(5));
    // The peer answers now: the same request completes in time.
    let mut answered = obj
        .request("call_peer")
        .with_in(Any::new(interop_types::peer(), DynValue::ObjRef(peer.ior().clone())).unwrap())
        .with_in(Any::from("hello"))
        .returns(TypeCode::string(0));
    answered.invoke().unwrap();
    assert_eq!(
        answered
            .return_value()
            .and_then(|v| v.get::<String>())
            .as_deref(),
        Some("hello")
    );
    client.shutdown(WaitForCompletion::Yes).unwrap();
    peer_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// An Armillary ORB serving a [`GatedPeer`], open or not, and a reference
/// to it in `client`.
fn gated_server(client: &Orb, open: bool) -> (Orb, std::sync::Arc<GatedPeer>, ObjectRef) {
    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let gated = std::sync::Arc::new(GatedPeer {
        open: std::sync::Mutex::new(open),
        opened: std::sync::Condvar::new(),
    });
    let servant: std::sync::Arc<dyn armillary::Servant> = gated.clone();
    let reference = poa.servant_to_reference(&servant).unwrap();
    let obj = client
        .string_to_object(&server.object_to_string(&reference))
        .unwrap();
    (server, gated, obj)
}

fn hello(obj: &ObjectRef, text: &str) -> armillary::Request {
    obj.request("hello")
        .with_in(Any::from(text))
        .returns(TypeCode::string(0))
}

/// Requests held by the ORB on two connections (two servers): the one
/// answered comes back first while the other's server still holds its
/// request, then the other, once answered. Each response wakes the
/// waiting thread, whichever connection it came on.
#[test]
fn get_next_response_hands_back_whichever_connection_answered() {
    let client = Orb::with_config(OrbConfig::new().call_timeout(Duration::from_secs(30))).unwrap();
    let (held_server, held, held_obj) = gated_server(&client, false);
    let (open_server, _open, open_obj) = gated_server(&client, true);
    client
        .send_multiple_requests([hello(&held_obj, "held"), hello(&open_obj, "open")])
        .unwrap();
    let text = |request: &armillary::Request| {
        request
            .return_value()
            .and_then(|v| v.get::<String>())
            .unwrap_or_default()
    };
    let mut first = client.get_next_response().unwrap();
    first.get_response().unwrap();
    assert_eq!(text(&first), "open");
    *held.open.lock().unwrap() = true;
    held.opened.notify_all();
    let mut second = client.get_next_response().unwrap();
    second.get_response().unwrap();
    assert_eq!(text(&second), "held");
    let e = client.get_next_response().unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
    client.shutdown(WaitForCompletion::Yes).unwrap();
    held_server.shutdown(WaitForCompletion::Yes).unwrap();
    open_server.shutdown(WaitForCompletion::Yes).unwrap();
}
