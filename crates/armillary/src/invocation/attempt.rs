//! What one attempt at a request comes to ([`Attempt`]), what was sent
//! ([`Sent`]), and how many more attempts a call may make ([`Progress`]:
//! forwards followed, re-sends after an orderly close).

use std::borrow::Cow;
use std::sync::Arc;

use armillary_giop::cdr::codeset::CodeSets;
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

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
}

/// Where a request goes next: its target (which forwards change), its
/// addressing disposition, and the forwards and retries spent so far.
pub(crate) struct Progress<'a> {
    /// The reference the next attempt goes to: the call's own (borrowed,
    /// so that a synchronous call copies no IOR), or one it was forwarded
    /// to.
    pub(crate) target: Cow<'a, Ior>,
    pub(crate) addressing: i16,
    forwards: u32,
    retries: u32,
}

impl<'a> Progress<'a> {
    pub(crate) fn new(target: &'a Ior) -> Self {
        Progress {
            target: Cow::Borrowed(target),
            addressing: 0,
            forwards: 0,
            retries: 0,
        }
    }

    /// Takes in what an attempt came to: the reply (`Some`) when the call
    /// is done, `None` when it must be sent again (re-addressed, forwarded,
    /// or refused by an orderly close), an error when it cannot be.
    /// The progress of a call that outlives `target` (deferred and
    /// asynchronous requests).
    pub(crate) fn owned(target: &Ior) -> Progress<'static> {
        Progress {
            target: Cow::Owned(target.clone()),
            addressing: 0,
            forwards: 0,
            retries: 0,
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
                self.target = Cow::Owned(to);
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
