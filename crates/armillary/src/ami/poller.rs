//! The polling model: [`Poller`], what `sendp_<op>` returns. The owner
//! collects the reply when it likes; while it waits (or polls) it reads the
//! connection itself when no other thread does, so a poller needs no ORB
//! thread.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::cdr::CdrError;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use super::OwnedRequest;
use crate::object::{decode_reply, Invoker, ReplyBody, ReplyMessage};
use crate::pending::PendingReply;

/// A reply decoder as stubs write it (the shape of
/// [`ObjectRef::invoke`](crate::ObjectRef::invoke)'s `result`).
pub(crate) type Decoder<R, E> =
    Box<dyn FnMut(ReplyBody<'_, '_>) -> Result<Result<R, E>, CdrError> + Send>;

/// The reply to an operation sent with
/// [`ObjectRef::send_poller`](crate::ObjectRef::send_poller) (a generated
/// `sendp_<op>`), collected when its owner likes: CORBA's polling model.
///
/// `R` is the operation's result (return value and out parameters), `E` its
/// error (the operation's user exceptions and
/// [`SystemException`]). Dropping the poller unbinds its reply dispatcher:
/// the reply, should it come, is dropped.
pub struct Poller<R, E> {
    request: OwnedRequest,
    pending: PendingReply,
    invoker: Arc<dyn Invoker>,
    decode: Option<Decoder<R, E>>,
    /// The outcome, once collected and until taken.
    outcome: Option<Result<ReplyMessage, SystemException>>,
    taken: bool,
    _result: PhantomData<fn() -> (R, E)>,
}

impl<R, E> fmt::Debug for Poller<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Poller")
            .field("operation", &self.request.operation)
            .field("ready", &self.outcome.is_some())
            .field("taken", &self.taken)
            .finish_non_exhaustive()
    }
}

impl<R, E: From<SystemException>> Poller<R, E> {
    pub(crate) fn new(
        request: OwnedRequest,
        pending: PendingReply,
        invoker: Arc<dyn Invoker>,
        decode: Decoder<R, E>,
    ) -> Self {
        Poller {
            request,
            pending,
            invoker,
            decode: Some(decode),
            outcome: None,
            taken: false,
            _result: PhantomData,
        }
    }

    /// Whether the outcome is there (or was taken already). Never blocks:
    /// reads what has arrived on the connection if no other thread is
    /// reading it, and ends the request if its call timeout has passed.
    pub fn is_ready(&mut self) -> bool {
        if self.outcome.is_none() && !self.taken {
            self.outcome = self.pending.poll(&self.request.get());
        }
        self.outcome.is_some() || self.taken
    }

    /// Waits up to `timeout` for the outcome (never past the call
    /// timeout: then the outcome is TIMEOUT, and ready); true once it is
    /// ready. Reads the connection meanwhile if no other thread does.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let until = Instant::now().checked_add(timeout);
        loop {
            if self.is_ready() {
                return true;
            }
            if until.is_some_and(|u| u <= Instant::now()) {
                return false;
            }
            self.pending.wait_for_activity(&self.request.get(), until);
        }
    }

    /// The outcome, waiting for it if needed (no longer than the call
    /// timeout). Gives it once; afterwards BAD_INV_ORDER
    /// ([`minor::RESPONSE_ALREADY_RETRIEVED`]).
    pub fn take(&mut self) -> Result<R, E> {
        let (true, Some(decode)) = (!self.taken, self.decode.take()) else {
            return Err(SystemException::bad_inv_order(
                minor::RESPONSE_ALREADY_RETRIEVED,
                CompletionStatus::No,
            )
            .into());
        };
        let outcome = match self.outcome.take() {
            Some(outcome) => outcome,
            None => self.pending.wait(&self.request.get()),
        };
        self.taken = true;
        decode_reply(&self.invoker, &outcome?, decode)
    }
}
