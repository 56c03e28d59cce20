//! Unit tests of the client connection, and the helpers other modules'
//! tests use (`reply`, `connected`, `expect`, `value`).

use std::io::Write;
use std::net::{TcpListener, TcpStream};

use armillary_giop::giop::{Frame, ReplyHeader, ReplyStatus};
use armillary_giop::ByteOrder;

use super::*;
use crate::transport::mux::Caller;
use crate::transport::reply::sync::SyncSlot;

/// A GIOP 1.2 Reply to `id` whose body is the long `value`.
pub(crate) fn reply(id: u32, value: i32) -> Vec<u8> {
    let mut b = armillary_giop::giop::MessageBuilder::new(
        GiopVersion::V1_2,
        ByteOrder::NATIVE,
        &MessageBody::Reply(ReplyHeader {
            request_id: id,
            reply_status: ReplyStatus::NoException,
            service_contexts: Vec::new(),
        }),
    )
    .unwrap();
    b.body().write_long(value);
    b.finish(false)
}

/// A client connection to a loopback listener, and the server's end of
/// it.
pub(crate) fn connected() -> (Arc<ClientConnection>, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let conn = ClientConnection::open("127.0.0.1", port, None, CONNECT_TIMEOUT, 1 << 20).unwrap();
    let (server, _) = listener.accept().unwrap();
    (conn, server)
}

/// Binds a synchronous dispatcher to `id` and returns its slot.
pub(crate) fn expect(conn: &ClientConnection, id: u32) -> Arc<SyncSlot> {
    let slot = Arc::new(SyncSlot::default());
    conn.bind(id, slot.dispatcher(), None);
    slot
}

/// The long a reply's body holds.
pub(crate) fn value(frame: &Frame) -> i32 {
    let (_, mut body) = frame.decode().unwrap();
    body.read_long().unwrap()
}

#[test]
fn a_timed_out_wait_forgets_its_reply_and_the_connection_carries_on() {
    let (conn, mut server) = connected();

    // Nothing comes: the wait ends at its deadline, with nothing heard.
    let slot1 = expect(&conn, 1);
    let deadline = Instant::now() + Duration::from_millis(50);
    assert!(matches!(
        conn.wait_reply(1, &slot1, Some(deadline)),
        Awaited::TimedOut { silent: true, .. }
    ));
    assert!(conn.state.lock().dispatchers.is_empty());

    // The late reply to 1 arrives with the reply to 2: 1's is dropped.
    let slot2 = expect(&conn, 2);
    server
        .write_all(&[reply(1, 111), reply(2, 222)].concat())
        .unwrap();
    match conn.wait_reply(2, &slot2, None) {
        Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
        _ => panic!("no reply to 2"),
    }
    assert!(conn.state.lock().dispatchers.is_empty());
    assert_eq!(conn.state.lock().closed, None);

    // A wait that saw other replies meanwhile is not silent.
    let slot3 = expect(&conn, 3);
    let slot4 = expect(&conn, 4);
    server.write_all(&reply(4, 444)).unwrap();
    match conn.wait_reply(4, &slot4, None) {
        Awaited::Reply(frame) => assert_eq!(value(&frame), 444),
        _ => panic!("no reply to 4"),
    }
    let deadline = Instant::now() + Duration::from_millis(20);
    assert!(matches!(
        conn.wait_reply(3, &slot3, Some(deadline)),
        Awaited::TimedOut { silent: false, .. }
    ));
    // The socket's read timeout is cleared for a wait without deadline.
    let slot5 = expect(&conn, 5);
    server.write_all(&reply(5, 555)).unwrap();
    assert!(matches!(
        conn.wait_reply(5, &slot5, None),
        Awaited::Reply(_)
    ));
    assert_eq!(conn.state.lock().read_timeout, None);
    assert_eq!(conn.stream.socket().read_timeout().unwrap(), None);
}

#[test]
fn an_idle_connection_the_server_closed_is_found_dead_before_use() {
    let (conn, server) = connected();
    assert!(!conn.is_dead_while_idle());
    drop(server);
    // The FIN travels asynchronously: poll for it, bounded.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !conn.is_dead_while_idle() {
        assert!(Instant::now() < deadline, "the close was never seen");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn followers_and_the_leader_each_keep_their_own_deadline() {
    let (conn, mut server) = connected();
    // Four waiters with short deadlines and one without: the short ones
    // all end (whoever leads), the last gets its reply afterwards.
    let mut slots: Vec<_> = (1..=5).map(|id| expect(&conn, id)).collect();
    let slot5 = slots.pop().unwrap();
    let waiters: Vec<_> = (1..=4)
        .zip(slots)
        .map(|(id, slot)| {
            let conn = conn.clone();
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_millis(20 * u64::from(id));
                matches!(
                    conn.wait_reply(id, &slot, Some(deadline)),
                    Awaited::TimedOut { .. }
                )
            })
        })
        .collect();
    let patient = {
        let conn = conn.clone();
        std::thread::spawn(move || match conn.wait_reply(5, &slot5, None) {
            Awaited::Reply(frame) => value(&frame),
            _ => 0,
        })
    };
    for w in waiters {
        assert!(w.join().unwrap());
    }
    server.write_all(&reply(5, 555)).unwrap();
    assert_eq!(patient.join().unwrap(), 555);
    assert!(conn.state.lock().dispatchers.is_empty());
}

#[test]
fn the_leader_delivers_a_deferred_reply_into_its_dispatcher() {
    use crate::transport::reply::deferred::DeferredSlot;
    let (conn, mut server) = connected();
    let deferred = Arc::new(DeferredSlot::default());
    conn.bind(1, deferred.dispatcher(), None);
    let slot2 = expect(&conn, 2);
    // The deferred reply comes first: the synchronous caller, leading,
    // reads it on its way to its own and hands it over.
    server
        .write_all(&[reply(1, 111), reply(2, 222)].concat())
        .unwrap();
    match conn.wait_reply(2, &slot2, None) {
        Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
        _ => panic!("no reply to 2"),
    }
    assert!(deferred.is_ready());
    match deferred.take() {
        Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 111),
        _ => panic!("no deferred reply"),
    }
    assert!(conn.state.lock().dispatchers.is_empty());
}

#[test]
fn a_poll_reads_what_has_arrived_without_blocking() {
    use crate::transport::reply::deferred::DeferredSlot;
    let (conn, mut server) = connected();
    let deferred = Arc::new(DeferredSlot::default());
    conn.bind(1, deferred.dispatcher(), None);
    // Nothing has arrived: the poll returns at once, empty-handed.
    conn.poll();
    assert!(!deferred.is_ready());
    server.write_all(&reply(1, 111)).unwrap();
    // While another thread leads, a poll leaves the socket to it.
    conn.state.lock().leader = true;
    let deadline = Instant::now() + Duration::from_secs(10);
    while readiness(conn.stream.socket()) != Readiness::Data {
        assert!(Instant::now() < deadline, "the reply never arrived");
        std::thread::yield_now();
    }
    conn.poll();
    assert!(!deferred.is_ready());
    conn.state.lock().leader = false;
    // Nobody leads: a poll reads it (the bytes are there already;
    // should TCP have cut the message, a later poll reads the rest).
    while !deferred.is_ready() {
        assert!(Instant::now() < deadline, "the poll never delivered it");
        conn.poll();
    }
    match deferred.take() {
        Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 111),
        _ => panic!("the poll did not deliver the reply"),
    }
    // A deferred request past its deadline is ended by the next poll,
    // and its late reply is dropped.
    let late = Arc::new(DeferredSlot::default());
    conn.bind(2, late.dispatcher(), Some(Instant::now()));
    conn.poll();
    assert!(matches!(
        late.take(),
        Some(Awaited::TimedOut { silent: true, .. })
    ));
    assert!(conn.state.lock().dispatchers.is_empty());
    assert_eq!(Arc::strong_count(&late), 1);
    let patient = Arc::new(DeferredSlot::default());
    conn.bind(3, patient.dispatcher(), None);
    server
        .write_all(&[reply(2, 222), reply(3, 333)].concat())
        .unwrap();
    assert!(conn.wait_until(None, |_| patient.is_ready()));
    match patient.take() {
        Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 333),
        _ => panic!("no reply to 3"),
    }
    assert_eq!(conn.state.lock().closed, None);
}

#[test]
fn a_bind_beyond_the_limit_waits_for_a_reply_or_its_deadline() {
    use crate::transport::reply::deferred::DeferredSlot;
    let (conn, mut server) = connected();
    let first = Arc::new(DeferredSlot::default());
    assert!(conn.bind_within_limit(1, first.dispatcher(), None, 1));
    // The only slot is taken: the deadline passes, nothing is bound.
    let refused = Arc::new(DeferredSlot::default());
    let deadline = Instant::now() + Duration::from_millis(20);
    assert!(!conn.bind_within_limit(2, refused.dispatcher(), Some(deadline), 1));
    assert_eq!(conn.state.lock().dispatchers.len(), 1);
    assert_eq!(Arc::strong_count(&refused), 1);
    // The reply to 1 frees it: the waiting binder reads it and binds.
    server.write_all(&reply(1, 111)).unwrap();
    let second = Arc::new(DeferredSlot::default());
    assert!(conn.bind_within_limit(3, second.dispatcher(), None, 1));
    assert!(first.is_ready());
    assert_eq!(conn.state.lock().dispatchers.len(), 1);
    // Unbinding frees a slot too.
    conn.unbind(3);
    let third = Arc::new(DeferredSlot::default());
    assert!(conn.bind_within_limit(4, third.dispatcher(), Some(Instant::now()), 1));
    // On a closed connection the dispatcher learns it at once.
    drop(server);
    assert!(conn.wait_until(None, |_| false));
    let late = Arc::new(DeferredSlot::default());
    assert!(conn.bind_within_limit(5, late.dispatcher(), None, 1));
    assert!(matches!(late.take(), Some(Awaited::Closed(Closed::Broken))));
}

#[test]
fn an_asynchronous_reply_is_read_by_an_orb_thread_and_its_callback_runs_unlocked() {
    use crate::transport::reply::callback::Notify;
    use crate::transport::reply::deferred::DeferredSlot;
    let (conn, mut server) = connected();
    let slot = Arc::new(DeferredSlot::new(true));
    conn.bind(1, slot.dispatcher(), None);
    let (tx, rx) = std::sync::mpsc::channel();
    let conn2 = conn.clone();
    let seen = slot.clone();
    assert!(slot
        .on_ready(Notify::Continue(Box::new(move || {
            // The read state is free: the continuation may use the
            // connection.
            let unlocked = conn2.state.try_lock().is_some();
            let _ = tx.send((unlocked, seen.take(), std::thread::current().id()));
        })))
        .is_none());
    assert!(conn.ensure_reader());
    // One reader per connection.
    assert!(!conn.ensure_reader());
    server.write_all(&reply(1, 111)).unwrap();
    let (unlocked, outcome, thread) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(unlocked);
    assert_ne!(thread, std::thread::current().id());
    match outcome {
        Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 111),
        _ => panic!("no reply in the slot"),
    }
    // With nothing asynchronous outstanding, the reader parks (not
    // reading)...
    let deadline = Instant::now() + Duration::from_secs(60);
    while !conn.state.lock().reader_parked {
        assert!(Instant::now() < deadline, "the reader never parked");
        std::thread::yield_now();
    }
    // ... so a synchronous caller reads its own reply, and needs no
    // reader; nor does it wake the parked one (a thread switch a call).
    let wakeups = conn.state.lock().linger_wakeups;
    let sync = expect(&conn, 2);
    assert!(!conn.ensure_reader());
    server.write_all(&reply(2, 222)).unwrap();
    match conn.wait_reply(2, &sync, None) {
        Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
        _ => panic!("no reply to 2"),
    }
    assert_eq!(conn.state.lock().linger_wakeups, wakeups);
    // The next asynchronous request wakes the same thread: none is
    // started for it.
    let again = Arc::new(DeferredSlot::new(true));
    conn.bind(3, again.dispatcher(), None);
    let (tx, rx) = std::sync::mpsc::channel();
    let seen = again.clone();
    assert!(again
        .on_ready(Notify::Continue(Box::new(move || {
            let _ = tx.send((seen.take(), std::thread::current().id()));
        })))
        .is_none());
    assert!(!conn.ensure_reader());
    server.write_all(&reply(3, 333)).unwrap();
    let (outcome, same) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(same, thread);
    match outcome {
        Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 333),
        _ => panic!("no reply to 3"),
    }
    // Closing the connection ends the reader.
    conn.close(GiopVersion::V1_2);
    let deadline = Instant::now() + Duration::from_secs(60);
    while conn.state.lock().reader {
        assert!(Instant::now() < deadline, "the reader never ended");
        std::thread::yield_now();
    }
}

#[test]
fn a_close_writes_what_is_queued_then_close_connection_before_it_shuts() {
    use armillary_testkit::giop::split_messages;
    use std::io::Read;
    let (conn, mut server) = connected();
    // Another thread writes (this test plays it): a message sent now
    // queues behind it, and so does the close's CloseConnection.
    conn.outbox.lock().writing = true;
    let message = reply(7, 777);
    conn.send(&message.clone().into(), Outgoing::default(), Caller::Waits)
        .unwrap();
    let closer = {
        let conn = conn.clone();
        std::thread::spawn(move || conn.close(GiopVersion::V1_2))
    };
    armillary_testkit::wait_until("the close queues CloseConnection", || {
        conn.outbox.lock().shut
    });
    // The writing thread, its own write done, writes what queued.
    conn.write_queued();
    closer.join().unwrap();
    // The server gets the message, then CloseConnection, then the end.
    let mut received = Vec::new();
    server.read_to_end(&mut received).unwrap();
    let messages = split_messages(&received);
    assert_eq!(messages.len(), 2, "{received:?}");
    assert_eq!(messages[0], message);
    let close = armillary_giop::giop::Message::decode(&messages[1]).unwrap();
    assert!(matches!(close.body, MessageBody::CloseConnection));
}

#[test]
fn the_reader_thread_wakes_at_the_earliest_deadline_and_not_for_nothing() {
    use crate::transport::reply::deferred::DeferredSlot;
    let (conn, _server) = connected();
    // An asynchronous request with a far deadline: its reader thread
    // reads for a moment (`POLL_READ`), then waits for bytes, or that
    // deadline.
    let patient = Arc::new(DeferredSlot::new(true));
    let far = Instant::now() + Duration::from_secs(3600);
    conn.bind(1, patient.dispatcher(), Some(far));
    assert!(conn.ensure_reader());
    let turns = || conn.state.lock().reader_turns;
    armillary_testkit::wait_until("the reader waits for bytes", || {
        conn.state.lock().socket_waits >= 1
    });
    // Nothing comes and nothing is due: it does not wake (a reader
    // that looked at deadlines, or read, every so often would have,
    // many times).
    let waiting = turns();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(turns(), waiting, "the reader woke with nothing due");
    // A request bound with an earlier deadline wakes it: that request
    // ends at its deadline, while the first still waits.
    let hasty = Arc::new(DeferredSlot::new(true));
    let soon = Instant::now() + Duration::from_millis(20);
    conn.bind(2, hasty.dispatcher(), Some(soon));
    armillary_testkit::wait_until("the hasty request times out", || hasty.is_ready());
    assert!(matches!(
        hasty.take(),
        Some(Awaited::TimedOut { sent: true, .. })
    ));
    assert!(!patient.is_ready());
    assert!(conn.state.lock().dispatchers.contains(1));
    conn.close(GiopVersion::V1_2);
    assert!(matches!(
        patient.take(),
        Some(Awaited::Closed(Closed::Orderly))
    ));
}

#[test]
fn a_closing_connection_ends_every_deferred_request() {
    use crate::transport::reply::deferred::DeferredSlot;
    let (conn, server) = connected();
    let slots: Vec<_> = (1..=3)
        .map(|id| {
            let slot = Arc::new(DeferredSlot::default());
            conn.bind(id, slot.dispatcher(), None);
            slot
        })
        .collect();
    drop(server);
    assert!(conn.wait_until(None, |_| false));
    for slot in &slots {
        assert!(matches!(slot.take(), Some(Awaited::Closed(Closed::Broken))));
    }
    // Bound after the close: told at once.
    let after = Arc::new(DeferredSlot::default());
    conn.bind(4, after.dispatcher(), None);
    assert!(matches!(
        after.take(),
        Some(Awaited::Closed(Closed::Broken))
    ));
}

#[test]
fn a_read_timeout_is_set_again_only_when_the_one_set_is_too_long_or_far_too_short() {
    let ms = Duration::from_millis;
    // Nothing set and nothing wanted, or the one set still fits.
    assert!(!needs_new_timeout(None, None));
    assert!(!needs_new_timeout(Some(ms(50)), Some(ms(50))));
    assert!(!needs_new_timeout(Some(ms(49)), Some(ms(50))));
    assert!(!needs_new_timeout(Some(ms(25)), Some(ms(50))));
    // Longer than wanted: the read would outlast its deadline.
    assert!(needs_new_timeout(Some(ms(50)), Some(ms(49))));
    // Less than half: the reader would wake too often.
    assert!(needs_new_timeout(Some(ms(24)), Some(ms(50))));
    // Between a timeout and none.
    assert!(needs_new_timeout(None, Some(ms(50))));
    assert!(needs_new_timeout(Some(ms(50)), None));
}
