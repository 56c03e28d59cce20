//! How a client connection writes: pipelined AMI requests leave through
//! the connection's writer thread, in the order they were sent, and every
//! request arrives whole however many threads send at once (writes
//! combine: one thread writes what the others queued meanwhile); and what
//! becomes of a queued request when the connection breaks under it, or
//! when the server stops reading.
//!
//! The server is `armillary_testkit::raw::HeldServer`, which records every
//! Request as it came off the wire and answers when told (each reply's
//! result is its request id); it can also leave a connection unread, so
//! that the client's writer thread blocks in a write, then read or reset
//! it.

use std::time::Duration;

use armillary::config::OrbConfig;
use armillary::giop::cdr::CdrError;
use armillary::giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};
use armillary::runtime::{CdrWriter, ReplyBody};
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_testkit::raw::{HeldServer, Received};

/// Far beyond what a working client needs: reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

fn read_long(reply: ReplyBody<'_, '_>) -> Result<Result<i32, SystemException>, CdrError> {
    match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    }
}

/// A client ORB and its reference to an object on `server`.
fn client_of(server: &HeldServer) -> (Orb, ObjectRef) {
    let orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .call_timeout(DEADLINE)
            .client_max_outstanding(10_000),
    )
    .unwrap();
    let obj = orb.string_to_object(&server.corbaloc("held")).unwrap();
    (orb, obj)
}

/// One thread sends 500 futures without waiting: from the second on they
/// are pipelined, left to the writer thread. They reach the server in
/// the order they were sent (request ids rising), each whole, and every
/// future gets its own reply.
#[test]
fn pipelined_requests_leave_in_the_order_they_were_sent() {
    let server = HeldServer::start();
    let (orb, obj) = client_of(&server);
    let futures: Vec<_> = (0..500)
        .map(|i: i32| {
            obj.send_future(
                "echo_long",
                move |w| {
                    w.write_long(i);
                    Ok(())
                },
                read_long,
            )
        })
        .collect();
    let received: Vec<Received> = (0..500).map(|_| server.next()).collect();
    for pair in received.windows(2) {
        assert!(
            pair[0].id < pair[1].id,
            "request {} arrived before {}",
            pair[0].id,
            pair[1].id
        );
    }
    assert!(received.iter().all(|r| r.header.operation == "echo_long"));
    // Answered in reverse, in one write: each future gets its own id.
    let reversed: Vec<Received> = received.iter().rev().cloned().collect();
    server.answer(&reversed);
    let ids: Vec<i32> = futures
        .into_iter()
        .map(|f| pollster::block_on(f).unwrap())
        .collect();
    let sent: Vec<i32> = received.iter().map(|r| r.id as i32).collect();
    assert_eq!(ids, sent);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Eight threads at once, each mixing synchronous calls with a burst of
/// futures, against a server that answers each request as it comes:
/// every call gets its own reply.
#[test]
fn requests_from_many_threads_at_once_all_arrive_whole() {
    let server = HeldServer::start();
    let (orb, obj) = client_of(&server);
    const THREADS: usize = 8;
    const ROUNDS: usize = 20;
    const BURST: usize = 10;
    let total = THREADS * ROUNDS * (1 + BURST);
    let answering = std::thread::spawn(move || {
        for _ in 0..total {
            let request = server.next();
            server.answer(&[request]);
        }
    });
    let callers: Vec<_> = (0..THREADS)
        .map(|_| {
            let obj = obj.clone();
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let id = obj.invoke("echo_long", &|_| Ok(()), read_long).unwrap();
                    assert!(id > 0);
                    let burst: Vec<_> = (0..BURST)
                        .map(|_| obj.send_future("echo_long", |_| Ok(()), read_long))
                        .collect();
                    let mut ids: Vec<i32> = burst
                        .into_iter()
                        .map(|f| pollster::block_on(f).unwrap())
                        .collect();
                    ids.dedup();
                    assert_eq!(ids.len(), BURST, "each future its own reply");
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    answering.join().unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Far more than the socket buffers of a connection nobody reads hold:
/// the writer thread blocks in the write of a request this large.
const BIG: usize = 16 << 20;

/// Unread bytes in a held connection that show the writer thread has
/// begun the big request (what went before it is a few hundred bytes).
const FLOWING: usize = 32 << 10;

/// A request's arguments: one octet sequence of `len` bytes.
fn octets(len: usize) -> impl Fn(&mut CdrWriter) -> Result<(), CdrError> + Send + Sync + 'static {
    move |w| w.write_octet_seq(&vec![7; len])
}

fn assert_exception<T: std::fmt::Debug>(
    outcome: Result<T, SystemException>,
    kind: SystemExceptionKind,
    minor: u32,
    completed: CompletionStatus,
) {
    let e = outcome.expect_err("the request should have failed");
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (kind, minor, completed),
        "{e:?}"
    );
}

/// The connection breaks (the server resets it) while the writer thread
/// is blocked in a big request and another waits in the queue behind it:
/// the big one, of which some bytes left, fails with COMM_FAILURE,
/// COMPLETED_MAYBE; the queued one, of which nothing left, is sent again
/// on a new connection and answered.
#[test]
fn a_queued_request_that_never_left_a_broken_connection_is_sent_again() {
    let server = HeldServer::start_unread(1);
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let obj = orb.string_to_object(&server.corbaloc("held")).unwrap();
    let first = obj.send_future("echo_long", octets(4), read_long);
    // Pipelined (two outstanding): left to the writer thread, which
    // blocks in it.
    let big = obj.send_future("echo_long", octets(BIG), read_long);
    server.wait_unread(0, FLOWING);
    // Queued behind it.
    let queued = obj.send_future("echo_long", octets(4), read_long);
    server.reset_connection(0);
    let lost = |outcome| {
        assert_exception(
            outcome,
            SystemExceptionKind::CommFailure,
            minor::CONNECTION_LOST,
            CompletionStatus::Maybe,
        )
    };
    lost(pollster::block_on(first));
    lost(pollster::block_on(big));
    let again = std::thread::spawn(move || pollster::block_on(queued));
    let request = server.next();
    assert_eq!(request.conn, 1, "sent again on a new connection");
    server.answer(std::slice::from_ref(&request));
    assert_eq!(again.join().unwrap(), Ok(request.id as i32));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// The server stops reading while the writer thread writes a big request
/// without deadline; a request with a call timeout waits in the queue
/// behind it. At its deadline it ends with TIMEOUT, COMPLETED_NO, and is
/// never written: once the server reads again it gets the requests sent
/// before and after it, not that one.
#[test]
fn a_queued_request_past_its_deadline_ends_and_never_leaves() {
    let server = HeldServer::start_unread(1);
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let obj = orb.string_to_object(&server.corbaloc("held")).unwrap();
    let first = obj.send_future("echo_long", octets(4), read_long);
    let big = obj.send_future("echo_long", octets(BIG), read_long);
    server.wait_unread(0, FLOWING);
    let hasty = obj.with_call_timeout(Duration::from_millis(50));
    let timed_out = hasty.send_future("echo_long", octets(4), read_long);
    assert_exception(
        pollster::block_on(timed_out),
        SystemExceptionKind::Timeout,
        minor::CALL_TIMEOUT,
        CompletionStatus::No,
    );
    let last = obj.send_future("echo_long", octets(4), read_long);
    server.read_connection(0);
    let received: Vec<Received> = (0..3).map(|_| server.next()).collect();
    assert!(received.iter().all(|r| r.conn == 0));
    let lengths: Vec<usize> = received
        .iter()
        .map(|r| r.bytes.len() - r.body_offset)
        .collect();
    assert!(
        lengths[0] < 64 && lengths[1] > BIG && lengths[2] < 64,
        "{lengths:?}"
    );
    // The third is the last one sent: the timed-out request was between.
    assert!(received[1].id + 1 < received[2].id, "{received:?}");
    server.answer(&received);
    for (future, request) in [first, big, last].into_iter().zip(&received) {
        assert_eq!(pollster::block_on(future), Ok(request.id as i32));
    }
    assert!(server.try_next().is_none());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// The server stops reading while the writer thread writes a big request
/// with a call timeout: at its deadline the request ends with TIMEOUT and
/// the connection, which now carries part of a message, is closed (the
/// server reaches its end having received the request before it whole
/// and not this one); the next request goes on a new connection.
#[test]
fn a_write_that_outlasts_its_request_deadline_retires_the_connection() {
    let server = HeldServer::start_unread(1);
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let obj = orb.string_to_object(&server.corbaloc("held")).unwrap();
    let first = obj.send_future("echo_long", octets(4), read_long);
    let hasty = obj.with_call_timeout(Duration::from_millis(200));
    let big = hasty.send_future("echo_long", octets(BIG), read_long);
    server.wait_unread(0, FLOWING);
    // It did not leave whole: the server cannot have run it.
    assert_exception(
        pollster::block_on(big),
        SystemExceptionKind::Timeout,
        minor::CALL_TIMEOUT,
        CompletionStatus::No,
    );
    server.read_connection(0);
    server.wait_closed(0);
    let before = server.next();
    assert_eq!(before.conn, 0);
    assert!(server.try_next().is_none(), "the big request arrived whole");
    assert_exception(
        pollster::block_on(first),
        SystemExceptionKind::CommFailure,
        minor::CONNECTION_LOST,
        CompletionStatus::Maybe,
    );
    let next = obj.send_future("echo_long", octets(4), read_long);
    let request = server.next();
    assert_eq!(request.conn, 1);
    server.answer(std::slice::from_ref(&request));
    assert_eq!(pollster::block_on(next), Ok(request.id as i32));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
