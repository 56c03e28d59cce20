//! Collocated calls whose arguments are encoded (untyped calls, DII, DSI
//! and asynchronous servants): the request's arguments are written into
//! a buffer, the servant's skeleton reads them from it as from a request
//! read off a connection, and its reply, a whole GIOP reply message,
//! comes back through an in-process [`LocalReply`] (a [`ReplySink`]), now
//! or later (an asynchronous servant answers when it likes, from any
//! thread). [`LocalReply`] is also where a call run on another thread
//! leaves its outcome, typed or not, and, for a request sent to be
//! collected later (DII deferred, AMI), the [`InFlight`] its
//! [`PendingReply`] asks ([`LocalInFlight`]).

use std::sync::Arc;
use std::time::Instant;

use armillary_giop::cdr::{CdrReader, CdrWriter, CodeSets, SplicedBytes};
use armillary_giop::giop::{Frame, MessageBuilder, ReplyStatus};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, GiopVersion};
use parking_lot::{Condvar, Mutex};

use crate::interceptors::{ServerInterception, ServerOutcome};
use crate::invocation::Attempt;
use crate::local_server::{CallContexts, LocalAttempt};
use crate::object::{Invoker, ObjectRef, OutgoingRequest, ReplyMessage};
use crate::orb::OrbCore;
use crate::owed_reply::{OwedReply, ReplySink};
use crate::pending::{InFlight, PendingReply, WaitFor};
use crate::poa::{ObjectId, Upcall};
use crate::servant::{ServerRequest, Tasks};
use crate::task_queue::TaskQueue;
use crate::transport::reply::callback::Notify;
use crate::transport::server::ObjectAdapter;

/// In-process messages are GIOP 1.2, in the machine's byte order, with
/// the native code sets: nothing is converted.
pub(crate) const VERSION: GiopVersion = GiopVersion::V1_2;
pub(crate) const ORDER: ByteOrder = ByteOrder::NATIVE;
const CODESETS: CodeSets = CodeSets::NATIVE;

/// How long a waiting owner of SINGLE_THREAD_MODEL POAs waits at a time
/// before it runs what was handed over to it.
const HAND_OVER_SLICE: std::time::Duration = std::time::Duration::from_millis(2);

/// `request`'s arguments, encoded.
pub(crate) fn encode_args(request: &OutgoingRequest<'_>) -> Result<Vec<u8>, SystemException> {
    let mut w = CdrWriter::new(ORDER, VERSION).with_codesets(CODESETS);
    (request.args)(&mut w)
        .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
    Ok(w.into_bytes())
}

/// A collocated call with encoded arguments, on the calling thread:
/// encodes `request`'s arguments, has `run` carry out the request with
/// them (the operation, the arguments, where the reply goes), and waits
/// for the reply (an asynchronous servant's may come later, from another
/// thread), no longer than `deadline`.
pub(crate) fn call_here(
    core: &Arc<OrbCore>,
    request: &OutgoingRequest<'_>,
    deadline: Option<Instant>,
    contexts: Option<&mut CallContexts>,
    run: impl FnOnce(&Arc<str>, &[u8], &Arc<LocalReply>),
) -> LocalAttempt {
    let args = match encode_args(request) {
        Ok(args) => args,
        Err(e) => return LocalAttempt::Failed(e),
    };
    let reply = Arc::new(LocalReply::default());
    let operation: Arc<str> = Arc::from(request.operation);
    run(&operation, &args, &reply);
    conclude(core, reply.wait(deadline), contexts)
}

/// What a typed call that ran (or ended in `Err`) comes to.
pub(crate) fn typed_ran(ran: Result<(), SystemException>) -> LocalAttempt {
    match ran {
        Ok(()) => LocalAttempt::Done(None),
        Err(e) => LocalAttempt::Failed(e),
    }
}

/// Runs `upcall` with the encoded `args` through the servant's skeleton,
/// its reply (if one is expected) going to `reply`, now or, from an
/// asynchronous servant, later.
pub(crate) fn run_marshalled(
    core: &Arc<OrbCore>,
    upcall: Upcall,
    operation: &Arc<str>,
    args: &[u8],
    response_expected: bool,
    reply: &Arc<LocalReply>,
    interception: Option<Box<ServerInterception>>,
) {
    let object_id = upcall.object_id().clone();
    run_request(
        core,
        &object_id,
        operation,
        (args, response_expected),
        reply,
        interception,
        |request| upcall.run(request),
    );
}

/// Runs `dispatch` on a server request for `operation` on `object_id`
/// whose arguments are `args` (and whether it expects a reply),
/// concluding it into `reply` (see [`run_marshalled`]), through the
/// server interceptors' `interception` if there is one.
pub(crate) fn run_request(
    core: &Arc<OrbCore>,
    object_id: &ObjectId,
    operation: &Arc<str>,
    (args, response_expected): (&[u8], bool),
    reply: &Arc<LocalReply>,
    interception: Option<Box<ServerInterception>>,
    dispatch: impl FnOnce(&mut ServerRequest<'_>) -> Result<(), SystemException>,
) {
    let body_offset =
        MessageBuilder::reply(VERSION, ORDER, 0, ReplyStatus::NoException).body_offset();
    let reader = CdrReader::new(args, ORDER, VERSION).with_codesets(CODESETS);
    let writer = CdrWriter::new(ORDER, VERSION)
        .with_codesets(CODESETS)
        .with_align_base(body_offset);
    let mut owed = match response_expected {
        true => OwedReply::new(reply.clone(), VERSION, ORDER, 0),
        false => OwedReply::nothing(),
    }
    .intercepted(interception);
    // An intercepted request: `receive_request`, then the request's
    // PICurrent slots are the servant's.
    let mut request_scope = None;
    if let Some(interception) = owed.interception_mut() {
        interception.set_target(object_id);
        match interception.receive_request() {
            Ok(()) => request_scope = Some(interception.enter_request_scope()),
            Err(outcome) => {
                owed.answer(outcome);
                if !response_expected {
                    reply.finish(Finished::Ran);
                }
                return;
            }
        }
    }
    let tasks = Tasks::Queue(match core.running_server() {
        Some(server) => server.reactor().clone(),
        None => Arc::new(NoTasks),
    });
    let mut request = ServerRequest::new(operation, object_id, reader, response_expected, writer);
    request.owing(owed, tasks);
    let outcome = {
        let _scope = core.decoding_scope();
        dispatch(&mut request)
    };
    drop(request_scope);
    request.conclude(outcome);
    if !response_expected {
        reply.finish(Finished::Ran);
    }
}

/// Where asynchronous work goes when the ORB has no server running (it
/// is going away): nowhere; the reply owed answers by itself when the
/// work is dropped.
struct NoTasks;

impl TaskQueue for NoTasks {
    fn run_later(&self, task: Box<dyn FnOnce() + Send>) {
        drop(task);
    }
}

/// How a collocated call ended, as its [`LocalReply`] holds it.
#[derive(Debug)]
pub(crate) enum Finished {
    /// A typed call ran (its outcome is in its `TypedCall`), or a oneway
    /// did.
    Ran,
    /// The reply message of a marshalled call.
    Message(Vec<u8>),
    /// The call ended in a system exception before its servant answered.
    Failed(SystemException),
}

/// The in-process end of one collocated call (see the module docs): the
/// first answer stays, later ones are dropped.
#[derive(Default)]
pub(crate) struct LocalReply {
    state: Mutex<ReplyState>,
    done: Condvar,
}

#[derive(Default)]
struct ReplyState {
    finished: Option<Finished>,
    /// Set once `finished` was taken.
    taken: bool,
    /// Who to tell when it finishes (an AMI future or callback).
    notify: Option<Notify>,
}

impl std::fmt::Debug for LocalReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("LocalReply")
            .field("finished", &state.finished.is_some())
            .field("taken", &state.taken)
            .finish()
    }
}

impl LocalReply {
    /// Records how the call ended, unless it has already; wakes whoever
    /// waits.
    pub(crate) fn finish(&self, finished: Finished) {
        let notify = {
            let mut state = self.state.lock();
            if state.finished.is_some() || state.taken {
                return;
            }
            state.finished = Some(finished);
            state.notify.take()
        };
        self.done.notify_all();
        if let Some(run) = notify.and_then(Notify::fire) {
            run();
        }
    }

    /// Waits until the call ends or `deadline` passes (`None`: timed out;
    /// a later answer is dropped) and takes how it ended. A thread that
    /// owns SINGLE_THREAD_MODEL POAs runs, meanwhile, the requests other
    /// threads hand over to it (the collocated call may be calling back
    /// into one of them from another thread), in slices.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Finished> {
        let Some(hand_overs) = crate::thread_role::hand_overs() else {
            return self.wait_until(deadline, true);
        };
        loop {
            let slice = Instant::now() + HAND_OVER_SLICE;
            let until = deadline.map_or(slice, |d| d.min(slice));
            if let Some(finished) = self.wait_until(Some(until), false) {
                return Some(finished);
            }
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return self.wait_until(Some(Instant::now()), true);
            }
            while hand_overs.run_one() {}
        }
    }

    /// Waits until the call ends or `until` passes and takes how it ended;
    /// `None` at `until`, after which a late answer is dropped if
    /// `give_up`.
    fn wait_until(&self, until: Option<Instant>, give_up: bool) -> Option<Finished> {
        let mut state = self.state.lock();
        loop {
            if let Some(finished) = state.finished.take() {
                state.taken = true;
                return Some(finished);
            }
            match until {
                Some(until) => {
                    if self.done.wait_until(&mut state, until).timed_out()
                        && state.finished.is_none()
                    {
                        state.taken |= give_up;
                        return None;
                    }
                }
                None => self.done.wait(&mut state),
            }
        }
    }

    fn take(&self) -> Option<Finished> {
        let mut state = self.state.lock();
        let finished = state.finished.take();
        state.taken |= finished.is_some();
        finished
    }
}

impl ReplySink for LocalReply {
    fn send_reply(&self, message: SplicedBytes) {
        // In one buffer: the caller reads it as a received message.
        self.finish(Finished::Message(message.into_vec()));
    }
}

/// Answers a request that ends before its servant (the POA or a server
/// interceptor's starting point ended it in `outcome`) through its
/// `interception`; what the call comes to.
pub(crate) fn answer_early(
    core: &Arc<OrbCore>,
    interception: Option<Box<ServerInterception>>,
    outcome: ServerOutcome,
    response_expected: bool,
    contexts: Option<&mut CallContexts>,
) -> LocalAttempt {
    let reply = Arc::new(LocalReply::default());
    let owed = match response_expected {
        true => OwedReply::new(reply.clone(), VERSION, ORDER, 0),
        false => OwedReply::nothing(),
    };
    let failed = match &outcome {
        ServerOutcome::System(e) => Some(LocalAttempt::Failed(e.clone())),
        ServerOutcome::Forward(to) => Some(LocalAttempt::Forward(to.clone())),
        _ => None,
    };
    owed.intercepted(interception).answer(outcome);
    match (response_expected, failed) {
        (true, _) => conclude(core, reply.wait_until(None, true), contexts),
        (false, Some(attempt)) => attempt,
        (false, None) => LocalAttempt::Done(None),
    }
}

/// What a collocated call that ended as `finished` (`None`: its deadline
/// passed) comes to, for a caller of `core`; the reply's service
/// contexts go to `contexts`.
pub(crate) fn conclude(
    core: &Arc<OrbCore>,
    finished: Option<Finished>,
    contexts: Option<&mut CallContexts>,
) -> LocalAttempt {
    match finished {
        None => LocalAttempt::Failed(SystemException::timeout(
            minor::CALL_TIMEOUT,
            CompletionStatus::Maybe,
        )),
        Some(Finished::Ran) => LocalAttempt::Done(None),
        Some(Finished::Failed(e)) => LocalAttempt::Failed(e),
        Some(Finished::Message(bytes)) => match reply_of(core, bytes, contexts) {
            Ok(Attempt::Done(reply)) => LocalAttempt::Done(reply),
            Ok(Attempt::Forward(ior)) => LocalAttempt::Forward(ObjectRef::new(ior, core.clone())),
            Ok(Attempt::Readdress(_) | Attempt::Retry) => LocalAttempt::Failed(
                SystemException::internal(minor::NO_REPLY, CompletionStatus::Maybe),
            ),
            Err(e) => LocalAttempt::Failed(e),
        },
    }
}

/// A reply message written in this process, read as a client reads one
/// (its service contexts to `contexts`).
fn reply_of(
    core: &OrbCore,
    bytes: Vec<u8>,
    contexts: Option<&mut CallContexts>,
) -> Result<Attempt, SystemException> {
    let frame = Frame {
        bytes: bytes.into(),
        fragments: 1,
        fragment_starts: Vec::new(),
    };
    core.reply(frame, CODESETS, contexts.map(|c| &mut c.reply))
}

/// The outcome of a marshalled collocated call that ended as `finished`,
/// as a pending reply's (a typed call never comes here).
fn outcome_of(core: &Arc<OrbCore>, finished: Finished) -> Result<ReplyMessage, SystemException> {
    match conclude(core, Some(finished), None) {
        LocalAttempt::Done(Some(reply)) => Ok(reply),
        LocalAttempt::Failed(e) => Err(e),
        // A forward from a reply never comes (the POA forwards before the
        // upcall); a reply-less two-way is the ORB's fault.
        _ => Err(SystemException::internal(
            minor::NO_REPLY,
            CompletionStatus::Maybe,
        )),
    }
}

/// A collocated two-way request sent to be collected later (DII
/// deferred, AMI): its reply comes to its [`LocalReply`] when the servant
/// answers, at once or later.
pub(crate) struct LocalInFlight {
    core: Arc<OrbCore>,
    reply: Arc<LocalReply>,
    deadline: Option<Instant>,
    outcome: Option<Result<ReplyMessage, SystemException>>,
    /// Set once the outcome was taken.
    taken: bool,
    /// The calling reference's ORB, where an AMI callback is delivered.
    caller: Arc<dyn Invoker>,
}

impl LocalInFlight {
    /// The pending reply of a request whose reply goes to `reply`.
    pub(crate) fn pending(
        core: Arc<OrbCore>,
        reply: Arc<LocalReply>,
        deadline: Option<Instant>,
        caller: Arc<dyn Invoker>,
    ) -> PendingReply {
        PendingReply::in_flight(Box::new(LocalInFlight {
            core,
            reply,
            deadline,
            outcome: None,
            taken: false,
            caller,
        }))
    }

    /// Takes in the reply if it is there, or the timeout if it passed.
    fn collect(&mut self) {
        if self.outcome.is_some() || self.taken {
            return;
        }
        if let Some(finished) = self.reply.take() {
            self.outcome = Some(outcome_of(&self.core, finished));
        } else if self.deadline.is_some_and(|d| d <= Instant::now()) {
            self.outcome = Some(Err(SystemException::timeout(
                minor::CALL_TIMEOUT,
                CompletionStatus::Maybe,
            )));
        }
    }
}

impl InFlight for LocalInFlight {
    fn poll(&mut self, _request: &OutgoingRequest<'_>) {
        self.collect();
    }

    fn wait(&mut self, _request: &OutgoingRequest<'_>, wait_for: WaitFor) {
        self.collect();
        if self.outcome.is_some() || self.taken {
            return;
        }
        let until = match wait_for {
            WaitFor::Reply => self.deadline,
            WaitFor::Activity(until) => match (until, self.deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        match self.reply.wait_until(until, false) {
            Some(finished) => self.outcome = Some(outcome_of(&self.core, finished)),
            None if until == self.deadline => {
                self.outcome = Some(Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::Maybe,
                )))
            }
            None => {}
        }
    }

    fn advance(&mut self, _request: &OutgoingRequest<'_>) {
        self.collect();
    }

    fn take(&mut self) -> Option<Result<ReplyMessage, SystemException>> {
        let outcome = self.outcome.take();
        self.taken |= outcome.is_some();
        outcome
    }

    fn is_done(&self) -> bool {
        self.outcome.is_some()
    }

    fn failed_before_sending(&mut self) -> Option<SystemException> {
        None
    }

    fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        self.caller.deliver(work);
    }

    fn on_ready(&mut self, notify: Notify) -> Option<Notify> {
        if self.outcome.is_some() || self.taken {
            return Some(notify);
        }
        let mut state = self.reply.state.lock();
        if state.finished.is_some() || state.taken {
            return Some(notify);
        }
        state.notify = Some(notify);
        None
    }
}
