//! The future form: [`ReplyFuture`], what `<op>_async` returns. The request
//! is sent when the future is made; the reading thread wakes the task when
//! the reply arrives, and the future's `poll` decodes it (and sends the
//! request again when a forward or an orderly close says so). Any executor
//! drives it; the ORB spawns nothing per call.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use super::poller::Decoder;
use super::OwnedRequest;
use crate::object::{decode_reply, Invoker};
use crate::pending::PendingReply;
use crate::transport::reply::callback::Notify;

/// The reply to an operation sent with
/// [`ObjectRef::send_future`](crate::ObjectRef::send_future) (a generated
/// `<op>_async`): a [`Future`] of the operation's `Result`, usable from any
/// executor (tokio, async-std, smol, `futures::executor`).
///
/// The call timeout applies from the send: past it the future is ready
/// with TIMEOUT. Dropping it unbinds its reply dispatcher. Polled again
/// after it gave its outcome, it gives BAD_INV_ORDER
/// ([`minor::RESPONSE_ALREADY_RETRIEVED`]).
#[must_use = "the reply is only collected when the future is awaited"]
pub struct ReplyFuture<R, E> {
    request: OwnedRequest,
    pending: PendingReply,
    invoker: Arc<dyn Invoker>,
    decode: Option<Decoder<R, E>>,
}

impl<R, E> fmt::Debug for ReplyFuture<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyFuture")
            .field("operation", &self.request.operation)
            .field("done", &self.decode.is_none())
            .finish_non_exhaustive()
    }
}

impl<R, E> ReplyFuture<R, E> {
    pub(crate) fn new(
        request: OwnedRequest,
        pending: PendingReply,
        invoker: Arc<dyn Invoker>,
        decode: Decoder<R, E>,
    ) -> Self {
        ReplyFuture {
            request,
            pending,
            invoker,
            decode: Some(decode),
        }
    }
}

impl<R, E: From<SystemException>> Future for ReplyFuture<R, E> {
    type Output = Result<R, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(decode) = this.decode.take() else {
            return Poll::Ready(Err(SystemException::bad_inv_order(
                minor::RESPONSE_ALREADY_RETRIEVED,
                CompletionStatus::No,
            )
            .into()));
        };
        loop {
            if let Some(outcome) = this.pending.settle(&this.request.get()) {
                return Poll::Ready(match outcome {
                    Ok(reply) => decode_reply(&this.invoker, &reply, decode),
                    Err(e) => Err(e.into()),
                });
            }
            // Register, then look again: the reply may have come between.
            if this
                .pending
                .on_ready(Notify::Waker(cx.waker().clone()))
                .is_none()
            {
                this.decode = Some(decode);
                // A servant awaiting this inside an upcall: the replies
                // its thread holds go out before it may block.
                crate::thread_role::write_held_replies();
                return Poll::Pending;
            }
        }
    }
}
