//! Where the invocation engine calls the client's portable interceptors
//! (`crate::interceptors`): what a call keeps for them from its start
//! ([`CallStart`]), each attempt's `send_request`, and its ending point
//! from what the attempt came to. With no client interceptor registered
//! none of this runs (`call_start` is `None`).

use armillary_giop::any::Any;
use armillary_giop::giop::{ServiceContext, SyncScope};
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::SystemException;

use super::Attempt;
use crate::dii::Message;
use crate::interceptors::{ClientCall, ClientInterception, ClientOutcome};
use crate::object::{ObjectRef, OutgoingRequest, ReplyMessage, ReplyOutcome};
use crate::orb::OrbCore;

/// What an intercepted call keeps from its start for each of its
/// attempts: the reference it was made on, and the calling thread's
/// PICurrent slots then (a deferred call's later attempts may be sent
/// from another thread).
pub(crate) struct CallStart {
    origin: Ior,
    slots: Vec<Option<Any>>,
}

impl OrbCore {
    /// What a call to `target` starting now keeps for its interceptors;
    /// `None` (and nothing copied) when no client interceptor is
    /// registered.
    pub(crate) fn call_start(&self, target: &Ior) -> Option<CallStart> {
        if self.interceptors.client.is_empty() {
            return None;
        }
        Some(CallStart {
            origin: target.clone(),
            slots: self.interceptors.thread_slots(),
        })
    }

    /// A reference to `ior` carried by this ORB.
    fn reference_to(&self, ior: &Ior) -> ObjectRef {
        match self.me.upgrade() {
            Some(me) => ObjectRef::new(ior.clone(), me),
            None => ObjectRef::unbound(ior.clone()),
        }
    }

    /// Starts the interception of the attempt `id` at `request` on
    /// `target` and runs its `send_request`; `Err`: an interceptor ended
    /// the attempt there.
    pub(crate) fn intercept_send(
        &self,
        start: &CallStart,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        id: u32,
    ) -> (Box<ClientInterception>, Result<(), ClientOutcome>) {
        let call = ClientCall {
            request_id: id,
            operation: request.operation,
            response_expected: request.response_expected,
            sync_scope: if request.response_expected {
                SyncScope::WithTarget
            } else {
                request.sync_scope
            },
            target: self.reference_to(&start.origin),
            effective_target: self.reference_to(target),
            slots: start.slots.clone(),
            arguments: request
                .signature
                .map(|(arguments, result)| (arguments.clone(), result.clone())),
        };
        let mut interception = ClientInterception::new(&self.interceptors, call);
        let sent = interception.send_request();
        (interception, sent)
    }

    /// The attempt an outcome that a starting point ended an attempt with
    /// means (a system exception, or a forward).
    pub(crate) fn attempt_of(&self, outcome: ClientOutcome) -> Result<Attempt, SystemException> {
        match outcome {
            ClientOutcome::System(e) => Err(e),
            ClientOutcome::Forward(to) => Ok(Attempt::Forward(to.ior().clone())),
            ClientOutcome::Retry => Ok(Attempt::Retry),
            // Not what a starting point raises.
            ClientOutcome::Reply | ClientOutcome::UserException(_) | ClientOutcome::NoReply => {
                Ok(Attempt::Done(None))
            }
        }
    }

    /// Runs the ending point of `interception` for what the attempt came
    /// to (`reply_contexts`: its reply's service contexts) and returns
    /// what the attempt comes to after it: the same, unless an
    /// interceptor raised a system exception or a forward.
    pub(crate) fn end_attempt(
        &self,
        interception: Box<ClientInterception>,
        attempt: Result<Attempt, SystemException>,
        reply_contexts: Vec<ServiceContext>,
    ) -> Result<Attempt, SystemException> {
        let mut interception = interception;
        let outcome = match &attempt {
            Ok(Attempt::Done(Some(reply))) => match reply.outcome {
                ReplyOutcome::Normal => {
                    read_results(&mut interception, reply);
                    ClientOutcome::Reply
                }
                ReplyOutcome::UserException => {
                    ClientOutcome::UserException(reply.body().read_string().unwrap_or_default())
                }
            },
            Ok(Attempt::Done(None)) if interception.acknowledged() => ClientOutcome::Reply,
            Ok(Attempt::Done(None)) => ClientOutcome::NoReply,
            Ok(Attempt::Forward(to)) => ClientOutcome::Forward(self.reference_to(to)),
            Ok(Attempt::Readdress(_) | Attempt::Retry) => ClientOutcome::Retry,
            Err(e) => ClientOutcome::System(e.clone()),
        };
        match interception.conclude(outcome, reply_contexts) {
            ClientOutcome::System(e) => Err(e),
            ClientOutcome::Forward(to) => Ok(Attempt::Forward(to.ior().clone())),
            // Unchanged: interceptors raise only exceptions and forwards.
            ClientOutcome::Reply
            | ClientOutcome::UserException(_)
            | ClientOutcome::Retry
            | ClientOutcome::NoReply => attempt,
        }
    }
}

/// A dynamic request's result and returned arguments, read from its
/// normal `reply` for its interceptors (left unknown if they do not read:
/// the request itself reports that).
fn read_results(interception: &mut ClientInterception, reply: &ReplyMessage) {
    let Some((arguments, result_type)) = interception.signature() else {
        return;
    };
    let read = reply.body().decode_whole(|body| {
        let result = Any::decode_as(result_type, body)?;
        let mut returned = arguments.clone();
        returned.read_values(body, Message::Reply)?;
        Ok((result, returned))
    });
    if let Ok((result, returned)) = read {
        interception.set_results(result, returned);
    }
}
