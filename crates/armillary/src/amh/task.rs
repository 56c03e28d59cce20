//! The future behind [`ResponseHandler::answer_when`]: polled first on the
//! thread that spawns it, then, each time it is woken, on a thread of the
//! request's task queue (the server's reactor). One poll at a time; a
//! wake that comes during a poll makes that poll go round again, so none
//! is lost. No executor, no thread of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use parking_lot::Mutex;

use super::ResponseHandler;
use crate::task_queue::TaskQueue;

/// Starts driving `future`; `answer` gets `handler` and its output.
pub(super) fn spawn<F, A>(
    handler: ResponseHandler,
    tasks: Option<Arc<dyn TaskQueue>>,
    future: F,
    answer: A,
) where
    F: Future + Send + 'static,
    A: FnOnce(ResponseHandler, F::Output) + Send + 'static,
{
    let task = Arc::new(HandlerTask {
        slot: Mutex::new(Slot {
            future: Some(Box::pin(future)),
            handler: Some(handler),
            answer: Some(answer),
        }),
        woken: AtomicBool::new(true),
        tasks,
    });
    task.run();
}

/// One asynchronous operation in progress.
struct HandlerTask<F: Future, A> {
    slot: Mutex<Slot<F, A>>,
    /// Woken since its last poll began (or queued to be polled).
    woken: AtomicBool,
    tasks: Option<Arc<dyn TaskQueue>>,
}

/// What a poll needs; emptied when the future completes (or panics).
struct Slot<F: Future, A> {
    future: Option<Pin<Box<F>>>,
    handler: Option<ResponseHandler>,
    answer: Option<A>,
}

impl<F, A> HandlerTask<F, A>
where
    F: Future + Send + 'static,
    A: FnOnce(ResponseHandler, F::Output) + Send + 'static,
{
    /// Polls while woken, unless another thread is polling (it goes round
    /// again for this wake).
    fn run(self: &Arc<Self>) {
        loop {
            let Some(mut slot) = self.slot.try_lock() else {
                return;
            };
            self.woken.store(false, Ordering::SeqCst);
            if poll(self, &mut slot).is_ready() {
                return;
            }
            drop(slot);
            if !self.woken.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}

/// Polls the future once; when it is done (or panicked), answers.
fn poll<F, A>(task: &Arc<HandlerTask<F, A>>, slot: &mut Slot<F, A>) -> Poll<()>
where
    F: Future + Send + 'static,
    A: FnOnce(ResponseHandler, F::Output) + Send + 'static,
{
    let Some(future) = slot.future.as_mut() else {
        return Poll::Ready(());
    };
    let waker = Waker::from(task.clone());
    let mut cx = Context::from_waker(&waker);
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        future.as_mut().poll(&mut cx)
    }));
    let output = match polled {
        Ok(Poll::Pending) => return Poll::Pending,
        Ok(Poll::Ready(output)) => Some(output),
        Err(panic) => {
            crate::trace::servant_panicked(Some(&*panic));
            None
        }
    };
    slot.future = None;
    let (Some(handler), Some(answer)) = (slot.handler.take(), slot.answer.take()) else {
        return Poll::Ready(());
    };
    match output {
        Some(output) => {
            // The generated answer encodes the output; a panic there is
            // the servant's too (the handler answers UNKNOWN as it
            // unwinds).
            let _ =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(handler, output)));
        }
        None => handler.raise_system(&SystemException::unknown(
            minor::SERVANT_PANICKED,
            CompletionStatus::Maybe,
        )),
    }
    Poll::Ready(())
}

impl<F, A> Wake for HandlerTask<F, A>
where
    F: Future + Send + 'static,
    A: FnOnce(ResponseHandler, F::Output) + Send + 'static,
{
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.woken.swap(true, Ordering::SeqCst) {
            // Queued already, or a poll in progress goes round again.
            return;
        }
        match &self.tasks {
            Some(tasks) => {
                let task = self.clone();
                tasks.run_later(Box::new(move || task.run()));
            }
            // No queue (a request answered in-process): poll here.
            None => self.run(),
        }
    }
}
