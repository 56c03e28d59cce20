//! The `locality:N` concurrency model over IIOP on loopback: the requests
//! of one connection (a stream) stay on one worker, in arrival order,
//! while the stream has work pending, and two streams run on different
//! workers; shutdown waits for the workers, which then end. The
//! scheduler's other rules (largest group first, the fairness bound) are
//! tested on the scheduler itself (`transport/server/concurrency/locality.rs`). No assertion
//! depends on timing: parked requests are observed with bounded waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_testkit::wait_until;

/// Records which thread ran each `step(stream, n)`; `park(stream)` waits
/// for the gate first.
#[derive(Default)]
struct Recorder {
    steps: Mutex<Vec<(u32, u32, ThreadId)>>,
    parked: AtomicUsize,
    gate: Mutex<bool>,
    opened: Condvar,
}

impl Servant for Recorder {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Recorder:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e| SystemException::from_cdr_error(&e, CompletionStatus::No);
        let stream = req.args().read_ulong().map_err(bad)?;
        let n = req.args().read_ulong().map_err(bad)?;
        if req.operation() == "park" {
            self.parked.fetch_add(1, Ordering::SeqCst);
            let mut open = self.gate.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }
        self.steps
            .lock()
            .unwrap()
            .push((stream, n, std::thread::current().id()));
        Ok(())
    }
}

fn send(obj: &ObjectRef, operation: &str, stream: u32, n: u32) {
    let args = move |w: &mut armillary::giop::cdr::CdrWriter| {
        w.write_ulong(stream);
        w.write_ulong(n);
        Ok(())
    };
    if operation == "sync" {
        obj.invoke_plain(operation, &args, |_| Ok(())).unwrap();
    } else {
        obj.invoke_oneway(operation, &args).unwrap();
    }
}

/// Names of this process's threads that start with `prefix` (as the
/// system shows them: 15 bytes at most).
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .filter(|name| name.starts_with(prefix))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_stream_stays_on_one_worker_in_order_and_shutdown_ends_the_workers() {
    let server = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::Locality(2)),
    )
    .unwrap();
    server.root_poa().manager().activate().unwrap();
    let recorder = Arc::new(Recorder::default());
    let servant: Arc<dyn Servant> = recorder.clone();
    let ior = server.object_to_string(&server.root_poa().servant_to_reference(&servant).unwrap());
    // A thread names itself once it runs.
    wait_until("the two workers run", || {
        threads_named("armillary-loca") == 2
    });

    // Two clients, so two connections: two streams.
    let clients: Vec<(Orb, ObjectRef)> = (0..2)
        .map(|_| {
            let orb = Orb::with_config(
                OrbConfig::new().collocation(armillary::config::Collocation::None),
            )
            .unwrap();
            let obj = orb.string_to_object(&ior).unwrap();
            (orb, obj)
        })
        .collect();
    // Each stream parks its first request on a worker, then queues 20
    // more behind it: the stream has work pending all along.
    for (stream, (_, obj)) in clients.iter().enumerate() {
        send(obj, "park", stream as u32, 0);
        wait_until("the stream's first request is parked", || {
            recorder.parked.load(Ordering::SeqCst) == stream + 1
        });
        for n in 1..=20 {
            send(obj, "step", stream as u32, n);
        }
    }
    *recorder.gate.lock().unwrap() = true;
    recorder.opened.notify_all();
    // A two-way call after the oneways: it runs after them, in order.
    for (stream, (_, obj)) in clients.iter().enumerate() {
        send(obj, "sync", stream as u32, 21);
    }

    let steps = recorder.steps.lock().unwrap().clone();
    let mut workers = Vec::new();
    for stream in 0..2u32 {
        let mine: Vec<_> = steps.iter().filter(|(s, ..)| *s == stream).collect();
        let order: Vec<u32> = mine.iter().map(|(_, n, _)| *n).collect();
        assert_eq!(order, (0..=21).collect::<Vec<_>>(), "stream {stream}");
        let worker = mine[0].2;
        assert!(
            mine.iter().all(|(.., t)| *t == worker),
            "stream {stream} moved between workers: {mine:?}"
        );
        workers.push(worker);
    }
    assert_ne!(workers[0], workers[1], "both streams ran on one worker");

    for (orb, _) in clients {
        orb.destroy();
    }
    server.shutdown(WaitForCompletion::Yes).unwrap();
    wait_until("the workers have ended", || {
        threads_named("armillary-loca") == 0
    });
}
