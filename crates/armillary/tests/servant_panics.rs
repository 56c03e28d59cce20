//! A servant that panics ends its request with UNKNOWN
//! (`minor::SERVANT_PANICKED`, COMPLETED_MAYBE), never the server: under
//! every concurrency model of `ConcurrencyModel::menu`, after the panic
//! the same connection and another one are still served, however many
//! times it panics (more often than the model has threads). A collocated
//! call to a panicking servant gives its caller the same exception.

use std::time::Duration;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
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
    let e = outcome.expect_err(what);
    assert_eq!(e.kind(), SystemExceptionKind::Unknown, "{what}: {e}");
    assert_eq!(e.minor(), minor::SERVANT_PANICKED, "{what}: {e}");
    assert_eq!(e.completed(), CompletionStatus::Maybe, "{what}: {e}");
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
