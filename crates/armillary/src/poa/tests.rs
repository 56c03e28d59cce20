//! POA behaviour: activation, id/reference/servant conversions, policies,
//! servant managers, managers' states and O(1) key resolution.

use super::*;
use crate::runtime::{ByteOrder, CdrReader, CdrWriter, GiopVersion};
use armillary_giop::ior::{Ior, TaggedProfile};
use std::sync::atomic::AtomicUsize;

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
                    .get_object_id()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                let w = request.results();
                w.write_string(self.0).unwrap();
                w.write_octet_seq(&oid).unwrap();
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

fn setup() -> (Arc<PoaRegistry>, Poa) {
    let (registry, root) = PoaRegistry::new(7, Arc::new(TestFactory), 4);
    root.the_poa_manager().activate().unwrap();
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
) -> Result<(String, Vec<u8>), String> {
    let key = key_of(obj);
    match registry.resolve(&key, operation) {
        Resolution::Upcall(upcall) => {
            let args = CdrReader::new(&[], ByteOrder::Little, GiopVersion::V1_2);
            let reply = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
            let mut request = ServerRequest::new(operation, &key, args, true, reply);
            upcall.run(&mut request).map_err(|e| e.to_string())?;
            let (_, w, start) = request.into_reply();
            let bytes = w.into_bytes();
            let mut r =
                CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2).with_position(start);
            Ok((
                r.read_string().unwrap(),
                r.read_octet_seq().unwrap().to_vec(),
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
            Some(root.the_poa_manager()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    assert_eq!(
        root.create_poa("child", None, &[]).unwrap_err(),
        PoaError::AdapterAlreadyExists
    );
    assert_eq!(root.find_poa("child", false).unwrap(), child);
    assert_eq!(child.the_parent().unwrap(), root);
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

    child.destroy(true, true).unwrap();
    assert_eq!(
        root.find_poa("child", false),
        Err(PoaError::AdapterNonExistent)
    );
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("OBJECT_NOT_EXIST"));
    // A new POA of the same name does not inherit the old transient keys.
    let again = root
        .create_poa(
            "child",
            Some(root.the_poa_manager()),
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
        .create_poa("store", Some(root.the_poa_manager()), &policies)
        .unwrap();
    poa.activate_object_with_id(b"item", Arc::new(Echo("restarted")))
        .unwrap();
    root.the_poa_manager().activate().unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap().0, "restarted");
}

#[test]
fn manager_states_gate_requests() {
    let (registry, root) = setup();
    let obj = root
        .servant_to_reference(&(Arc::new(Echo("m")) as Arc<dyn Servant>))
        .unwrap();
    let manager = root.the_poa_manager();
    manager.hold_requests(false).unwrap();
    assert_eq!(call(&registry, &obj, "whoami").unwrap_err(), "held");
    manager.discard_requests(false).unwrap();
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("TRANSIENT"));
    manager.activate().unwrap();
    assert!(call(&registry, &obj, "whoami").is_ok());
    manager.deactivate(true).unwrap();
    assert!(call(&registry, &obj, "whoami")
        .unwrap_err()
        .contains("OBJ_ADAPTER"));
}

struct CountingActivator {
    incarnations: AtomicUsize,
    etherealizations: AtomicUsize,
}

impl ServantActivator for CountingActivator {
    fn incarnate(&self, oid: &[u8], _poa: &Poa) -> Result<Arc<dyn Servant>, ServantManagerError> {
        self.incarnations.fetch_add(1, Ordering::SeqCst);
        if oid == b"elsewhere" {
            return Err(ServantManagerError::Forward(ObjectRef::nil()));
        }
        Ok(Arc::new(Echo("incarnated")))
    }

    fn etherealize(&self, _: &[u8], _: &Poa, _: Arc<dyn Servant>, _: bool, _: bool) {
        self.etherealizations.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn servant_activator_incarnates_once_and_etherealizes() {
    let (registry, root) = setup();
    let poa = root
        .create_poa(
            "lazy",
            Some(root.the_poa_manager()),
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
        _oid: &[u8],
        _poa: &Poa,
        operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError> {
        Ok((Arc::new(Echo("located")), Box::new(operation.to_owned())))
    }

    fn postinvoke(&self, _: &[u8], _: &Poa, operation: &str, cookie: Cookie, _: Arc<dyn Servant>) {
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
            Some(root.the_poa_manager()),
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
            Some(root.the_poa_manager()),
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
        ("default".into(), b"1".to_vec())
    );
    assert_eq!(
        call(&registry, &b, "whoami").unwrap(),
        ("default".into(), b"2".to_vec())
    );
    assert_eq!(PoaCurrent.get_poa(), Err(PoaError::NoContext));
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
            Some(root.the_poa_manager()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    let by_id: ObjectRef = child.activate_with_id_as(b"chosen", Echo("id")).unwrap();
    assert_eq!(
        call(&registry, &by_id, "whoami").unwrap(),
        ("id".to_owned(), b"chosen".to_vec())
    );
}
