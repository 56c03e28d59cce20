//! IIOP: GIOP over TCP, or over TLS (`tls.rs`). The client side keeps a
//! cache of connections (shared by requests or not, as the
//! [transport mux](mux) says) whose replies go to the reply
//! dispatchers of `reply/`, read Leader/Followers-style by the callers,
//! who wait for them as the [wait strategy](wait) says;
//! the server side accepts connections and reads requests through the
//! reactor.
//!
//! Both sides take the largest message they accept from the ORB's
//! `-ORBMaxMessageSize` (`OrbConfig::max_message_size`); a client also
//! refuses to send a request larger than that.

pub(crate) mod client;
pub(crate) mod connection_cache;
pub(crate) mod gather;
pub(crate) mod mux;
pub(crate) mod outbox;
pub(crate) mod profiles;
pub(crate) mod reply;
pub(crate) mod server;
pub(crate) mod socket_wait;
pub(crate) mod tls;
pub(crate) mod wait;

use armillary_giop::giop::FrameLimits;

/// Bytes read from a socket at a time.
pub(crate) const READ_BUFFER: usize = 64 * 1024;

/// The most of a large message read at once straight into the buffer it
/// is handed out in (see `FrameDecoder::lend_for_read`, which zeroes what
/// it lends), by a client or a server connection.
pub(crate) const DIRECT_READ: usize = 256 * 1024;

/// Messages a peer may have in reassembly at once (GIOP 1.2 interleaves
/// the fragments of several).
pub(crate) const MAX_REASSEMBLIES: usize = 1024;

/// The frame limits a client applies to what a server sends: messages,
/// reassembled ones included, of at most `max_message_size` bytes (the
/// ORB's `-ORBMaxMessageSize`, which bounds what its server side accepts
/// too).
pub(crate) fn client_frame_limits(max_message_size: usize) -> FrameLimits {
    FrameLimits {
        max_message_size,
        max_fragments: 1 << 16,
        max_pending_bytes: max_message_size.saturating_mul(2),
        max_reassemblies: MAX_REASSEMBLIES,
    }
}
