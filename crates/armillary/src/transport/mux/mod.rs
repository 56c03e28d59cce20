//! Transport multiplexing: whether requests to one endpoint share a
//! connection (`-ORBTransportMux`, see
//! [`crate::config::TransportMux`] for the user's view). The
//! [connection cache](super::connection_cache::ConnectionCache) asks the mux which
//! of an endpoint's cached connections a new request may use, and how
//! many it may open.
//!
//! - [`exclusive`]: a connection carries one request at a time (or one
//!   synchronous call, deferred requests sharing: the default); more are
//!   opened while all are busy (up to a bound), and idle ones are reused;
//! - [`muxed`]: one connection per endpoint carries every request at once,
//!   replies matched to their requests by id.

mod exclusive;
mod muxed;

pub(crate) use exclusive::Exclusive;
pub(crate) use muxed::Muxed;

use super::client::ClientConnection;
use crate::config::OrbConfig;

/// How a request's reply is waited for: what the mux weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// The calling thread waits for the reply at once and reads it (a
    /// synchronous call; a oneway).
    Waits,
    /// The reply is taken later, or read for the caller by the ORB
    /// (deferred and asynchronous requests: DII deferred, AMI).
    Defers,
}

/// What a mux says of a cached connection for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Not for this request.
    No,
    /// Taken for this request alone, until it has bound its reply (see
    /// `ClientConnection::claim_if_idle`), and known open.
    Claimed,
    /// Shared with the requests already on it.
    Shared,
    /// Found closed (the server closed it, or it failed): the cache drops
    /// it.
    Closed,
}

/// Whether a request may use a cached connection.
pub(crate) trait TransportMux: Send + Sync + std::fmt::Debug {
    /// Whether a new request whose caller `caller` may use `conn` (a live
    /// cached connection to its endpoint), and how. Asked with the
    /// endpoint's cache entry locked.
    fn take(&self, conn: &ClientConnection, caller: Caller) -> Taken;

    /// How many connections one endpoint may have. When they are all
    /// taken, a request shares one of them.
    fn max_per_endpoint(&self) -> usize;
}

/// The transport mux `config` asks for (the one place it is chosen).
pub(crate) fn mux(config: &OrbConfig) -> Box<dyn TransportMux> {
    match config.get_transport_mux() {
        crate::config::TransportMux::Muxed => Box::new(Muxed),
        mux => Box::new(Exclusive {
            max_per_endpoint: config.get_max_connections_per_server(),
            deferred_share: mux != crate::config::TransportMux::Exclusive,
        }),
    }
}
