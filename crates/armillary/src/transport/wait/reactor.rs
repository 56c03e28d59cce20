//! Wait on the reactor: a thread that must keep serving while it waits
//! (see [`super::serving`]) runs the reactor it serves until its reply
//! comes, handling meanwhile requests of the ORB's server (nested upcalls)
//! and replies of other connections; its own connection is registered
//! with the reactor, which reads it. A thread-per-connection thread serves
//! its own connection instead; a thread that serves nothing waits on read.
//!
//! Several threads waiting this way all run the reactor: they take turns
//! at its poll (the reactor's own Leader/Followers), and one whose reply
//! another thread read notices it within a slice. With many waiting
//! threads, [`LeaderFollowers`](super::LeaderFollowers) hands replies over
//! at once instead.

use std::sync::Arc;
use std::time::Instant;

use super::{
    read_in_reactor, run_reactor_until, wait_reading, wait_serving_own_connection, Serve, Serving,
    Waiter,
};
use crate::reactor::Reactor;
use crate::transport::client::{ClientConnection, ReadState};

/// Wait on the reactor (`-ORBWaitStrategy reactor`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WaitOnReactor;

impl Waiter for WaitOnReactor {
    fn wait(
        &self,
        serving: &Serving,
        conn: &Arc<ClientConnection>,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&mut ReadState) -> bool,
    ) -> bool {
        match serving.what() {
            Serve::Nothing => wait_reading(serving, conn, deadline, done),
            Serve::Hook(serve) => {
                wait_serving_own_connection(serving, &**serve, conn, deadline, done)
            }
            Serve::Reactor(reactor) => run_reactor_until(serving, reactor, conn, deadline, done),
        }
    }

    fn read_asynchronous(
        &self,
        reactor: Option<&Arc<Reactor>>,
        conn: &Arc<ClientConnection>,
    ) -> bool {
        read_in_reactor(reactor, conn)
    }
}
