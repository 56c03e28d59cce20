//! The `tracing` events of a connection: why it closes, the limits it
//! reaches, reading stopped for back-pressure.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use crate::trace::{Addr, Side};

use super::ServerConnection;

/// The events of a connection (see `crate::trace`).
impl ServerConnection {
    /// The client's address.
    pub(in crate::transport::server) fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Why the connection is closing, as its closed event says.
    pub(super) fn close_reason(&self) -> &'static str {
        if self.message_error_sent.load(Ordering::SeqCst) {
            "message_error"
        } else if self.eof.load(Ordering::SeqCst) {
            "peer_closed"
        } else {
            "closed"
        }
    }

    /// A message overdue: the message timeout is reached.
    #[cold]
    pub(super) fn trace_overdue(&self) {
        if !tracing::level_enabled!(tracing::Level::WARN) {
            return;
        }
        if let (Some(limit), true) = (self.shared.limits.message_timeout, self.message_overdue()) {
            let detail = format_args!("a message not finished within {limit:?}");
            crate::trace::limit_reached(
                Side::Server,
                Addr(self.peer),
                "-ORBMessageTimeout",
                limit.as_millis().try_into().unwrap_or(usize::MAX),
                &detail,
            );
        }
    }

    /// Refused after a read: over the budget of partly received messages,
    /// or overdue.
    #[cold]
    pub(super) fn trace_partial_refused(&self) {
        if !tracing::level_enabled!(tracing::Level::WARN) {
            return;
        }
        if self.message_overdue() {
            return self.trace_overdue();
        }
        let limit = self.shared.limits.max_partial_bytes;
        let detail = format_args!("partly received messages hold more than {limit} bytes");
        crate::trace::limit_reached(
            Side::Server,
            Addr(self.peer),
            "-ORBMaxPartialBytes",
            limit,
            &detail,
        );
    }

    /// Reading stops for back-pressure.
    #[cold]
    pub(super) fn trace_backpressure(&self) {
        if !tracing::level_enabled!(tracing::Level::DEBUG) {
            return;
        }
        let limits = &self.shared.limits;
        let (limit, value) = if self.outgoing.lock().len() >= limits.max_queued_reply_bytes {
            ("-ORBMaxQueuedReplyBytes", limits.max_queued_reply_bytes)
        } else {
            (
                "-ORBMaxOutstandingRequests",
                limits.max_outstanding_requests,
            )
        };
        crate::trace::backpressure(self.peer, limit, value);
    }
}
