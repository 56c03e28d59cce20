//! End-to-end regression of issue 9, defect 4: `Orb::run` held the ORB's
//! server lock while it waited, so while a thread was in `run()` every
//! reference made elsewhere (`servant_to_reference`, `id_to_reference`,
//! `PoaCurrent::get_reference` in an upcall) blocked forever, and so did
//! `shutdown` from another thread.
//!
//! For each concurrency model: a thread enters `run()` before the server
//! exists and is seen blocked there (Linux: its state in `/proc`); then
//! other threads make references, a client calls an operation whose upcall
//! asks POA Current for its own reference, and another thread shuts the
//! ORB down; `run()` returns. Every step has a bounded wait that only
//! turns a hang into a failure; no timing decides anything.

use armillary::WaitForCompletion;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::poa::PoaCurrent;
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest};
use armillary_giop::CdrEncode;

/// How long a step may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(20);

/// Runs `f` on its own thread and returns its result, failing the test if
/// it has not finished within [`HANG`] (the thread is then left blocked;
/// the test process ends with the failure).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("{what} did not return: blocked (issue 9, defect 4)"))
}

/// Waits until the thread named `name` of this process is asleep (state
/// `S` in `/proc/self/task/*/stat`): blocked in `run()`'s wait.
fn wait_until_asleep(name: &str) {
    let deadline = Instant::now() + HANG;
    loop {
        let asleep = std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .any(|task| {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                // The state follows the parenthesized command name.
                let state = stat
                    .rsplit_once(") ")
                    .map(|(_, rest)| rest.starts_with('S'));
                comm.trim() == name && state == Some(true)
            });
        if asleep {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never blocked");
        std::thread::yield_now();
    }
}

/// A servant whose `whoami` returns its own reference, from POA Current.
struct Whoami;

impl Servant for Whoami {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Whoami:1.0"
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == "IDL:Test/Whoami:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "whoami" => {
                let me = PoaCurrent
                    .reference()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                me.encode(req.results())
                    .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

fn whoami(obj: &ObjectRef) -> Result<ObjectRef, SystemException> {
    obj.invoke("whoami", &|_| Ok(()), |reply| match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read()?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    })
}

fn references_while_another_thread_is_in_run(concurrency: ConcurrencyModel) {
    let orb = Orb::with_config(OrbConfig::new().concurrency(concurrency)).unwrap();
    let (ran, run_returned) = mpsc::channel();
    let runner = orb.clone();
    std::thread::Builder::new()
        .name("orb-run".into())
        .spawn(move || {
            runner.run().unwrap();
            let _ = ran.send(());
        })
        .unwrap();
    // The server does not exist yet: run() waits for it (or for shutdown).
    wait_until_asleep("orb-run");

    // References made on other threads while run() waits.
    let poa = orb.root_poa();
    let servant: Arc<dyn Servant> = Arc::new(Whoami);
    let (object, id) = within("servant_to_reference", {
        let poa = poa.clone();
        move || {
            poa.manager().activate().unwrap();
            let object = poa.servant_to_reference(&servant).unwrap();
            let id = poa.reference_to_id(&object).unwrap();
            (object, id)
        }
    });
    let again = within("id_to_reference", {
        let poa = poa.clone();
        move || poa.id_to_reference(&id).unwrap()
    });
    assert_eq!(again, object);

    // An upcall that asks POA Current for its reference, served while a
    // thread is in run(), called from another ORB over loopback.
    let ior = orb.object_to_string(&object);
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let remote = client.string_to_object(&ior).unwrap();
    let me = within("an upcall calling PoaCurrent::get_reference", move || {
        whoami(&remote)
    })
    .unwrap();
    assert_eq!(
        me.ior().iiop_profiles()[0].object_key,
        object.ior().iiop_profiles()[0].object_key
    );

    // Shutdown from yet another thread returns, and so does run().
    within("shutdown from another thread", {
        let orb = orb.clone();
        move || orb.shutdown(WaitForCompletion::Yes).unwrap()
    });
    run_returned
        .recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("run() did not return after shutdown ({concurrency:?})"));
    client.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn references_while_run_waits_with_the_orbs_own_threads() {
    references_while_another_thread_is_in_run(ConcurrencyModel::SingleThreadedReactive);
}

#[test]
fn references_while_run_waits_with_the_applications_threads() {
    references_while_another_thread_is_in_run(ConcurrencyModel::ApplicationThreads);
}
