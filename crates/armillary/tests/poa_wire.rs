//! The POA over the wire: requests that arrive by IIOP see the right POA
//! Current (POA, object id, reference; NoContext outside an upcall), the
//! thread policy holds under a thread-pool server (SINGLE_THREAD_MODEL
//! serialises a POA's upcalls; ORB_CTRL_MODEL lets them overlap), and an
//! upcall that would wait for its own completion gets BAD_INV_ORDER, and
//! `_non_existent` of a deactivated object is true.
//!
//! Concurrency is shown with rendezvous, not timing: an upcall waits (with
//! a generous timeout) for a partner upcall to be running at the same
//! time, and an atomic counts the upcalls in flight.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{
    omg_minor, CompletionStatus, SystemException, SystemExceptionKind,
};
use armillary::poa::current::NoContext;
use armillary::poa::{
    Etherealize, IdAssignmentPolicy, IdUniquenessPolicy, PoaCurrent, PoaError, PoaManagerState,
    Policy, RequestProcessingPolicy, ServantRetentionPolicy, ThreadPolicy,
};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest, UserException, WaitForCompletion};
use armillary_giop::cdr::{CdrDecode, CdrError, CdrReader};

/// Far beyond anything a working server needs; reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

fn marshal(e: CdrError) -> SystemException {
    SystemException::from_cdr_error(&e, CompletionStatus::No)
}

/// What a servant learned from POA Current during one upcall.
#[derive(Debug)]
struct WhoAmI {
    poa_path: Vec<String>,
    object_id: Vec<u8>,
    reference: ObjectRef,
    /// `ServerRequest::object_id`, which must agree with POA Current.
    request_object_id: Vec<u8>,
    /// `get_object_id` and `get_reference` asked through the reference
    /// `resolve_initial_references("POACurrent")` returned.
    object_id_by_cdr: Vec<u8>,
    reference_by_cdr: ObjectRef,
}

fn no_context_as_internal(_: PoaError) -> SystemException {
    SystemException::internal(0, CompletionStatus::No)
}

/// Answers `whoami` from POA Current, found the CORBA way.
struct Introspective {
    orb: Orb,
}

impl Servant for Introspective {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Introspective:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        if req.operation() != "whoami" {
            return Err(SystemException::bad_operation(0, CompletionStatus::No));
        }
        let obj = self.orb.resolve_initial_references("POACurrent")?;
        let current = PoaCurrent::narrow(&obj)
            .ok_or_else(|| SystemException::internal(1, CompletionStatus::No))?;
        let poa = current.poa().map_err(no_context_as_internal)?;
        let object_id = current.object_id().map_err(no_context_as_internal)?;
        let reference = current.reference().map_err(no_context_as_internal)?;
        let object_id_by_cdr: Vec<u8> =
            obj.invoke::<_, SystemException>("get_object_id", &|_| Ok(()), |reply| match reply {
                ReplyBody::Result(r) => Ok(Ok(r.read_octet_seq()?.to_vec())),
                ReplyBody::UserException { .. } => {
                    Ok(Err(SystemException::internal(2, CompletionStatus::No)))
                }
            })?;
        let reference_by_cdr: ObjectRef =
            obj.invoke::<_, SystemException>("get_reference", &|_| Ok(()), |reply| match reply {
                ReplyBody::Result(r) => Ok(Ok(r.read()?)),
                ReplyBody::UserException { .. } => {
                    Ok(Err(SystemException::internal(3, CompletionStatus::No)))
                }
            })?;
        let request_object_id = req.object_id().clone();
        let w = req.results();
        w.write_ulong(poa.path().len() as u32);
        for name in poa.path() {
            w.write_string(name).map_err(marshal)?;
        }
        w.write(&object_id).map_err(marshal)?;
        w.write(&reference).map_err(marshal)?;
        w.write(&request_object_id).map_err(marshal)?;
        w.write_octet_seq(&object_id_by_cdr).map_err(marshal)?;
        w.write(&reference_by_cdr).map_err(marshal)?;
        Ok(())
    }
}

fn read_whoami(r: &mut CdrReader<'_>) -> Result<WhoAmI, CdrError> {
    let n = r.read_ulong()?;
    let mut poa_path = Vec::new();
    for _ in 0..n {
        poa_path.push(r.read_string()?);
    }
    Ok(WhoAmI {
        poa_path,
        object_id: r.read_octet_seq()?.to_vec(),
        reference: r.read()?,
        request_object_id: r.read_octet_seq()?.to_vec(),
        object_id_by_cdr: r.read_octet_seq()?.to_vec(),
        reference_by_cdr: r.read()?,
    })
}

fn whoami(obj: &ObjectRef) -> WhoAmI {
    obj.invoke::<_, SystemException>("whoami", &|_| Ok(()), |reply| match reply {
        ReplyBody::Result(r) => Ok(Ok(read_whoami(r)?)),
        ReplyBody::UserException { .. } => unreachable!(),
    })
    .unwrap()
}

#[test]
fn poa_current_over_iiop_names_the_poa_object_and_reference() {
    let server_orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(2)),
    )
    .unwrap();
    let root = server_orb.root_poa();
    let manager = root.manager();
    manager.activate().unwrap();
    let servant = || -> Arc<dyn Servant> {
        Arc::new(Introspective {
            orb: server_orb.clone(),
        })
    };

    // Three objects in three POAs: an implicitly activated one in the root,
    // a user id in a child, and ids served by one default servant in a
    // grandchild.
    let in_root = root.servant_to_reference(&servant()).unwrap();
    let child = root
        .create_poa(
            "wire",
            Some(manager.clone()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    child.activate_object_with_id(b"alpha", servant()).unwrap();
    let alpha = child.id_to_reference(b"alpha").unwrap();
    let grandchild = child
        .create_poa(
            "defaults",
            Some(manager.clone()),
            &[
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
                Policy::IdUniqueness(IdUniquenessPolicy::MultipleId),
                Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
                Policy::RequestProcessing(RequestProcessingPolicy::UseDefaultServant),
            ],
        )
        .unwrap();
    grandchild.set_servant(servant()).unwrap();
    let gamma = grandchild
        .create_reference_with_id(b"gamma", "IDL:Test/Introspective:1.0")
        .unwrap();
    let delta = grandchild
        .create_reference_with_id(b"delta", "IDL:Test/Introspective:1.0")
        .unwrap();

    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let cases: [(&ObjectRef, &[&str], Vec<u8>); 4] = [
        (
            &in_root,
            &[],
            root.reference_to_id(&in_root).unwrap().into(),
        ),
        (&alpha, &["wire"], b"alpha".to_vec()),
        (&gamma, &["wire", "defaults"], b"gamma".to_vec()),
        (&delta, &["wire", "defaults"], b"delta".to_vec()),
    ];
    for (published, path, id) in cases {
        let remote = orb
            .string_to_object(&server_orb.object_to_string(published))
            .unwrap();
        let me = whoami(&remote);
        assert_eq!(me.poa_path, path, "{path:?}");
        assert_eq!(me.object_id, id, "{path:?}");
        assert_eq!(me.request_object_id, id, "{path:?}");
        assert_eq!(me.object_id_by_cdr, id, "{path:?}");
        for reference in [&me.reference, &me.reference_by_cdr] {
            assert!(reference.is_equivalent(published), "{path:?}");
            assert!(reference.is_equivalent(&remote), "{path:?}");
            assert_eq!(reference.type_id(), "IDL:Test/Introspective:1.0");
        }
        // The reference came back over the wire and works from the client.
        let again = whoami(&me.reference_by_cdr);
        assert_eq!(again.object_id, id);
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn poa_current_raises_no_context_outside_an_upcall() {
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let obj = orb.resolve_initial_references("POACurrent").unwrap();
    assert_eq!(obj.type_id(), armillary::poa::current::REPOSITORY_ID);
    let current = PoaCurrent::narrow(&obj).unwrap();
    assert_eq!(current.poa().unwrap_err(), PoaError::NoContext);
    assert_eq!(current.object_id(), Err(PoaError::NoContext));
    assert_eq!(current.reference().unwrap_err(), PoaError::NoContext);
    assert_eq!(current.servant().err(), Some(PoaError::NoContext));
    // Through the reference, NoContext is the IDL user exception.
    for operation in ["get_object_id", "get_reference"] {
        let raised = obj
            .invoke::<(), SystemException>(operation, &|_| Ok(()), |reply| match reply {
                ReplyBody::Result(_) => panic!("{operation} answered outside an upcall"),
                ReplyBody::UserException { id, members } => {
                    assert_eq!(id, NoContext::REPOSITORY_ID);
                    assert_eq!(NoContext::decode(members)?, NoContext);
                    Ok(Err(SystemException::unknown(0, CompletionStatus::No)))
                }
            })
            .unwrap_err();
        assert_eq!(raised.kind(), SystemExceptionKind::Unknown);
    }
    assert!(obj.is_a(armillary::poa::current::REPOSITORY_ID).unwrap());
    // A remote object is not this thread's Current.
    let remote = orb
        .string_to_object("corbaloc:iiop:1.2@127.0.0.1:1/POACurrent")
        .unwrap();
    assert!(PoaCurrent::narrow(&remote).is_none());
    assert!(PoaCurrent::narrow(&ObjectRef::nil()).is_none());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A two-party rendezvous with a timeout.
#[derive(Default)]
struct Rendezvous {
    state: Mutex<(usize, u64)>,
    met: Condvar,
}

impl Rendezvous {
    /// Waits up to `timeout` for a second party; true if one came.
    fn meet(&self, timeout: Duration) -> bool {
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        if state.0 == 2 {
            *state = (0, state.1 + 1);
            self.met.notify_all();
            return true;
        }
        let generation = state.1;
        let (mut state, _) = self
            .met
            .wait_timeout_while(state, timeout, |s| s.1 == generation)
            .unwrap();
        if state.1 == generation {
            // Nobody came: leave.
            state.0 -= 1;
            return false;
        }
        true
    }
}

/// Counts the upcalls in flight across every servant that shares it.
#[derive(Default)]
struct Load {
    in_flight: AtomicUsize,
    max: AtomicUsize,
    rendezvous: Rendezvous,
}

struct Busy {
    load: Arc<Load>,
}

impl Servant for Busy {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Busy:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let load = &self.load;
        let now = load.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        load.max.fetch_max(now, Ordering::SeqCst);
        let outcome = match req.operation() {
            // Waits up to the given time for another upcall to be running.
            "meet" => match req.args().read_ulong() {
                Ok(ms) => {
                    let met = load.rendezvous.meet(Duration::from_millis(ms.into()));
                    req.results().write_bool(met);
                    Ok(())
                }
                Err(e) => Err(marshal(e)),
            },
            "work" => {
                // Gives another upcall every chance to overlap this one.
                std::thread::yield_now();
                std::thread::sleep(Duration::from_millis(1));
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        };
        load.in_flight.fetch_sub(1, Ordering::SeqCst);
        outcome
    }
}

/// A thread-pool server with one POA of the given thread policy holding
/// two objects that share a [`Load`]; returns their stringified IORs.
fn busy_server(policy: ThreadPolicy) -> (Orb, Arc<Load>, [String; 2]) {
    let orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(4)),
    )
    .unwrap();
    let root = orb.root_poa();
    root.manager().activate().unwrap();
    let poa = root
        .create_poa("busy", Some(root.manager()), &[Policy::Thread(policy)])
        .unwrap();
    let load = Arc::new(Load::default());
    let iors = [0, 1].map(|_| {
        let id = poa
            .activate_object(Arc::new(Busy { load: load.clone() }))
            .unwrap();
        orb.object_to_string(&poa.id_to_reference(&id).unwrap())
    });
    (orb, load, iors)
}

fn meet(obj: &ObjectRef, timeout: Duration) -> bool {
    obj.invoke::<_, SystemException>(
        "meet",
        &|w| {
            w.write_ulong(timeout.as_millis() as u32);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_bool()?)),
            ReplyBody::UserException { .. } => unreachable!(),
        },
    )
    .unwrap()
}

/// Runs `call` on two client ORBs at once (two connections), each on its
/// own object, and returns what each returned.
fn two_clients<T: Send + 'static>(
    iors: &[String; 2],
    call: impl Fn(&ObjectRef) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let call = Arc::new(call);
    let threads: Vec<_> = iors
        .iter()
        .cloned()
        .map(|ior| {
            let call = call.clone();
            std::thread::spawn(move || {
                let orb = Orb::with_config(
                    OrbConfig::new().collocation(armillary::config::Collocation::None),
                )
                .unwrap();
                let obj = orb.string_to_object(&ior).unwrap();
                // Connect (and check the object) before the measured calls.
                assert!(!obj.non_existent().unwrap());
                let out = call(&obj);
                orb.shutdown(WaitForCompletion::Yes).unwrap();
                out
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn a_single_thread_poa_runs_one_upcall_at_a_time_under_a_thread_pool() {
    let (server_orb, load, iors) = busy_server(ThreadPolicy::SingleThread);
    two_clients(&iors, |obj| {
        for _ in 0..50 {
            obj.invoke::<(), SystemException>("work", &|_| Ok(()), |_| Ok(Ok(())))
                .unwrap();
        }
    });
    assert_eq!(load.max.load(Ordering::SeqCst), 1);
    // Upcalls that wait for a partner never find one: each is alone in the
    // POA. (The short wait only bounds how long this takes; a correct
    // server gives `false` whatever it is.)
    let met = two_clients(&iors, |obj| {
        (0..3)
            .map(|_| meet(obj, Duration::from_millis(100)))
            .collect::<Vec<_>>()
    });
    assert!(met.iter().flatten().all(|m| !m), "{met:?}");
    assert_eq!(load.max.load(Ordering::SeqCst), 1);
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn an_orb_controlled_poa_runs_upcalls_concurrently_under_a_thread_pool() {
    let (server_orb, load, iors) = busy_server(ThreadPolicy::OrbControlled);
    // Each upcall waits for the other client's upcall to be running too:
    // both return true only if the server ran them at the same time.
    let met = two_clients(&iors, |obj| {
        (0..3).map(|_| meet(obj, DEADLINE)).collect::<Vec<_>>()
    });
    assert_eq!(met, [[true; 3], [true; 3]]);
    assert_eq!(load.max.load(Ordering::SeqCst), 2);
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Asks, inside its own upcall, for what CORBA forbids there: to wait for
/// the completion of requests of its own ORB (which include itself).
struct WaitsForItself;

impl Servant for WaitsForItself {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/WaitsForItself:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let poa = PoaCurrent.poa()?;
        let wait = WaitForCompletion::Yes;
        match req.operation() {
            "hold_requests" => poa.manager().hold_requests(wait)?,
            "discard_requests" => poa.manager().discard_requests(wait)?,
            "deactivate" => poa.manager().deactivate(Etherealize::No, wait)?,
            "destroy" => poa.destroy(Etherealize::No, wait)?,
            "ping" => {}
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

#[test]
fn waiting_for_completion_inside_an_upcall_raises_bad_inv_order_minor_3() {
    let server_orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(2)),
    )
    .unwrap();
    let root = server_orb.root_poa();
    root.manager().activate().unwrap();
    let poa = root.create_poa("waits", Some(root.manager()), &[]).unwrap();
    let published = poa.activate_as::<ObjectRef>(WaitsForItself).unwrap();
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&published))
        .unwrap();
    let call = |operation: &str| {
        remote.invoke::<(), SystemException>(operation, &|_| Ok(()), |_| Ok(Ok(())))
    };
    for operation in ["hold_requests", "discard_requests", "deactivate", "destroy"] {
        let e = call(operation).unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder, "{operation}");
        assert_eq!(e.minor(), omg_minor(3), "{operation}");
        assert_eq!(e.completed(), CompletionStatus::No, "{operation}");
    }
    // Each refusal changed nothing: the manager is active, the POA lives
    // and the object still answers.
    assert_eq!(root.manager().state(), PoaManagerState::Active);
    assert_eq!(root.find_poa("waits").unwrap(), poa);
    call("ping").unwrap();
    // From the application's own thread the same calls wait and succeed.
    poa.destroy(Etherealize::Yes, WaitForCompletion::Yes)
        .unwrap();
    root.manager()
        .deactivate(Etherealize::Yes, WaitForCompletion::Yes)
        .unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Answers every operation with nothing (`ping`), and the operations every
/// object has.
struct Pingable;

impl Servant for Pingable {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Pingable:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, _req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        Ok(())
    }
}

#[test]
fn non_existent_of_a_deactivated_object_is_true_over_the_wire() {
    let server_orb =
        Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
            .unwrap();
    let root = server_orb.root_poa();
    root.manager().activate().unwrap();
    let published = root.activate_as::<ObjectRef>(Pingable).unwrap();
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let remote = orb
        .string_to_object(&server_orb.object_to_string(&published))
        .unwrap();
    assert!(!remote.non_existent().unwrap());
    assert!(!published.non_existent().unwrap(), "collocated");

    root.deactivate_object(root.reference_to_id(&published).unwrap())
        .unwrap();
    // The server raises OBJECT_NOT_EXIST for the deactivated object...
    let e = remote
        .invoke::<(), SystemException>("ping", &|_| Ok(()), |_| Ok(Ok(())))
        .unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);
    // ...which `_non_existent` answers as true, remote or collocated.
    assert_eq!(remote.non_existent(), Ok(true));
    assert_eq!(published.non_existent(), Ok(true), "collocated");
    // A server that cannot be reached says nothing of the object.
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
    let e = remote.non_existent().unwrap_err();
    assert!(
        matches!(
            e.kind(),
            SystemExceptionKind::Transient | SystemExceptionKind::CommFailure
        ),
        "{e}"
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A servant whose `block` upcall waits until the test opens the gate.
#[derive(Default)]
struct Gated {
    entered: AtomicUsize,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gated {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl Servant for Gated {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Gated:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        if req.operation() == "block" {
            self.entered.fetch_add(1, Ordering::SeqCst);
            let open = self.open.lock().unwrap();
            let (open, _) = self
                .opened
                .wait_timeout_while(open, DEADLINE, |open| !*open)
                .unwrap();
            assert!(*open, "the test never opened the gate");
        }
        Ok(())
    }
}

/// Incarnates a new [`Gated`] per object and counts etherealizations.
#[derive(Default)]
struct GatedActivator {
    incarnations: AtomicUsize,
    etherealizations: AtomicUsize,
}

impl armillary::poa::ServantActivator for GatedActivator {
    fn incarnate(
        &self,
        _: &armillary::poa::ObjectId,
        _: &armillary::poa::Poa,
    ) -> Result<Arc<dyn Servant>, armillary::poa::ServantManagerError> {
        self.incarnations.fetch_add(1, Ordering::SeqCst);
        let servant = Gated::default();
        servant.open();
        Ok(Arc::new(servant))
    }

    fn etherealize(
        &self,
        _: &armillary::poa::ObjectId,
        _: &armillary::poa::Poa,
        _: Arc<dyn Servant>,
        _: bool,
        _: bool,
    ) {
        self.etherealizations.fetch_add(1, Ordering::SeqCst);
    }
}

fn call(obj: &ObjectRef, operation: &str) -> Result<(), SystemException> {
    obj.invoke::<(), SystemException>(operation, &|_| Ok(()), |_| Ok(Ok(())))
}

#[test]
fn deactivate_object_etherealizes_after_the_running_request_over_the_wire() {
    let server_orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(4)),
    )
    .unwrap();
    let root = server_orb.root_poa();
    root.manager().activate().unwrap();
    let poa = root
        .create_poa(
            "gated",
            Some(root.manager()),
            &[
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
            ],
        )
        .unwrap();
    let activator = Arc::new(GatedActivator::default());
    poa.set_servant_manager(armillary::poa::ServantManager::Activator(activator.clone()))
        .unwrap();
    let gated = Arc::new(Gated::default());
    let published: ObjectRef = poa.activate_with_id_as("gated", gated.clone()).unwrap();
    let ior = server_orb.object_to_string(&published);

    let blocked = {
        let ior = ior.clone();
        std::thread::spawn(move || {
            let orb = Orb::with_config(
                OrbConfig::new().collocation(armillary::config::Collocation::None),
            )
            .unwrap();
            let outcome = call(&orb.string_to_object(&ior).unwrap(), "block");
            orb.shutdown(WaitForCompletion::Yes).unwrap();
            outcome
        })
    };
    armillary_testkit::wait_until("the request runs in the servant", || {
        gated.entered.load(Ordering::SeqCst) == 1
    });
    poa.deactivate_object("gated").unwrap();
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 0);

    // Meanwhile another client's request is not dispatched: TRANSIENT,
    // since the activator will incarnate the object again.
    let orb = Orb::with_config(OrbConfig::new().collocation(armillary::config::Collocation::None))
        .unwrap();
    let remote = orb.string_to_object(&ior).unwrap();
    let e = call(&remote, "ping").unwrap_err();
    assert_eq!(
        (e.kind(), e.minor(), e.completed()),
        (
            SystemExceptionKind::Transient,
            armillary::minor::OBJECT_DEACTIVATING,
            CompletionStatus::No
        )
    );
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 0);
    assert_eq!(activator.incarnations.load(Ordering::SeqCst), 0);

    gated.open();
    blocked.join().unwrap().unwrap();
    // The blocked request's end etherealized the servant, before its reply.
    assert_eq!(activator.etherealizations.load(Ordering::SeqCst), 1);
    // The object comes back through the activator.
    call(&remote, "ping").unwrap();
    assert_eq!(activator.incarnations.load(Ordering::SeqCst), 1);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server_orb.shutdown(WaitForCompletion::Yes).unwrap();
}
