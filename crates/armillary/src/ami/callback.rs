//! The callback form: the continuation behind
//! [`ObjectRef::send_callback`](crate::ObjectRef::send_callback) (a
//! generated `sendc_<op>`), and [`CallbackQueue`], where callbacks wait for
//! an application thread under
//! [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads).
//!
//! The continuation owns the request (to send it again), the reply decoder
//! and the delivery closure. It is registered on the request's reply
//! dispatcher; the thread that reads the reply gets it back and runs it
//! once it has let go of the connection: it settles the reply (a forward
//! or re-send goes out from there and registers the continuation again),
//! decodes it, and delivers the outcome where the ORB's concurrency model
//! says.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use armillary_giop::cdr::{CdrError, CdrReader};
use armillary_giop::system_exception::{CompletionStatus, SystemException};
use parking_lot::{Condvar, Mutex};

use super::{ExceptionHolder, OwnedRequest, UserExceptionSet};
use crate::object::{Invoker, ReplyMessage, ReplyOutcome};
use crate::pending::PendingReply;
use crate::transport::reply::callback::Notify;

/// A normal reply's decoder, as `sendc_<op>` passes it.
type ResultDecoder<R> = Box<dyn FnMut(&mut CdrReader<'_>) -> Result<R, CdrError> + Send>;
/// Where a callback's outcome goes (a reply handler's `<op>` or
/// `<op>_excep`).
type Delivery<R, E> = Box<dyn FnOnce(Result<R, ExceptionHolder<E>>) + Send>;

/// An AMI callback request in flight.
pub(crate) struct CallbackCall<R, E> {
    request: OwnedRequest,
    pending: PendingReply,
    invoker: Arc<dyn Invoker>,
    result: ResultDecoder<R>,
    deliver: Delivery<R, E>,
}

impl<R: Send + 'static, E: UserExceptionSet> CallbackCall<R, E> {
    pub(crate) fn new(
        request: OwnedRequest,
        pending: PendingReply,
        invoker: Arc<dyn Invoker>,
        result: ResultDecoder<R>,
        deliver: Delivery<R, E>,
    ) -> Self {
        CallbackCall {
            request,
            pending,
            invoker,
            result,
            deliver,
        }
    }

    /// Moves the call on: delivers its outcome if it is known, otherwise
    /// registers itself to run again when its reply dispatcher is filled.
    pub(crate) fn step(self) {
        let mut call = self;
        loop {
            if let Some(outcome) = call.pending.settle(&call.request.get()) {
                call.finish(outcome);
                return;
            }
            // The continuation owns the call until it runs; the slot keeps
            // the continuation until its dispatcher is filled. The call is
            // stored (and its lock held) before the continuation can run,
            // so a reply dispatched meanwhile waits for this to finish.
            let shared = Arc::new(Mutex::new(None::<Self>));
            let again = shared.clone();
            let notify = Notify::Continue(Box::new(move || {
                let next = again.lock().take();
                if let Some(call) = next {
                    call.step();
                }
            }));
            let mut stored = shared.lock();
            let waiting = stored.insert(call).pending.on_ready(notify).is_none();
            if waiting {
                return;
            }
            // Filled meanwhile: settle it on this thread.
            let Some(next) = stored.take() else {
                return;
            };
            call = next;
        }
    }

    /// Decodes the outcome and hands it to the delivery closure, where the
    /// ORB's concurrency model says.
    fn finish(self, outcome: Result<ReplyMessage, SystemException>) {
        let CallbackCall {
            pending,
            invoker,
            mut result,
            deliver,
            ..
        } = self;
        let value = match outcome {
            Err(e) => Err(ExceptionHolder::from_system_exception(&e)),
            Ok(reply) => match reply.outcome {
                ReplyOutcome::UserException => {
                    Err(ExceptionHolder::from_user_exception_reply(&reply))
                }
                ReplyOutcome::Normal => crate::object::decode_reply(&invoker, &reply, |body| {
                    match body {
                        crate::object::ReplyBody::Result(r) => Ok(Ok(result(r)?)),
                        // Not reached: the outcome says Normal.
                        crate::object::ReplyBody::UserException { .. } => {
                            Ok(Err(SystemException::internal(0, CompletionStatus::Yes)))
                        }
                    }
                })
                .map_err(|e: SystemException| ExceptionHolder::from_system_exception(&e)),
            },
        };
        pending.deliver(Box::new(move || deliver(value)));
    }
}

/// AMI callbacks waiting for an application thread to run them
/// ([`Orb::run`](crate::Orb::run), [`Orb::perform_work`](crate::Orb::perform_work)).
#[derive(Default)]
pub(crate) struct CallbackQueue {
    work: Mutex<VecDeque<Box<dyn FnOnce() + Send>>>,
    ready: Condvar,
}

impl fmt::Debug for CallbackQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackQueue")
            .field("queued", &self.work.lock().len())
            .finish()
    }
}

impl CallbackQueue {
    /// Queues a callback; true if none waited before it (a thread that
    /// runs them may need waking: one that found some runs them all).
    pub(crate) fn push(&self, work: Box<dyn FnOnce() + Send>) -> bool {
        let mut queue = self.work.lock();
        let first = queue.is_empty();
        queue.push_back(work);
        drop(queue);
        self.ready.notify_one();
        first
    }

    /// Whether no callback waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.work.lock().is_empty()
    }

    /// Runs the oldest callback, waiting up to `wait` for one; true if one
    /// ran.
    pub(crate) fn run_one(&self, wait: Duration) -> bool {
        let next = {
            let mut work = self.work.lock();
            if work.is_empty() && !wait.is_zero() {
                self.ready.wait_for(&mut work, wait);
            }
            work.pop_front()
        };
        match next {
            Some(work) => {
                work();
                true
            }
            None => false,
        }
    }

    /// Runs every callback queued now (not those they queue).
    pub(crate) fn run_ready(&self) {
        let ready = std::mem::take(&mut *self.work.lock());
        for work in ready {
            work();
        }
    }
}
