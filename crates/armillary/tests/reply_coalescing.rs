//! Replies to requests read together are written together (the reactive
//! and thread-per-connection models, the default among them:
//! `ServerConcurrency::coalesces_replies`), and a held reply never waits
//! on a call its thread makes.
//!
//! A raw client writes several GIOP requests in one write, so that the
//! server reads them in one read: under those models every reply then
//! comes in one write, which the client reads whole in
//! its first read (a loopback write this small arrives at once). In every
//! model the replies are right, whatever their number, sizes and GIOP
//! versions. And a servant that calls another object while its thread
//! holds replies (a synchronous call, or a future it blocks on) first
//! writes them: the peer here answers only once the client has the
//! earlier reply, so holding it over the call would deadlock (bounded by
//! the peer's 10 s wait, which the test then sees). And requests read
//! together with a malformed message are answered before its MessageError,
//! in every model.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::giop::{Message, MessageBody, MessageBuilder, RequestHeader, TargetAddress};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_giop::cdr::CdrError;
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::giop::{read_message, split_messages};

/// Far beyond what a working server needs: reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

/// How long the gate waits for the client to have the first reply.
const GATE_WAIT: Duration = Duration::from_secs(10);

/// `echo_long(v)` → v; `blob(n)` → n octets; `call_gate` → the gate's
/// answer, through a synchronous call; `await_gate` → the same through a
/// future the servant blocks on.
#[derive(Default)]
struct Echo {
    gate: Mutex<Option<ObjectRef>>,
    /// What `call_back` calls (`ask`).
    asker: Mutex<Option<ObjectRef>>,
}

fn bad(e: CdrError) -> SystemException {
    SystemException::from_cdr_error(&e, CompletionStatus::No)
}

fn read_long(reply: ReplyBody<'_, '_>) -> Result<Result<i32, SystemException>, CdrError> {
    match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
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
        match req.operation() {
            "echo_long" => {
                let v = req.args().read_long().map_err(bad)?;
                req.results().write_long(v);
            }
            "blob" => {
                let n = req.args().read_long().map_err(bad)?;
                req.results()
                    .write_octet_seq(&vec![n as u8; n.max(0) as usize])
                    .map_err(bad)?;
            }
            "call_gate" => {
                let gate = self.gate.lock().unwrap().clone().expect("a gate");
                let open = gate.invoke("wait_open", &|_| Ok(()), read_long)?;
                req.results().write_long(open);
            }
            // Keeps the server's thread busy, so that what comes meanwhile
            // is read together.
            "pause" => std::thread::sleep(Duration::from_millis(100)),
            "call_back" => {
                let asker = self.asker.lock().unwrap().clone().expect("an asker");
                let answer = asker.invoke("ask", &|_| Ok(()), read_long)?;
                req.results().write_long(answer);
            }
            "await_gate" => {
                let gate = self.gate.lock().unwrap().clone().expect("a gate");
                let open =
                    pollster::block_on(gate.send_future("wait_open", |_| Ok(()), read_long))?;
                req.results().write_long(open);
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

/// `wait_open` → 1 once the test opened it, 0 if it was not opened within
/// [`GATE_WAIT`].
#[derive(Default)]
struct Gate {
    open: AtomicBool,
}

impl Servant for Gate {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Gate:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Gate:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let start = Instant::now();
        while !self.open.load(Ordering::SeqCst) && start.elapsed() < GATE_WAIT {
            std::thread::sleep(Duration::from_millis(1));
        }
        req.results()
            .write_long(i32::from(self.open.load(Ordering::SeqCst)));
        Ok(())
    }
}

/// `ask` → the echo's `echo_long(9)`, called back over the connection
/// its caller's requests came on.
struct Asker {
    echo: ObjectRef,
}

impl Servant for Asker {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Asker:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Asker:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let v = self.echo.invoke(
            "echo_long",
            &|w| {
                w.write_long(9);
                Ok(())
            },
            read_long,
        )?;
        req.results().write_long(v);
        Ok(())
    }
}

/// An echo server in `model`, with a gate served by a second ORB.
struct Setup {
    server: Orb,
    echo: Arc<Echo>,
    echo_ior: String,
    gate_orb: Orb,
    gate: Arc<Gate>,
    key: Vec<u8>,
    port: u16,
    runner: Option<std::thread::JoinHandle<()>>,
}

impl Setup {
    fn start(model: ConcurrencyModel) -> Setup {
        let gate_orb =
            Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
                .unwrap();
        let gate_poa = gate_orb.root_poa();
        gate_poa.manager().activate().unwrap();
        let gate = Arc::new(Gate::default());
        let servant: Arc<dyn Servant> = gate.clone();
        let gate_ior = gate_orb.object_to_string(&gate_poa.servant_to_reference(&servant).unwrap());

        let server = Orb::with_config(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .concurrency(model)
                .call_timeout(DEADLINE),
        )
        .unwrap();
        let poa = server.root_poa();
        poa.manager().activate().unwrap();
        let echo = Arc::new(Echo::default());
        *echo.gate.lock().unwrap() = Some(server.string_to_object(&gate_ior).unwrap());
        let servant: Arc<dyn Servant> = echo.clone();
        let obj = poa.servant_to_reference(&servant).unwrap();
        let key = obj.ior().iiop_profiles()[0].object_key.clone();
        let port = server.endpoints()[0].port();
        let runner = (model == ConcurrencyModel::ApplicationThreads).then(|| {
            let orb = server.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        Setup {
            echo_ior: server.object_to_string(&obj),
            server,
            echo,
            gate_orb,
            gate,
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
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.gate.open.store(true, Ordering::SeqCst);
        self.server.shutdown(WaitForCompletion::Yes).unwrap();
        if let Some(r) = self.runner.take() {
            let _ = r.join();
        }
        self.gate_orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// A request for `operation` with one long argument (or none), in
/// `version` and `order`.
fn request(
    version: GiopVersion,
    order: ByteOrder,
    id: u32,
    key: &[u8],
    operation: &str,
    arg: Option<i32>,
) -> Vec<u8> {
    let header = MessageBody::Request(RequestHeader {
        request_id: id,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: operation.into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let mut b = MessageBuilder::new(version, order, &header).unwrap();
    if let Some(v) = arg {
        b.body().write_long(v);
    }
    b.finish(false)
}

/// The request id and body reader of a NO_EXCEPTION reply.
fn reply_id(bytes: &[u8]) -> u32 {
    let msg = Message::decode(bytes).unwrap();
    let MessageBody::Reply(h) = &msg.body else {
        panic!("not a reply: {msg:?}")
    };
    assert_eq!(
        h.reply_status,
        armillary::giop::giop::ReplyStatus::NoException
    );
    h.request_id
}

fn reply_long(bytes: &[u8]) -> (u32, i32) {
    let msg = Message::decode(bytes).unwrap();
    (reply_id(bytes), msg.body_reader(bytes).read_long().unwrap())
}

fn reply_blob(bytes: &[u8]) -> (u32, Vec<u8>) {
    let msg = Message::decode(bytes).unwrap();
    (
        reply_id(bytes),
        msg.body_reader(bytes).read_octet_seq().unwrap().to_vec(),
    )
}

/// Twenty requests in one write, in GIOP 1.0, 1.1 and 1.2 and both byte
/// orders by turns.
fn pipelined(key: &[u8]) -> Vec<u8> {
    let versions = [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2];
    let orders = [ByteOrder::Big, ByteOrder::Little];
    (0..20u32)
        .flat_map(|i| {
            let (version, order) = (versions[i as usize % 3], orders[i as usize % 2]);
            request(version, order, i, key, "echo_long", Some(i as i32 * 7))
        })
        .collect()
}

/// The models whose reading thread runs what it read in turn, and so
/// writes the replies of requests read together at once.
const COALESCING: [ConcurrencyModel; 3] = [
    ConcurrencyModel::SingleThreadedReactive,
    ConcurrencyModel::ThreadPerConnection,
    // The default; a connection of its own thread.
    ConcurrencyModel::ThreadPerConnectionUpTo(64),
];

#[test]
fn the_coalescing_models_answer_requests_read_together_in_one_write() {
    for model in COALESCING {
        answers_requests_read_together_in_one_write(model);
    }
}

fn answers_requests_read_together_in_one_write(model: ConcurrencyModel) {
    let setup = Setup::start(model);
    let mut c = setup.connect();
    // The connection's first request, answered alone.
    c.write_all(&request(
        GiopVersion::V1_2,
        ByteOrder::Little,
        100,
        &setup.key,
        "echo_long",
        Some(1),
    ))
    .unwrap();
    assert_eq!(
        reply_long(&read_message(&mut c).unwrap().unwrap()),
        (100, 1)
    );

    c.write_all(&pipelined(&setup.key)).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let n = c.read(&mut buf).unwrap();
    let replies = split_messages(&buf[..n]);
    assert_eq!(
        replies.len(),
        20,
        "the first read brings every reply, written at once ({model})"
    );
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply_long(reply), (i as u32, i as i32 * 7));
    }
}

#[test]
fn replies_read_together_are_all_right_in_every_model() {
    for model in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPool(2),
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ApplicationThreads,
        ConcurrencyModel::WorkerPool {
            workers: 2,
            queue: 64,
        },
    ] {
        let setup = Setup::start(model);
        let mut c = setup.connect();
        c.write_all(&pipelined(&setup.key)).unwrap();
        let mut got: Vec<(u32, i32)> = (0..20)
            .map(|_| reply_long(&read_message(&mut c).unwrap().unwrap()))
            .collect();
        got.sort();
        let expected: Vec<(u32, i32)> = (0..20).map(|i| (i, i as i32 * 7)).collect();
        assert_eq!(got, expected, "{model}");

        // Replies of every size up to past the limit on held bytes (64
        // KiB), in one write: each whole and in order of its request.
        let sizes = [0, 1, 7, 1000, 30_000, 70_000, 3, 65_536, 12];
        let batch: Vec<u8> = sizes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                request(
                    GiopVersion::V1_2,
                    ByteOrder::Little,
                    i as u32,
                    &setup.key,
                    "blob",
                    Some(*n),
                )
            })
            .collect();
        c.write_all(&batch).unwrap();
        let mut got: Vec<(u32, Vec<u8>)> = sizes
            .iter()
            .map(|_| reply_blob(&read_message(&mut c).unwrap().unwrap()))
            .collect();
        got.sort();
        for (i, n) in sizes.iter().enumerate() {
            assert_eq!(got[i].0, i as u32, "{model}");
            assert_eq!(got[i].1, vec![*n as u8; *n as usize], "{model}");
        }
    }
}

/// Sends `echo_long(5)` and then `operation` in one write, and checks
/// that the echo's reply comes while `operation`'s servant waits on the
/// gate (which the test opens only once it has that reply).
fn held_reply_goes_out_before_the_servant_waits(operation: &str) {
    for model in COALESCING {
        held_reply_goes_out_before_the_servant_waits_in(model, operation);
    }
}

fn held_reply_goes_out_before_the_servant_waits_in(model: ConcurrencyModel, operation: &str) {
    let setup = Setup::start(model);
    let mut c = setup.connect();
    let key = &setup.key;
    let batch = [
        request(
            GiopVersion::V1_2,
            ByteOrder::Little,
            1,
            key,
            "echo_long",
            Some(5),
        ),
        request(
            GiopVersion::V1_2,
            ByteOrder::Little,
            2,
            key,
            operation,
            None,
        ),
    ]
    .concat();
    c.write_all(&batch).unwrap();
    let first = read_message(&mut c).unwrap().unwrap();
    assert_eq!(reply_long(&first), (1, 5));
    setup.gate.open.store(true, Ordering::SeqCst);
    let second = read_message(&mut c).unwrap().unwrap();
    assert_eq!(
        reply_long(&second),
        (2, 1),
        "the gate opened while {operation} waited on it ({model})"
    );
}

#[test]
fn a_servant_calling_out_first_writes_the_replies_its_thread_holds() {
    held_reply_goes_out_before_the_servant_waits("call_gate");
}

#[test]
fn a_servant_blocking_on_a_future_first_writes_the_replies_its_thread_holds() {
    held_reply_goes_out_before_the_servant_waits("await_gate");
}

/// A client ORB pipelines `echo_long`, then `call_back` on one connection
/// while the reactive server is busy, so that the server reads them
/// together and holds the echo's reply; `call_back`'s servant calls the
/// client's asker, whose servant calls the server back over that same
/// connection. The reply to that nested call must not be held while the
/// servant waits (the chain would wait for it until its call timeout).
#[test]
fn a_nested_request_on_the_held_connection_is_answered_while_its_caller_waits() {
    for model in COALESCING {
        nested_request_on_the_held_connection(model);
    }
}

fn nested_request_on_the_held_connection(model: ConcurrencyModel) {
    let setup = Setup::start(model);
    let client = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(2))
            // The futures below share one connection.
            .transport_mux(armillary::config::TransportMux::Muxed)
            .call_timeout(DEADLINE),
    )
    .unwrap();
    let poa = client.root_poa();
    poa.manager().activate().unwrap();
    let echo = client.string_to_object(&setup.echo_ior).unwrap();
    let asker: Arc<dyn Servant> = Arc::new(Asker { echo: echo.clone() });
    let asker = poa.servant_to_reference(&asker).unwrap();
    *setup.echo.asker.lock().unwrap() = Some(
        setup
            .server
            .string_to_object(&client.object_to_string(&asker))
            .unwrap(),
    );

    let long = |v: i32| {
        move |w: &mut armillary::giop::cdr::CdrWriter| {
            w.write_long(v);
            Ok(())
        }
    };
    let pause = echo.send_future("pause", |_| Ok(()), |_| Ok(Ok::<(), SystemException>(())));
    let first = echo.send_future("echo_long", long(5), read_long);
    let call_back = echo.send_future("call_back", |_| Ok(()), read_long);
    pollster::block_on(pause).unwrap();
    assert_eq!(pollster::block_on(first).unwrap(), 5);
    assert_eq!(pollster::block_on(call_back).unwrap(), 9);
    client.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Two requests and then a Request that does not decode, in one write to
/// the reactive server: the two are answered, then comes MessageError,
/// then the close: replies held for the batch are written before the
/// connection closes.
#[test]
fn replies_held_when_garbage_follows_go_out_before_message_error() {
    let setup = Setup::start(ConcurrencyModel::SingleThreadedReactive);
    let mut c = setup.connect();
    let mut batch = [
        request(
            GiopVersion::V1_2,
            ByteOrder::Little,
            1,
            &setup.key,
            "echo_long",
            Some(11),
        ),
        request(
            GiopVersion::V1_2,
            ByteOrder::Little,
            2,
            &setup.key,
            "echo_long",
            Some(22),
        ),
    ]
    .concat();
    // A whole GIOP 1.2 Request whose header ends before its target.
    batch.extend_from_slice(b"GIOP\x01\x02\x01\x00\x08\x00\x00\x00");
    batch.extend_from_slice(&[3, 0, 0, 0, 3, 0, 0, 0]);
    c.write_all(&batch).unwrap();
    assert_eq!(reply_long(&read_message(&mut c).unwrap().unwrap()), (1, 11));
    assert_eq!(reply_long(&read_message(&mut c).unwrap().unwrap()), (2, 22));
    let error = read_message(&mut c).unwrap().expect("MessageError");
    assert_eq!(
        Message::decode(&error).unwrap().header.message_type,
        armillary::giop::giop::MessageType::MessageError
    );
    assert_eq!(read_message(&mut c).unwrap(), None, "then the close");
}

/// Bytes the frame decoder rejects: a 12-byte header without the GIOP
/// magic.
const NOT_GIOP: &[u8] = b"XXXX\x01\x02\x01\x00\x00\x00\x00\x00";

/// A whole GIOP 1.2 Request whose header ends before its target: the
/// frame decoder takes it, the request does not decode.
const BAD_REQUEST: &[u8] = b"GIOP\x01\x02\x01\x00\x08\x00\x00\x00\x03\x00\x00\x00\x03\x00\x00\x00";

/// Two good requests, then `bad`, then a third good request, in one
/// write, to a server in every model: the two are answered (in any
/// order), then comes MessageError, then the close; what follows the bad
/// message is never run.
#[test]
fn good_requests_before_a_malformed_message_are_answered_in_every_model() {
    for model in ConcurrencyModel::menu(2) {
        for (what, bad) in [("a frame", NOT_GIOP), ("a request", BAD_REQUEST)] {
            let setup = Setup::start(model);
            let mut c = setup.connect();
            let echo = |id: u32, v: i32| {
                request(
                    GiopVersion::V1_2,
                    ByteOrder::Little,
                    id,
                    &setup.key,
                    "echo_long",
                    Some(v),
                )
            };
            let batch = [echo(1, 11), echo(2, 22), bad.to_vec(), echo(3, 33)].concat();
            c.write_all(&batch).unwrap();
            let mut replies: Vec<(u32, i32)> = (0..2)
                .map(|_| {
                    let bytes = read_message(&mut c).unwrap();
                    reply_long(&bytes.unwrap_or_else(|| panic!("{model}, {what}: closed")))
                })
                .collect();
            replies.sort();
            assert_eq!(replies, [(1, 11), (2, 22)], "{model}, {what}");
            let error = read_message(&mut c).unwrap().expect("MessageError");
            assert_eq!(
                Message::decode(&error).unwrap().header.message_type,
                armillary::giop::giop::MessageType::MessageError,
                "{model}, {what}"
            );
            assert_eq!(
                read_message(&mut c).unwrap(),
                None,
                "{model}, {what}: then the close"
            );
        }
    }
}
