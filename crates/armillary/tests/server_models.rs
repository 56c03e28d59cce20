//! The server's concurrency models over IIOP on loopback, as the
//! application sees them: with `ApplicationThreads` the ORB serves requests
//! only on threads that call `Orb::run` or `Orb::perform_work`
//! (`work_pending` tells when there is something to do); the threaded
//! models need no help. And idle connections: every model closes them with
//! CloseConnection once nothing is in progress on them, and an Armillary
//! client re-sends transparently on a new connection. And the order each
//! model keeps between the requests of one connection (documented on
//! `ConcurrencyModel`): a oneway has run before the next request in the
//! reactive, thread-per-connection and single-driver application models;
//! a thread pool may answer a later request while a oneway still runs;
//! requests read together run on as many free pool threads. And an idle
//! server has no timer: nothing wakes it but work, and shutdown wakes it.
//!
//! No assertion depends on timing: waits for the server are bounded by
//! generous deadlines that only a broken server reaches.

use armillary::WaitForCompletion;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::giop::{Message, MessageBody, MessageBuilder, MessageType, RequestHeader};
use armillary::giop::system_exception::{CompletionStatus, SystemException, SystemExceptionKind};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest};
use armillary_giop::cdr::CdrError;
use armillary_giop::giop::TargetAddress;
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::wait_until;

/// Far beyond anything a working server needs; reached only on failure.
const DEADLINE: Duration = armillary_testkit::WAIT_LIMIT;

/// Echoes longs, records which threads ran its upcalls, and parks requests
/// on `park` until the test releases them.
#[derive(Default)]
struct Echo {
    upcalls: Mutex<Vec<ThreadId>>,
    parked: Mutex<bool>,
    released: Condvar,
    parking: AtomicUsize,
    pings: AtomicI32,
}

impl Echo {
    fn upcall_threads(&self) -> Vec<ThreadId> {
        self.upcalls.lock().unwrap().clone()
    }

    fn release(&self) {
        *self.parked.lock().unwrap() = false;
        self.released.notify_all();
    }
}

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Echo:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        self.upcalls
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        match req.operation() {
            "echo_long" => {
                let v = req.args().read_long().map_err(bad)?;
                req.results().write_long(v);
            }
            "park" => {
                // Blocks until `release` (bounded, so a broken test ends).
                let v = req.args().read_long().map_err(bad)?;
                let mut parked = self.parked.lock().unwrap();
                *parked = true;
                self.parking.fetch_add(1, Ordering::SeqCst);
                let (_parked, _) = self
                    .released
                    .wait_timeout_while(parked, DEADLINE, |p| *p)
                    .unwrap();
                req.results().write_long(v);
            }
            "ping" => {
                self.pings.fetch_add(1, Ordering::SeqCst);
            }
            "pings" => req.results().write_long(self.pings.load(Ordering::SeqCst)),
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

fn server(config: OrbConfig) -> (Orb, Arc<Echo>, ObjectRef) {
    let orb = Orb::with_config(config).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let echo = Arc::new(Echo::default());
    let servant: Arc<dyn Servant> = echo.clone();
    let obj = poa.servant_to_reference(&servant).unwrap();
    (orb, echo, obj)
}

fn model(concurrency: ConcurrencyModel) -> OrbConfig {
    OrbConfig::new()
        .collocation(armillary::config::Collocation::None)
        .concurrency(concurrency)
}

fn client() -> Orb {
    Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None)).unwrap()
}

fn long_call(obj: &ObjectRef, op: &str, v: i32) -> Result<i32, SystemException> {
    obj.invoke(
        op,
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

/// The application's main loop: does ORB work while there is some, until
/// `done` (bounded by [`DEADLINE`]).
fn drive_until(orb: &Orb, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "the condition never came true");
        if orb.work_pending().unwrap() {
            orb.perform_work().unwrap();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[test]
fn application_threads_serve_requests_only_in_perform_work() {
    let (server_orb, echo, obj) = server(model(ConcurrencyModel::ApplicationThreads));
    // Listening, but nobody has connected: nothing to do, and perform_work
    // comes back anyway.
    assert!(!server_orb.work_pending().unwrap());
    server_orb.perform_work().unwrap();

    let ior = server_orb.object_to_string(&obj);
    let caller = std::thread::spawn(move || {
        let orb = client();
        let remote = orb.string_to_object(&ior).unwrap();
        let got: Vec<i32> = (0..5)
            .map(|i| long_call(&remote, "echo_long", i).unwrap())
            .collect();
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        got
    });
    // The connection (then the request) waits for the application: the ORB
    // has no thread of its own that could have run anything.
    wait_until("the server has work", || server_orb.work_pending().unwrap());
    assert!(echo.upcall_threads().is_empty());

    drive_until(&server_orb, || caller.is_finished());
    assert_eq!(caller.join().unwrap(), [0, 1, 2, 3, 4]);
    let me = std::thread::current().id();
    let threads = echo.upcall_threads();
    assert_eq!(threads.len(), 5);
    assert!(
        threads.iter().all(|t| *t == me),
        "every upcall ran inside perform_work, on this thread"
    );
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn run_serves_on_the_calling_thread_until_shutdown() {
    // The option form; no endpoint, so the server starts with the first
    // reference, after `run` began waiting for one.
    let (server_orb, _) = Orb::init(["-ORBConcurrency", "application"]).unwrap();
    let runner = {
        let orb = server_orb.clone();
        std::thread::spawn(move || {
            orb.run().unwrap();
            std::thread::current().id()
        })
    };
    let poa = server_orb.root_poa();
    poa.manager().activate().unwrap();
    let echo = Arc::new(Echo::default());
    let servant: Arc<dyn Servant> = echo.clone();
    let obj = poa.servant_to_reference(&servant).unwrap();

    let orb = client();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    for i in 0..3 {
        assert_eq!(long_call(&remote, "echo_long", i).unwrap(), i);
    }
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
    let run_thread = runner.join().unwrap();
    let threads = echo.upcall_threads();
    assert_eq!(threads.len(), 3);
    assert!(threads.iter().all(|t| *t == run_thread));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn held_requests_are_released_through_perform_work() {
    let (server_orb, echo, obj) = server(model(ConcurrencyModel::ApplicationThreads));
    let manager = server_orb.root_poa().manager();
    manager
        .hold_requests(armillary::WaitForCompletion::No)
        .unwrap();
    let ior = server_orb.object_to_string(&obj);
    let caller = std::thread::spawn(move || {
        let orb = client();
        let remote = orb.string_to_object(&ior).unwrap();
        let got = long_call(&remote, "echo_long", 42);
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        got
    });
    drive_until(&server_orb, || manager.held_count() == 1);
    assert!(echo.upcall_threads().is_empty());
    // Activating queues the held request as work for the application.
    manager.activate().unwrap();
    assert!(server_orb.work_pending().unwrap());
    drive_until(&server_orb, || caller.is_finished());
    assert_eq!(caller.join().unwrap().unwrap(), 42);
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn threaded_models_leave_no_work_to_the_application() {
    for concurrency in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPool(2),
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ThreadPerRequest(None),
        ConcurrencyModel::WorkerPool {
            workers: 2,
            queue: 8,
        },
        ConcurrencyModel::ThreadPerObject,
        ConcurrencyModel::ApplicationThreads,
    ] {
        let (server_orb, _, obj) = server(model(concurrency));
        if concurrency != ConcurrencyModel::ApplicationThreads {
            let orb = client();
            let remote = orb
                .string_to_object(&server_orb.object_to_string(&obj))
                .unwrap();
            assert_eq!(long_call(&remote, "echo_long", 3).unwrap(), 3);
            // The server's threads did it all; perform_work only yields.
            assert!(!server_orb.work_pending().unwrap(), "{concurrency:?}");
            server_orb.perform_work().unwrap();
            orb.shutdown(WaitForCompletion::Yes).unwrap();
        }
        server_orb.shutdown(WaitForCompletion::Yes).unwrap();
        for e in [
            server_orb.work_pending().unwrap_err(),
            server_orb.perform_work().unwrap_err(),
        ] {
            assert_eq!(
                (e.kind(), e.minor()),
                (
                    SystemExceptionKind::BadInvOrder,
                    armillary::minor::ORB_SHUT_DOWN
                ),
                "{concurrency:?}"
            );
        }
    }
}

/// Reads one whole GIOP message; `None` at EOF.
fn read_message(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    armillary_testkit::giop::read_message(stream)
}

fn message_type(bytes: &[u8]) -> MessageType {
    Message::decode(bytes).unwrap().header.message_type
}

/// A GIOP 1.2 request for `operation` with one long argument.
fn raw_request(id: u32, key: &[u8], operation: &str, arg: i32) -> Vec<u8> {
    raw_message(id, key, operation, arg, 3)
}

/// A GIOP 1.2 oneway request (no response expected) for `operation`.
fn raw_oneway(id: u32, key: &[u8], operation: &str, arg: i32) -> Vec<u8> {
    raw_message(id, key, operation, arg, 0)
}

fn raw_message(id: u32, key: &[u8], operation: &str, arg: i32, response_flags: u8) -> Vec<u8> {
    let request = MessageBody::Request(RequestHeader {
        request_id: id,
        response_flags,
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: operation.into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let mut b = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Little, &request).unwrap();
    b.body().write_long(arg);
    b.finish(false)
}

/// Reads the next message, which must be the reply to `id` carrying a long.
fn read_long_reply(raw: &mut TcpStream, id: u32) -> i32 {
    let bytes = read_message(raw).unwrap().expect("a reply");
    let reply = Message::decode(&bytes).unwrap();
    let MessageBody::Reply(h) = &reply.body else {
        panic!("{reply:?}")
    };
    assert_eq!(h.request_id, id);
    reply.body_reader(&bytes).read_long().unwrap()
}

fn raw_connection(orb: &Orb) -> TcpStream {
    let (host, port) = orb
        .endpoints()
        .first()
        .map(|e| (e.host().to_owned(), e.port()))
        .unwrap();
    let raw = TcpStream::connect((host.as_str(), port)).unwrap();
    raw.set_read_timeout(Some(DEADLINE)).unwrap();
    raw
}

fn key_of(obj: &ObjectRef) -> Vec<u8> {
    obj.ior().iiop_profiles()[0].object_key.clone()
}

/// Reads the reply to `id`, then (the connection idling) CloseConnection,
/// then EOF.
fn expect_reply_then_orderly_close(raw: &mut TcpStream, id: u32, value: i32) {
    assert_eq!(read_long_reply(raw, id), value);
    let close = read_message(raw).unwrap().expect("CloseConnection");
    assert_eq!(message_type(&close), MessageType::CloseConnection);
    assert_eq!(read_message(raw).unwrap(), None, "then the server closes");
}

/// Idle connections are closed, but never one with a request in progress:
/// an upcall still running (connection A) or a request parked by a holding
/// POA manager (connection B) keeps a connection open well past the idle
/// timeout; once answered, the connection idles and is closed in order.
#[test]
fn idle_close_waits_for_requests_in_progress() {
    for concurrency in [
        ConcurrencyModel::ThreadPool(2),
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ThreadPerRequest(None),
        ConcurrencyModel::WorkerPool {
            workers: 2,
            queue: 8,
        },
        ConcurrencyModel::ThreadPerObject,
    ] {
        let (server_orb, echo, obj) =
            server(model(concurrency).idle_timeout(Duration::from_secs(1)));
        let root = server_orb.root_poa();
        let held_poa = root.create_poa("held", None, &[]).unwrap();
        let held_id = held_poa.activate_object(Arc::new(Echo::default())).unwrap();
        let held_obj = held_poa.id_to_reference(&held_id).unwrap();

        let mut a = raw_connection(&server_orb);
        a.write_all(&raw_request(1, &key_of(&obj), "park", 10))
            .unwrap();
        wait_until("the request is parked", || {
            echo.parking.load(Ordering::SeqCst) == 1
        });
        let mut b = raw_connection(&server_orb);
        b.write_all(&raw_request(2, &key_of(&held_obj), "echo_long", 20))
            .unwrap();
        wait_until("the request is held", || {
            held_poa.manager().held_count() == 1
        });

        // Well past the idle timeout (and a few idle checks), neither
        // connection has heard anything: a correct server passes however
        // long this takes, a broken one has sent CloseConnection by now.
        a.set_read_timeout(Some(Duration::from_millis(2500)))
            .unwrap();
        let mut byte = [0u8; 1];
        let quiet = a.read(&mut byte).unwrap_err();
        assert!(
            matches!(quiet.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{concurrency:?}: {quiet}"
        );
        b.set_nonblocking(true).unwrap();
        let quiet = b.read(&mut byte).unwrap_err();
        assert_eq!(quiet.kind(), ErrorKind::WouldBlock, "{concurrency:?}");
        b.set_nonblocking(false).unwrap();
        a.set_read_timeout(Some(DEADLINE)).unwrap();

        echo.release();
        held_poa.manager().activate().unwrap();
        expect_reply_then_orderly_close(&mut a, 1, 10);
        expect_reply_then_orderly_close(&mut b, 2, 20);
        server_orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// A TCP relay between the client and the server that counts connections
/// and reports each CloseConnection the server sends, by connection number.
struct Relay {
    port: u16,
    connections: Arc<AtomicUsize>,
    closes: mpsc::Receiver<usize>,
}

fn relay(server_port: u16) -> Relay {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let (tx, closes) = mpsc::channel();
    let counter = connections.clone();
    // The acceptor lives as long as the test process.
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                return;
            };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c_in, &mut s_out);
                let _ = s_out.shutdown(std::net::Shutdown::Write);
            });
            let (mut s_in, mut c_out) = (server, client);
            let tx = tx.clone();
            std::thread::spawn(move || {
                while let Ok(Some(message)) = read_message(&mut s_in) {
                    if c_out.write_all(&message).is_err() {
                        break;
                    }
                    if message_type(&message) == MessageType::CloseConnection {
                        let _ = tx.send(n);
                    }
                }
                let _ = c_out.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    Relay {
        port,
        connections,
        closes,
    }
}

/// The idle-close test of `iiop.rs`, for every threaded model, with a
/// relay that shows the close really happened on the client's connection
/// before the next call went out.
#[test]
fn threaded_models_close_idle_connections_and_calls_still_succeed() {
    for concurrency in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPool(2),
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ThreadPerRequest(None),
        ConcurrencyModel::WorkerPool {
            workers: 2,
            queue: 8,
        },
        ConcurrencyModel::ThreadPerObject,
    ] {
        let (server_orb, _, obj) = server(model(concurrency).idle_timeout(Duration::from_secs(1)));
        let server_port = server_orb.endpoints()[0].port();
        let relay = relay(server_port);
        let key: String = key_of(&obj).iter().map(|b| format!("%{b:02x}")).collect();
        let orb = client();
        let remote = orb
            .string_to_object(&format!("corbaloc:iiop:1.2@127.0.0.1:{}/{key}", relay.port))
            .unwrap();
        assert_eq!(long_call(&remote, "echo_long", 1).unwrap(), 1);
        // The server closes the idle connection with CloseConnection...
        assert_eq!(
            relay.closes.recv_timeout(DEADLINE),
            Ok(0),
            "{concurrency:?}"
        );
        // ...and the client, which has not read it yet, sends its next call on
        // the closed connection, reads the CloseConnection instead of a reply
        // and sends the call again on a new connection, transparently.
        for i in 0..5 {
            assert_eq!(long_call(&remote, "echo_long", i).unwrap(), i);
        }
        assert!(relay.connections.load(Ordering::SeqCst) >= 2);
        // Closed again, and again survived.
        let second = relay.closes.recv_timeout(DEADLINE).unwrap();
        assert!(second >= 1);
        assert_eq!(long_call(&remote, "echo_long", 7).unwrap(), 7);
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        server_orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// With `ApplicationThreads` the idle checks are ORB work too.
#[test]
fn application_threads_close_idle_connections_in_perform_work() {
    let (server_orb, _, obj) =
        server(model(ConcurrencyModel::ApplicationThreads).idle_timeout(Duration::from_secs(1)));
    let mut raw = raw_connection(&server_orb);
    raw.write_all(&raw_request(5, &key_of(&obj), "echo_long", 50))
        .unwrap();
    let reader = std::thread::spawn(move || expect_reply_then_orderly_close(&mut raw, 5, 50));
    drive_until(&server_orb, || reader.is_finished());
    reader.join().unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Starts driving `orb` (an `ApplicationThreads` server) from one thread
/// of its own, which `Orb::run` keeps until the ORB shuts down.
fn one_driver(orb: &Orb) -> std::thread::JoinHandle<()> {
    let orb = orb.clone();
    std::thread::spawn(move || orb.run().unwrap())
}

/// The models that keep a connection's order run a oneway before anything
/// the client sends after it on that connection: the two-way that counts
/// the pings sees every ping sent before it, whether they came in the same
/// read as the count or in earlier ones.
#[test]
fn ordered_models_run_a_oneway_before_the_next_request() {
    for concurrency in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPerConnection,
        // The client's connection on a thread, the raw one on the reactor.
        ConcurrencyModel::ThreadPerConnectionUpTo(1),
        ConcurrencyModel::ApplicationThreads,
    ] {
        let (server_orb, _, obj) = server(model(concurrency));
        let driver =
            (concurrency == ConcurrencyModel::ApplicationThreads).then(|| one_driver(&server_orb));
        // Through an Armillary client: one connection for every call.
        let orb = client();
        let remote = orb
            .string_to_object(&server_orb.object_to_string(&obj))
            .unwrap();
        for i in 1..=50 {
            for _ in 0..3 {
                remote
                    .invoke_oneway("ping", &|w| {
                        w.write_long(i);
                        Ok(())
                    })
                    .unwrap();
            }
            assert_eq!(
                long_call(&remote, "pings", 0).unwrap(),
                3 * i,
                "{concurrency:?}"
            );
        }
        // On a raw connection, the oneways and the count in one write.
        let mut raw = raw_connection(&server_orb);
        let key = key_of(&obj);
        for i in 1..=20u32 {
            let mut burst = Vec::new();
            for n in 0..4 {
                burst.extend(raw_oneway(i * 10 + n, &key, "ping", 0));
            }
            burst.extend(raw_request(i * 10 + 9, &key, "pings", 0));
            raw.write_all(&burst).unwrap();
            let want = 150 + 4 * i as i32;
            assert_eq!(
                read_long_reply(&mut raw, i * 10 + 9),
                want,
                "{concurrency:?}"
            );
        }
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        server_orb.shutdown(WaitForCompletion::Yes).unwrap();
        if let Some(driver) = driver {
            driver.join().unwrap();
        }
    }
}

/// Oneway pacing (`-ORBOnewayPacing`, on by default): a reading thread
/// that read nothing but oneways wakes the server's pacer thread before
/// it waits again (a connection's own thread, or the reactor's in the
/// reactive model); one that read a two-way request wakes nothing, and a
/// model that hands requests to other threads (a worker pool) has no
/// pacing. With pacing on or off, every oneway runs before the two-way
/// sent after it. A stream of 3,000 oneways (about 90 bytes each) takes at least
/// four reads of 64 KiB, and the count is sent after the last: at least
/// one read holds nothing but oneways, whatever the timing.
#[test]
fn a_reading_thread_wakes_the_pacer_only_after_reading_nothing_but_oneways() {
    for (concurrency, pacing, paces) in [
        (ConcurrencyModel::ThreadPerConnectionUpTo(4), true, true),
        (ConcurrencyModel::ThreadPerConnectionUpTo(4), false, false),
        (ConcurrencyModel::SingleThreadedReactive, true, true),
        (
            ConcurrencyModel::WorkerPool {
                workers: 2,
                queue: 100_000,
            },
            true,
            false,
        ),
    ] {
        let what = format!("{concurrency:?}, pacing {pacing}");
        let (server_orb, _, obj) = server(model(concurrency).oneway_pacing(pacing));
        let wakeups = || server_orb.server_stats().unwrap().pacer_wakeups;
        let orb = client();
        let remote = orb
            .string_to_object(&server_orb.object_to_string(&obj))
            .unwrap();
        for i in 0..50 {
            assert_eq!(long_call(&remote, "echo_long", i).unwrap(), i);
        }
        assert_eq!(wakeups(), 0, "two-way calls alone: {what}");
        for round in 1..=3 {
            for i in 0..3000 {
                remote
                    .invoke_oneway("ping", &|w| {
                        w.write_long(i);
                        Ok(())
                    })
                    .unwrap();
            }
            // The worker pool keeps no order: its count may lag.
            wait_until("every oneway ran", || {
                long_call(&remote, "pings", 0).unwrap() == 3000 * round
            });
        }
        if paces {
            assert!(wakeups() > 0, "a stream of oneways woke the pacer: {what}");
        } else {
            assert_eq!(wakeups(), 0, "no pacing: {what}");
        }
        orb.shutdown(WaitForCompletion::Yes).unwrap();
        server_orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// The default model, thread per connection up to N: the first N
/// connections open at a time are each read by a thread of their own,
/// those beyond by the one reactor thread; a thread freed by a closed
/// connection goes to the next connection accepted.
#[test]
fn thread_per_connection_up_to_n_reads_the_rest_on_the_reactor() {
    assert_eq!(
        OrbConfig::new().get_concurrency(),
        ConcurrencyModel::ThreadPerConnectionUpTo(ConcurrencyModel::DEFAULT_CONNECTION_THREADS)
    );
    let (server_orb, echo, obj) =
        server(model(ConcurrencyModel::ThreadPerConnectionUpTo(2)).idle_timeout(None));
    let key = key_of(&obj);
    let stats = || server_orb.server_stats().unwrap();
    // One call on a connection; returns the thread its upcall ran on.
    let call = |raw: &mut TcpStream, id: u32| {
        raw.write_all(&raw_request(id, &key, "echo_long", id as i32))
            .unwrap();
        assert_eq!(read_long_reply(raw, id), id as i32);
        *echo.upcall_threads().last().unwrap()
    };
    let mut raws: Vec<TcpStream> = Vec::new();
    let mut threads = Vec::new();
    for n in 0..4u32 {
        let mut raw = raw_connection(&server_orb);
        threads.push(call(&mut raw, n + 1));
        raws.push(raw);
        assert_eq!(stats().connection_threads, (n as usize + 1).min(2));
    }
    assert_eq!(stats().connections_open, 4);
    // Two threads of their own, and the reactor's for the other two.
    assert_ne!(threads[0], threads[1]);
    assert_eq!(threads[2], threads[3]);
    assert!(!threads[..2].contains(&threads[2]));
    // Each connection goes on being read where it was first.
    for (i, raw) in raws.iter_mut().enumerate() {
        assert_eq!(call(raw, 10 + i as u32), threads[i]);
    }
    // A closed threaded connection's thread ends; the next connection
    // accepted gets a thread again.
    drop(raws.remove(0));
    wait_until("the first connection's thread ends", || {
        stats().connection_threads == 1
    });
    let mut fresh = raw_connection(&server_orb);
    let on = call(&mut fresh, 20);
    assert_eq!(stats().connection_threads, 2);
    assert!(!threads[1..].contains(&on));
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A thread pool keeps no order between a connection's requests: while a
/// oneway still runs, the next request on the same connection is read and
/// answered by another thread of the pool. A oneway sent with
/// `SyncScope::WithTarget` has run when the call returns, in a pool too.
#[test]
fn a_thread_pool_answers_a_later_request_while_a_oneway_runs() {
    use armillary::giop::giop::SyncScope;
    let (server_orb, echo, obj) = server(model(ConcurrencyModel::ThreadPool(2)));
    let key = key_of(&obj);
    let mut raw = raw_connection(&server_orb);
    raw.write_all(&raw_oneway(1, &key, "park", 0)).unwrap();
    wait_until("the oneway runs", || {
        echo.parking.load(Ordering::SeqCst) == 1
    });
    raw.write_all(&raw_request(2, &key, "echo_long", 7))
        .unwrap();
    assert_eq!(read_long_reply(&mut raw, 2), 7);
    assert!(
        *echo.parked.lock().unwrap(),
        "the oneway is still running: the later request overtook it"
    );
    echo.release();

    let orb = client();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    for i in 1..=50 {
        remote
            .invoke_oneway_with(SyncScope::WithTarget, "ping", &|w| {
                w.write_long(i);
                Ok(())
            })
            .unwrap();
        assert_eq!(long_call(&remote, "pings", 0).unwrap(), i);
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

// The models that hand requests to threads of their own (thread per
// request, worker pool, thread per object) and the POA-level choice of
// model: each test checks the model's defining property on one raw
// connection, with latches and bounded waits.

/// A servant whose `wait` upcalls block until the test opens it, counting
/// how many are inside at once and logging arguments in the order the
/// upcalls began; `echo_long` answers at once.
#[derive(Default)]
struct Latch {
    state: Mutex<LatchState>,
    changed: Condvar,
}

#[derive(Default)]
struct LatchState {
    inside: usize,
    max_inside: usize,
    open: bool,
    log: Vec<i32>,
    finished: usize,
    threads: Vec<String>,
}

impl Latch {
    /// Waits (bounded) until `n` upcalls are inside at once.
    fn wait_inside(&self, n: usize) {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, DEADLINE, |s| s.inside < n)
            .unwrap();
        assert!(
            state.inside >= n,
            "{} upcalls inside, not {n}",
            state.inside
        );
    }

    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.changed.notify_all();
    }

    fn max_inside(&self) -> usize {
        self.state.lock().unwrap().max_inside
    }

    fn log(&self) -> Vec<i32> {
        self.state.lock().unwrap().log.clone()
    }

    fn finished(&self) -> usize {
        self.state.lock().unwrap().finished
    }

    /// The names of the threads that ran its upcalls.
    fn threads(&self) -> Vec<String> {
        self.state.lock().unwrap().threads.clone()
    }
}

impl Servant for Latch {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Latch:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Latch:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        let v = req.args().read_long().map_err(bad)?;
        let name = std::thread::current().name().unwrap_or("").to_owned();
        match req.operation() {
            "wait" => {
                let mut state = self.state.lock().unwrap();
                state.inside += 1;
                state.max_inside = state.max_inside.max(state.inside);
                state.log.push(v);
                state.threads.push(name);
                self.changed.notify_all();
                let (mut state, _) = self
                    .changed
                    .wait_timeout_while(state, DEADLINE, |s| !s.open)
                    .unwrap();
                state.inside -= 1;
                state.finished += 1;
            }
            "echo_long" => {
                let mut state = self.state.lock().unwrap();
                state.log.push(v);
                state.threads.push(name);
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        req.results().write_long(v);
        Ok(())
    }
}

/// A latch servant and the object key of its object.
type LatchObject = (Arc<Latch>, Vec<u8>);

/// A server with one `Latch` per name in `objects`, activated in the root
/// POA, with their object keys.
fn latch_server(config: OrbConfig, objects: &[&str]) -> (Orb, Vec<LatchObject>) {
    let orb = Orb::with_config(config).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let latches = objects
        .iter()
        .map(|_| {
            let latch = Arc::new(Latch::default());
            let servant: Arc<dyn Servant> = latch.clone();
            let obj = poa.servant_to_reference(&servant).unwrap();
            (latch, key_of(&obj))
        })
        .collect();
    (orb, latches)
}

/// The next message, a reply: its request id, and its long result or its
/// system exception.
fn read_any_reply(raw: &mut TcpStream) -> (u32, Result<i32, SystemException>) {
    let bytes = read_message(raw).unwrap().expect("a reply");
    let reply = Message::decode(&bytes).unwrap();
    let MessageBody::Reply(h) = &reply.body else {
        panic!("{reply:?}")
    };
    let mut body = reply.body_reader(&bytes);
    let outcome = match h.reply_status {
        armillary::giop::giop::ReplyStatus::NoException => Ok(body.read_long().unwrap()),
        armillary::giop::giop::ReplyStatus::SystemException => {
            Err(SystemException::decode_body(&mut body).unwrap())
        }
        other => panic!("unexpected reply status {other:?}"),
    };
    (h.request_id, outcome)
}

/// How many threads of this process have a name starting with `prefix`
/// (Linux truncates names to 15 bytes).
fn threads_named(prefix: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .filter(|name| name.trim_end().starts_with(prefix))
        .count()
}

fn is_server_busy(outcome: &Result<i32, SystemException>) -> bool {
    matches!(outcome, Err(e) if e.kind() == SystemExceptionKind::Transient
        && e.minor() == armillary::minor::SERVER_BUSY
        && e.completed() == CompletionStatus::No)
}

#[test]
fn thread_per_request_runs_one_connections_requests_in_parallel() {
    let (orb, latches) = latch_server(model(ConcurrencyModel::ThreadPerRequest(None)), &["a"]);
    let (latch, key) = &latches[0];
    let mut raw = raw_connection(&orb);
    for id in 1..=3 {
        raw.write_all(&raw_request(id, key, "wait", id as i32))
            .unwrap();
    }
    // All three are inside at once: one connection, three threads.
    latch.wait_inside(3);
    latch.open();
    let mut ids: Vec<u32> = (0..3)
        .map(|_| {
            let (id, outcome) = read_any_reply(&mut raw);
            assert_eq!(outcome.unwrap(), id as i32);
            id
        })
        .collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3]);
    assert!(latch
        .threads()
        .iter()
        .all(|name| name == "armillary-request"));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    wait_until("the request threads have ended", || {
        threads_named("armillary-reque") == 0
    });
}

#[test]
fn thread_per_request_answers_transient_at_its_cap_and_shutdown_waits() {
    let (orb, latches) = latch_server(model(ConcurrencyModel::ThreadPerRequest(Some(2))), &["a"]);
    let (latch, key) = &latches[0];
    let mut raw = raw_connection(&orb);
    raw.write_all(&raw_request(1, key, "wait", 1)).unwrap();
    raw.write_all(&raw_request(2, key, "wait", 2)).unwrap();
    latch.wait_inside(2);
    // At the cap: answered at once, without running.
    raw.write_all(&raw_request(3, key, "echo_long", 3)).unwrap();
    let (id, outcome) = read_any_reply(&mut raw);
    assert_eq!(id, 3);
    assert!(is_server_busy(&outcome), "{outcome:?}");
    assert!(!latch.log().contains(&3));
    // Shutdown waits for the two running upcalls.
    let shutdown = {
        let (orb, latch) = (orb.clone(), latch.clone());
        std::thread::spawn(move || {
            orb.shutdown(WaitForCompletion::Yes).unwrap();
            latch.finished()
        })
    };
    latch.open();
    assert_eq!(
        shutdown.join().unwrap(),
        2,
        "shutdown returned before the upcalls ended"
    );
}

#[test]
fn worker_pool_answers_transient_when_its_queue_is_full() {
    let (orb, latches) = latch_server(
        model(ConcurrencyModel::WorkerPool {
            workers: 1,
            queue: 1,
        }),
        &["a"],
    );
    let (latch, key) = &latches[0];
    let mut raw = raw_connection(&orb);
    raw.write_all(&raw_request(1, key, "wait", 1)).unwrap();
    // The only worker is busy with request 1.
    latch.wait_inside(1);
    // Request 2 fills the queue; request 3 finds it full.
    raw.write_all(&raw_request(2, key, "wait", 2)).unwrap();
    raw.write_all(&raw_request(3, key, "echo_long", 3)).unwrap();
    let (id, outcome) = read_any_reply(&mut raw);
    assert_eq!(id, 3);
    assert!(is_server_busy(&outcome), "{outcome:?}");
    latch.open();
    // The worker takes the queue in arrival order.
    assert_eq!(read_any_reply(&mut raw), (1, Ok(1)));
    assert_eq!(read_any_reply(&mut raw), (2, Ok(2)));
    assert_eq!(latch.log(), [1, 2]);
    assert!(latch
        .threads()
        .iter()
        .all(|name| name == "armillary-worker"));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    wait_until("the workers have ended", || {
        threads_named("armillary-worke") == 0
    });
}

#[test]
fn thread_per_object_serializes_one_object_and_runs_two_in_parallel() {
    let (orb, latches) = latch_server(model(ConcurrencyModel::ThreadPerObject), &["a", "b"]);
    let ((a, key_a), (b, key_b)) = (&latches[0], &latches[1]);
    let mut raw = raw_connection(&orb);
    raw.write_all(&raw_request(1, key_a, "wait", 1)).unwrap();
    raw.write_all(&raw_request(2, key_a, "wait", 2)).unwrap();
    raw.write_all(&raw_request(3, key_b, "wait", 3)).unwrap();
    // A's first request and B's run at once.
    a.wait_inside(1);
    b.wait_inside(1);
    b.open();
    assert_eq!(read_any_reply(&mut raw), (3, Ok(3)));
    a.open();
    let mut rest = [read_any_reply(&mut raw), read_any_reply(&mut raw)];
    rest.sort_by_key(|(id, _)| *id);
    assert_eq!(rest, [(1, Ok(1)), (2, Ok(2))]);
    // A's requests ran one at a time, in arrival order.
    assert_eq!(a.max_inside(), 1);
    assert_eq!(a.log(), [1, 2]);
    // An object with nothing to do keeps no thread.
    wait_until("the objects' threads have ended", || {
        threads_named("armillary-objec") == 0
    });
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_poa_level_model_overrides_the_orbs() {
    use armillary::poa::Policy;
    let orb = Orb::with_config(model(ConcurrencyModel::SingleThreadedReactive)).unwrap();
    let root = orb.root_poa();
    root.manager().activate().unwrap();
    let slow_poa = root
        .create_poa(
            "slow",
            Some(root.manager()),
            &[Policy::Concurrency(ConcurrencyModel::WorkerPool {
                workers: 2,
                queue: 8,
            })],
        )
        .unwrap();
    let activate = |poa: &armillary::poa::Poa| {
        let latch = Arc::new(Latch::default());
        let servant: Arc<dyn Servant> = latch.clone();
        let id = poa.activate_object(servant).unwrap();
        (latch, key_of(&poa.id_to_reference(id).unwrap()))
    };
    let (slow, slow_key) = activate(&slow_poa);
    let (fast, fast_key) = activate(&root);
    let mut raw = raw_connection(&orb);
    raw.write_all(&raw_request(1, &slow_key, "wait", 1))
        .unwrap();
    slow.wait_inside(1);
    // The slow POA's upcall runs on its worker pool, so the reactive
    // ORB's reactor thread still serves the fast POA on the same
    // connection (with the ORB's model alone, this reply would wait).
    raw.write_all(&raw_request(2, &fast_key, "echo_long", 2))
        .unwrap();
    assert_eq!(read_any_reply(&mut raw), (2, Ok(2)));
    slow.open();
    assert_eq!(read_any_reply(&mut raw), (1, Ok(1)));
    assert_eq!(slow.threads(), ["armillary-worker"]);
    assert_eq!(fast.threads(), ["armillary-reactor-0"]);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_single_thread_poa_serializes_its_upcalls_under_thread_per_request() {
    use armillary::poa::{Policy, ThreadPolicy};
    let orb = Orb::with_config(model(ConcurrencyModel::ThreadPerRequest(Some(2)))).unwrap();
    let root = orb.root_poa();
    root.manager().activate().unwrap();
    let poa = root
        .create_poa(
            "single",
            Some(root.manager()),
            &[Policy::Thread(ThreadPolicy::SingleThread)],
        )
        .unwrap();
    let latch = Arc::new(Latch::default());
    let servant: Arc<dyn Servant> = latch.clone();
    let key = key_of(
        &poa.id_to_reference(poa.activate_object(servant).unwrap())
            .unwrap(),
    );
    let mut raw = raw_connection(&orb);
    raw.write_all(&raw_request(1, &key, "wait", 1)).unwrap();
    raw.write_all(&raw_request(2, &key, "wait", 2)).unwrap();
    latch.wait_inside(1);
    // Both requests have a thread (the cap of 2 is reached: a third is
    // refused), yet only one is inside the POA.
    raw.write_all(&raw_request(3, &key, "echo_long", 3))
        .unwrap();
    let (id, outcome) = read_any_reply(&mut raw);
    assert_eq!(id, 3);
    assert!(is_server_busy(&outcome), "{outcome:?}");
    latch.open();
    let mut replies = [read_any_reply(&mut raw), read_any_reply(&mut raw)];
    replies.sort_by_key(|(id, _)| *id);
    assert_eq!(replies, [(1, Ok(1)), (2, Ok(2))]);
    assert_eq!(latch.max_inside(), 1);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// `wait_for_release` blocks until `release` has run (bounded by
/// [`DEADLINE`]) and answers 1, or 0 if it never ran; `release` answers
/// at once.
#[derive(Default)]
struct Rendezvous {
    released: Mutex<bool>,
    changed: Condvar,
}

impl Servant for Rendezvous {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Rendezvous:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Rendezvous:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        let _ = req.args().read_long().map_err(bad)?;
        let released = match req.operation() {
            "wait_for_release" => {
                let state = self.released.lock().unwrap();
                let (state, _) = self
                    .changed
                    .wait_timeout_while(state, DEADLINE, |released| !*released)
                    .unwrap();
                *state
            }
            "release" => {
                *self.released.lock().unwrap() = true;
                self.changed.notify_all();
                true
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        };
        req.results().write_long(i32::from(released));
        Ok(())
    }
}

/// A thread pool runs each of the requests read together from one
/// connection on a free thread of its own: a long poll and the request
/// that ends it, sent in one write, both finish (the thread that read
/// them hands the second to another thread before it runs the first).
#[test]
fn a_thread_pool_runs_requests_read_together_on_several_threads() {
    let orb = Orb::with_config(model(ConcurrencyModel::ThreadPool(2))).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let rendezvous = Arc::new(Rendezvous::default());
    let servant: Arc<dyn Servant> = rendezvous.clone();
    let key = key_of(&poa.servant_to_reference(&servant).unwrap());
    let mut raw = raw_connection(&orb);
    for round in 0..3u32 {
        let (poll, release) = (round * 2 + 1, round * 2 + 2);
        let batch = [
            raw_request(poll, &key, "wait_for_release", 0),
            raw_request(release, &key, "release", 0),
        ]
        .concat();
        raw.write_all(&batch).unwrap();
        let mut replies = [read_any_reply(&mut raw), read_any_reply(&mut raw)];
        replies.sort_by_key(|(id, _)| *id);
        assert_eq!(
            replies,
            [(poll, Ok(1)), (release, Ok(1))],
            "the long poll was released by the request read with it"
        );
        *rendezvous.released.lock().unwrap() = false;
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// An idle server has no timer: its threads (a thread pool's, or the
/// application's in `Orb::run`) wait for events without a timeout, so
/// none of their waits times out while nothing happens and an application
/// ORB has no work pending; shutdown then ends those waits by waking them
/// (nothing else could).
#[test]
fn an_idle_server_waits_without_a_timer_and_shutdown_wakes_it() {
    for (concurrency, drivers) in [
        (ConcurrencyModel::ThreadPool(4), 0),
        (ConcurrencyModel::ApplicationThreads, 3),
        (ConcurrencyModel::ApplicationThreads, 0),
    ] {
        let (server_orb, _, obj) = server(model(concurrency));
        let runners: Vec<_> = (0..drivers).map(|_| one_driver(&server_orb)).collect();
        // Some work first: a client's call, and its connection closing.
        let caller = {
            let ior = server_orb.object_to_string(&obj);
            std::thread::spawn(move || {
                let orb = client();
                let remote = orb.string_to_object(&ior).unwrap();
                let got = long_call(&remote, "echo_long", 1);
                orb.shutdown(WaitForCompletion::Yes).unwrap();
                got
            })
        };
        let closed = || server_orb.server_stats().unwrap().connections_open == 0;
        if concurrency == ConcurrencyModel::ApplicationThreads && drivers == 0 {
            drive_until(&server_orb, || caller.is_finished() && closed());
        }
        assert_eq!(caller.join().unwrap(), Ok(1));
        wait_until("the server has closed the connection", closed);
        let before = server_orb.server_stats().unwrap().timed_out_waits;
        // Longer than the ticks (every 500 ms) an idle server used to wake
        // up for.
        std::thread::sleep(Duration::from_millis(1600));
        assert_eq!(
            server_orb.server_stats().unwrap().timed_out_waits,
            before,
            "{concurrency:?} with {drivers} drivers: an idle server woke up on a timer"
        );
        if drivers == 0 {
            assert!(
                !server_orb.work_pending().unwrap(),
                "{concurrency:?}: work for an idle server"
            );
        }
        let shutdown = {
            let orb = server_orb.clone();
            std::thread::spawn(move || orb.shutdown(WaitForCompletion::Yes))
        };
        wait_until("shutdown has returned", || shutdown.is_finished());
        shutdown.join().unwrap().unwrap();
        for runner in runners {
            wait_until("Orb::run has returned", || runner.is_finished());
            runner.join().unwrap();
        }
    }
}
