//! The future form of `echo_longlong`, and the little executor the
//! future forms run on (the ORB needs none of its own).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use armillary::ami::ReplyFuture;
use armillary::giop::cdr::CdrError;
use armillary::giop::system_exception::CompletionStatus;
use armillary::runtime::ReplyBody;
use armillary::SystemException;

use super::{check, Everything};

fn write_arg(v: i64) -> impl Fn(&mut armillary::giop::cdr::CdrWriter) -> Result<(), CdrError> {
    move |w| {
        w.write_longlong(v);
        Ok(())
    }
}

fn decode(reply: ReplyBody<'_, '_>) -> Result<Result<i64, SystemException>, CdrError> {
    match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_longlong()?)),
        // echo_longlong declares no user exception.
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    }
}

/// `echo_longlong(v)` as a future (what a generated
/// `echo_longlong_async` returns).
pub(super) fn echo_async(echo: &Everything, v: i64) -> ReplyFuture<i64, SystemException> {
    echo.as_object()
        .send_future("echo_longlong", write_arg(v), decode)
}

/// Wakes a thread blocked in [`block_on`] or [`run_window`], noting
/// which future asked.
struct Unpark {
    thread: Thread,
    index: usize,
    woken: Arc<Mutex<Vec<usize>>>,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.woken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(self.index);
        self.thread.unpark();
    }
}

fn waker(index: usize, woken: &Arc<Mutex<Vec<usize>>>) -> Waker {
    Waker::from(Arc::new(Unpark {
        thread: std::thread::current(),
        index,
        woken: Arc::clone(woken),
    }))
}

/// Runs `future` to completion on this thread.
pub(super) fn block_on<F: Future + Unpin>(mut future: F) -> F::Output {
    let woken = Arc::new(Mutex::new(Vec::new()));
    let waker = waker(0, &woken);
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = Pin::new(&mut future).poll(&mut cx) {
            return out;
        }
        // A wake before the park makes the park return at once.
        std::thread::park();
    }
}

/// Calls `start(0)`, `start(1)`, … `start(calls - 1)`, keeping up to
/// `in_flight` of their futures pending at once, on this thread; each
/// value is checked against its argument. Returns the sum of the
/// values.
pub(super) fn run_window<F>(
    calls: usize,
    in_flight: usize,
    mut start: impl FnMut(i64) -> F,
) -> Result<i64, String>
where
    F: Future<Output = Result<i64, SystemException>> + Unpin,
{
    let woken = Arc::new(Mutex::new(Vec::new()));
    let slots = in_flight.min(calls).max(1);
    let mut pending: Vec<Option<(i64, F, Waker)>> = (0..slots).map(|_| None).collect();
    let (mut next, mut done, mut sum) = (0usize, 0usize, 0i64);
    // Every slot starts with one call, polled once to register.
    let mut to_poll: Vec<usize> = (0..slots).collect();
    while done < calls {
        for index in to_poll.drain(..) {
            loop {
                let slot = &mut pending[index];
                if slot.is_none() {
                    if next == calls {
                        break;
                    }
                    let v = next as i64;
                    next += 1;
                    *slot = Some((v, start(v), waker(index, &woken)));
                }
                let Some((v, future, waker)) = slot.as_mut() else {
                    break;
                };
                match Pin::new(future).poll(&mut Context::from_waker(waker)) {
                    Poll::Pending => break,
                    Poll::Ready(outcome) => {
                        let got = outcome.map_err(|e| e.to_string())?;
                        check(*v, got)?;
                        sum = sum.wrapping_add(got);
                        done += 1;
                        *slot = None;
                    }
                }
            }
        }
        if done == calls {
            break;
        }
        let ready = std::mem::take(&mut *woken.lock().unwrap_or_else(PoisonError::into_inner));
        if ready.is_empty() {
            std::thread::park();
        } else {
            to_poll = ready;
        }
    }
    Ok(sum)
}
