//! The muxed transport: one connection per endpoint carries the requests
//! of every thread at once; each reply goes to its request's dispatcher
//! by request id. Fewest connections and no connection set-up per
//! concurrent caller; callers take turns reading the one socket.

use super::{Caller, Taken, TransportMux};
use crate::transport::client::ClientConnection;

/// Many requests per connection (`-ORBTransportMux muxed`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Muxed;

impl TransportMux for Muxed {
    fn take(&self, _conn: &ClientConnection, _caller: Caller) -> Taken {
        Taken::Shared
    }

    fn max_per_endpoint(&self) -> usize {
        1
    }
}
