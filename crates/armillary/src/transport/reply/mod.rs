//! Reply dispatchers: what a client connection does with each reply it
//! reads (the AMI paper's *reply dispatcher* family).
//!
//! A request that expects a reply binds a [`ReplyDispatcher`] to its
//! request id in the connection's [`DispatcherTable`] before it is sent.
//! Whichever thread reads the connection (the Leader/Followers leader, or a
//! caller polling without blocking) looks the id up in O(1) and hands the
//! reply to the dispatcher; nobody else touches it. The kinds, one module
//! each:
//!
//! - [`sync`]: lives with a caller blocked on the connection (a synchronous
//!   call); the leader fills its slot and wakes the followers.
//! - [`deferred`]: holds the slot of a request sent now and collected later
//!   (DII `send_deferred`, and the foundation of AMI pollers); whoever owns
//!   the handle polls or waits for it, and dropping the handle unbinds it.
//! - [`callback`]: a deferred slot that also tells someone when it is
//!   filled (AMI futures and callbacks): it wakes a future's
//!   [`Waker`](std::task::Waker) at once, or hands a continuation (the
//!   callback's reply decoder and delivery closure) back to the reading
//!   thread, which runs it after it has let go of the connection. Such
//!   dispatchers [need a reader](ReplyDispatcher::needs_reader): the
//!   connection gets an ORB thread that reads it while they are bound.
//!
//! No thread exists per outstanding request: a dispatcher is a small heap
//! object in a hash map. Every bound dispatcher ends in exactly one
//! [`ReplyDispatcher::dispatch`] (its reply, the connection's close, its
//! deadline, or what became of its request's write) or is unbound by its
//! owner; a reply whose id is not bound (a oneway, a request whose owner
//! gave up, a timed-out one) is dropped.

pub(crate) mod callback;
pub(crate) mod deferred;
pub(crate) mod sync;

use std::sync::Arc;
use std::time::Instant;

use armillary_giop::giop::Frame;

use super::client::Closed;
use super::outbox::Departure;
use crate::fast_map::FastMap;

/// What became of a request that expected a reply.
#[derive(Debug)]
pub(crate) enum Awaited {
    /// Its reply arrived.
    Reply(Frame),
    /// Its reply was larger than the client's message size limit: the
    /// connection, which could not read past it, is closed.
    ReplyTooLarge,
    /// The connection closed first.
    Closed(Closed),
    /// The connection failed before any byte of the request left (it was
    /// queued, or in a write that failed before reaching it): it may be
    /// sent again.
    Unsent,
    /// Its deadline passed first. `silent`: nothing at all arrived on the
    /// connection since the request was bound (a hung server, or a peer
    /// gone without closing).
    TimedOut {
        /// Whether the connection was silent meanwhile.
        silent: bool,
        /// Whether the request left whole (else the server cannot have
        /// run it).
        sent: bool,
    },
}

/// Work a dispatcher hands back to the thread that dispatched it, to run
/// once that thread has let go of the connection's read state (an AMI
/// callback: it may decode, call the application, and send again).
pub(crate) type Handoff = Box<dyn FnOnce() + Send>;

/// Receives the outcome of one request. Called exactly once, by the thread
/// that read the reply, saw the connection close or found the deadline
/// passed, while it holds the connection's read state: it must not block,
/// and returns what must run after the state is released, if anything.
///
/// A dispatcher is the slot its caller waits on, shared
/// (`Arc<dyn ReplyDispatcher>`): binding one allocates nothing.
pub(crate) trait ReplyDispatcher: Send + Sync {
    /// Hands the outcome over (once).
    fn dispatch(&self, outcome: Awaited) -> Option<Handoff>;

    /// Whether nobody waits on the connection for this reply (an AMI future
    /// or callback), so that an ORB thread must read it.
    fn needs_reader(&self) -> bool {
        false
    }
}

/// A bound dispatcher and what the table needs to end it.
struct Entry {
    dispatcher: Arc<dyn ReplyDispatcher>,
    /// Whether it [needs a reader](ReplyDispatcher::needs_reader).
    needs_reader: bool,
    /// The connection's message count when the request was bound: if it
    /// has not moved when the deadline passes, the server said nothing.
    frames_before: u64,
    deadline: Option<Instant>,
}

/// The dispatchers of one connection's outstanding requests, by request
/// id.
#[derive(Default)]
pub(crate) struct DispatcherTable {
    entries: Entries,
    /// No entry's deadline is earlier than this (`None`: no entry has
    /// one), so [`expire`](Self::expire) costs nothing until it passes;
    /// entries whose deadline passed while their request was being
    /// written are left out (the writing thread ends them).
    next_expiry: Option<Instant>,
    /// How many bound dispatchers need a reader.
    readerless: usize,
    /// What dispatchers handed back, to run once the read state is
    /// released ([`take_handoffs`](Self::take_handoffs)).
    handoffs: Vec<Handoff>,
}

/// The bound entries by request id. A connection whose callers each wait
/// for their reply (a synchronous call per connection, the client's
/// default) has one at a time: it sits in `one`, found by a comparison;
/// more go to the map. No order is kept between the two.
#[derive(Default)]
struct Entries {
    one: Option<(u32, Entry)>,
    more: FastMap<u32, Entry>,
}

impl Entries {
    /// Binds `entry` to `id`, returning the entry it replaces.
    fn insert(&mut self, id: u32, entry: Entry) -> Option<Entry> {
        match &mut self.one {
            Some((bound, old)) if *bound == id => Some(std::mem::replace(old, entry)),
            Some(_) => self.more.insert(id, entry),
            None => {
                if !self.more.is_empty() {
                    if let Some(old) = self.more.get_mut(&id) {
                        return Some(std::mem::replace(old, entry));
                    }
                }
                self.one = Some((id, entry));
                None
            }
        }
    }

    fn remove(&mut self, id: u32) -> Option<Entry> {
        match &self.one {
            Some((bound, _)) if *bound == id => self.one.take().map(|(_, e)| e),
            _ if self.more.is_empty() => None,
            _ => self.more.remove(&id),
        }
    }

    fn contains(&self, id: u32) -> bool {
        matches!(&self.one, Some((bound, _)) if *bound == id)
            || (!self.more.is_empty() && self.more.contains_key(&id))
    }

    fn iter(&self) -> impl Iterator<Item = (&u32, &Entry)> {
        self.one
            .iter()
            .map(|(id, e)| (id, e))
            .chain(self.more.iter())
    }

    fn values(&self) -> impl Iterator<Item = &Entry> {
        self.iter().map(|(_, e)| e)
    }

    fn drain(&mut self) -> Vec<Entry> {
        let one = self.one.take().map(|(_, e)| e);
        one.into_iter()
            .chain(self.more.drain().map(|(_, e)| e))
            .collect()
    }

    fn is_empty(&self) -> bool {
        self.one.is_none() && self.more.is_empty()
    }

    fn len(&self) -> usize {
        usize::from(self.one.is_some()) + self.more.len()
    }
}

impl DispatcherTable {
    /// Binds `dispatcher` to `id`, replacing (and closing) any dispatcher
    /// still bound to it. `frames` is the connection's message count now.
    pub(crate) fn bind(
        &mut self,
        id: u32,
        dispatcher: Arc<dyn ReplyDispatcher>,
        frames: u64,
        deadline: Option<Instant>,
    ) {
        if let Some(d) = deadline {
            self.next_expiry = Some(self.next_expiry.map_or(d, |e| e.min(d)));
        }
        let needs_reader = dispatcher.needs_reader();
        self.readerless += usize::from(needs_reader);
        let old = self.entries.insert(
            id,
            Entry {
                dispatcher,
                needs_reader,
                frames_before: frames,
                deadline,
            },
        );
        // Ids are not reused while bound; should one be, the older request
        // learns it will get no reply instead of waiting for ever.
        if let Some(old) = old {
            self.readerless -= usize::from(old.needs_reader);
            self.end(old, Awaited::Closed(Closed::Broken));
        }
    }

    /// Removes the entry of `id`, keeping the count of readerless ones.
    fn remove(&mut self, id: u32) -> Option<Entry> {
        let entry = self.entries.remove(id)?;
        self.readerless -= usize::from(entry.needs_reader);
        Some(entry)
    }

    /// Dispatches `outcome` to a removed entry, keeping its handoff.
    fn end(&mut self, entry: Entry, outcome: Awaited) {
        if let Some(handoff) = entry.dispatcher.dispatch(outcome) {
            self.handoffs.push(handoff);
        }
    }

    /// Forgets the dispatcher of `id` without dispatching anything (its
    /// owner no longer wants the reply). True if one was bound.
    pub(crate) fn unbind(&mut self, id: u32) -> bool {
        self.remove(id).is_some()
    }

    /// Hands `frame` to the dispatcher of `id`; false (and the frame is
    /// dropped) when none is bound.
    pub(crate) fn dispatch(&mut self, id: u32, frame: Frame) -> bool {
        self.settle(id, Awaited::Reply(frame))
    }

    /// Hands `outcome` to the dispatcher of `id`; false when none is
    /// bound.
    pub(crate) fn settle(&mut self, id: u32, outcome: Awaited) -> bool {
        match self.remove(id) {
            Some(entry) => {
                self.end(entry, outcome);
                true
            }
            None => false,
        }
    }

    /// Whether a dispatcher is bound to `id`.
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.entries.contains(id)
    }

    /// Ends the request `id` as timed out now, whatever its deadline (its
    /// owner's own deadline passed). `frames` is the connection's message
    /// count now; `sent`, whether the request left whole.
    pub(crate) fn time_out(&mut self, id: u32, frames: u64, sent: bool) {
        if let Some(entry) = self.remove(id) {
            let silent = entry.frames_before == frames;
            self.end(entry, Awaited::TimedOut { silent, sent });
        }
    }

    /// Ends every request whose deadline is not after `now` as timed out,
    /// asking `departure` where each one's message is: one still queued
    /// was taken out of the queue (it never left); one being written is
    /// left to the writing thread, which ends it by that deadline.
    pub(crate) fn expire(
        &mut self,
        now: Instant,
        frames: u64,
        departure: &mut dyn FnMut(u32) -> Departure,
    ) {
        if self.next_expiry.is_none_or(|e| e > now) {
            return;
        }
        let expired: Vec<u32> = self
            .entries
            .iter()
            .filter(|(_, e)| e.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            match departure(id) {
                Departure::Writing => {}
                Departure::Withdrawn => self.time_out(id, frames, false),
                Departure::Left => self.time_out(id, frames, true),
            }
        }
        self.next_expiry = self
            .entries
            .values()
            .filter_map(|e| e.deadline)
            .filter(|d| *d > now)
            .min();
    }

    /// Ends every request: the connection closed.
    pub(crate) fn close_all(&mut self, closed: Closed) {
        self.next_expiry = None;
        self.readerless = 0;
        let entries: Vec<Entry> = self.entries.drain();
        for entry in entries {
            self.end(entry, Awaited::Closed(closed));
        }
    }

    /// How many bound dispatchers need a reader (AMI futures and
    /// callbacks): an ORB thread reads the connection while there are any.
    pub(crate) fn readerless(&self) -> usize {
        self.readerless
    }

    /// The earliest deadline of a bound dispatcher (or a moment before it).
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.next_expiry
    }

    /// What dispatchers handed back since the last call: the caller runs
    /// it once it has released the connection's read state.
    pub(crate) fn take_handoffs(&mut self) -> Vec<Handoff> {
        std::mem::take(&mut self.handoffs)
    }

    /// Whether no request is outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many requests are outstanding.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::deferred::DeferredSlot;
    use super::*;

    fn frame(id: u32) -> Frame {
        use armillary_giop::giop::{MessageBody, MessageBuilder, ReplyHeader, ReplyStatus};
        let bytes = MessageBuilder::new(
            armillary_giop::GiopVersion::V1_2,
            armillary_giop::ByteOrder::NATIVE,
            &MessageBody::Reply(ReplyHeader {
                request_id: id,
                reply_status: ReplyStatus::NoException,
                service_contexts: Vec::new(),
            }),
        )
        .unwrap()
        .finish(false);
        let mut decoder = armillary_giop::giop::FrameDecoder::default();
        decoder.handle_bytes(&bytes).unwrap();
        decoder.poll_frame().unwrap()
    }

    fn reply_id(outcome: &Awaited) -> Option<u32> {
        match outcome {
            Awaited::Reply(f) => f.message().ok()?.body.request_id(),
            _ => None,
        }
    }

    #[test]
    fn a_reply_for_an_unknown_id_is_dropped() {
        let mut table = DispatcherTable::default();
        let slot = Arc::new(DeferredSlot::default());
        table.bind(7, slot.dispatcher(), 0, None);
        assert!(!table.dispatch(8, frame(8)));
        assert!(!slot.is_ready());
        assert!(table.dispatch(7, frame(7)));
        assert_eq!(reply_id(&slot.take().unwrap()), Some(7));
        // A second reply to the same id finds nobody.
        assert!(!table.dispatch(7, frame(7)));
        assert!(table.is_empty());
    }

    #[test]
    fn every_reply_finds_its_dispatcher_however_many_are_bound_and_in_any_order() {
        // The first entry sits apart from the map (`Entries`): bound,
        // rebound, ended and closed in every mix with the others.
        let mut table = DispatcherTable::default();
        let slots: Vec<_> = (0..6).map(|_| Arc::new(DeferredSlot::default())).collect();
        for (id, slot) in slots.iter().enumerate() {
            table.bind(id as u32, slot.dispatcher(), 0, None);
        }
        assert_eq!(table.len(), 6);
        for id in [3, 0, 5] {
            assert!(table.contains(id));
            assert!(table.dispatch(id, frame(id)));
            assert!(!table.contains(id));
            assert_eq!(reply_id(&slots[id as usize].take().unwrap()), Some(id));
        }
        assert_eq!(table.len(), 3);
        // Bound again while bound: the older request learns it gets no
        // reply, the newer one gets it.
        let again = Arc::new(DeferredSlot::default());
        table.bind(4, again.dispatcher(), 0, None);
        assert!(matches!(
            slots[4].take(),
            Some(Awaited::Closed(Closed::Broken))
        ));
        assert_eq!(table.len(), 3);
        // With the first one free, a new id takes it; the map's ids are
        // still found.
        let fresh = Arc::new(DeferredSlot::default());
        table.bind(9, fresh.dispatcher(), 0, None);
        assert!(table.dispatch(4, frame(4)));
        assert_eq!(reply_id(&again.take().unwrap()), Some(4));
        assert!(table.dispatch(9, frame(9)));
        assert_eq!(reply_id(&fresh.take().unwrap()), Some(9));
        table.close_all(Closed::Orderly);
        for id in [1, 2] {
            assert!(matches!(
                slots[id].take(),
                Some(Awaited::Closed(Closed::Orderly))
            ));
        }
        assert!(table.is_empty());
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn a_late_reply_after_a_timeout_is_dropped_and_frees_nothing_twice() {
        let mut table = DispatcherTable::default();
        let now = Instant::now();
        let late = Arc::new(DeferredSlot::default());
        let patient = Arc::new(DeferredSlot::default());
        table.bind(1, late.dispatcher(), 0, Some(now));
        table.bind(2, patient.dispatcher(), 0, None);
        // Not yet expired a moment before the deadline.
        table.expire(now - Duration::from_millis(1), 0, &mut |_| Departure::Left);
        assert!(!late.is_ready());
        table.expire(now, 0, &mut |_| Departure::Left);
        assert!(matches!(
            late.take(),
            Some(Awaited::TimedOut {
                silent: true,
                sent: true
            })
        ));
        assert_eq!(table.len(), 1);
        // The slot of the timed-out request is held by its owner only.
        assert_eq!(Arc::strong_count(&late), 1);
        assert!(!table.dispatch(1, frame(1)));
        assert!(table.dispatch(2, frame(2)));
        assert_eq!(reply_id(&patient.take().unwrap()), Some(2));
        assert!(table.is_empty());
    }

    #[test]
    fn a_timeout_after_other_replies_is_not_silent() {
        let mut table = DispatcherTable::default();
        let slot = Arc::new(DeferredSlot::default());
        table.bind(1, slot.dispatcher(), 3, None);
        table.time_out(1, 4, true);
        assert!(matches!(
            slot.take(),
            Some(Awaited::TimedOut {
                silent: false,
                sent: true
            })
        ));
    }

    #[test]
    fn an_expired_request_is_ended_as_its_message_departed() {
        let mut table = DispatcherTable::default();
        let now = Instant::now();
        let slots: Vec<_> = (1..=3)
            .map(|id| {
                let slot = Arc::new(DeferredSlot::default());
                table.bind(id, slot.dispatcher(), 0, Some(now));
                slot
            })
            .collect();
        table.expire(now, 0, &mut |id| match id {
            1 => Departure::Withdrawn,
            2 => Departure::Writing,
            _ => Departure::Left,
        });
        assert!(matches!(
            slots[0].take(),
            Some(Awaited::TimedOut { sent: false, .. })
        ));
        // Left to the thread writing it, and to nobody's next expiry.
        assert!(!slots[1].is_ready());
        assert!(table.contains(2));
        assert_eq!(table.next_expiry(), None);
        assert!(matches!(
            slots[2].take(),
            Some(Awaited::TimedOut { sent: true, .. })
        ));
    }

    #[test]
    fn many_outstanding_requests_each_get_their_own_reply_in_any_order() {
        let mut table = DispatcherTable::default();
        let slots: Vec<_> = (0..10_000u32)
            .map(|id| {
                let slot = Arc::new(DeferredSlot::default());
                table.bind(id, slot.dispatcher(), 0, None);
                slot
            })
            .collect();
        assert_eq!(table.len(), 10_000);
        // Answer the odd ids backwards, then close: the even ones learn it.
        for id in (0..10_000u32).rev().filter(|id| id % 2 == 1) {
            assert!(table.dispatch(id, frame(id)));
        }
        table.close_all(Closed::Orderly);
        assert!(table.is_empty());
        for (id, slot) in slots.iter().enumerate() {
            let outcome = slot.take().unwrap();
            if id % 2 == 1 {
                assert_eq!(reply_id(&outcome), Some(id as u32));
            } else {
                assert!(matches!(outcome, Awaited::Closed(Closed::Orderly)));
            }
            assert_eq!(Arc::strong_count(slot), 1);
        }
    }

    #[test]
    fn unbinding_forgets_without_dispatching() {
        let mut table = DispatcherTable::default();
        let slot = Arc::new(DeferredSlot::default());
        table.bind(1, slot.dispatcher(), 0, Some(Instant::now()));
        assert!(table.unbind(1));
        assert!(!table.unbind(1));
        table.expire(Instant::now(), 0, &mut |_| Departure::Left);
        assert!(!slot.is_ready());
        assert_eq!(Arc::strong_count(&slot), 1);
    }
}
