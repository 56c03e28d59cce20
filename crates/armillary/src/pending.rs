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
use std::time::Instant;

use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use crate::object::{OutgoingRequest, ReplyMessage};
use crate::transport::reply::callback::Notify;

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
    /// A request in flight through an invoker that defers
    /// (`invocation::deferred` for the ORB's connections).
    Remote(Box<dyn InFlight>),
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
        remote.failed_before_sending()
    }

    /// Delivers an AMI callback's outcome where the ORB's concurrency model
    /// says (see `OrbCore::deliver`); at once when no ORB carries the
    /// request.
    pub(crate) fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        match &self.inner {
            Inner::Remote(remote) => remote.deliver(work),
            Inner::Ready(_) => work(),
        }
    }

    /// Registers who to tell once the request in flight has its outcome
    /// (see [`settle`](Self::settle)); gives `notify` back when the outcome
    /// is there already (or was taken), for the caller to act on at once.
    pub(crate) fn on_ready(&mut self, notify: Notify) -> Option<Notify> {
        match &mut self.inner {
            Inner::Remote(remote) => remote.on_ready(notify),
            Inner::Ready(_) => Some(notify),
        }
    }
}

impl PendingReply {
    /// A request in flight through an invoker that defers.
    pub(crate) fn in_flight(remote: Box<dyn InFlight>) -> Self {
        PendingReply {
            inner: Inner::Remote(remote),
        }
    }
}

/// How long [`InFlight::wait`] waits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WaitFor {
    /// Until the outcome is there (or the deadline passes).
    Reply,
    /// Until the outcome is there, another reply arrives on the same
    /// connection, or the `Instant` (or the deadline) passes.
    Activity(Option<Instant>),
}

/// A request in flight through an invoker that defers, or its outcome:
/// what a [`PendingReply`] asks. The ORB's is
/// `invocation::deferred::RemoteDeferred`.
pub(crate) trait InFlight: Send {
    /// Reads what has arrived on the connection (if no other thread reads
    /// it) and moves on.
    fn poll(&mut self, request: &OutgoingRequest<'_>);

    /// Waits for the outcome, or for less (see [`WaitFor`]), reading the
    /// connection meanwhile if no other thread does.
    fn wait(&mut self, request: &OutgoingRequest<'_>, wait_for: WaitFor);

    /// Takes in what the reply's dispatcher received, without reading the
    /// connection, and moves on (sending again when a forward or an
    /// orderly close says so).
    fn advance(&mut self, request: &OutgoingRequest<'_>);

    /// The outcome, once: `None` before it is known and after it was taken.
    fn take(&mut self) -> Option<Result<ReplyMessage, SystemException>>;

    /// Whether the outcome is known and not taken.
    fn is_done(&self) -> bool;

    /// The error of a request that failed before it was ever sent, taken;
    /// `None` otherwise (the outcome stays to be taken).
    fn failed_before_sending(&mut self) -> Option<SystemException>;

    /// Delivers an AMI callback's outcome where the ORB's concurrency
    /// model says.
    fn deliver(&self, work: Box<dyn FnOnce() + Send>);

    /// Registers who to tell once the outcome is there; gives `notify`
    /// back when it is there already (or was taken).
    fn on_ready(&mut self, notify: Notify) -> Option<Notify>;
}
