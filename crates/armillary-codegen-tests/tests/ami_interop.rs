//! AMI through generated code across processes and with omniORB, in GIOP
//! 1.0, 1.1 and 1.2 (the client ORB's `max_giop_version`, which also
//! governs its calls to the reply handler):
//!
//! - every AMI form of the generated `Interop::Everything` stub (`sendp_*`
//!   pollers, `*_async` futures on two executors, `sendc_*` callbacks to a
//!   generated `AmiEverythingHandler` servant in another ORB) against
//!   omniORB's `interop_server` and against an Armillary server: return
//!   values, inout and out parameters, user and system exceptions,
//!   inherited operations, an attribute's get and set forms;
//! - the Request messages: against a raw listener
//!   (`armillary_testkit::raw::HeldServer`), the synchronous call and the
//!   `sendp_`, `_async` and `sendc_` forms of one operation with the same
//!   arguments send byte-identical messages but for the request id;
//! - a reply handler in another OS process: `ami_handler` (this crate's
//!   binary, an Armillary `LineHandler`) hears the replies an Armillary
//!   client got from an Armillary server and from omniORB's, user and
//!   system exceptions included (its `ExceptionHolder`s crossed a process
//!   boundary);
//! - an omniORB reply handler (`interop_ami_handler`, from
//!   `tests/interop/cpp/ami_handler.cc`, built with `omniidl -Wbami`) hears
//!   the replies an Armillary client got from an Armillary server and from
//!   omniORB's. Normal replies only: omniORB 4.2's
//!   `Messaging::ExceptionHolder` has no state members (its
//!   `messaging.idl` leaves them out), so an `_excep` call to an omniORB
//!   handler cannot carry the exception; and an omniORB handler process
//!   has no value factory for the holder, so it refuses such a call
//!   (MARSHAL, `MARSHAL_NoValueFactory`) whoever sends it. None is sent.
//!
//! Handlers print one line per reply (`LineHandler`'s form, which
//! `ami_handler.cc` copies); a test sends a batch of callbacks, waits
//! (bounded) for as many lines, and compares them sorted, since replies
//! to concurrent requests may be delivered in any order.
//!
//! The tests that need omniORB skip when it is absent
//! (`ARMILLARY_SKIP_OMNIORB=1`).

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use armillary::config::{ConcurrencyModel, MaxGiopVersion, OrbConfig};
use armillary::giop::GiopVersion;
use armillary::runtime::{CdrEncode, CdrWriter};
use armillary::{CompletionStatus, Orb, SystemException, SystemExceptionKind, WaitForCompletion};
use armillary_codegen_tests::interop::interop::{
    everything::FailError, AmiEverythingHandler, AmiEverythingHandlerSkeleton, Color, Everything,
    EverythingSkeleton, Point, Shape,
};
use armillary_codegen_tests::{EverythingImpl, LineHandler};
use armillary_testkit::raw::{HeldServer, Received};
use armillary_testkit::{
    build_peers, omniorb_available, start_interop_server, wait_until, LinePeer,
};

/// The versions every test runs in.
const VERSIONS: [MaxGiopVersion; 3] = [
    MaxGiopVersion::V1_0,
    MaxGiopVersion::V1_1,
    MaxGiopVersion::V1_2,
];

/// How long a reply is waited for: only a hang reaches it.
const BOUND: Duration = Duration::from_secs(30);

/// A string that is not ASCII, whose characters omniORB's server can hold
/// in its native ISO-8859-1 (the omniORB handler runs with UTF-8).
const TEXT: &str = "ünïcödé text";

fn strings() -> Vec<String> {
    vec!["a".into(), String::new(), "b c".into()]
}

/// What the servers answer that differs between them.
#[derive(Clone, Copy)]
struct Served {
    name: &'static str,
    base_name: &'static str,
}

const OMNIORB: Served = Served {
    name: "omniORB everything",
    base_name: "omniORB base",
};

const ARMILLARY: Served = Served {
    name: "Armillary everything",
    base_name: "Armillary base",
};

/// An Armillary server of `Everything` (the generated skeleton) and its
/// IOR.
fn armillary_server() -> (Orb, String) {
    let orb =
        Orb::with_config(OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(2))).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let everything = EverythingSkeleton::new(EverythingImpl::default())
        .activate(&poa)
        .unwrap();
    let ior = orb.object_to_string(everything.as_object());
    (orb, ior)
}

/// A client ORB speaking at most `version`. Its calls time out after
/// [`BOUND`], which only a hang reaches: a poller, future or synchronous
/// call that never completes fails the test instead of hanging it.
fn client(version: MaxGiopVersion) -> Orb {
    Orb::with_config(
        OrbConfig::new()
            .max_giop_version(version)
            .call_timeout(BOUND),
    )
    .unwrap()
}

fn everything(client: &Orb, ior: &str) -> Everything {
    Everything::narrow(&client.string_to_object(ior).unwrap())
        .unwrap()
        .expect("the server's object is an Everything")
}

fn reply_handler(client: &Orb, ior: &str) -> AmiEverythingHandler {
    AmiEverythingHandler::narrow(&client.string_to_object(ior).unwrap())
        .unwrap()
        .expect("the handler is an AMI_EverythingHandler")
}

/// The lines an in-process [`LineHandler`] heard.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<String>>>);

impl Heard {
    fn handler(&self) -> LineHandler {
        let lines = self.0.clone();
        LineHandler::new(move |line| lines.lock().unwrap().push(line))
    }

    /// Waits (bounded) for `n` lines and takes them, sorted.
    fn take(&self, n: usize) -> Vec<String> {
        wait_until(&format!("the handler heard {n} replies"), || {
            self.0.lock().unwrap().len() >= n
        });
        let mut lines: Vec<String> = self.0.lock().unwrap().drain(..n).collect();
        lines.sort();
        lines
    }
}

/// A handler ORB serving a [`LineHandler`] that reports to `heard`, and
/// the handler's IOR.
fn handler_orb(heard: &Heard) -> (Orb, String) {
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let handler = AmiEverythingHandlerSkeleton::new(heard.handler())
        .activate(&poa)
        .unwrap();
    let ior = orb.object_to_string(handler.as_object());
    (orb, ior)
}

fn assert_failure(outcome: Result<(), FailError>, code: i32) {
    match outcome {
        Err(FailError::Failure(f)) => {
            assert_eq!(
                (f.code, f.reason.as_str(), f.details),
                (
                    code,
                    "failed on purpose",
                    vec!["first".into(), "second".into()]
                )
            );
        }
        other => panic!("expected Failure, got {other:?}"),
    }
}

fn assert_no_permission<T: std::fmt::Debug>(outcome: Result<T, SystemException>, minor: u32) {
    let e = outcome.expect_err("expected NO_PERMISSION");
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (
            SystemExceptionKind::NoPermission,
            minor,
            CompletionStatus::Yes
        )
    );
}

/// Sends a batch of callbacks to `handler` (user and system exceptions
/// too when `exceptions`) and returns the lines a handler prints for
/// them, sorted.
fn send_callbacks(
    e: &Everything,
    handler: &AmiEverythingHandler,
    served: Served,
    exceptions: bool,
) -> Vec<String> {
    e.sendc_echo_long(handler, -42).unwrap();
    e.sendc_split(handler, 7, 5).unwrap();
    e.sendc_echo_string(handler, TEXT).unwrap();
    e.sendc_echo_strings(handler, &strings()).unwrap();
    e.sendc_out_shape(handler).unwrap();
    e.sendc_get_name(handler).unwrap();
    e.sendc_base_op(handler).unwrap();
    e.sendc_get_base_name(handler).unwrap();
    let mut lines = vec![
        "echo_long -42".to_owned(),
        "split 12 10 2".to_owned(),
        format!("echo_string {TEXT:?}"),
        format!("echo_strings {:?}", strings()),
        r#"out_shape "triangle" Blue 3 "out""#.to_owned(),
        format!("get_name {:?}", served.name),
        r#"base_op "base""#.to_owned(),
        format!("get_base_name {:?}", served.base_name),
    ];
    if exceptions {
        e.sendc_fail(handler, 3).unwrap();
        e.sendc_fail(handler, 0).unwrap();
        e.sendc_fail_system(handler, 7).unwrap();
        lines.extend(
            [
                r#"fail_excep Failure 3 "failed on purpose" ["first", "second"]"#,
                "fail_excep Empty",
                "fail_system_excep system NoPermission 7 Yes",
            ]
            .map(String::from),
        );
    }
    lines.sort();
    lines
}

/// Every AMI form of the generated stub against the server at `ior`, from
/// a client speaking at most `version`; callbacks go to the handler at
/// `handler_ior` (served in this process), which reports to `heard`.
fn every_form(
    version: MaxGiopVersion,
    ior: &str,
    served: Served,
    handler_ior: &str,
    heard: &Heard,
) {
    let client = client(version);
    let e = everything(&client, ior);

    // Pollers: return values, inout and out, exceptions, attributes.
    let mut long = e.sendp_echo_long(-42);
    assert!(long.wait(BOUND));
    assert!(long.is_ready());
    assert_eq!(long.take().unwrap(), -42);
    assert_eq!(e.sendp_split(7, 5).take().unwrap(), (12, 10, 2));
    assert_eq!(e.sendp_echo_string(TEXT).take().unwrap(), TEXT);
    assert_eq!(e.sendp_echo_strings(&strings()).take().unwrap(), strings());
    let (shape, name) = e.sendp_out_shape().take().unwrap();
    assert_eq!(
        (
            shape.name.as_str(),
            shape.hue,
            shape.points.len(),
            name.as_str()
        ),
        ("triangle", Color::Blue, 3, "out")
    );
    assert_failure(e.sendp_fail(3).take(), 3);
    assert!(matches!(e.sendp_fail(0).take(), Err(FailError::Empty(_))));
    assert_no_permission(e.sendp_fail_system(7).take(), 7);
    e.sendp_set_counter(41).take().unwrap();
    assert_eq!(e.sendp_get_counter().take().unwrap(), 41);
    assert_eq!(e.sendp_get_name().take().unwrap(), served.name);
    assert_eq!(e.sendp_base_op().take().unwrap(), "base");
    assert_eq!(e.sendp_get_base_name().take().unwrap(), served.base_name);

    // Futures, on two executors.
    assert_eq!(futures_executor::block_on(e.echo_long_async(5)).unwrap(), 5);
    assert_eq!(pollster::block_on(e.split_async(1, 2)).unwrap(), (3, 4, -1));
    assert_eq!(
        futures_executor::block_on(e.echo_string_async(TEXT)).unwrap(),
        TEXT
    );
    let (shape, name) = pollster::block_on(e.out_shape_async()).unwrap();
    assert_eq!((shape.name.as_str(), name.as_str()), ("triangle", "out"));
    assert_failure(futures_executor::block_on(e.fail_async(2)), 2);
    assert!(matches!(
        pollster::block_on(e.fail_async(0)),
        Err(FailError::Empty(_))
    ));
    assert_no_permission(futures_executor::block_on(e.fail_system_async(8)), 8);
    pollster::block_on(e.set_counter_async(9)).unwrap();
    assert_eq!(
        futures_executor::block_on(e.get_counter_async()).unwrap(),
        9
    );
    assert_eq!(pollster::block_on(e.get_name_async()).unwrap(), served.name);
    assert_eq!(
        futures_executor::block_on(e.get_base_name_async()).unwrap(),
        served.base_name
    );

    // Callbacks, to a reply handler of another ORB.
    let handler = reply_handler(&client, handler_ior);
    let expected = send_callbacks(&e, &handler, served, true);
    assert_eq!(heard.take(expected.len()), expected, "GIOP {version:?}");
    // The attribute's set, then get.
    e.sendc_set_counter(&handler, 43).unwrap();
    assert_eq!(heard.take(1), ["set_counter"]);
    e.sendc_get_counter(&handler).unwrap();
    assert_eq!(heard.take(1), ["get_counter 43"]);
    client.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn every_generated_form_against_omniorb_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "ami-generated", &[]);
    let heard = Heard::default();
    let (_handler_orb, handler_ior) = handler_orb(&heard);
    for version in VERSIONS {
        every_form(version, &ior, OMNIORB, &handler_ior, &heard);
    }
}

#[test]
fn every_generated_form_against_an_armillary_server_in_every_giop_version() {
    let (_server, ior) = armillary_server();
    let heard = Heard::default();
    let (_handler_orb, handler_ior) = handler_orb(&heard);
    for version in VERSIONS {
        every_form(version, &ior, ARMILLARY, &handler_ior, &heard);
    }
}

/// The GIOP version a client speaking at most `version` sends to a
/// GIOP 1.2 server.
fn spoken(version: MaxGiopVersion) -> GiopVersion {
    match version {
        MaxGiopVersion::V1_0 => GiopVersion::V1_0,
        MaxGiopVersion::V1_1 => GiopVersion::V1_1,
        _ => GiopVersion::V1_2,
    }
}

/// A client of a raw listener, with a reply handler in another ORB.
struct RawSession {
    server: HeldServer,
    client: Orb,
    version: MaxGiopVersion,
    e: Everything,
    handler: AmiEverythingHandler,
}

impl RawSession {
    /// A client speaking at most `version` to a new raw listener, whose
    /// connection is open: the first request on a connection may carry
    /// what later ones do not (GIOP 1.1's code set context), so one call
    /// opens it.
    fn open(version: MaxGiopVersion, handler_ior: &str) -> Self {
        let server = HeldServer::start();
        let client = client(version);
        let e = Everything::from_object(client.string_to_object(&server.corbaloc("raw")).unwrap());
        let handler = reply_handler(&client, handler_ior);
        let session = RawSession {
            server,
            client,
            version,
            e,
            handler,
        };
        session.synchronous(
            "echo_long",
            |e| assert_eq!(e.echo_long(1).unwrap(), 1),
            |_, w| {
                w.write_long(1);
            },
        );
        session
    }

    /// Makes the synchronous call `call` of `operation` (on another
    /// thread: the listener answers only when told), answers it with
    /// `reply`, and returns its request.
    fn synchronous(
        &self,
        operation: &str,
        call: impl FnOnce(Everything) + Send + 'static,
        reply: fn(&Received, &mut CdrWriter),
    ) -> Received {
        let e = self.e.clone();
        let caller = std::thread::spawn(move || call(e));
        let request = self.server.next();
        assert_eq!(request.version, spoken(self.version));
        assert_eq!(request.header.operation, operation);
        self.server
            .answer_with(std::slice::from_ref(&request), reply);
        caller.join().unwrap();
        request
    }

    /// Takes the three requests the `sendp_`, `_async` and `sendc_` forms
    /// sent, checks that each is `sync`'s but for the request id, and
    /// answers them with `reply`.
    fn asynchronous_match(&self, sync: &Received, reply: fn(&Received, &mut CdrWriter)) {
        let requests = [self.server.next(), self.server.next(), self.server.next()];
        for (form, request) in ["sendp_", "_async", "sendc_"].iter().zip(&requests) {
            assert_ne!(request.id, sync.id);
            assert_eq!(
                request.masked(),
                sync.masked(),
                "the {form} form of {} in GIOP {:?}: {:?}, the synchronous call: {:?}",
                sync.header.operation,
                self.version,
                request.bytes,
                sync.bytes
            );
        }
        self.server.answer_with(&requests, reply);
    }
}

/// The shape `echo_shape` sends.
fn shape() -> Shape {
    Shape {
        name: "square".into(),
        hue: Color::Green,
        points: (0..3).map(|i| Point { x: i, y: -i }).collect(),
        origin: Point { x: -5, y: 7 },
    }
}

/// An operation with several in and inout arguments (`split`), one with a
/// string and one with a struct, each called synchronously and then with
/// `sendp_`, `_async` and `sendc_` and the same arguments: the four
/// Request messages are the same bytes but for the request id.
#[test]
fn every_form_sends_the_synchronous_calls_request_in_every_giop_version() {
    let heard = Heard::default();
    let (_handler_orb, handler_ior) = handler_orb(&heard);
    for version in VERSIONS {
        let raw = RawSession::open(version, &handler_ior);
        let e = &raw.e;

        // in + inout + out: a + b, b * 2 and a - b, as a server answers.
        let split_reply = |_: &Received, w: &mut CdrWriter| {
            w.write_long(12);
            w.write_long(10);
            w.write_long(2);
        };
        let sync = raw.synchronous(
            "split",
            |e| {
                let mut b = 5;
                assert_eq!(e.split(7, &mut b).unwrap(), (12, 2));
                assert_eq!(b, 10);
            },
            split_reply,
        );
        let mut poller = e.sendp_split(7, 5);
        let future = e.split_async(7, 5);
        e.sendc_split(&raw.handler, 7, 5).unwrap();
        raw.asynchronous_match(&sync, split_reply);
        assert_eq!(poller.take().unwrap(), (12, 10, 2));
        assert_eq!(pollster::block_on(future).unwrap(), (12, 10, 2));
        assert_eq!(heard.take(1), ["split 12 10 2"]);

        // A string (the reply's is ASCII: the raw server writes it in its
        // own code set).
        let string_reply = |_: &Received, w: &mut CdrWriter| w.write_string("pong").unwrap();
        let sync = raw.synchronous(
            "echo_string",
            |e| assert_eq!(e.echo_string(TEXT).unwrap(), "pong"),
            string_reply,
        );
        let mut poller = e.sendp_echo_string(TEXT);
        let future = e.echo_string_async(TEXT);
        e.sendc_echo_string(&raw.handler, TEXT).unwrap();
        raw.asynchronous_match(&sync, string_reply);
        assert_eq!(poller.take().unwrap(), "pong");
        assert_eq!(futures_executor::block_on(future).unwrap(), "pong");
        assert_eq!(heard.take(1), [r#"echo_string "pong""#]);

        // A struct: a string, an enum, a sequence, a nested struct.
        let shape_reply = |_: &Received, w: &mut CdrWriter| shape().encode(w).unwrap();
        let sync = raw.synchronous(
            "echo_shape",
            |e| assert_eq!(e.echo_shape(&shape()).unwrap(), shape()),
            shape_reply,
        );
        let mut poller = e.sendp_echo_shape(&shape());
        let future = e.echo_shape_async(&shape());
        e.sendc_echo_shape(&raw.handler, &shape()).unwrap();
        raw.asynchronous_match(&sync, shape_reply);
        assert_eq!(poller.take().unwrap(), shape());
        assert_eq!(pollster::block_on(future).unwrap(), shape());
        assert_eq!(heard.take(1), [format!("echo_shape {:?}", shape())]);

        raw.client.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// Starts this crate's `ami_handler` (a reply handler in another process)
/// and returns it with its IOR.
fn rust_handler_process(args: &[&str]) -> (LinePeer, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ami_handler"));
    command.args(args);
    let child = LinePeer::spawn(command);
    let ior = child.next_line("the handler's IOR");
    assert!(ior.starts_with("IOR:"), "not an IOR: {ior}");
    (child, ior)
}

/// Starts omniORB's `interop_ami_handler` and returns it with its IOR.
fn omniorb_handler_process(peers: &std::path::Path) -> (LinePeer, String) {
    let mut command = Command::new(peers.join("interop_ami_handler"));
    // UTF-8 as its native char code set: it prints the strings it gets as
    // they are (in GIOP 1.0, without negotiation, as they came).
    command.args([
        "-ORBendPoint",
        "giop:tcp:127.0.0.1:0",
        "-ORBnativeCharCodeSet",
        "UTF-8",
    ]);
    let child = LinePeer::spawn(command);
    let ior = child.next_line("the omniORB handler's IOR");
    assert!(ior.starts_with("IOR:"), "not an IOR: {ior}");
    (child, ior)
}

/// In every GIOP version, a client of this process calls the server at
/// `server_ior` with `sendc_*` and a reference to the handler at
/// `handler_ior`, which lives in `child` and prints what it hears.
fn callbacks_to_another_process(
    child: &LinePeer,
    handler_ior: &str,
    server_ior: &str,
    served: Served,
    exceptions: bool,
) {
    for version in VERSIONS {
        let client = client(version);
        let e = everything(&client, server_ior);
        let handler = reply_handler(&client, handler_ior);
        let expected = send_callbacks(&e, &handler, served, exceptions);
        let mut lines = child.lines(expected.len(), &format!("the replies in GIOP {version:?}"));
        lines.sort();
        assert_eq!(lines, expected, "GIOP {version:?}");
        e.sendc_set_counter(&handler, 17).unwrap();
        assert_eq!(child.next_line("set_counter's reply"), "set_counter");
        e.sendc_get_counter(&handler).unwrap();
        assert_eq!(child.next_line("get_counter's reply"), "get_counter 17");
        client.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn a_reply_handler_in_another_process_hears_an_armillary_servers_replies() {
    let (_server, ior) = armillary_server();
    let (mut child, handler) = rust_handler_process(&[]);
    callbacks_to_another_process(&child, &handler, &ior, ARMILLARY, true);
    // It ends when its standard input closes.
    child.close_stdin();
    assert!(child.wait_exit().success());
}

#[test]
fn a_reply_handler_in_another_process_hears_omniorbs_replies() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "ami-handler-process", &[]);
    // It ends by itself after the last line: 13 lines in each version.
    let (mut child, handler) = rust_handler_process(&["39"]);
    callbacks_to_another_process(&child, &handler, &ior, OMNIORB, true);
    assert!(child.wait_exit().success());
}

#[test]
fn an_omniorb_reply_handler_hears_an_armillary_servers_replies() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = armillary_server();
    let (mut child, handler) = omniorb_handler_process(&peers);
    callbacks_to_another_process(&child, &handler, &ior, ARMILLARY, false);
    child.close_stdin();
    assert!(child.wait_exit().success());
}

#[test]
fn an_omniorb_reply_handler_hears_omniorbs_replies_through_an_armillary_client() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let (_server, ior) = start_interop_server(&peers, "ami-omniorb-handler", &[]);
    let (mut child, handler) = omniorb_handler_process(&peers);
    callbacks_to_another_process(&child, &handler, &ior, OMNIORB, false);
    child.close_stdin();
    assert!(child.wait_exit().success());
}
