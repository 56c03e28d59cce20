//! IIOP: GIOP over TCP, or over TLS (`tls.rs`). The client side keeps a
//! cache of connections (shared by requests or not, as the
//! [transport mux](mux) says) whose replies go to the reply
//! dispatchers of `reply/`, read Leader/Followers-style by the callers,
//! who wait for them as the [wait strategy](wait) says;
//! the server side accepts connections and reads requests through the
//! reactor.

pub(crate) mod client;
pub(crate) mod mux;
pub(crate) mod profiles;
pub(crate) mod reply;
pub(crate) mod server;
pub(crate) mod tls;
pub(crate) mod wait;

use armillary_giop::giop::FrameLimits;

/// Bytes read from a socket at a time.
pub(crate) const READ_BUFFER: usize = 64 * 1024;

/// The frame limits both sides apply to what a peer sends.
pub(crate) fn frame_limits() -> FrameLimits {
    FrameLimits {
        max_message_size: 128 << 20,
        max_fragments: 1 << 16,
        max_pending_bytes: 256 << 20,
        max_reassemblies: 1024,
    }
}
