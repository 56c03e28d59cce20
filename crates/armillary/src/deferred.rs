//! Requests sent now whose replies are collected later: what
//! [`Invoker::send_deferred`](crate::runtime::Invoker::send_deferred) returns, the
//! client half of DII's `send_deferred` (and what AMI pollers build on).
//!
//! A remote request binds a deferred reply dispatcher
//! (`transport::reply::deferred`) on its connection and is sent; its reply
//! is then read by whichever thread reads that connection: a synchronous
//! caller leading it, a thread waiting for this reply, or a poll that reads
//! what has arrived without blocking. Forwards, re-addressing and the
//! re-sending of a request that an orderly close refused happen when the
//! reply is collected, as for a synchronous call. The call timeout (the
//! reference's, the thread's at the send, or the ORB's: see
//! [`CallTimeout`](crate::CallTimeout)) counts from the send: past it the request ends in TIMEOUT and its
//! dispatcher is unbound, so a late reply is dropped. Dropping a
//! [`PendingReply`] unbinds its dispatcher too.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use crate::object::{OutgoingRequest, ReplyMessage};
use crate::orb::{Attempt, OrbCore, Progress, Sent};
use crate::transport::reply::callback::Notify;
use crate::transport::reply::deferred::DeferredSlot;

/// The reply to a two-way request sent with
/// [`Invoker::send_deferred`](crate::runtime::Invoker::send_deferred), to be
/// collected later with [`poll`](Self::poll) or [`wait`](Self::wait).
///
/// Both take the request again: a reply that forwards the request elsewhere
/// (or a connection the server closed before answering) makes it be sent
/// again, encoded anew.
pub struct PendingReply {
    inner: Inner,
}

enum Inner {
    /// The outcome is known (an invoker without deferral ran the request
    /// at once, or the reply has been collected); `None` once taken.
    Ready(Option<Result<ReplyMessage, SystemException>>),
    /// A request in flight on an ORB connection.
    Remote(Box<RemoteDeferred>),
}

impl fmt::Debug for PendingReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.inner {
            Inner::Ready(Some(_)) => "ready",
            Inner::Ready(None) => "taken",
            Inner::Remote(r) if r.is_done() => "ready",
            Inner::Remote(_) => "in flight",
        };
        f.debug_struct("PendingReply")
            .field("state", &state)
            .finish()
    }
}

impl PendingReply {
    /// A reply that is already known: what an invoker that cannot defer
    /// returns after running the request at once.
    pub fn ready(outcome: Result<ReplyMessage, SystemException>) -> Self {
        PendingReply {
            inner: Inner::Ready(Some(outcome)),
        }
    }

    /// Looks for the reply without blocking: reads what has arrived on the
    /// connection if no other thread is reading it. Returns the outcome
    /// once, when it is there; `None` while it is not (and after it was
    /// taken).
    pub fn poll(
        &mut self,
        request: &OutgoingRequest<'_>,
    ) -> Option<Result<ReplyMessage, SystemException>> {
        match &mut self.inner {
            Inner::Ready(outcome) => outcome.take(),
            Inner::Remote(remote) => {
                remote.poll(request);
                remote.take()
            }
        }
    }

    /// Waits for the reply (no longer than the call timeout, counted from
    /// the send). BAD_INV_ORDER (`minor::RESPONSE_ALREADY_RETRIEVED`)
    /// once the outcome has been taken.
    pub fn wait(&mut self, request: &OutgoingRequest<'_>) -> Result<ReplyMessage, SystemException> {
        let outcome = match &mut self.inner {
            Inner::Ready(outcome) => outcome.take(),
            Inner::Remote(remote) => {
                remote.wait(request, WaitFor::Reply);
                remote.take()
            }
        };
        outcome.unwrap_or_else(|| {
            Err(SystemException::bad_inv_order(
                minor::RESPONSE_ALREADY_RETRIEVED,
                CompletionStatus::No,
            ))
        })
    }

    /// Waits until the reply is there, until some other reply arrives on
    /// the same connection, or until `until` passes (whichever comes
    /// first); reads the connection meanwhile if no other thread does.
    /// The outcome, if it is there, is left for [`poll`](Self::poll).
    pub(crate) fn wait_for_activity(
        &mut self,
        request: &OutgoingRequest<'_>,
        until: Option<Instant>,
    ) {
        if let Inner::Remote(remote) = &mut self.inner {
            remote.wait(request, WaitFor::Activity(until));
        }
    }

    /// Takes in what the reply's dispatcher received, if anything, without
    /// reading the connection: moves on (sending again when a forward or an
    /// orderly close says so) and returns the outcome once it is known.
    /// What AMI futures and callbacks call when they are told.
    pub(crate) fn settle(
        &mut self,
        request: &OutgoingRequest<'_>,
    ) -> Option<Result<ReplyMessage, SystemException>> {
        match &mut self.inner {
            Inner::Ready(outcome) => outcome.take(),
            Inner::Remote(remote) => {
                remote.advance(request);
                remote.take()
            }
        }
    }

    /// The error of a request that failed before it was ever sent (no
    /// connection, the ORB shut down, its deadline passed under
    /// back-pressure); `None` otherwise (its outcome stays to be taken).
    pub(crate) fn failed_before_sending(&mut self) -> Option<SystemException> {
        let Inner::Remote(remote) = &mut self.inner else {
            return None;
        };
        if remote.sent_once || !remote.is_done() {
            return None;
        }
        match remote.take() {
            Some(Err(e)) => Some(e),
            other => {
                remote.flight = match other {
                    Some(outcome) => Flight::Done(outcome),
                    None => Flight::Taken,
                };
                None
            }
        }
    }

    /// Delivers an AMI callback's outcome where the ORB's concurrency model
    /// says (see `OrbCore::deliver`); at once when no ORB carries the
    /// request.
    pub(crate) fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        match &self.inner {
            Inner::Remote(remote) => remote.core.deliver(work),
            Inner::Ready(_) => work(),
        }
    }

    /// Registers who to tell once the request in flight has its outcome
    /// (see [`settle`](Self::settle)); gives `notify` back when the outcome
    /// is there already (or was taken), for the caller to act on at once.
    pub(crate) fn on_ready(&mut self, notify: Notify) -> Option<Notify> {
        match &mut self.inner {
            Inner::Remote(remote) => match &remote.flight {
                Flight::Sent { slot, .. } => slot.on_ready(notify),
                Flight::Done(_) | Flight::Taken => Some(notify),
            },
            Inner::Ready(_) => Some(notify),
        }
    }
}

/// How long [`RemoteDeferred::wait`] waits.
#[derive(Debug, Clone, Copy)]
enum WaitFor {
    /// Until the outcome is there (or the deadline passes).
    Reply,
    /// Until the outcome is there, another reply arrives on the same
    /// connection, or the `Instant` (or the deadline) passes.
    Activity(Option<Instant>),
}

/// A request in flight through an ORB, or its outcome.
pub(crate) struct RemoteDeferred {
    core: Arc<OrbCore>,
    progress: Progress,
    deadline: Option<Instant>,
    flight: Flight,
    /// Whether nobody reads the connection for this request (an AMI
    /// future or callback): an ORB thread must.
    asynchronous: bool,
    /// Whether it was ever sent whole.
    sent_once: bool,
}

enum Flight {
    /// Sent; its reply goes to `slot`.
    Sent { sent: Sent, slot: Arc<DeferredSlot> },
    /// The outcome, not taken yet.
    Done(Result<ReplyMessage, SystemException>),
    /// The outcome has been taken.
    Taken,
}

impl Drop for RemoteDeferred {
    /// A request nobody will collect: its reply, should it come, is
    /// dropped.
    fn drop(&mut self) {
        if let Flight::Sent { sent, .. } = &self.flight {
            sent.conn.unbind(sent.id);
        }
    }
}

impl RemoteDeferred {
    /// Sends `request` to `target` through `core`. With `asynchronous`,
    /// its owner does not read the connection (an AMI future or callback):
    /// an ORB thread reads it while the request is outstanding.
    pub(crate) fn send(
        core: Arc<OrbCore>,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        asynchronous: bool,
    ) -> PendingReply {
        let deadline = core.deadline_for(request);
        let mut remote = RemoteDeferred {
            core,
            progress: Progress::new(target),
            deadline,
            flight: Flight::Taken,
            asynchronous,
            sent_once: false,
        };
        remote.launch(request);
        PendingReply {
            inner: Inner::Remote(Box::new(remote)),
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.flight, Flight::Done(_))
    }

    /// Sends the request (again) to where `progress` says, until it is on
    /// its way or has an outcome.
    fn launch(&mut self, request: &OutgoingRequest<'_>) {
        self.flight = loop {
            if self.core.shut_down.load(Ordering::SeqCst) {
                break Flight::Done(Err(SystemException::bad_inv_order(
                    minor::ORB_SHUT_DOWN,
                    CompletionStatus::No,
                )));
            }
            if self.deadline.is_some_and(|d| d <= Instant::now()) {
                break Flight::Done(Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                )));
            }
            let slot = Arc::new(DeferredSlot::new(self.asynchronous));
            let attempt = match self.core.send_once(
                &self.progress.target,
                request,
                self.progress.addressing,
                self.deadline,
                slot.dispatcher(),
            ) {
                Err(e) => break Flight::Done(Err(e)),
                Ok(Ok(sent)) => {
                    self.sent_once = true;
                    if self.asynchronous {
                        self.core.read_for_asynchronous(&sent.conn);
                    }
                    break Flight::Sent { sent, slot };
                }
                Ok(Err(attempt)) => attempt,
            };
            if let Some(flight) = self.conclude(Ok(attempt)) {
                break flight;
            }
        };
    }

    /// What an attempt's result means: the final flight state, or `None`
    /// when the request must be sent again.
    fn conclude(&mut self, attempt: Result<Attempt, SystemException>) -> Option<Flight> {
        let outcome = attempt.and_then(|a| self.progress.after(a, self.core.config.max_forwards));
        match outcome {
            Err(e) => Some(Flight::Done(Err(e))),
            Ok(None) => None,
            Ok(Some(reply)) => {
                Some(Flight::Done(reply.ok_or_else(|| {
                    SystemException::internal(0, CompletionStatus::Maybe)
                })))
            }
        }
    }

    /// Takes the outcome out of the slot, once dispatched, and moves on
    /// (sending again when the reply says so).
    fn advance(&mut self, request: &OutgoingRequest<'_>) {
        let Flight::Sent { sent, slot } = &self.flight else {
            return;
        };
        let Some(awaited) = slot.take() else {
            return;
        };
        let attempt = self.core.finish(sent, awaited, true);
        match self.conclude(attempt) {
            Some(flight) => self.flight = flight,
            None => self.launch(request),
        }
    }

    fn poll(&mut self, request: &OutgoingRequest<'_>) {
        if let Flight::Sent { sent, .. } = &self.flight {
            sent.conn.poll();
        }
        self.advance(request);
    }

    /// Waits for the outcome, or for less (see [`WaitFor`]).
    fn wait(&mut self, request: &OutgoingRequest<'_>, wait_for: WaitFor) {
        let activity = matches!(wait_for, WaitFor::Activity(_));
        while let Flight::Sent { sent, slot } = &self.flight {
            let conn = sent.conn.clone();
            let id = sent.id;
            let slot = slot.clone();
            let until = match wait_for {
                WaitFor::Activity(Some(until)) => {
                    Some(self.deadline.map_or(until, |d| d.min(until)))
                }
                _ => self.deadline,
            };
            let mut start = None;
            let done = conn.wait_until(until, |state| {
                let delivered = *start.get_or_insert(state.delivered());
                slot.is_ready() || (activity && state.delivered() != delivered)
            });
            let expired = self.deadline.is_some_and(|d| d <= Instant::now());
            if !done && expired {
                conn.time_out(id);
            }
            self.advance(request);
            if activity {
                return;
            }
        }
    }

    fn take(&mut self) -> Option<Result<ReplyMessage, SystemException>> {
        match std::mem::replace(&mut self.flight, Flight::Taken) {
            Flight::Done(outcome) => Some(outcome),
            other => {
                self.flight = other;
                None
            }
        }
    }
}
