//! POA behaviour: activation, id/reference/servant conversions, policies,
//! servant managers, managers' states and O(1) key resolution.

use super::*;
use crate::runtime::{ByteOrder, CdrReader, CdrWriter, GiopVersion};
use armillary_giop::ior::{Ior, TaggedProfile};
use std::sync::atomic::{AtomicBool, AtomicUsize};

const TEST_TAG: u32 = 0x7e57;

struct TestFactory;

impl ReferenceFactory for TestFactory {
    fn make_reference(&self, type_id: &str, object_key: Vec<u8>, _persistent: bool) -> ObjectRef {
        ObjectRef::unbound(Ior {
            type_id: type_id.to_owned(),
            profiles: vec![TaggedProfile {
                tag: TEST_TAG,
                data: object_key,
            }],
        })
    }

    fn object_key(&self, reference: &ObjectRef) -> Option<Vec<u8>> {
        reference
            .ior()
            .profiles
            .iter()
            .find(|p| p.tag == TEST_TAG)
            .map(|p| p.data.clone())
    }
}

/// A servant that answers `whoami` with its label and the POA Current id.
struct Echo(&'static str);

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Echo:1.0"
    }

    fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match request.operation() {
            "whoami" => {
                let oid = PoaCurrent
                    .object_id()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                let w = request.results();
                w.write_string(self.0).unwrap();
                w.write_octet_seq(oid.as_bytes()).unwrap();
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

fn setup() -> (Arc<PoaRegistry>, Poa) {
    let (registry, root) = PoaRegistry::new(7, Arc::new(TestFactory), 4);
    root.manager().activate().unwrap();
    (registry, root)
}

fn key_of(obj: &ObjectRef) -> Vec<u8> {
    TestFactory.object_key(obj).unwrap()
}

/// Runs `operation` on the object `obj` names; returns the reply body's
/// label and id, or the failure.
fn call(
    registry: &PoaRegistry,
    obj: &ObjectRef,
    operation: &str,
) -> Result<(String, ObjectId), String> {
    let key = key_of(obj);
    match registry.resolve(&key, operation) {
        Resolution::Upcall(upcall) => {
            let args = CdrReader::new(&[], ByteOrder::Little, GiopVersion::V1_2);
            let reply = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
            let object_id = upcall.object_id().clone();
            let mut request = ServerRequest::new(operation, &object_id, args, true, reply);
            upcall.run(&mut request).map_err(|e| e.to_string())?;
            let (_, w, start) = request.into_reply();
            let bytes = w.into_bytes();
            let mut r =
                CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2).with_position(start);
            Ok((
                r.read_string().unwrap(),
                ObjectId::from(r.read_octet_seq().unwrap()),
            ))
        }
        Resolution::Held(_) => Err("held".into()),
        Resolution::Forward(_) => Err("forward".into()),
        Resolution::Failed(e) => Err(e.to_string()),
        Resolution::NotAPoaKey => Err("not a POA key".into()),
    }
}

#[test]
fn activation_and_conversions() {
    let (registry, root) = setup();
    let servant: Arc<dyn Servant> = Arc::new(Echo("a"));
    let id = root.activate_object(servant.clone()).unwrap();
    assert_eq!(
        root.activate_object(servant.clone()),
        Err(PoaError::ServantAlreadyActive)
    );
    let obj = root.id_to_reference(&id).unwrap();
    assert_eq!(obj.type_id(), "IDL:Test/Echo:1.0");
    assert_eq!(root.reference_to_id(&obj).unwrap(), id);
    assert_eq!(root.servant_to_id(&servant).unwrap(), id);
    assert!(Arc::ptr_eq(&root.id_to_servant(&id).unwrap(), &servant));
    assert_eq!(
        call(&registry, &obj, "whoami").unwrap(),
        ("a".into(), id.clone())
    );

    // Implicit activation on the root POA.
    let other: Arc<dyn Servant> = Arc::new(Echo("b"));
    let obj_b = root.servant_to_reference(&other).unwrap();
    assert_eq!(call(&registry, &obj_b, "whoami").unwrap().0, "b");

    // Deactivation: the old key no longer reaches anything.
    root.deactivate_object(&id).unwrap();
    assert_eq!(root.deactivate_object(&id), Err(PoaError::ObjectNotActive));
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("OBJECT_NOT_EXIST"));
}

#[test]
fn child_poas_user_ids_and_destroy() {
    let (registry, root) = setup();
    let child = root
        .create_poa(
            "child",
            Some(root.manager()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    assert_eq!(
        root.create_poa("child", None, &[]).unwrap_err(),
        PoaError::AdapterAlreadyExists
    );
    assert_eq!(root.find_poa("child").unwrap(), child);
    assert_eq!(child.parent().unwrap(), root);
    child
        .activate_object_with_id(b"fred", Arc::new(Echo("fred")))
        .unwrap();
    assert_eq!(
        child.activate_object_with_id(b"fred", Arc::new(Echo("x"))),
        Err(PoaError::ObjectAlreadyActive)
    );
    assert_eq!(
        child.activate_object(Arc::new(Echo("x"))),
        Err(PoaError::WrongPolicy)
    );
    let obj = child
        .create_reference_with_id(b"fred", "IDL:Test/Echo:1.0")
        .unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap().1, b"fred");
    assert_eq!(root.reference_to_id(&obj), Err(PoaError::WrongAdapter));
    assert!(call(&registry, &obj, "nope")
        .unwrap_err()
        .contains("BAD_OPERATION"));

    child
        .destroy(Etherealize::Yes, WaitForCompletion::Yes)
        .unwrap();
    assert_eq!(root.find_poa("child"), Err(PoaError::AdapterNonExistent));
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("OBJECT_NOT_EXIST"));
    // A new POA of the same name does not inherit the old transient keys.
    let again = root
        .create_poa(
            "child",
            Some(root.manager()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    again
        .activate_object_with_id(b"fred", Arc::new(Echo("new")))
        .unwrap();
    assert!(call(&registry, &obj, "whoami").is_err());
}

#[test]
fn persistent_keys_survive_a_new_registry() {
    let policies = [
        Policy::Lifespan(LifespanPolicy::Persistent),
        Policy::IdAssignment(IdAssignmentPolicy::UserId),
    ];
    let obj = {
        let (_registry, root) = setup();
        let poa = root.create_poa("store", None, &policies).unwrap();
        poa.create_reference_with_id(b"item", "IDL:Test/Echo:1.0")
            .unwrap()
    };
    // "Restart": a new registry with another token.
    let (registry, root) = PoaRegistry::new(8, Arc::new(TestFactory), 4);
    let poa = root
        .create_poa("store", Some(root.manager()), &policies)
        .unwrap();
    poa.activate_object_with_id(b"item", Arc::new(Echo("restarted")))
        .unwrap();
    root.manager().activate().unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap().0, "restarted");
}

#[test]
fn manager_states_gate_requests() {
    let (registry, root) = setup();
    let obj = root
        .servant_to_reference(&(Arc::new(Echo("m")) as Arc<dyn Servant>))
        .unwrap();
    let manager = root.manager();
    manager.hold_requests(WaitForCompletion::No).unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap_err(), "held");
    manager.discard_requests(WaitForCompletion::No).unwrap();
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("TRANSIENT"));
    manager.activate().unwrap();
    assert!(call(&registry, &obj, "whoami").is_ok());
    manager
        .deactivate(Etherealize::No, WaitForCompletion::Yes)
        .unwrap();
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("OBJ_ADAPTER"));
}

struct CountingActivator {
    incarnations: AtomicUsize,
    etherealizations: AtomicUsize,
}

impl ServantActivator for CountingActivator {
    fn incarnate(
        &self,
        oid: &ObjectId,
        _poa: &Poa,
    ) -> Result<Arc<dyn Servant>, ServantManagerError> {
        self.incarnations.fetch_add(1, Ordering::SeqCst);
        if oid == b"elsewhere" {
            return Err(ServantManagerError::Forward(ObjectRef::nil()));
        }
        Ok(Arc::new(Echo("incarnated")))
    }

    fn etherealize(&self, _: &ObjectId, _: &Poa, _: Arc<dyn Servant>, _: bool, _: bool) {
        self.etherealizations.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn servant_activator_incarnates_once_and_etherealizes() {
    let (registry, root) = setup();
    let poa = root
        .create_poa(
            "lazy",
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    let obj = poa
        .create_reference_with_id(b"x", "IDL:Test/Echo:1.0")
        .unwrap();
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("OBJ_ADAPTER"));
    let activator = Arc::new(CountingActivator {
        incarnations: AtomicUsize::new(0),
        etherealizations: AtomicUsize::new(0),
    });
    poa.set_servant_manager(ServantManager::Activator(activator.clone()))
        .unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap().0, "incarnated");
    assert_eq!(call(&registry, &obj, "whoami").unwrap().0, "incarnated");
    assert_eq!(activator.incarnations.load(Ordering::SeqCst), 1);
    let fwd = poa
        .create_reference_with_id(b"elsewhere", "IDL:Test/Echo:1.0")
        .unwrap();
    assert_eq!(call(&registry, &fwd, "whoami").unwrap_err(), "forward");
    poa.deactivate_object(b"x").unwrap();
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 1);
}

struct Locator {
    post: AtomicUsize,
}

impl ServantLocator for Locator {
    fn preinvoke(
        &self,
        _oid: &ObjectId,
        _poa: &Poa,
        operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError> {
        Ok((Arc::new(Echo("located")), Box::new(operation.to_owned())))
    }

    fn postinvoke(
        &self,
        _: &ObjectId,
        _: &Poa,
        operation: &str,
        cookie: Cookie,
        _: Arc<dyn Servant>,
    ) {
        assert_eq!(
            cookie.downcast_ref::<String>().map(String::as_str),
            Some(operation)
        );
        self.post.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn locators_and_default_servants_serve_non_retain_poas() {
    let (registry, root) = setup();
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
    let locator = Arc::new(Locator {
        post: AtomicUsize::new(0),
    });
    assert_eq!(
        located.set_servant_manager(ServantManager::Activator(Arc::new(CountingActivator {
            incarnations: AtomicUsize::new(0),
            etherealizations: AtomicUsize::new(0),
        }))),
        Err(PoaError::WrongPolicy)
    );
    located
        .set_servant_manager(ServantManager::Locator(locator.clone()))
        .unwrap();
    let obj = located.create_reference("IDL:Test/Echo:1.0").unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap().0, "located");
    assert_eq!(locator.post.load(Ordering::SeqCst), 1);

    let defaulted = root
        .create_poa(
            "defaulted",
            Some(root.manager()),
            &[
                Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
                Policy::RequestProcessing(RequestProcessingPolicy::UseDefaultServant),
                Policy::IdUniqueness(IdUniquenessPolicy::MultipleId),
            ],
        )
        .unwrap();
    defaulted.set_servant(Arc::new(Echo("default"))).unwrap();
    let a = defaulted
        .create_reference_with_id(b"1", "IDL:Test/Echo:1.0")
        .unwrap();
    let b = defaulted
        .create_reference_with_id(b"2", "IDL:Test/Echo:1.0")
        .unwrap();
    assert_eq!(
        call(&registry, &a, "whoami").unwrap(),
        ("default".into(), "1".into())
    );
    assert_eq!(
        call(&registry, &b, "whoami").unwrap(),
        ("default".into(), "2".into())
    );
    assert_eq!(PoaCurrent.poa(), Err(PoaError::NoContext));
}

#[test]
fn garbage_keys_fail_cleanly() {
    let (registry, _root) = setup();
    assert!(matches!(
        registry.resolve(b"NameService", "x"),
        Resolution::NotAPoaKey
    ));
    let mut key = key::MAGIC.to_vec();
    key.extend_from_slice(&[0; 40]);
    assert!(matches!(registry.resolve(&key, "x"), Resolution::Failed(_)));
}

#[test]
fn a_system_id_poa_refuses_ids_it_did_not_assign() {
    let (_registry, root) = setup();
    let persistent = root
        .create_poa(
            "persistent",
            Some(root.manager()),
            &[Policy::Lifespan(LifespanPolicy::Persistent)],
        )
        .unwrap();
    for poa in [&root, &persistent] {
        let path = poa.path().to_vec();
        let foreign = Err(PoaError::ForeignObjectId);
        // Ids the application made up.
        for id in [&b"fred"[..], &[0; 8], &[0; 9], &[]] {
            assert_eq!(
                poa.activate_object_with_id(id, Echo("fred")),
                foreign,
                "{path:?} {id:?}"
            );
        }
        // An id of the POA's form that it has not handed out yet.
        let handed_out = poa.reference_to_id(&poa.create_reference("IDL:Test/Echo:1.0").unwrap());
        let handed_out = handed_out.unwrap().into_bytes();
        let mut ahead = handed_out.clone();
        let last = ahead.len() - 1;
        ahead[last] += 1;
        assert_eq!(poa.activate_object_with_id(ahead, Echo("ahead")), foreign);
        // What the POA assigned is taken: an id from create_reference, and
        // the id of an object deactivated since.
        poa.activate_object_with_id(&handed_out, Echo("reserved"))
            .unwrap();
        let id = poa.activate_object(Echo("again")).unwrap();
        poa.deactivate_object(&id).unwrap();
        poa.activate_object_with_id(&id, Echo("again")).unwrap();
        assert!(poa
            .create_reference_with_id(&id, "IDL:Test/Echo:1.0")
            .is_ok());
    }
    // A persistent POA's id from an earlier run of the server (another ORB
    // token) was this POA's: it is taken.
    let mut earlier_run = vec![0xee; 8];
    earlier_run.extend_from_slice(&1u64.to_be_bytes());
    persistent
        .activate_object_with_id(earlier_run, Echo("earlier"))
        .unwrap();
    // What a servant's `?` makes of the refusal.
    let e = SystemException::from(PoaError::ForeignObjectId);
    assert_eq!(
        e.kind(),
        armillary_giop::system_exception::SystemExceptionKind::BadParam
    );
}

#[test]
fn poa_errors_become_the_standard_system_exceptions() {
    use armillary_giop::system_exception::{omg_minor, SystemExceptionKind as K};
    let cases = [
        (PoaError::AdapterInactive, K::ObjAdapter, omg_minor(1)),
        (PoaError::WrongPolicy, K::ObjAdapter, 0),
        (PoaError::WrongAdapter, K::ObjAdapter, 0),
        (PoaError::ServantNotActive, K::ObjAdapter, 0),
        (PoaError::ServantAlreadyActive, K::ObjAdapter, 0),
        (PoaError::ObjectAlreadyActive, K::ObjAdapter, 0),
        (PoaError::NoServant, K::ObjAdapter, omg_minor(3)),
        (PoaError::ObjectNotActive, K::ObjectNotExist, omg_minor(1)),
        (
            PoaError::AdapterNonExistent,
            K::ObjectNotExist,
            omg_minor(2),
        ),
        (PoaError::Destroyed, K::ObjectNotExist, omg_minor(2)),
        (PoaError::AdapterAlreadyExists, K::BadParam, 0),
        (PoaError::WrongInterface("IDL:X:1.0"), K::BadParam, 0),
        (PoaError::ForeignObjectId, K::BadParam, 0),
        (PoaError::InvalidPolicy(2), K::InvPolicy, 0),
        (PoaError::NoContext, K::BadInvOrder, 0),
        (PoaError::BadInvOrder, K::BadInvOrder, omg_minor(3)),
    ];
    for (error, kind, minor) in cases {
        let e = SystemException::from(error.clone());
        assert_eq!((e.kind(), e.minor()), (kind, minor), "{error:?}");
        assert_eq!(e.completed(), CompletionStatus::No, "{error:?}");
    }
}

#[test]
fn activation_takes_servants_arcs_and_trait_objects() {
    let (registry, root) = setup();
    let by_value = root.activate_object(Echo("value")).unwrap();
    let shared = Arc::new(Echo("arc"));
    let by_arc = root.activate_object(shared.clone()).unwrap();
    let erased: Arc<dyn Servant> = Arc::new(Echo("dyn"));
    let by_dyn = root.activate_object(erased.clone()).unwrap();
    assert_eq!(root.active_object_count(), 3);
    assert_ne!(by_value, by_arc);
    // The erased servant keeps its identity: the POA finds its id again.
    assert_eq!(root.servant_to_id(&erased).unwrap(), by_dyn);
    // A typed reference straight from activation, served by that servant.
    let typed: ObjectRef = root.activate_as(Echo("typed")).unwrap();
    assert_eq!(typed.type_id(), "IDL:Test/Echo:1.0");
    let (label, _) = call(&registry, &typed, "whoami").unwrap();
    assert_eq!(label, "typed");
    let child = root
        .create_poa(
            "user-ids",
            Some(root.manager()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    let by_id: ObjectRef = child.activate_with_id_as(b"chosen", Echo("id")).unwrap();
    assert_eq!(
        call(&registry, &by_id, "whoami").unwrap(),
        ("id".to_owned(), "chosen".into())
    );
}

/// A servant that runs a closure in its upcall, then answers like `Echo`.
struct Runs(Box<dyn Fn() + Send + Sync>);

impl Servant for Runs {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Echo:1.0"
    }

    fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        (self.0)();
        let w = request.results();
        w.write_string("ran").unwrap();
        w.write_octet_seq(&[]).unwrap();
        Ok(())
    }
}

/// Polls `done` until it holds; fails the test after a generous deadline
/// (a hang, never a slow machine, trips it).
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::yield_now();
    }
}

#[test]
fn waiting_for_completion_inside_an_upcall_of_the_same_orb_is_bad_inv_order() {
    let (registry, root) = setup();
    let (_other_registry, other_root) = PoaRegistry::new(9, Arc::new(TestFactory), 4);
    let other_manager = other_root.manager();
    let child = root.create_poa("victim", None, &[]).unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let servant = {
        let (root, child, outcomes) = (root.clone(), child.clone(), outcomes.clone());
        Runs(Box::new(move || {
            let manager = root.manager();
            let wait = WaitForCompletion::Yes;
            let mut out = outcomes.lock();
            out.push(child.destroy(Etherealize::No, wait));
            out.push(manager.hold_requests(wait));
            out.push(manager.discard_requests(wait));
            out.push(manager.deactivate(Etherealize::No, wait));
            // Another ORB's manager has no request of this thread to wait
            // for.
            out.push(other_manager.hold_requests(wait));
        }))
    };
    let obj = root.activate_as::<ObjectRef>(servant).unwrap();
    assert_eq!(call(&registry, &obj, "run").unwrap().0, "ran");
    let bad = Err(PoaError::BadInvOrder);
    assert_eq!(
        *outcomes.lock(),
        [bad.clone(), bad.clone(), bad.clone(), bad, Ok(())]
    );
    // Nothing changed: the POA lives, the manager still runs requests.
    assert_eq!(root.find_poa("victim").unwrap(), child);
    assert_eq!(root.manager().state(), PoaManagerState::Active);
    assert_eq!(call(&registry, &obj, "run").unwrap().0, "ran");
    // What a servant's `?` makes of it: BAD_INV_ORDER, OMG minor 3.
    let e = SystemException::from(PoaError::BadInvOrder);
    assert_eq!(
        (e.kind(), e.minor()),
        (
            armillary_giop::system_exception::SystemExceptionKind::BadInvOrder,
            armillary_giop::system_exception::omg_minor(3)
        )
    );
    // Outside any upcall the same calls wait and succeed.
    root.manager()
        .hold_requests(WaitForCompletion::Yes)
        .unwrap();
    child
        .destroy(Etherealize::No, WaitForCompletion::Yes)
        .unwrap();
}

#[derive(Default)]
struct Gate {
    entered: AtomicBool,
    released: AtomicBool,
    finished: AtomicBool,
}

#[test]
fn destroy_waits_for_running_requests_then_etherealizes() {
    let (registry, root) = setup();
    let poa = root
        .create_poa(
            "busy",
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    let activator = Arc::new(CountingActivator {
        incarnations: AtomicUsize::new(0),
        etherealizations: AtomicUsize::new(0),
    });
    poa.set_servant_manager(ServantManager::Activator(activator.clone()))
        .unwrap();
    let gate = Arc::new(Gate::default());
    let servant = {
        let gate = gate.clone();
        Runs(Box::new(move || {
            gate.entered.store(true, Ordering::SeqCst);
            wait_for("the test releases the request", || {
                gate.released.load(Ordering::SeqCst)
            });
            gate.finished.store(true, Ordering::SeqCst);
        }))
    };
    let obj: ObjectRef = poa.activate_with_id_as("slow", servant).unwrap();

    let request = {
        let registry = registry.clone();
        std::thread::spawn(move || call(&registry, &obj, "run"))
    };
    wait_for("the request is running", || {
        gate.entered.load(Ordering::SeqCst)
    });
    let destroyer = {
        let (poa, gate, activator) = (poa.clone(), gate.clone(), activator.clone());
        std::thread::spawn(move || {
            poa.destroy(Etherealize::Yes, WaitForCompletion::Yes)
                .unwrap();
            (
                gate.finished.load(Ordering::SeqCst),
                activator.etherealizations.load(Ordering::SeqCst),
            )
        })
    };
    // The POA is gone from its parent before destroy waits...
    wait_for("destroy has started", || root.find_poa("busy").is_err());
    // ...and nothing is etherealized while the request runs.
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 0);
    gate.released.store(true, Ordering::SeqCst);
    assert_eq!(request.join().unwrap().unwrap().0, "ran");
    let (finished_when_destroy_returned, etherealized) = destroyer.join().unwrap();
    assert!(finished_when_destroy_returned);
    assert_eq!(etherealized, 1);
}

/// A POA whose objects have user ids and a servant activator that counts.
fn activator_poa(root: &Poa, name: &str) -> (Poa, Arc<CountingActivator>) {
    let poa = root
        .create_poa(
            name,
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    let activator = Arc::new(CountingActivator {
        incarnations: AtomicUsize::new(0),
        etherealizations: AtomicUsize::new(0),
    });
    poa.set_servant_manager(ServantManager::Activator(activator.clone()))
        .unwrap();
    (poa, activator)
}

#[test]
fn deactivate_object_etherealizes_once_the_running_requests_have_finished() {
    let (registry, root) = setup();
    let (poa, activator) = activator_poa(&root, "busy");
    let gate = Arc::new(Gate::default());
    let servant = {
        let gate = gate.clone();
        Runs(Box::new(move || {
            gate.entered.store(true, Ordering::SeqCst);
            wait_for("the test releases the request", || {
                gate.released.load(Ordering::SeqCst)
            });
            gate.finished.store(true, Ordering::SeqCst);
        }))
    };
    let obj: ObjectRef = poa.activate_with_id_as("slow", servant).unwrap();
    let request = {
        let registry = registry.clone();
        let obj = obj.clone();
        std::thread::spawn(move || call(&registry, &obj, "run"))
    };
    wait_for("the request is running", || {
        gate.entered.load(Ordering::SeqCst)
    });

    // deactivate_object returns while the request runs (on another
    // thread, so that a deactivation that waited would fail the test
    // rather than hang it)...
    let deactivated = Arc::new(AtomicBool::new(false));
    {
        let (poa, deactivated) = (poa.clone(), deactivated.clone());
        std::thread::spawn(move || {
            poa.deactivate_object("slow").unwrap();
            deactivated.store(true, Ordering::SeqCst);
        });
    }
    wait_for("deactivate_object returns", || {
        deactivated.load(Ordering::SeqCst)
    });
    // ...and nothing is etherealized while the request runs. The object
    // stays in the map for it, but is not active for anyone else.
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 0);
    assert!(!gate.finished.load(Ordering::SeqCst));
    assert_eq!(poa.active_object_count(), 1);
    assert_eq!(
        poa.deactivate_object("slow"),
        Err(PoaError::ObjectNotActive)
    );
    assert_eq!(
        poa.id_to_servant("slow").err(),
        Some(PoaError::ObjectNotActive)
    );
    assert_eq!(
        poa.id_to_reference("slow").err(),
        Some(PoaError::ObjectNotActive)
    );
    assert_eq!(
        poa.activate_object_with_id("slow", Echo("again")),
        Err(PoaError::ObjectAlreadyActive)
    );
    // A new request is not dispatched to the servant: the activator would
    // incarnate the object again, but only once it is etherealized, so
    // the client may try again later.
    let refused = call(&registry, &obj, "whoami").unwrap_err();
    assert!(refused.contains("TRANSIENT"), "{refused}");
    assert!(
        refused.contains(&format!(
            "{:#010x}",
            armillary_giop::system_exception::minor::OBJECT_DEACTIVATING
        )),
        "{refused}"
    );
    assert_eq!(activator.incarnations.load(Ordering::SeqCst), 0);

    gate.released.store(true, Ordering::SeqCst);
    assert_eq!(request.join().unwrap().unwrap().0, "ran");
    // The request's end completed the deactivation.
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 1);
    assert_eq!(poa.active_object_count(), 0);
    // The next request has the activator incarnate the object afresh.
    assert_eq!(call(&registry, &obj, "whoami").unwrap().0, "incarnated");
    assert_eq!(activator.incarnations.load(Ordering::SeqCst), 1);
}

#[test]
fn a_servant_that_deactivates_its_own_object_is_etherealized_after_its_upcall() {
    let (registry, root) = setup();
    let (poa, activator) = activator_poa(&root, "selfish");
    let during = Arc::new(Mutex::new(None));
    let servant = {
        let (poa, activator, during) = (poa.clone(), activator.clone(), during.clone());
        Runs(Box::new(move || {
            poa.deactivate_object("me").unwrap();
            *during.lock() = Some(activator.etherealizations.load(Ordering::SeqCst));
        }))
    };
    let obj: ObjectRef = poa.activate_with_id_as("me", servant).unwrap();
    assert_eq!(call(&registry, &obj, "run").unwrap().0, "ran");
    assert_eq!(
        *during.lock(),
        Some(0),
        "not etherealized inside its upcall"
    );
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 1);
    assert_eq!(poa.active_object_count(), 0);
}

#[test]
fn deactivating_an_object_of_an_active_object_map_only_poa_refuses_new_requests() {
    let (registry, root) = setup();
    let gate = Arc::new(Gate::default());
    let servant = {
        let gate = gate.clone();
        Runs(Box::new(move || {
            gate.entered.store(true, Ordering::SeqCst);
            wait_for("the test releases the request", || {
                gate.released.load(Ordering::SeqCst)
            });
        }))
    };
    let servant: Arc<dyn Servant> = Arc::new(servant);
    let id = root.activate_object(servant.clone()).unwrap();
    let obj = root.id_to_reference(&id).unwrap();
    let request = {
        let (registry, obj) = (registry.clone(), obj.clone());
        std::thread::spawn(move || call(&registry, &obj, "run"))
    };
    wait_for("the request is running", || {
        gate.entered.load(Ordering::SeqCst)
    });
    root.deactivate_object(&id).unwrap();
    let refused = call(&registry, &obj, "run").unwrap_err();
    assert!(refused.contains("OBJECT_NOT_EXIST"), "{refused}");
    // Its servant is not active either (UNIQUE_ID: it cannot serve a new
    // id until the object has left the map).
    assert_eq!(
        root.servant_to_id(&servant),
        Err(PoaError::ServantAlreadyActive)
    );
    gate.released.store(true, Ordering::SeqCst);
    assert_eq!(request.join().unwrap().unwrap().0, "ran");
    assert_eq!(root.active_object_count(), 0);
    // Once it has left, the servant can be activated again.
    let again = root.activate_object(servant).unwrap();
    assert_ne!(again, id);
}

#[test]
fn deactivating_a_manager_with_etherealize_tells_the_activator() {
    let (registry, root) = setup();
    let poa = root
        .create_poa(
            "lazy",
            None,
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    let activator = Arc::new(CountingActivator {
        incarnations: AtomicUsize::new(0),
        etherealizations: AtomicUsize::new(0),
    });
    poa.set_servant_manager(ServantManager::Activator(activator.clone()))
        .unwrap();
    let manager = poa.manager();
    assert_ne!(manager, root.manager());
    manager.activate().unwrap();
    let a = poa
        .create_reference_with_id("a", "IDL:Test/Echo:1.0")
        .unwrap();
    let b = poa
        .create_reference_with_id("b", "IDL:Test/Echo:1.0")
        .unwrap();
    call(&registry, &a, "whoami").unwrap();
    call(&registry, &b, "whoami").unwrap();
    assert_eq!(poa.active_object_count(), 2);
    manager
        .deactivate(Etherealize::Yes, WaitForCompletion::Yes)
        .unwrap();
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 2);
    assert_eq!(poa.active_object_count(), 0);
    assert!(call(&registry, &a, "whoami")
        .unwrap_err()
        .contains("OBJ_ADAPTER"));
    // The root POA's manager is another manager: its objects still run.
    let echo = root.activate_as::<ObjectRef>(Echo("root")).unwrap();
    assert_eq!(call(&registry, &echo, "whoami").unwrap().0, "root");
}

struct MakesChildren;

impl AdapterActivator for MakesChildren {
    fn unknown_adapter(&self, parent: &Poa, name: &str) -> bool {
        name.starts_with("auto") && parent.create_poa(name, None, &[]).is_ok()
    }
}

#[test]
fn find_poa_never_activates_and_find_or_activate_poa_asks_the_activator() {
    let (_registry, root) = setup();
    assert_eq!(
        root.find_or_activate_poa("auto-1"),
        Err(PoaError::AdapterNonExistent)
    );
    root.set_activator(Some(Arc::new(MakesChildren)));
    assert!(root.activator().is_some());
    assert_eq!(root.find_poa("auto-1"), Err(PoaError::AdapterNonExistent));
    let made = root.find_or_activate_poa("auto-1").unwrap();
    assert_eq!(made.name(), "auto-1");
    assert_eq!(root.find_poa("auto-1").unwrap(), made);
    assert_eq!(root.children(), vec![made.clone()]);
    assert_eq!(made.parent(), Some(root.clone()));
    assert_eq!(
        root.find_or_activate_poa("other"),
        Err(PoaError::AdapterNonExistent)
    );
}

#[test]
fn a_manager_of_another_orb_is_refused() {
    let (_registry, root) = setup();
    let (_other, other_root) = PoaRegistry::new(9, Arc::new(TestFactory), 4);
    assert_eq!(
        root.create_poa("mixed", Some(other_root.manager()), &[]),
        Err(PoaError::WrongAdapter)
    );
}

#[test]
fn object_ids_convert_compare_and_display() {
    let text = ObjectId::from("fred");
    assert_eq!(text, ObjectId::from(b"fred"));
    assert_eq!(text, ObjectId::from(&b"fred"[..]));
    assert_eq!(text, ObjectId::from(b"fred".to_vec()));
    assert_eq!(text, ObjectId::from(String::from("fred")));
    assert_eq!(text.as_bytes(), b"fred");
    assert_eq!(text.as_str(), Some("fred"));
    assert_eq!(text.to_string(), "fred");
    assert_eq!(ObjectId::from("a b").to_string(), "a b");
    let binary = ObjectId::from(&1u64.to_be_bytes());
    assert_eq!(binary.to_string(), "0000000000000001");
    assert_eq!(ObjectId::from("tab\there").to_string(), "7461620968657265");
    assert_eq!(ObjectId::default().to_string(), "");
    assert_eq!(format!("{text:?}"), "ObjectId(\"fred\")");
    assert_eq!(format!("{binary:?}"), "ObjectId(0x0000000000000001)");
    let mut sorted = vec![ObjectId::from("b"), ObjectId::from("a")];
    sorted.sort();
    assert_eq!(sorted, ["a", "b"]);
    assert_eq!(Vec::<u8>::from(text.clone()), b"fred");
    // On the wire: a sequence<octet>.
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    w.write(&binary).unwrap();
    let bytes = w.into_bytes();
    assert_eq!(bytes.len(), 4 + 8);
    let mut r = CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(r.read::<ObjectId>().unwrap(), binary);
    // System ids come back typed from activation.
    let (_registry, root) = setup();
    let id = root.activate_object(Echo("x")).unwrap();
    assert_eq!(
        root.id_to_servant(&id).unwrap().repository_id(),
        "IDL:Test/Echo:1.0"
    );
}

#[test]
fn public_poa_types_debug_without_their_internals() {
    let (_registry, root) = setup();
    let debug = format!("{root:?}");
    assert!(
        debug.contains("Poa") && debug.contains("RootPOAManager"),
        "{debug}"
    );
    let manager = format!("{:?}", root.manager());
    assert!(manager.contains("Active"), "{manager}");
    let locator = ServantManager::Locator(Arc::new(Locator {
        post: AtomicUsize::new(0),
    }));
    assert!(format!("{locator:?}").starts_with("Locator("));
    let id = ObjectId::from("oid");
    let args = CdrReader::new(&[], ByteOrder::Little, GiopVersion::V1_2);
    let reply = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    let request = ServerRequest::new("get_quote", &id, args, true, reply);
    let debug = format!("{request:?}");
    assert!(
        debug.contains("get_quote") && debug.contains("oid"),
        "{debug}"
    );
}
