//! The application's threads: the ORB starts no server threads; the
//! threads in `Orb::run` and `Orb::perform_work` drive the reactor (as
//! Leader/Followers when there are several) and run what they read.

use super::ServerConcurrency;

/// The application's threads drive the reactor.
#[derive(Debug)]
pub(crate) struct ApplicationThreads;

impl ServerConcurrency for ApplicationThreads {
    fn reactor_threads(&self) -> usize {
        0
    }

    fn driven_by_application(&self) -> bool {
        true
    }
}
