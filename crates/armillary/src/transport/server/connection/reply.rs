//! Sending replies: a request's reply sink, holding the replies of one read
//! to write them together (see [the connection's module docs](super)), and
//! writing to the socket, queueing what it will not take.

use std::io::ErrorKind;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use armillary_giop::cdr::SplicedBytes;
use armillary_giop::giop::{MessageBuilder, ReplyStatus};
use armillary_giop::system_exception::SystemException;
use armillary_giop::{ByteOrder, GiopVersion};
use mio::Interest;
use parking_lot::Mutex;

use crate::owed_reply::ReplySink;
use crate::reactor::Reactor;
use crate::servant::ReplyKind;
use crate::thread_key::ThreadKey;
use crate::thread_role;
use crate::trace::{Addr, Side};
use crate::transport::gather::write_from;

use super::{ConnStream, InProgress, ServerConnection};

/// The longest the reading thread holds a reply while it runs the other
/// requests read with it.
pub(super) const HOLD_LIMIT: Duration = Duration::from_millis(1);

/// Held replies are written as soon as they add up to this many bytes.
pub(super) const MAX_HELD_BYTES: usize = 64 * 1024;

/// Replies the reading thread holds, to write them together (see
/// [the connection's module docs](super)).
#[derive(Default)]
pub(super) struct HeldReplies {
    /// The replies held, whole messages in the order they were written
    /// (before TLS seals them), their spliced pieces still shared.
    pub(super) bytes: SplicedBytes,
    /// When the first of them was held.
    since: Option<Instant>,
}

/// The replies a thread holds on one connection, written when the thread
/// is about to block (`thread_role::write_held_replies`).
struct HeldOn {
    conn: Weak<ServerConnection>,
    reactor: Arc<Reactor>,
}

impl thread_role::HeldReplies for HeldOn {
    fn write_held(&self) {
        if let Some(conn) = self.conn.upgrade() {
            conn.write_held(&self.reactor);
        }
    }
}

/// Where the reply of one of a connection's requests goes (the sink of
/// its [`OwedReply`](crate::owed_reply::OwedReply)): written, or held
/// with the others of its read, as [`ServerConnection::send`] does. It
/// keeps the request counted as in progress until the reply is written.
///
/// A sink serves one request at a time; the connection keeps its latest
/// and serves its next request with it once the request is answered
/// ([`ServerConnection::reply_sink`]), so that a connection whose client
/// waits for each reply makes one sink, not one a request.
pub(super) struct ConnectionReplies {
    /// Weak: the connection keeps its spare sink.
    conn: Weak<ServerConnection>,
    reactor: Arc<Reactor>,
    in_progress: Mutex<Option<InProgress>>,
}

impl ReplySink for ConnectionReplies {
    /// Writes the reply, then lets its request go (an owed reply is sent
    /// once).
    fn send_reply(&self, message: SplicedBytes) {
        // The request's guard holds the connection: no upgrade needed.
        let done = self.in_progress.lock().take();
        match &done {
            Some(request) => request.conn.send(&self.reactor, message),
            None => {
                if let Some(conn) = self.conn.upgrade() {
                    conn.send(&self.reactor, message);
                }
            }
        }
        drop(done);
    }

    /// The reading thread will have moved on when the reply is written:
    /// whoever writes it then does what the reader does after serving
    /// (closing a finished connection, reading on after back-pressure).
    fn answered_later(&self) {
        let mut in_progress = self.in_progress.lock();
        *in_progress = in_progress.take().map(InProgress::handed_off);
    }
}

impl ServerConnection {
    /// Starts holding the replies this thread writes (true), unless some
    /// thread holds them already (false).
    pub(super) fn hold_replies(&self, reactor: &Arc<Reactor>) -> bool {
        if thread_role::is_waiting_for_reply() {
            return false;
        }
        if !self.replies_holder.take(ThreadKey::current()) {
            return false;
        }
        let held = HeldOn {
            conn: self.me.clone(),
            reactor: reactor.clone(),
        };
        thread_role::hold_replies(self.holding_key(), std::rc::Rc::new(held));
        true
    }

    /// Stops holding replies and writes those held.
    pub(super) fn release_replies(&self, reactor: &Arc<Reactor>) {
        thread_role::stop_holding(self.holding_key());
        self.replies_holder.let_go();
        self.write_held(reactor);
    }

    /// This connection's key among the replies a thread holds.
    fn holding_key(&self) -> usize {
        self.me.as_ptr() as usize
    }

    /// Writes the replies held (holding goes on).
    pub(super) fn write_held(&self, reactor: &Arc<Reactor>) {
        let bytes = {
            let mut held = self.held_replies.lock();
            held.since = None;
            std::mem::take(&mut held.bytes)
        };
        if !bytes.is_empty() {
            self.write(reactor, bytes);
        }
    }

    /// Writes the replies held if the first has waited `limit`.
    pub(super) fn write_held_if_older(&self, reactor: &Arc<Reactor>, limit: Duration) {
        let since = self.held_replies.lock().since;
        if since.is_some_and(|t| t.elapsed() >= limit) {
            self.write_held(reactor);
        }
    }

    /// The sink for the reply of a request counted by `in_progress`: the
    /// connection's spare, when no request holds it any more, else a new
    /// one (the spare from then on).
    pub(super) fn reply_sink(
        &self,
        reactor: &Arc<Reactor>,
        in_progress: Option<InProgress>,
    ) -> Arc<ConnectionReplies> {
        let mut spare = self.spare_sink.lock();
        // Only the connection holds it: its request was answered, and no
        // one else can take it while the lock is held.
        if let Some(sink) = spare.as_ref().filter(|s| Arc::strong_count(s) == 1) {
            *sink.in_progress.lock() = in_progress;
            return sink.clone();
        }
        let sink = Arc::new(ConnectionReplies {
            conn: self.me.clone(),
            reactor: reactor.clone(),
            in_progress: Mutex::new(in_progress),
        });
        *spare = Some(sink.clone());
        sink
    }

    /// Sends a reply whose body was encoded for the body offset of a
    /// reply header in this version and byte order (it does not depend on
    /// the status).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reply(
        &self,
        reactor: &Arc<Reactor>,
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
        kind: ReplyKind,
        body: &[u8],
    ) {
        let status = match kind {
            ReplyKind::Normal => ReplyStatus::NoException,
            ReplyKind::UserException => ReplyStatus::UserException,
            ReplyKind::SystemException => ReplyStatus::SystemException,
        };
        let mut b = MessageBuilder::reply(version, order, request_id, status);
        b.body().write_octets(body);
        self.send(reactor, b.finish_spliced(false));
    }

    pub(super) fn reply_exception(
        &self,
        reactor: &Arc<Reactor>,
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
        ex: &SystemException,
    ) {
        let mut b = MessageBuilder::reply(version, order, request_id, ReplyStatus::SystemException);
        // A system exception body is a string (an ASCII repository id) and
        // two ulongs: it encodes.
        let _ = ex.encode_body(b.body());
        self.send(reactor, b.finish_spliced(false));
    }

    /// Sends one message: held with the others of its read when this
    /// thread holds the connection's replies, else written at once.
    pub(super) fn send(&self, reactor: &Arc<Reactor>, message: SplicedBytes) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // (Nothing to send: what TLS has to say, written at once. Only
        // the holding thread finds itself the holder: the others learn
        // that they hold nothing without the lock.)
        if !message.is_empty()
            && self.replies_holder.is(ThreadKey::current())
            && !thread_role::is_waiting_for_reply()
        {
            let mut held = self.held_replies.lock();
            held.since.get_or_insert_with(Instant::now);
            held.bytes.append(message);
            if held.bytes.len() < MAX_HELD_BYTES {
                return;
            }
            held.since = None;
            let bytes = std::mem::take(&mut held.bytes);
            drop(held);
            return self.write(reactor, bytes);
        }
        self.write(reactor, message)
    }

    /// Writes `bytes` (its pieces in one vectored write), queueing what
    /// the socket will not take now (the buffer and pieces themselves, not
    /// a copy).
    fn write(&self, reactor: &Arc<Reactor>, bytes: SplicedBytes) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut out = self.outgoing.lock();
        // TLS: seal under the send lock, so records leave in order.
        let bytes = match &self.tls {
            Some(tls) => {
                let mut sealed = Vec::new();
                let plain = bytes.into_vec();
                if tls.seal(&plain, &mut sealed).is_err() {
                    drop(out);
                    self.close(reactor);
                    return;
                }
                SplicedBytes::from(sealed)
            }
            None => bytes,
        };
        if !out.is_empty() {
            out.push(bytes, 0);
            return;
        }
        let mut written = 0;
        while written < bytes.len() {
            // (The stream's lock is let go before `close` takes it.) A
            // blocking socket is the handle its thread reads, which is
            // never replaced: written without the lock.
            let result = match &self.blocking_reader {
                Some(socket) => write_from(&**socket, &bytes, written),
                None => write_from(&mut *self.stream.lock(), &bytes, written),
            };
            match result {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // The rest waits in `outgoing` for a writable event. (On a
                // blocking socket this is the write timeout: the client
                // does not take its replies, and is closed below.)
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.blocking_reader.is_none() => {
                    break
                }
                Err(e) => {
                    drop(out);
                    crate::trace::connection_broken(Side::Server, Addr(self.peer), &e);
                    self.close(reactor);
                    return;
                }
            }
        }
        if written < bytes.len() {
            out.push(bytes, written);
            if let (Some(token), ConnStream::Reactive(stream)) =
                (*self.token.lock(), &mut *self.stream.lock())
            {
                let _ = reactor.reregister(stream, token, Interest::READABLE | Interest::WRITABLE);
            }
        }
    }

    pub(super) fn flush(&self, reactor: &Arc<Reactor>) {
        let mut out = self.outgoing.lock();
        while let Some((first, from)) = out.front() {
            let r = write_from(&mut *self.stream.lock(), first, from);
            match r {
                Ok(n) if n > 0 => {
                    out.consume(n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                _ => {
                    drop(out);
                    self.close(reactor);
                    return;
                }
            }
        }
        drop(out);
        if let (Some(token), ConnStream::Reactive(stream)) =
            (*self.token.lock(), &mut *self.stream.lock())
        {
            let _ = reactor.reregister(stream, token, Interest::READABLE);
        }
        self.close_if_finished(reactor);
    }
}
