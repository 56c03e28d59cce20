//! The asynchronous reply dispatchers' notification: what an AMI future or
//! callback registers on its [`DeferredSlot`](super::deferred::DeferredSlot)
//! so that the reply, once a reading thread dispatched it, reaches it
//! without anyone waiting on the connection.
//!
//! - A future registers its [`Waker`]: the reading thread wakes it at
//!   once (waking only schedules the task; the future's own `poll` decodes
//!   the reply, on whatever executor runs it).
//! - A callback registers a continuation, which owns the reply decoder and
//!   the delivery closure: the reading thread gets it back as a
//!   [`Handoff`] and runs it after it has let go of the connection's read
//!   state, so a callback may call the ORB (a forward or retry it triggers
//!   is sent from there).

use std::fmt;
use std::task::Waker;

use super::Handoff;

/// Who to tell once an asynchronous request's outcome is there.
pub(crate) enum Notify {
    /// A future's task: woken at once.
    Waker(Waker),
    /// A callback's continuation: run by the dispatching thread once it has
    /// released the connection.
    Continue(Handoff),
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notify::Waker(_) => f.write_str("Notify::Waker"),
            Notify::Continue(_) => f.write_str("Notify::Continue"),
        }
    }
}

impl Notify {
    /// Tells: wakes a waker now, or returns the continuation to run
    /// once the connection is released.
    pub(crate) fn fire(self) -> Option<Handoff> {
        match self {
            Notify::Waker(waker) => {
                waker.wake();
                None
            }
            Notify::Continue(handoff) => Some(handoff),
        }
    }
}
