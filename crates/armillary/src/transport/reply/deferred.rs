//! The deferred reply dispatcher: a request sent now whose reply is
//! collected later by whoever holds its [`DeferredSlot`] (a DII request
//! after `send_deferred`; AMI pollers build on it). The slot is filled by
//! whichever thread reads the connection; its owner can ask whether it is
//! ready without touching the connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Awaited, ReplyDispatcher};

/// The outcome of a deferred request, once some thread dispatched it.
#[derive(Default)]
pub(crate) struct DeferredSlot {
    outcome: Mutex<Option<Awaited>>,
    ready: AtomicBool,
}

impl DeferredSlot {
    /// The dispatcher to bind for this slot.
    pub(crate) fn dispatcher(self: &Arc<Self>) -> Box<dyn ReplyDispatcher> {
        Box::new(DeferredDispatcher(self.clone()))
    }

    /// Whether the outcome has been dispatched (and not taken yet).
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Takes the outcome, once dispatched.
    pub(crate) fn take(&self) -> Option<Awaited> {
        let outcome = self.outcome.lock().take();
        if outcome.is_some() {
            self.ready.store(false, Ordering::Release);
        }
        outcome
    }
}

struct DeferredDispatcher(Arc<DeferredSlot>);

impl ReplyDispatcher for DeferredDispatcher {
    fn dispatch(self: Box<Self>, outcome: Awaited) {
        *self.0.outcome.lock() = Some(outcome);
        self.0.ready.store(true, Ordering::Release);
    }
}
