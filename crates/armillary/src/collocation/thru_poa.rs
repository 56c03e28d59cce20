//! `thru-poa`: a collocated call goes through its target's POA, on the
//! calling thread, and keeps every semantic a remote call has (the
//! paper's list, each kept here or in what this calls):
//!
//! - the ORB is not shut down (a shut-down ORB's objects are not found
//!   collocated: the call goes the remote way, and fails as it would);
//! - the POA still exists, its manager's state decides: holding queues
//!   the call (the caller waits, no longer than its call timeout),
//!   discarding raises TRANSIENT, inactive raises OBJ_ADAPTER;
//! - the servant is active (OBJECT_NOT_EXIST after deactivation), found
//!   through servant managers and default servants as for a remote
//!   request, a servant manager's ForwardRequest followed;
//! - SINGLE_THREAD_MODEL POAs run one upcall at a time, POA Current is
//!   set and restored, a servant's panic is UNKNOWN (`Upcall::run_with`);
//! - a POA whose `Policy::Concurrency` hands requests to threads of its
//!   own (worker pool, thread per request, thread per object, locality)
//!   runs the call there while the caller waits;
//! - a call with a call timeout runs on a collocation thread
//!   (`handoff`) and the caller waits no longer than the deadline
//!   (TIMEOUT, COMPLETED_MAYBE);
//! - oneways keep their sync scope: `None` (and with transport) return at
//!   once and run on the ORB's reactor, the caller's later calls after
//!   them, as on a connection (`oneway`); `WithServer` returns once the
//!   POA took the request, `WithTarget` once the upcall is done;
//! - a servant that offers no typed interface (DSI, asynchronous) is
//!   called with encoded arguments (`in_process`), an asynchronous one
//!   answering through its response handler.
//!
//! A typed two-way call that finds its servant in the active object map
//! leaves the object with the reference (`poa::KeptTarget`), whose later
//! calls of that shape `LocalTarget::call_kept` makes without the lookup,
//! checking on each what could have changed; those it cannot make come
//! here.

use std::any::TypeId;
use std::sync::Arc;
use std::time::Instant;

use armillary_giop::giop::SyncScope;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use parking_lot::{Condvar, Mutex};

use super::in_process::{self, Finished, LocalInFlight, LocalReply};
use super::{handoff, oneway, CollocationStrategy};
use crate::config::ConcurrencyModel;
use crate::interceptors::{ServerInterception, ServerOutcome};
use crate::local_server::{CallContexts, DetachedCall, LocalAttempt, LocalBody, LocalTarget};
use crate::object::{Invoker, OutgoingRequest};
use crate::orb::OrbCore;
use crate::owed_reply::OwedReply;
use crate::pending::PendingReply;
use crate::poa::{Admission, KeptTarget, Resolution, Upcall};
use crate::servant::contain;
use crate::thread_role::{self, PostedOneway};
use crate::transport::server::concurrency::ResolvedRequest;
use crate::transport::server::ObjectAdapter;

/// Through the POA.
pub(crate) struct ThruPoa;

impl CollocationStrategy for ThruPoa {
    fn call(
        &self,
        core: &Arc<OrbCore>,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        body: LocalBody<'_>,
        contexts: Option<&mut CallContexts>,
    ) -> LocalAttempt {
        // Calls that `LocalTarget::call_kept` could make come here the
        // first time, or when it could not: the object found in the
        // active object map is kept for the next.
        let keeps = keeps(core, request, deadline, &body) && target.kept().is_vacant();
        call(
            core,
            target.key(),
            request,
            deadline,
            body,
            contexts,
            |upcall| {
                if keeps && !hands_off(upcall.poa().policies().concurrency) {
                    if let Some(kept) = KeptTarget::of(upcall) {
                        target.kept().keep(kept);
                    }
                }
            },
        )
    }
}

/// Whether a call of this shape may go to the object its reference
/// keeps (`LocalTarget::call_kept`): a typed two-way call, with no call
/// timeout, to an ORB with no server interceptors (those go through the
/// POA every time).
fn keeps(
    core: &OrbCore,
    request: &OutgoingRequest<'_>,
    deadline: Option<Instant>,
    body: &LocalBody<'_>,
) -> bool {
    matches!(body, LocalBody::Typed(_))
        && request.response_expected
        && deadline.is_none()
        && core.interceptors.server.is_empty()
}

/// The number collocated requests carry as their connection (the
/// concurrency models that group requests by connection see them as one).
const COLLOCATED_CONNECTION: u64 = u64::MAX;

/// One call through the POA (see the module docs); `found` sees the
/// upcall before it runs (the `direct` strategy keeps its servant).
pub(crate) fn call(
    core: &Arc<OrbCore>,
    key: &[u8],
    request: &OutgoingRequest<'_>,
    deadline: Option<Instant>,
    body: LocalBody<'_>,
    contexts: Option<&mut CallContexts>,
    found: impl FnOnce(&Upcall),
) -> LocalAttempt {
    if !request.response_expected && request.sync_scope == SyncScope::None && oneway::may_post(core)
    {
        let interception = intercept(core, request, contexts.as_deref()).and_then(|mut started| {
            started.receive_request_service_contexts().ok()?;
            Some(started)
        });
        return post_oneway(core, key, request, body, interception);
    }
    // After the oneways this thread posted, as on a connection.
    thread_role::wait_for_posted_oneways();
    let resolved = resolve(core, key, request.operation, deadline);
    // The server interceptors' starting point, once the request's fate
    // is known; a request the POA answers at once is answered through
    // them too.
    let mut interception = intercept(core, request, contexts.as_deref());
    if let Some(started) = interception.as_mut() {
        let early = match (started.receive_request_service_contexts(), &resolved) {
            (Err(outcome), _) => Some(outcome),
            (Ok(()), Err(LocalAttempt::Forward(to))) => Some(ServerOutcome::Forward(to.clone())),
            (Ok(()), Err(LocalAttempt::Failed(e))) => Some(ServerOutcome::System(e.clone())),
            _ => None,
        };
        if let Some(outcome) = early {
            return in_process::answer_early(
                core,
                interception,
                outcome,
                request.response_expected,
                contexts,
            );
        }
    }
    let upcall = match resolved {
        Ok(upcall) => upcall,
        Err(attempt) => return attempt,
    };
    found(&upcall);
    if !request.response_expected && request.sync_scope == SyncScope::WithServer {
        // The POA has it: acknowledged; the upcall runs later, on the
        // ORB's reactor (or now, by a thread that serves).
        if !oneway::may_post(core) {
            let _ = run_here(core, upcall, request, deadline, body, (interception, None));
            return LocalAttempt::Done(None);
        }
        match Work::prepare(&upcall, request, body, interception) {
            Ok(work) => post(core, upcall, request.operation, work),
            Err(e) => return LocalAttempt::Failed(e),
        }
        return LocalAttempt::Done(None);
    }
    if runs_here(&upcall, deadline) {
        run_here(
            core,
            upcall,
            request,
            deadline,
            body,
            (interception, contexts),
        )
    } else {
        run_elsewhere(
            core,
            upcall,
            request,
            body,
            deadline,
            (interception, contexts),
        )
    }
}

/// The server interceptors' interception of `request` on `core`, if it
/// has any, with the request's service contexts.
fn intercept(
    core: &Arc<OrbCore>,
    request: &OutgoingRequest<'_>,
    contexts: Option<&CallContexts>,
) -> Option<Box<ServerInterception>> {
    if core.interceptors.server.is_empty() {
        return None;
    }
    ServerInterception::start(
        &core.interceptors,
        core.interceptors.next_request_id(),
        request.operation,
        request.response_expected,
        request.sync_scope,
        contexts.map(|c| c.request.clone()).unwrap_or_default(),
    )
}

/// A request's server interception and where its reply's service
/// contexts go.
type Intercepted<'a> = (
    Option<Box<ServerInterception>>,
    Option<&'a mut CallContexts>,
);

/// Sends the two-way `request` to be collected later (DII deferred,
/// AMI): resolved now, its upcall run on a collocation thread, its reply
/// in the returned pending reply. `None` (sent over IIOP instead) when
/// its POA manager holds or a servant manager forwards it: the remote
/// path parks and follows those without blocking the caller.
pub(crate) fn send(
    core: &Arc<OrbCore>,
    key: &[u8],
    request: &OutgoingRequest<'_>,
    deadline: Option<Instant>,
    caller: &Arc<dyn Invoker>,
) -> Option<PendingReply> {
    thread_role::wait_for_posted_oneways();
    let upcall = match core.resolve(key, request.operation) {
        Resolution::Upcall(upcall) => upcall,
        Resolution::Held(_) | Resolution::Forward(_) => return None,
        Resolution::Failed(e) => return Some(PendingReply::ready(Err(e))),
        Resolution::NotAPoaKey => return Some(PendingReply::ready(Err(unregistered()))),
    };
    let args = match in_process::encode_args(request) {
        Ok(args) => args,
        Err(e) => return Some(PendingReply::ready(Err(e))),
    };
    let reply = Arc::new(LocalReply::default());
    let job = {
        let (core, reply) = (core.clone(), reply.clone());
        let operation: Arc<str> = Arc::from(request.operation);
        move || in_process::run_marshalled(&core, upcall, &operation, &args, true, &reply, None)
    };
    handoff::run(Box::new(job));
    Some(LocalInFlight::pending(
        core.clone(),
        reply,
        deadline,
        caller.clone(),
    ))
}

/// OBJECT_NOT_EXIST for a key that names no object of the ORB, as the
/// server answers it.
fn unregistered() -> SystemException {
    SystemException::object_not_exist(minor::UNREGISTERED_OBJECT, CompletionStatus::No)
}

/// The upcall for `operation` on `key`: waits while the POA manager
/// holds (no longer than `deadline`), or what the call comes to instead.
fn resolve(
    core: &Arc<OrbCore>,
    key: &[u8],
    operation: &str,
    deadline: Option<Instant>,
) -> Result<Upcall, LocalAttempt> {
    loop {
        match core.resolve(key, operation) {
            Resolution::Upcall(upcall) => return Ok(upcall),
            Resolution::Forward(to) => return Err(LocalAttempt::Forward(to)),
            Resolution::Failed(e) => return Err(LocalAttempt::Failed(e)),
            Resolution::NotAPoaKey => return Err(LocalAttempt::Failed(unregistered())),
            Resolution::Held(manager) => match wait_held(&manager, deadline) {
                Some(Admission::Run) => continue,
                Some(Admission::Discard) => {
                    return Err(LocalAttempt::Failed(SystemException::transient(
                        1,
                        CompletionStatus::No,
                    )))
                }
                Some(Admission::Reject) => {
                    return Err(LocalAttempt::Failed(SystemException::obj_adapter(
                        0,
                        CompletionStatus::No,
                    )))
                }
                None => {
                    return Err(LocalAttempt::Failed(SystemException::timeout(
                        minor::CALL_TIMEOUT,
                        CompletionStatus::No,
                    )))
                }
            },
        }
    }
}

/// Parks the call with a holding POA manager and waits for its decision
/// (`None`: `deadline` passed first; the decision, when it comes, goes
/// nowhere).
fn wait_held(manager: &crate::poa::PoaManager, deadline: Option<Instant>) -> Option<Admission> {
    let decision = Arc::new((Mutex::new(None::<Admission>), Condvar::new()));
    let told = decision.clone();
    manager.hold(Box::new(move |admission| {
        *told.0.lock() = Some(admission);
        told.1.notify_all();
    }));
    let (slot, changed) = &*decision;
    let mut slot = slot.lock();
    loop {
        if let Some(admission) = *slot {
            return Some(admission);
        }
        match deadline {
            Some(deadline) => {
                if changed.wait_until(&mut slot, deadline).timed_out() && slot.is_none() {
                    return None;
                }
            }
            None => changed.wait(&mut slot),
        }
    }
}

/// Whether the upcall runs on the calling thread: unless the call is
/// bounded by a deadline or its POA's concurrency model runs requests on
/// threads of its own, and always when this thread is in an upcall of
/// its SINGLE_THREAD_MODEL POA already (another thread would wait for
/// this one).
fn runs_here(upcall: &Upcall, deadline: Option<Instant>) -> bool {
    let poa = upcall.poa();
    if poa.single_thread().is_some_and(|s| s.owned_here()) {
        return true;
    }
    deadline.is_none() && !hands_off(poa.policies().concurrency)
}

/// Whether a POA's concurrency model runs its requests on threads of its
/// own (rather than on the thread that read them, which for a collocated
/// call is the caller's).
fn hands_off(model: Option<ConcurrencyModel>) -> bool {
    match model {
        None
        | Some(ConcurrencyModel::SingleThreadedReactive)
        | Some(ConcurrencyModel::ThreadPool(_))
        | Some(ConcurrencyModel::ThreadPerConnection)
        | Some(ConcurrencyModel::ThreadPerConnectionUpTo(_))
        | Some(ConcurrencyModel::ApplicationThreads) => false,
        Some(ConcurrencyModel::ThreadPerRequest(_))
        | Some(ConcurrencyModel::WorkerPool { .. })
        | Some(ConcurrencyModel::ThreadPerObject)
        | Some(ConcurrencyModel::Locality(_)) => true,
    }
}

/// Runs the upcall on the calling thread.
fn run_here(
    core: &Arc<OrbCore>,
    upcall: Upcall,
    request: &OutgoingRequest<'_>,
    deadline: Option<Instant>,
    body: LocalBody<'_>,
    (interception, contexts): Intercepted<'_>,
) -> LocalAttempt {
    if let LocalBody::Typed(call) = body {
        let interface = call.interface();
        if upcall.servant().local_interface(interface).is_some() {
            return in_process::typed_ran(upcall.run_with(request.operation, |servant| {
                contain(CompletionStatus::Maybe, || {
                    if let Some(view) = servant.local_interface(interface) {
                        call.run(view);
                    }
                    Ok::<(), SystemException>(())
                })
            }));
        }
    }
    in_process::call_here(
        core,
        request,
        deadline,
        contexts,
        |operation, args, reply| {
            in_process::run_marshalled(
                core,
                upcall,
                operation,
                args,
                request.response_expected,
                reply,
                interception,
            )
        },
    )
}

/// What a collocated upcall run on another thread carries: the typed
/// call, or the encoded arguments.
enum Work {
    Typed(TypeId, DetachedCall),
    /// The encoded arguments, and the server interceptors' interception.
    Marshalled(Vec<u8>, Option<Box<ServerInterception>>),
}

impl Work {
    /// The call as work for another thread: typed when the servant offers
    /// the interface the call needs, else encoded.
    fn prepare(
        upcall: &Upcall,
        request: &OutgoingRequest<'_>,
        body: LocalBody<'_>,
        interception: Option<Box<ServerInterception>>,
    ) -> Result<Work, SystemException> {
        if let LocalBody::Typed(call) = body {
            let interface = call.interface();
            if upcall.servant().local_interface(interface).is_some() {
                if let Some(job) = call.detach() {
                    return Ok(Work::Typed(interface, job));
                }
            }
        }
        in_process::encode_args(request).map(|args| Work::Marshalled(args, interception))
    }

    /// Runs `upcall` with this work, on the calling thread; its outcome
    /// goes to `reply`.
    fn run(
        self,
        core: &Arc<OrbCore>,
        upcall: Upcall,
        operation: &Arc<str>,
        response_expected: bool,
        reply: &Arc<LocalReply>,
    ) {
        match self {
            Work::Typed(interface, job) => {
                let _scope = core.decoding_scope();
                let ran = upcall.run_with(operation, |servant| {
                    contain(CompletionStatus::Maybe, || {
                        match servant.local_interface(interface) {
                            Some(view) => {
                                job(view);
                                Ok(())
                            }
                            None => Err(SystemException::internal(0, CompletionStatus::No)),
                        }
                    })
                });
                reply.finish(match ran {
                    Ok(()) => Finished::Ran,
                    Err(e) => Finished::Failed(e),
                });
            }
            Work::Marshalled(args, interception) => in_process::run_marshalled(
                core,
                upcall,
                operation,
                &args,
                response_expected,
                reply,
                interception,
            ),
        }
    }
}

/// Runs the upcall on another thread (its POA's model's, or a
/// collocation thread) and waits for it, no longer than `deadline`.
fn run_elsewhere(
    core: &Arc<OrbCore>,
    upcall: Upcall,
    request: &OutgoingRequest<'_>,
    body: LocalBody<'_>,
    deadline: Option<Instant>,
    (interception, contexts): Intercepted<'_>,
) -> LocalAttempt {
    let work = match Work::prepare(&upcall, request, body, interception) {
        Ok(work) => work,
        Err(e) => return LocalAttempt::Failed(e),
    };
    let reply = Arc::new(LocalReply::default());
    let operation: Arc<str> = Arc::from(request.operation);
    let expected = request.response_expected;
    let model = upcall.poa().policies().concurrency;
    let server = core.running_server();
    match (hands_off(model), server) {
        (true, Some(server)) => {
            // The request the model runs answers `reply` if it cannot run
            // it (busy) or drops it unrun.
            let owed = OwedReply::new(reply.clone(), in_process::VERSION, in_process::ORDER, 0);
            let run = {
                let (core, reply, operation) = (core.clone(), reply.clone(), operation.clone());
                move |upcall: Upcall, owed: OwedReply| {
                    work.run(&core, upcall, &operation, expected, &reply);
                    // Answered through `reply` already (a later answer is
                    // dropped).
                    drop(owed);
                }
            };
            let resolved = ResolvedRequest::new(upcall, owed, COLLOCATED_CONNECTION, Box::new(run));
            server.schedule(resolved);
        }
        _ => {
            let (core2, reply2) = (core.clone(), reply.clone());
            handoff::run(Box::new(move || {
                work.run(&core2, upcall, &operation, expected, &reply2)
            }));
        }
    }
    in_process::conclude(core, reply.wait(deadline), contexts)
}

/// Posts a oneway that returns at once (`SyncScope::None`) to the ORB's
/// reactor, which resolves it and hands it to the ORB's concurrency model
/// there, as it does a request it reads. A failure goes nowhere, as a
/// remote oneway's does.
fn post_oneway(
    core: &Arc<OrbCore>,
    key: &[u8],
    request: &OutgoingRequest<'_>,
    body: LocalBody<'_>,
    interception: Option<Box<ServerInterception>>,
) -> LocalAttempt {
    let Some(server) = core.running_server() else {
        return LocalAttempt::NotHere;
    };
    // Resolved where it runs (a holding POA manager parks it there), so
    // the servant is not known yet: both forms go, the typed one used
    // when the servant offers it.
    let typed = match body {
        LocalBody::Typed(call) => call.detach().map(|job| (call.interface(), job)),
        LocalBody::Marshalled => None,
    };
    let args = match in_process::encode_args(request) {
        Ok(args) => args,
        Err(_) => return LocalAttempt::Done(None),
    };
    let core = core.clone();
    let key = key.to_vec();
    let operation: Arc<str> = Arc::from(request.operation);
    let posted = thread_role::posting_oneway();
    server.reactor().post(Box::new(move || {
        let run = {
            let (core, operation) = (core.clone(), operation.clone());
            move |upcall: Upcall| {
                let work = oneway_work(&upcall, typed, args, interception);
                schedule(&core, upcall, &operation, work, posted);
            }
        };
        match core.resolve(&key, &operation) {
            Resolution::Upcall(upcall) => run(upcall),
            Resolution::Held(manager) => {
                manager.hold(Box::new(move |admission| {
                    if admission != Admission::Run {
                        return;
                    }
                    if let Resolution::Upcall(upcall) = core.resolve(&key, &operation) {
                        run(upcall);
                    }
                }));
            }
            _ => {}
        }
    }));
    LocalAttempt::Done(None)
}

/// The work of a posted oneway, once its servant is known.
fn oneway_work(
    upcall: &Upcall,
    typed: Option<(TypeId, DetachedCall)>,
    args: Vec<u8>,
    interception: Option<Box<ServerInterception>>,
) -> Work {
    match typed {
        Some((interface, job)) if upcall.servant().local_interface(interface).is_some() => {
            Work::Typed(interface, job)
        }
        _ => Work::Marshalled(args, interception),
    }
}

/// Posts the upcall of an acknowledged oneway (`SyncScope::WithServer`)
/// to the ORB's reactor, which hands it to the concurrency model.
fn post(core: &Arc<OrbCore>, upcall: Upcall, operation: &str, work: Work) {
    let Some(server) = core.running_server() else {
        return;
    };
    let core = core.clone();
    let operation: Arc<str> = Arc::from(operation);
    let posted = thread_role::posting_oneway();
    server.reactor().post(Box::new(move || {
        schedule(&core, upcall, &operation, work, posted)
    }));
}

/// Hands a oneway's upcall to the ORB's concurrency model (and its POA's),
/// as a request read off a connection is; it counts as posted by its
/// caller until it has run.
fn schedule(
    core: &Arc<OrbCore>,
    upcall: Upcall,
    operation: &Arc<str>,
    work: Work,
    posted: PostedOneway,
) {
    let Some(server) = core.running_server() else {
        return;
    };
    let run = {
        let (core, operation) = (core.clone(), operation.clone());
        move |upcall: Upcall, _nothing_owed: OwedReply| {
            work.run(&core, upcall, &operation, false, &Arc::default());
            drop(posted);
        }
    };
    server.schedule(ResolvedRequest::new(
        upcall,
        OwedReply::nothing(),
        COLLOCATED_CONNECTION,
        Box::new(run),
    ));
}
