//! The pacer: a thread that a server's reader wakes before it waits for
//! more to read, when what it read last was nothing but oneways
//! (`-ORBOnewayPacing`, on by default), in the models whose reading
//! threads run what they read (`ServerConcurrency::paces_oneways`:
//! thread per connection, reactive). A connection's own thread wakes it
//! before its next blocking read (`transport/server/connection/read.rs`);
//! a reactor thread before its next wait in the poll
//! ([`Reactor::pace_before_wait`](crate::reactor::Reactor::pace_before_wait)).
//!
//! A client streaming oneways keeps sending; the server reads what has
//! arrived, runs it and waits again. Where the two share a CPU, Linux's
//! scheduler (EEVDF) runs them in two phases, seen in its trace events
//! (`docs/performance.md`, "Two phases, and the pacer"): the client
//! sends for a few milliseconds while the reader, woken by the first
//! message, waits its turn, then the reader reads the lot; and then, for
//! as long as the reader is still owed CPU time, each message wakes it
//! and it preempts the client: one oneway a wake-up, two thread switches
//! each, several times the cost of a message read in a batch. Without the
//! pacer that second phase followed every batch and took a third of the
//! time.
//!
//! When the reader wakes another thread of the process before it waits
//! again, and that thread yields once before it parks, the phase of one
//! message a wake-up mostly goes: `bench sync`'s oneways a second went
//! from 0.66 to 0.96 of omniORB's (medians of four runs each), and a
//! minimal C reader over the same loopback socket gains as much. Why the
//! scheduler then lets the client run on is not something its trace
//! events show; what was measured is kept in `docs/performance.md`:
//! without the yield, or with two, the reader is woken two to three times
//! as often.
//!
//! A read that held a two-way request wakes nothing, so a two-way call
//! costs what it did.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

/// The pacer thread of one server, started the first time a reader wakes
/// it and ended when the last holder of the pacer lets it go.
pub(crate) struct Pacer {
    /// `None` inside when the thread could not be started: the readers
    /// then wait as without a pacer.
    thread: OnceLock<Option<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    /// Times a reader woke it ([`ServerStats::pacer_wakeups`](crate::ServerStats::pacer_wakeups)).
    wakeups: AtomicU64,
}

impl Pacer {
    pub(crate) fn new() -> Pacer {
        Pacer {
            thread: OnceLock::new(),
            stop: Arc::new(AtomicBool::new(false)),
            wakeups: AtomicU64::new(0),
        }
    }

    /// Times a reader woke it.
    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// Wakes the pacer thread (starting it the first time). Costs an
    /// atomic swap when the thread is already awake, a `futex` wake-up
    /// when it is parked.
    pub(crate) fn wake(&self) {
        self.wakeups.fetch_add(1, Ordering::Relaxed);
        let thread = self.thread.get_or_init(|| {
            let stop = self.stop.clone();
            std::thread::Builder::new()
                .name("armillary-pacer".into())
                .spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        std::thread::park();
                        // Once: it then waits behind the reader and the
                        // client rather than running at once (measured:
                        // not yielding, or yielding twice, leaves the
                        // reader woken twice to three times as often).
                        std::thread::yield_now();
                    }
                })
                .ok()
        });
        if let Some(handle) = thread {
            handle.thread().unpark();
        }
    }

    /// Whether the thread has been started (for tests).
    #[cfg(test)]
    fn started(&self) -> bool {
        matches!(self.thread.get(), Some(Some(_)))
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(Some(handle)) = self.thread.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_thread_starts_when_first_woken_and_ends_with_the_pacer() {
        let pacer = Pacer::new();
        assert!(!pacer.started());
        for _ in 0..1000 {
            pacer.wake();
        }
        assert!(pacer.started());
        assert_eq!(pacer.wakeups(), 1000);
        // Dropping joins the thread: this returns only once it has ended.
        drop(pacer);
        // A pacer never woken has no thread to end.
        drop(Pacer::new());
    }
}
