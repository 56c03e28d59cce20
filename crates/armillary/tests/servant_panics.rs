//! A servant that panics ends its request with UNKNOWN
//! (`minor::SERVANT_PANICKED`, COMPLETED_MAYBE), never the server: under
//! every concurrency model of `ConcurrencyModel::menu`, after the panic
//! the same connection and another one are still served, however many
//! times it panics (more often than the model has threads). A collocated
//! call to a panicking servant gives its caller the same exception. So
//! does a panic in a servant manager (a locator's `preinvoke` or
//! `postinvoke`, an activator's `incarnate`), answered at once: every
//! request ends in exactly one reply or one exception.

use std::sync::Arc;
use std::time::Duration;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};
use armillary::poa::{
    Cookie, IdAssignmentPolicy, ObjectId, Poa, Policy, RequestProcessingPolicy, ServantActivator,
    ServantLocator, ServantManager, ServantManagerError, ServantRetentionPolicy,
};
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};

/// `boom` panics; anything else answers "fine".
struct Panicky;

impl Servant for Panicky {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Panicky:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        if req.operation() == "boom" {
            panic!("a servant bug");
        }
        req.results()
            .write_string("fine")
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))
    }
}

/// Clients give up after this: a server that stopped serving fails the
/// test with TIMEOUT instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

fn client() -> Orb {
    Orb::with_config(OrbConfig::new().call_timeout(PATIENCE)).unwrap()
}

fn call(obj: &ObjectRef, operation: &str) -> Result<String, SystemException> {
    obj.invoke_plain(operation, &|_| Ok(()), |r| r.read_string())
}

fn assert_panicked(outcome: Result<String, SystemException>, what: &str) {
    assert_panicked_with(outcome, CompletionStatus::Maybe, what);
}

fn assert_panicked_with(
    outcome: Result<String, SystemException>,
    completed: CompletionStatus,
    what: &str,
) {
    let e = outcome.expect_err(what);
    assert_eq!(e.kind(), SystemExceptionKind::Unknown, "{what}: {e}");
    assert_eq!(e.minor(), minor::SERVANT_PANICKED, "{what}: {e}");
    assert_eq!(e.completed(), completed, "{what}: {e}");
}

#[test]
fn a_panicking_servant_never_stops_the_server_under_any_model() {
    for model in ConcurrencyModel::menu(2) {
        let server = Orb::with_config(OrbConfig::new().concurrency(model)).unwrap();
        let root = server.root_poa();
        root.manager().activate().unwrap();
        let id = root.activate_object(Panicky).unwrap();
        let ior = server.object_to_string(&root.id_to_reference(id).unwrap());
        let driver = matches!(model, ConcurrencyModel::ApplicationThreads).then(|| {
            let orb = server.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        let (first, second) = (client(), client());
        let a = first.string_to_object(&ior).unwrap();
        let b = second.string_to_object(&ior).unwrap();
        assert_eq!(call(&a, "hello").unwrap(), "fine", "{model}");
        for round in 0..5 {
            assert_panicked(call(&a, "boom"), &format!("{model}, panic {round}"));
            assert_eq!(
                call(&a, "hello").unwrap(),
                "fine",
                "{model}, same connection"
            );
            assert_eq!(
                call(&b, "hello").unwrap(),
                "fine",
                "{model}, other connection"
            );
        }
        server.shutdown(WaitForCompletion::Yes).unwrap();
        if let Some(driver) = driver {
            driver.join().unwrap();
        }
    }
}

#[test]
fn a_collocated_call_to_a_panicking_servant_raises_unknown_in_its_caller() {
    let orb = client();
    let root = orb.root_poa();
    root.manager().activate().unwrap();
    let id = root.activate_object(Panicky).unwrap();
    let obj = root.id_to_reference(id).unwrap();
    assert_panicked(call(&obj, "boom"), "collocated");
    assert_eq!(call(&obj, "hello").unwrap(), "fine");
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A servant locator that panics in `preinvoke` for `pre_boom` and in
/// `postinvoke` for `post_boom`, and serves everything else with a
/// [`Panicky`].
struct PanickyLocator;

impl ServantLocator for PanickyLocator {
    fn preinvoke(
        &self,
        _oid: &ObjectId,
        _poa: &Poa,
        operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError> {
        if operation == "pre_boom" {
            panic!("a servant locator bug in preinvoke");
        }
        Ok((Arc::new(Panicky), Box::new(())))
    }

    fn postinvoke(
        &self,
        _oid: &ObjectId,
        _poa: &Poa,
        operation: &str,
        _cookie: Cookie,
        _servant: Arc<dyn Servant>,
    ) {
        if operation == "post_boom" {
            panic!("a servant locator bug in postinvoke");
        }
    }
}

/// A servant activator whose `incarnate` panics for the id `bad`.
struct PanickyActivator;

impl ServantActivator for PanickyActivator {
    fn incarnate(
        &self,
        oid: &ObjectId,
        _poa: &Poa,
    ) -> Result<Arc<dyn Servant>, ServantManagerError> {
        if oid.as_bytes() == b"bad" {
            panic!("a servant activator bug in incarnate");
        }
        Ok(Arc::new(Panicky))
    }

    fn etherealize(
        &self,
        _oid: &ObjectId,
        _poa: &Poa,
        _servant: Arc<dyn Servant>,
        _cleanup_in_progress: bool,
        _remaining_activations: bool,
    ) {
    }
}

/// Issue 26: a panic in a servant manager left its client waiting for the
/// call timeout (a locator's `postinvoke`, on the thread that ran the
/// upcall: under `reactive` and `thread-pool` a reactor thread, which
/// died), or killed the thread that read the request (`preinvoke`,
/// `incarnate`, which also left later requests for the object waiting
/// for ever). Each is answered at once with UNKNOWN, and the server goes
/// on serving, under every model.
#[test]
fn a_panicking_servant_manager_is_answered_at_once_under_every_model() {
    for model in ConcurrencyModel::menu(2) {
        let server = Orb::with_config(OrbConfig::new().concurrency(model)).unwrap();
        let root = server.root_poa();
        root.manager().activate().unwrap();
        let located = root
            .create_poa(
                "located",
                Some(root.manager()),
                &[
                    Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
                    Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                ],
            )
            .unwrap();
        located
            .set_servant_manager(ServantManager::Locator(Arc::new(PanickyLocator)))
            .unwrap();
        let activated = root
            .create_poa(
                "activated",
                Some(root.manager()),
                &[
                    Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                    Policy::IdAssignment(IdAssignmentPolicy::UserId),
                ],
            )
            .unwrap();
        activated
            .set_servant_manager(ServantManager::Activator(Arc::new(PanickyActivator)))
            .unwrap();
        let ior = |poa: &Poa, id: &[u8]| {
            let obj = poa
                .create_reference_with_id(id, "IDL:Test/Panicky:1.0")
                .unwrap();
            server.object_to_string(&obj)
        };
        let (located_ior, bad_ior, good_ior) = (
            ior(&located, b"x"),
            ior(&activated, b"bad"),
            ior(&activated, b"good"),
        );
        let driver = matches!(model, ConcurrencyModel::ApplicationThreads).then(|| {
            let orb = server.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        let (first, second) = (client(), client());
        let a = first.string_to_object(&located_ior).unwrap();
        let b = second.string_to_object(&located_ior).unwrap();
        let bad = first.string_to_object(&bad_ior).unwrap();
        let good = second.string_to_object(&good_ior).unwrap();
        for round in 0..3 {
            let what = |w: &str| format!("{model}, {w}, round {round}");
            assert_panicked_with(
                call(&a, "pre_boom"),
                CompletionStatus::No,
                &what("preinvoke"),
            );
            assert_panicked_with(
                call(&a, "post_boom"),
                CompletionStatus::Yes,
                &what("postinvoke"),
            );
            assert_panicked_with(
                call(&bad, "hello"),
                CompletionStatus::No,
                &what("incarnate"),
            );
            assert_eq!(
                call(&a, "hello").unwrap(),
                "fine",
                "{}",
                what("same connection")
            );
            assert_eq!(
                call(&b, "hello").unwrap(),
                "fine",
                "{}",
                what("other connection")
            );
            assert_eq!(
                call(&good, "hello").unwrap(),
                "fine",
                "{}",
                what("activated")
            );
        }
        server.shutdown(WaitForCompletion::Yes).unwrap();
        if let Some(driver) = driver {
            driver.join().unwrap();
        }
    }
}
