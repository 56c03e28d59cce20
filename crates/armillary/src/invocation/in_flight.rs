//! The ORB's deferred requests: sent now through the invocation engine,
//! their replies collected later by whoever holds the [`PendingReply`]
//! (DII `send_deferred`, AMI pollers, futures and callbacks). Forwards,
//! re-addressing and the re-sending of a request an orderly close refused
//! happen when the reply is collected, as for a synchronous call; the call
//! timeout counts from the send.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use super::{Attempt, CallStart, Progress, Sent};
use crate::object::{OutgoingRequest, ReplyMessage};
use crate::orb::OrbCore;
use crate::pending::{InFlight, PendingReply, WaitFor};
use crate::transport::mux::Caller;
use crate::transport::reply::callback::Notify;
use crate::transport::reply::deferred::DeferredSlot;

/// A request in flight through an ORB, or its outcome.
pub(crate) struct RemoteDeferred {
    core: Arc<OrbCore>,
    progress: Progress<'static>,
    deadline: Option<Instant>,
    flight: Flight,
    /// Whether nobody reads the connection for this request (an AMI
    /// future or callback): an ORB thread must.
    asynchronous: bool,
    /// Whether it was ever sent whole.
    sent_once: bool,
    /// What its interceptors keep from its start, when it is intercepted.
    start: Option<CallStart>,
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
        let start = core.call_start(target);
        let mut remote = RemoteDeferred {
            core,
            start,
            progress: Progress::owned(target),
            deadline,
            flight: Flight::Taken,
            asynchronous,
            sent_once: false,
        };
        remote.launch(request);
        PendingReply::in_flight(Box::new(remote))
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
                self.progress.target(),
                request,
                (self.progress.addressing, Caller::Defers, self.deadline),
                slot.dispatcher(),
                self.start.as_ref(),
            ) {
                Err(e) if self.progress.fall_back(&e) => continue,
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
            Err(e) if self.progress.fall_back(&e) => None,
            Err(e) => Some(Flight::Done(Err(e))),
            Ok(None) => None,
            Ok(Some(reply)) => {
                Some(Flight::Done(reply.ok_or_else(|| {
                    SystemException::internal(0, CompletionStatus::Maybe)
                })))
            }
        }
    }
}

impl RemoteDeferred {
    /// The application polls for the reply (a poller, a DII deferred
    /// request): an intercepted request runs `send_poll`, and ends there
    /// if an interceptor raises.
    fn send_poll(&mut self, request: &OutgoingRequest<'_>) {
        let Flight::Sent { sent, .. } = &mut self.flight else {
            return;
        };
        let Some(interception) = sent.interception.as_mut() else {
            return;
        };
        let Err(outcome) = interception.send_poll() else {
            return;
        };
        // Its reply, should it come, is dropped.
        sent.conn.unbind(sent.id);
        let ended = sent.interception.take().map(|interception| {
            let attempt = self.core.attempt_of(outcome);
            self.core.end_attempt(interception, attempt, Vec::new())
        });
        let Some(attempt) = ended else {
            return;
        };
        self.flight = Flight::Taken;
        match self.conclude(attempt) {
            Some(flight) => self.flight = flight,
            None => self.launch(request),
        }
    }
}

impl InFlight for RemoteDeferred {
    /// Takes the outcome out of the slot, once dispatched, and moves on
    /// (sending again when the reply says so).
    fn advance(&mut self, request: &OutgoingRequest<'_>) {
        let Flight::Sent { sent, slot } = &mut self.flight else {
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
        self.send_poll(request);
        if let Flight::Sent { sent, .. } = &self.flight {
            sent.conn.poll();
        }
        self.advance(request);
    }

    fn wait(&mut self, request: &OutgoingRequest<'_>, wait_for: WaitFor) {
        self.send_poll(request);
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
            let done = self.core.wait_on(&conn, until, &mut |state| {
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

    fn is_done(&self) -> bool {
        matches!(self.flight, Flight::Done(_))
    }

    fn failed_before_sending(&mut self) -> Option<SystemException> {
        if self.sent_once || !self.is_done() {
            return None;
        }
        match self.take() {
            Some(Err(e)) => Some(e),
            other => {
                self.flight = match other {
                    Some(outcome) => Flight::Done(outcome),
                    None => Flight::Taken,
                };
                None
            }
        }
    }

    fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        self.core.deliver(work);
    }

    fn on_ready(&mut self, notify: Notify) -> Option<Notify> {
        match &self.flight {
            Flight::Sent { slot, .. } => slot.on_ready(notify),
            Flight::Done(_) | Flight::Taken => Some(notify),
        }
    }
}
