//! Portable interceptors (`armillary::interceptors`), collocated and over
//! IIOP: every
//! interception point, in its order, for each way a request can end
//! (a reply, a user or system exception, a LOCATION_FORWARD, a oneway),
//! for each form of call (synchronous, DII deferred, AMI future and
//! callback) and of servant (static, AMH, DSI); ForwardRequest from both
//! sides; service contexts both ways; PICurrent slots into the request
//! and into the servant's thread; a panicking or raising interceptor
//! contained; and an IOR interceptor's component in the references.
//!
//! Every test runs with its client and server ORBs in one process, so
//! that the calls are collocated (the default, `thru-poa`); the tests
//! that matter over the wire run again with the client's references
//! over loopback IIOP (`everything_again_over_iiop`).
//!
//! Every test has its own client and server ORB, each with two
//! interceptors (`C1`, `C2`; `S1`, `S2`), which write what they see into
//! one log. The log's order is the causal order of the points (a
//! client's `send_request` before the server reads the request, the
//! server's reply before the client's `receive_reply`); where two sides
//! are not ordered (a oneway), each side's part is checked on its own.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use armillary::amh::ResponseHandler;
use armillary::config::{Collocation, MaxGiopVersion, OrbConfig};
use armillary::dii::{ArgMode, NvList};
use armillary::dsi::{DynamicRequest, DynamicServant};
use armillary::giop::giop::{ServiceContext, SyncScope};
use armillary::giop::ior::TaggedComponent;
use armillary::interceptors::{
    ClientRequestInfo, ClientRequestInterceptor, Intercept, IorInfo, IorInterceptor, OrbInitInfo,
    OrbInitializer, ServerRequestInfo, ServerRequestInterceptor, SlotId,
};
use armillary::runtime::{CdrError, CdrReader, CdrWriter, ReplyBody};
use armillary::{
    minor, Any, CompletionStatus, ObjectRef, Orb, Servant, ServerRequest, SystemException,
    SystemExceptionKind, TypeCode, UserException, WaitForCompletion,
};
use armillary_testkit::{build_peers, omniorb_available, start_pi_server, wait_until, LinePeer};
use parking_lot::Mutex;

/// The context a client interceptor adds to each request.
const CLIENT_CONTEXT: u32 = 0x4152_0010;
/// The context a server interceptor adds to each reply.
const SERVER_CONTEXT: u32 = 0x4152_0011;
/// The context omniORB's interceptor adds to each request (`pi_peer`).
const OMNIORB_CONTEXT: u32 = 0x4152_0012;
/// The component the IOR interceptor adds to each reference.
const COMPONENT: u32 = 0x4152_0099;

/// What an interceptor does at a point, once.
#[derive(Clone)]
enum Action {
    Raise(SystemException),
    Forward(ObjectRef),
    Panic,
}

/// What the interceptors and the servant saw, and what they are to do.
#[derive(Default)]
struct Probe {
    log: Mutex<Vec<String>>,
    /// Observations: contexts, slots, exception ids.
    seen: Mutex<Vec<String>>,
    /// (who, point, operation, action), each used once.
    rules: Mutex<Vec<(&'static str, &'static str, &'static str, Action)>>,
    slot: Mutex<Option<SlotId>>,
}

impl Probe {
    fn at(&self, who: &str, point: &str, operation: &str) -> Result<(), Intercept> {
        if operation.starts_with('_') {
            return Ok(());
        }
        self.log.lock().push(format!("{who}.{point}({operation})"));
        let action = {
            let mut rules = self.rules.lock();
            let at = rules
                .iter()
                .position(|(w, p, o, _)| *w == who && *p == point && *o == operation);
            at.map(|at| rules.remove(at).3)
        };
        match action {
            None => Ok(()),
            Some(Action::Raise(e)) => Err(Intercept::System(e)),
            Some(Action::Forward(to)) => Err(Intercept::ForwardRequest(to)),
            Some(Action::Panic) => panic!("{who} panics at {point}"),
        }
    }

    fn rule(&self, who: &'static str, point: &'static str, op: &'static str, action: Action) {
        self.rules.lock().push((who, point, op, action));
    }

    fn saw(&self, what: String) {
        self.seen.lock().push(what);
    }

    fn slot(&self) -> SlotId {
        self.slot.lock().expect("the initializer allocated a slot")
    }

    /// The log's entries for `operation` whose interceptor's name starts
    /// with `side` ("C", "S", "servant"), taken out of the log.
    fn take(&self, side: &str, operation: &str) -> Vec<String> {
        let suffix = format!("({operation})");
        let mut log = self.log.lock();
        let (mine, rest): (Vec<String>, Vec<String>) = log
            .drain(..)
            .partition(|e| e.starts_with(side) && e.ends_with(&suffix));
        *log = rest;
        mine.into_iter()
            .map(|e| e.trim_end_matches(&suffix).to_owned())
            .collect()
    }

    fn clear(&self) {
        self.log.lock().clear();
        self.seen.lock().clear();
    }
}

struct Client {
    name: &'static str,
    probe: Arc<Probe>,
}

impl ClientRequestInterceptor for Client {
    fn send_request(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        if self.name == "C1" && !info.operation().starts_with('_') {
            info.add_request_service_context(
                ServiceContext {
                    id: CLIENT_CONTEXT,
                    data: b"from C1".to_vec(),
                },
                false,
            )?;
            if let Some(arguments) = info.arguments() {
                self.probe
                    .saw(format!("C1 sends arguments {:?}", longs(arguments)));
            }
            if info.effective_target() != info.target() {
                self.probe.saw(format!(
                    "C1 forwarded from {} to another object",
                    info.target().type_id()
                ));
            }
            let slot = info.get_slot(self.probe.slot())?;
            if let Some(v) = slot.and_then(|v| v.get::<i32>()) {
                self.probe.saw(format!("C1 slot {v}"));
            }
        }
        self.probe.at(self.name, "send_request", info.operation())
    }

    fn send_poll(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        self.probe.at(self.name, "send_poll", info.operation())
    }

    fn receive_reply(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        if self.name == "C1" {
            if let Some(arguments) = info.arguments() {
                self.probe.saw(format!(
                    "C1 arguments {:?} result {:?}",
                    longs(arguments),
                    info.result().and_then(|r| r.get::<i32>())
                ));
            }
        }
        if let Some(c) = info.get_reply_service_context(SERVER_CONTEXT) {
            self.probe.saw(format!(
                "{} reply context {}",
                self.name,
                String::from_utf8_lossy(&c.data)
            ));
        }
        self.probe.at(self.name, "receive_reply", info.operation())
    }

    fn receive_exception(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        self.probe.saw(format!(
            "{} exception {}",
            self.name,
            info.received_exception_id().unwrap_or("?")
        ));
        self.probe
            .at(self.name, "receive_exception", info.operation())
    }

    fn receive_other(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        self.probe.at(self.name, "receive_other", info.operation())
    }
}

struct Server {
    name: &'static str,
    probe: Arc<Probe>,
}

impl ServerRequestInterceptor for Server {
    fn receive_request_service_contexts(
        &self,
        info: &mut ServerRequestInfo,
    ) -> Result<(), Intercept> {
        if self.name == "S1" {
            if let Some(c) = info.get_request_service_context(CLIENT_CONTEXT) {
                self.probe.saw(format!(
                    "S1 request context {}",
                    String::from_utf8_lossy(&c.data)
                ));
                // Into the request's slot, for the servant.
                info.set_slot(self.probe.slot(), Any::from(7))?;
            }
            // What an omniORB client sent is answered in the reply.
            let data = match info.get_request_service_context(OMNIORB_CONTEXT) {
                Some(c) => [b"armillary saw ", &c.data[..]].concat(),
                None => b"S1".to_vec(),
            };
            info.add_reply_service_context(
                ServiceContext {
                    id: SERVER_CONTEXT,
                    data,
                },
                true,
            )?;
        }
        self.probe.at(
            self.name,
            "receive_request_service_contexts",
            info.operation(),
        )
    }

    fn receive_request(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        self.probe
            .at(self.name, "receive_request", info.operation())
    }

    fn send_reply(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        if let (Some(arguments), "S1") = (info.arguments(), self.name) {
            self.probe.saw(format!(
                "S1 arguments {:?} result {:?}",
                longs(arguments),
                info.result().and_then(|r| r.get::<i32>())
            ));
        }
        self.probe.at(self.name, "send_reply", info.operation())
    }

    fn send_exception(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        self.probe.saw(format!(
            "{} exception {}",
            self.name,
            info.sending_exception_id().unwrap_or("?")
        ));
        self.probe.at(self.name, "send_exception", info.operation())
    }

    fn send_other(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        self.probe.at(self.name, "send_other", info.operation())
    }
}

/// The `long` values of a dynamic request's arguments.
fn longs(arguments: &NvList) -> Vec<Option<i32>> {
    arguments
        .iter()
        .map(|a| a.value().and_then(|v| v.get::<i32>()))
        .collect()
}

struct Tagger;

impl IorInterceptor for Tagger {
    fn establish_components(&self, info: &mut IorInfo<'_>) {
        info.add_ior_component(TaggedComponent {
            tag: COMPONENT,
            data: info.type_id().as_bytes().to_vec(),
        });
    }
}

/// Registers one side's interceptors (and, on the server, the IOR
/// interceptor) and the slot.
struct Setup {
    probe: Arc<Probe>,
    server: bool,
}

impl OrbInitializer for Setup {
    fn pre_init(&self, info: &mut OrbInitInfo) {
        *self.probe.slot.lock() = Some(info.allocate_slot_id());
        if self.server {
            for name in ["S1", "S2"] {
                info.add_server_request_interceptor(Arc::new(Server {
                    name,
                    probe: self.probe.clone(),
                }));
            }
        } else {
            for name in ["C1", "C2"] {
                info.add_client_request_interceptor(Arc::new(Client {
                    name,
                    probe: self.probe.clone(),
                }));
            }
        }
    }

    fn post_init(&self, info: &mut OrbInitInfo) {
        if self.server {
            info.add_ior_interceptor(Arc::new(Tagger));
        }
    }
}

#[derive(Debug, PartialEq)]
struct Oops;

impl armillary::runtime::CdrEncode for Oops {
    fn encode(&self, _: &mut CdrWriter) -> Result<(), CdrError> {
        Ok(())
    }
}

impl armillary::runtime::CdrDecode for Oops {
    fn decode(_: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Oops)
    }
}

impl UserException for Oops {
    const REPOSITORY_ID: &'static str = "IDL:Test/Oops:1.0";
}

/// The servant: `echo(v)` → `v + offset`; `fail_user` raises `Oops`;
/// `fail_system` NO_PERMISSION; `note` (oneway) logs; `slot` → the
/// servant thread's PICurrent slot; `later(v)` → `2v`, answered from
/// another thread (AMH).
struct Probed {
    probe: Arc<Probe>,
    offset: i32,
    orb: Mutex<Option<Orb>>,
    later: Mutex<Option<mpsc::Sender<(ResponseHandler, i32)>>>,
}

impl Servant for Probed {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Probed:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let _ = self.probe.at("servant", "run", req.operation());
        match req.operation() {
            // `echo_long` is `Interop::Everything`'s, for omniORB's client.
            "echo" | "echo_long" => {
                let v = req.decode_args(|r| r.read_long())?;
                let offset = self.offset;
                req.encode_results(|w| {
                    w.write_long(v + offset);
                    Ok(())
                })
            }
            "wide" => {
                let v = req.decode_args(|r| r.read_long())?;
                req.encode_results(|w| {
                    w.write_longlong(i64::from(v) << 32);
                    Ok(())
                })
            }
            "fail_user" => req.raise(&Oops),
            "fail_system" => Err(SystemException::no_permission(3, CompletionStatus::Yes)),
            "note" => Ok(()),
            "slot" => {
                let orb = self.orb.lock().clone().expect("the ORB is set");
                let value = orb
                    .pi_current()
                    .get_slot(self.probe.slot())
                    .ok()
                    .flatten()
                    .and_then(|v| v.get::<i32>())
                    .unwrap_or(-1);
                req.encode_results(|w| {
                    w.write_long(value);
                    Ok(())
                })
            }
            "later" => {
                let v = req.decode_args(|r| r.read_long())?;
                let handler = req.respond_later();
                if let Some(tx) = &*self.later.lock() {
                    let _ = tx.send((handler, v));
                }
                Ok(())
            }
            _ => Err(SystemException::bad_operation(
                minor::UNKNOWN_OPERATION,
                CompletionStatus::No,
            )),
        }
    }
}

/// `long add(in long a, in long b)`, served dynamically.
struct Adder {
    probe: Arc<Probe>,
}

impl DynamicServant for Adder {
    fn primary_interface(&self) -> &'static str {
        "IDL:Test/Adder:1.0"
    }

    fn invoke(&self, request: &mut DynamicRequest<'_, '_>) -> Result<(), SystemException> {
        let _ = self.probe.at("servant", "run", request.operation());
        let args = request.arguments(
            NvList::new()
                .with_param(ArgMode::In, TypeCode::long())
                .with_param(ArgMode::In, TypeCode::long()),
        )?;
        let a = args.value(0).and_then(|v| v.get::<i32>()).unwrap_or(0);
        let b = args.value(1).and_then(|v| v.get::<i32>()).unwrap_or(0);
        request.set_result(Any::from(a + b))
    }
}

struct Fixture {
    probe: Arc<Probe>,
    server: Orb,
    client: Orb,
    /// The `Probed` object (offset 0), as the client sees it.
    target: ObjectRef,
    /// Another `Probed` object (offset 1000), as the client sees it.
    other: ObjectRef,
    servant: Arc<Probed>,
    later: mpsc::Receiver<(ResponseHandler, i32)>,
}

thread_local! {
    /// How this test's client reaches the server's objects.
    static COLLOCATION: std::cell::Cell<Collocation> =
        const { std::cell::Cell::new(Collocation::ThruPoa) };
}

fn fixture() -> Fixture {
    fixture_with(MaxGiopVersion::V1_2)
}

/// The fixture, its client speaking GIOP `version` at most.
fn fixture_with(version: MaxGiopVersion) -> Fixture {
    let probe = Arc::new(Probe::default());
    let server = Orb::with_config(OrbConfig::default().orb_initializer(Arc::new(Setup {
        probe: probe.clone(),
        server: true,
    })))
    .unwrap();
    let client = Orb::with_config(
        OrbConfig::default()
            .collocation(COLLOCATION.with(std::cell::Cell::get))
            .max_giop_version(version)
            .orb_initializer(Arc::new(Setup {
                probe: probe.clone(),
                server: false,
            })),
    )
    .unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let (tx, later) = mpsc::channel();
    let servant = Arc::new(Probed {
        probe: probe.clone(),
        offset: 0,
        orb: Mutex::new(Some(server.clone())),
        later: Mutex::new(Some(tx)),
    });
    let id = poa.activate_object(servant.clone()).unwrap();
    let local = poa.id_to_reference(&id).unwrap();
    let other_servant = Arc::new(Probed {
        probe: probe.clone(),
        offset: 1000,
        orb: Mutex::new(Some(server.clone())),
        later: Mutex::new(None),
    });
    let id = poa.activate_object(other_servant).unwrap();
    let other_local = poa.id_to_reference(&id).unwrap();
    let target = client
        .string_to_object(&server.object_to_string(&local))
        .unwrap();
    let other = client
        .string_to_object(&server.object_to_string(&other_local))
        .unwrap();
    Fixture {
        probe,
        server,
        client,
        target,
        other,
        servant,
        later,
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        *self.servant.orb.lock() = None;
        self.client.shutdown(WaitForCompletion::Yes).unwrap();
        self.server.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

fn echo(target: &ObjectRef, v: i32) -> Result<i32, SystemException> {
    target.invoke_plain(
        "echo",
        &|w| {
            w.write_long(v);
            Ok(())
        },
        |r| r.read_long(),
    )
}

/// The client's points of one two-way attempt that got `ending`.
fn client_attempt(ending: &str) -> Vec<String> {
    vec![
        "C1.send_request".into(),
        "C2.send_request".into(),
        format!("C2.{ending}"),
        format!("C1.{ending}"),
    ]
}

/// The server's points of one request that reached the servant and
/// ended in `ending`.
fn server_upcall(ending: &str) -> Vec<String> {
    vec![
        "S1.receive_request_service_contexts".into(),
        "S2.receive_request_service_contexts".into(),
        "S1.receive_request".into(),
        "S2.receive_request".into(),
        format!("S2.{ending}"),
        format!("S1.{ending}"),
    ]
}

/// The whole log of `operation` in order, checked against the client's
/// and the server's points of one request served by the servant.
fn assert_served(probe: &Probe, operation: &str, client_ending: &str, server_ending: &str) {
    let suffix = format!("({operation})");
    let all: Vec<String> = probe
        .log
        .lock()
        .iter()
        .filter(|e| e.ends_with(&suffix))
        .map(|e| e.trim_end_matches(&suffix).to_owned())
        .collect();
    let expected = vec![
        "C1.send_request",
        "C2.send_request",
        "S1.receive_request_service_contexts",
        "S2.receive_request_service_contexts",
        "S1.receive_request",
        "S2.receive_request",
        "servant.run",
    ]
    .into_iter()
    .map(String::from)
    .chain([
        format!("S2.{server_ending}"),
        format!("S1.{server_ending}"),
        format!("C2.{client_ending}"),
        format!("C1.{client_ending}"),
    ])
    .collect::<Vec<_>>();
    assert_eq!(all, expected);
}

#[test]
fn a_normal_reply_runs_every_point_in_order_and_contexts_go_both_ways() {
    let f = fixture();
    assert_eq!(echo(&f.target, 5).unwrap(), 5);
    assert_served(&f.probe, "echo", "receive_reply", "send_reply");
    let seen = f.probe.seen.lock().clone();
    assert!(
        seen.contains(&"S1 request context from C1".to_owned()),
        "{seen:?}"
    );
    assert!(seen.contains(&"C1 reply context S1".to_owned()), "{seen:?}");
    assert!(seen.contains(&"C2 reply context S1".to_owned()), "{seen:?}");
}

/// GIOP 1.0 and 1.1 do not align a reply's body: the server pads a
/// header its interceptors' contexts lengthen, and the body still reads.
#[test]
fn reply_contexts_keep_old_giop_bodies_aligned() {
    for version in [MaxGiopVersion::V1_0, MaxGiopVersion::V1_1] {
        let f = fixture_with(version);
        for v in [5, -1, i32::MAX] {
            assert_eq!(echo(&f.target, v).unwrap(), v, "{version:?}");
            // An 8-byte value, which a misaligned body would misplace.
            let wide = f.target.invoke_plain(
                "wide",
                &|w| {
                    w.write_long(v);
                    Ok(())
                },
                |r| r.read_longlong(),
            );
            assert_eq!(wide.unwrap(), i64::from(v) << 32, "{version:?}");
        }
        let e = f
            .target
            .invoke_plain("fail_system", &|_| Ok(()), |_| Ok(()))
            .unwrap_err();
        assert_eq!(e, SystemException::no_permission(3, CompletionStatus::Yes));
        let seen = f.probe.seen.lock().clone();
        assert!(seen.contains(&"C1 reply context S1".to_owned()), "{seen:?}");
    }
}

#[test]
fn a_user_exception_ends_in_receive_and_send_exception() {
    let f = fixture();
    let err =
        f.target
            .invoke::<(), SystemException>("fail_user", &|_| Ok(()), |reply| match reply {
                ReplyBody::UserException { id, .. } => {
                    assert_eq!(id, "IDL:Test/Oops:1.0");
                    Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
                }
                ReplyBody::Result(_) => Ok(Ok(())),
            });
    assert!(err.is_err());
    assert_served(&f.probe, "fail_user", "receive_exception", "send_exception");
    let seen = f.probe.seen.lock().clone();
    assert!(
        seen.contains(&"S1 exception IDL:Test/Oops:1.0".to_owned()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"C1 exception IDL:Test/Oops:1.0".to_owned()),
        "{seen:?}"
    );
}

#[test]
fn a_system_exception_ends_in_receive_and_send_exception() {
    let f = fixture();
    let e = f
        .target
        .invoke_plain("fail_system", &|_| Ok(()), |_| Ok(()))
        .unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::NoPermission);
    assert_served(
        &f.probe,
        "fail_system",
        "receive_exception",
        "send_exception",
    );
    let seen = f.probe.seen.lock().clone();
    let id = "IDL:omg.org/CORBA/NO_PERMISSION:1.0";
    assert!(seen.contains(&format!("C1 exception {id}")), "{seen:?}");
    assert!(seen.contains(&format!("S2 exception {id}")), "{seen:?}");
}

#[test]
fn a_oneway_ends_in_receive_other_and_send_reply() {
    let f = fixture();
    f.target.invoke_oneway("note", &|_| Ok(())).unwrap();
    assert_eq!(f.probe.take("C", "note"), client_attempt("receive_other"));
    wait_until("the server's ending point ran", || {
        f.probe
            .log
            .lock()
            .iter()
            .any(|e| e == "S1.send_reply(note)")
    });
    assert_eq!(f.probe.take("S", "note"), server_upcall("send_reply"));
    assert_eq!(f.probe.take("servant", "note"), vec!["servant.run"]);
    // Acknowledged by the servant: receive_reply.
    f.target
        .invoke_oneway_with(SyncScope::WithTarget, "note", &|_| Ok(()))
        .unwrap();
    assert_served(&f.probe, "note", "receive_reply", "send_reply");
}

/// Forwards every request for an object to `to` (ForwardRequest).
struct Forwarder {
    to: ObjectRef,
}

impl armillary::poa::ServantActivator for Forwarder {
    fn incarnate(
        &self,
        _: &armillary::poa::ObjectId,
        _: &armillary::poa::Poa,
    ) -> Result<Arc<dyn Servant>, armillary::poa::ServantManagerError> {
        Err(armillary::poa::ServantManagerError::Forward(
            self.to.clone(),
        ))
    }

    fn etherealize(
        &self,
        _: &armillary::poa::ObjectId,
        _: &armillary::poa::Poa,
        _: Arc<dyn Servant>,
        _: bool,
        _: bool,
    ) {
    }
}

#[test]
fn a_location_forward_ends_in_receive_and_send_other_then_is_followed() {
    use armillary::poa::{IdAssignmentPolicy, Policy, RequestProcessingPolicy, ServantManager};
    let f = fixture();
    let root = f.server.root_poa();
    let other_local = f
        .server
        .string_to_object(&f.client.object_to_string(&f.other))
        .unwrap();
    let poa = root
        .create_poa(
            "forwarding",
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    poa.set_servant_manager(ServantManager::Activator(Arc::new(Forwarder {
        to: other_local,
    })))
    .unwrap();
    let moved = poa
        .create_reference_with_id(b"moved", "IDL:Test/Probed:1.0")
        .unwrap();
    let moved = f
        .client
        .string_to_object(&f.server.object_to_string(&moved))
        .unwrap();
    f.probe.clear();
    assert_eq!(echo(&moved, 1).unwrap(), 1001);
    let log: Vec<String> = f.probe.log.lock().clone();
    let expected: Vec<&str> = vec![
        "C1.send_request(echo)",
        "C2.send_request(echo)",
        "S1.receive_request_service_contexts(echo)",
        "S2.receive_request_service_contexts(echo)",
        "S2.send_other(echo)",
        "S1.send_other(echo)",
        "C2.receive_other(echo)",
        "C1.receive_other(echo)",
        "C1.send_request(echo)",
        "C2.send_request(echo)",
        "S1.receive_request_service_contexts(echo)",
        "S2.receive_request_service_contexts(echo)",
        "S1.receive_request(echo)",
        "S2.receive_request(echo)",
        "servant.run(echo)",
        "S2.send_reply(echo)",
        "S1.send_reply(echo)",
        "C2.receive_reply(echo)",
        "C1.receive_reply(echo)",
    ];
    assert_eq!(log, expected);
}

#[test]
fn a_request_the_poa_refuses_ends_in_send_exception_without_receive_request() {
    let f = fixture();
    let poa = f.server.root_poa();
    let id = poa
        .reference_to_id(
            &f.server
                .string_to_object(&f.client.object_to_string(&f.other))
                .unwrap(),
        )
        .unwrap();
    poa.deactivate_object(&id).unwrap();
    let e = echo(&f.other, 1).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);
    assert_eq!(
        f.probe.take("S", "echo"),
        vec![
            "S1.receive_request_service_contexts",
            "S2.receive_request_service_contexts",
            "S2.send_exception",
            "S1.send_exception",
        ]
    );
    assert_eq!(
        f.probe.take("C", "echo"),
        client_attempt("receive_exception")
    );
}

#[test]
fn forward_request_from_send_request_redirects_the_call() {
    let f = fixture();
    f.probe.rule(
        "C2",
        "send_request",
        "echo",
        Action::Forward(f.other.clone()),
    );
    assert_eq!(echo(&f.target, 2).unwrap(), 1002);
    // The second attempt's effective target is where it was forwarded.
    let forwarded: Vec<String> = f
        .probe
        .seen
        .lock()
        .iter()
        .filter(|s| s.starts_with("C1 forwarded"))
        .cloned()
        .collect();
    assert_eq!(
        forwarded,
        vec!["C1 forwarded from IDL:Test/Probed:1.0 to another object"]
    );
    let client = f.probe.take("C", "echo");
    assert_eq!(
        client,
        vec![
            // C2 did not complete its starting point: only C1 ends.
            "C1.send_request",
            "C2.send_request",
            "C1.receive_other",
            "C1.send_request",
            "C2.send_request",
            "C2.receive_reply",
            "C1.receive_reply",
        ]
    );
    // Only the forwarded attempt reached the server.
    assert_eq!(f.probe.take("S", "echo"), server_upcall("send_reply"));
}

#[test]
fn forward_request_from_receive_request_redirects_the_call() {
    let f = fixture();
    f.probe.rule(
        "S2",
        "receive_request",
        "echo",
        Action::Forward(f.other.clone()),
    );
    assert_eq!(echo(&f.target, 3).unwrap(), 1003);
    let server = f.probe.take("S", "echo");
    assert_eq!(
        server,
        vec![
            "S1.receive_request_service_contexts",
            "S2.receive_request_service_contexts",
            "S1.receive_request",
            "S2.receive_request",
            "S2.send_other",
            "S1.send_other",
            // The client follows it to the other object.
            "S1.receive_request_service_contexts",
            "S2.receive_request_service_contexts",
            "S1.receive_request",
            "S2.receive_request",
            "S2.send_reply",
            "S1.send_reply",
        ]
    );
    let mut expected = client_attempt("receive_other");
    expected.extend(client_attempt("receive_reply"));
    assert_eq!(f.probe.take("C", "echo"), expected);
    // The first object's servant never ran.
    assert_eq!(f.probe.take("servant", "echo"), vec!["servant.run"]);
}

#[test]
fn a_request_that_finds_no_server_is_seen_to_start_and_fail() {
    let f = fixture();
    let gone = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = gone.root_poa();
    let id = poa
        .activate_object(Probed {
            probe: f.probe.clone(),
            offset: 0,
            orb: Mutex::new(None),
            later: Mutex::new(None),
        })
        .unwrap();
    let ior = gone.object_to_string(&poa.id_to_reference(&id).unwrap());
    gone.shutdown(WaitForCompletion::Yes).unwrap();
    let target = f.client.string_to_object(&ior).unwrap();
    let e = echo(&target, 1).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Transient);
    assert_eq!(
        f.probe.take("C", "echo"),
        client_attempt("receive_exception")
    );
}

#[test]
fn picurrent_slots_flow_into_the_request_and_into_the_servant() {
    let f = fixture();
    let slot = f.probe.slot();
    f.client.pi_current().set_slot(slot, Any::from(42)).unwrap();
    let seen_by_servant = f
        .target
        .invoke_plain("slot", &|_| Ok(()), |r| r.read_long())
        .unwrap();
    // S1 put 7 in the request's slot; the servant's thread had it.
    assert_eq!(seen_by_servant, 7);
    assert!(f.probe.seen.lock().contains(&"C1 slot 42".to_owned()));
    // The thread's own slot is the thread's.
    assert_eq!(
        f.client
            .pi_current()
            .get_slot(slot)
            .unwrap()
            .and_then(|v| v.get::<i32>()),
        Some(42)
    );
    assert!(f
        .client
        .pi_current()
        .get_slot(SlotIdOutOfRange::id())
        .is_err());
}

/// A slot no initializer allocated.
struct SlotIdOutOfRange;

impl SlotIdOutOfRange {
    fn id() -> SlotId {
        // The fixture allocates one slot per ORB; ask a second ORB's
        // initializer for its second.
        let mut info = OrbInitInfo::default();
        info.allocate_slot_id();
        info.allocate_slot_id()
    }
}

#[test]
fn a_panicking_interceptor_gives_unknown_and_the_next_request_works() {
    let f = fixture();
    f.probe.rule("S1", "receive_request", "echo", Action::Panic);
    let e = echo(&f.target, 1).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Unknown);
    assert_eq!(e.minor(), minor::INTERCEPTOR_PANICKED);
    assert_eq!(echo(&f.target, 2).unwrap(), 2);

    f.probe.rule("C1", "send_request", "echo", Action::Panic);
    let e = echo(&f.target, 3).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Unknown);
    assert_eq!(e.minor(), minor::INTERCEPTOR_PANICKED);
    assert_eq!(echo(&f.target, 4).unwrap(), 4);
}

#[test]
fn a_raising_interceptor_gives_its_exception_and_the_next_request_works() {
    let f = fixture();
    let no = SystemException::no_permission(9, CompletionStatus::Yes);
    f.probe
        .rule("C2", "receive_reply", "echo", Action::Raise(no.clone()));
    assert_eq!(echo(&f.target, 1).unwrap_err(), no);
    // C2 raised in its ending point: C1's becomes receive_exception.
    let client = f.probe.take("C", "echo");
    assert_eq!(
        client,
        vec![
            "C1.send_request",
            "C2.send_request",
            "C2.receive_reply",
            "C1.receive_exception",
        ]
    );
    f.probe.clear();
    let transient = SystemException::transient(2, CompletionStatus::No);
    f.probe.rule(
        "S1",
        "receive_request_service_contexts",
        "echo",
        Action::Raise(transient.clone()),
    );
    assert_eq!(echo(&f.target, 1).unwrap_err(), transient);
    // S1 did not complete its starting point: no ending point runs, and
    // neither does the servant.
    assert_eq!(
        f.probe.take("S", "echo"),
        vec!["S1.receive_request_service_contexts"]
    );
    assert!(f.probe.take("servant", "echo").is_empty());
    assert_eq!(echo(&f.target, 5).unwrap(), 5);
}

#[test]
fn a_dii_deferred_request_runs_send_poll() {
    let f = fixture();
    let mut request = f
        .target
        .request("echo")
        .with_in(Any::from(6))
        .returns(TypeCode::long());
    // The interceptors see a dynamic request's arguments and result.
    request.send_deferred().unwrap();
    request.get_response().unwrap();
    assert_eq!(request.return_value().and_then(|v| v.get::<i32>()), Some(6));
    let seen = f.probe.seen.lock().clone();
    assert!(
        seen.contains(&"C1 sends arguments [Some(6)]".to_owned()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"C1 arguments [Some(6)] result Some(6)".to_owned()),
        "{seen:?}"
    );
    assert_eq!(
        f.probe.take("C", "echo"),
        vec![
            "C1.send_request",
            "C2.send_request",
            "C1.send_poll",
            "C2.send_poll",
            "C2.receive_reply",
            "C1.receive_reply",
        ]
    );
    assert_eq!(f.probe.take("S", "echo"), server_upcall("send_reply"));
}

#[test]
fn an_ami_poller_runs_send_poll() {
    let f = fixture();
    let mut poller = f.target.send_poller(
        "echo",
        |w: &mut CdrWriter| {
            w.write_long(10);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    );
    assert_eq!(poller.take(), Ok(10));
    assert_eq!(
        f.probe.take("C", "echo"),
        vec![
            "C1.send_request",
            "C2.send_request",
            "C1.send_poll",
            "C2.send_poll",
            "C2.receive_reply",
            "C1.receive_reply",
        ]
    );
}

#[test]
fn ami_futures_and_callbacks_run_the_points() {
    let f = fixture();
    let future = f.target.send_future(
        "echo",
        |w: &mut CdrWriter| {
            w.write_long(8);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    );
    assert_eq!(pollster::block_on(future), Ok(8));
    assert_served(&f.probe, "echo", "receive_reply", "send_reply");
    f.probe.clear();

    let (tx, rx) = mpsc::channel();
    f.target
        .send_callback::<i32, SystemException>(
            "echo",
            |w: &mut CdrWriter| {
                w.write_long(9);
                Ok(())
            },
            |r| r.read_long(),
            move |outcome| {
                let _ = tx.send(outcome.ok());
            },
        )
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), Some(9));
    assert_served(&f.probe, "echo", "receive_reply", "send_reply");
}

#[test]
fn an_amh_servant_s_reply_runs_the_server_s_ending_point_when_it_answers() {
    let f = fixture();
    let target = f.target.clone();
    let call = std::thread::spawn(move || {
        target.invoke_plain(
            "later",
            &|w| {
                w.write_long(21);
                Ok(())
            },
            |r| r.read_long(),
        )
    });
    let (handler, v) = f.later.recv_timeout(Duration::from_secs(30)).unwrap();
    // The servant has returned; the reply is not written yet.
    assert!(!f
        .probe
        .log
        .lock()
        .iter()
        .any(|e| e.starts_with("S1.send_reply")));
    handler.reply(|w| {
        w.write_long(2 * v);
        Ok(())
    });
    assert_eq!(call.join().unwrap().unwrap(), 42);
    assert_served(&f.probe, "later", "receive_reply", "send_reply");
}

#[test]
fn a_dsi_servant_is_intercepted() {
    let f = fixture();
    let poa = f.server.root_poa();
    let id = poa
        .activate_object(Adder {
            probe: f.probe.clone(),
        })
        .unwrap();
    let adder = f
        .client
        .string_to_object(
            &f.server
                .object_to_string(&poa.id_to_reference(&id).unwrap()),
        )
        .unwrap();
    let sum = adder
        .invoke_plain(
            "add",
            &|w| {
                w.write_long(2);
                w.write_long(3);
                Ok(())
            },
            |r| r.read_long(),
        )
        .unwrap();
    assert_eq!(sum, 5);
    assert_served(&f.probe, "add", "receive_reply", "send_reply");
    // The server's interceptors see a DSI servant's arguments and result.
    let seen = f.probe.seen.lock().clone();
    assert!(
        seen.contains(&"S1 arguments [Some(2), Some(3)] result Some(5)".to_owned()),
        "{seen:?}"
    );
}

#[test]
fn an_ior_interceptor_s_component_is_in_the_references_the_poa_makes() {
    let f = fixture();
    let profiles = f.target.ior().iiop_profiles();
    let component = profiles[0]
        .components
        .iter()
        .find(|c| c.tag == COMPONENT)
        .expect("the IOR interceptor's component");
    assert_eq!(component.data, b"IDL:Test/Probed:1.0");
    // A client ORB without IOR interceptors adds none to what it makes.
    let poa = f.client.root_poa();
    let id = poa
        .activate_object(Arc::new(Probed {
            probe: f.probe.clone(),
            offset: 0,
            orb: Mutex::new(None),
            later: Mutex::new(None),
        }))
        .unwrap();
    let plain = poa.id_to_reference(&id).unwrap();
    assert!(plain.ior().iiop_profiles()[0]
        .components
        .iter()
        .all(|c| c.tag != COMPONENT));
}

#[test]
fn service_contexts_cross_omniorb_s_interceptors_both_ways() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let f = fixture();

    // Armillary's client interceptor to omniORB's server interceptors and
    // back: omniORB read C1's context and answered it in the reply.
    let (_server, ior) = start_pi_server(&peers, "interceptors", &[]);
    let everything = f.client.string_to_object(&ior).unwrap();
    let v = everything
        .invoke_plain(
            "echo_long",
            &|w| {
                w.write_long(5);
                Ok(())
            },
            |r| r.read_long(),
        )
        .unwrap();
    assert_eq!(v, 5);
    let seen = f.probe.seen.lock().clone();
    assert!(
        seen.contains(&"C1 reply context omniORB saw from C1".to_owned()),
        "{seen:?}"
    );

    // omniORB's client interceptor to Armillary's server interceptor and
    // back.
    let ior = f.server.object_to_string(
        &f.server
            .string_to_object(&f.client.object_to_string(&f.target))
            .unwrap(),
    );
    let mut client = LinePeer::spawn({
        let mut command = std::process::Command::new(peers.join("pi_peer"));
        command.args(["call", &ior]);
        command
    });
    assert_eq!(client.next_line("the result"), "RESULT 7");
    assert_eq!(
        client.next_line("the reply's context"),
        "REPLY_CONTEXT armillary saw hello from omniORB"
    );
    assert!(client.wait_exit().success());
    assert!(f
        .probe
        .log
        .lock()
        .iter()
        .any(|e| e == "S1.send_reply(echo_long)"));
}

/// The tests above again, the client's calls over loopback IIOP.
#[test]
fn everything_again_over_iiop() {
    COLLOCATION.with(|c| c.set(Collocation::None));
    a_normal_reply_runs_every_point_in_order_and_contexts_go_both_ways();
    reply_contexts_keep_old_giop_bodies_aligned();
    a_user_exception_ends_in_receive_and_send_exception();
    a_system_exception_ends_in_receive_and_send_exception();
    a_oneway_ends_in_receive_other_and_send_reply();
    a_location_forward_ends_in_receive_and_send_other_then_is_followed();
    a_request_the_poa_refuses_ends_in_send_exception_without_receive_request();
    forward_request_from_send_request_redirects_the_call();
    forward_request_from_receive_request_redirects_the_call();
    picurrent_slots_flow_into_the_request_and_into_the_servant();
    a_panicking_interceptor_gives_unknown_and_the_next_request_works();
    a_raising_interceptor_gives_its_exception_and_the_next_request_works();
    a_dii_deferred_request_runs_send_poll();
    an_ami_poller_runs_send_poll();
    ami_futures_and_callbacks_run_the_points();
    an_amh_servant_s_reply_runs_the_server_s_ending_point_when_it_answers();
    a_dsi_servant_is_intercepted();
}
