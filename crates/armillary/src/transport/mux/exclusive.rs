//! The exclusive transport: a connection carries one request at a time.
//! A request takes an idle cached connection to its endpoint (no reply
//! awaited on it, nobody reading it), or opens one more while all are
//! busy; a connection whose reply has come is idle again and reused. Each
//! caller then reads its own socket (no hand-over of replies between
//! threads), at the price of a connection per concurrent caller.
//!
//! Bounded: at most [`MAX_PER_ENDPOINT`] connections per endpoint; beyond,
//! a request shares a busy one (as the muxed transport does), so that a
//! burst of callers cannot open connections without limit. Connections
//! close as any do: when the server closes them (idle timeout) or the
//! ORB shuts down.

use super::TransportMux;
use crate::transport::client::ClientConnection;

/// Most connections the exclusive transport keeps to one endpoint.
pub(crate) const MAX_PER_ENDPOINT: usize = 64;

/// One request per connection (`-ORBTransportMux exclusive`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Exclusive;

impl TransportMux for Exclusive {
    fn take(&self, conn: &ClientConnection) -> bool {
        conn.claim_if_idle()
    }

    fn max_per_endpoint(&self) -> usize {
        MAX_PER_ENDPOINT
    }
}
