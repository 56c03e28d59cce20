//! Thread pool reactive (Leader/Followers): N threads share the reactor;
//! one leads (waits for events) while the others follow. The thread that
//! read a request runs it, after letting go of the connection, so another
//! thread may read and run the connection's next request meanwhile. The
//! thread that read several requests at once runs the first and hands
//! each of the others to a follower first (promotion), so that a request
//! never waits behind another's upcall while a pool thread is free: a
//! long poll and the request that ends it, read together, both finish.

use super::ServerConcurrency;

/// N threads drive the reactor and run what they read.
#[derive(Debug)]
pub(crate) struct ThreadPool {
    threads: usize,
}

impl ThreadPool {
    /// A pool of `threads` (at least one).
    pub(crate) fn new(threads: usize) -> ThreadPool {
        ThreadPool {
            threads: threads.max(1),
        }
    }
}

impl ServerConcurrency for ThreadPool {
    fn reactor_threads(&self) -> usize {
        self.threads
    }

    fn promotes_followers(&self) -> bool {
        self.threads > 1
    }
}
