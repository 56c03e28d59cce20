//! Faults a client meets, and what each call reports: a server killed in
//! the middle of a request, a refused connection, a CloseConnection with
//! requests pending, a persistent server killed and restarted on its
//! endpoint, a half-open connection (the peer answers nothing and does not
//! close), a server that stops reading, a hung server under the call
//! timeout, and messages beyond the client's `-ORBMaxMessageSize`.
//!
//! The "servers" are Armillary ORBs (in-process, or this test binary
//! re-run as a child process, see `child_server`) or raw TCP listeners
//! playing a misbehaving server. Waits are bounded polls; timings never
//! decide a result, except generous upper bounds that show a call does not
//! hang.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use armillary::config::{ConcurrencyModel, OrbConfig, TransportMux};
use armillary::giop::giop::{
    FrameDecoder, FrameLimits, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus,
};
use armillary::giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};
use armillary::{ObjectRef, Orb, Servant, ServerRequest};
use armillary_giop::cdr::CdrError;
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::raw::HeldServer;
use armillary_testkit::{wait_for_file, Peer};

/// A gate that `hang` waits behind until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cond: Condvar,
    waiting: AtomicUsize,
}

impl Gate {
    fn wait(&self) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cond.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cond.notify_all();
    }
}

/// `echo_long` returns its argument; `hang` waits behind the gate (and,
/// in a child server, tells the parent through a file first).
struct Hangs {
    gate: Arc<Gate>,
    hang_marker: Option<PathBuf>,
}

impl Servant for Hangs {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Hangs:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Hangs:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        match req.operation() {
            "echo_long" => {
                let v = req.args().read_long().map_err(bad)?;
                req.results().write_long(v);
            }
            "hang" => {
                if let Some(marker) = &self.hang_marker {
                    let _ = std::fs::write(marker, "hanging");
                }
                self.gate.wait();
                req.results().write_long(-1);
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

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

fn hang(obj: &ObjectRef) -> Result<i32, SystemException> {
    obj.invoke_plain("hang", &|_| Ok(()), |r| r.read_long())
}

fn client(call_timeout: Option<Duration>) -> Orb {
    Orb::with_config(client_config(call_timeout)).unwrap()
}

fn client_config(call_timeout: Option<Duration>) -> OrbConfig {
    OrbConfig::new()
        .collocation(armillary::config::Collocation::None)
        .call_timeout(call_timeout)
}

fn assert_exception(
    result: Result<i32, SystemException>,
    kind: SystemExceptionKind,
    minor: u32,
    completed: CompletionStatus,
) {
    let e = result.expect_err("the call fails");
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (kind, minor, completed),
        "{e:?}"
    );
}

/// A free loopback port (bound and released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A reference to `key` at 127.0.0.1:`port`, GIOP 1.2.
fn reference_at(orb: &Orb, port: u16, key: &str) -> ObjectRef {
    orb.string_to_object(&format!("corbaloc::1.2@127.0.0.1:{port}/{key}"))
        .unwrap()
}

// ---------------------------------------------------------------------------
// A child process serving `Hangs` on a persistent POA at a fixed port.

const CHILD_ENV: &str = "ARMILLARY_FAULTS_CHILD";

/// Not a test: when this binary is re-run with `CHILD_ENV` set (by
/// `ChildServer::start`), this serves until killed.
#[test]
fn child_server() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    use armillary::poa::{IdAssignmentPolicy, LifespanPolicy, Policy};
    let mut parts = spec.split('|');
    let port: u16 = parts.next().unwrap().parse().unwrap();
    let ior_file = PathBuf::from(parts.next().unwrap());
    let marker = PathBuf::from(parts.next().unwrap());
    let (orb, _) = Orb::init([
        "-ORBListenEndpoints",
        &format!("iiop://127.0.0.1:{port}"),
        "-ORBConcurrency",
        "thread-pool:2",
    ])
    .unwrap();
    let root = orb.root_poa();
    let poa = root
        .create_poa(
            "faults",
            Some(root.manager()),
            &[
                Policy::Lifespan(LifespanPolicy::Persistent),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    let servant = Hangs {
        gate: Arc::default(),
        hang_marker: Some(marker),
    };
    poa.activate_object_with_id(b"hangs", Arc::new(servant))
        .unwrap();
    root.manager().activate().unwrap();
    let obj = poa.id_to_reference(b"hangs").unwrap();
    let tmp = ior_file.with_extension("tmp");
    std::fs::write(&tmp, format!("{}\n", orb.object_to_string(&obj))).unwrap();
    std::fs::rename(&tmp, &ior_file).unwrap();
    orb.run().unwrap();
}

struct ChildServer {
    peer: Peer,
    ior: String,
    marker: PathBuf,
}

impl ChildServer {
    fn start(port: u16, tag: &str) -> ChildServer {
        let dir = std::env::temp_dir();
        let stem = format!("armillary-faults-{}-{tag}", std::process::id());
        let ior_file = dir.join(format!("{stem}.ior"));
        let marker = dir.join(format!("{stem}.hang"));
        let _ = std::fs::remove_file(&ior_file);
        let _ = std::fs::remove_file(&marker);
        let peer = Peer(
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_server", "--nocapture", "--test-threads=1"])
                .env(
                    CHILD_ENV,
                    format!("{port}|{}|{}", ior_file.display(), marker.display()),
                )
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let ior = wait_for_file(&ior_file);
        let _ = std::fs::remove_file(&ior_file);
        ChildServer { peer, ior, marker }
    }

    /// Kills the server at once (no CloseConnection, no orderly close).
    fn kill(mut self) {
        self.peer.0.kill().unwrap();
        self.peer.0.wait().unwrap();
        let _ = std::fs::remove_file(&self.marker);
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_for_marker(path: &Path) {
    wait_for("the server to start the request", || path.exists());
}

#[test]
fn a_server_killed_mid_request_gives_comm_failure_completed_maybe() {
    let server = ChildServer::start(free_port(), "killed");
    let orb = client(None);
    let obj = orb.string_to_object(&server.ior).unwrap();
    assert_eq!(echo(&obj, 5).unwrap(), 5);
    let call = {
        let obj = obj.clone();
        std::thread::spawn(move || hang(&obj))
    };
    wait_for_marker(&server.marker);
    server.kill();
    assert_exception(
        call.join().unwrap(),
        SystemExceptionKind::CommFailure,
        minor::CONNECTION_LOST,
        CompletionStatus::Maybe,
    );
    // Nothing listens any more: the next call is refused.
    assert_exception(
        echo(&obj, 6),
        SystemExceptionKind::Transient,
        minor::CONNECT_FAILED,
        CompletionStatus::No,
    );
    orb.destroy();
}

#[test]
fn a_refused_connection_gives_transient_completed_no() {
    let orb = client(None);
    let obj = reference_at(&orb, free_port(), "Nobody");
    assert_exception(
        echo(&obj, 1),
        SystemExceptionKind::Transient,
        minor::CONNECT_FAILED,
        CompletionStatus::No,
    );
    // A oneway is refused the same way.
    let e = obj.invoke_oneway("echo_long", &|_| Ok(())).unwrap_err();
    assert_eq!(
        (e.kind(), e.completed()),
        (SystemExceptionKind::Transient, CompletionStatus::No)
    );
    orb.destroy();
}

#[test]
fn a_persistent_server_killed_and_restarted_is_called_again() {
    let port = free_port();
    let first = ChildServer::start(port, "restart-1");
    let orb = client(None);
    let obj = orb.string_to_object(&first.ior).unwrap();
    assert_eq!(echo(&obj, 1).unwrap(), 1);
    first.kill();
    let second = ChildServer::start(port, "restart-2");
    assert_eq!(second.ior, orb.object_to_string(&obj), "same reference");
    // The cached connection died with the first server while idle: the
    // client finds that out before using it and connects again.
    for v in 2..10 {
        assert_eq!(echo(&obj, v).unwrap(), v);
    }
    second.kill();
    orb.destroy();
}

// ---------------------------------------------------------------------------
// Raw TCP peers playing a misbehaving server.

/// One request as a raw server sees it.
struct Received {
    id: u32,
    operation: String,
    arg: Option<i32>,
    response_expected: bool,
}

/// Reads the next request from `stream` (None at its end or on garbage).
fn next_request(stream: &mut TcpStream, decoder: &mut FrameDecoder) -> Option<Received> {
    loop {
        if let Some(frame) = decoder.poll_frame() {
            let (msg, mut body) = frame.decode().ok()?;
            let MessageBody::Request(h) = msg.body else {
                continue;
            };
            return Some(Received {
                id: h.request_id,
                arg: body.read_long().ok(),
                response_expected: h.response_expected(),
                operation: h.operation.into(),
            });
        }
        let mut buf = [0u8; 4096];
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => decoder.handle_bytes(&buf[..n]).ok()?,
        }
    }
}

fn reply_bytes(id: u32, value: i32) -> Vec<u8> {
    let mut b = MessageBuilder::new(
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

fn close_connection_bytes() -> Vec<u8> {
    MessageBuilder::new(
        GiopVersion::V1_2,
        ByteOrder::NATIVE,
        &MessageBody::CloseConnection,
    )
    .unwrap()
    .finish(false)
}

fn decoder() -> FrameDecoder {
    FrameDecoder::new(FrameLimits::default())
}

/// Serves `echo_long` on every connection after the first `skip`, in a
/// thread per connection, recording each argument it answers.
fn echo_connections(listener: TcpListener, answered: Arc<Mutex<Vec<i32>>>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let answered = answered.clone();
            std::thread::spawn(move || {
                let mut decoder = decoder();
                while let Some(r) = next_request(&mut stream, &mut decoder) {
                    if r.operation == "echo_long" {
                        let v = r.arg.unwrap_or(0);
                        answered.lock().unwrap().push(v);
                        if r.response_expected && stream.write_all(&reply_bytes(r.id, v)).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn requests_pending_at_a_close_connection_are_sent_again_and_run_once() {
    const CALLS: i32 = 6;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Every call on one connection (the muxed transport).
    let orb = Orb::with_config(client_config(None).transport_mux(TransportMux::Muxed)).unwrap();
    let obj = reference_at(&orb, port, "Echo");
    let callers: Vec<_> = (0..CALLS)
        .map(|v| {
            let obj = obj.clone();
            std::thread::spawn(move || echo(&obj, v))
        })
        .collect();
    // The first connection takes every request, answers none of them and
    // says CloseConnection: GIOP promises the client nothing was run.
    let (mut first, _) = listener.accept().unwrap();
    let mut d = decoder();
    let mut seen = Vec::new();
    while seen.len() < CALLS as usize {
        let r = next_request(&mut first, &mut d).expect("every request arrives");
        seen.push(r.arg.unwrap());
    }
    seen.sort();
    assert_eq!(seen, (0..CALLS).collect::<Vec<_>>());
    first.write_all(&close_connection_bytes()).unwrap();
    drop(first);
    // Later connections run and answer them.
    let answered = Arc::new(Mutex::new(Vec::new()));
    echo_connections(listener, answered.clone());
    let mut results: Vec<i32> = callers
        .into_iter()
        .map(|c| c.join().unwrap().expect("re-sent and answered"))
        .collect();
    results.sort();
    assert_eq!(results, (0..CALLS).collect::<Vec<_>>());
    let mut answered = answered.lock().unwrap().clone();
    answered.sort();
    assert_eq!(answered, (0..CALLS).collect::<Vec<_>>(), "each ran once");
    orb.destroy();
}

#[test]
fn a_half_open_connection_times_out_and_is_replaced() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let orb = client(Some(Duration::from_millis(300)));
    let obj = reference_at(&orb, port, "Echo");
    let call = {
        let obj = obj.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            (echo(&obj, 1), started.elapsed())
        })
    };
    // The peer takes the request, then neither answers nor closes: to the
    // client it is a peer gone without FIN.
    let (mut silent, _) = listener.accept().unwrap();
    let mut d = decoder();
    assert_eq!(next_request(&mut silent, &mut d).unwrap().arg, Some(1));
    let (result, took) = call.join().unwrap();
    assert_exception(
        result,
        SystemExceptionKind::Timeout,
        minor::CALL_TIMEOUT,
        CompletionStatus::Maybe,
    );
    assert!(took < Duration::from_secs(30), "the call hung ({took:?})");
    // The next call does not go to the silent connection: a new one
    // carries it.
    let answered = Arc::new(Mutex::new(Vec::new()));
    echo_connections(listener, answered.clone());
    assert_eq!(echo(&obj, 2).unwrap(), 2);
    assert_eq!(*answered.lock().unwrap(), [2]);
    drop(silent);
    orb.destroy();
}

#[test]
fn a_server_that_stops_reading_times_out_the_send() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let orb = client(Some(Duration::from_millis(300)));
    let obj = reference_at(&orb, port, "Echo");
    let call = {
        let obj = obj.clone();
        std::thread::spawn(move || {
            // Far more than the socket buffers hold (and within the
            // client's message size limit).
            let big = vec![7u8; 32 << 20];
            obj.invoke_plain("take", &|w| w.write_octet_seq(&big), |r| r.read_long())
        })
    };
    // Accepted, never read.
    let (reader_gone, _) = listener.accept().unwrap();
    let result = call.join().unwrap();
    let e = result.unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Timeout, "{e:?}");
    assert_eq!(e.minor(), minor::CALL_TIMEOUT);
    // The whole request never left: the server cannot have run it.
    assert_eq!(e.completed(), CompletionStatus::No);
    drop(reader_gone);
    orb.destroy();
}

#[test]
fn a_late_reply_is_dropped_and_the_connection_serves_other_calls() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Long enough for the other call's round trip to land inside it. The
    // two calls share one connection (the muxed transport): the late
    // reply arrives where another call is read.
    let orb = Orb::with_config(
        client_config(Some(Duration::from_secs(2))).transport_mux(TransportMux::Muxed),
    )
    .unwrap();
    let obj = reference_at(&orb, port, "Echo");
    let (hung_tx, hung_rx) = mpsc::channel();
    let accepted = Arc::new(AtomicUsize::new(0));
    let server = {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            accepted.fetch_add(1, Ordering::SeqCst);
            listener.set_nonblocking(true).unwrap();
            let mut d = decoder();
            let mut hung = None;
            while let Some(r) = next_request(&mut s, &mut d) {
                match r.operation.as_str() {
                    // Answered only once the caller gave up (told by the
                    // test), with a value nobody may see.
                    "hang" => {
                        hung = Some(r.id);
                        hung_tx.send(()).unwrap();
                    }
                    "late" => {
                        let id = hung.take().unwrap();
                        s.write_all(&reply_bytes(id, -999)).unwrap();
                    }
                    _ => s.write_all(&reply_bytes(r.id, r.arg.unwrap_or(0))).unwrap(),
                }
            }
            if listener.accept().is_ok() {
                accepted.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let hung_call = {
        let obj = obj.clone();
        std::thread::spawn(move || hang(&obj))
    };
    hung_rx.recv().unwrap();
    // Another call on the same connection while the first waits.
    assert_eq!(echo(&obj, 10).unwrap(), 10);
    assert_exception(
        hung_call.join().unwrap(),
        SystemExceptionKind::Timeout,
        minor::CALL_TIMEOUT,
        CompletionStatus::Maybe,
    );
    // Now the late reply comes; then more calls, each with its own value.
    obj.invoke_oneway("late", &|_| Ok(())).unwrap();
    for v in 11..20 {
        assert_eq!(echo(&obj, v).unwrap(), v);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "one connection");
    orb.destroy();
    server.join().unwrap();
}

#[test]
fn a_reply_whose_header_fields_do_not_decode_ends_its_call_with_marshal() {
    // The client hands a reply to its call by the request id alone (read
    // where a GIOP 1.2 reply has it); the call decodes the rest. A reply
    // whose status is no status is then the call's MARSHAL, not a reply
    // dropped while the call waits for ever (the timeout here only bounds
    // a regression).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let orb = client(Some(Duration::from_secs(60)));
    let obj = reference_at(&orb, port, "Echo");
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut d = decoder();
        while let Some(r) = next_request(&mut s, &mut d) {
            let mut reply = reply_bytes(r.id, r.arg.unwrap_or(0));
            if r.arg == Some(1) {
                // The reply status (after the header and the request id).
                reply[16..20].copy_from_slice(&99u32.to_ne_bytes());
            }
            if s.write_all(&reply).is_err() {
                return;
            }
        }
    });
    assert_exception(
        echo(&obj, 1),
        SystemExceptionKind::Marshal,
        minor::MALFORMED,
        CompletionStatus::Maybe,
    );
    // The connection serves the next call.
    assert_eq!(echo(&obj, 2).unwrap(), 2);
    orb.destroy();
    server.join().unwrap();
}

// ---------------------------------------------------------------------------
// An Armillary server that hangs.

fn hanging_server(concurrency: ConcurrencyModel) -> (Orb, ObjectRef, Arc<Gate>) {
    let orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(concurrency),
    )
    .unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let gate = Arc::new(Gate::default());
    let servant: Arc<dyn Servant> = Arc::new(Hangs {
        gate: gate.clone(),
        hang_marker: None,
    });
    let obj = poa.servant_to_reference(&servant).unwrap();
    (orb, obj, gate)
}

#[test]
fn a_hung_server_under_a_call_timeout_gives_timeout_completed_maybe() {
    let (server, obj, gate) = hanging_server(ConcurrencyModel::ThreadPool(4));
    let orb = client(Some(Duration::from_millis(200)));
    let obj = orb
        .string_to_object(&server.object_to_string(&obj))
        .unwrap();
    let started = Instant::now();
    assert_exception(
        hang(&obj),
        SystemExceptionKind::Timeout,
        minor::CALL_TIMEOUT,
        CompletionStatus::Maybe,
    );
    assert!(started.elapsed() < Duration::from_secs(30), "the call hung");
    // Several callers at once, hung and not: each hung one times out
    // (whichever of them leads the reads), the others are answered.
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let obj = obj.clone();
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    hang(&obj)
                } else {
                    echo(&obj, i)
                }
            })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        let result = c.join().unwrap();
        if i % 2 == 0 {
            assert_exception(
                result,
                SystemExceptionKind::Timeout,
                minor::CALL_TIMEOUT,
                CompletionStatus::Maybe,
            );
        } else {
            // An answer, or a timeout if the server's threads were all
            // hung; never anything else.
            match result {
                Ok(v) => assert_eq!(v, i as i32),
                Err(e) => assert_eq!(e.kind(), SystemExceptionKind::Timeout, "{e:?}"),
            }
        }
    }
    // Once the server recovers, calls succeed again; its late replies
    // went nowhere.
    gate.open();
    wait_for("the server to answer again", || echo(&obj, 42) == Ok(42));
    for v in 0..20 {
        assert_eq!(echo(&obj, v).unwrap(), v);
    }
    orb.destroy();
    server.destroy();
}

#[test]
fn the_call_timeout_option_is_read_from_orb_init() {
    let (orb, rest) = Orb::init(["app", "-ORBClientCallTimeout", "150"]).unwrap();
    assert_eq!(rest, ["app"]);
    let (server, obj, gate) = hanging_server(ConcurrencyModel::SingleThreadedReactive);
    let obj = orb
        .string_to_object(&server.object_to_string(&obj))
        .unwrap();
    assert_exception(
        hang(&obj),
        SystemExceptionKind::Timeout,
        minor::CALL_TIMEOUT,
        CompletionStatus::Maybe,
    );
    gate.open();
    wait_for("the server to answer again", || echo(&obj, 7) == Ok(7));
    orb.destroy();
    server.destroy();
}

/// A client ORB whose messages may be at most 64 KiB (and whose calls
/// end after a minute: only a broken client reaches that).
fn limited_client() -> Orb {
    Orb::with_config(limited_config()).unwrap()
}

fn limited_config() -> OrbConfig {
    OrbConfig::new()
        .collocation(armillary::config::Collocation::None)
        .max_message_size(64 << 10)
        .call_timeout(Duration::from_secs(60))
}

/// The long argument of an `echo_long` request the held server received.
fn echoed(request: &armillary_testkit::raw::Received) -> i32 {
    let at = request.body_offset;
    i32::from_ne_bytes(request.bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn a_reply_beyond_the_message_size_limit_ends_its_call_with_marshal_and_closes_the_connection() {
    let server = HeldServer::start();
    // Both calls on one connection (the muxed transport), so that the
    // close reaches the other.
    let orb = Orb::with_config(limited_config().transport_mux(TransportMux::Muxed)).unwrap();
    let obj = reference_at(&orb, server.port(), "held");
    let calls: Vec<_> = (1..=2)
        .map(|v| {
            let obj = obj.clone();
            std::thread::spawn(move || echo(&obj, v))
        })
        .collect();
    let requests = [server.next(), server.next()];
    assert!(requests.iter().all(|r| r.conn == 0));
    // The reply to the call that sent 1 is 128 KiB: beyond the limit.
    let big = requests.iter().find(|r| echoed(r) == 1).unwrap();
    server.answer_with(std::slice::from_ref(big), |_, body| {
        body.write_octet_seq(&vec![0; 128 << 10]).unwrap();
    });
    let mut outcomes = calls.into_iter().map(|c| c.join().unwrap());
    assert_exception(
        outcomes.next().unwrap(),
        SystemExceptionKind::Marshal,
        minor::MESSAGE_SIZE_EXCEEDED,
        CompletionStatus::Yes,
    );
    // The connection closed under the other call.
    assert_exception(
        outcomes.next().unwrap(),
        SystemExceptionKind::CommFailure,
        minor::CONNECTION_LOST,
        CompletionStatus::Maybe,
    );
    server.wait_closed(0);
    // The next call goes on a new connection, and a reply within the
    // limit is taken.
    let call = {
        let obj = obj.clone();
        std::thread::spawn(move || echo(&obj, 3))
    };
    let request = server.next();
    assert_eq!(request.conn, 1);
    server.answer_with(&[request], |_, body| body.write_long(3));
    assert_eq!(call.join().unwrap(), Ok(3));
    orb.destroy();
}

#[test]
fn a_request_beyond_the_message_size_limit_is_refused_before_it_is_sent() {
    let server = HeldServer::start();
    let orb = limited_client();
    let obj = reference_at(&orb, server.port(), "held");
    let big = vec![7u8; 128 << 10];
    assert_exception(
        obj.invoke_plain("take", &|w| w.write_octet_seq(&big), |r| r.read_long()),
        SystemExceptionKind::Marshal,
        minor::MESSAGE_SIZE_EXCEEDED,
        CompletionStatus::No,
    );
    let future = obj.send_future(
        "take",
        |w| w.write_octet_seq(&[7; 128 << 10]),
        |reply| match reply {
            armillary::runtime::ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            armillary::runtime::ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    );
    assert_exception(
        pollster::block_on(future),
        SystemExceptionKind::Marshal,
        minor::MESSAGE_SIZE_EXCEEDED,
        CompletionStatus::No,
    );
    // Nothing reached the server: the first request it gets is the next
    // one.
    let call = {
        let obj = obj.clone();
        std::thread::spawn(move || echo(&obj, 4))
    };
    let request = server.next();
    assert_eq!(request.header.operation, "echo_long");
    server.answer_with(&[request], |_, body| body.write_long(4));
    assert_eq!(call.join().unwrap(), Ok(4));
    orb.destroy();
}
