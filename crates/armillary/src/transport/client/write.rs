//! Sending and writing: a request's message written by the calling
//! thread, queued for the thread writing the connection, or left to the
//! connection's writer thread, and the write of a batch to the socket.

use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::cdr::SplicedBytes;
use parking_lot::MutexGuard;

use super::reader::READER_LINGER;
use super::{needs_new_timeout, ran_out, release, Awaited, ClientConnection, Closed};
use crate::trace::Side;
use crate::transport::gather::write_from;
use crate::transport::mux::Caller;
use crate::transport::outbox::{Batch, Outgoing, Stop, Stopped, Verdict};

/// Why a request could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendError {
    /// The socket failed, or the connection is closing: the request did
    /// not leave whole (it may be sent again elsewhere); the connection is
    /// closed.
    Failed,
    /// The server did not take the bytes by the request's deadline; the
    /// connection is closed (part of a message may have left).
    TimedOut,
}

impl ClientConnection {
    /// Sends a whole message, `outgoing` saying which reply it awaits and
    /// when its write must be over, for a request whose caller is `caller`:
    /// writes it now, or leaves it to another thread:
    /// - a deferred or asynchronous request (`Caller::Defers`), while
    ///   asynchronous requests are pipelined on the connection (two or
    ///   more outstanding, this one included), to the connection's
    ///   writer thread ([`write_behind`](Self::write_behind)), which
    ///   writes what queued while it slept or wrote in one go: the sending
    ///   thread makes no system call, and many requests leave per write;
    /// - else, to the thread writing now, if one is, which writes it with
    ///   whatever else queued once its own write is done (so many threads
    ///   calling at once make few writes).
    ///
    /// Messages leave in the order they were sent: once one waits for the
    /// writer thread, every later one does too. `Ok` for a message left
    /// to another thread: what becomes of it reaches its request through
    /// its dispatcher (see [`super::outbox`]). An error means the message
    /// did not leave whole (so the server cannot have run it): the
    /// connection is closing, or this thread's write failed or ran past
    /// the deadline (the connection is then closed).
    ///
    /// [`super::outbox`]: crate::transport::outbox
    pub(crate) fn send(
        self: &Arc<Self>,
        bytes: &SplicedBytes,
        outgoing: Outgoing,
        caller: Caller,
    ) -> Result<(), SendError> {
        // A synchronous call or a oneway does not look: it is written
        // now, or behind whoever writes (or after what is queued).
        let pipelining =
            caller == Caller::Defers && self.state.lock().dispatchers.readerless() >= 2;
        let mut outbox = self.outbox.lock();
        if outbox.shut {
            return Err(SendError::Failed);
        }
        if outbox.writing {
            outbox.push(bytes, outgoing);
            return Ok(());
        }
        if pipelining || !outbox.is_empty() {
            outbox.push(bytes, outgoing);
            if outbox.writer_parked {
                // Woken once: those queued before it runs need no more.
                outbox.writer_parked = false;
                self.outbox_ready.notify_one();
                return Ok(());
            }
            if outbox.writer {
                return Ok(());
            }
            let conn = self.clone();
            let spawned = std::thread::Builder::new()
                .name("armillary-writer".into())
                .spawn(move || conn.write_behind());
            if spawned.is_ok() {
                outbox.writer = true;
                return Ok(());
            }
            // No thread: this one writes what is queued, its own last
            // (what becomes of each reaches its request, this one's too).
            let batch = outbox.take();
            drop(outbox);
            let _ = self.write_in_turn(&batch);
            return Ok(());
        }
        let batch = Batch::single(bytes, outgoing);
        outbox.begin(&batch);
        drop(outbox);
        self.write_in_turn(&batch)
            .map_err(|stopped| match stopped.stop {
                Stop::Failed => SendError::Failed,
                Stop::TimedOut => SendError::TimedOut,
            })
    }

    /// Writes `first` (this thread writes the connection now: it took the
    /// batch from the outbox, or began it), then what queued meanwhile;
    /// returns how `first`'s write went.
    pub(super) fn write_in_turn(&self, first: &Batch<'_>) -> Result<(), Stopped> {
        let written = self.write_batch(first);
        if written.is_ok() {
            self.write_queued();
        }
        written
    }

    /// Writes what is queued, batch after batch, until nothing is (this
    /// thread writes the connection now, its last batch written whole),
    /// then lets go of the writing.
    pub(super) fn write_queued(&self) {
        loop {
            let batch = {
                let mut outbox = self.outbox.lock();
                // The batch before this turn left whole (`write_batch`
                // marks it so at once only when someone may ask: a batch
                // with a deadline).
                outbox.left();
                if outbox.is_empty() {
                    outbox.written();
                    self.outbox_drained.notify_all();
                    return;
                }
                outbox.take()
            };
            if self.write_batch(&batch).is_err() {
                // The connection is closed, the writing given up.
                return;
            }
        }
    }

    /// The body of the writer thread (see [`send`](Self::send)): writes
    /// what queued, a batch per turn, and parks when nothing is queued;
    /// ends when the connection closes (once what was queued before its
    /// CloseConnection is written) or after [`READER_LINGER`] with nothing
    /// to write.
    fn write_behind(&self) {
        while let Some(batch) = self.next_batch_behind() {
            if self.write_batch(&batch).is_ok() {
                self.write_queued();
            }
        }
    }

    /// The writer thread's next batch, once messages are queued and no
    /// other thread writes; `None` when the thread is to end.
    fn next_batch_behind(&self) -> Option<Batch<'static>> {
        let mut outbox = self.outbox.lock();
        let mut yielded = false;
        loop {
            if !outbox.is_empty() && !outbox.writing {
                return Some(outbox.take());
            }
            if outbox.shut && outbox.is_empty() {
                outbox.writer = false;
                return None;
            }
            if !yielded {
                // Let the senders (on this CPU, say) queue more before
                // parking, which costs them a wake-up.
                yielded = true;
                MutexGuard::unlocked(&mut outbox, std::thread::yield_now);
                continue;
            }
            outbox.writer_parked = true;
            let idle = self
                .outbox_ready
                .wait_for(&mut outbox, READER_LINGER)
                .timed_out();
            outbox.writer_parked = false;
            if idle && outbox.is_empty() {
                outbox.writer = false;
                return None;
            }
        }
    }

    /// Writes `batch` (this thread writes the connection now). When the
    /// write stops before its end, each request of the batch not written
    /// whole learns what that means (see [`super::outbox`]), and the
    /// connection is closed: the bytes on the wire may end in the middle
    /// of a message, so nothing more can follow them.
    ///
    /// [`super::outbox`]: crate::transport::outbox
    fn write_batch(&self, batch: &Batch<'_>) -> Result<(), Stopped> {
        match self.put_on_wire(batch) {
            Ok(()) => {
                // Without a deadline in the batch, none of its requests
                // asks where its message is (`Outbox::departure`): the
                // next turn of `write_queued`, which follows every batch
                // written whole, marks it left, under the lock it takes
                // anyway.
                let Some(earliest) = batch.deadline_from(0) else {
                    return Ok(());
                };
                self.outbox.lock().left();
                // Requests whose deadline passed while they were written
                // (whoever found it passed left them to this thread) end
                // now; a caller may wait for that.
                let now = Instant::now();
                if earliest <= now {
                    let mut state = self.state.lock();
                    let frames = state.frames;
                    for id in batch.overdue(now) {
                        state.dispatchers.time_out(id, frames, true);
                    }
                    self.wake.notify_all();
                    release(state);
                }
                Ok(())
            }
            Err(stopped) => {
                let mut state = self.state.lock();
                for (id, verdict) in batch.verdicts(stopped, Instant::now()) {
                    let outcome = match verdict {
                        Verdict::Unsent => Awaited::Unsent,
                        Verdict::TimedOut => Awaited::TimedOut {
                            silent: false,
                            sent: false,
                        },
                    };
                    state.dispatchers.settle(id, outcome);
                }
                if state.closed.is_none() {
                    crate::trace::connection_broken(Side::Client, self.peer(), &"a write failed");
                }
                self.end(&mut state, Closed::Broken);
                self.outbox.lock().written();
                self.stream.shutdown();
                release(state);
                Err(stopped)
            }
        }
    }

    /// Writes the bytes of `batch` to the socket, each write bounded by
    /// the earliest deadline of the messages not yet written whole; says
    /// how far it got when it stops before the end.
    fn put_on_wire(&self, batch: &Batch<'_>) -> Result<(), Stopped> {
        let mut timeout = self.write_lock.lock();
        let wire = self
            .stream
            .seal(batch.bytes(), batch.ends())
            .map_err(|_| Stopped {
                stop: Stop::Failed,
                whole: 0,
                partly: false,
            })?;
        let bytes = wire.bytes();
        let end = |i: usize| wire.end(i, batch.end(i));
        let mut written = 0;
        let mut whole = 0;
        loop {
            while whole < batch.len() && end(whole) <= written {
                whole += 1;
            }
            if whole == batch.len() {
                return Ok(());
            }
            let partly = written > whole.checked_sub(1).map_or(0, end);
            let stopped = |stop| Stopped {
                stop,
                whole,
                partly,
            };
            let wanted = match batch.deadline_from(whole) {
                None => None,
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    // A zero timeout means none: 1 ms at least.
                    Some(left) if !left.is_zero() => Some(left.max(Duration::from_millis(1))),
                    _ => return Err(stopped(Stop::TimedOut)),
                },
            };
            if needs_new_timeout(*timeout, wanted) {
                if self.stream.socket().set_write_timeout(wanted).is_err() {
                    return Err(stopped(Stop::Failed));
                }
                *timeout = wanted;
            }
            match write_from(self.stream.socket(), bytes, written) {
                Ok(0) => return Err(stopped(Stop::Failed)),
                Ok(n) => written += n,
                // Out of time (the deadline is looked at again), or a
                // signal.
                Err(e) if ran_out(&e) => {}
                Err(_) => return Err(stopped(Stop::Failed)),
            }
        }
    }
}
