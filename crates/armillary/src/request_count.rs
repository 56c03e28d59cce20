//! [`RequestCount`]: requests in progress, and waiting until there are
//! none. A POA counts its requests so that `destroy` and its manager's
//! state changes can wait for them (`WaitForCompletion::Yes`); a thread
//! counts the collocated oneways it posted, so that its next call waits
//! for them (`thread_role`).
//!
//! Counting a request in and out is one atomic add each; the lock and
//! the condition variable are touched only while someone waits (a bit
//! of the word says so), so a collocated call, which counts itself in
//! and out on every call, pays no lock.
//!
//! The count is what makes "no request starts after this" safe without
//! a lock on the request's path: a request counts itself in *before* it
//! checks whether it may run (the POA not destroyed, its manager
//! active), and whoever forbids it changes that state *before* it waits
//! for the count. Both sides use sequentially consistent operations, so
//! either the request sees the change, or the waiter sees the request.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

/// Set while a thread waits for the count to reach zero.
const WAITING: usize = 1;
/// One request, in the word (the bits above [`WAITING`]).
const ONE: usize = 2;

/// The requests in progress somewhere, and the threads waiting for them
/// to finish (see the module docs).
#[derive(Default)]
pub(crate) struct RequestCount {
    /// The count times [`ONE`], plus [`WAITING`].
    word: AtomicUsize,
    lock: Mutex<()>,
    idle: Condvar,
}

impl RequestCount {
    /// Counts a request in.
    pub(crate) fn enter(&self) {
        self.word.fetch_add(ONE, Ordering::SeqCst);
    }

    /// Counts a request out, waking the waiters when it was the last.
    pub(crate) fn leave(&self) {
        let before = self.word.fetch_sub(ONE, Ordering::SeqCst);
        if before & !WAITING == ONE && before & WAITING != 0 {
            // Under the lock, so that a waiter between its check and its
            // wait cannot miss the wake-up.
            let _guard = self.lock.lock();
            self.idle.notify_all();
        }
    }

    /// How many requests are counted in.
    #[cfg(test)]
    fn get(&self) -> usize {
        self.word.load(Ordering::SeqCst) / ONE
    }

    /// Waits until no request is counted in.
    pub(crate) fn wait_idle(&self) {
        if self.word.load(Ordering::SeqCst) & !WAITING == 0 {
            return;
        }
        let mut guard = self.lock.lock();
        loop {
            let word = self.word.fetch_or(WAITING, Ordering::SeqCst);
            if word & !WAITING == 0 {
                // Under the lock: a waiter still waiting saw a request in
                // after this one's check, so the request that leaves last
                // saw the bit and wakes it.
                self.word.fetch_and(!WAITING, Ordering::SeqCst);
                return;
            }
            self.idle.wait(&mut guard);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn waiting_returns_once_the_last_request_leaves() {
        let count = Arc::new(RequestCount::default());
        count.wait_idle();
        count.enter();
        count.enter();
        assert_eq!(count.get(), 2);
        let waiter = {
            let count = count.clone();
            std::thread::spawn(move || count.wait_idle())
        };
        count.leave();
        assert_eq!(count.get(), 1);
        count.leave();
        waiter.join().unwrap();
        assert_eq!(count.get(), 0);
        // The waiting bit is cleared: a later cycle takes no lock.
        assert_eq!(count.word.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn many_waiters_and_requests() {
        let count = Arc::new(RequestCount::default());
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let count = count.clone();
                std::thread::spawn(move || {
                    for _ in 0..2_000 {
                        if i % 2 == 0 {
                            count.enter();
                            count.leave();
                        } else {
                            count.wait_idle();
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        count.wait_idle();
        assert_eq!(count.get(), 0);
    }
}
