//! Ending a connection: its idle and message timeouts (and the reactor ticks
//! that check them), refusing a client with MessageError, the orderly close
//! (CloseConnection) and the close itself.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::cdr::SplicedBytes;
use armillary_giop::giop::{FrameDecoder, MessageBody, MessageBuilder};
use armillary_giop::{ByteOrder, GiopVersion};

use crate::reactor::Reactor;
use crate::trace::{Addr, Side};

use super::{ConnStream, ServerConnection};

impl ServerConnection {
    /// After the peer closed its sending side, or sent what cannot be
    /// served: once everything it sent before is answered and the replies
    /// are written, closes (sending MessageError first in the second
    /// case).
    pub(super) fn close_if_finished(&self, reactor: &Arc<Reactor>) {
        let refused = self.refused.get();
        let finished = (self.eof.load(Ordering::SeqCst) || refused.is_some())
            && self.running.load(Ordering::SeqCst) == 0
            && self.held.load(Ordering::SeqCst) == 0
            && self.outgoing.lock().is_empty()
            && self.held_replies.lock().bytes.is_empty();
        if !finished {
            return;
        }
        if let Some(version) = refused {
            // One thread sends it, and closes after it.
            if self.message_error_sent.swap(true, Ordering::SeqCst) {
                return;
            }
            if let Ok(b) =
                MessageBuilder::new(version, ByteOrder::NATIVE, &MessageBody::MessageError)
            {
                crate::trace::message_error_sent(self.peer, version);
                self.send(reactor, b.finish_spliced(false));
            }
        }
        self.close(reactor);
    }

    /// Whether the client sent what cannot be served (see `refused`).
    pub(super) fn is_refused(&self) -> bool {
        self.refused.get().is_some()
    }

    /// Asks the reactor for a round of ticks at the connection's next
    /// deadline (the reactor has no timer of its own): the end of the idle
    /// timeout after its last activity, once nothing is in progress, and
    /// the end of the message timeout of a message being received. Called
    /// whenever one of them may have changed: after reading, when its
    /// last request in progress ends, at a tick. (A thread-per-connection
    /// connection's thread keeps them itself.)
    pub(super) fn schedule_deadline(&self, reactor: &Reactor) {
        if self.blocking_reader.is_some() || self.closed.load(Ordering::SeqCst) {
            return;
        }
        let limits = &self.shared.limits;
        let quiet =
            self.running.load(Ordering::SeqCst) == 0 && self.held.load(Ordering::SeqCst) == 0;
        let idle = limits
            .idle_timeout
            .filter(|_| quiet)
            .map(|timeout| self.last_activity() + timeout);
        let message = limits
            .message_timeout
            .zip(self.partial_since())
            .map(|(timeout, since)| since + timeout);
        if let Some(at) = idle.into_iter().chain(message).min() {
            reactor.tick_at(at);
        }
    }

    /// Whether the connection has been quiet for the idle timeout with no
    /// request in progress: nothing half-received, nothing parked. (The
    /// caller makes sure that no thread is reading or running a request.)
    pub(super) fn is_idle(&self) -> bool {
        let Some(idle) = self.shared.limits.idle_timeout else {
            return false;
        };
        self.last_activity().elapsed() >= idle
            && self.held.load(Ordering::SeqCst) == 0
            && self.running.load(Ordering::SeqCst) == 0
            && self.decoder.lock().is_idle()
    }

    /// Whether a message begun on this connection has not been finished
    /// within the message timeout.
    pub(super) fn message_overdue(&self) -> bool {
        overdue(self.shared.limits.message_timeout, self.partial_since())
    }

    /// Refuses the connection (see [`refuse`](Self::refuse)) and closes
    /// it with MessageError once what was read before is answered: at
    /// once when nothing is in progress, else when the last request in
    /// progress ends.
    pub(super) fn message_error(&self, reactor: &Arc<Reactor>) {
        self.refuse();
        self.close_if_finished(reactor);
    }

    /// Records that the client sent what cannot be served: nothing more
    /// is read, and the MessageError is sent in the connection's version
    /// now (GIOP 1.2 at most). The first reason stays.
    pub(super) fn refuse(&self) {
        self.refused
            .refuse(self.version.get().min(GiopVersion::V1_2));
    }

    /// Sends CloseConnection, then closes.
    pub(crate) fn close_orderly(&self, reactor: &Arc<Reactor>) {
        let version = self.version.get();
        if let Ok(b) =
            MessageBuilder::new(version, ByteOrder::NATIVE, &MessageBody::CloseConnection)
        {
            self.send(reactor, b.finish_spliced(false));
        }
        if let Some(tls) = &self.tls {
            tls.send_close_notify();
            self.send(reactor, SplicedBytes::default());
        }
        self.close(reactor);
    }

    pub(in crate::transport::server) fn close(&self, reactor: &Arc<Reactor>) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // The replies held go out first, and a MessageError or
        // CloseConnection sent while they were held after them.
        self.write_held(reactor);
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        crate::trace::connection_closed(Side::Server, Addr(self.peer), self.close_reason());
        // Give back what a partly received message held, before the peer
        // can see the close: once it has, it may rightly expect another
        // connection to fit in the budget this one freed.
        let charged = self.charged.swap(0, Ordering::SeqCst);
        self.shared
            .partial_bytes
            .fetch_sub(charged, Ordering::SeqCst);
        let token = self.token.lock().take();
        let mut stream = self.stream.lock();
        let _ = stream.flush();
        stream.shutdown();
        if let (Some(token), ConnStream::Reactive(s)) = (token, &mut *stream) {
            reactor.deregister(s, token);
        }
        if matches!(*stream, ConnStream::Reactive(_)) {
            // The descriptor is free now, whoever still holds the
            // connection (a request parked by a POA manager, say). (A
            // blocking socket is freed when its thread ends.)
            *stream = ConnStream::Closed;
        }
        drop(stream);
        if let Some(mut decoder) = self.decoder.try_lock() {
            *decoder = FrameDecoder::new(self.shared.limits.frame);
        }
        self.partial_since.set(None, self.opened);
        self.outgoing.lock().clear();
        self.held_replies.lock().bytes = SplicedBytes::default();
    }
}

/// Whether a message begun `since` (none is being received: `None`) has
/// outlived the message timeout `limit` (none: `None`).
pub(super) fn overdue(limit: Option<Duration>, since: Option<Instant>) -> bool {
    match (limit, since) {
        (Some(limit), Some(since)) => since.elapsed() >= limit,
        _ => false,
    }
}
