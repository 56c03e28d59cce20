//! Nested upcalls over IIOP on loopback, in every server concurrency model
//! with every wait strategy it accepts: a servant that, inside an upcall,
//! calls back into its caller must not hang.
//!
//! Two ORBs A and B each serve a `Bouncer`, whose `bounce(n)` calls its
//! peer's `bounce(n - 1)` and answers one more than the peer did. A's
//! main thread calls B's bouncer with n = 5: A → B → A → B → A → B, each
//! hop over the connections the ORBs cached for the previous ones (a
//! callback depth of five). And one ORB whose bouncer's peer is itself,
//! through its own reference (over IIOP, not collocated).
//!
//! The same with the exclusive transport, where each nested call opens
//! (or reuses) a connection of its own.
//!
//! And a callback into a POA with the SINGLE_THREAD_MODEL policy, in every
//! model of `ConcurrencyModel::menu`: it runs (on the thread that waits
//! inside the POA's upcall), and the POA never runs two upcalls at once.
//!
//! Every call has a call timeout, so a regression fails with TIMEOUT
//! rather than hanging: a hang is the failure this file looks for. The
//! combinations that cannot be made safe (wait on read with a model that
//! would have no thread left for the nested call) are refused when the
//! ORB starts, which is tested too.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use armillary::config::{ConcurrencyModel, OrbConfig, TransportMux, WaitStrategy};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, OrbError, Servant, ServerRequest, WaitForCompletion};
use armillary_giop::cdr::CdrError;

/// Far beyond what a working chain needs: reached only by a deadlock.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// The depth of every chain.
const DEPTH: i32 = 5;

/// The pool has more threads than the deepest chain holds in one ORB at
/// once (six, calling itself), which wait on read needs. The worker pool
/// and the locality scheduler have one worker and every ORB one object
/// (a thread per object): each nested request waits for the very thread
/// that waits for its reply.
const MODELS: [ConcurrencyModel; 8] = [
    ConcurrencyModel::SingleThreadedReactive,
    ConcurrencyModel::ThreadPool(8),
    ConcurrencyModel::ThreadPerConnection,
    ConcurrencyModel::ApplicationThreads,
    ConcurrencyModel::ThreadPerRequest(None),
    ConcurrencyModel::WorkerPool {
        workers: 1,
        queue: 64,
    },
    ConcurrencyModel::ThreadPerObject,
    ConcurrencyModel::Locality(1),
];

const STRATEGIES: [WaitStrategy; 3] = [
    WaitStrategy::Read,
    WaitStrategy::Reactor,
    WaitStrategy::LeaderFollowers,
];

/// `bounce(n)`: 0 for n = 0, else one more than its peer's `bounce(n - 1)`.
#[derive(Default)]
struct Bouncer {
    peer: Mutex<Option<ObjectRef>>,
}

impl Servant for Bouncer {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Bouncer:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Bouncer:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        if req.operation() != "bounce" {
            return Err(SystemException::bad_operation(0, CompletionStatus::No));
        }
        let n = req.args().read_long().map_err(bad)?;
        let answer = if n == 0 {
            0
        } else {
            let peer = self.peer.lock().unwrap().clone();
            let peer = peer.ok_or_else(|| SystemException::internal(0, CompletionStatus::No))?;
            bounce(&peer, n - 1)? + 1
        };
        req.results().write_long(answer);
        Ok(())
    }
}

fn bounce(obj: &ObjectRef, n: i32) -> Result<i32, SystemException> {
    obj.invoke(
        "bounce",
        &|w| {
            w.write_long(n);
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

fn config(model: ConcurrencyModel, wait: WaitStrategy) -> OrbConfig {
    OrbConfig::new()
        .collocation(armillary::config::Collocation::None)
        .concurrency(model)
        .wait_strategy(wait)
        .call_timeout(CALL_TIMEOUT)
}

thread_local! {
    /// The transport mux of the ORBs this thread's test starts.
    static MUX: std::cell::Cell<TransportMux> = const { std::cell::Cell::new(TransportMux::Muxed) };
}

/// An ORB serving a bouncer (with no peer yet), and a thread driving it
/// when its model wants the application to.
struct Peer {
    orb: Orb,
    bouncer: Arc<Bouncer>,
    ior: String,
    driver: Option<JoinHandle<()>>,
}

impl Peer {
    fn start(model: ConcurrencyModel, wait: WaitStrategy) -> Peer {
        let orb =
            Orb::with_config(config(model, wait).transport_mux(MUX.with(|m| m.get()))).unwrap();
        let poa = orb.root_poa();
        poa.manager().activate().unwrap();
        let bouncer = Arc::new(Bouncer::default());
        let servant: Arc<dyn Servant> = bouncer.clone();
        let obj = poa.servant_to_reference(&servant).unwrap();
        let ior = orb.object_to_string(&obj);
        let driver = (model == ConcurrencyModel::ApplicationThreads).then(|| {
            let orb = orb.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        Peer {
            orb,
            bouncer,
            ior,
            driver,
        }
    }

    /// This ORB's reference to the object `ior` names.
    fn reference(&self, ior: &str) -> ObjectRef {
        self.orb.string_to_object(ior).unwrap()
    }

    fn stop(mut self) {
        *self.bouncer.peer.lock().unwrap() = None;
        self.orb.shutdown(WaitForCompletion::No).unwrap();
        if let Some(driver) = self.driver.take() {
            driver.join().unwrap();
        }
    }
}

/// A (main thread) calls B, whose servant calls A, and so on, `DEPTH`
/// hops over the same cached connections; then again, from A's side.
fn two_orbs(model: ConcurrencyModel, wait: WaitStrategy) {
    let a = Peer::start(model, wait);
    let b = Peer::start(model, wait);
    *a.bouncer.peer.lock().unwrap() = Some(a.reference(&b.ior));
    *b.bouncer.peer.lock().unwrap() = Some(b.reference(&a.ior));
    let b_from_a = a.reference(&b.ior);
    for round in 0..2 {
        assert_eq!(
            bounce(&b_from_a, DEPTH),
            Ok(DEPTH),
            "{model:?} with {wait:?}, round {round}"
        );
    }
    // And started from B's side, over the connections A's calls opened.
    let a_from_b = b.reference(&a.ior);
    assert_eq!(
        bounce(&a_from_b, DEPTH),
        Ok(DEPTH),
        "{model:?} with {wait:?}"
    );
    a.stop();
    b.stop();
}

/// One ORB whose bouncer calls itself through its own reference.
fn one_orb(model: ConcurrencyModel, wait: WaitStrategy) {
    let a = Peer::start(model, wait);
    let own = a.reference(&a.ior);
    *a.bouncer.peer.lock().unwrap() = Some(own.clone());
    assert_eq!(bounce(&own, DEPTH), Ok(DEPTH), "{model:?} with {wait:?}");
    a.stop();
}

/// Every combination the ORB accepts, run by `chain`; the others must be
/// refused at start.
fn every_combination(chain: fn(ConcurrencyModel, WaitStrategy)) {
    let mut ran = 0;
    for model in MODELS {
        for wait in STRATEGIES {
            if wait.is_safe_with(model) {
                chain(model, wait);
                ran += 1;
            }
        }
    }
    // Read with the thread pool and thread per request, and reactor and
    // lf with every model.
    assert_eq!(ran, 2 + 2 * MODELS.len());
}

#[test]
fn a_callback_chain_between_two_orbs_never_hangs() {
    every_combination(two_orbs);
}

#[test]
fn an_orb_calling_itself_through_its_own_reference_never_hangs() {
    every_combination(one_orb);
}

#[test]
fn the_default_wait_strategy_of_every_model_serves_nested_upcalls() {
    for model in MODELS {
        let wait = OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(model)
            .get_wait_strategy();
        assert!(wait.is_safe_with(model), "{model:?}");
        two_orbs(model, wait);
    }
}

#[test]
fn nested_upcalls_never_hang_with_the_exclusive_transport_either() {
    MUX.with(|m| m.set(TransportMux::Exclusive));
    every_combination(two_orbs);
    every_combination(one_orb);
}

#[test]
fn a_combination_that_would_deadlock_is_refused_at_init() {
    for model in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ApplicationThreads,
        ConcurrencyModel::WorkerPool {
            workers: 1,
            queue: 64,
        },
        ConcurrencyModel::ThreadPerObject,
        ConcurrencyModel::Locality(1),
    ] {
        let refused = Orb::with_config(config(model, WaitStrategy::Read));
        match refused {
            Err(OrbError::Option(e)) => {
                let text = e.to_string();
                assert!(text.contains("-ORBWaitStrategy"), "{text}");
                assert!(text.contains("deadlock"), "{text}");
            }
            other => panic!("{model:?} with Read: {other:?}"),
        }
    }
    // The same from the command line.
    let refused = Orb::init(["-ORBConcurrency", "reactive", "-ORBWaitStrategy", "read"]);
    assert!(matches!(refused, Err(OrbError::Option(_))));
    let accepted = Orb::init([
        "-ORBConcurrency",
        "thread-pool:2",
        "-ORBWaitStrategy",
        "read",
    ]);
    assert!(accepted.is_ok());
}

// SINGLE_THREAD_MODEL: A's servant, in a POA with that policy, calls B;
// B's servant calls back into A's POA. The callback must run (on the
// thread that waits inside A's upcall), and the POA must still run one
// upcall at a time: never two on different threads at once.

/// The upcalls in progress in one POA, by thread, and how often one began
/// while another thread had one in progress.
#[derive(Default)]
struct Serialized {
    inside: Mutex<Vec<std::thread::ThreadId>>,
    overlaps: std::sync::atomic::AtomicUsize,
}

impl Serialized {
    fn enter(&self) {
        let me = std::thread::current().id();
        let mut inside = self.inside.lock().unwrap();
        if inside.iter().any(|t| *t != me) {
            self.overlaps
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        inside.push(me);
    }

    fn leave(&self) {
        let me = std::thread::current().id();
        let mut inside = self.inside.lock().unwrap();
        if let Some(i) = inside.iter().rposition(|t| *t == me) {
            inside.remove(i);
        }
    }
}

/// In A's single-thread POA: `call_peer` answers its peer's `call_back`
/// plus one; `answer` answers 41. Both record their upcalls in the POA's
/// [`Serialized`].
struct StmServant {
    peer: Mutex<Option<ObjectRef>>,
    poa: Arc<Serialized>,
}

impl Servant for StmServant {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Stm:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Stm:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        self.poa.enter();
        let outcome = match req.operation() {
            "call_peer" => {
                let peer = self.peer.lock().unwrap().clone();
                let peer =
                    peer.ok_or_else(|| SystemException::internal(0, CompletionStatus::No))?;
                long_op(&peer, "call_back").map(|v| v + 1)
            }
            "answer" => Ok(41),
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        };
        self.poa.leave();
        req.results().write_long(outcome?);
        Ok(())
    }
}

/// In B: `call_back` answers what its targets' `answer` answers (the
/// same for each, or INTERNAL).
struct CallsBack {
    targets: Vec<ObjectRef>,
}

impl Servant for CallsBack {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/CallsBack:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/CallsBack:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let answers = self
            .targets
            .iter()
            .map(|target| long_op(target, "answer"))
            .collect::<Result<Vec<i32>, _>>()?;
        match answers.as_slice() {
            [first, rest @ ..] if rest.iter().all(|a| a == first) => {
                req.results().write_long(*first);
                Ok(())
            }
            _ => Err(SystemException::internal(0, CompletionStatus::No)),
        }
    }
}

/// A call of `operation`, which takes nothing and answers a long.
fn long_op(obj: &ObjectRef, operation: &str) -> Result<i32, SystemException> {
    obj.invoke(operation, &|_| Ok(()), |reply| match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    })
}

/// A (in `model`, waiting as `wait`) serves `call_peer` and `answer` in a
/// SINGLE_THREAD_MODEL POA; B calls `answer` back on A's calling servant
/// and on another object of its POA from inside A's `call_peer`. Twice,
/// then a few callers at once.
fn single_thread_callback(model: ConcurrencyModel, wait: WaitStrategy) {
    use armillary::poa::{Policy, ThreadPolicy};
    let a = Orb::with_config(config(model, wait)).unwrap();
    // Two application threads, so that another thread than the waiting
    // one may read the callback.
    let drivers: Vec<_> = (0..2)
        .filter(|_| model == ConcurrencyModel::ApplicationThreads)
        .map(|_| {
            let a = a.clone();
            std::thread::spawn(move || a.run().unwrap())
        })
        .collect();
    let root = a.root_poa();
    root.manager().activate().unwrap();
    let stm = root
        .create_poa(
            "stm",
            Some(root.manager()),
            &[Policy::Thread(ThreadPolicy::SingleThread)],
        )
        .unwrap();
    let serialized = Arc::new(Serialized::default());
    let activate = |poa: &armillary::poa::Poa| {
        let servant = Arc::new(StmServant {
            peer: Mutex::new(None),
            poa: serialized.clone(),
        });
        let id = poa.activate_object(servant.clone()).unwrap();
        (
            servant,
            a.object_to_string(&poa.id_to_reference(id).unwrap()),
        )
    };
    let (caller, caller_ior) = activate(&stm);
    let (_, answerer_ior) = activate(&stm);

    let b = Orb::with_config(config(ConcurrencyModel::ThreadPool(2), wait)).unwrap();
    let b_root = b.root_poa();
    b_root.manager().activate().unwrap();
    // Back into the calling servant itself, and into another object of
    // its POA.
    let calls_back: Arc<dyn Servant> = Arc::new(CallsBack {
        targets: vec![
            b.string_to_object(&caller_ior).unwrap(),
            b.string_to_object(&answerer_ior).unwrap(),
        ],
    });
    let calls_back = b_root.servant_to_reference(&calls_back).unwrap();
    *caller.peer.lock().unwrap() = Some(
        a.string_to_object(&b.object_to_string(&calls_back))
            .unwrap(),
    );

    let client = Orb::with_config(config(ConcurrencyModel::ThreadPool(2), wait)).unwrap();
    let remote = client.string_to_object(&caller_ior).unwrap();
    for round in 0..2 {
        assert_eq!(
            long_op(&remote, "call_peer"),
            Ok(42),
            "{model:?} with {wait:?}, round {round}"
        );
    }
    // Callers at once: the POA still runs one upcall at a time.
    let callers: Vec<_> = (0..3)
        .map(|_| {
            let remote = remote.clone();
            std::thread::spawn(move || long_op(&remote, "call_peer"))
        })
        .collect();
    for c in callers {
        assert_eq!(c.join().unwrap(), Ok(42), "{model:?} with {wait:?}");
    }
    assert_eq!(
        serialized
            .overlaps
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "{model:?} with {wait:?}: two upcalls of the POA ran at once"
    );
    *caller.peer.lock().unwrap() = None;
    client.shutdown(WaitForCompletion::Yes).unwrap();
    b.shutdown(WaitForCompletion::Yes).unwrap();
    a.shutdown(WaitForCompletion::No).unwrap();
    for d in drivers {
        d.join().unwrap();
    }
}

#[test]
fn a_callback_into_a_single_thread_poa_is_served_in_every_model() {
    for model in ConcurrencyModel::menu(2) {
        let wait = OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(model)
            .get_wait_strategy();
        single_thread_callback(model, wait);
    }
    single_thread_callback(ConcurrencyModel::ThreadPool(2), WaitStrategy::Read);
}

/// The sink of `many_clients_through_one_thread_do_not_overflow_its_stack`:
/// holds the replies of the first `first` requests until it has them all,
/// then answers them, and every later request at once.
struct HoldingSink {
    first: usize,
    held: Mutex<(usize, Vec<(armillary::amh::ResponseHandler, i32)>)>,
}

impl Servant for HoldingSink {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Sink:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let v = req.decode_args(|r| r.read_long())?;
        let handler = req.respond_later();
        let ready = {
            let mut held = self.held.lock().unwrap();
            held.0 += 1;
            held.1.push((handler, v));
            if held.0 >= self.first {
                std::mem::take(&mut held.1)
            } else {
                Vec::new()
            }
        };
        for (handler, v) in ready {
            handler.reply(|w| {
                w.write_long(v + 1);
                Ok(())
            });
        }
        Ok(())
    }
}

/// Forwards `f(v)` to its sink with a synchronous call.
struct Forwarder {
    sink: ObjectRef,
}

impl Servant for Forwarder {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Forwarder:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let v = req.decode_args(|r| r.read_long())?;
        let got = self.sink.invoke_plain(
            "f",
            &|w| {
                w.write_long(v);
                Ok(())
            },
            |r| r.read_long(),
        )?;
        req.encode_results(|w| {
            w.write_long(got);
            Ok(())
        })
    }
}

/// A single-threaded reactive server whose servant calls a slow sink
/// serves, while it waits, the next client's request, which waits too:
/// each waiting client is a wait and an upcall more on the one thread's
/// stack (a debug build overflowed a reactor thread's 2 MiB stack,
/// aborting the process, at about 200 clients waiting so). A server
/// reactor thread now has the stack for `MAX_DEEP_SERVING` (512) nested
/// waits and nests no more (other threads: 32). The sink here holds every
/// request until it has all 300 (it allows that many outstanding on the
/// middle tier's one connection): the reactor thread holds 300 waits at
/// once, and every client (on a connection of its own) is answered.
#[test]
fn many_clients_through_one_thread_do_not_overflow_its_stack() {
    const CLIENTS: usize = 300;
    let sink_orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .max_outstanding_requests(CLIENTS + 1),
    )
    .unwrap();
    let poa = sink_orb.root_poa();
    poa.manager().activate().unwrap();
    let id = poa
        .activate_object(HoldingSink {
            first: CLIENTS,
            held: Mutex::new((0, Vec::new())),
        })
        .unwrap();
    let sink_ior = sink_orb.object_to_string(&poa.id_to_reference(&id).unwrap());

    let middle = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::SingleThreadedReactive)
            .call_timeout(CALL_TIMEOUT),
    )
    .unwrap();
    let poa = middle.root_poa();
    poa.manager().activate().unwrap();
    let id = poa
        .activate_object(Forwarder {
            sink: middle.string_to_object(&sink_ior).unwrap(),
        })
        .unwrap();
    let middle_ior = middle.object_to_string(&poa.id_to_reference(&id).unwrap());

    // A connection per client (the exclusive transport, up to 64 to one
    // endpoint, so an ORB per 60 clients): requests of one connection
    // are served in turn, one after the other's upcall.
    let clients: Vec<Orb> = (0..CLIENTS / 60)
        .map(|_| {
            Orb::with_config(
                OrbConfig::new()
                    .collocation(armillary::config::Collocation::None)
                    .transport_mux(TransportMux::Exclusive)
                    .max_connections_per_server(64)
                    .call_timeout(CALL_TIMEOUT * 3),
            )
            .unwrap()
        })
        .collect();
    let calls: Vec<_> = (0..CLIENTS as i32)
        .map(|v| {
            let f = clients[v as usize % clients.len()]
                .string_to_object(&middle_ior)
                .unwrap();
            std::thread::spawn(move || {
                f.invoke_plain(
                    "f",
                    &|w| {
                        w.write_long(v);
                        Ok(())
                    },
                    |r| r.read_long(),
                )
            })
        })
        .collect();
    for (v, call) in calls.into_iter().enumerate() {
        assert_eq!(call.join().unwrap(), Ok(v as i32 + 1));
    }
    for client in clients {
        client.shutdown(WaitForCompletion::Yes).unwrap();
    }
    middle.shutdown(WaitForCompletion::Yes).unwrap();
    sink_orb.shutdown(WaitForCompletion::Yes).unwrap();
}
