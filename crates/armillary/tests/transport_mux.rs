//! The transport mux over IIOP on loopback, counted at the server
//! (`Orb::server_stats`): with the muxed transport concurrent calls to one
//! server share one connection; with the exclusive transport (the
//! default, `exclusive-calls`) each concurrent call has a connection of
//! its own, up to `max_connections_per_server`, and later calls reuse the
//! idle ones instead of opening more; deferred requests share one by
//! default, and each take one under `exclusive`.
//!
//! Calls are held in the servant until the test has seen them all arrive
//! (a bounded wait on a counter), so "concurrent" does not depend on
//! timing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use armillary::config::{ConcurrencyModel, OrbConfig, TransportMux};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ReplyBody;
use armillary::{Any, TypeCode};
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_giop::cdr::CdrError;
use armillary_testkit::wait_until;

/// Holds each `hold` call until released; `echo` answers at once.
#[derive(Default)]
struct Gate {
    held: AtomicUsize,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Servant for Gate {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Gate:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Gate:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        let v = req.args().read_long().map_err(bad)?;
        match req.operation() {
            "hold" => {
                self.held.fetch_add(1, Ordering::SeqCst);
                let open = self.open.lock().unwrap();
                // Bounded, so that a broken test ends.
                let _ = self
                    .opened
                    .wait_timeout_while(open, armillary_testkit::WAIT_LIMIT, |o| !*o)
                    .unwrap();
            }
            "echo" => {}
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        req.results().write_long(v);
        Ok(())
    }
}

fn call(obj: &ObjectRef, op: &str, v: i32) -> Result<i32, SystemException> {
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

/// Runs `callers` concurrent `hold` calls, of which `concurrent` are held
/// in the servant at once (with one connection the server reads a burst
/// of requests in one go and runs them in turn), then three `echo` calls
/// one after another, from a client with `mux`; returns the connections
/// open at the server while they were held and after them all.
fn connections_used(mux: TransportMux, callers: usize, concurrent: usize) -> (usize, usize) {
    connections_used_by(
        OrbConfig::new().transport_mux(mux),
        Form::Synchronous,
        callers,
        concurrent,
    )
}

/// How the held requests are made.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// A synchronous call per thread.
    Synchronous,
    /// Deferred DII requests from one thread.
    Deferred,
}

/// [`connections_used`] with a client configured as `client_config` (its
/// call timeout and collocation set here), the held requests made as
/// `form` says.
fn connections_used_by(
    client_config: OrbConfig,
    form: Form,
    callers: usize,
    concurrent: usize,
) -> (usize, usize) {
    let server = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(callers + 1))
            .idle_timeout(None),
    )
    .unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let gate = Arc::new(Gate::default());
    let servant: Arc<dyn Servant> = gate.clone();
    let ior = server.object_to_string(&poa.servant_to_reference(&servant).unwrap());

    let client = Orb::with_config(
        client_config
            .collocation(armillary::config::Collocation::None)
            .call_timeout(Duration::from_secs(20)),
    )
    .unwrap();
    let obj = client.string_to_object(&ior).unwrap();
    let (threads, mut deferred) = match form {
        Form::Synchronous => {
            let threads: Vec<_> = (0..callers)
                .map(|i| {
                    let obj = obj.clone();
                    std::thread::spawn(move || call(&obj, "hold", i as i32))
                })
                .collect();
            (threads, Vec::new())
        }
        Form::Deferred => {
            let requests: Vec<_> = (0..callers)
                .map(|i| {
                    let mut request = obj
                        .request("hold")
                        .with_in(Any::from(i as i32))
                        .returns(TypeCode::long());
                    request.send_deferred().unwrap();
                    request
                })
                .collect();
            (Vec::new(), requests)
        }
    };
    wait_until("the calls are held", || {
        gate.held.load(Ordering::SeqCst) >= concurrent
    });
    let during = server.server_stats().unwrap().connections_open;
    *gate.open.lock().unwrap() = true;
    gate.opened.notify_all();
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), Ok(i as i32));
    }
    for (i, request) in deferred.iter_mut().enumerate() {
        request.get_response().unwrap();
        assert_eq!(
            request.return_value().and_then(|v| v.get::<i32>()),
            Some(i as i32)
        );
    }
    for v in 0..3 {
        assert_eq!(call(&obj, "echo", v), Ok(v));
    }
    let after = server.server_stats().unwrap().connections_open;
    client.shutdown(WaitForCompletion::Yes).unwrap();
    server.shutdown(WaitForCompletion::Yes).unwrap();
    (during, after)
}

#[test]
fn the_muxed_transport_keeps_one_connection() {
    assert_eq!(connections_used(TransportMux::Muxed, 3, 1), (1, 1));
}

#[test]
fn the_exclusive_transport_opens_one_per_concurrent_call_and_reuses_idle_ones() {
    assert_eq!(connections_used(TransportMux::Exclusive, 3, 3), (3, 3));
}

#[test]
fn the_default_transport_is_exclusive_up_to_its_bound_then_shares() {
    assert_eq!(
        OrbConfig::new().get_transport_mux(),
        TransportMux::ExclusiveCalls
    );
    assert_eq!(OrbConfig::new().get_max_connections_per_server(), 8);
    // Five concurrent calls, at most two connections: three calls share.
    assert_eq!(
        connections_used_by(
            OrbConfig::new().max_connections_per_server(2),
            Form::Synchronous,
            5,
            5
        ),
        (2, 2)
    );
}

#[test]
fn deferred_requests_share_one_connection_by_default_and_not_under_exclusive() {
    assert_eq!(
        connections_used_by(OrbConfig::new(), Form::Deferred, 3, 3),
        (1, 1)
    );
    assert_eq!(
        connections_used_by(
            OrbConfig::new().transport_mux(TransportMux::Exclusive),
            Form::Deferred,
            3,
            3
        ),
        (3, 3)
    );
}
