//! Call timeouts at ORB, thread and reference level, and client-side
//! back-pressure (`-ORBClientMaxOutstanding`), against a raw server that
//! answers a request only when the test tells it to.
//!
//! No outcome here depends on timing: a call expected to time out is one the
//! server never answers, and a call expected to survive a shorter timeout
//! elsewhere is answered only after a call with that shorter timeout, sent
//! later, has timed out (so the shorter deadline has certainly passed).
//! Waits for the other threads are bounded generously; the bounds only turn
//! a hang into a failure.

use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use armillary::config::{OrbConfig, TransportMux};
use armillary::giop::giop::SyncScope;
use armillary::{
    minor, Any, CallTimeout, CompletionStatus, Interface, ObjectRef, Orb, SystemException,
    SystemExceptionKind, TypeCode, WaitForCompletion,
};
use armillary_testkit::raw::{HeldServer, Received};

/// How long the test waits for something that must happen; only a hang
/// reaches it.
const BOUND: Duration = Duration::from_secs(60);
/// A timeout short enough for a test to wait for.
const SHORT: Duration = Duration::from_millis(30);
/// A timeout no test waits for.
const LONG: Duration = Duration::from_secs(3600);

/// A reference to an object of `server`, through `orb`.
fn reference(server: &HeldServer, orb: &Orb) -> ObjectRef {
    orb.string_to_object(&server.corbaloc("held")).unwrap()
}

/// Answers `request` with the long `value`.
fn answer(server: &HeldServer, request: &Received, value: i32) {
    server.answer_with(std::slice::from_ref(request), |_, body| {
        body.write_long(value)
    });
}

/// A synchronous `long echo_long(in long v)` through `obj`.
fn echo(obj: &ObjectRef, v: i32) -> Result<i32, SystemException> {
    obj.invoke_plain(
        "echo_long",
        &|w| {
            w.write_long(v);
            Ok(())
        },
        |r| r.read_long(),
    )
}

/// The same as a DII request.
fn echo_request(obj: &ObjectRef, v: i32) -> armillary::Request {
    obj.request("echo_long")
        .with_in(Any::from(v))
        .returns(TypeCode::long())
}

fn assert_timeout<T: std::fmt::Debug>(
    outcome: Result<T, SystemException>,
    completed: CompletionStatus,
) {
    let e = outcome.expect_err("the call should have timed out");
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (SystemExceptionKind::Timeout, minor::CALL_TIMEOUT, completed),
        "{e:?}"
    );
}

/// Runs `f` on another thread; the receiver gets its result.
fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Receiver<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx
}

/// Runs the call `f`, expected to end by its own (short) timeout, on
/// another thread: a call that outlives it fails the test instead of
/// hanging it.
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    spawn(f)
        .recv_timeout(BOUND)
        .expect("the call outlived its timeout (or panicked: see above)")
}

/// Shows that the timeout `patient` runs its call with is longer than the
/// one `hasty` runs its own with, without measuring time: the patient call
/// goes first, the hasty one after the server has it, and the patient call
/// is answered only once the hasty one has timed out. Had the patient call
/// had the hasty timeout, it would have timed out before its answer.
fn patient_outlasts_hasty(
    server: &HeldServer,
    patient: impl FnOnce() -> Result<i32, SystemException> + Send + 'static,
    hasty: impl FnOnce() -> Result<i32, SystemException>,
) {
    let patient = spawn(patient);
    let first = server.next();
    assert_timeout(hasty(), CompletionStatus::Maybe);
    let second = server.next();
    assert_eq!(second.header.operation, "echo_long");
    answer(server, &first, 7);
    assert_eq!(patient.recv_timeout(BOUND).expect("hung"), Ok(7));
}

#[test]
fn a_reference_override_beats_the_orb_timeout() {
    bounded(|| {
        let server = HeldServer::start();
        let orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .call_timeout(SHORT),
        )
        .unwrap();
        let obj = reference(&server, &orb);
        let patient = obj.with_call_timeout(LONG);
        assert_eq!(patient.call_timeout(), Some(LONG));
        patient_outlasts_hasty(&server, move || echo(&patient, 1), || echo(&obj, 2));
        // "No limit" set on a reference overrides too.
        let unlimited = obj.with_call_timeout(Duration::ZERO);
        patient_outlasts_hasty(&server, move || echo(&unlimited, 3), || echo(&obj, 4));

        // And a shorter one on the reference ends a call the ORB lets run.
        let patient_orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .call_timeout(LONG),
        )
        .unwrap();
        let obj = reference(&server, &patient_orb);
        let hasty = obj.with_call_timeout(SHORT);
        assert_timeout(bounded(move || echo(&hasty, 5)), CompletionStatus::Maybe);
        assert_eq!(server.next().header.operation, "echo_long");
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        patient_orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn a_thread_timeout_beats_the_orb_timeout() {
    bounded(|| {
        let server = HeldServer::start();
        let orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .call_timeout(SHORT),
        )
        .unwrap();
        let obj = reference(&server, &orb);
        let patient = obj.clone();
        patient_outlasts_hasty(
            &server,
            move || {
                let _long = CallTimeout::set_for_thread(LONG);
                echo(&patient, 1)
            },
            || echo(&obj, 2),
        );
        // A shorter thread timeout ends a call the ORB would let run, and the
        // thread is back to the ORB's once the guard is gone.
        let unlimited =
            Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
                .unwrap();
        let obj = reference(&server, &unlimited);
        let hasty = obj.clone();
        let outcome = bounded(move || {
            let guard = CallTimeout::set_for_thread(SHORT);
            let outcome = echo(&hasty, 3);
            drop(guard);
            (outcome, CallTimeout::for_thread())
        });
        assert_timeout(outcome.0, CompletionStatus::Maybe);
        assert_eq!(outcome.1, None);
        assert_eq!(server.next().header.operation, "echo_long");
        let waiting = spawn(move || echo(&obj, 4));
        let request = server.next();
        answer(&server, &request, 4);
        assert_eq!(waiting.recv_timeout(BOUND).expect("hung"), Ok(4));
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        unlimited.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn a_reference_override_beats_the_thread_timeout() {
    bounded(|| {
        let server = HeldServer::start();
        let orb =
            Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
                .unwrap();
        let obj = reference(&server, &orb);
        let patient = obj.with_call_timeout(LONG);
        let hasty = obj.clone();
        patient_outlasts_hasty(
            &server,
            move || {
                let _short = CallTimeout::set_for_thread(SHORT);
                echo(&patient, 1)
            },
            move || {
                let _short = CallTimeout::set_for_thread(SHORT);
                echo(&hasty, 2)
            },
        );
        // A shorter reference timeout beats a thread that set no limit.
        let hasty = obj.with_call_timeout(SHORT);
        let outcome = bounded(move || {
            let _unlimited = CallTimeout::set_for_thread(Duration::ZERO);
            echo(&hasty, 3)
        });
        assert_timeout(outcome, CompletionStatus::Maybe);
        assert_eq!(server.next().header.operation, "echo_long");
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn overrides_reach_typed_stubs_dii_and_synchronised_oneways() {
    bounded(|| {
        let server = HeldServer::start();
        let orb =
            Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
                .unwrap();
        let obj = reference(&server, &orb);
        // Through the Interface trait, as a generated stub would.
        let typed: ObjectRef = Interface::with_call_timeout(&obj, SHORT);
        assert_timeout(echo(&typed, 1), CompletionStatus::Maybe);
        server.next();
        // DII invoke and deferred requests take the target's override.
        let mut invoked = echo_request(&typed, 2);
        let e = invoked.invoke().unwrap_err();
        assert_timeout(
            Err::<(), _>(e.system_exception().cloned().unwrap()),
            CompletionStatus::Maybe,
        );
        server.next();
        let mut deferred = echo_request(&typed, 3);
        deferred.send_deferred().unwrap();
        server.next();
        let e = deferred.get_response().unwrap_err();
        assert_timeout(
            Err::<(), _>(e.system_exception().cloned().unwrap()),
            CompletionStatus::Maybe,
        );
        // A oneway that waits for the server (SYNC_WITH_SERVER) is bounded too.
        assert_timeout(
            typed.invoke_oneway_with(SyncScope::WithServer, "ping", &|_| Ok(())),
            CompletionStatus::Maybe,
        );
        server.next();
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn a_late_reply_is_dropped_and_the_connection_serves_on() {
    bounded(|| {
        let server = HeldServer::start();
        // Every request on one connection (the muxed transport).
        let orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .transport_mux(TransportMux::Muxed),
        )
        .unwrap();
        let obj = reference(&server, &orb);
        // A deferred request without a timeout keeps the connection in use.
        let mut deferred = echo_request(&obj, 1);
        deferred.send_deferred().unwrap();
        let first = server.next();
        // A call on the same connection times out...
        assert_timeout(
            echo(&obj.with_call_timeout(SHORT), 2),
            CompletionStatus::Maybe,
        );
        let late = server.next();
        assert_eq!(late.conn, first.conn);
        // ...and its reply, when it comes, goes nowhere: the deferred request
        // gets its own reply from the same connection afterwards.
        answer(&server, &late, 222);
        answer(&server, &first, 111);
        deferred.get_response().unwrap();
        assert_eq!(
            deferred.return_value().and_then(|v| v.get::<i32>()),
            Some(111)
        );
        // Later calls are served.
        let waiting = spawn(move || echo(&obj, 3));
        let third = server.next();
        answer(&server, &third, 333);
        assert_eq!(waiting.recv_timeout(BOUND).expect("hung"), Ok(333));
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn a_timed_out_deferred_request_frees_its_slot() {
    bounded(|| {
        let server = HeldServer::start();
        // One request at a time may await its reply on a connection.
        let orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .client_max_outstanding(1),
        )
        .unwrap();
        let obj = reference(&server, &orb).with_call_timeout(SHORT);
        let mut deferred = echo_request(&obj, 1);
        deferred.send_deferred().unwrap();
        server.next();
        let e = deferred.get_response().unwrap_err();
        assert_timeout(
            Err::<(), _>(e.system_exception().cloned().unwrap()),
            CompletionStatus::Maybe,
        );
        // Had the timed-out request kept its dispatcher, this one would find no
        // free slot and fail before it is sent (COMPLETED_NO); it is sent.
        let mut next = echo_request(&obj, 2);
        next.send_deferred().unwrap();
        server.next();
        let e = next.get_response().unwrap_err();
        assert_timeout(
            Err::<(), _>(e.system_exception().cloned().unwrap()),
            CompletionStatus::Maybe,
        );
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn requests_beyond_the_outstanding_limit_wait_for_a_reply() {
    bounded(|| {
        const LIMIT: usize = 3;
        let server = HeldServer::start();
        let orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                // The limit is one connection's: every request on one.
                .transport_mux(TransportMux::Muxed)
                .client_max_outstanding(LIMIT),
        )
        .unwrap();
        let obj = reference(&server, &orb);
        let mut outstanding: Vec<_> = (0..LIMIT as i32)
            .map(|v| {
                let mut r = echo_request(&obj, v);
                r.send_deferred().unwrap();
                r
            })
            .collect();
        let received: Vec<_> = (0..LIMIT).map(|_| server.next()).collect();
        // One more, with a deadline: it waits for a slot until the deadline,
        // then fails without having been sent.
        let mut refused = echo_request(&obj.with_call_timeout(SHORT), 99);
        refused.send_deferred().unwrap();
        let e = refused.get_response().unwrap_err();
        assert_timeout(
            Err::<(), _>(e.system_exception().cloned().unwrap()),
            CompletionStatus::No,
        );
        // So does a synchronous call.
        assert_timeout(
            echo(&obj.with_call_timeout(SHORT), 98),
            CompletionStatus::No,
        );
        // Once one reply comes, one more request goes: without a deadline, the
        // sender waits, reads the reply into its deferred request and sends.
        answer(&server, &received[0], 1000);
        let mut extra = echo_request(&obj, LIMIT as i32);
        extra.send_deferred().unwrap();
        let sent = server.next();
        assert_eq!(sent.conn, received[0].conn);
        assert!(
            sent.id > received[LIMIT - 1].id,
            "the refused requests were never sent"
        );
        outstanding[0].get_response().unwrap();
        assert_eq!(
            outstanding[0].return_value().and_then(|v| v.get::<i32>()),
            Some(1000)
        );
        // Everything answered: everything is collected.
        for (request, r) in received[1..].iter().zip(1..) {
            answer(&server, request, r);
        }
        answer(&server, &sent, 2000);
        for (r, request) in outstanding[1..].iter_mut().enumerate() {
            request.get_response().unwrap();
            assert_eq!(
                request.return_value().and_then(|v| v.get::<i32>()),
                Some(r as i32 + 1)
            );
        }
        extra.get_response().unwrap();
        assert_eq!(
            extra.return_value().and_then(|v| v.get::<i32>()),
            Some(2000)
        );
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}

#[test]
fn a_blocked_sender_resumes_when_another_thread_reads_the_reply() {
    bounded(|| {
        let server = HeldServer::start();
        let orb = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .client_max_outstanding(1),
        )
        .unwrap();
        let obj = reference(&server, &orb);
        // A synchronous caller holds the only slot and leads the connection.
        let holder = {
            let obj = obj.clone();
            spawn(move || echo(&obj, 1))
        };
        let first = server.next();
        // A second caller waits for the slot as a follower.
        let blocked = {
            let obj = obj.clone();
            spawn(move || echo(&obj, 2))
        };
        answer(&server, &first, 10);
        assert_eq!(holder.recv_timeout(BOUND).expect("hung"), Ok(10));
        let second = server.next();
        answer(&server, &second, 20);
        assert_eq!(blocked.recv_timeout(BOUND).expect("hung"), Ok(20));
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    });
}
