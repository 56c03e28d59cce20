//! Hostile clients against the server, in every concurrency model, with
//! raw `std::net::TcpStream`s: peers that close in the middle of a
//! message, half-close after a request, drip bytes or stall, never read
//! their replies, flood the server past its descriptor limit or its
//! connection limit, or send messages beyond the size and memory limits.
//! Each case checks what the hostile client gets, that other clients are
//! still served, and that the server lets go of what it held.
//!
//! Descriptor exhaustion runs the server as a child process (this test
//! binary again, running the ignored `child_server` test) under a lowered
//! `RLIMIT_NOFILE`.
//!
//! No assertion depends on timing: waits are bounded by a generous
//! deadline that only a broken server reaches. The one bound that involves
//! time (accept calls while the server is out of descriptors) grows with
//! the time measured, so a slow machine only loosens it.

use armillary::WaitForCompletion;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::giop::{Message, MessageBody, MessageBuilder, MessageType, RequestHeader};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::{Orb, Servant, ServerRequest};
use armillary_giop::cdr::CdrError;
use armillary_giop::giop::TargetAddress;
use armillary_giop::{ByteOrder, GiopVersion};

/// Far beyond anything a working server needs; reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

const MODELS: [ConcurrencyModel; 4] = [
    ConcurrencyModel::SingleThreadedReactive,
    ConcurrencyModel::ThreadPool(4),
    ConcurrencyModel::ThreadPerConnection,
    ConcurrencyModel::ApplicationThreads,
];

/// Echoes, makes replies of a requested size, and reports the server's
/// statistics.
#[derive(Default)]
struct Echo {
    orb: Mutex<Option<Orb>>,
    calls: AtomicU64,
    /// `park` blocks while this is true.
    parked: Mutex<bool>,
    released: Condvar,
    parking: AtomicU64,
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
        self.calls.fetch_add(1, Ordering::SeqCst);
        match req.operation() {
            "echo_long" => {
                let v = req.args().read_long().map_err(bad)?;
                req.results().write_long(v);
            }
            // A reply of `n` octets.
            "blob" => {
                let n = req.args().read_long().map_err(bad)?;
                let bytes = vec![7u8; n.max(0) as usize];
                req.results().write_octet_seq(&bytes).map_err(bad)?;
            }
            // The size of an octet sequence argument.
            "size" => {
                let n = req.args().read_octet_seq().map_err(bad)?.len();
                req.results().write_long(n as i32);
            }
            // Blocks until the test releases it (bounded by the deadline).
            "park" => {
                let v = req.args().read_long().map_err(bad)?;
                let mut parked = self.parked.lock().unwrap();
                *parked = true;
                self.parking.fetch_add(1, Ordering::SeqCst);
                let _ = self
                    .released
                    .wait_timeout_while(parked, DEADLINE, |p| *p)
                    .unwrap();
                req.results().write_long(v);
            }
            "stats" => {
                let orb = self.orb.lock().unwrap().clone();
                let stats = orb.and_then(|o| o.server_stats()).unwrap_or_default();
                let w = req.results();
                w.write_ulonglong(stats.accept_calls);
                w.write_ulonglong(stats.accept_failures);
                w.write_ulonglong(stats.connections_open as u64);
                w.write_ulonglong(stats.partial_bytes as u64);
                w.write_ulonglong(self.calls.load(Ordering::SeqCst));
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

/// A server in one model, served by threads of its own or (application
/// model) by a thread in `Orb::run`.
struct Server {
    orb: Orb,
    echo: Arc<Echo>,
    key: Vec<u8>,
    port: u16,
    runner: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(config: OrbConfig) -> Server {
        let application = config.get_concurrency() == ConcurrencyModel::ApplicationThreads;
        let orb = Orb::with_config(config).unwrap();
        let poa = orb.root_poa();
        poa.manager().activate().unwrap();
        let echo = Arc::new(Echo::default());
        *echo.orb.lock().unwrap() = Some(orb.clone());
        let servant: Arc<dyn Servant> = echo.clone();
        let obj = poa.servant_to_reference(&servant).unwrap();
        let key = obj.ior().iiop_profiles()[0].object_key.clone();
        let port = orb.endpoints()[0].port();
        let runner = application.then(|| {
            let orb = orb.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        Server {
            orb,
            echo,
            key,
            port,
            runner,
        }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s
    }

    fn stats(&self) -> armillary::ServerStats {
        self.orb.server_stats().unwrap()
    }

    /// A fresh client is served.
    fn serves(&self) {
        let mut c = self.connect();
        c.write_all(&request(1, &self.key, "echo_long", &42i32.to_le_bytes()))
            .unwrap();
        assert_eq!(reply_long(&mut c, 1), 42);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.orb.shutdown(WaitForCompletion::Yes).unwrap();
        if let Some(r) = self.runner.take() {
            let _ = r.join();
        }
        *self.echo.orb.lock().unwrap() = None;
    }
}

/// A configuration for `model` with the timeouts off, so that only the
/// behaviour under test can close a connection.
fn config(model: ConcurrencyModel) -> OrbConfig {
    OrbConfig::new()
        .collocation(armillary::config::Collocation::None)
        .concurrency(model)
        .idle_timeout(None)
        .message_timeout(None)
}

/// A GIOP 1.2 little-endian request whose body is `args`.
fn request(id: u32, key: &[u8], operation: &str, args: &[u8]) -> Vec<u8> {
    let request = MessageBody::Request(RequestHeader {
        request_id: id,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: operation.into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let mut b = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Little, &request).unwrap();
    b.body().write_octets(args);
    b.finish(false)
}

/// Little-endian CDR for one sequence<octet> argument (the body of a
/// GIOP 1.2 request starts 8-aligned).
fn octet_seq(bytes: &[u8]) -> Vec<u8> {
    let mut v = (bytes.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(bytes);
    v
}

/// Reads one whole GIOP message; `None` at end of stream or reset.
fn read_message(stream: &mut TcpStream) -> Option<Vec<u8>> {
    armillary_testkit::giop::read_message(stream)
        .unwrap_or_else(|e| panic!("no message and no close within the deadline: {e}"))
}

/// The long result of the reply to `id`.
fn reply_long(stream: &mut TcpStream, id: u32) -> i32 {
    let bytes = read_message(stream).expect("a reply");
    let msg = Message::decode(&bytes).unwrap();
    let MessageBody::Reply(h) = &msg.body else {
        panic!("{msg:?}")
    };
    assert_eq!(h.request_id, id);
    msg.body_reader(&bytes).read_long().unwrap()
}

/// Reads until the server closes, and returns the types of the messages
/// it sent first.
fn until_closed(stream: &mut TcpStream) -> Vec<MessageType> {
    let mut types = Vec::new();
    while let Some(bytes) = read_message(stream) {
        types.push(Message::decode(&bytes).unwrap().header.message_type);
    }
    types
}

/// Waits until `done`, bounded by [`DEADLINE`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Defect 1: a peer that closes in the middle of a message (5 bytes of a
/// header, or 62 of a request) is closed by the server, with no timeout
/// configured; and a client that sends a whole request and shuts down
/// its sending side gets its reply, then the close. Two hundred times
/// each, so that a thread pool's race between the request and the close
/// shows (it lost 8 replies in 200).
#[test]
fn a_peer_that_closes_is_closed_and_a_half_close_still_gets_its_reply() {
    for model in MODELS {
        let server = Server::start(config(model));
        let whole = request(9, &server.key, "echo_long", &7i32.to_le_bytes());
        assert!(whole.len() > 62);
        for cut in [5, 62] {
            let mut peers: Vec<TcpStream> = (0..50)
                .map(|_| {
                    let mut c = server.connect();
                    c.write_all(&whole[..cut]).unwrap();
                    c.shutdown(Shutdown::Write).unwrap();
                    c
                })
                .collect();
            for c in &mut peers {
                // Nothing to answer: the server just closes.
                assert_eq!(until_closed(c), [], "{model:?} cut at {cut}");
            }
        }
        for round in 0..200 {
            let mut c = server.connect();
            c.write_all(&whole).unwrap();
            c.shutdown(Shutdown::Write).unwrap();
            assert_eq!(reply_long(&mut c, 9), 7, "{model:?} round {round}");
            assert_eq!(until_closed(&mut c), [], "{model:?} round {round}");
        }
        wait_until("every connection let go", || {
            server.stats().connections_open == 0
        });
        server.serves();
    }
}

/// Defect 3: a client that drips a message a byte at a time, or stops
/// half-way, gets MessageError once the message timeout has passed and is
/// closed; another client is served meanwhile. (Without the timeout, both
/// would hold their connections forever.)
#[test]
fn slow_and_stalled_senders_are_cut_off_by_the_message_timeout() {
    for model in MODELS {
        let server = Server::start(config(model).message_timeout(Duration::from_millis(300)));
        let whole = request(3, &server.key, "echo_long", &7i32.to_le_bytes());
        let mut stalled = server.connect();
        stalled.write_all(&whole[..30]).unwrap();
        let mut dripping = server.connect();
        let drip = {
            let mut writer = dripping.try_clone().unwrap();
            let whole = whole.clone();
            std::thread::spawn(move || {
                // One byte at a time, far slower than the timeout allows
                // for the whole message; stops when the server closes.
                for b in whole.iter().cycle().take(10_000) {
                    if writer.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        server.serves();
        assert_eq!(
            until_closed(&mut stalled),
            [MessageType::MessageError],
            "{model:?}"
        );
        assert_eq!(
            until_closed(&mut dripping),
            [MessageType::MessageError],
            "{model:?}"
        );
        let _ = dripping.shutdown(Shutdown::Both);
        drip.join().unwrap();
        server.serves();
        wait_until("the cut-off connections let go", || {
            server.stats().connections_open == 0
        });
    }
}

/// A client that sends requests and never reads the replies: the server
/// stops reading it once the replies queued for it reach the limit
/// (thread per connection blocks in its write), so the client's writes
/// stop being taken; then, once it reads, every reply arrives.
#[test]
fn replies_nobody_reads_stop_the_reading_not_the_server() {
    for model in MODELS {
        let server = Server::start(config(model).max_queued_reply_bytes(256 << 10));
        let reply_size = 16 << 10;
        let args = (reply_size as i32).to_le_bytes();
        let mut client = server.connect();
        client.set_nonblocking(true).unwrap();
        // Without back-pressure the server would take every request (and
        // queue a reply of 16 KiB for each); with it, writes stop being
        // taken once the socket buffers between the two are full.
        let mut sent = 0u32;
        let mut rest = None;
        let start = Instant::now();
        loop {
            assert!(
                start.elapsed() < DEADLINE,
                "{model:?}: the server kept reading"
            );
            let one = request(sent, &server.key, "blob", &args);
            match client.write(&one) {
                Ok(n) if n == one.len() => sent += 1,
                Ok(n) => {
                    rest = Some(one[n..].to_vec());
                    sent += 1;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{model:?}: {e}"),
            }
        }
        // The server ran what fits under the limit plus what one read
        // brought, far from every request sent.
        let ran = server.echo.calls.load(Ordering::SeqCst);
        assert!(ran < u64::from(sent) / 4, "{model:?}: ran {ran} of {sent}");
        // Another client is still served.
        server.serves();
        // Now read: every reply comes.
        client.set_nonblocking(false).unwrap();
        let mut reader = client.try_clone().unwrap();
        let replies = std::thread::spawn(move || {
            (0..sent)
                .map(|_| {
                    let bytes = read_message(&mut reader).expect("a reply");
                    let msg = Message::decode(&bytes).unwrap();
                    msg.body_reader(&bytes).read_octet_seq().unwrap().len()
                })
                .filter(|n| *n == reply_size)
                .count()
        });
        if let Some(rest) = rest {
            client.write_all(&rest).unwrap();
        }
        assert_eq!(replies.join().unwrap(), sent as usize, "{model:?}");
    }
}

/// With thread per connection a reply blocks its thread's write; a client
/// that does not take it within the message timeout is closed, so the
/// thread (and a shutdown) never wait on it forever.
#[test]
fn thread_per_connection_closes_a_client_that_never_takes_its_reply() {
    let server = Server::start(
        config(ConcurrencyModel::ThreadPerConnection).message_timeout(Duration::from_millis(300)),
    );
    let mut c = server.connect();
    c.write_all(&request(
        1,
        &server.key,
        "blob",
        &(64i32 << 20).to_le_bytes(),
    ))
    .unwrap();
    wait_until("the request runs", || {
        server.echo.calls.load(Ordering::SeqCst) == 1
    });
    wait_until("the connection is closed", || {
        server.stats().connections_open == 0
    });
    // Some of the reply came, then the close.
    c.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut got = 0;
    let mut buf = vec![0u8; 1 << 16];
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            break;
        }
        got += n;
    }
    assert!(got < 64 << 20, "{got}");
    server.serves();
}

/// With a thread pool, a connection whose requests in progress reach
/// `max_outstanding_requests` is not read until one is answered: with a
/// limit of one, a request sent while another is parked runs only after
/// it (without the limit another thread of the pool would read and answer
/// it first).
#[test]
fn a_connection_at_its_request_limit_is_not_read() {
    let server = Server::start(config(ConcurrencyModel::ThreadPool(4)).max_outstanding_requests(1));
    let mut c = server.connect();
    c.write_all(&request(1, &server.key, "park", &1i32.to_le_bytes()))
        .unwrap();
    wait_until("the first request is parked", || {
        server.echo.parking.load(Ordering::SeqCst) == 1
    });
    c.write_all(&request(2, &server.key, "echo_long", &2i32.to_le_bytes()))
        .unwrap();
    // Other connections are served meanwhile.
    server.serves();
    *server.echo.parked.lock().unwrap() = false;
    server.echo.released.notify_all();
    assert_eq!(reply_long(&mut c, 1), 1, "the parked request answers first");
    assert_eq!(reply_long(&mut c, 2), 2);
}

/// Beyond `max_connections`, a new connection is closed at once (not left
/// in the backlog); once one closes, new ones are served again. With
/// thread per connection, `max_connection_threads` does the same.
#[test]
fn connections_beyond_the_limit_are_closed_at_once() {
    for model in MODELS {
        for threads_limit in [false, true] {
            if threads_limit && model != ConcurrencyModel::ThreadPerConnection {
                continue;
            }
            let cfg = config(model);
            let server = Server::start(if threads_limit {
                cfg.max_connection_threads(2)
            } else {
                cfg.max_connections(2)
            });
            let mut a = server.connect();
            let mut b = server.connect();
            for (c, id) in [(&mut a, 1), (&mut b, 2)] {
                c.write_all(&request(id, &server.key, "echo_long", &5i32.to_le_bytes()))
                    .unwrap();
                assert_eq!(reply_long(c, id), 5);
            }
            let mut refused = server.connect();
            assert_eq!(until_closed(&mut refused), [], "{model:?}");
            assert_eq!(server.stats().connections_refused, 1);
            drop(a);
            wait_until("a connection let go", || {
                server.stats().connections_open == 1
            });
            server.serves();
        }
    }
}

/// Limits on what a message can make the server hold: a message larger
/// than `max_message_size`, more fragments than `max_fragments`, and
/// partly received messages beyond `max_partial_bytes` together all get
/// MessageError; the memory partly received messages held is given back
/// when their connections close.
#[test]
fn messages_beyond_the_size_fragment_and_memory_limits_get_message_error() {
    for model in MODELS {
        let server = Server::start(
            config(model)
                .max_message_size(1 << 20)
                .max_fragments(4)
                .max_partial_bytes(1 << 20),
        );
        // Too large: refused on its header alone.
        let mut big = server.connect();
        let message = request(1, &server.key, "size", &octet_seq(&vec![1; 2 << 20]));
        big.write_all(&message[..4096]).unwrap();
        assert_eq!(until_closed(&mut big), [MessageType::MessageError]);
        // Within the limit, it is served.
        let mut ok = server.connect();
        ok.write_all(&request(
            2,
            &server.key,
            "size",
            &octet_seq(&vec![1; 900 << 10]),
        ))
        .unwrap();
        assert_eq!(reply_long(&mut ok, 2), 900 << 10);

        // Too many fragments: a request in five pieces.
        let mut fragmented = server.connect();
        let whole = request(3, &server.key, "size", &octet_seq(&[9; 64]));
        let mut first = whole[..40].to_vec();
        first[6] |= 2;
        first[8..12].copy_from_slice(&28u32.to_le_bytes());
        fragmented.write_all(&first).unwrap();
        for _ in 0..4 {
            let mut fragment = b"GIOP\x01\x02\x03\x07".to_vec();
            fragment.extend_from_slice(&8u32.to_le_bytes());
            fragment.extend_from_slice(&3u32.to_le_bytes());
            fragment.extend_from_slice(&[0; 4]);
            fragmented.write_all(&fragment).unwrap();
        }
        assert_eq!(until_closed(&mut fragmented), [MessageType::MessageError]);

        // Two partial messages of 600 KiB each: together beyond the budget.
        let half = request(4, &server.key, "size", &octet_seq(&vec![1; 800 << 10]));
        let mut first = server.connect();
        first.write_all(&half[..600 << 10]).unwrap();
        wait_until("the first partial message is held", || {
            server.stats().partial_bytes >= 600 << 10
        });
        let mut second = server.connect();
        second.write_all(&half[..600 << 10]).unwrap();
        assert_eq!(until_closed(&mut second), [MessageType::MessageError]);
        // The first finishes its message and is answered.
        first.write_all(&half[600 << 10..]).unwrap();
        assert_eq!(reply_long(&mut first, 4), 800 << 10);
        // Large partial messages, then their connections close: what
        // they held is given back.
        let held: Vec<TcpStream> = (0..3)
            .map(|_| {
                let mut c = server.connect();
                c.write_all(&half[..300 << 10]).unwrap();
                c
            })
            .collect();
        wait_until("the partial messages are held", || {
            server.stats().partial_bytes >= 900 << 10
        });
        drop(held);
        wait_until("what they held is given back", || {
            server.stats().partial_bytes == 0
        });
        server.serves();
    }
}

/// A client speaking GIOP 1.3 (or 2.0) gets MessageError in GIOP 1.2,
/// the highest version both understand.
#[test]
fn a_newer_giop_version_gets_message_error_in_1_2() {
    for model in MODELS {
        let server = Server::start(config(model));
        for (major, minor) in [(1u8, 3u8), (2, 0)] {
            let mut c = server.connect();
            let mut m = request(1, &server.key, "echo_long", &1i32.to_le_bytes());
            m[4] = major;
            m[5] = minor;
            c.write_all(&m).unwrap();
            let bytes = read_message(&mut c).expect("MessageError");
            assert_eq!(&bytes[..8], b"GIOP\x01\x02\x01\x06", "{model:?}");
            assert_eq!(read_message(&mut c), None);
        }
    }
}

// Descriptor exhaustion, with the server in a child process.

/// Not a test of its own: the server the exhaustion test runs in a child
/// process (`HOSTILE_CHILD_MODEL` names the model). Prints its port and
/// object key, then serves until its standard input closes.
#[test]
#[ignore = "not a test: the server the descriptor-exhaustion test runs as a child process"]
fn child_server() {
    let Ok(model) = std::env::var("HOSTILE_CHILD_MODEL") else {
        return;
    };
    let model = match model.as_str() {
        "reactive" => ConcurrencyModel::SingleThreadedReactive,
        "pool" => ConcurrencyModel::ThreadPool(4),
        "tpc" => ConcurrencyModel::ThreadPerConnection,
        _ => ConcurrencyModel::ApplicationThreads,
    };
    let server = Server::start(config(model));
    let key: String = server.key.iter().map(|b| format!("{b:02x}")).collect();
    println!("HOSTILE-SERVER {} {key}", server.port);
    std::io::stdout().flush().unwrap();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

/// The child server, ended when dropped.
struct ChildServer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Kept open so that the child's last words do not meet a closed pipe.
    _stdout: ChildStdout,
    port: u16,
    key: Vec<u8>,
}

impl ChildServer {
    /// Starts the server for `model` under `ulimit -n descriptors`.
    fn start(model: &str, descriptors: u32) -> ChildServer {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n {descriptors} && exec \"$0\" child_server --exact --ignored --nocapture --test-threads=1"
            ))
            .arg(exe)
            .env("HOSTILE_CHILD_MODEL", model)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut out = child.stdout.take().unwrap();
        let mut text = String::new();
        let mut byte = [0u8; 1];
        let line = loop {
            assert_eq!(out.read(&mut byte).unwrap(), 1, "child ended: {text}");
            text.push(byte[0] as char);
            if byte[0] == b'\n' {
                // (libtest may print its own words before ours.)
                if let Some(at) = text.find("HOSTILE-SERVER ") {
                    break text[at..].trim_end().to_owned();
                }
            }
        };
        let mut words = line.split(' ').skip(1);
        let port = words.next().unwrap().parse().unwrap();
        let hex = words.next().unwrap();
        let key = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        ChildServer {
            child,
            stdin,
            _stdout: out,
            port,
            key,
        }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s
    }

    /// (accept calls, accept failures, connections open, upcalls), asked
    /// on `conn`.
    fn stats(&self, conn: &mut TcpStream) -> (u64, u64, u64, u64) {
        conn.write_all(&request(77, &self.key, "stats", &[]))
            .unwrap();
        let bytes = read_message(conn).expect("stats");
        let msg = Message::decode(&bytes).unwrap();
        let mut r = msg.body_reader(&bytes);
        let mut next = || r.read_ulonglong().unwrap();
        let (calls, failures, open, _partial, upcalls) = (next(), next(), next(), next(), next());
        (calls, failures, open, upcalls)
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let start = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) {
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("the child server did not shut down");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether a reply has arrived on `c` (without waiting for one).
fn has_reply(c: &TcpStream) -> bool {
    c.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let ready = matches!(c.peek(&mut byte), Ok(1));
    c.set_nonblocking(false).unwrap();
    ready
}

/// Defect 2: out of descriptors, the server does not spin (its accept
/// calls stay few while it is exhausted), and once descriptors are free
/// again it accepts the connections waiting in the backlog: closing the
/// connections it served lets the next ones in, in every model. With
/// thread per connection a connection costs one descriptor, not two.
#[test]
fn out_of_descriptors_the_server_waits_without_spinning_and_recovers() {
    let limit = 64;
    for model in ["reactive", "pool", "tpc", "application"] {
        let server = ChildServer::start(model, limit);
        let mut control = server.connect();
        let (_, failures, _, _) = server.stats(&mut control);
        assert_eq!(failures, 0, "{model}");
        // Twice as many clients as the server has descriptors, each with
        // a request waiting.
        let flood: Vec<TcpStream> = (0..2 * limit)
            .map(|i| {
                let mut c = server.connect();
                c.write_all(&request(
                    i,
                    &server.key,
                    "echo_long",
                    &(i as i32).to_le_bytes(),
                ))
                .unwrap();
                c
            })
            .collect();
        let mut exhausted = (0, 0, 0, 0);
        wait_until("the server runs out of descriptors", || {
            exhausted = server.stats(&mut control);
            exhausted.1 > 0
        });
        // Every connection it accepted gets its reply. With one
        // descriptor per connection, thread per connection serves as many
        // as the others (with two it served half).
        let served_count = exhausted.2 as usize - 1;
        assert!(
            served_count >= limit as usize / 2 + 8,
            "{model}: {exhausted:?}"
        );
        wait_until("the accepted connections are answered", || {
            flood.iter().filter(|c| has_reply(c)).count() == served_count
        });
        // A spinning acceptor makes thousands of calls a second; this one
        // tries again only when a connection closes or at a tick (twice a
        // second). The bound grows with the time measured.
        let (calls_before, ..) = server.stats(&mut control);
        let start = Instant::now();
        std::thread::sleep(Duration::from_secs(1));
        let (calls_after, failures_after, ..) = server.stats(&mut control);
        let elapsed = start.elapsed().as_secs() + 1;
        assert!(
            calls_after - calls_before <= 10 * elapsed,
            "{model}: {} accept calls in {elapsed} s while exhausted",
            calls_after - calls_before
        );
        assert!(failures_after > exhausted.1 || calls_after > calls_before || elapsed > 0);
        // Close the connections it served: the waiting ones are let in.
        let (served, mut waiting): (Vec<TcpStream>, Vec<TcpStream>) =
            flood.into_iter().partition(has_reply);
        assert_eq!(served.len(), served_count, "{model}");
        drop(served);
        for (i, c) in waiting.iter_mut().take(20).enumerate() {
            let id = (served_count + i) as u32;
            assert_eq!(reply_long(c, id), id as i32, "{model}: waiting client {i}");
        }
        drop(waiting);
        // All closed: a new client is served.
        let mut fresh = server.connect();
        fresh
            .write_all(&request(5, &server.key, "echo_long", &5i32.to_le_bytes()))
            .unwrap();
        assert_eq!(reply_long(&mut fresh, 5), 5, "{model}");
    }
}

/// A malformed reference string is refused with an error that says what
/// is wrong and where (and, through `string_to_object`, BAD_PARAM).
#[test]
fn a_malformed_reference_says_what_is_wrong() {
    use armillary::giop::ior::IorError;
    use armillary::ReferenceError;
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    // An encapsulation whose type id claims 4 GiB.
    let e = orb
        .try_string_to_object("IOR:01000000ffffffff0000000000000000")
        .unwrap_err();
    assert!(
        matches!(e, ReferenceError::Malformed(IorError::Cdr(_))),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("4294967295") && text.contains("offset"),
        "{text}"
    );
    for (input, says) in [
        ("IOR:0é", "bad hex digit 'é' at character 5"),
        ("abcé", "expected IOR:, corbaloc: or corbaname:"),
        ("corbaloc:iiop:/key", "missing host at character 14"),
    ] {
        let e = orb.try_string_to_object(input).unwrap_err();
        assert!(e.to_string().contains(says), "{input}: {e}");
        let ex = orb.string_to_object(input).unwrap_err();
        assert_eq!(ex, SystemException::from(e));
        assert_eq!(
            ex.kind(),
            armillary::giop::system_exception::SystemExceptionKind::BadParam
        );
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
