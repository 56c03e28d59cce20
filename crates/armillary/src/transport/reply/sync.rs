//! The synchronous reply dispatcher: it lives with a caller that is
//! blocked on the connection (as leader or follower) until its reply comes.
//! The reading thread puts the outcome in the caller's slot and wakes the
//! followers; the caller takes it the next time it looks.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Awaited, Handoff, ReplyDispatcher};

/// Where a waiting caller finds its outcome. Only touched while the
/// connection's read state is locked, so its own lock is never contended.
#[derive(Default)]
pub(crate) struct SyncSlot(Mutex<Option<Awaited>>);

thread_local! {
    /// This thread's slot, kept for its next call.
    static SPARE: RefCell<Option<Arc<SyncSlot>>> = const { RefCell::new(None) };
}

impl SyncSlot {
    /// A slot for a call this thread makes and waits for: the thread's
    /// own (no allocation), unless an earlier call's dispatcher still
    /// holds it (a call that gave up, a call this one is nested in), then
    /// a new one.
    pub(crate) fn for_this_thread() -> Arc<SyncSlot> {
        SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            match spare.as_ref() {
                // Nobody else has it, and nobody can get it but this thread.
                Some(slot) if Arc::strong_count(slot) == 1 => {
                    slot.take();
                    slot.clone()
                }
                _ => {
                    let slot = Arc::new(SyncSlot::default());
                    *spare = Some(slot.clone());
                    slot
                }
            }
        })
    }

    /// The dispatcher to bind for this slot: the slot itself.
    pub(crate) fn dispatcher(self: &Arc<Self>) -> Arc<dyn ReplyDispatcher> {
        self.clone()
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

impl ReplyDispatcher for SyncSlot {
    fn dispatch(&self, outcome: Awaited) -> Option<Handoff> {
        *self.0.lock() = Some(outcome);
        None
    }
}
