//! How a reference's calls find their way: to an object served in this
//! process (collocated, through `local_server`: the strategy the
//! reference's or its ORB's `-ORBCollocation` names, forwards followed,
//! the calling ORB's client interceptors run), or else through the
//! reference's `Invoker`. Generated stubs come in through
//! `ObjectRef::invoke_typed` and `ObjectRef::invoke_oneway_typed`, whose
//! call on the servant's Rust trait (`Typed`) runs with no CDR when the
//! object is here; `thru-poa`'s typed calls try the object the reference
//! keeps first (`call_kept`).

use std::sync::{Arc, Mutex};

use armillary_giop::cdr::{CdrError, CdrWriter};
use armillary_giop::giop::SyncScope;
use armillary_giop::system_exception::{CompletionStatus, SystemException};

use super::{
    decode_reply, ObjectInner, ObjectRef, OutgoingRequest, ReplyBody, ReplyMessage, ReplyOutcome,
};
use crate::config::Collocation;
use crate::local_server::{LocalAttempt, LocalBody, LocalTarget, TypedCall};
use crate::pending::PendingReply;

impl ObjectRef {
    /// The collocation strategy of this reference's calls (its own, else
    /// its ORB's) and the object of this process it names, when its calls
    /// go in-process.
    #[inline]
    fn local(&self) -> Option<(Collocation, &LocalTarget)> {
        let strategy = self.strategy()?;
        if strategy == Collocation::None {
            return None;
        }
        Some((strategy, self.inner.local.target(&self.inner.ior)?))
    }

    /// The collocation strategy of this reference's calls: its own, else
    /// its ORB's; `None` when its ORB carries no collocated calls (it is
    /// shut down, or no ORB).
    #[inline]
    fn strategy(&self) -> Option<Collocation> {
        let orb = self.inner.invoker.collocation()?;
        Some(self.inner.collocation.unwrap_or(orb))
    }

    /// Carries `request` in this process to `target` (what
    /// [`local`](Self::local) found), following forwards (in-process or
    /// not) to the end: `None` when the object is not served here after
    /// all (nothing was done). For a typed body, `Done(None)` means the
    /// typed call ran and holds its outcome.
    fn call_local(
        &self,
        (strategy, target): (Collocation, &LocalTarget),
        request: &OutgoingRequest<'_>,
        mut body: LocalBody<'_>,
    ) -> Option<Result<Option<ReplyMessage>, SystemException>> {
        let deadline = self.deadline(request);
        let server = target.server()?;
        let max_forwards = server.max_forwards();
        let mut outcome = self.local_attempt(
            self,
            server,
            target,
            strategy,
            request,
            deadline,
            body.reborrow(),
        );
        let mut forwards = 0;
        loop {
            let to = match outcome {
                LocalAttempt::NotHere => return None,
                LocalAttempt::Done(reply) => return Some(Ok(reply)),
                LocalAttempt::Failed(e) => return Some(Err(e)),
                LocalAttempt::Forward(to) => to,
            };
            forwards += 1;
            if forwards > max_forwards {
                return Some(Err(SystemException::transient(
                    armillary_giop::system_exception::minor::FORWARD_LIMIT,
                    CompletionStatus::No,
                )));
            }
            // The forwarded reference, carried by this one's ORB and with
            // its overrides.
            let to = ObjectRef {
                inner: Arc::new(ObjectInner {
                    ior: to.inner.ior.clone(),
                    invoker: self.inner.invoker.clone(),
                    call_timeout: self.inner.call_timeout,
                    collocation: self.inner.collocation,
                    local: to.inner.local.clone(),
                }),
            };
            let here = to
                .local()
                .and_then(|(strategy, target)| Some((strategy, target, target.server()?)));
            outcome = match here {
                Some((strategy, target, server)) => to.local_attempt(
                    self,
                    server,
                    target,
                    strategy,
                    request,
                    deadline,
                    body.reborrow(),
                ),
                None => LocalAttempt::NotHere,
            };
            if let LocalAttempt::NotHere = outcome {
                // Forwarded out of the process: over IIOP from here.
                return Some(
                    to.invoker()
                        .and_then(|invoker| invoker.invoke(to.ior(), request)),
                );
            }
        }
    }

    /// One collocated attempt at `request` on `target` (this reference's
    /// object), through the calling ORB's client interceptors and the
    /// serving ORB's server interceptors when either has any (the
    /// arguments are encoded then, so that they see a remote request's).
    /// `original` is the reference the call was made on (this one, or
    /// one that forwarded to this one).
    #[allow(clippy::too_many_arguments)]
    fn local_attempt(
        &self,
        original: &ObjectRef,
        server: Arc<dyn crate::local_server::LocalServer>,
        target: &LocalTarget,
        strategy: Collocation,
        request: &OutgoingRequest<'_>,
        deadline: Option<std::time::Instant>,
        body: LocalBody<'_>,
    ) -> LocalAttempt {
        let client = self.inner.invoker.client_interceptors();
        let body = match client.is_some() || server.intercepts() {
            true => LocalBody::Marshalled,
            false => body,
        };
        let Some(interceptors) = client else {
            return server.call(target, request, deadline, strategy, body, None);
        };
        use crate::interceptors::{ClientCall, ClientInterception, ClientOutcome};
        let mut interception = ClientInterception::new(
            &interceptors,
            ClientCall {
                request_id: interceptors.next_request_id(),
                operation: request.operation,
                response_expected: request.response_expected,
                sync_scope: request.sync_scope,
                target: original.clone(),
                effective_target: self.clone(),
                slots: interceptors.thread_slots(),
                arguments: request
                    .signature
                    .map(|(arguments, result)| (arguments.clone(), result.clone())),
            },
        );
        let mut contexts = crate::local_server::CallContexts::default();
        let (outcome, reply) = match interception.send_request() {
            Err(outcome) => (outcome, None),
            Ok(()) => {
                contexts.request = interception.request_contexts().to_vec();
                let attempt = server.call(
                    target,
                    request,
                    deadline,
                    strategy,
                    body,
                    Some(&mut contexts),
                );
                match attempt {
                    LocalAttempt::Done(Some(reply)) => {
                        let outcome = match reply.outcome {
                            ReplyOutcome::Normal => ClientOutcome::Reply,
                            ReplyOutcome::UserException => ClientOutcome::UserException(
                                reply.body().read_string().unwrap_or_default(),
                            ),
                        };
                        (outcome, Some(reply))
                    }
                    // A synchronised oneway was answered; another one
                    // gets no reply.
                    LocalAttempt::Done(None) if request.sync_scope == SyncScope::None => {
                        (ClientOutcome::NoReply, None)
                    }
                    LocalAttempt::Done(None) => (ClientOutcome::Reply, None),
                    LocalAttempt::Failed(e) => (ClientOutcome::System(e), None),
                    LocalAttempt::Forward(to) => (ClientOutcome::Forward(to), None),
                    LocalAttempt::NotHere => (ClientOutcome::Retry, None),
                }
            }
        };
        match interception.conclude(outcome, std::mem::take(&mut contexts.reply)) {
            ClientOutcome::Reply | ClientOutcome::UserException(_) => match reply {
                Some(reply) => LocalAttempt::Done(Some(reply)),
                None if !request.response_expected => LocalAttempt::Done(None),
                None => LocalAttempt::Failed(SystemException::internal(
                    armillary_giop::system_exception::minor::NO_REPLY,
                    CompletionStatus::Maybe,
                )),
            },
            ClientOutcome::NoReply => LocalAttempt::Done(None),
            ClientOutcome::System(e) => LocalAttempt::Failed(e),
            ClientOutcome::Forward(to) => LocalAttempt::Forward(to),
            ClientOutcome::Retry => LocalAttempt::NotHere,
        }
    }

    /// When `request`, starting now, must end: its timeout (the
    /// reference's, the thread's, or the calling ORB's) from now.
    fn deadline(&self, request: &OutgoingRequest<'_>) -> Option<std::time::Instant> {
        crate::timeout::deadline(request.effective_timeout(self.inner.invoker.call_timeout()))
    }

    /// Carries `request` (encoded by its `args`): in this process when the
    /// object is served here, else through the reference's invoker. The
    /// reply (`None` for a oneway).
    pub(crate) fn route_invoke(
        &self,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        let invoker = self.invoker()?;
        let local = self
            .local()
            .and_then(|local| self.call_local(local, request, LocalBody::Marshalled));
        match local {
            Some(outcome) => outcome,
            None => invoker.invoke(self.ior(), request),
        }
    }

    /// Sends the two-way `request` for a reply collected later (DII
    /// deferred: `asynchronous` false; AMI futures and callbacks: true):
    /// in this process when the object is served here, else through the
    /// reference's invoker.
    pub(crate) fn route_send(
        &self,
        request: &OutgoingRequest<'_>,
        asynchronous: bool,
    ) -> Result<PendingReply, SystemException> {
        let invoker = self.invoker()?;
        // With interceptors at work, a deferred or asynchronous request
        // goes over IIOP, where every point (`send_poll` included) runs.
        let local = self
            .local()
            .filter(|_| invoker.client_interceptors().is_none())
            .and_then(|(strategy, target)| Some((strategy, target, target.server()?)))
            .filter(|(_, _, server)| !server.intercepts());
        if let Some((strategy, target, server)) = local {
            let deadline = self.deadline(request);
            if let Some(pending) = server.send(target, request, deadline, strategy, invoker) {
                return Ok(pending);
            }
        }
        match asynchronous {
            true => invoker.send_asynchronous(self.ior(), request),
            false => invoker.send_deferred(self.ior(), request),
        }
    }

    /// Makes a two-way call as a generated stub does: when the object is
    /// served in this process (and the reference's collocation strategy
    /// is not `None`), `local` is asked for the call as a Rust closure on
    /// the servant's interface trait `S` (`dyn QuoterServant`), which runs
    /// with no CDR at all; otherwise, or when the servant found does not
    /// offer `S` ([`Servant::local_interface`](crate::Servant::local_interface):
    /// a DSI or an asynchronous servant), the call goes as
    /// [`invoke`](Self::invoke) with `args` and `result`.
    #[inline]
    pub fn invoke_typed<S, T, E, F>(
        &self,
        operation: &'static str,
        local: impl FnOnce() -> F,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
        result: impl FnMut(ReplyBody<'_, '_>) -> Result<Result<T, E>, CdrError>,
    ) -> Result<T, E>
    where
        S: ?Sized + Send + Sync + 'static,
        F: FnOnce(&S) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<SystemException> + Send + 'static,
    {
        let here = self.local();
        // The `direct` strategy's servant, once kept: a plain call (a
        // panic in it reaches this caller, as a plain call's would).
        if let Some((Collocation::Direct, target)) = here {
            if let Some(servant) = target.direct_view::<S>() {
                return local()(&**servant);
            }
        }
        self.invoke_typed_through(here, operation, local, args, result)
    }

    /// [`invoke_typed`](Self::invoke_typed) past its `direct` shortcut;
    /// `here` is what [`local`](Self::local) found (`None`: the object is
    /// not served in this process).
    #[inline(never)]
    fn invoke_typed_through<S, T, E, F>(
        &self,
        here: Option<(Collocation, &LocalTarget)>,
        operation: &'static str,
        local: impl FnOnce() -> F,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
        result: impl FnMut(ReplyBody<'_, '_>) -> Result<Result<T, E>, CdrError>,
    ) -> Result<T, E>
    where
        S: ?Sized + Send + Sync + 'static,
        F: FnOnce(&S) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<SystemException> + Send + 'static,
    {
        let request = OutgoingRequest {
            operation,
            response_expected: true,
            sync_scope: SyncScope::WithTarget,
            args,
            call_timeout: self.call_timeout(),
            signature: None,
        };
        let invoker = self.invoker()?;
        let mut call = Typed::<S, _, F, T, E>::new(local);
        // `thru-poa`'s shortcut to the object kept from an earlier call.
        let ran = match here {
            // Not served in this process: `here` already says so, so the
            // call goes straight to the invoker (not through
            // `route_invoke`, which would look again).
            None => invoker.invoke(self.ior(), &request),
            Some(here) => match self.call_kept(here, &request, &mut call) {
                Some(Ok(())) => Ok(None),
                Some(Err(e)) => Err(e),
                None => match self.call_local(here, &request, LocalBody::Typed(&mut call)) {
                    Some(outcome) => outcome,
                    None => invoker.invoke(self.ior(), &request),
                },
            },
        };
        let reply = match ran {
            Ok(None) => {
                return call.outcome().unwrap_or_else(|| {
                    Err(SystemException::internal(0, CompletionStatus::Maybe).into())
                })
            }
            Ok(Some(reply)) => reply,
            Err(e) => return Err(e.into()),
        };
        decode_reply(invoker, &reply, result)
    }

    /// A typed two-way call of the `thru-poa` strategy to the object
    /// `target` keeps from an earlier call (`LocalTarget::call_kept`),
    /// when the call has no timeout and this reference's ORB no client
    /// interceptors: `None`, with nothing done, when it must go the whole
    /// way instead.
    fn call_kept(
        &self,
        (strategy, target): (Collocation, &LocalTarget),
        request: &OutgoingRequest<'_>,
        call: &mut dyn crate::local_server::TypedCall,
    ) -> Option<Result<(), SystemException>> {
        if strategy != Collocation::ThruPoa
            || self.deadline(request).is_some()
            || self.inner.invoker.client_interceptors().is_some()
        {
            return None;
        }
        target.call_kept(call)
    }

    /// Makes a oneway call as a generated stub does: typed in this
    /// process when collocated, as [`invoke_typed`](Self::invoke_typed)
    /// says, else as [`invoke_oneway`](Self::invoke_oneway).
    pub fn invoke_oneway_typed<S, F>(
        &self,
        operation: &'static str,
        local: impl FnOnce() -> F,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<(), SystemException>
    where
        S: ?Sized + Send + Sync + 'static,
        F: FnOnce(&S) + Send + 'static,
    {
        let request = OutgoingRequest {
            operation,
            response_expected: false,
            sync_scope: SyncScope::None,
            args,
            call_timeout: self.call_timeout(),
            signature: None,
        };
        let Some(here) = self.local() else {
            // Not served in this process: straight to the invoker.
            return self.invoker()?.invoke(self.ior(), &request).map(|_| ());
        };
        let mut call = Typed::<S, _, _, (), SystemException>::new(|| {
            let call = local();
            move |servant: &S| {
                call(servant);
                Ok(())
            }
        });
        match self.call_local(here, &request, LocalBody::Typed(&mut call)) {
            Some(outcome) => outcome.map(|_| ()),
            None => self.invoker()?.invoke(self.ior(), &request).map(|_| ()),
        }
    }
}

/// Where a typed call run on another thread leaves its outcome.
type OutcomeSlot<T, E> = Mutex<Option<Result<T, E>>>;

/// A generated stub's typed call as the collocated path runs it (see
/// [`ObjectRef::invoke_typed`]): `make` builds the call on the servant's
/// interface trait `S` from the stub's arguments, once, and only when the
/// call runs in-process typed.
struct Typed<S: ?Sized, M, F, T, E> {
    make: Option<M>,
    outcome: Option<Result<T, E>>,
    /// Where a call run by another thread leaves its outcome.
    detached: Option<Arc<OutcomeSlot<T, E>>>,
    _interface: std::marker::PhantomData<fn(&S) -> F>,
}

impl<S: ?Sized, M, F, T, E> Typed<S, M, F, T, E> {
    fn new(make: M) -> Self {
        Typed {
            make: Some(make),
            outcome: None,
            detached: None,
            _interface: std::marker::PhantomData,
        }
    }

    /// The outcome, once the call ran (here or on another thread).
    fn outcome(&mut self) -> Option<Result<T, E>> {
        self.outcome.take().or_else(|| {
            self.detached
                .as_ref()
                .and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).take())
        })
    }
}

impl<S, M, F, T, E> TypedCall for Typed<S, M, F, T, E>
where
    S: ?Sized + Send + Sync + 'static,
    M: FnOnce() -> F,
    F: FnOnce(&S) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    fn interface(&self) -> std::any::TypeId {
        std::any::TypeId::of::<Arc<S>>()
    }

    fn run(&mut self, view: &dyn std::any::Any) {
        if let Some(servant) = view.downcast_ref::<Arc<S>>() {
            if let Some(make) = self.make.take() {
                self.outcome = Some(make()(&**servant));
            }
        }
    }

    fn detach(&mut self) -> Option<crate::local_server::DetachedCall> {
        let call = self.make.take()?();
        let slot = Arc::new(Mutex::new(None));
        self.detached = Some(slot.clone());
        Some(Box::new(move |view: &dyn std::any::Any| {
            if let Some(servant) = view.downcast_ref::<Arc<S>>() {
                let outcome = call(&**servant);
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
            }
        }))
    }
}
