//! The outbox of a client connection: the messages waiting for the thread
//! that writes the connection, and the bookkeeping of a batch being
//! written, so that a write that fails or runs out of time can tell each
//! request what became of it. No I/O here: `client/write.rs` writes.
//!
//! A message is written at once by the thread that sends it, or queued
//! here: while another thread writes the connection (that thread takes
//! what queued, as one batch, once its own write is done), or while
//! asynchronous requests are pipelined (the connection's writer thread
//! takes it). Batches are written in the order they were taken, each in
//! the order it was queued, so messages leave in the order they were sent.
//! A write is bounded by the earliest deadline of the messages of its
//! batch not yet written whole.
//!
//! What becomes of a request's message:
//!
//! - it is written whole: its request awaits its reply;
//! - its deadline passes while it is queued: it is taken out
//!   ([`Outbox::withdraw`]) and never written; its request ends with
//!   TIMEOUT, COMPLETED_NO, and the connection carries on;
//! - the write of its batch fails (the connection broke) before any of
//!   its bytes left, or the connection closes while it is queued: its
//!   request is [`Unsent`](Verdict::Unsent), sent again on another
//!   connection; if some of its bytes left, the request fails with the
//!   connection (COMM_FAILURE, COMPLETED_MAYBE);
//! - the write of its batch runs past the deadline of a message not yet
//!   written whole: that message's request ends with TIMEOUT,
//!   COMPLETED_NO (it cannot have run: the server reads whole messages
//!   only), and the connection, which may now carry part of a message, is
//!   closed; the other messages not yet written whole are treated as if
//!   the write had failed.
//!
//! While a batch is being written, its requests' deadlines are the
//! writing thread's to act on ([`Outbox::departure`] says
//! [`Writing`](Departure::Writing)): whoever else finds such a deadline
//! passed leaves the request to it.

use std::borrow::Cow;
use std::time::Instant;

use armillary_giop::cdr::SplicedBytes;

/// What a connection knows of a message it sends, besides its bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Outgoing {
    /// The id of the request whose reply is awaited; `None` for a message
    /// no reply is awaited for (a oneway, CloseConnection).
    pub(crate) reply: Option<u32>,
    /// When the write of the message must be over (its request's
    /// deadline); `None`: however long it takes.
    pub(crate) deadline: Option<Instant>,
}

/// One message of a queue or a batch: where it ends in the bytes, and
/// what it is.
#[derive(Debug, Clone, Copy)]
struct Message {
    end: usize,
    outgoing: Outgoing,
}

/// Where a request's message is, as a deadline finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Departure {
    /// It was still queued: it is now taken out, and will never be
    /// written.
    Withdrawn,
    /// A thread is writing it: that thread ends the request if its
    /// deadline passes before it is written whole.
    Writing,
    /// It left whole (or was never queued here).
    Left,
}

/// The messages waiting for the thread that writes a connection, and who
/// writes.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    /// The queued messages, whole, one after another.
    bytes: Vec<u8>,
    messages: Vec<Message>,
    /// The requests of the batch being written now.
    writing_replies: Vec<u32>,
    /// Whether a thread is writing a batch.
    pub(crate) writing: bool,
    /// Whether the connection's writer thread runs.
    pub(crate) writer: bool,
    /// Whether it is parked, waiting for messages.
    pub(crate) writer_parked: bool,
    /// Whether nothing more may be queued: CloseConnection is, or the
    /// connection closed. A sender sends on another connection.
    pub(crate) shut: bool,
}

impl Outbox {
    /// Queues a whole message (copied, its spliced pieces too: a message
    /// waits here only while another thread writes).
    pub(crate) fn push(&mut self, message: &SplicedBytes, outgoing: Outgoing) {
        message.extend_into(&mut self.bytes);
        self.messages.push(Message {
            end: self.bytes.len(),
            outgoing,
        });
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Takes everything queued as the batch to write now (the caller
    /// writes it, and calls [`written`](Self::written) once done).
    pub(crate) fn take(&mut self) -> Batch<'static> {
        let messages = std::mem::take(&mut self.messages);
        let bytes = SplicedBytes::from(std::mem::take(&mut self.bytes));
        let batch = Batch::new(Cow::Owned(bytes), messages);
        self.begin(&batch);
        batch
    }

    /// Marks `batch`, written now by the calling thread without having
    /// been queued, as being written.
    pub(crate) fn begin(&mut self, batch: &Batch<'_>) {
        self.writing = true;
        self.writing_replies.clear();
        self.writing_replies.extend(batch.replies());
    }

    /// The batch being written left whole; the writing thread may take
    /// the next.
    pub(crate) fn left(&mut self) {
        self.writing_replies.clear();
    }

    /// The writing thread is done (all written, or given up).
    pub(crate) fn written(&mut self) {
        self.writing = false;
        self.writing_replies.clear();
    }

    /// Where the message of request `id` is; a queued one is taken out
    /// (its deadline passed: it must never leave).
    pub(crate) fn departure(&mut self, id: u32) -> Departure {
        if let Some(i) = self
            .messages
            .iter()
            .position(|m| m.outgoing.reply == Some(id))
        {
            let start = i.checked_sub(1).map_or(0, |p| self.messages[p].end);
            let end = self.messages[i].end;
            self.bytes.drain(start..end);
            self.messages.remove(i);
            for m in &mut self.messages[i..] {
                m.end -= end - start;
            }
            return Departure::Withdrawn;
        }
        if self.writing_replies.contains(&id) {
            return Departure::Writing;
        }
        Departure::Left
    }

    /// Drops everything queued (the connection closed) and shuts the
    /// outbox; returns the requests whose messages never left.
    pub(crate) fn discard(&mut self) -> Vec<u32> {
        self.shut = true;
        self.bytes = Vec::new();
        std::mem::take(&mut self.messages)
            .into_iter()
            .filter_map(|m| m.outgoing.reply)
            .collect()
    }
}

/// Messages written together, in order.
#[derive(Debug)]
pub(crate) struct Batch<'a> {
    bytes: Cow<'a, SplicedBytes>,
    messages: Messages,
}

/// The messages of a batch: one (a sender writing its own, the common
/// case, costs no allocation) or many.
#[derive(Debug)]
enum Messages {
    One(Message),
    Many {
        messages: Vec<Message>,
        /// For each message, the earliest deadline of it and those after.
        deadline_from: Vec<Option<Instant>>,
    },
}

/// Why the write of a batch stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The socket failed: the connection is broken.
    Failed,
    /// The deadline of a message not yet written whole passed.
    TimedOut,
}

/// How far the write of a batch got before it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// Why it stopped.
    pub(crate) stop: Stop,
    /// How many messages (from the first) left whole.
    pub(crate) whole: usize,
    /// Whether some bytes of the next one left.
    pub(crate) partly: bool,
}

/// What a stopped write means for the request of one message not written
/// whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// None of its bytes left: it may be sent again (COMPLETED_NO).
    Unsent,
    /// Its deadline passed before it left whole: TIMEOUT, COMPLETED_NO.
    TimedOut,
}

impl<'a> Batch<'a> {
    fn new(bytes: Cow<'a, SplicedBytes>, messages: Vec<Message>) -> Self {
        let mut deadline_from = vec![None; messages.len()];
        let mut earliest: Option<Instant> = None;
        for (i, m) in messages.iter().enumerate().rev() {
            if let Some(d) = m.outgoing.deadline {
                earliest = Some(earliest.map_or(d, |e| e.min(d)));
            }
            deadline_from[i] = earliest;
        }
        Batch {
            bytes,
            messages: Messages::Many {
                messages,
                deadline_from,
            },
        }
    }

    /// A batch of one message, written by the thread that sends it (from
    /// where its pieces lie: nothing is copied).
    pub(crate) fn single(bytes: &'a SplicedBytes, outgoing: Outgoing) -> Self {
        Batch {
            bytes: Cow::Borrowed(bytes),
            messages: Messages::One(Message {
                end: bytes.len(),
                outgoing,
            }),
        }
    }

    fn messages(&self) -> &[Message] {
        match &self.messages {
            Messages::One(m) => std::slice::from_ref(m),
            Messages::Many { messages, .. } => messages,
        }
    }

    /// The messages, whole, one after another.
    pub(crate) fn bytes(&self) -> &SplicedBytes {
        &self.bytes
    }

    /// Where each message ends in [`bytes`](Self::bytes).
    pub(crate) fn ends(&self) -> impl Iterator<Item = usize> + '_ {
        self.messages().iter().map(|m| m.end)
    }

    /// Where message `i` ends in [`bytes`](Self::bytes).
    pub(crate) fn end(&self, i: usize) -> usize {
        self.messages().get(i).map_or(self.bytes.len(), |m| m.end)
    }

    /// How many messages it holds.
    pub(crate) fn len(&self) -> usize {
        self.messages().len()
    }

    /// The requests it carries (whose replies are awaited).
    fn replies(&self) -> impl Iterator<Item = u32> + '_ {
        self.messages().iter().filter_map(|m| m.outgoing.reply)
    }

    /// The earliest deadline of message `first` and those after it: what
    /// bounds the write once the messages before `first` left whole.
    pub(crate) fn deadline_from(&self, first: usize) -> Option<Instant> {
        match &self.messages {
            Messages::One(m) => m.outgoing.deadline.filter(|_| first == 0),
            Messages::Many { deadline_from, .. } => deadline_from.get(first).copied().flatten(),
        }
    }

    /// The requests of its messages whose deadline has passed by `now`
    /// (once all of them left whole: their reply waits end now).
    pub(crate) fn overdue(&self, now: Instant) -> impl Iterator<Item = u32> + '_ {
        self.messages()
            .iter()
            .filter(move |m| m.outgoing.deadline.is_some_and(|d| d <= now))
            .filter_map(|m| m.outgoing.reply)
    }

    /// What the write's stop means, at `now`, for the requests of the
    /// messages not written whole. A message of which some bytes left is
    /// left out unless its deadline passed: its request fails with the
    /// connection.
    pub(crate) fn verdicts(
        &self,
        stopped: Stopped,
        now: Instant,
    ) -> impl Iterator<Item = (u32, Verdict)> + '_ {
        self.messages()
            .iter()
            .enumerate()
            .skip(stopped.whole)
            .filter_map(move |(i, m)| {
                let id = m.outgoing.reply?;
                let overdue =
                    stopped.stop == Stop::TimedOut && m.outgoing.deadline.is_some_and(|d| d <= now);
                if overdue {
                    Some((id, Verdict::TimedOut))
                } else if i == stopped.whole && stopped.partly {
                    None
                } else {
                    Some((id, Verdict::Unsent))
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn msg(bytes: &[u8]) -> SplicedBytes {
        SplicedBytes::from(bytes.to_vec())
    }

    fn request(id: u32, deadline: Option<Instant>) -> Outgoing {
        Outgoing {
            reply: Some(id),
            deadline,
        }
    }

    #[test]
    fn a_withdrawn_message_leaves_the_others_whole_and_in_order() {
        let mut outbox = Outbox::default();
        outbox.push(&msg(b"one"), request(1, None));
        outbox.push(&msg(b"two!"), request(2, None));
        outbox.push(&msg(b"three"), request(3, None));
        outbox.push(&msg(b"close"), Outgoing::default());
        assert_eq!(outbox.departure(2), Departure::Withdrawn);
        assert_eq!(outbox.departure(2), Departure::Left);
        let batch = outbox.take();
        assert_eq!(batch.bytes().as_contiguous().unwrap(), b"onethreeclose");
        assert_eq!(batch.ends().collect::<Vec<_>>(), [3, 8, 13]);
        // Being written now: left to the writing thread.
        assert_eq!(outbox.departure(1), Departure::Writing);
        assert_eq!(outbox.departure(3), Departure::Writing);
        outbox.written();
        assert_eq!(outbox.departure(1), Departure::Left);
        assert!(!outbox.writing);
    }

    #[test]
    fn a_write_is_bounded_by_the_earliest_deadline_of_what_is_not_written_yet() {
        let now = Instant::now();
        let [soon, later] = [1, 2].map(|s| now + Duration::from_secs(s));
        let mut outbox = Outbox::default();
        outbox.push(&msg(b"a"), request(1, Some(later)));
        outbox.push(&msg(b"b"), request(2, None));
        outbox.push(&msg(b"c"), request(3, Some(soon)));
        outbox.push(&msg(b"d"), request(4, None));
        let batch = outbox.take();
        assert_eq!(batch.deadline_from(0), Some(soon));
        assert_eq!(batch.deadline_from(2), Some(soon));
        assert_eq!(batch.deadline_from(3), None);
        assert_eq!(batch.deadline_from(4), None);
    }

    #[test]
    fn a_stopped_write_tells_each_request_not_written_whole() {
        let now = Instant::now();
        let past = now - Duration::from_millis(1);
        let future = now + Duration::from_secs(1);
        let mut outbox = Outbox::default();
        outbox.push(&msg(b"a"), request(1, Some(past)));
        outbox.push(&msg(b"b"), request(2, Some(future)));
        outbox.push(&msg(b"c"), Outgoing::default());
        outbox.push(&msg(b"d"), request(4, Some(past)));
        outbox.push(&msg(b"e"), request(5, None));
        let batch = outbox.take();
        let verdicts = |stop, whole, partly| {
            let stopped = Stopped {
                stop,
                whole,
                partly,
            };
            batch.verdicts(stopped, now).collect::<Vec<_>>()
        };
        // Broken before anything left: every request may be sent again.
        assert_eq!(
            verdicts(Stop::Failed, 0, false),
            [
                (1, Verdict::Unsent),
                (2, Verdict::Unsent),
                (4, Verdict::Unsent),
                (5, Verdict::Unsent)
            ]
        );
        // Broken in the middle of the second: it fails with the
        // connection; the first left whole.
        assert_eq!(
            verdicts(Stop::Failed, 1, true),
            [(4, Verdict::Unsent), (5, Verdict::Unsent)]
        );
        // Out of time in the middle of the first: the overdue ones time
        // out, the others were not sent.
        assert_eq!(
            verdicts(Stop::TimedOut, 0, true),
            [
                (1, Verdict::TimedOut),
                (2, Verdict::Unsent),
                (4, Verdict::TimedOut),
                (5, Verdict::Unsent)
            ]
        );
        let overdue: Vec<u32> = batch.overdue(now).collect();
        assert_eq!(overdue, [1, 4]);
    }

    #[test]
    fn discarding_shuts_the_outbox_and_names_the_requests_never_sent() {
        let mut outbox = Outbox::default();
        outbox.push(&msg(b"a"), request(1, None));
        outbox.push(&msg(b"b"), Outgoing::default());
        outbox.push(&msg(b"c"), request(3, None));
        assert_eq!(outbox.discard(), [1, 3]);
        assert!(outbox.shut && outbox.is_empty());
    }
}
