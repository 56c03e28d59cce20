//! What one attempt at a request comes to ([`Attempt`]), what was sent
//! ([`Sent`]), and how many more attempts a call may make ([`Progress`]:
//! forwards followed, re-sends after an orderly close).

use std::borrow::Cow;
use std::sync::Arc;

use armillary_giop::cdr::codeset::CodeSets;
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};

use crate::object::ReplyMessage;
use crate::transport::client::ClientConnection;

/// What one attempt at a request came to.
pub(crate) enum Attempt {
    Done(Option<ReplyMessage>),
    Forward(Ior),
    /// The server wants another addressing disposition.
    Readdress(i16),
    Retry,
}

/// A request sent on a connection, its reply awaited.
pub(crate) struct Sent {
    pub(crate) conn: Arc<ClientConnection>,
    pub(crate) id: u32,
    /// The connection's code sets, which the reply is read with.
    pub(crate) codesets: CodeSets,
    /// The attempt's interception, when the call is intercepted: its
    /// ending point runs when the attempt is concluded.
    pub(crate) interception: Option<Box<crate::interceptors::ClientInterception>>,
    /// The attempt's span (`crate::trace`; disabled when nobody wants it),
    /// which learns its outcome when it is concluded.
    pub(crate) span: tracing::Span,
}

/// Where a request goes next: its target (which forwards change), its
/// addressing disposition, and the forwards and retries spent so far.
///
/// When the reference a call was forwarded to cannot be reached (the
/// attempt failed before the server could run it: TRANSIENT or
/// COMM_FAILURE, COMPLETED_NO), the call starts again at its own
/// reference, as GIOP's object location asks ("restart the location
/// process using the original address", CORBA 3.0 §15.6), so that a
/// locator forwards it anew ([`fall_back`](Self::fall_back)).
pub(crate) struct Progress<'a> {
    /// The call's own reference (borrowed, so that a synchronous call
    /// copies no IOR).
    original: Cow<'a, Ior>,
    /// The reference the call was last forwarded to, while it goes there.
    forwarded: Option<Ior>,
    pub(crate) addressing: i16,
    forwards: u32,
    retries: u32,
    fallbacks: u32,
}

/// At most this many returns to the original reference after failures
/// at forwarded ones, in one call (each return may be forwarded again,
/// which the forward limit bounds too).
const MAX_FALLBACKS: u32 = 8;

impl<'a> Progress<'a> {
    pub(crate) fn new(target: &'a Ior) -> Self {
        Progress {
            original: Cow::Borrowed(target),
            forwarded: None,
            addressing: 0,
            forwards: 0,
            retries: 0,
            fallbacks: 0,
        }
    }

    /// The reference the next attempt goes to: the call's own, or the one
    /// it was forwarded to.
    pub(crate) fn target(&self) -> &Ior {
        self.forwarded.as_ref().unwrap_or(&self.original)
    }

    /// After an attempt that failed with `error`: true when the call goes
    /// back to its own reference and is sent again (it had been forwarded,
    /// and the forwarded reference could not be reached before the server
    /// could run the request), false when `error` ends the call.
    pub(crate) fn fall_back(&mut self, error: &SystemException) -> bool {
        let unreachable = matches!(
            error.kind(),
            SystemExceptionKind::Transient | SystemExceptionKind::CommFailure
        ) && error.completed() == CompletionStatus::No;
        if self.forwarded.is_none() || !unreachable || self.fallbacks >= MAX_FALLBACKS {
            return false;
        }
        self.fallbacks += 1;
        self.forwarded = None;
        self.addressing = 0;
        true
    }

    /// Takes in what an attempt came to: the reply (`Some`) when the call
    /// is done, `None` when it must be sent again (re-addressed, forwarded,
    /// or refused by an orderly close), an error when it cannot be.
    /// The progress of a call that outlives `target` (deferred and
    /// asynchronous requests).
    pub(crate) fn owned(target: &Ior) -> Progress<'static> {
        Progress {
            original: Cow::Owned(target.clone()),
            forwarded: None,
            addressing: 0,
            forwards: 0,
            retries: 0,
            fallbacks: 0,
        }
    }

    pub(crate) fn after(
        &mut self,
        attempt: Attempt,
        max_forwards: u32,
    ) -> Result<Option<Option<ReplyMessage>>, SystemException> {
        match attempt {
            Attempt::Readdress(wanted) => {
                if wanted == self.addressing || !(0..=2).contains(&wanted) {
                    return Err(SystemException::marshal(
                        minor::MALFORMED,
                        CompletionStatus::No,
                    ));
                }
                self.addressing = wanted;
            }
            Attempt::Done(reply) => return Ok(Some(reply)),
            Attempt::Forward(to) => {
                self.forwards += 1;
                if self.forwards > max_forwards {
                    return Err(SystemException::transient(
                        minor::FORWARD_LIMIT,
                        CompletionStatus::No,
                    ));
                }
                self.forwarded = Some(to);
            }
            Attempt::Retry => {
                self.retries += 1;
                if self.retries > 3 {
                    return Err(SystemException::transient(
                        minor::CONNECT_FAILED,
                        CompletionStatus::No,
                    ));
                }
            }
        }
        Ok(None)
    }
}

/// What an attempt came to, as its span says it (`crate::trace`).
pub(crate) fn trace_outcome(
    attempt: &Result<Attempt, SystemException>,
) -> (crate::trace::Outcome, Option<&SystemException>) {
    use crate::object::ReplyOutcome;
    use crate::trace::Outcome;
    let outcome = match attempt {
        Ok(Attempt::Done(Some(reply))) => match reply.outcome {
            ReplyOutcome::Normal => Outcome::Normal,
            ReplyOutcome::UserException => Outcome::UserException,
        },
        Ok(Attempt::Done(None)) => Outcome::Normal,
        Ok(Attempt::Forward(_)) => Outcome::LocationForward,
        Ok(Attempt::Readdress(_)) => Outcome::NeedsAddressingMode,
        Ok(Attempt::Retry) => Outcome::Resent,
        Err(e) => return (Outcome::SystemException, Some(e)),
    };
    (outcome, None)
}
