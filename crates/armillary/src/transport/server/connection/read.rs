//! Reading a connection: taking in what arrived (under the read gate, or on
//! the connection's own thread), framing and decoding it into the messages
//! of one read, within the limits on partial messages and back-pressure.

use std::io::{ErrorKind, Read};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use armillary_giop::cdr::codeset::{CodeSetContext, CodeSets};
use armillary_giop::cdr::SplicedBytes;
use armillary_giop::giop::{
    Frame, FrameError, GiopError, KnownServiceContext, Message, MessageBody,
};
use armillary_giop::GiopVersion;
use smallvec::SmallVec;

use crate::reactor::Reactor;
use crate::trace::{Addr, Side};

use super::close::overdue;
use super::reply::HOLD_LIMIT;
use super::{InProgress, ServerConnection};

/// The frames one read completed: most often one (a synchronous client
/// sends its next request after the reply), kept inline so that the
/// read allocates no list.
type ReadFrames = SmallVec<[Frame; 1]>;

/// The messages decoded from one read's frames, with their frames.
type ReadMessages = SmallVec<[ReadMessage; 1]>;

/// A message read, with its frame: a few hundred bytes, so it is served
/// where it lies, by reference; a path that must keep it past the read
/// (another thread runs it, a holding POA manager parks it) takes it out.
pub(super) type ReadMessage = Option<(Frame, Message)>;

/// Whether a client may send a message of this kind to a server: not a
/// reply, nor a fragment outside a fragmented message.
fn client_may_send(body: &MessageBody) -> bool {
    !matches!(
        body,
        MessageBody::Reply(_) | MessageBody::LocateReply(_) | MessageBody::Fragment { .. }
    )
}

/// Whether a read's messages were all oneways (requests that want no
/// reply): the reads after which a reader wakes the pacer (see
/// `crate::pacer`). An empty read (a timeout) is not.
fn all_oneways(messages: &ReadMessages) -> bool {
    !messages.is_empty()
        && messages.iter().all(|m| {
            matches!(m, Some((_, msg)) if matches!(&msg.body, MessageBody::Request(h) if !h.response_expected()))
        })
}

impl ServerConnection {
    /// Reads while data is there (only one thread at a time does so), then
    /// serves what it read. The read gate is released before the requests
    /// run, so that another thread of the pool can read and serve the
    /// connection's next request meanwhile: a servant that calls back into
    /// this server (a nested upcall multiplexed on the same connection)
    /// does not wait for itself. Reading stops while the connection's
    /// requests or queued replies are at their limit, and goes on here
    /// once they are below it.
    pub(super) fn read_ready(&self, reactor: &Arc<Reactor>) {
        loop {
            {
                let mut gate = self.gate.lock();
                if gate.busy {
                    gate.again = true;
                    return;
                }
                gate.busy = true;
            }
            let mut messages = ReadMessages::new();
            loop {
                let mut frames = ReadFrames::new();
                self.read_frames(reactor, messages.len(), &mut frames);
                self.decode_read(frames, &mut messages);
                let mut gate = self.gate.lock();
                if gate.again && !self.closed.load(Ordering::SeqCst) && !self.is_refused() {
                    gate.again = false;
                    continue;
                }
                // Code sets come with the first requests; they must be known
                // before any request of the connection runs on another thread.
                self.note_codesets(&messages);
                self.running.fetch_add(messages.len(), Ordering::SeqCst);
                gate.busy = false;
                break;
            }
            if self.paces_after(&messages) {
                // A reactor thread: the pacer is woken before its next wait
                // in the poll (see `crate::pacer`).
                reactor.pace_before_wait();
            }
            if messages.len() > 1 && self.concurrency.promotes_followers() {
                for (frame, msg) in messages.drain(1..).flatten() {
                    self.hand_to_follower(reactor, frame, msg);
                }
            }
            self.serve_read(reactor, &mut messages, || self.counted(reactor));
            self.close_if_finished(reactor);
            if !self.take_resumable() {
                self.schedule_deadline(reactor);
                return;
            }
        }
    }

    /// Whether the thread that read `messages` wakes the pacer before it
    /// waits again: the server paces and they were all oneways.
    fn paces_after(&self, messages: &ReadMessages) -> bool {
        self.shared.pacer.is_some() && all_oneways(messages)
    }

    /// Posts a message read with others to the reactor, where a free
    /// thread takes it in its turn and serves it (see
    /// [`ServerConcurrency::promotes_followers`](super::ServerConcurrency::promotes_followers));
    /// it is counted as running already, and stays so until answered.
    fn hand_to_follower(&self, reactor: &Arc<Reactor>, frame: Frame, msg: Message) {
        let Some(in_progress) = self.counted(reactor) else {
            return;
        };
        let in_progress = in_progress.handed_off();
        let conn = in_progress.conn.clone();
        let reactor2 = reactor.clone();
        reactor.post(Box::new(move || {
            conn.serve(&reactor2, &mut Some((frame, msg)), Some(in_progress));
        }));
    }

    /// Whether the connection's requests in progress (with `more` just
    /// read) or its queued replies are at their limit: then it is not
    /// read until they drain.
    fn over_limits(&self, more: usize) -> bool {
        let limits = &self.shared.limits;
        let outstanding =
            self.running.load(Ordering::SeqCst) + self.held.load(Ordering::SeqCst) + more;
        outstanding >= limits.max_outstanding_requests
            || self.outgoing.lock().len() >= limits.max_queued_reply_bytes
    }

    /// Whether reading stopped for back-pressure and may go on now (the
    /// caller then reads).
    pub(super) fn take_resumable(&self) -> bool {
        self.read_paused.load(Ordering::SeqCst)
            && !self.closed.load(Ordering::SeqCst)
            && !self.over_limits(0)
            && self.read_paused.swap(false, Ordering::SeqCst)
    }

    /// Takes the code sets a client announces from the requests in
    /// `messages`, until it has announced them.
    fn note_codesets(&self, messages: &[ReadMessage]) {
        if self.codesets_known.load(Ordering::Relaxed) {
            return;
        }
        for (_, msg) in messages.iter().flatten() {
            if let MessageBody::Request(h) = &msg.body {
                for ctx in &h.service_contexts {
                    if let Ok(Some(KnownServiceContext::CodeSets(cs))) = ctx.decode_known() {
                        self.set_codesets(cs);
                        self.codesets_known.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    pub(super) fn set_codesets(&self, ctx: CodeSetContext) {
        if let Ok(cs) = CodeSets::from_context(&ctx) {
            self.codesets.set(cs);
        }
    }

    /// Accounts for what the decoder holds after a read: the server's
    /// budget for partly received messages, and when the message being
    /// received began (`completed`: a message was finished by this read,
    /// so whatever follows it began now). False when the connection must
    /// be refused: over the budget, or its message is overdue.
    fn account_partial(&self, pending: usize, idle: bool, completed: bool) -> bool {
        // A read that leaves the charge as it was (most reads) changes
        // nothing; else the swap says what was charged (`close` may have
        // taken it back meanwhile).
        let mut before = self.charged.load(Ordering::SeqCst);
        if before != pending {
            before = self.charged.swap(pending, Ordering::SeqCst);
        }
        // The budget is shared by every connection: a read that leaves the
        // charge as it was (most reads: whole messages, nothing left over)
        // only looks at it.
        let partial_bytes = &self.shared.partial_bytes;
        let total = match pending.cmp(&before) {
            std::cmp::Ordering::Equal => partial_bytes.load(Ordering::SeqCst),
            std::cmp::Ordering::Greater => {
                partial_bytes.fetch_add(pending - before, Ordering::SeqCst) + (pending - before)
            }
            std::cmp::Ordering::Less => {
                partial_bytes.fetch_sub(before - pending, Ordering::SeqCst) - (before - pending)
            }
        };
        // When the message being received began (only the reading thread
        // changes it), and whether it is overdue (`message_overdue`).
        let held = self.partial_since();
        let since = match held {
            _ if idle => None,
            Some(since) if !completed => Some(since),
            _ => Some(Instant::now()),
        };
        if since != held {
            self.partial_since.set(since, self.opened);
        }
        let late = overdue(self.shared.limits.message_timeout, since);
        total <= self.shared.limits.max_partial_bytes && !late
    }

    /// Thread per connection: read and serve until the connection closes.
    /// The read times out as often as the idle or message timeout needs
    /// (see the acceptor); the thread then closes an idle connection with
    /// CloseConnection, or an overdue one with MessageError. Requests run
    /// on this thread (unless a POA's model hands them off: they count as
    /// running until answered, so the connection is not idle meanwhile);
    /// replies are written blocking, which is this model's back-pressure.
    pub(in crate::transport::server) fn serve_blocking(&self, reactor: &Arc<Reactor>) {
        // Whether the last read held nothing but oneways: the reader then
        // wakes the pacer before it reads again (see `crate::pacer`).
        let mut only_oneways = false;
        while !self.closed.load(Ordering::SeqCst) {
            if only_oneways {
                if let Some(pacer) = &self.shared.pacer {
                    pacer.wake();
                }
            }
            let mut messages = ReadMessages::new();
            self.read_messages(reactor, &mut messages);
            only_oneways = self.paces_after(&messages);
            if messages.is_empty() && !self.is_refused() && self.is_idle() {
                self.close_orderly(reactor);
                return;
            }
            self.serve_read(reactor, &mut messages, || self.in_progress(reactor));
            if self.message_overdue() {
                self.trace_overdue();
                self.refuse();
            }
            if self.eof.load(Ordering::SeqCst) || self.is_refused() {
                // Closed now if everything is answered (after MessageError
                // when refused); else by the last request in progress (one
                // a POA's model or the request filter runs on another
                // thread, or one a POA manager holds) when it ends.
                self.close_if_finished(reactor);
                return;
            }
        }
    }

    /// Thread per connection, while the connection's thread waits for a
    /// reply inside an upcall: reads what has arrived (waiting 1 ms at
    /// most) and serves it there and then (a nested call back into this
    /// server on this connection). True if it served anything.
    pub(in crate::transport::server) fn serve_available(&self, reactor: &Arc<Reactor>) -> bool {
        let Some(reader) = &self.blocking_reader else {
            return false;
        };
        let Ok(before) = reader.read_timeout() else {
            return false;
        };
        if reader
            .set_read_timeout(Some(std::time::Duration::from_millis(1)))
            .is_err()
        {
            return false;
        }
        let mut messages = ReadMessages::new();
        self.read_messages(reactor, &mut messages);
        if reader.set_read_timeout(before).is_err() {
            self.close(reactor);
        }
        let served = !messages.is_empty();
        for mut read in messages {
            self.serve(reactor, &mut read, self.in_progress(reactor));
        }
        served
    }

    /// Reads what is there and decodes it into `messages` (a thread of its
    /// own per connection: no back-pressure count of messages read before).
    fn read_messages(&self, reactor: &Arc<Reactor>, messages: &mut ReadMessages) {
        let mut frames = ReadFrames::new();
        self.read_frames(reactor, 0, &mut frames);
        self.decode_read(frames, messages);
    }

    /// Reads what is there and adds the whole messages it completed to
    /// `frames` (`already`: those the caller read before, for the
    /// back-pressure check). Stops at end of stream (which it records),
    /// when the socket has nothing more, when the connection is at its
    /// limits, or when the stream cannot be decoded or breaks a limit
    /// (which refuses the connection: the messages completed before are
    /// still given, to be answered before MessageError). The lists are
    /// the caller's, filled in place: a request's frame and message are a
    /// few hundred bytes, and a list returned would move them again.
    fn read_frames(&self, reactor: &Arc<Reactor>, already: usize, frames: &mut ReadFrames) {
        let mut buf = self.read_buf.lock();
        loop {
            if self.closed.load(Ordering::SeqCst)
                || self.eof.load(Ordering::SeqCst)
                || self.is_refused()
            {
                return;
            }
            if self.blocking_reader.is_none() && self.over_limits(already + frames.len()) {
                // Back-pressure: read on once the requests are answered
                // and the replies written (`take_resumable`).
                self.trace_backpressure();
                self.read_paused.store(true, Ordering::SeqCst);
                return;
            }
            // The rest of a large message arriving is read straight into
            // its own buffer (not over TLS, whose records are opened
            // first): its body then reaches the frame with no copy.
            let mut direct = match &self.tls {
                None => self
                    .decoder
                    .lock()
                    .lend_for_read(crate::transport::DIRECT_READ),
                Some(_) => None,
            };
            let (n, room) = {
                let target: &mut [u8] = match &mut direct {
                    Some(lent) => lent.room(),
                    None => &mut buf,
                };
                let room = target.len();
                let n = match &self.blocking_reader {
                    // Thread per connection: block without holding the lock.
                    Some(reader) => (&**reader).read(target),
                    None => self.stream.lock().read(target),
                };
                (n, room)
            };
            if !matches!(n, Ok(1..)) {
                if let Some(lent) = direct.take() {
                    // Nothing read into it: the decoder takes it back as it
                    // was.
                    let _ = self.decoder.lock().handle_direct_read(lent, 0);
                }
            }
            match n {
                Ok(0) => {
                    // The peer will send nothing more: answer what it sent,
                    // then close (a message it left unfinished never ends).
                    self.eof.store(true, Ordering::SeqCst);
                    self.peer_closed.store(true, Ordering::SeqCst);
                    return;
                }
                Ok(n) => {
                    self.last_activity.set(Some(Instant::now()), self.opened);
                    let mut plain = Vec::new();
                    let data = match &self.tls {
                        _ if direct.is_some() => &[][..],
                        None => &buf[..n],
                        Some(tls) => match tls.open(&buf[..n], &mut plain) {
                            Ok(opened) => {
                                if opened.wants_write {
                                    // Handshake messages.
                                    self.send(reactor, SplicedBytes::default());
                                }
                                if opened.closed {
                                    self.close(reactor);
                                }
                                &plain[..]
                            }
                            Err(_) => {
                                // Not TLS, or a client refused: send the
                                // alert and close.
                                self.send(reactor, SplicedBytes::default());
                                self.close(reactor);
                                return;
                            }
                        },
                    };
                    let mut decoder = self.decoder.lock();
                    let decoded = match direct.take() {
                        Some(lent) => decoder.handle_direct_read(lent, n),
                        None => decoder.handle_bytes(data),
                    };
                    // The messages completed before any error.
                    let before = frames.len();
                    while let Some(f) = decoder.poll_frame() {
                        frames.push(f);
                    }
                    if let Err(e) = decoded {
                        drop(decoder);
                        self.frame_error(&e);
                        return;
                    }
                    let (pending, idle) = (decoder.pending_bytes(), decoder.is_idle());
                    drop(decoder);
                    if !self.account_partial(pending, idle, frames.len() > before) {
                        self.trace_partial_refused();
                        self.refuse();
                        return;
                    }
                    // A thread blocking on its connection serves what it
                    // has before it reads again (a read that filled its
                    // room exactly, as a direct read ending a message
                    // does, would otherwise block until the next request).
                    let blocking_with_frames =
                        self.blocking_reader.is_some() && frames.len() > before;
                    if (n < room || blocking_with_frames)
                        && !self.peer_closed.load(Ordering::SeqCst)
                    {
                        // The socket was drained by this read: with epoll in
                        // edge-triggered mode any later data raises a new
                        // event, so the read that would only say WouldBlock
                        // is skipped (one syscall less per request). Not so
                        // once the peer has closed: the event that said so
                        // has been taken, so read on to the end of stream.
                        return;
                    }
                }
                // Nothing more now; for a blocking socket, its read timeout
                // expired (WouldBlock on Unix, TimedOut on Windows).
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    crate::trace::connection_broken(Side::Server, Addr(self.peer), &e);
                    self.close(reactor);
                    return;
                }
            }
        }
    }

    /// Refuses a stream that cannot be decoded (MessageError once what
    /// was read before is answered); for a message in a GIOP version this
    /// ORB does not speak, in the highest version both sides understand,
    /// as GIOP asks.
    fn frame_error(&self, e: &FrameError) {
        crate::trace::frame_refused(
            Side::Server,
            Addr(self.peer),
            e,
            Some(&self.shared.limits.frame),
        );
        if let FrameError::Header {
            source: GiopError::UnsupportedVersion(v),
            ..
        } = e
        {
            self.version.set(if *v > GiopVersion::V1_2 {
                GiopVersion::V1_2
            } else {
                GiopVersion::V1_0
            });
        }
        self.refuse();
    }

    /// Decodes the messages read, in order, into `messages` (after those
    /// there), up to the first that does not decode or that a client may
    /// not send (a reply or a lone fragment): that one refuses the
    /// connection, and those after it are dropped unread. Every message
    /// kept is answered before the MessageError.
    fn decode_read(&self, frames: ReadFrames, messages: &mut ReadMessages) {
        messages.reserve(frames.len());
        for frame in frames {
            match frame.message() {
                Ok(msg) if client_may_send(&msg.body) => messages.push(Some((frame, msg))),
                other => {
                    crate::trace::message_rejected(self.peer, &RejectedMessage(other.err()));
                    self.refuse();
                    break;
                }
            }
        }
    }

    /// Serves the messages of one read in turn, `in_progress` giving each
    /// its guard. Where the model allows it (`coalesces_replies`), the
    /// replies of several go out together: held while they run and
    /// written at the end (see [the connection's module docs](super)).
    fn serve_read(
        &self,
        reactor: &Arc<Reactor>,
        messages: &mut ReadMessages,
        in_progress: impl Fn() -> Option<InProgress>,
    ) {
        let hold = messages.len() > 1
            && self.concurrency.coalesces_replies()
            && self.hold_replies(reactor);
        for read in messages.iter_mut() {
            if hold {
                self.write_held_if_older(reactor, HOLD_LIMIT);
            }
            self.serve(reactor, read, in_progress());
        }
        if hold {
            self.release_replies(reactor);
        }
    }
}

/// Why a message read was refused, for its event: it did not decode, or
/// a client may not send it.
struct RejectedMessage(Option<GiopError>);

impl std::fmt::Display for RejectedMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(e) => write!(f, "a message that does not decode: {e}"),
            None => f.write_str("a message a client may not send (a reply or a lone fragment)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use armillary_giop::giop::{MessageBuilder, RequestFields, TargetRef};
    use armillary_giop::ByteOrder;

    fn request(response_flags: u8) -> ReadMessage {
        let fields = RequestFields {
            request_id: 7,
            response_flags,
            reserved: [0; 3],
            target: TargetRef::Key(b"key"),
            operation: "ping",
            service_contexts: &[],
            requesting_principal: &[],
        };
        let bytes = MessageBuilder::request(GiopVersion::V1_2, ByteOrder::NATIVE, &fields)
            .unwrap()
            .finish(false);
        let message = Message::decode(&bytes).unwrap();
        let frame = Frame {
            bytes: bytes.into(),
            fragments: 1,
            fragment_starts: Vec::new(),
        };
        Some((frame, message))
    }

    #[test]
    fn only_reads_of_nothing_but_oneways_wake_the_pacer() {
        let read = |flags: &[u8]| -> ReadMessages { flags.iter().map(|&f| request(f)).collect() };
        assert!(all_oneways(&read(&[0])));
        assert!(all_oneways(&read(&[0, 0, 0])));
        assert!(!all_oneways(&read(&[0, 3])));
        // A oneway with SYNC_WITH_SERVER is answered: a reply is written.
        assert!(!all_oneways(&read(&[1])));
        assert!(!all_oneways(&read(&[])));
        // A message another thread has taken.
        assert!(!all_oneways(&[None].into_iter().collect()));
    }
}
