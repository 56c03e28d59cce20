//! The deferred reply dispatcher: a request sent now whose reply is
//! collected later by whoever holds its [`DeferredSlot`] (a DII request
//! after `send_deferred`, an AMI poller, future or callback). The slot is
//! filled by whichever thread reads the connection; its owner can ask
//! whether it is ready without touching the connection. An asynchronous
//! slot (see [`callback`](super::callback)) also tells someone when it is
//! filled, and asks for an ORB thread to read the connection meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::callback::Notify;
use super::{Awaited, Handoff, ReplyDispatcher};

/// The outcome of a deferred request, once some thread dispatched it.
#[derive(Default)]
pub(crate) struct DeferredSlot {
    outcome: Mutex<Option<Awaited>>,
    ready: AtomicBool,
    /// Whose turn it is once the outcome is there (asynchronous slots).
    /// `ready` is set and read under this lock, so a notification is never
    /// lost between a check and a registration.
    notify: Mutex<Option<Notify>>,
    /// Whether nobody reads the connection on this slot's behalf (AMI
    /// futures and callbacks), so that the ORB must.
    asynchronous: bool,
}

impl DeferredSlot {
    /// A slot whose owner reads the connection itself (`asynchronous`
    /// false: DII, pollers) or relies on an ORB thread to (true: futures
    /// and callbacks).
    pub(crate) fn new(asynchronous: bool) -> Self {
        DeferredSlot {
            asynchronous,
            ..DeferredSlot::default()
        }
    }

    /// The dispatcher to bind for this slot: the slot itself.
    pub(crate) fn dispatcher(self: &Arc<Self>) -> Arc<dyn ReplyDispatcher> {
        self.clone()
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

    /// Registers who to tell once the outcome is there, replacing any
    /// earlier registration; gives `notify` back when it is there already
    /// (the caller acts on it at once).
    pub(crate) fn on_ready(&self, notify: Notify) -> Option<Notify> {
        let mut slot = self.notify.lock();
        if self.is_ready() {
            *slot = None;
            return Some(notify);
        }
        *slot = Some(notify);
        None
    }
}

impl ReplyDispatcher for DeferredSlot {
    fn dispatch(&self, outcome: Awaited) -> Option<Handoff> {
        *self.outcome.lock() = Some(outcome);
        let notify = {
            let mut notify = self.notify.lock();
            self.ready.store(true, Ordering::Release);
            notify.take()
        };
        notify.and_then(Notify::fire)
    }

    fn needs_reader(&self) -> bool {
        self.asynchronous
    }
}
