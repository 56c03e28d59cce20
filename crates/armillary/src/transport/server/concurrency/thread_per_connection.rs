//! Thread per connection: a connection gets a thread that blocks reading
//! it and runs its requests in the order they arrived; the one reactor
//! thread accepts (and runs posted work). Replies are written blocking,
//! which is this model's back-pressure; those of requests read together
//! are written together (pipelined asynchronous requests: one write for
//! many replies).
//!
//! In its bounded form (`ThreadPerConnectionUpTo`, the default model) only
//! the first N connections open at a time get threads; the reactor thread
//! reads those accepted beyond and runs their requests, as the
//! single-threaded reactive model does. omniORB's server has the same shape:
//! a blocked reader answers with no event loop in between, which is the
//! shortest path a request can take while connections are few.

use super::{ConnectionThreads, ServerConcurrency};

/// A blocking reader thread per connection (up to a bound, or for
/// every connection) runs that connection's requests.
#[derive(Debug)]
pub(crate) struct ThreadPerConnection {
    threads: ConnectionThreads,
}

impl ThreadPerConnection {
    /// A thread for every connection; those beyond `max_connection_threads`
    /// are refused.
    pub(crate) fn every() -> ThreadPerConnection {
        ThreadPerConnection {
            threads: ConnectionThreads::Every,
        }
    }

    /// Threads for the first `n` connections open at a time; the reactor
    /// reads the others.
    pub(crate) fn up_to(n: usize) -> ThreadPerConnection {
        ThreadPerConnection {
            threads: ConnectionThreads::UpTo(n.max(1)),
        }
    }
}

impl ServerConcurrency for ThreadPerConnection {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn connection_threads(&self) -> ConnectionThreads {
        self.threads
    }

    /// A connection's thread runs every request it read, one after
    /// another, and so does the reactor thread for the connections it
    /// reads: the replies of requests read together are written together.
    fn coalesces_replies(&self) -> bool {
        true
    }

    /// A connection's thread runs what it read, as the reactor thread
    /// does for the connections beyond the bound.
    fn paces_oneways(&self) -> bool {
        true
    }
}
