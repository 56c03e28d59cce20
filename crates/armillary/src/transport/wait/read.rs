//! Wait on read: the waiting thread reads its connection until its reply
//! comes, serving nothing meanwhile (but the requests handed over to a
//! thread in an upcall of a SINGLE_THREAD_MODEL POA: see the module docs
//! of `wait`). Callers of one (multiplexed)
//! connection take turns reading it, the reader handing each reply to its
//! owner (the connection's own Leader/Followers, see
//! [`ClientConnection::wait_until`]). The fastest wait for a pure client.
//! Inside an upcall it leaves the nested request to another thread, so
//! only the models that always have one (thread pool, thread per request)
//! accept it (`WaitStrategy::is_safe_with`, checked by `OrbConfig::check`).

use std::sync::Arc;
use std::time::Instant;

use super::{wait_reading, Serving, Waiter};
use crate::transport::client::{ClientConnection, ReadState};

/// Wait on read (`-ORBWaitStrategy read`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WaitOnRead;

impl Waiter for WaitOnRead {
    fn wait(
        &self,
        serving: &Serving,
        conn: &Arc<ClientConnection>,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&mut ReadState) -> bool,
    ) -> bool {
        wait_reading(serving, conn, deadline, done)
    }
}
