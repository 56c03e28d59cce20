//! The public API as a user of the crate sees it: every test here uses
//! only `armillary::…` paths, as an application would, and no internals.
//! Organized by topic, one section each.
//!
//! Waits on other threads are bounded (a condition polled until a
//! deadline); no test sleeps and then asserts.

use std::net::TcpStream;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use armillary::runtime::{
    ByteOrder, CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, GiopVersion,
};
use armillary::{
    minor, CompletionStatus, Endpoint, ObjectRef, Orb, Servant, ServerRequest, SystemException,
    SystemExceptionKind, WaitForCompletion,
};

/// How long a bounded wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `condition` until it holds; panics naming `what` at the deadline.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::yield_now();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An ORB with its own listening endpoint on the loopback interface.
fn orb(concurrency: &str) -> Orb {
    let (orb, rest) = Orb::init([
        "app",
        "-ORBConcurrency",
        concurrency,
        "-ORBListenEndpoints",
        "iiop://127.0.0.1:0",
    ])
    .unwrap();
    assert_eq!(rest, ["app"]);
    orb
}

/// A client-only ORB.
fn client() -> Orb {
    Orb::init(["client"]).unwrap().0
}

/// A servant whose operations exercise the lifecycle from inside an
/// upcall.
#[derive(Default)]
struct Probe {
    total: AtomicI32,
    /// The ORB serving this object, for the operations that act on it.
    /// (A servant holding its own ORB keeps it alive: each test empties
    /// this before it ends.)
    orb: Mutex<Option<Orb>>,
}

const PROBE_ID: &str = "IDL:Test/Probe:1.0";

impl Servant for Probe {
    fn repository_id(&self) -> &'static str {
        PROBE_ID
    }

    fn is_a(&self, id: &str) -> bool {
        id == PROBE_ID
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        let orb = || self.orb.lock().unwrap().clone();
        match req.operation() {
            // Adds its argument to a running total and returns the total.
            "add" => {
                let v = req.args().read_long().map_err(bad)?;
                let total = self.total.fetch_add(v, Ordering::SeqCst) + v;
                req.results().write_long(total);
            }
            // Shuts its own ORB down, waiting or not as asked.
            "shutdown" => {
                let wait = req.args().read_bool().map_err(bad)?;
                let wait = match wait {
                    true => WaitForCompletion::Yes,
                    false => WaitForCompletion::No,
                };
                orb().expect("the test set the ORB").shutdown(wait)?;
            }
            // Drops the last handle of its own ORB, inside the upcall.
            "drop_orb" => drop(self.orb.lock().unwrap().take()),
            _ => {
                return Err(SystemException::bad_operation(
                    minor::UNKNOWN_OPERATION,
                    CompletionStatus::No,
                ))
            }
        }
        Ok(())
    }
}

/// Activates a [`Probe`] in `orb`'s root POA; returns it and its reference.
fn serve(orb: &Orb) -> (Arc<Probe>, ObjectRef) {
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let probe = Arc::new(Probe::default());
    let servant: Arc<dyn Servant> = probe.clone();
    let obj = poa.servant_to_reference(&servant).unwrap();
    (probe, obj)
}

fn add(obj: &ObjectRef, v: i32) -> Result<i32, SystemException> {
    obj.invoke_plain(
        "add",
        &|w| {
            w.write_long(v);
            Ok(())
        },
        |r| r.read_long(),
    )
}

fn shutdown_inside(obj: &ObjectRef, wait: bool) -> Result<(), SystemException> {
    obj.invoke_plain(
        "shutdown",
        &|w| {
            w.write_bool(wait);
            Ok(())
        },
        |_| Ok(()),
    )
}

/// The reference `orb` makes of `obj`'s IOR: calls go through `orb`.
fn through(orb: &Orb, obj: &ObjectRef) -> ObjectRef {
    orb.string_to_object(&obj.ior().to_string()).unwrap()
}

/// `obj` as a reference decoded from CDR outside any ORB's message (an
/// IOR kept in a file, say): it binds to an ORB on first use.
fn decoded_elsewhere(obj: &ObjectRef) -> ObjectRef {
    let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
    obj.encode(&mut w).unwrap();
    let bytes = w.into_bytes();
    let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
    ObjectRef::decode(&mut r).unwrap()
}

/// The plain IIOP port `orb` listens on.
fn plain_port(orb: &Orb) -> u16 {
    let endpoints = orb.endpoints();
    let plain = endpoints.iter().find(|e| !e.is_tls());
    plain.expect("a plain IIOP endpoint").port()
}

/// Whether a connection to the loopback `port` is refused now.
fn refused(port: u16) -> bool {
    matches!(
        TcpStream::connect(("127.0.0.1", port)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

// ---------------------------------------------------------------------
// Lifecycle: dropping, shutting down, running; several ORBs at once.
// ---------------------------------------------------------------------

/// Dropping the last `Orb` closes its port and stops it, in every model
/// whose threads are the ORB's own; clones keep it alive until then.
#[test]
fn dropping_the_last_handle_stops_the_orb() {
    for concurrency in ["reactive", "thread-pool:4", "thread-per-connection"] {
        let server = orb(concurrency);
        let (probe, obj) = serve(&server);
        let port = plain_port(&server);
        let caller = client();
        let remote = through(&caller, &obj);
        assert_eq!(add(&remote, 2).unwrap(), 2);

        // A clone dropped: the ORB still serves.
        drop(server.clone());
        assert_eq!(add(&remote, 3).unwrap(), 5, "{concurrency}");

        drop(server);
        eventually(
            &format!("port {port} refuses connections ({concurrency})"),
            || refused(port),
        );
        // The reference the dropped ORB made fails cleanly.
        let e = add(&obj, 1).unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder, "{concurrency}");
        assert_eq!(e.minor(), minor::ORB_SHUT_DOWN);
        // Its servant was released with its POAs.
        eventually("the servant is released", || Arc::strong_count(&probe) == 1);
        // A client's call finds nobody.
        let e = add(&remote, 1).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                SystemExceptionKind::Transient | SystemExceptionKind::CommFailure
            ),
            "{concurrency}: {e:?}"
        );
    }
}

/// Dropping a client ORB closes its connections: the server sees them go.
#[test]
fn dropping_a_client_orb_closes_its_connections() {
    let server = orb("thread-pool:2");
    let (_probe, obj) = serve(&server);
    // Over IIOP, as if the server were in another process.
    let caller = Orb::init(["client", "-ORBCollocation", "none"]).unwrap().0;
    assert_eq!(add(&through(&caller, &obj), 1).unwrap(), 1);
    let open = || server.server_stats().map_or(0, |s| s.connections_open);
    eventually("the client's connection is open", || open() == 1);
    drop(caller);
    eventually("the client's connection is closed", || open() == 0);
}

/// Dropping the last handle inside an upcall of the same ORB does not
/// wait for itself: the upcall returns and the ORB stops.
#[test]
fn dropping_the_last_handle_inside_an_upcall_does_not_wait_for_itself() {
    for concurrency in ["reactive", "thread-pool:2", "thread-per-connection"] {
        let server = orb(concurrency);
        let (probe, obj) = serve(&server);
        let port = plain_port(&server);
        *probe.orb.lock().unwrap() = Some(server);
        let caller = client();
        let remote = through(&caller, &obj);
        // The reply may or may not make it out before the connection
        // closes; the call must end either way.
        let outcome = remote.invoke_plain("drop_orb", &|_| Ok(()), |_| Ok(()));
        if let Err(e) = outcome {
            assert!(
                matches!(
                    e.kind(),
                    SystemExceptionKind::CommFailure | SystemExceptionKind::Transient
                ),
                "{concurrency}: {e:?}"
            );
        }
        eventually(
            &format!("port {port} refuses connections ({concurrency})"),
            || refused(port),
        );
    }
}

/// `shutdown(WaitForCompletion::Yes)` inside an upcall of the same ORB
/// would wait for itself: BAD_INV_ORDER, "would deadlock", and the ORB
/// goes on serving. `No` is allowed there, and `run` then returns.
#[test]
fn shutdown_inside_an_upcall() {
    for concurrency in ["application", "thread-pool:2"] {
        let server = orb(concurrency);
        let (probe, obj) = serve(&server);
        *probe.orb.lock().unwrap() = Some(server.clone());
        let (done, run_returned) = mpsc::channel();
        let runner = server.clone();
        std::thread::spawn(move || done.send(runner.run()));
        let caller = client();
        let remote = through(&caller, &obj);

        let e = shutdown_inside(&remote, true).unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder, "{concurrency}");
        assert_eq!(e.minor(), minor::WOULD_DEADLOCK);
        assert_eq!(add(&remote, 4).unwrap(), 4, "still serving ({concurrency})");

        // The reply may be cut short by the shutdown itself.
        let _ = shutdown_inside(&remote, false);
        let ran = run_returned.recv_timeout(DEADLINE);
        assert_eq!(
            ran,
            Ok(Ok(())),
            "run() returns after shutdown ({concurrency})"
        );
        probe.orb.lock().unwrap().take();
    }
}

/// `run` returns `Ok` once another thread shuts the ORB down, and at once
/// when it already is; shutting down twice is harmless.
#[test]
fn run_returns_after_shutdown() {
    for concurrency in ["application", "reactive", "thread-pool:2"] {
        let server = orb(concurrency);
        let (_probe, obj) = serve(&server);
        let (done, run_returned) = mpsc::channel();
        let runner = server.clone();
        std::thread::spawn(move || done.send(runner.run()));
        let caller = client();
        assert_eq!(add(&through(&caller, &obj), 1).unwrap(), 1);
        server.shutdown(WaitForCompletion::Yes).unwrap();
        let ran = run_returned.recv_timeout(DEADLINE);
        assert_eq!(ran, Ok(Ok(())), "{concurrency}");
        assert_eq!(server.run(), Ok(()));
        server.shutdown(WaitForCompletion::No).unwrap();
        assert!(server.endpoints().is_empty());
    }
}

/// Two ORBs in one process are independent: destroying or dropping one
/// leaves the other's references, server and unbound references working,
/// whichever was made first.
#[test]
fn two_orbs_stay_independent() {
    for destroy in [true, false] {
        for end_the_newer in [true, false] {
            let first = orb("thread-pool:2");
            let second = orb("thread-pool:2");
            let (survivor, ended) = if end_the_newer {
                (first, second)
            } else {
                (second, first)
            };
            let (_kept, kept_obj) = serve(&survivor);
            let (_gone, gone_obj) = serve(&ended);
            // Each calls the other.
            assert_eq!(add(&through(&survivor, &gone_obj), 1).unwrap(), 1);
            assert_eq!(add(&through(&ended, &kept_obj), 1).unwrap(), 1);
            let port = plain_port(&survivor);
            let ended_port = plain_port(&ended);

            if destroy {
                ended.destroy();
            } else {
                drop(ended);
            }
            let case = format!("destroy: {destroy}, newer ended: {end_the_newer}");
            eventually(&format!("the ended ORB's port closes ({case})"), || {
                refused(ended_port)
            });

            // The survivor's own reference, and its server for another ORB.
            assert_eq!(add(&kept_obj, 1).unwrap(), 2, "{case}");
            let caller = client();
            assert_eq!(add(&through(&caller, &kept_obj), 1).unwrap(), 3, "{case}");
            assert!(!refused(port));
            drop(caller);
            // A reference decoded outside any ORB's message binds to an
            // ORB that is still running.
            assert_eq!(add(&decoded_elsewhere(&kept_obj), 1).unwrap(), 4, "{case}");
            // The ended ORB's references fail cleanly.
            let e = add(&gone_obj, 1).unwrap_err();
            assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder, "{case}");
            survivor.shutdown(WaitForCompletion::Yes).unwrap();
        }
    }
}

// ---------------------------------------------------------------------
// References as map keys.
// ---------------------------------------------------------------------

/// A reference keys a map by its IOR, whichever ORB carries it and
/// whether or not it is bound yet; the map needs no `allow` of clippy's
/// `mutable_key_type` (`cargo clippy --all-targets -- -D warnings` checks
/// this function).
#[test]
fn references_key_maps_by_their_ior() {
    let server = orb("reactive");
    let (_probe, served) = serve(&server);
    let mut names: std::collections::HashMap<ObjectRef, &str> = std::collections::HashMap::new();
    names.insert(decoded_elsewhere(&served), "probe");
    assert_eq!(names.get(&served), Some(&"probe"), "equal IORs, same key");
    let caller = client();
    let remote = through(&caller, &served);
    assert_eq!(add(&remote, 2).unwrap(), 2);
    assert_eq!(names.get(&remote), Some(&"probe"));
    let hasty = remote.with_call_timeout(DEADLINE);
    assert_eq!(names.get(&hasty), Some(&"probe"));
    assert_eq!(add(&hasty, 3).unwrap(), 5);
    names.insert(ObjectRef::nil(), "nil");
    assert_eq!(names.len(), 2);
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

// ---------------------------------------------------------------------
// Endpoints.
// ---------------------------------------------------------------------

/// `endpoints` reports what is open, never starts the server, and an
/// `Endpoint` is a plain value.
#[test]
fn endpoints_report_what_is_open() {
    let configured = orb("reactive");
    let endpoints = configured.endpoints();
    assert_eq!(endpoints.len(), 1);
    let endpoint: &Endpoint = &endpoints[0];
    assert_eq!(endpoint.host(), "127.0.0.1");
    assert!(!endpoint.is_tls());
    assert_ne!(endpoint.port(), 0);
    assert_eq!(
        endpoint.to_string(),
        format!("iiop://127.0.0.1:{}", endpoint.port())
    );
    let set: std::collections::HashSet<Endpoint> = endpoints.iter().cloned().collect();
    assert!(set.contains(endpoint));

    // Not configured: nothing is open until an object is published.
    let lazy = client();
    assert!(lazy.endpoints().is_empty());
    assert!(lazy.endpoints().is_empty(), "asking did not start it");
    let (_probe, _obj) = serve(&lazy);
    let endpoints = lazy.endpoints();
    assert_eq!(endpoints.len(), 1);
    assert!(!refused(endpoints[0].port()));
}

// ---------------------------------------------------------------------
// Debug: the public types can be part of a user's `#[derive(Debug)]`.
// ---------------------------------------------------------------------

#[test]
fn a_struct_holding_an_orb_derives_debug() {
    #[derive(Debug)]
    struct App {
        orb: Orb,
        endpoints: Vec<Endpoint>,
    }
    let orb = orb("reactive");
    let app = App {
        endpoints: orb.endpoints(),
        orb,
    };
    let text = format!("{app:?}");
    assert!(text.contains("Orb"), "{text}");
    assert!(text.contains("127.0.0.1"), "{text}");
    assert_eq!(app.orb.endpoints(), app.endpoints);
}
