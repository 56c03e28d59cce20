//! The asynchronous reply dispatchers' notification: what an AMI future or
//! callback registers on its [`DeferredSlot`](super::deferred::DeferredSlot)
//! so that the reply, once a reading thread dispatched it, reaches it
//! without anyone waiting on the connection.
//!
//! - A future registers its [`Waker`]: the reading thread wakes it as
//!   soon as it has released the connection, with the other tasks whose
//!   replies it read in the same go (waking only schedules the task; the
//!   future's own `poll` decodes the reply, on whatever executor runs
//!   it).
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
    /// Tells, once the dispatching thread has released the connection:
    /// returns what it then runs (the continuation, or the waker's wake).
    /// A reader dispatching a batch of replies wakes their tasks together
    /// after it, so a task woken by the first does not run (and, with
    /// nothing else woken yet, sleep again) once per reply.
    pub(crate) fn fire(self) -> Option<Handoff> {
        match self {
            Notify::Waker(waker) => Some(Box::new(move || waker.wake())),
            Notify::Continue(handoff) => Some(handoff),
        }
    }
}
