//! Transport multiplexing: whether requests to one endpoint share a
//! connection (`-ORBTransportMux`, see
//! [`crate::config::TransportMux`] for the user's view). The
//! [connection cache](super::client::ConnectionCache) asks the mux which
//! of an endpoint's cached connections a new request may use, and how
//! many it may open.
//!
//! - [`muxed`]: one connection per endpoint carries every request at once,
//!   replies matched to their requests by id (the default);
//! - [`exclusive`]: a connection carries one request at a time; more are
//!   opened while all are busy, and idle ones are reused.

mod exclusive;
mod muxed;

pub(crate) use exclusive::Exclusive;
pub(crate) use muxed::Muxed;

use super::client::ClientConnection;
use crate::config::OrbConfig;

/// Whether a request may use a cached connection.
pub(crate) trait TransportMux: Send + Sync + std::fmt::Debug {
    /// Whether a new request may use `conn` (a live cached connection to
    /// its endpoint); true takes it for that request. Asked with the
    /// endpoint's cache entry locked.
    fn take(&self, conn: &ClientConnection) -> bool;

    /// How many connections one endpoint may have. When they are all
    /// taken, a request shares one of them.
    fn max_per_endpoint(&self) -> usize;
}

/// The transport mux `config` asks for (the one place it is chosen).
pub(crate) fn mux(config: &OrbConfig) -> Box<dyn TransportMux> {
    match config.get_transport_mux() {
        crate::config::TransportMux::Exclusive => Box::new(Exclusive),
        _ => Box::new(Muxed),
    }
}
