//! The threading framework over IIOP on loopback: a `RequestFilter`
//! installed through `OrbConfig` sees each request's target, operation,
//! client and service contexts, and each of its decisions is carried out —
//! a lane runs the request on the lane's threads, `NewThread` on a thread
//! of its own, `IoThread`/`Default` on the thread that read it, `Reject`
//! answers with the filter's exception, an unknown lane with OBJ_ADAPTER —
//! in every concurrency model; and the filter's route comes before a
//! POA's own model, for the whole life of the request (held and released
//! too). No assertion depends on timing: a parked request is observed
//! with bounded waits.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};
use armillary::poa::{IdAssignmentPolicy, Policy};
use armillary::{ObjectRef, Orb, RequestInfo, Route, Servant, ServerRequest, WaitForCompletion};
use armillary_testkit::wait_until;

/// Answers every operation with the name of the thread that ran it;
/// `park` first waits until the test opens the gate.
#[derive(Default)]
struct WhereAmI {
    parked: AtomicUsize,
    gate: Mutex<bool>,
    opened: Condvar,
}

impl WhereAmI {
    fn open(&self) {
        *self.gate.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl Servant for WhereAmI {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/WhereAmI:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        if req.operation() == "park" {
            self.parked.fetch_add(1, Ordering::SeqCst);
            let mut open = self.gate.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }
        let name = std::thread::current().name().unwrap_or("").to_owned();
        req.results()
            .write_string(&name)
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))
    }
}

/// The filter of `each_decision_runs_where_the_filter_says`: the
/// operation's name says where it goes.
fn by_operation(request: &RequestInfo<'_>) -> Route {
    match request.operation() {
        "lane" => Route::Lane("slow".into()),
        "new" => Route::NewThread,
        "io" => Route::IoThread,
        "reject" => Route::Reject(SystemException::transient(77, CompletionStatus::No)),
        "nowhere" => Route::Lane("missing".into()),
        _ => Route::Default,
    }
}

struct Served {
    server: Orb,
    driver: Option<std::thread::JoinHandle<()>>,
    /// The client ORB the reference belongs to.
    _client: Orb,
    obj: ObjectRef,
    servant: Arc<WhereAmI>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.servant.open();
        let _ = self.server.shutdown(WaitForCompletion::Yes);
        if let Some(driver) = self.driver.take() {
            driver.join().unwrap();
        }
    }
}

/// A server with `config` serving one `WhereAmI` (in the child POA
/// `Lanes` with the id `where`), a thread named `app-driver` in
/// `Orb::run`, and a client reference to it.
fn serve(config: OrbConfig) -> Served {
    let server = Orb::with_config(config).unwrap();
    let root = server.root_poa();
    root.manager().activate().unwrap();
    let poa = root
        .create_poa(
            "Lanes",
            Some(root.manager()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    let servant = Arc::new(WhereAmI::default());
    poa.activate_object_with_id("where", servant.clone())
        .unwrap();
    let ior = server.object_to_string(&poa.id_to_reference("where").unwrap());
    let driver = {
        let orb = server.clone();
        std::thread::Builder::new()
            .name("app-driver".into())
            .spawn(move || orb.run().unwrap())
            .unwrap()
    };
    let client =
        Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
            .unwrap();
    let obj = client.string_to_object(&ior).unwrap();
    Served {
        server,
        driver: Some(driver),
        _client: client,
        obj,
        servant,
    }
}

fn call(obj: &ObjectRef, operation: &str) -> Result<String, SystemException> {
    obj.invoke_plain(operation, &|_| Ok(()), |r| r.read_string())
}

#[test]
fn each_decision_runs_where_the_filter_says() {
    // The thread that reads a request, and the one the model runs it on,
    // by model.
    use ConcurrencyModel::*;
    let models = [
        (
            SingleThreadedReactive,
            "armillary-reactor",
            "armillary-reactor",
        ),
        (ThreadPool(2), "armillary-reactor", "armillary-reactor"),
        (
            ThreadPerConnection,
            "armillary-connection",
            "armillary-connection",
        ),
        (ApplicationThreads, "app-driver", "app-driver"),
        (Locality(2), "armillary-reactor", "armillary-locality"),
    ];
    for (model, reader, runner) in models {
        let served = serve(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .concurrency(model)
                .lane("slow", 2)
                .request_filter(by_operation),
        );
        let obj = &served.obj;
        let lane = call(obj, "lane").unwrap();
        assert!(lane.starts_with("lane-slow-"), "{model}: {lane}");
        assert_eq!(call(obj, "new").unwrap(), "armillary-request", "{model}");
        let io = call(obj, "io").unwrap();
        assert!(io.starts_with(reader), "{model} io: {io}");
        let default = call(obj, "default").unwrap();
        assert!(default.starts_with(runner), "{model} default: {default}");
        let rejected = call(obj, "reject").unwrap_err();
        assert_eq!(rejected.kind(), SystemExceptionKind::Transient, "{model}");
        assert_eq!(
            (rejected.minor(), rejected.completed()),
            (77, CompletionStatus::No)
        );
        let nowhere = call(obj, "nowhere").unwrap_err();
        assert_eq!(nowhere.kind(), SystemExceptionKind::ObjAdapter, "{model}");
        assert_eq!(nowhere.minor(), minor::UNKNOWN_LANE);
        // The connection still serves after all that.
        assert!(call(obj, "lane").unwrap().starts_with("lane-slow-"));
    }
}

/// What the filter saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    operation: String,
    object_id: Option<Vec<u8>>,
    poa_path: Option<Vec<String>>,
    client: Option<SocketAddr>,
    contexts: Vec<u32>,
    response_expected: bool,
}

#[test]
fn the_filter_sees_target_operation_client_and_contexts() {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    let served = serve(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .request_filter(move |r: &RequestInfo<'_>| {
                log.lock().unwrap().push(Seen {
                    operation: r.operation().to_owned(),
                    object_id: r.object_id().map(|id| id.as_bytes().to_vec()),
                    poa_path: r.poa_path().map(<[String]>::to_vec),
                    client: r.client(),
                    contexts: r.service_contexts().iter().map(|c| c.id).collect(),
                    response_expected: r.response_expected(),
                });
                Route::Default
            }),
    );
    call(&served.obj, "first").unwrap();
    served.obj.invoke_oneway("second", &|_| Ok(())).unwrap();
    call(&served.obj, "third").unwrap();
    let seen = seen.lock().unwrap().clone();
    let ops: Vec<&str> = seen.iter().map(|s| s.operation.as_str()).collect();
    assert_eq!(ops, ["first", "second", "third"]);
    for s in &seen {
        assert_eq!(s.object_id.as_deref(), Some(&b"where"[..]), "{s:?}");
        assert_eq!(s.poa_path.as_deref(), Some(&["Lanes".to_owned()][..]));
        assert!(s.client.is_some_and(|a| a.ip().is_loopback()), "{s:?}");
    }
    assert_eq!(
        seen.iter().map(|s| s.response_expected).collect::<Vec<_>>(),
        [true, false, true]
    );
    // The client announces its code sets (context 1) with its first
    // request.
    assert!(seen[0].contexts.contains(&1), "{:?}", seen[0]);
}

#[test]
fn an_overload_filter_rejects_with_transient_and_recovers() {
    // One lane thread; the filter admits one request at a time to it and
    // answers the others TRANSIENT (a minor code of the application's).
    let in_lane = Arc::new(AtomicUsize::new(0));
    let admitted = in_lane.clone();
    let served = serve(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(2))
            .lane("one", 1)
            .request_filter(move |r: &RequestInfo<'_>| {
                if r.operation() == "done" {
                    admitted.fetch_sub(1, Ordering::SeqCst);
                    return Route::IoThread;
                }
                if admitted
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                        (n == 0).then_some(1)
                    })
                    .is_err()
                {
                    return Route::Reject(SystemException::transient(
                        0x4152_0099,
                        CompletionStatus::No,
                    ));
                }
                Route::Lane("one".into())
            }),
    );
    let parked = {
        let obj = served.obj.clone();
        std::thread::spawn(move || call(&obj, "park"))
    };
    wait_until("the first request is parked on the lane", || {
        served.servant.parked.load(Ordering::SeqCst) == 1
    });
    let busy = call(&served.obj, "park").unwrap_err();
    assert_eq!(busy.kind(), SystemExceptionKind::Transient);
    assert_eq!(busy.minor(), 0x4152_0099);
    served.servant.open();
    assert_eq!(parked.join().unwrap().unwrap(), "lane-one-0");
    call(&served.obj, "done").unwrap();
    assert_eq!(in_lane.load(Ordering::SeqCst), 0);
    assert_eq!(call(&served.obj, "again").unwrap(), "lane-one-0");
}

/// The filter comes first, the POA's model second: a POA that chose its
/// own model (`Policy::Concurrency`, a worker pool here) runs there the
/// requests the filter leaves to it (`Default`), and the filter's lane,
/// new thread and I/O thread win over it. A route holds for the request's
/// whole life: one a holding POA manager parks runs where the filter sent
/// it when the manager lets it go (the filter is not asked again).
#[test]
fn the_filters_route_comes_before_the_poas_model_even_for_held_requests() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = asked.clone();
    let server = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(2))
            .lane("slow", 1)
            .request_filter(move |r: &RequestInfo<'_>| {
                counted.fetch_add(1, Ordering::SeqCst);
                by_operation(r)
            }),
    )
    .unwrap();
    let root = server.root_poa();
    root.manager().activate().unwrap();
    // A manager of its own (holding at first).
    let poa = root
        .create_poa(
            "Own",
            None,
            &[
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
                Policy::Concurrency(ConcurrencyModel::WorkerPool {
                    workers: 1,
                    queue: 8,
                }),
            ],
        )
        .unwrap();
    let manager = poa.manager();
    manager.activate().unwrap();
    poa.activate_object_with_id("where", Arc::new(WhereAmI::default()))
        .unwrap();
    let ior = server.object_to_string(&poa.id_to_reference("where").unwrap());
    let client =
        Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
            .unwrap();
    let obj = client.string_to_object(&ior).unwrap();

    let placed = |op: &str| call(&obj, op).unwrap();
    assert_eq!(placed("default"), "armillary-worker");
    assert_eq!(placed("lane"), "lane-slow-0");
    assert_eq!(placed("new"), "armillary-request");
    assert!(placed("io").starts_with("armillary-reactor"));

    manager.hold_requests(WaitForCompletion::No).unwrap();
    let ops = ["default", "lane", "new", "io"];
    let callers: Vec<_> = ops
        .iter()
        .map(|op| {
            let (obj, op) = (obj.clone(), op.to_string());
            std::thread::spawn(move || call(&obj, &op))
        })
        .collect();
    wait_until("every request is held", || {
        manager.held_count() == ops.len()
    });
    let asked_before = asked.load(Ordering::SeqCst);
    manager.activate().unwrap();
    let threads: Vec<String> = callers
        .into_iter()
        .map(|c| c.join().unwrap().unwrap())
        .collect();
    assert_eq!(threads[0], "armillary-worker", "{threads:?}");
    assert_eq!(threads[1], "lane-slow-0", "{threads:?}");
    assert_eq!(threads[2], "armillary-request", "{threads:?}");
    assert!(threads[3].starts_with("armillary-reactor"), "{threads:?}");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        asked_before,
        "the filter was asked again"
    );
    client.shutdown(WaitForCompletion::Yes).unwrap();
    server.shutdown(WaitForCompletion::Yes).unwrap();
}
