//! Thread per connection: every connection gets a thread that blocks
//! reading it and runs its requests in the order they arrived; the one
//! reactor thread only accepts (and runs posted work). Replies are written
//! blocking, which is this model's back-pressure.

use super::ServerConcurrency;

/// A blocking reader thread per connection runs that connection's
/// requests.
#[derive(Debug)]
pub(crate) struct ThreadPerConnection;

impl ServerConcurrency for ThreadPerConnection {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn thread_per_connection(&self) -> bool {
        true
    }
}
