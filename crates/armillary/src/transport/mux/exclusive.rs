//! The exclusive transports: a connection carries one request at a time.
//! A request takes an idle cached connection to its endpoint (no reply
//! awaited on it, nobody reading it), or opens one more while all are
//! busy; a connection whose reply has come is idle again and reused. Each
//! caller then reads its own socket (no hand-over of replies between
//! threads), at the price of a connection per concurrent caller.
//!
//! Two forms: every request so (`-ORBTransportMux exclusive`), or only
//! synchronous calls and oneways (`exclusive-calls`, the default), while
//! deferred and asynchronous requests, whose replies the ORB reads for
//! them, share the first connection as on a muxed one: a burst of them
//! then needs neither a connection nor a reader thread each.
//!
//! Bounded: at most `-ORBMaxConnectionsPerServer` connections per
//! endpoint (8 by default); beyond, a request shares a busy one (as the
//! muxed transport does), so that a burst of callers cannot open
//! connections without limit. Connections close as any do: when the
//! server closes them (idle timeout) or the ORB shuts down.

use super::{Caller, Taken, TransportMux};
use crate::transport::client::{Claim, ClientConnection};

/// One request per connection (`-ORBTransportMux exclusive`), or one
/// synchronous call per connection (`exclusive-calls`, the default).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exclusive {
    /// Most connections to one endpoint.
    pub(crate) max_per_endpoint: usize,
    /// Whether deferred and asynchronous requests share a connection.
    pub(crate) deferred_share: bool,
}

impl TransportMux for Exclusive {
    fn take(&self, conn: &ClientConnection, caller: Caller) -> Taken {
        if caller == Caller::Defers && self.deferred_share {
            Taken::Shared
        } else {
            match conn.claim_if_idle() {
                Claim::Claimed => Taken::Claimed,
                Claim::Busy => Taken::No,
                Claim::Closed => Taken::Closed,
            }
        }
    }

    fn max_per_endpoint(&self) -> usize {
        self.max_per_endpoint
    }
}
