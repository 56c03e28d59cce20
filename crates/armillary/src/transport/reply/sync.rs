//! The synchronous reply dispatcher: it lives with a caller that is
//! blocked on the connection (as leader or follower) until its reply comes.
//! The reading thread puts the outcome in the caller's slot and wakes the
//! followers; the caller takes it the next time it looks.

use std::sync::Arc;

use parking_lot::Mutex;

use super::{Awaited, Handoff, ReplyDispatcher};

/// Where a waiting caller finds its outcome. Only touched while the
/// connection's read state is locked, so its own lock is never contended.
#[derive(Default)]
pub(crate) struct SyncSlot(Mutex<Option<Awaited>>);

impl SyncSlot {
    /// The dispatcher to bind for this slot.
    pub(crate) fn dispatcher(self: &Arc<Self>) -> Box<dyn ReplyDispatcher> {
        Box::new(SyncDispatcher(self.clone()))
    }

    /// The outcome, once dispatched.
    pub(crate) fn take(&self) -> Option<Awaited> {
        self.0.lock().take()
    }

    /// Whether the outcome has been dispatched.
    pub(crate) fn is_ready(&self) -> bool {
        self.0.lock().is_some()
    }
}

struct SyncDispatcher(Arc<SyncSlot>);

impl ReplyDispatcher for SyncDispatcher {
    fn dispatch(self: Box<Self>, outcome: Awaited) -> Option<Handoff> {
        *self.0 .0.lock() = Some(outcome);
        None
    }
}
