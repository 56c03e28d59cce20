//! Armillary to Armillary over IIOP on loopback: a hand-written servant
//! behind the POA, clients in every GIOP version, user and system
//! exceptions, oneways, corbaloc keys, holding POA managers, a thread-pool
//! server under concurrent clients, and garbage on the wire.

use armillary::WaitForCompletion;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::giop::{
    LocateStatus, Message, MessageBody, MessageBuilder, MessageType, TargetAddress,
};
use armillary::giop::system_exception::{CompletionStatus, SystemException, SystemExceptionKind};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest, UserException};
use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::wait_until;

#[derive(Debug, PartialEq)]
struct Oops {
    code: i32,
}

impl CdrEncode for Oops {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_long(self.code);
        Ok(())
    }
}

impl CdrDecode for Oops {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Oops {
            code: r.read_long()?,
        })
    }
}

impl UserException for Oops {
    const REPOSITORY_ID: &'static str = "IDL:Test/Oops:1.0";
}

#[derive(Default)]
struct Echo {
    pings: AtomicI32,
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
        match req.operation() {
            "echo_long" => {
                let v = req.args().read_long().map_err(bad)?;
                req.results().write_long(v);
            }
            "echo_string" => {
                let v = req.args().read_string().map_err(bad)?;
                req.results().write_string(&v).map_err(bad)?;
            }
            "echo_wstring" => {
                let v = req.args().read_wstring().map_err(bad)?;
                req.results().write_wstring(&v).map_err(bad)?;
            }
            "echo_bytes" => {
                let v = req.args().read_octet_seq().map_err(bad)?.to_vec();
                req.results().write_octet_seq(&v).map_err(bad)?;
            }
            "fail" => {
                let code = req.args().read_long().map_err(bad)?;
                req.raise(&Oops { code })?;
            }
            "boom" => return Err(SystemException::no_resources(3, CompletionStatus::Yes)),
            "ping" => {
                self.pings.fetch_add(1, Ordering::SeqCst);
            }
            "pings" => req.results().write_long(self.pings.load(Ordering::SeqCst)),
            "slow" => {
                std::thread::sleep(Duration::from_millis(50));
                req.results().write_long(1);
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

fn server(config: OrbConfig) -> (Orb, ObjectRef) {
    let orb = Orb::with_config(config).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Echo::default());
    let obj = poa.servant_to_reference(&servant).unwrap();
    (orb, obj)
}

fn client(version: GiopVersion) -> Orb {
    Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .max_giop_version(version.try_into().unwrap()),
    )
    .unwrap()
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

#[derive(Debug, PartialEq)]
enum FailError {
    Oops(Oops),
    System(SystemException),
}

impl From<SystemException> for FailError {
    fn from(e: SystemException) -> Self {
        FailError::System(e)
    }
}

#[test]
fn calls_in_every_giop_version() {
    calls_in_every_giop_version_with(ConcurrencyModel::SingleThreadedReactive);
}

#[test]
fn calls_in_every_giop_version_on_a_thread_pool() {
    calls_in_every_giop_version_with(ConcurrencyModel::ThreadPool(3));
}

#[test]
fn calls_in_every_giop_version_with_a_thread_per_connection() {
    calls_in_every_giop_version_with(ConcurrencyModel::ThreadPerConnection);
}

fn calls_in_every_giop_version_with(concurrency: ConcurrencyModel) {
    let (server_orb, obj) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(concurrency),
    );
    let ior = server_orb.object_to_string(&obj);
    assert!(!ior.contains("0.0.0.0"));
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        let orb = client(version);
        let remote = orb.string_to_object(&ior).unwrap();
        assert!(remote.is_a("IDL:Test/Echo:1.0").unwrap());
        assert!(!remote.is_a("IDL:Test/Other:1.0").unwrap());
        assert!(!remote.non_existent().unwrap());
        assert_eq!(long_call(&remote, "echo_long", -5).unwrap(), -5);
        let s: String = remote
            .invoke::<_, SystemException>("echo_string", &|w| w.write_string("grüße"), |reply| {
                match reply {
                    ReplyBody::Result(r) => Ok(Ok(r.read_string()?)),
                    ReplyBody::UserException { .. } => unreachable!(),
                }
            })
            .unwrap();
        assert_eq!(s, "grüße");
        if version >= GiopVersion::V1_1 {
            let w: String = remote
                .invoke::<_, SystemException>(
                    "echo_wstring",
                    &|w| w.write_wstring("wide ☺ 𝄞"),
                    |reply| match reply {
                        ReplyBody::Result(r) => Ok(Ok(r.read_wstring()?)),
                        ReplyBody::UserException { .. } => unreachable!(),
                    },
                )
                .unwrap();
            assert_eq!(w, "wide ☺ 𝄞");
        }
        let big = vec![7u8; 3 << 20];
        let back: Vec<u8> = remote
            .invoke::<_, SystemException>("echo_bytes", &|w| w.write_octet_seq(&big), |reply| {
                match reply {
                    ReplyBody::Result(r) => Ok(Ok(r.read_octet_seq()?.to_vec())),
                    ReplyBody::UserException { .. } => unreachable!(),
                }
            })
            .unwrap();
        assert_eq!(back, big);
        let e = remote
            .invoke::<(), FailError>(
                "fail",
                &|w| {
                    w.write_long(9);
                    Ok(())
                },
                |reply| match reply {
                    ReplyBody::Result(_) => Ok(Ok(())),
                    ReplyBody::UserException { id, members } => {
                        assert_eq!(id, Oops::REPOSITORY_ID);
                        Ok(Err(FailError::Oops(Oops::decode(members)?)))
                    }
                },
            )
            .unwrap_err();
        assert_eq!(e, FailError::Oops(Oops { code: 9 }));
        let e = long_call(&remote, "boom", 0).unwrap_err();
        assert_eq!(
            (e.kind(), e.minor(), e.completed()),
            (SystemExceptionKind::NoResources, 3, CompletionStatus::Yes)
        );
        let e = long_call(&remote, "nope", 0).unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::BadOperation);
        // Two oneways, then a two-way on the same connection. The ordered
        // models have run the oneways before the two-way; a thread pool
        // keeps no order between a connection's requests (see
        // `ConcurrencyModel`), so there the count is awaited.
        let before = long_call(&remote, "pings", 0).unwrap();
        remote.invoke_oneway("ping", &|_| Ok(())).unwrap();
        remote.invoke_oneway("ping", &|_| Ok(())).unwrap();
        if matches!(concurrency, ConcurrencyModel::ThreadPool(_)) {
            wait_until("both oneways ran", || {
                long_call(&remote, "pings", 0).unwrap() == before + 2
            });
        } else {
            assert_eq!(long_call(&remote, "pings", 0).unwrap(), before + 2);
        }
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn corbaloc_keys_and_unknown_objects() {
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    server_orb.bind_object_key("Echo", obj.clone());
    let (host, port) = server_orb
        .endpoints()
        .first()
        .map(|e| (e.host().to_owned(), e.port()))
        .unwrap();
    let orb = client(GiopVersion::V1_2);
    let by_key = orb
        .string_to_object(&format!("corbaloc:iiop:1.2@{host}:{port}/Echo"))
        .unwrap();
    assert_eq!(long_call(&by_key, "echo_long", 3).unwrap(), 3);
    let missing = orb
        .string_to_object(&format!("corbaloc::{host}:{port}/Missing"))
        .unwrap();
    assert_eq!(
        long_call(&missing, "echo_long", 3).unwrap_err().kind(),
        SystemExceptionKind::ObjectNotExist
    );
    // A reference whose object was deactivated.
    let poa = server_orb.root_poa();
    let id = poa.reference_to_id(&obj).unwrap();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    poa.deactivate_object(&id).unwrap();
    assert_eq!(
        long_call(&remote, "echo_long", 3).unwrap_err().kind(),
        SystemExceptionKind::ObjectNotExist
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_holding_manager_queues_requests_until_activated() {
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let manager = server_orb.root_poa().manager();
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(long_call(&remote, "echo_long", 1).unwrap(), 1);
    manager
        .hold_requests(armillary::WaitForCompletion::No)
        .unwrap();
    let caller = std::thread::spawn(move || long_call(&remote, "echo_long", 2));
    wait_until("the call is held", || manager.held_count() == 1);
    assert!(!caller.is_finished());
    manager.activate().unwrap();
    assert_eq!(caller.join().unwrap().unwrap(), 2);
    manager
        .discard_requests(armillary::WaitForCompletion::No)
        .unwrap();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(
        long_call(&remote, "echo_long", 3).unwrap_err().kind(),
        SystemExceptionKind::Transient
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_thread_pool_serves_concurrent_clients() {
    concurrent_clients(ConcurrencyModel::ThreadPool(4));
}

#[test]
fn threads_per_connection_serve_concurrent_clients() {
    concurrent_clients(ConcurrencyModel::ThreadPerConnection);
}

fn concurrent_clients(concurrency: ConcurrencyModel) {
    let (server_orb, obj) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(concurrency),
    );
    let ior = server_orb.object_to_string(&obj);
    let orb = client(GiopVersion::V1_2);
    let remote = orb.string_to_object(&ior).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let remote = remote.clone();
            std::thread::spawn(move || {
                for j in 0..50 {
                    assert_eq!(
                        long_call(&remote, "echo_long", i * 1000 + j).unwrap(),
                        i * 1000 + j
                    );
                }
                long_call(&remote, "slow", 0).unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 1);
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

fn read_message(stream: &mut TcpStream) -> Vec<u8> {
    armillary_testkit::giop::read_message(stream)
        .unwrap()
        .expect("a message")
}

#[test]
fn garbage_gets_a_message_error_and_others_are_still_served() {
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let (host, port) = server_orb
        .endpoints()
        .first()
        .map(|e| (e.host().to_owned(), e.port()))
        .unwrap();
    let mut raw = TcpStream::connect((host.as_str(), port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let reply = read_message(&mut raw);
    assert_eq!(
        Message::decode(&reply).unwrap().header.message_type,
        MessageType::MessageError
    );
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "the connection is closed after MessageError"
    );

    // A LocateRequest on a fresh connection.
    let key = obj.ior().iiop_profiles()[0].object_key.clone();
    let mut raw = TcpStream::connect((host.as_str(), port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for (id, key) in [(1, key.clone()), (2, b"nothing".to_vec())] {
        let locate = MessageBuilder::new(
            GiopVersion::V1_2,
            ByteOrder::Big,
            &MessageBody::LocateRequest {
                request_id: id,
                target: TargetAddress::Key(key.into()),
            },
        )
        .unwrap()
        .finish(false);
        raw.write_all(&locate).unwrap();
        let reply = Message::decode(&read_message(&mut raw)).unwrap();
        let MessageBody::LocateReply(h) = reply.body else {
            panic!("{reply:?}")
        };
        assert_eq!(h.request_id, id);
        let expected = if id == 1 {
            LocateStatus::ObjectHere
        } else {
            LocateStatus::UnknownObject
        };
        assert_eq!(h.locate_status, expected);
    }
    // A truncated message followed by EOF: the server just drops it.
    raw.write_all(&b"GIOP\x01\x02\x01\x00\xff\x00\x00\x00"[..])
        .unwrap();
    drop(raw);

    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(long_call(&remote, "echo_long", 11).unwrap(), 11);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn orb_options_and_shutdown() {
    let (orb, rest) =
        Orb::init(["app", "-ORBListenEndpoints", "iiop://127.0.0.1:0", "--flag"]).unwrap();
    assert_eq!(rest, ["app", "--flag"]);
    assert_eq!(orb.endpoints()[0].host(), "127.0.0.1");
    assert!(Orb::init(["-ORBListenEndpoints", "tcp://x"]).is_err());
    let (wild, _) = Orb::init(["-ORBListenEndpoints", "iiop://0.0.0.0:0"]).unwrap();
    assert!(wild.endpoints().iter().all(|e| e.host() != "0.0.0.0"));
    wild.shutdown(WaitForCompletion::Yes).unwrap();
    let runner = {
        let orb = orb.clone();
        std::thread::spawn(move || orb.run().unwrap())
    };
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    runner.join().unwrap();
}

#[test]
fn idle_connections_are_closed_and_calls_still_succeed() {
    let (server_orb, obj) = server(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .idle_timeout(Duration::from_secs(1)),
    );
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(long_call(&remote, "echo_long", 1).unwrap(), 1);
    // The server closes the idle connection with CloseConnection; the next
    // call finds it closed (or races with the close) and goes out again on
    // a new connection, transparently.
    std::thread::sleep(Duration::from_millis(2200));
    for i in 0..5 {
        assert_eq!(long_call(&remote, "echo_long", i).unwrap(), i);
    }
    // Right at the edge of the timeout, repeatedly.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1000));
        assert_eq!(long_call(&remote, "echo_long", 7).unwrap(), 7);
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Forwards each request for an object (ForwardRequest) to the next
/// reference of a list, the last one for good; TRANSIENT when the list is
/// empty.
struct ForwardInTurn {
    to: std::sync::Mutex<std::collections::VecDeque<ObjectRef>>,
}

impl armillary::poa::ServantActivator for ForwardInTurn {
    fn incarnate(
        &self,
        _oid: &armillary::poa::ObjectId,
        _poa: &armillary::poa::Poa,
    ) -> Result<Arc<dyn Servant>, armillary::poa::ServantManagerError> {
        let mut to = self.to.lock().unwrap();
        let next = match to.len() {
            0 => return Err(SystemException::transient(0, CompletionStatus::No).into()),
            1 => to[0].clone(),
            _ => to.pop_front().unwrap(),
        };
        Err(armillary::poa::ServantManagerError::Forward(next))
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
fn location_forward_is_followed_transparently_and_bounded() {
    use armillary::poa::{IdAssignmentPolicy, Policy, RequestProcessingPolicy, ServantManager};
    let (server_orb, target) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let root = server_orb.root_poa();
    let forwarder = Arc::new(ForwardInTurn {
        to: std::sync::Mutex::new([target.clone()].into()),
    });
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
    poa.set_servant_manager(ServantManager::Activator(forwarder.clone()))
        .unwrap();
    let moved = poa
        .create_reference_with_id(b"moved", "IDL:Test/Echo:1.0")
        .unwrap();
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&moved))
        .unwrap();
    assert_eq!(long_call(&remote, "echo_long", 21).unwrap(), 21);
    // A forward to itself loops until the hop limit: TRANSIENT, not a hang.
    *forwarder.to.lock().unwrap() = [moved.clone()].into();
    let looping = poa
        .create_reference_with_id(b"loop", "IDL:Test/Echo:1.0")
        .unwrap();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&looping))
        .unwrap();
    assert_eq!(
        long_call(&remote, "echo_long", 1).unwrap_err().kind(),
        SystemExceptionKind::Transient
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// CORBA 3.0 §15.6: a client whose forwarded reference cannot be reached
/// restarts the location process at the original reference. Here the
/// original forwards first to a port nobody listens on (the attempt
/// fails before anything is sent: TRANSIENT, COMPLETED_NO), then to the
/// live object: the call, synchronous or collected later through a
/// poller, goes back and completes.
#[test]
fn a_call_whose_forwarded_reference_is_unreachable_restarts_at_its_own() {
    use armillary::poa::{IdAssignmentPolicy, Policy, RequestProcessingPolicy, ServantManager};
    let (server_orb, target) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dead = server_orb
        .string_to_object(&format!("corbaloc::1.2@127.0.0.1:{closed_port}/gone"))
        .unwrap();
    let root = server_orb.root_poa();
    let forwarder = Arc::new(ForwardInTurn {
        to: std::sync::Mutex::new(Default::default()),
    });
    let poa = root
        .create_poa(
            "forwarding-in-turn",
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    poa.set_servant_manager(ServantManager::Activator(forwarder.clone()))
        .unwrap();
    let moved = poa
        .create_reference_with_id(b"moved", "IDL:Test/Echo:1.0")
        .unwrap();
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&moved))
        .unwrap();
    *forwarder.to.lock().unwrap() = [dead.clone(), target.clone()].into();
    assert_eq!(long_call(&remote, "echo_long", 21).unwrap(), 21);
    *forwarder.to.lock().unwrap() = [dead.clone(), target.clone()].into();
    let mut poller = remote.send_poller(
        "echo_long",
        |w| {
            w.write_long(22);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => panic!("no user exception"),
        },
    );
    let polled: Result<i32, SystemException> = poller.take();
    assert_eq!(polled.unwrap(), 22);
    // Forwarded to the unreachable one every time: the call ends with its
    // TRANSIENT once the returns are spent, not in a loop.
    *forwarder.to.lock().unwrap() = [dead].into();
    let e = long_call(&remote, "echo_long", 1).unwrap_err();
    assert_eq!(
        (e.kind(), e.completed()),
        (SystemExceptionKind::Transient, CompletionStatus::No)
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn persistent_references_survive_a_server_restart() {
    use armillary::poa::{IdAssignmentPolicy, LifespanPolicy, Policy};
    // The first server takes a port the system chooses (a port found free
    // beforehand may be taken by then); the second reopens that one.
    let start = |port: u16| {
        let (orb, _) =
            Orb::init(["-ORBListenEndpoints", &format!("iiop://127.0.0.1:{port}")]).unwrap();
        let root = orb.root_poa();
        let poa = root
            .create_poa(
                "store",
                Some(root.manager()),
                &[
                    Policy::Lifespan(LifespanPolicy::Persistent),
                    Policy::IdAssignment(IdAssignmentPolicy::UserId),
                ],
            )
            .unwrap();
        poa.activate_object_with_id(b"item", Arc::new(Echo::default()))
            .unwrap();
        root.manager().activate().unwrap();
        let obj = poa.id_to_reference(b"item").unwrap();
        (orb, obj)
    };
    let (first, obj) = start(0);
    let port = first.endpoints()[0].port();
    let ior = first.object_to_string(&obj);
    let orb = client(GiopVersion::V1_2);
    let remote = orb.string_to_object(&ior).unwrap();
    assert_eq!(long_call(&remote, "echo_long", 1).unwrap(), 1);
    first.shutdown(WaitForCompletion::Yes).unwrap();
    drop(first);
    let (second, obj2) = start(port);
    assert_eq!(second.object_to_string(&obj2).len(), ior.len());
    // The old reference reaches the new server, and the new server's
    // POA takes it as its own.
    assert_eq!(long_call(&remote, "echo_long", 2).unwrap(), 2);
    let store = second.root_poa().find_poa("store").unwrap();
    let in_second = second.string_to_object(&ior).unwrap();
    assert_eq!(store.reference_to_id(&in_second).unwrap(), b"item");
    // Another server with a persistent POA of the same name (so the same
    // key) does not: the reference names another address.
    let (third, _) = start(0);
    let other_store = third.root_poa().find_poa("store").unwrap();
    let in_third = third.string_to_object(&ior).unwrap();
    assert_eq!(
        other_store.reference_to_id(&in_third),
        Err(armillary::poa::PoaError::WrongAdapter)
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    second.shutdown(WaitForCompletion::Yes).unwrap();
    third.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn ipv6_endpoints_work_end_to_end() {
    let (server_orb, _) = Orb::init(["-ORBListenEndpoints", "iiop://[::1]:0"]).unwrap();
    let poa = server_orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Echo::default());
    let obj = poa.servant_to_reference(&servant).unwrap();
    let profile = &obj.ior().iiop_profiles()[0];
    assert_eq!(profile.host, "::1");
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(long_call(&remote, "echo_long", 6).unwrap(), 6);
    let by_url = orb
        .string_to_object(&format!("corbaloc:iiop:1.2@[::1]:{}/x", profile.port))
        .unwrap();
    assert_eq!(
        long_call(&by_url, "echo_long", 6).unwrap_err().kind(),
        SystemExceptionKind::ObjectNotExist
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn oneway_sync_scopes_wait_as_far_as_asked() {
    use armillary::giop::giop::SyncScope;
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    let before = long_call(&remote, "pings", 0).unwrap();
    // WITH_TARGET returns after the upcall: the count is already up. (The
    // other two are counted by the next two-way because the reactive
    // model keeps a connection's order; see `ConcurrencyModel`.)
    remote
        .invoke_oneway_with(SyncScope::WithTarget, "ping", &|_| Ok(()))
        .unwrap();
    remote
        .invoke_oneway_with(SyncScope::WithServer, "ping", &|_| Ok(()))
        .unwrap();
    remote
        .invoke_oneway_with(SyncScope::None, "ping", &|_| Ok(()))
        .unwrap();
    assert_eq!(long_call(&remote, "pings", 0).unwrap(), before + 3);
    // A synchronised oneway learns that the object is gone; a plain one cannot.
    let poa = server_orb.root_poa();
    poa.deactivate_object(poa.reference_to_id(&obj).unwrap())
        .unwrap();
    for scope in [SyncScope::WithServer, SyncScope::WithTarget] {
        let e = remote
            .invoke_oneway_with(scope, "ping", &|_| Ok(()))
            .unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);
    }
    remote
        .invoke_oneway_with(SyncScope::None, "ping", &|_| Ok(()))
        .unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn every_target_address_form_reaches_the_object() {
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let (host, port) = server_orb
        .endpoints()
        .first()
        .map(|e| (e.host().to_owned(), e.port()))
        .unwrap();
    let ior = obj.ior().clone();
    let mut raw = TcpStream::connect((host.as_str(), port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let targets = [
        TargetAddress::Key(ior.iiop_profiles()[0].object_key.as_slice().into()),
        TargetAddress::Profile(ior.profiles[0].clone()),
        TargetAddress::Reference {
            selected_profile_index: 0,
            ior: ior.clone(),
        },
    ];
    for (id, target) in targets.into_iter().enumerate() {
        let request = MessageBody::Request(armillary::giop::giop::RequestHeader {
            request_id: id as u32,
            response_flags: 3,
            reserved: [0; 3],
            target,
            operation: "echo_long".into(),
            service_contexts: Vec::new(),
            requesting_principal: Vec::new(),
        });
        let mut b = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Little, &request).unwrap();
        b.body().write_long(40 + id as i32);
        raw.write_all(&b.finish(false)).unwrap();
        let bytes = read_message(&mut raw);
        let reply = Message::decode(&bytes).unwrap();
        let MessageBody::Reply(h) = &reply.body else {
            panic!("{reply:?}")
        };
        assert_eq!(
            h.reply_status,
            armillary::giop::giop::ReplyStatus::NoException
        );
        assert_eq!(
            reply.body_reader(&bytes).read_long().unwrap(),
            40 + id as i32
        );
    }
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A server that first answers NEEDS_ADDRESSING_MODE (asking for the
/// whole reference), then answers the re-addressed request.
#[test]
fn the_client_re_addresses_when_the_server_needs_another_mode() {
    use armillary::giop::giop::{ReplyHeader, ReplyStatus};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut seen = Vec::new();
        for round in 0..2 {
            let bytes = read_message(&mut s);
            let msg = Message::decode(&bytes).unwrap();
            let MessageBody::Request(h) = &msg.body else {
                panic!()
            };
            seen.push(h.target.clone());
            let status = if round == 0 {
                ReplyStatus::NeedsAddressingMode
            } else {
                ReplyStatus::NoException
            };
            let fields = MessageBody::Reply(ReplyHeader {
                request_id: h.request_id,
                reply_status: status,
                service_contexts: Vec::new(),
            });
            let mut b = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Little, &fields).unwrap();
            if round == 0 {
                // AddressingDisposition ReferenceAddr.
                b.body().write_short(2);
            } else {
                b.body().write_long(77);
            }
            s.write_all(&b.finish(false)).unwrap();
        }
        seen
    });
    let orb = client(GiopVersion::V1_2);
    let remote = orb
        .string_to_object(&format!("corbaloc:iiop:1.2@127.0.0.1:{port}/fake"))
        .unwrap();
    assert_eq!(long_call(&remote, "echo_long", 1).unwrap(), 77);
    let seen = fake.join().unwrap();
    assert!(matches!(seen[0], TargetAddress::Key(_)));
    assert!(matches!(
        seen[1],
        TargetAddress::Reference {
            selected_profile_index: 0,
            ..
        }
    ));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn equivalence_and_hash_need_no_remote_call() {
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let orb = client(GiopVersion::V1_2);
    let a = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    let profile = &a.ior().iiop_profiles()[0];
    let key: String = profile
        .object_key
        .iter()
        .map(|b| format!("%{b:02x}"))
        .collect();
    let b = orb
        .string_to_object(&format!(
            "corbaloc:iiop:1.2@{}:{}/{key}",
            profile.host, profile.port
        ))
        .unwrap();
    assert_ne!(a, b, "different IORs");
    assert!(a.is_equivalent(&b), "same endpoint and key");
    assert_eq!(a.hash_within(1000), b.hash_within(1000));
    assert!(a.hash_within(10) <= 10);
    assert!(!a.is_equivalent(&ObjectRef::nil()));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn locate_requests_from_the_client() {
    use armillary::poa::{IdAssignmentPolicy, Policy, RequestProcessingPolicy, ServantManager};
    use armillary::Location;
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    let orb = client(GiopVersion::V1_2);
    let here = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(here.locate().unwrap(), Location::Here);
    let (host, port) = server_orb
        .endpoints()
        .first()
        .map(|e| (e.host().to_owned(), e.port()))
        .unwrap();
    let unknown = orb
        .string_to_object(&format!("corbaloc::{host}:{port}/unknown"))
        .unwrap();
    assert_eq!(unknown.locate().unwrap(), Location::Unknown);
    // A servant activator that forwards: OBJECT_FORWARD with the target.
    let root = server_orb.root_poa();
    let poa = root
        .create_poa(
            "locate-forwarding",
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    poa.set_servant_manager(ServantManager::Activator(Arc::new(ForwardInTurn {
        to: std::sync::Mutex::new([obj.clone()].into()),
    })))
    .unwrap();
    let moved = poa
        .create_reference_with_id(b"moved", "IDL:Test/Echo:1.0")
        .unwrap();
    let moved = orb
        .string_to_object(&server_orb.object_to_string(&moved))
        .unwrap();
    match moved.locate().unwrap() {
        Location::Forward(to) => {
            assert!(to.is_equivalent(&here));
            assert_eq!(long_call(&to, "echo_long", 5).unwrap(), 5);
        }
        other => panic!("expected a forward, got {other:?}"),
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

fn string_call(obj: &ObjectRef, text: &str) -> Result<String, SystemException> {
    obj.invoke(
        "echo_string",
        &|w| w.write_string(text),
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_string()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    )
}

/// Code sets belong to the connection: once a request through a full IOR
/// has fixed UTF-8 on it, a request through a `corbaloc:` reference (no
/// code set component, GIOP 1.0 or 1.2) on the same connection uses UTF-8
/// too, and non-ASCII text survives both ways.
#[test]
fn code_sets_are_fixed_per_connection_whatever_the_reference() {
    let (server_orb, obj) =
        server(OrbConfig::new().collocation(armillary::config::Collocation::None));
    server_orb.bind_object_key("Echo", obj.clone());
    let (host, port) = server_orb
        .endpoints()
        .first()
        .map(|e| (e.host().to_owned(), e.port()))
        .unwrap();
    let orb = client(GiopVersion::V1_2);
    let full = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(string_call(&full, "grüße ☺").unwrap(), "grüße ☺");
    for version in ["1.0", "1.2"] {
        let by_url = orb
            .string_to_object(&format!("corbaloc:iiop:{version}@{host}:{port}/Echo"))
            .unwrap();
        assert_eq!(
            string_call(&by_url, "grüße ☺").unwrap(),
            "grüße ☺",
            "GIOP {version}"
        );
    }
    // And the other way round on a fresh client: the corbaloc reference
    // comes first (ISO 8859-1, the default), the full IOR after it.
    let orb = client(GiopVersion::V1_2);
    let by_url = orb
        .string_to_object(&format!("corbaloc:iiop:1.2@{host}:{port}/Echo"))
        .unwrap();
    assert_eq!(string_call(&by_url, "grüße").unwrap(), "grüße");
    let full = orb
        .string_to_object(&server_orb.object_to_string(&obj))
        .unwrap();
    assert_eq!(string_call(&full, "grüße").unwrap(), "grüße");
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}
