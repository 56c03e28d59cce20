//! The synchronous reply dispatcher: it lives with a caller that is
//! blocked on the connection (as leader or follower) until its reply comes.
//! The reading thread puts the outcome in the caller's slot and wakes the
//! followers; the caller takes it the next time it looks.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Awaited, Handoff, ReplyDispatcher};

/// Where a waiting caller finds its outcome. Only touched while the
/// connection's read state is locked, so its own lock is never contended;
/// whether the outcome has come is also kept in an atomic, so that the
/// waiting caller asks it without taking that lock.
#[derive(Default)]
pub(crate) struct SyncSlot {
    outcome: Mutex<Option<Awaited>>,
    ready: AtomicBool,
}

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
            let slot = spare.get_or_insert_with(Arc::default);
            match Arc::get_mut(slot) {
                // Nobody else has it, and nobody can get it but this
                // thread: emptied in place (an outcome a call that gave up
                // left).
                Some(own) => {
                    *own.outcome.get_mut() = None;
                    *own.ready.get_mut() = false;
                }
                None => *slot = Arc::default(),
            }
            slot.clone()
        })
    }

    /// The dispatcher to bind for this slot: the slot itself.
    pub(crate) fn dispatcher(self: &Arc<Self>) -> Arc<dyn ReplyDispatcher> {
        self.clone()
    }

    /// The outcome, once dispatched.
    pub(crate) fn take(&self) -> Option<Awaited> {
        self.outcome.lock().take()
    }

    /// Whether the outcome has been dispatched.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

impl ReplyDispatcher for SyncSlot {
    fn dispatch(&self, outcome: Awaited) -> Option<Handoff> {
        *self.outcome.lock() = Some(outcome);
        self.ready.store(true, Ordering::Release);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_slot_is_reused_emptied_unless_another_holds_it() {
        let first = SyncSlot::for_this_thread();
        assert!(!first.is_ready());
        first.dispatch(Awaited::Unsent);
        assert!(first.is_ready());
        // Still held (a dispatcher bound elsewhere would hold it so): a
        // new one.
        let second = SyncSlot::for_this_thread();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(!second.is_ready());
        // Given back with an outcome nobody took: the next call reuses
        // it, emptied.
        second.dispatch(Awaited::Unsent);
        let second_ptr = Arc::as_ptr(&second);
        drop(second);
        let third = SyncSlot::for_this_thread();
        assert_eq!(Arc::as_ptr(&third), second_ptr);
        assert!(!third.is_ready());
        assert!(third.take().is_none());
        assert!(matches!(first.take(), Some(Awaited::Unsent)));
    }
}
