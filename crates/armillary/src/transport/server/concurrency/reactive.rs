//! Single-threaded reactive: one reactor thread reads every connection
//! and runs every upcall, so a connection's requests run in the order
//! they arrived. Replies to requests read together are written together.

use super::ServerConcurrency;

/// One reactor thread reads and runs everything.
#[derive(Debug)]
pub(crate) struct Reactive;

impl ServerConcurrency for Reactive {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn coalesces_replies(&self) -> bool {
        true
    }

    fn paces_oneways(&self) -> bool {
        true
    }
}
