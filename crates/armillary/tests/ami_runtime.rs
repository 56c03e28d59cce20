//! The AMI runtime (`armillary::ami`) through hand-written stubs that call
//! the hooks generated code calls (`send_poller`, `send_future`,
//! `send_callback`): against omniORB's `interop_server` in every GIOP
//! version, and against a raw server that answers only when told to (call
//! timeouts, late replies, many outstanding requests in any order).
//!
//! No outcome depends on timing: a request expected to time out is one the
//! server never answers; waits for other threads are bounded generously and
//! only turn a hang into a failure.

use std::future::Future;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use armillary::ami::ExceptionHolder;
use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::giop::{Message, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus};
use armillary::giop::{ByteOrder, GiopVersion};
use armillary::runtime::{CdrError, CdrReader, ReplyBody, UserExceptionSet};
use armillary::{
    minor, CompletionStatus, ObjectRef, Orb, SystemException, SystemExceptionKind,
    WaitForCompletion,
};
use armillary_testkit::raw::{HeldServer, Received};
use armillary_testkit::{build_peers, omniorb_available, start_interop_server};

mod interop_types;
use interop_types::{empty, failure};

/// How long a test waits for something that must happen.
const BOUND: Duration = Duration::from_secs(60);

/// What `Interop::Everything::fail` raises, typed as generated code types it.
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

impl UserExceptionSet for FailError {
    fn decode_user_exception(
        id: &str,
        members: &mut CdrReader<'_>,
    ) -> Result<Option<Self>, CdrError> {
        Ok(match id {
            "IDL:Interop/Failure:1.0" => Some(FailError::Failure {
                code: members.read_long()?,
                reason: members.read_string()?,
                details: members.read()?,
            }),
            "IDL:Interop/Empty:1.0" => Some(FailError::Empty),
            _ => None,
        })
    }
}

/// The stub's reply decoder for `fail`.
fn fail_result(reply: ReplyBody<'_, '_>) -> Result<Result<(), FailError>, CdrError> {
    match reply {
        ReplyBody::Result(_) => Ok(Ok(())),
        ReplyBody::UserException { id, members } => {
            Ok(Err(FailError::decode_user_exception(&id, members)?
                .unwrap_or_else(|| {
                    FailError::System(SystemException::unknown(
                        minor::UNLISTED_USER_EXCEPTION,
                        CompletionStatus::Yes,
                    ))
                })))
        }
    }
}

/// The stub's reply decoder for `echo_long`.
fn long_result(reply: ReplyBody<'_, '_>) -> Result<Result<i32, SystemException>, CdrError> {
    match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
        ReplyBody::UserException { .. } => Ok(Err(SystemException::unknown(
            minor::UNLISTED_USER_EXCEPTION,
            CompletionStatus::Yes,
        ))),
    }
}

fn long_arg(v: i32) -> impl Fn(&mut armillary::runtime::CdrWriter) -> Result<(), CdrError> {
    move |w| {
        w.write_long(v);
        Ok(())
    }
}

fn expected_failure(code: i32) -> FailError {
    FailError::Failure {
        code,
        reason: "failed on purpose".into(),
        details: vec!["first".into(), "second".into()],
    }
}

fn no_permission(minor: u32) -> SystemException {
    SystemException::no_permission(minor, CompletionStatus::Yes)
}

/// Sends a callback request and waits (bounded) for its delivery.
fn by_callback<R: Send + 'static, E: UserExceptionSet>(
    send: impl FnOnce(Sender<Result<R, ExceptionHolder<E>>>) -> Result<(), SystemException>,
) -> Result<R, ExceptionHolder<E>> {
    let (tx, rx) = mpsc::channel();
    send(tx).expect("the request was not sent");
    rx.recv_timeout(BOUND).expect("the callback never ran")
}

fn session(version: GiopVersion, ior: &str) {
    let orb =
        Orb::with_config(OrbConfig::new().max_giop_version(version.try_into().unwrap())).unwrap();
    let obj = orb.string_to_object(ior).unwrap();

    // Poller: normal reply, user exception, system exception.
    let mut p = obj.send_poller("echo_long", long_arg(41), long_result);
    assert!(p.wait(BOUND));
    assert!(p.is_ready());
    assert_eq!(p.take(), Ok(41));
    let again = p.take().unwrap_err();
    assert_eq!(again.minor(), minor::RESPONSE_ALREADY_RETRIEVED);
    let mut p = obj.send_poller("fail", long_arg(7), fail_result);
    assert_eq!(p.take(), Err(expected_failure(7)));
    let mut p = obj.send_poller("fail", long_arg(0), fail_result);
    assert_eq!(p.take(), Err(FailError::Empty));
    let mut p = obj.send_poller("fail_system", long_arg(5), long_result);
    assert_eq!(p.take(), Err(no_permission(5)));

    // Future, on two executors.
    let f = obj.send_future("echo_long", long_arg(42), long_result);
    assert_eq!(futures::executor::block_on(f), Ok(42));
    let f = obj.send_future("echo_long", long_arg(43), long_result);
    assert_eq!(pollster::block_on(f), Ok(43));
    let f = obj.send_future("fail", long_arg(8), fail_result);
    assert_eq!(pollster::block_on(f), Err(expected_failure(8)));
    let f = obj.send_future("fail_system", long_arg(6), long_result);
    assert_eq!(futures::executor::block_on(f), Err(no_permission(6)));

    // Callback.
    let got = by_callback::<i32, SystemException>(|tx| {
        obj.send_callback(
            "echo_long",
            long_arg(44),
            |r| r.read_long(),
            move |o| {
                let _ = tx.send(o);
            },
        )
    });
    assert_eq!(got.unwrap(), 44);
    let got = by_callback::<(), FailError>(|tx| {
        obj.send_callback(
            "fail",
            long_arg(9),
            |_| Ok(()),
            move |o| {
                let _ = tx.send(o);
            },
        )
    });
    let holder = got.unwrap_err();
    assert!(!holder.is_system_exception());
    assert_eq!(holder.raise(), expected_failure(9));
    assert_eq!(
        holder.repository_id().as_deref(),
        Some("IDL:Interop/Failure:1.0")
    );
    // The holder's wire form carries the exception to another process.
    let mut w = armillary::runtime::CdrWriter::new(ByteOrder::Big, version);
    armillary::runtime::CdrEncode::encode(&holder, &mut w).unwrap();
    let bytes = w.into_bytes();
    let mut r = CdrReader::new(&bytes, ByteOrder::Big, version);
    let back: ExceptionHolder<FailError> = armillary::runtime::CdrDecode::decode(&mut r).unwrap();
    assert_eq!(back.marshaled_exception(), holder.marshaled_exception());
    let got = by_callback::<i32, SystemException>(|tx| {
        obj.send_callback(
            "fail_system",
            long_arg(3),
            |r| r.read_long(),
            move |o| {
                let _ = tx.send(o);
            },
        )
    });
    let holder = got.unwrap_err();
    assert!(holder.is_system_exception());
    assert_eq!(holder.raise(), no_permission(3));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn every_form_against_omniorb_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "ami", &[]);
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        session(version, &ior);
    }
}

/// The part of `Interop::Everything` these tests call, served dynamically
/// by an Armillary server.
struct Everything;

impl armillary::dsi::DynamicServant for Everything {
    fn primary_interface(&self) -> &'static str {
        "IDL:Interop/Everything:1.0"
    }

    fn invoke(
        &self,
        req: &mut armillary::dsi::DynamicRequest<'_, '_>,
    ) -> Result<(), SystemException> {
        use armillary::dii::{ArgMode, NvList};
        use armillary::giop::any::DynValue;
        use armillary::{Any, TypeCode};
        let operation = req.operation();
        let args = req.arguments(NvList::new().with_param(ArgMode::In, TypeCode::long()))?;
        let v = args
            .value(0)
            .and_then(|v| v.get::<i32>())
            .unwrap_or_default();
        let any = |tc, value| Any::new(tc, value).expect("the value fits its TypeCode");
        match operation {
            "echo_long" => req.set_result(Any::from(v)),
            "fail" if v == 0 => req.set_exception(any(empty(), DynValue::Struct(Vec::new()))),
            "fail" => req.set_exception(any(
                failure(),
                DynValue::Struct(vec![
                    DynValue::Long(v),
                    DynValue::String("failed on purpose".into()),
                    DynValue::Sequence(vec![
                        DynValue::String("first".into()),
                        DynValue::String("second".into()),
                    ]),
                ]),
            )),
            "fail_system" => Err(no_permission(v as u32)),
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

#[test]
fn every_form_against_an_armillary_server_in_every_giop_version() {
    let server = Orb::with_config(OrbConfig::new()).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn armillary::Servant> = Arc::new(Everything);
    let obj = poa.servant_to_reference(&servant).unwrap();
    let ior = server.object_to_string(&obj);
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        session(version, &ior);
    }
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A reference to an object on `server`.
fn held_reference(server: &HeldServer, orb: &Orb) -> ObjectRef {
    orb.string_to_object(&server.corbaloc("held")).unwrap()
}

fn assert_timeout<T: std::fmt::Debug>(outcome: Result<T, SystemException>) {
    let e = outcome.expect_err("the request should have timed out");
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
fn pollers_futures_and_callbacks_time_out_and_late_replies_are_dropped() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new().call_timeout(Duration::from_millis(30))).unwrap();
    let obj = held_reference(&server, &orb);

    let mut poller = obj.send_poller("echo_long", long_arg(1), long_result);
    let first = server.next();
    assert!(poller.wait(BOUND));
    assert_timeout(poller.take());

    let future = obj.send_future("echo_long", long_arg(2), long_result);
    let second = server.next();
    assert_timeout(futures::executor::block_on(future));

    let got = by_callback::<i32, SystemException>(|tx| {
        obj.send_callback(
            "echo_long",
            long_arg(3),
            |r| r.read_long(),
            move |o| {
                let _ = tx.send(o);
            },
        )
    });
    let third = server.next();
    assert_timeout(Err::<(), _>(got.unwrap_err().raise()));

    // The late replies come, and are dropped; the connection serves on.
    server.answer(&[first, second, third]);
    let patient = obj.with_call_timeout(BOUND);
    let future = patient.send_future("echo_long", long_arg(4), long_result);
    let fourth = server.next();
    let id = fourth.id as i32;
    server.answer(&[fourth]);
    assert_eq!(pollster::block_on(future), Ok(id));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn ten_thousand_futures_and_callbacks_on_one_connection_answered_backwards() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new().client_max_outstanding(20_000)).unwrap();
    let obj = held_reference(&server, &orb);
    let futures: Vec<_> = (0..5_000)
        .map(|i| obj.send_future("echo_long", long_arg(i), long_result))
        .collect();
    let (tx, rx) = mpsc::channel();
    for i in 0..5_000 {
        let tx = tx.clone();
        obj.send_callback(
            "echo_long",
            long_arg(i),
            |r| r.read_long(),
            move |o: Result<i32, ExceptionHolder<SystemException>>| {
                let _ = tx.send(o.map_err(|h| h.raise()));
            },
        )
        .unwrap();
    }
    let mut requests: Vec<_> = (0..10_000).map(|_| server.next()).collect();
    let ids: Vec<u32> = requests.iter().map(|r| r.id).collect();
    requests.reverse();
    server.answer(&requests);
    let mut answered: Vec<u32> = futures
        .into_iter()
        .map(|f| futures::executor::block_on(f).unwrap() as u32)
        .collect();
    for _ in 0..5_000 {
        answered.push(
            rx.recv_timeout(BOUND)
                .expect("a callback never ran")
                .unwrap() as u32,
        );
    }
    answered.sort_unstable();
    let mut ids = ids;
    ids.sort_unstable();
    assert_eq!(answered, ids);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn callbacks_run_only_in_perform_work_under_application_threads() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new().concurrency(ConcurrencyModel::ApplicationThreads))
        .unwrap();
    let obj = held_reference(&server, &orb);
    let (tx, rx) = mpsc::channel();
    obj.send_callback(
        "echo_long",
        long_arg(1),
        |r| r.read_long(),
        move |o: Result<i32, ExceptionHolder<SystemException>>| {
            let _ = tx.send((std::thread::current().id(), o.map_err(|h| h.raise())));
        },
    )
    .unwrap();
    let request = server.next();
    let id = request.id as i32;
    server.answer(&[request]);
    // The reply is read by the ORB's reader; the callback waits for us.
    let deadline = std::time::Instant::now() + BOUND;
    while !orb.work_pending().unwrap() {
        assert!(std::time::Instant::now() < deadline, "the reply never came");
        std::thread::yield_now();
    }
    assert!(rx.try_recv().is_err());
    orb.perform_work().unwrap();
    let (thread, outcome) = rx
        .try_recv()
        .expect("perform_work did not run the callback");
    assert_eq!(thread, std::thread::current().id());
    assert_eq!(outcome, Ok(id));
    assert!(!orb.work_pending().unwrap());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn shutdown_ends_outstanding_asynchronous_requests() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new()).unwrap();
    let obj = held_reference(&server, &orb);
    let future = obj.send_future("echo_long", long_arg(1), long_result);
    let (tx, rx) = mpsc::channel();
    obj.send_callback(
        "echo_long",
        long_arg(2),
        |r| r.read_long(),
        move |o: Result<i32, ExceptionHolder<SystemException>>| {
            let _ = tx.send(o.map_err(|h| h.raise()));
        },
    )
    .unwrap();
    server.next();
    server.next();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    let e = futures::executor::block_on(future).unwrap_err();
    assert_eq!(
        (e.kind(), e.minor()),
        (SystemExceptionKind::BadInvOrder, minor::ORB_SHUT_DOWN)
    );
    let e = rx.recv_timeout(BOUND).unwrap().unwrap_err();
    assert_eq!(
        (e.kind(), e.minor()),
        (SystemExceptionKind::BadInvOrder, minor::ORB_SHUT_DOWN)
    );
}

#[test]
fn back_pressure_holds_asynchronous_sends_too() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new().client_max_outstanding(2)).unwrap();
    let obj = held_reference(&server, &orb);
    let first = obj.send_future("echo_long", long_arg(1), long_result);
    let mut second = obj.send_poller("echo_long", long_arg(2), long_result);
    let received = [server.next(), server.next()];
    // Both slots are taken: a send with a short deadline waits for one
    // until its deadline, and fails without having been sent.
    let hasty = obj.with_call_timeout(Duration::from_millis(20));
    let refused = hasty.send_future("echo_long", long_arg(3), long_result);
    let e = futures::executor::block_on(refused).unwrap_err();
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (
            SystemExceptionKind::Timeout,
            minor::CALL_TIMEOUT,
            CompletionStatus::No
        )
    );
    let e = hasty
        .send_callback(
            "echo_long",
            long_arg(4),
            |r| r.read_long(),
            |_: Result<i32, ExceptionHolder<SystemException>>| {
                panic!("a request that was never sent has no callback")
            },
        )
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (
            SystemExceptionKind::Timeout,
            minor::CALL_TIMEOUT,
            CompletionStatus::No
        )
    );
    // One answer frees a slot: the next send goes out.
    let [a, b] = received;
    let (a_id, b_id) = (a.id as i32, b.id as i32);
    server.answer(&[a]);
    assert_eq!(pollster::block_on(first), Ok(a_id));
    let third = obj.send_future("echo_long", long_arg(5), long_result);
    let c = server.next();
    let c_id = c.id as i32;
    server.answer(&[b, c]);
    assert_eq!(second.take(), Ok(b_id));
    assert_eq!(futures::executor::block_on(third), Ok(c_id));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_dropped_future_or_poller_unbinds_its_dispatcher() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new().client_max_outstanding(1)).unwrap();
    let obj = held_reference(&server, &orb);
    // With one slot, a second send could not go out were the dropped
    // request still bound.
    drop(obj.send_future("echo_long", long_arg(1), long_result));
    let dropped = server.next();
    drop(obj.send_poller("echo_long", long_arg(2), long_result));
    let dropped_too = server.next();
    let kept = obj.send_future("echo_long", long_arg(3), long_result);
    let k = server.next();
    let k_id = k.id as i32;
    server.answer(&[dropped, dropped_too, k]);
    assert_eq!(pollster::block_on(kept), Ok(k_id));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn every_form_sends_the_request_the_synchronous_call_sends() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new()).unwrap();
    let obj = held_reference(&server, &orb);
    let sync = {
        let obj = obj.clone();
        std::thread::spawn(move || obj.invoke("echo_long", &long_arg(7), long_result))
    };
    let reference = server.next();
    let id = reference.id as i32;
    server.answer(&[reference]);
    assert_eq!(sync.join().unwrap(), Ok(id));
    let sync = server_request_of(&server, || {
        let obj = obj.clone();
        std::thread::spawn(move || obj.invoke("echo_long", &long_arg(7), long_result));
    });
    let kept_poller = obj.send_poller("echo_long", long_arg(7), long_result);
    let poller = server.next();
    let kept_future = obj.send_future("echo_long", long_arg(7), long_result);
    let future = server.next();
    let callback = server_request_of(&server, || {
        obj.send_callback(
            "echo_long",
            long_arg(7),
            |r| r.read_long(),
            |_: Result<i32, ExceptionHolder<SystemException>>| {},
        )
        .unwrap();
    });
    assert_eq!(poller.masked(), sync.masked());
    assert_eq!(future.masked(), sync.masked());
    assert_eq!(callback.masked(), sync.masked());
    server.answer(&[sync, poller, future, callback]);
    drop((kept_poller, kept_future));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// What `send` makes reach the server.
fn server_request_of(server: &HeldServer, send: impl FnOnce()) -> Received {
    send();
    server.next()
}

/// An invoker that cannot defer: it answers every request at once, as a
/// collocated object does, with a NO_EXCEPTION reply carrying the long 7
/// (or a USER_EXCEPTION `Interop::Empty` for `fail`).
struct Immediate;

impl armillary::runtime::Invoker for Immediate {
    fn invoke(
        &self,
        _target: &armillary::giop::ior::Ior,
        request: &armillary::runtime::OutgoingRequest<'_>,
    ) -> Result<Option<armillary::runtime::ReplyMessage>, SystemException> {
        let fail = request.operation == "fail";
        let mut message = MessageBuilder::new(
            GiopVersion::V1_2,
            ByteOrder::NATIVE,
            &MessageBody::Reply(ReplyHeader {
                request_id: 1,
                reply_status: if fail {
                    ReplyStatus::UserException
                } else {
                    ReplyStatus::NoException
                },
                service_contexts: Vec::new(),
            }),
        )
        .unwrap();
        if fail {
            message
                .body()
                .write_string("IDL:Interop/Empty:1.0")
                .unwrap();
        } else {
            message.body().write_long(7);
        }
        let bytes = message.finish(false);
        let msg = Message::decode(&bytes).unwrap();
        Ok(Some(armillary::runtime::ReplyMessage {
            body_offset: msg.body_offset,
            byte_order: ByteOrder::NATIVE,
            version: GiopVersion::V1_2,
            codesets: Default::default(),
            outcome: if fail {
                armillary::runtime::ReplyOutcome::UserException
            } else {
                armillary::runtime::ReplyOutcome::Normal
            },
            fragment_starts: Vec::new(),
            bytes: bytes.into(),
        }))
    }
}

#[test]
fn an_invoker_that_cannot_defer_answers_every_form_at_once() {
    use armillary::giop::ior::{Ior, ProfileBody};
    let profile = ProfileBody::new(GiopVersion::V1_2, "127.0.0.1", 1, b"immediate".to_vec());
    let ior = Ior::iiop("IDL:Interop/Everything:1.0", &profile).unwrap();
    let obj = ObjectRef::new(ior, Arc::new(Immediate));
    let mut poller = obj.send_poller("echo_long", long_arg(1), long_result);
    assert!(poller.is_ready());
    assert_eq!(poller.take(), Ok(7));
    let mut future = obj.send_future("fail", long_arg(2), fail_result);
    let waker = std::task::Waker::noop();
    let polled = std::pin::Pin::new(&mut future).poll(&mut std::task::Context::from_waker(waker));
    assert_eq!(polled, std::task::Poll::Ready(Err(FailError::Empty)));
    let delivered = Arc::new(Mutex::new(None));
    let into = delivered.clone();
    obj.send_callback(
        "fail",
        long_arg(3),
        |_| Ok(()),
        move |o: Result<(), ExceptionHolder<FailError>>| {
            *into.lock().unwrap() = Some(o.map_err(|h| h.raise()));
        },
    )
    .unwrap();
    // Delivered before `send_callback` returned.
    assert_eq!(
        delivered.lock().unwrap().take(),
        Some(Err(FailError::Empty))
    );
}

#[test]
fn orb_run_delivers_callbacks_in_a_pure_client_under_application_threads() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new().concurrency(ConcurrencyModel::ApplicationThreads))
        .unwrap();
    let runner = {
        let orb = orb.clone();
        std::thread::spawn(move || {
            orb.run().unwrap();
            std::thread::current().id()
        })
    };
    let obj = held_reference(&server, &orb);
    let (tx, rx) = mpsc::channel();
    obj.send_callback(
        "echo_long",
        long_arg(1),
        |r| r.read_long(),
        move |o: Result<i32, ExceptionHolder<SystemException>>| {
            let _ = tx.send((std::thread::current().id(), o.map_err(|h| h.raise())));
        },
    )
    .unwrap();
    let request = server.next();
    let id = request.id as i32;
    server.answer(&[request]);
    let (thread, outcome) = rx.recv_timeout(BOUND).expect("run never delivered it");
    assert_eq!(outcome, Ok(id));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    assert_eq!(runner.join().unwrap(), thread);
}

#[test]
fn the_asynchronous_forms_are_send() {
    fn send<T: Send>() {}
    send::<armillary::ami::Poller<String, FailError>>();
    send::<armillary::ami::ReplyFuture<String, FailError>>();
    send::<ExceptionHolder<FailError>>();
    fn sync<T: Sync>() {}
    sync::<ExceptionHolder<FailError>>();
}

/// Whether `future` is still pending (polled once, without a waker that
/// anyone wakes).
fn pending<F: Future + Unpin>(future: &mut F) -> bool {
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    std::pin::Pin::new(future).poll(&mut cx).is_pending()
}

/// Two requests outstanding on one connection to a server that answers
/// neither, the one with a short call timeout sent after the one with a
/// long timeout: the short one ends with TIMEOUT while the long one is
/// still pending (the connection's reader wakes at the earliest deadline
/// of what is outstanding, whenever it was bound), and the long one then
/// gets its reply. For futures, callbacks, and DII requests sent with
/// `send_multiple_requests` (read by the same reader).
#[test]
fn a_short_deadline_fires_while_a_longer_one_waits() {
    let server = HeldServer::start();
    let orb = Orb::with_config(OrbConfig::new()).unwrap();
    let obj = held_reference(&server, &orb);
    let patient = obj.with_call_timeout(BOUND);
    let hasty = obj.with_call_timeout(Duration::from_millis(50));

    let mut long = patient.send_future("echo_long", long_arg(1), long_result);
    let long_request = server.next();
    let short = hasty.send_future("echo_long", long_arg(2), long_result);
    server.next();
    assert_timeout(pollster::block_on(short));
    assert!(
        pending(&mut long),
        "the long future ended with the short one"
    );
    server.answer(std::slice::from_ref(&long_request));
    assert_eq!(pollster::block_on(long), Ok(long_request.id as i32));

    let (long_tx, long_rx) = mpsc::channel();
    patient
        .send_callback(
            "echo_long",
            long_arg(3),
            |r| r.read_long(),
            move |o: Result<i32, ExceptionHolder<SystemException>>| {
                let _ = long_tx.send(o.map_err(|h| h.raise()));
            },
        )
        .unwrap();
    let long_request = server.next();
    let short = by_callback::<i32, SystemException>(|tx| {
        hasty.send_callback(
            "echo_long",
            long_arg(4),
            |r| r.read_long(),
            move |o| {
                let _ = tx.send(o);
            },
        )
    });
    server.next();
    assert_timeout(Err::<(), _>(short.unwrap_err().raise()));
    assert!(long_rx.try_recv().is_err(), "the long callback ran");
    server.answer(std::slice::from_ref(&long_request));
    assert_eq!(
        long_rx.recv_timeout(BOUND).expect("the callback never ran"),
        Ok(long_request.id as i32)
    );

    let dii = |obj: &ObjectRef, v: i32| {
        obj.request("echo_long")
            .with_in(armillary::Any::from(v))
            .returns(armillary::TypeCode::long())
    };
    orb.send_multiple_requests([dii(&patient, 5), dii(&hasty, 6)])
        .unwrap();
    let first = server.next();
    let second = server.next();
    let mut done = orb.get_next_response().unwrap();
    let e = done.get_response().unwrap_err();
    assert_timeout(Err::<(), _>(e.system_exception().cloned().unwrap()));
    assert_eq!(
        done.arguments().value(0).and_then(|v| v.get::<i32>()),
        Some(6)
    );
    assert!(!orb.poll_next_response(), "the long request ended too");
    server.answer(&[first, second]);
    let mut done = orb.get_next_response().unwrap();
    done.get_response().unwrap();
    assert_eq!(
        done.arguments().value(0).and_then(|v| v.get::<i32>()),
        Some(5)
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
