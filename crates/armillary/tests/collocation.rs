//! Collocation (`-ORBCollocation`): calls to objects served in this
//! process go through their POA without IIOP, keeping every semantic of
//! a remote call (`thru-poa`), or straight to the servant (`direct`).
//!
//! Each semantic is checked for both ways a collocated call carries its
//! arguments: typed (what a generated stub does, `ObjectRef::invoke_typed`
//! on the servant's interface trait, no CDR) and marshalled
//! (`ObjectRef::invoke`: untyped calls, DII). No IIOP is ever used by a
//! collocated call: the server accepts no connection
//! (`ServerStats::accept_calls`).

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use armillary::config::{Collocation, ConcurrencyModel, OrbConfig};
use armillary::giop::giop::SyncScope;
use armillary::poa::{
    Cookie, IdAssignmentPolicy, ObjectId, Poa, PoaCurrent, Policy, RequestProcessingPolicy,
    ServantLocator, ServantManager, ServantManagerError, ServantRetentionPolicy, ThreadPolicy,
};
use armillary::runtime::{CdrReader, ReplyBody};
use armillary::{
    minor, CompletionStatus, ObjectRef, Orb, Servant, ServerRequest, SystemException,
    SystemExceptionKind, WaitForCompletion,
};
use armillary_testkit::wait_until;

const PROBE_ID: &str = "IDL:Test/Probe:1.0";

/// The probe's operations as a Rust trait: what a generated
/// `ProbeServant` would be, and what a typed collocated call calls.
trait ProbeOps: Send + Sync {
    fn echo(&self, value: i32) -> Result<i32, SystemException>;
    /// The id of the object POA Current says the upcall is for.
    fn current_id(&self) -> Result<Vec<u8>, SystemException>;
    /// Waits until the gate opens.
    fn hang(&self) -> Result<(), SystemException>;
    fn boom(&self) -> Result<(), SystemException>;
    /// Oneway: counts, after waiting for the gate when it is shut.
    fn note(&self, value: i32);
}

/// How a call carries its arguments.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Typed,
    Marshalled,
}

const MODES: [Mode; 2] = [Mode::Typed, Mode::Marshalled];

#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    fn shut() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
    }
}

/// The probe's state, shared by the test and the servant.
#[derive(Default)]
struct Probe {
    calls: AtomicUsize,
    notes: AtomicUsize,
    /// Upcalls running now, and the most ever at once.
    running: AtomicUsize,
    most_at_once: AtomicUsize,
    threads: Mutex<Vec<ThreadId>>,
    current: Mutex<Option<PoaCurrent>>,
    gate: Mutex<Option<Arc<Gate>>>,
}

impl Probe {
    fn enter(&self) -> impl Drop + '_ {
        struct Leave<'a>(&'a Probe);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.running.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        Leave(self)
    }

    fn gate(&self) -> Option<Arc<Gate>> {
        self.gate.lock().unwrap().clone()
    }
}

impl ProbeOps for Probe {
    fn echo(&self, value: i32) -> Result<i32, SystemException> {
        let _in = self.enter();
        // Gives another caller every chance to overlap.
        std::thread::yield_now();
        Ok(value)
    }

    fn current_id(&self) -> Result<Vec<u8>, SystemException> {
        let _in = self.enter();
        let current = *self.current.lock().unwrap();
        let current = current.ok_or_else(|| SystemException::internal(0, CompletionStatus::No))?;
        current
            .object_id()
            .map(|id| id.as_bytes().to_vec())
            .map_err(|_| SystemException::bad_inv_order(0, CompletionStatus::No))
    }

    fn hang(&self) -> Result<(), SystemException> {
        let _in = self.enter();
        if let Some(gate) = self.gate() {
            gate.pass();
        }
        Ok(())
    }

    fn boom(&self) -> Result<(), SystemException> {
        let _in = self.enter();
        panic!("the probe blows up");
    }

    fn note(&self, _value: i32) {
        let _in = self.enter();
        if let Some(gate) = self.gate() {
            gate.pass();
        }
        self.notes.fetch_add(1, Ordering::SeqCst);
    }
}

/// The probe as a POA serves it: a hand-written skeleton, typed view
/// included (what generated skeletons do).
struct ProbeSkeleton {
    probe: Arc<Probe>,
    view: Arc<dyn ProbeOps>,
}

impl ProbeSkeleton {
    fn serving(probe: &Arc<Probe>) -> Arc<dyn Servant> {
        Arc::new(ProbeSkeleton {
            probe: probe.clone(),
            view: probe.clone(),
        })
    }
}

impl Servant for ProbeSkeleton {
    fn repository_id(&self) -> &'static str {
        PROBE_ID
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == PROBE_ID
    }

    fn local_interface(&self, interface: TypeId) -> Option<&dyn Any> {
        (interface == TypeId::of::<Arc<dyn ProbeOps>>()).then_some(&self.view as &dyn Any)
    }

    fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let marshal =
            |_: armillary::runtime::CdrError| SystemException::marshal(0, CompletionStatus::No);
        match request.operation() {
            "echo" => {
                let v = request.args().read_long().map_err(marshal)?;
                let r = self.probe.echo(v)?;
                request.results().write_long(r);
                Ok(())
            }
            "current_id" => {
                let id = self.probe.current_id()?;
                request
                    .results()
                    .write_octet_seq(&id)
                    .map_err(|_| SystemException::marshal(0, CompletionStatus::Yes))?;
                Ok(())
            }
            "hang" => self.probe.hang(),
            "boom" => self.probe.boom(),
            "note" => {
                let v = request.args().read_long().map_err(marshal)?;
                self.probe.note(v);
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

fn plain_result<T>(
    mut read: impl FnMut(&mut CdrReader<'_>) -> Result<T, armillary::runtime::CdrError>,
) -> impl FnMut(ReplyBody<'_, '_>) -> Result<Result<T, SystemException>, armillary::runtime::CdrError>
{
    move |reply| match reply {
        ReplyBody::Result(r) => Ok(Ok(read(r)?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    }
}

fn echo(obj: &ObjectRef, mode: Mode, v: i32) -> Result<i32, SystemException> {
    let args = move |w: &mut armillary::runtime::CdrWriter| {
        w.write_long(v);
        Ok(())
    };
    match mode {
        Mode::Typed => obj.invoke_typed::<dyn ProbeOps, _, _, _>(
            "echo",
            || move |p: &(dyn ProbeOps + 'static)| p.echo(v),
            &args,
            plain_result(|r| r.read_long()),
        ),
        Mode::Marshalled => obj.invoke("echo", &args, plain_result(|r| r.read_long())),
    }
}

fn current_id(obj: &ObjectRef, mode: Mode) -> Result<Vec<u8>, SystemException> {
    match mode {
        Mode::Typed => obj.invoke_typed::<dyn ProbeOps, _, _, _>(
            "current_id",
            || |p: &(dyn ProbeOps + 'static)| p.current_id(),
            &|_| Ok(()),
            plain_result(|r| r.read_octet_seq().map(<[u8]>::to_vec)),
        ),
        Mode::Marshalled => obj.invoke(
            "current_id",
            &|_| Ok(()),
            plain_result(|r| r.read_octet_seq().map(<[u8]>::to_vec)),
        ),
    }
}

fn unit_op(obj: &ObjectRef, mode: Mode, op: &'static str) -> Result<(), SystemException> {
    match (mode, op) {
        (Mode::Typed, "hang") => obj.invoke_typed::<dyn ProbeOps, _, _, _>(
            "hang",
            || |p: &(dyn ProbeOps + 'static)| p.hang(),
            &|_| Ok(()),
            plain_result(|_| Ok(())),
        ),
        (Mode::Typed, _) => obj.invoke_typed::<dyn ProbeOps, _, _, _>(
            "boom",
            || |p: &(dyn ProbeOps + 'static)| p.boom(),
            &|_| Ok(()),
            plain_result(|_| Ok(())),
        ),
        (Mode::Marshalled, op) => obj.invoke(op, &|_| Ok(()), plain_result(|_| Ok(()))),
    }
}

fn note(obj: &ObjectRef, mode: Mode, scope: SyncScope) -> Result<(), SystemException> {
    let args = |w: &mut armillary::runtime::CdrWriter| {
        w.write_long(1);
        Ok(())
    };
    match (mode, scope) {
        (Mode::Typed, SyncScope::None) => obj.invoke_oneway_typed::<dyn ProbeOps, _>(
            "note",
            || |p: &(dyn ProbeOps + 'static)| p.note(1),
            &args,
        ),
        _ => obj.invoke_oneway_with(scope, "note", &args),
    }
}

/// A served ORB with an active root POA, its probe and a reference.
struct Setup {
    orb: Orb,
    probe: Arc<Probe>,
    obj: ObjectRef,
}

fn orb_with(config: OrbConfig) -> Orb {
    Orb::with_config(config).unwrap()
}

fn setup_with(config: OrbConfig) -> Setup {
    let orb = orb_with(config);
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let probe = Arc::new(Probe::default());
    let current = PoaCurrent::narrow(&orb.resolve_initial_references("POACurrent").unwrap());
    *probe.current.lock().unwrap() = current;
    let id = poa.activate_object(ProbeSkeleton::serving(&probe)).unwrap();
    let obj = poa.id_to_reference(&id).unwrap();
    Setup { orb, probe, obj }
}

fn setup() -> Setup {
    setup_with(OrbConfig::new())
}

fn accepted(orb: &Orb) -> u64 {
    orb.server_stats().map_or(0, |s| s.accept_calls)
}

fn assert_kind(outcome: Result<impl std::fmt::Debug, SystemException>, kind: SystemExceptionKind) {
    match outcome {
        Err(e) => assert_eq!(e.kind(), kind, "{e:?}"),
        Ok(v) => panic!("expected {kind:?}, got {v:?}"),
    }
}

#[test]
fn a_reference_from_every_source_is_collocated_without_iiop() {
    let s = setup();
    let ior = s.orb.object_to_string(&s.obj);
    // From a string, from the ORB that serves it and from another ORB of
    // the process.
    let other = Orb::with_config(OrbConfig::new()).unwrap();
    let from_string = s.orb.string_to_object(&ior).unwrap();
    let from_other = other.string_to_object(&ior).unwrap();
    // (An unbound reference: `tests/collocation_unbound.rs`, alone in its
    // process, as the ORB it binds to is the process's newest.)
    for mode in MODES {
        for obj in [&s.obj, &from_string, &from_other] {
            assert_eq!(echo(obj, mode, 7).unwrap(), 7);
        }
    }
    assert_eq!(accepted(&s.orb), 0, "no connection was made");
    // Over IIOP when the reference or the calling ORB says so.
    assert_eq!(
        echo(
            &from_string.with_collocation(Collocation::None),
            Mode::Typed,
            8
        )
        .unwrap(),
        8
    );
    wait_until("the loopback connection is accepted", || {
        accepted(&s.orb) > 0
    });
    let before = accepted(&s.orb);
    let remote = Orb::with_config(OrbConfig::new().collocation(Collocation::None)).unwrap();
    let obj = remote.string_to_object(&ior).unwrap();
    assert_eq!(echo(&obj, Mode::Marshalled, 9).unwrap(), 9);
    wait_until("a second connection is accepted", || {
        accepted(&s.orb) > before
    });
    remote.shutdown(WaitForCompletion::Yes).unwrap();
    other.shutdown(WaitForCompletion::Yes).unwrap();
    s.orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_shut_down_orb_calls_and_is_called_as_a_remote_one() {
    for mode in MODES {
        let s = setup();
        let client = Orb::with_config(OrbConfig::new()).unwrap();
        let obj = client
            .string_to_object(&s.orb.object_to_string(&s.obj))
            .unwrap();
        assert_eq!(echo(&obj, mode, 1).unwrap(), 1);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
        // As a remote caller finds it: nobody listens any more.
        assert_kind(echo(&obj, mode, 2), SystemExceptionKind::Transient);
        assert_eq!(s.probe.calls.load(Ordering::SeqCst), 1);
        client.shutdown(WaitForCompletion::Yes).unwrap();
    }
    // The calling ORB shut down: its references fail as remote ones do,
    // whatever strategy they name, though the serving ORB still runs.
    for mode in MODES {
        let s = setup();
        let client = Orb::with_config(OrbConfig::new()).unwrap();
        let obj = client
            .string_to_object(&s.orb.object_to_string(&s.obj))
            .unwrap();
        let direct = obj.with_collocation(Collocation::Direct);
        assert_eq!(echo(&obj, mode, 1).unwrap(), 1);
        assert_eq!(echo(&direct, mode, 1).unwrap(), 1);
        client.shutdown(WaitForCompletion::Yes).unwrap();
        for obj in [&obj, &direct] {
            let e = echo(obj, mode, 2).unwrap_err();
            assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder, "{e:?}");
            assert_eq!(e.minor(), minor::ORB_SHUT_DOWN);
        }
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn the_poa_manager_state_decides() {
    for mode in MODES {
        let s = setup();
        let manager = s.orb.root_poa().manager();
        // Holding: the call waits until the manager is activated.
        manager.hold_requests(WaitForCompletion::No).unwrap();
        let obj = s.obj.clone();
        let call = std::thread::spawn(move || echo(&obj, mode, 5));
        wait_until("the call is held", || manager.held_count() == 1);
        assert_eq!(s.probe.calls.load(Ordering::SeqCst), 0);
        manager.activate().unwrap();
        assert_eq!(call.join().unwrap().unwrap(), 5);
        // Discarding: TRANSIENT; inactive: OBJ_ADAPTER.
        manager.discard_requests(WaitForCompletion::No).unwrap();
        assert_kind(echo(&s.obj, mode, 1), SystemExceptionKind::Transient);
        manager
            .deactivate(armillary::poa::Etherealize::No, WaitForCompletion::No)
            .unwrap();
        assert_kind(echo(&s.obj, mode, 1), SystemExceptionKind::ObjAdapter);
        assert_eq!(s.probe.calls.load(Ordering::SeqCst), 1);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn a_held_call_times_out_when_its_timeout_passes() {
    let s = setup_with(OrbConfig::new().call_timeout(Duration::from_millis(100)));
    s.orb
        .root_poa()
        .manager()
        .hold_requests(WaitForCompletion::No)
        .unwrap();
    let e = echo(&s.obj, Mode::Typed, 1).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Timeout);
    assert_eq!(e.completed(), CompletionStatus::No);
    s.orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_deactivated_object_or_destroyed_poa_does_not_exist() {
    for mode in MODES {
        let s = setup();
        let poa = s.orb.root_poa();
        let child = poa.create_poa("child", Some(poa.manager()), &[]).unwrap();
        let id = child
            .activate_object(ProbeSkeleton::serving(&s.probe))
            .unwrap();
        let in_child = child.id_to_reference(&id).unwrap();
        assert_eq!(echo(&in_child, mode, 3).unwrap(), 3);
        child.deactivate_object(&id).unwrap();
        assert_kind(
            echo(&in_child, mode, 3),
            SystemExceptionKind::ObjectNotExist,
        );
        assert!(in_child.non_existent().unwrap());
        child
            .destroy(armillary::poa::Etherealize::No, WaitForCompletion::Yes)
            .unwrap();
        assert_kind(
            echo(&in_child, mode, 3),
            SystemExceptionKind::ObjectNotExist,
        );
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// A typed `hang` call on `obj`, on a thread of its own, once it runs in
/// `probe` (held there until the returned gate opens).
fn hang(
    probe: &Probe,
    obj: &ObjectRef,
) -> (
    Arc<Gate>,
    std::thread::JoinHandle<Result<(), SystemException>>,
) {
    let gate = Gate::shut();
    *probe.gate.lock().unwrap() = Some(gate.clone());
    let hanging = {
        let obj = obj.clone();
        std::thread::spawn(move || unit_op(&obj, Mode::Typed, "hang"))
    };
    wait_until("the call runs", || {
        probe.running.load(Ordering::SeqCst) == 1
    });
    (gate, hanging)
}

/// After its first typed call, a `thru-poa` reference keeps the object
/// it found (its later calls skip the lookup and take no lock): every
/// later call still sees every change. POA Current is set; a wait for
/// completion waits for a kept call; holding, discarding, deactivation
/// (which a running call delays), a new activation under the same id and
/// the POA's destruction all decide; and the reference does not keep a
/// deactivated servant alive.
#[test]
fn a_reference_that_keeps_its_object_still_sees_every_change() {
    let s = setup();
    let poa = s.orb.root_poa();
    let manager = poa.manager();
    let child = poa
        .create_poa(
            "kept",
            Some(manager.clone()),
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .unwrap();
    let current = *s.probe.current.lock().unwrap();
    let serving = |probe: &Arc<Probe>| {
        *probe.current.lock().unwrap() = current;
        child
            .activate_object_with_id("k", ProbeSkeleton::serving(probe))
            .unwrap();
    };
    let probe = Arc::new(Probe::default());
    serving(&probe);
    let obj = child.id_to_reference("k").unwrap();
    for v in 0..3 {
        assert_eq!(echo(&obj, Mode::Typed, v).unwrap(), v);
    }
    assert_eq!(current_id(&obj, Mode::Typed).unwrap(), b"k");
    assert_eq!(current_id(&obj, Mode::Typed).unwrap(), b"k");
    assert!(current.unwrap().object_id().is_err(), "restored after");

    // Waiting for completion waits for a kept call that runs.
    let (gate, hanging) = hang(&probe, &obj);
    let holding = {
        let manager = manager.clone();
        std::thread::spawn(move || manager.hold_requests(WaitForCompletion::Yes))
    };
    wait_until("the manager holds", || {
        manager.state() == armillary::poa::PoaManagerState::Holding
    });
    assert!(!holding.is_finished(), "the wait ended before the call");
    gate.open();
    hanging.join().unwrap().unwrap();
    holding.join().unwrap().unwrap();
    // Held, then let through; discarded.
    let held = {
        let obj = obj.clone();
        std::thread::spawn(move || echo(&obj, Mode::Typed, 7))
    };
    wait_until("the call is held", || manager.held_count() == 1);
    manager.activate().unwrap();
    assert_eq!(held.join().unwrap().unwrap(), 7);
    manager.discard_requests(WaitForCompletion::No).unwrap();
    assert_kind(echo(&obj, Mode::Typed, 1), SystemExceptionKind::Transient);
    manager.activate().unwrap();

    // Deactivated while a call runs: refused from then on, the servant
    // released when the call ends.
    let (gate, hanging) = hang(&probe, &obj);
    child.deactivate_object("k").unwrap();
    assert_kind(
        echo(&obj, Mode::Typed, 1),
        SystemExceptionKind::ObjectNotExist,
    );
    assert!(Arc::strong_count(&probe) > 1, "the running call has it");
    gate.open();
    hanging.join().unwrap().unwrap();
    assert_eq!(Arc::strong_count(&probe), 1, "released, though kept");

    // Activated again under the same id, twice: the new servant answers.
    for _ in 0..2 {
        let again = Arc::new(Probe::default());
        serving(&again);
        for v in 0..3 {
            assert_eq!(echo(&obj, Mode::Typed, v).unwrap(), v);
        }
        assert_eq!(again.calls.load(Ordering::SeqCst), 3);
        child.deactivate_object("k").unwrap();
        assert_eq!(Arc::strong_count(&again), 1);
    }
    serving(&Arc::new(Probe::default()));
    assert_eq!(echo(&obj, Mode::Typed, 4).unwrap(), 4);
    child
        .destroy(armillary::poa::Etherealize::No, WaitForCompletion::Yes)
        .unwrap();
    assert_kind(
        echo(&obj, Mode::Typed, 1),
        SystemExceptionKind::ObjectNotExist,
    );
    assert_eq!(probe.calls.load(Ordering::SeqCst), 8);
    assert_eq!(accepted(&s.orb), 0);
    s.orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A servant locator that serves every id with the probe, counting its
/// calls, and forwards the id `forward` to `to`.
struct Locator {
    probe: Arc<Probe>,
    pre: AtomicUsize,
    post: AtomicUsize,
    forward_to: Mutex<Option<ObjectRef>>,
}

impl ServantLocator for Locator {
    fn preinvoke(
        &self,
        object_id: &ObjectId,
        _poa: &Poa,
        _operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError> {
        self.pre.fetch_add(1, Ordering::SeqCst);
        if object_id.as_bytes() == b"forward" {
            if let Some(to) = self.forward_to.lock().unwrap().clone() {
                return Err(ServantManagerError::Forward(to));
            }
        }
        Ok((ProbeSkeleton::serving(&self.probe), Box::new(())))
    }

    fn postinvoke(
        &self,
        _object_id: &ObjectId,
        _poa: &Poa,
        _operation: &str,
        _cookie: Cookie,
        _servant: Arc<dyn Servant>,
    ) {
        self.post.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn servant_managers_are_consulted_and_their_forwards_followed() {
    for mode in MODES {
        let s = setup();
        let located = s
            .orb
            .root_poa()
            .create_poa(
                "located",
                Some(s.orb.root_poa().manager()),
                &[
                    Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
                    Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
                ],
            )
            .unwrap();
        let locator = Arc::new(Locator {
            probe: s.probe.clone(),
            pre: AtomicUsize::new(0),
            post: AtomicUsize::new(0),
            forward_to: Mutex::new(Some(s.obj.clone())),
        });
        located
            .set_servant_manager(ServantManager::Locator(locator.clone()))
            .unwrap();
        let obj = located
            .create_reference_with_id(ObjectId::from(&b"x"[..]), PROBE_ID)
            .unwrap();
        assert_eq!(echo(&obj, mode, 4).unwrap(), 4);
        assert_eq!(echo(&obj, mode, 4).unwrap(), 4);
        assert_eq!(locator.pre.load(Ordering::SeqCst), 2);
        assert_eq!(locator.post.load(Ordering::SeqCst), 2);
        // A forward: the call goes on to the object forwarded to.
        let forwarded = located
            .create_reference_with_id(ObjectId::from(&b"forward"[..]), PROBE_ID)
            .unwrap();
        assert_eq!(
            current_id(&forwarded, mode).unwrap(),
            s.orb.root_poa().reference_to_id(&s.obj).unwrap().as_bytes()
        );
        assert_eq!(accepted(&s.orb), 0);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn poa_current_is_set_in_the_upcall_and_restored_after_it() {
    for mode in MODES {
        let s = setup();
        let id = s.orb.root_poa().reference_to_id(&s.obj).unwrap();
        assert_eq!(current_id(&s.obj, mode).unwrap(), id.as_bytes());
        let current = (*s.probe.current.lock().unwrap()).unwrap();
        assert!(current.object_id().is_err(), "no upcall on this thread now");
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn a_single_thread_poa_runs_one_collocated_upcall_at_a_time() {
    for mode in MODES {
        let s = setup();
        let single = s
            .orb
            .root_poa()
            .create_poa(
                "single",
                Some(s.orb.root_poa().manager()),
                &[Policy::Thread(ThreadPolicy::SingleThread)],
            )
            .unwrap();
        let probe = Arc::new(Probe::default());
        let id = single
            .activate_object(ProbeSkeleton::serving(&probe))
            .unwrap();
        let obj = single.id_to_reference(&id).unwrap();
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let obj = obj.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        assert_eq!(echo(&obj, mode, i).unwrap(), i);
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        assert_eq!(probe.calls.load(Ordering::SeqCst), 800);
        assert_eq!(probe.most_at_once.load(Ordering::SeqCst), 1);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn a_poa_whose_model_has_its_own_threads_runs_the_call_there() {
    for mode in MODES {
        let s = setup();
        let own = s
            .orb
            .root_poa()
            .create_poa(
                "per-object",
                Some(s.orb.root_poa().manager()),
                &[Policy::Concurrency(ConcurrencyModel::ThreadPerObject)],
            )
            .unwrap();
        let probe = Arc::new(Probe::default());
        let id = own.activate_object(ProbeSkeleton::serving(&probe)).unwrap();
        let obj = own.id_to_reference(&id).unwrap();
        assert_eq!(echo(&obj, mode, 6).unwrap(), 6);
        let threads = probe.threads.lock().unwrap().clone();
        assert_eq!(threads.len(), 1);
        assert_ne!(threads[0], std::thread::current().id());
        // The root POA has no model of its own: the caller's thread.
        assert_eq!(echo(&s.obj, mode, 6).unwrap(), 6);
        let threads = s.probe.threads.lock().unwrap().clone();
        assert_eq!(threads, [std::thread::current().id()]);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn the_call_timeout_bounds_a_collocated_call() {
    for mode in MODES {
        let s = setup_with(OrbConfig::new().call_timeout(Duration::from_millis(100)));
        let gate = Gate::shut();
        *s.probe.gate.lock().unwrap() = Some(gate.clone());
        let e = unit_op(&s.obj, mode, "hang").unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::Timeout, "{e:?}");
        assert_eq!(e.minor(), minor::CALL_TIMEOUT);
        assert_eq!(e.completed(), CompletionStatus::Maybe);
        gate.open();
        // A reference's own timeout overrides; calls go on.
        let patient = s.obj.with_call_timeout(Duration::from_secs(60));
        assert_eq!(echo(&patient, mode, 2).unwrap(), 2);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn a_panicking_servant_gives_unknown_and_the_orb_goes_on() {
    for mode in MODES {
        let s = setup();
        let e = unit_op(&s.obj, mode, "boom").unwrap_err();
        assert_eq!(e.kind(), SystemExceptionKind::Unknown, "{e:?}");
        assert_eq!(e.minor(), minor::SERVANT_PANICKED);
        assert_eq!(echo(&s.obj, mode, 1).unwrap(), 1);
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// `direct` gives a typed call no panic guard: a plain call's panic
/// reaches its caller; an untyped call still gets UNKNOWN.
#[test]
fn a_direct_call_s_panic_reaches_its_caller() {
    let s = setup();
    let obj = s.obj.with_collocation(Collocation::Direct);
    assert_eq!(echo(&obj, Mode::Typed, 1).unwrap(), 1);
    let typed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        unit_op(&obj, Mode::Typed, "boom")
    }));
    assert!(typed.is_err(), "the panic went through");
    let e = unit_op(&obj, Mode::Marshalled, "boom").unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Unknown, "{e:?}");
    assert_eq!(echo(&obj, Mode::Typed, 2).unwrap(), 2);
    s.orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn oneways_keep_their_sync_scope() {
    for mode in MODES {
        let s = setup();
        // SYNC_NONE and SYNC_WITH_SERVER return before the upcall is done
        // (it waits for the gate, which only this thread opens).
        for (scope, ran) in [(SyncScope::None, 1), (SyncScope::WithServer, 2)] {
            let gate = Gate::shut();
            *s.probe.gate.lock().unwrap() = Some(gate.clone());
            note(&s.obj, mode, scope).unwrap();
            assert_eq!(s.probe.notes.load(Ordering::SeqCst), ran - 1);
            gate.open();
            wait_until("the oneway ran", || {
                s.probe.notes.load(Ordering::SeqCst) == ran
            });
        }
        *s.probe.gate.lock().unwrap() = None;
        // A caller's later calls come after its oneways, as on a
        // connection: the two-way finds them run.
        for _ in 0..10 {
            note(&s.obj, mode, SyncScope::None).unwrap();
        }
        echo(&s.obj, mode, 0).unwrap();
        assert_eq!(s.probe.notes.load(Ordering::SeqCst), 12);
        // SYNC_WITH_TARGET returns once the upcall is done.
        note(&s.obj, mode, SyncScope::WithTarget).unwrap();
        assert_eq!(s.probe.notes.load(Ordering::SeqCst), 13);
        // SYNC_WITH_SERVER reports what the POA says; SYNC_NONE does not.
        let poa = s.orb.root_poa();
        poa.deactivate_object(poa.reference_to_id(&s.obj).unwrap())
            .unwrap();
        assert_kind(
            note(&s.obj, mode, SyncScope::WithServer),
            SystemExceptionKind::ObjectNotExist,
        );
        note(&s.obj, mode, SyncScope::None).unwrap();
        s.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn direct_calls_the_servant_with_none_of_the_poa_checks() {
    let s = setup();
    let obj = s.obj.with_collocation(Collocation::Direct);
    // The first call goes through the POA and keeps the servant.
    assert_eq!(echo(&obj, Mode::Typed, 1).unwrap(), 1);
    let manager = s.orb.root_poa().manager();
    manager.discard_requests(WaitForCompletion::No).unwrap();
    for mode in MODES {
        assert_eq!(echo(&obj, mode, 2).unwrap(), 2);
    }
    // POA Current is not set.
    let e = current_id(&obj, Mode::Typed).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
    // thru-poa still sees the discarding manager.
    assert_kind(
        echo(
            &s.obj.with_collocation(Collocation::ThruPoa),
            Mode::Typed,
            3,
        ),
        SystemExceptionKind::Transient,
    );
    manager.activate().unwrap();
    s.orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn asynchronous_calls_are_collocated_too() {
    let s = setup();
    // A future.
    let future = s.obj.send_future::<i32, SystemException>(
        "echo",
        |w| {
            w.write_long(11);
            Ok(())
        },
        plain_result(|r| r.read_long()),
    );
    assert_eq!(futures_lite_block_on(future).unwrap(), 11);
    // A poller.
    let mut poller = s.obj.send_poller::<i32, SystemException>(
        "echo",
        |w| {
            w.write_long(12);
            Ok(())
        },
        plain_result(|r| r.read_long()),
    );
    assert!(poller.wait(armillary_testkit::WAIT_LIMIT));
    assert_eq!(poller.take().unwrap(), 12);
    // A callback.
    let (tx, rx) = std::sync::mpsc::channel();
    s.obj
        .send_callback::<i32, SystemException>(
            "echo",
            |w| {
                w.write_long(13);
                Ok(())
            },
            |r| r.read_long(),
            move |outcome| {
                let _ = tx.send(outcome.map_err(|h| h.raise()));
            },
        )
        .unwrap();
    let got = rx.recv_timeout(armillary_testkit::WAIT_LIMIT).unwrap();
    assert_eq!(got.unwrap(), 13);
    assert_eq!(accepted(&s.orb), 0);
    s.orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Polls a future to its end on this thread (the ORB needs no executor).
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Thread(std::thread::Thread);
    impl Wake for Thread {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Thread(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
