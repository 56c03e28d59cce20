//! The client invocation engine: the one place a client request is sent
//! and its reply concluded, for every form of call (synchronous, oneway,
//! DII deferred, AMI poller, future and callback all go through
//! [`send_once`](OrbCore::send_once) and [`finish`](OrbCore::finish)).
//!
//! `OrbCore` is the [`Invoker`] of every reference the ORB makes or
//! decodes: it picks the IIOP profile (and its TLS or plain route),
//! negotiates code sets with the first GIOP 1.1+ request on a connection,
//! sends the request on a cached connection, waits for the reply as the
//! wait strategy says (`transport::wait`), follows LOCATION_FORWARD
//! replies (bounded, [`Progress`]), re-sends a request the server closed
//! the connection on in an orderly way before answering, and fails with
//! TIMEOUT when the call timeout runs out (`deadline_for`). Deferred and
//! asynchronous requests are sent the same way and concluded when their
//! reply is collected (`in_flight.rs`). The client's portable
//! interceptors run here, once per attempt (`intercepted.rs`): the
//! starting point as the request is written, the ending point where the
//! attempt is concluded.
//!
//! Collocated calls (this ORB's own local objects) do not come here:
//! `crate::collocation`.

mod attempt;
pub(crate) mod in_flight;
mod intercepted;
mod locate;

pub(crate) use attempt::{Attempt, Progress, Sent};
use in_flight::RemoteDeferred;
pub(crate) use intercepted::CallStart;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::cdr::codeset::{negotiate, CodeSets};
use armillary_giop::cdr::{CdrReader, SHARED_OCTETS_MIN};
use armillary_giop::giop::{
    MessageBuilder, ReplyStatus, RequestFields, ServiceContext, SyncScope, TargetRef,
};
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, CdrDecode, GiopVersion};

use crate::object::{Invoker, Location, OutgoingRequest, ReplyMessage, ReplyOutcome};
use crate::pending::PendingReply;
use crate::transport::client::{Awaited, ClientConnection, Closed, SendError};
use crate::transport::connection_cache::Checkout;
use crate::transport::mux::Caller;
use crate::transport::outbox::Outgoing;
use crate::transport::reply::sync::SyncSlot;
use crate::transport::reply::ReplyDispatcher;

use crate::orb::core::shut_down_error;
use crate::orb::OrbCore;
use crate::trace::{Outcome, Side};

/// The options the client's limit events name.
const MAX_SIZE: &str = "-ORBMaxMessageSize";
const MAX_OUT: &str = "-ORBClientMaxOutstanding";

impl OrbCore {
    /// Waits for the reply to `id` on `conn` (its dispatcher fills `slot`)
    /// as the ORB's wait strategy does, serving meanwhile what the calling
    /// thread must serve.
    pub(crate) fn wait_reply(
        &self,
        conn: &Arc<ClientConnection>,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
    ) -> Awaited {
        let _waiting = crate::thread_role::waiting_for_reply();
        let serving = crate::transport::wait::serving(self.driven_reactor());
        conn.wait_reply_by(id, slot, deadline, &*self.wait, &serving)
    }

    /// Waits on `conn` until `done` (or the connection closes: true) or
    /// `deadline` (false), as the ORB's wait strategy does.
    pub(crate) fn wait_on(
        &self,
        conn: &Arc<ClientConnection>,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&mut crate::transport::client::ReadState) -> bool,
    ) -> bool {
        let _waiting = crate::thread_role::waiting_for_reply();
        let serving = crate::transport::wait::serving(self.driven_reactor());
        self.wait.wait(&serving, conn, deadline, done)
    }

    /// The reactor of this ORB's server when the application's threads
    /// drive it: any thread waiting for a reply serves it then.
    pub(crate) fn driven_reactor(&self) -> Option<Arc<crate::reactor::Reactor>> {
        if !self.driven_by_application() {
            return None;
        }
        self.running_server().map(|server| server.reactor().clone())
    }

    /// The connection to `route` for a request whose caller `caller`,
    /// that must end by `deadline`.
    pub(crate) fn connection(
        &self,
        route: &crate::transport::tls::Route,
        caller: Caller,
        deadline: Option<Instant>,
    ) -> Result<Checkout, SystemException> {
        self.connections.get(route, caller, deadline)
    }

    /// What a reply wait that ran out of time means for the call and the
    /// connection: TIMEOUT, COMPLETED_MAYBE when the request left whole
    /// (`sent`), COMPLETED_NO when it never did. A connection on which the
    /// server said nothing at all since the request left (hung, or gone
    /// without closing) is not used for new calls; calls already waiting
    /// on it keep it until they end, and it closes with the last of them.
    /// A connection that still carries other replies stays, and the late
    /// reply is dropped when it comes.
    pub(crate) fn timed_out(
        &self,
        conn: &Arc<ClientConnection>,
        silent: bool,
        sent: bool,
    ) -> SystemException {
        if silent && sent {
            self.connections.evict(conn);
        }
        let completed = if sent {
            CompletionStatus::Maybe
        } else {
            CompletionStatus::No
        };
        SystemException::timeout(minor::CALL_TIMEOUT, completed)
    }

    /// One synchronous attempt at `request` on `target`; `addressing` is
    /// the GIOP 1.2 addressing disposition (0 key, 1 profile, 2 whole
    /// reference). The attempt ends by `deadline` when there is one.
    pub(crate) fn invoke_once(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        addressing: i16,
        deadline: Option<Instant>,
        start: Option<&CallStart>,
    ) -> Result<Attempt, SystemException> {
        let slot = SyncSlot::for_this_thread();
        let mut sent = match self.send_once(
            target,
            request,
            (addressing, Caller::Waits, deadline),
            slot.dispatcher(),
            start,
        )? {
            Ok(sent) => sent,
            Err(attempt) => return Ok(attempt),
        };
        let _in_request = sent.span.clone().entered();
        let awaited = self.wait_reply(&sent.conn, sent.id, &slot, deadline);
        self.finish(&mut sent, awaited, request.response_expected)
    }

    /// Sends one attempt at `request` on `target` (see
    /// [`invoke_once`](Self::invoke_once)), with `how` its addressing
    /// disposition, how its caller waits for the reply (which the
    /// transport mux weighs) and its deadline, its reply to go to
    /// `dispatcher`: the request as sent, or what the attempt already came
    /// to (a oneway is done once written; a request that could not be
    /// written whole is retried). With `start` (the call is intercepted),
    /// the attempt's `send_request` runs as it is written, and its ending
    /// point when it comes to something here (an attempt sent whole and
    /// awaiting its reply carries its interception to
    /// [`finish`](Self::finish)).
    pub(crate) fn send_once(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        how: (i16, Caller, Option<Instant>),
        dispatcher: Arc<dyn ReplyDispatcher>,
        start: Option<&CallStart>,
    ) -> Result<Result<Sent, Attempt>, SystemException> {
        let mut interception = None;
        let result = self.send_attempt(target, request, how, dispatcher, start, &mut interception);
        let Some(interception) = interception else {
            return match (start, result) {
                // No connection for it: its interceptors still see it
                // start and fail (with an id of the ORB's own).
                (Some(start), Err(e)) => {
                    let id = self.interceptors.next_request_id();
                    let (interception, sent) = self.intercept_send(start, target, request, id);
                    let attempt = match sent {
                        Ok(()) => Err(e),
                        Err(outcome) => self.attempt_of(outcome),
                    };
                    self.end_attempt(interception, attempt, Vec::new()).map(Err)
                }
                (_, result) => result,
            };
        };
        match result {
            Ok(Ok(mut sent)) => {
                sent.interception = Some(interception);
                Ok(Ok(sent))
            }
            Ok(Err(attempt)) => self
                .end_attempt(interception, Ok(attempt), Vec::new())
                .map(Err),
            Err(e) => self.end_attempt(interception, Err(e), Vec::new()).map(Err),
        }
    }

    /// [`send_once`](Self::send_once), the interception it starts (if
    /// any) left in `interception`.
    fn send_attempt(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        (addressing, caller, deadline): (i16, Caller, Option<Instant>),
        dispatcher: Arc<dyn ReplyDispatcher>,
        start: Option<&CallStart>,
        interception: &mut Option<Box<crate::interceptors::ClientInterception>>,
    ) -> Result<Result<Sent, Attempt>, SystemException> {
        let (index, usable) = self.profiles.first_iiop(&target.profiles).ok_or_else(|| {
            SystemException::inv_objref(minor::UNREGISTERED_OBJECT, CompletionStatus::No)
        })?;
        let profile = &usable.body;
        let address = match addressing {
            1 => TargetRef::Profile(&target.profiles[index]),
            2 => TargetRef::Reference {
                selected_profile_index: index as u32,
                ior: target,
            },
            _ => TargetRef::Key(&profile.object_key),
        };
        let version = profile.iiop_version.min(self.config.giop_version());
        let mut last_error = None;
        let routes = usable.routes.as_ref().map_err(Clone::clone)?;
        for route in routes {
            let mut conn = match self.connection(route, caller, deadline) {
                Ok(c) => c,
                Err(e) => {
                    last_error = Some(e);
                    continue;
                }
            };
            let id = conn.next_request_id();
            let span = crate::trace::client_request(
                request.operation,
                id,
                &profile.object_key,
                conn.peer(),
                conn.local_addr(),
                version,
            );
            if let Some(start) = start {
                // Before the connection's code sets are fixed: a request
                // an interceptor stops never leaves.
                let (started, sent) = self.intercept_send(start, target, request, id);
                *interception = Some(started);
                if let Err(outcome) = sent {
                    return self.attempt_of(outcome).map(Err);
                }
            }
            let mut contexts = Vec::new();
            // Code sets belong to the connection: the first request fixes
            // them (from its reference's profile) and announces them.
            // (A GIOP 1.0 request cannot negotiate, but on a connection
            // whose code sets are fixed it uses them too: the server reads
            // the connection's text that way, whatever the version.)
            let codesets = if let Some(fixed) = conn.codesets.get() {
                // Fixed, but perhaps not yet written by the request that
                // fixed them: announced again, in case this one leaves
                // first.
                if version >= GiopVersion::V1_1 && !conn.codesets_announced.load(Ordering::SeqCst) {
                    contexts.push(ServiceContext::code_sets(fixed.to_context(), version));
                }
                *fixed
            } else if version < GiopVersion::V1_1 {
                CodeSets::DEFAULT
            } else {
                let chosen = negotiate(&self.config.code_sets(), profile.code_sets().as_ref())
                    .map_err(|_| SystemException::codeset_incompatible(0, CompletionStatus::No))?;
                if conn.codesets.set(chosen).is_ok() {
                    contexts.push(ServiceContext::code_sets(chosen.to_context(), version));
                }
                // Another request may have fixed them first.
                *conn.codesets.get().unwrap_or(&chosen)
            };
            let announces_codesets = !contexts.is_empty();
            if let Some(interception) = interception {
                contexts.extend(interception.request_contexts().iter().cloned());
            }
            let header = RequestFields {
                request_id: id,
                response_flags: if request.response_expected {
                    SyncScope::WithTarget.response_flags()
                } else {
                    request.sync_scope.response_flags()
                },
                reserved: [0; 3],
                target: if version >= GiopVersion::V1_2 {
                    address
                } else {
                    TargetRef::Key(&profile.object_key)
                },
                operation: request.operation,
                service_contexts: &contexts,
                requesting_principal: &[],
            };
            let mut builder = MessageBuilder::request(version, ByteOrder::NATIVE, &header)
                .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
            builder.body().set_codesets(codesets);
            // A large `Bytes` argument is spliced in, not copied: the
            // request leaves as its pieces (`transport/gather.rs`).
            builder.body().set_splicing(Some(SHARED_OCTETS_MIN));
            // Union default labels in the form the target's ORB reads.
            builder.body().set_default_label(
                usable
                    .default_label
                    .unwrap_or(self.config.union_default_label.into()),
            );
            (request.args)(builder.body())
                .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
            let bytes = builder.finish_spliced(false);
            if bytes.len() > self.config.max_message_size {
                // Never sent. Had it announced the connection's code sets,
                // the server would not know them: the connection goes.
                if announces_codesets {
                    self.connections.evict(&conn);
                }
                let detail = format_args!("a request of {} bytes is not sent", bytes.len());
                let limit = self.config.max_message_size;
                let _in_request = span.enter();
                crate::trace::limit_reached(Side::Client, conn.peer(), MAX_SIZE, limit, &detail);
                return Err(SystemException::marshal(
                    minor::MESSAGE_SIZE_EXCEEDED,
                    CompletionStatus::No,
                ));
            }
            // Oneways with SYNC_WITH_SERVER or _TARGET still get a reply.
            let wait = request.response_expected || request.sync_scope != SyncScope::None;
            // Back-pressure: past the connection's limit of requests
            // awaiting a reply, wait for one of them to end (reading the
            // connection meanwhile if nobody does), no longer than the
            // call's deadline.
            if wait
                && !conn.bind_within_limit(
                    id,
                    dispatcher,
                    deadline,
                    self.config.client_max_outstanding,
                )
            {
                let detail = "a call timed out waiting for a reply slot";
                let limit = self.config.client_max_outstanding;
                let _in_request = span.enter();
                crate::trace::limit_reached(Side::Client, conn.peer(), MAX_OUT, limit, &detail);
                return Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                ));
            }
            if wait {
                conn.bound();
            }
            let outgoing = Outgoing {
                reply: wait.then_some(id),
                deadline,
            };
            if let Err(e) = conn.send(&bytes, outgoing, caller) {
                // Not sent whole: the server cannot have run it.
                conn.unbind(id);
                self.connections.evict(&conn);
                return match e {
                    SendError::Failed => Ok(Err(Attempt::Retry)),
                    SendError::TimedOut => Err(SystemException::timeout(
                        minor::CALL_TIMEOUT,
                        CompletionStatus::No,
                    )),
                };
            }
            if announces_codesets {
                // Queued or written: every later request leaves after it.
                conn.codesets_announced.store(true, Ordering::SeqCst);
            }
            if !wait {
                crate::trace::record_outcome(&span, Outcome::Oneway, None);
                return Ok(Err(Attempt::Done(None)));
            }
            return Ok(Ok(Sent {
                conn: Arc::clone(&conn),
                id,
                codesets,
                interception: None,
                span,
            }));
        }
        Err(last_error.unwrap_or_else(|| {
            SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No)
        }))
    }

    /// What the outcome of a sent attempt means for the call: its reply,
    /// or why there is none (a request that a server closed the
    /// connection on before answering is retried). An intercepted
    /// attempt's ending point runs here, and may change that.
    pub(crate) fn finish(
        &self,
        sent: &mut Sent,
        awaited: Awaited,
        response_expected: bool,
    ) -> Result<Attempt, SystemException> {
        let attempt = match sent.interception.take() {
            None => self.conclude_awaited(sent, awaited, response_expected, None),
            Some(interception) => {
                let mut reply_contexts = Vec::new();
                let attempt = self.conclude_awaited(
                    sent,
                    awaited,
                    response_expected,
                    Some(&mut reply_contexts),
                );
                self.end_attempt(interception, attempt, reply_contexts)
            }
        };
        let (outcome, exception) = attempt::trace_outcome(&attempt);
        crate::trace::record_outcome(&sent.span, outcome, exception);
        attempt
    }

    /// [`finish`](Self::finish) without interception; the reply's service
    /// contexts go to `reply_contexts` when asked for.
    fn conclude_awaited(
        &self,
        sent: &Sent,
        awaited: Awaited,
        response_expected: bool,
        reply_contexts: Option<&mut Vec<ServiceContext>>,
    ) -> Result<Attempt, SystemException> {
        let conn = &sent.conn;
        match awaited {
            Awaited::TimedOut { silent, sent } => Err(self.timed_out(conn, silent, sent)),
            // Nothing reached the server: sent again.
            Awaited::Closed(Closed::Orderly) | Awaited::Unsent => {
                self.connections.evict(conn);
                Ok(Attempt::Retry)
            }
            Awaited::ReplyTooLarge => {
                self.connections.evict(conn);
                Err(SystemException::marshal(
                    minor::MESSAGE_SIZE_EXCEEDED,
                    CompletionStatus::Yes,
                ))
            }
            Awaited::Closed(Closed::Broken) => {
                self.connections.evict(conn);
                Err(SystemException::comm_failure(
                    minor::CONNECTION_LOST,
                    CompletionStatus::Maybe,
                ))
            }
            Awaited::Closed(Closed::Refused) => {
                self.connections.evict(conn);
                Err(crate::transport::tls::refused())
            }
            Awaited::Reply(frame) => match self.reply(frame, sent.codesets, reply_contexts)? {
                // A synchronised oneway only needed to know it arrived.
                Attempt::Done(_) if !response_expected => Ok(Attempt::Done(None)),
                other => Ok(other),
            },
        }
    }

    pub(crate) fn reply(
        &self,
        frame: armillary_giop::giop::Frame,
        codesets: CodeSets,
        reply_contexts: Option<&mut Vec<ServiceContext>>,
    ) -> Result<Attempt, SystemException> {
        let marshal = |e: &armillary_giop::cdr::CdrError| {
            SystemException::from_cdr_error(e, CompletionStatus::Maybe)
        };
        let malformed = || SystemException::marshal(minor::MALFORMED, CompletionStatus::Maybe);
        let (message, header, body) = frame
            .decode_reply()
            .map_err(|_| malformed())?
            .ok_or_else(malformed)?;
        if let Some(contexts) = reply_contexts {
            contexts.clone_from(&header.service_contexts);
        }
        let body_offset = body.index();
        let mut body: CdrReader<'_> = body.with_codesets(codesets);
        let outcome = match header.reply_status {
            ReplyStatus::NoException => ReplyOutcome::Normal,
            ReplyStatus::UserException => ReplyOutcome::UserException,
            ReplyStatus::SystemException => {
                return Err(SystemException::decode_body(&mut body).map_err(|e| marshal(&e))?)
            }
            ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm => {
                return Ok(Attempt::Forward(
                    Ior::decode(&mut body).map_err(|e| marshal(&e))?,
                ));
            }
            ReplyStatus::NeedsAddressingMode => {
                return Ok(Attempt::Readdress(
                    body.read_short().map_err(|e| marshal(&e))?,
                ));
            }
        };
        Ok(Attempt::Done(Some(ReplyMessage {
            body_offset,
            byte_order: message.byte_order,
            version: message.version,
            codesets,
            outcome,
            bytes: frame.bytes,
            fragment_starts: frame.fragment_starts,
        })))
    }
}

impl OrbCore {
    /// The call timeout of `request` sent now: the reference's, the
    /// thread's or the ORB's (see [`crate::timeout`]).
    pub(crate) fn timeout_for(&self, request: &OutgoingRequest<'_>) -> Option<Duration> {
        request.effective_timeout(self.config.call_timeout)
    }

    /// When `request`, starting now, must end: the one place every way of
    /// sending a request (synchronous, oneway, DII deferred, AMI pollers,
    /// futures and callbacks) takes its deadline from.
    pub(crate) fn deadline_for(&self, request: &OutgoingRequest<'_>) -> Option<Instant> {
        crate::timeout::deadline(self.timeout_for(request))
    }

    /// When a call starting now that is made through no particular
    /// reference (a LocateRequest) must end: the thread's or the ORB's
    /// timeout.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        crate::timeout::deadline(crate::timeout::effective(None, self.config.call_timeout))
    }
}

impl Invoker for OrbCore {
    fn send_deferred(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let me = self.me.upgrade().ok_or_else(shut_down_error)?;
        Ok(RemoteDeferred::send(me, target, request, false))
    }

    fn send_asynchronous(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let me = self.me.upgrade().ok_or_else(shut_down_error)?;
        Ok(RemoteDeferred::send(me, target, request, true))
    }

    fn locate(&self, target: &Ior) -> Result<Location, SystemException> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let deadline = self.deadline();
        // An orderly close before the answer: ask again on a new connection.
        for _ in 0..3 {
            if let Some(location) = self.locate_once(target, deadline)? {
                return Ok(location);
            }
        }
        Err(SystemException::transient(
            minor::CONNECT_FAILED,
            CompletionStatus::No,
        ))
    }

    fn collocation(&self) -> Option<crate::config::Collocation> {
        (!self.shut_down.load(Ordering::SeqCst)).then_some(self.config.collocation)
    }

    fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        OrbCore::deliver(self, work);
    }

    fn call_timeout(&self) -> Option<Duration> {
        self.config.call_timeout
    }

    fn client_interceptors(&self) -> Option<Arc<crate::interceptors::Interceptors>> {
        (!self.interceptors.client.is_empty()).then(|| self.interceptors.clone())
    }

    fn invoke(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        let deadline = self.deadline_for(request);
        let mut progress = Progress::new(target);
        let start = self.call_start(target);
        loop {
            // A shutdown while an attempt was under way closed its
            // connection: no new one is opened for the retry.
            if self.shut_down.load(Ordering::SeqCst) {
                return Err(shut_down_error());
            }
            // Every attempt so far ended before the server ran the request
            // (re-addressed, forwarded, or refused by an orderly close).
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                ));
            }
            let attempt = match self.invoke_once(
                progress.target(),
                request,
                progress.addressing,
                deadline,
                start.as_ref(),
            ) {
                Ok(attempt) => attempt,
                Err(e) if progress.fall_back(&e) => continue,
                Err(e) => return Err(e),
            };
            if let Some(reply) = progress.after(attempt, self.config.max_forwards)? {
                return Ok(reply);
            }
        }
    }
}
