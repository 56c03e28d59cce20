//! What the ORB reports, through the [`tracing`](https://docs.rs/tracing)
//! crate: a span per request on each side and events for what happens to
//! connections and requests. Nothing is printed unless the application
//! installs a `tracing` subscriber (the ORB, a library, installs none);
//! the `armillary` command and the examples install one that honours
//! `-ORBTraceLevel` ([`TraceLevel`](crate::config::TraceLevel)) and
//! `RUST_LOG` (`docs/tracing.md`).
//!
//! With no subscriber interested, a request costs one check of a level per
//! span (the `tracing` macros' own), and nothing is formatted or
//! allocated: field values are computed only for a subscriber that wants
//! them.
//!
//! # Spans
//!
//! | name | target | level | fields |
//! |---|---|---|---|
//! | `armillary.client.request` | `armillary::client` | DEBUG | `operation`, `request_id`, `object_key`, `peer` (the server's `host:port`), `local` (this end's address), `giop`, then `outcome` and, for a system exception, `exception` |
//! | `armillary.server.request` | `armillary::server` | DEBUG | `operation`, `request_id`, `object_key`, `peer` (the client's address), `giop`, then `outcome` and, for a system exception the ORB raised, `exception` |
//!
//! A client span covers one attempt at a request: one GIOP Request
//! message, from the moment it is written to its reply (a call that is
//! forwarded or sent again makes one span per attempt, each with its own
//! request id). It is a child of the span current where the call is made,
//! so a call a servant makes nests under that servant's request. A
//! server span covers one upcall, from its start until its reply is
//! written (for an AMH servant, until its responder answers); the servant
//! runs inside it, so its own events carry the request's fields. It has no
//! parent. Collocated calls (`-ORBCollocation thru-poa` or `direct`, the
//! default for objects of the same process) make no spans.
//!
//! `outcome` is one of `normal`, `user_exception`, `system_exception`,
//! `location_forward`, and on the client `needs_addressing_mode`,
//! `resent` (the server closed the connection before it read the
//! request: sent again) and `oneway` (no reply awaited).
//! `object_key` is the key as text when it is printable, else in
//! hexadecimal (a key longer than 24 bytes as its first 8 and last 16,
//! around a `…`): the same on both sides. Request ids are numbered per
//! connection, so a call is followed across processes by the client's
//! `local` address and `request_id`, which are the server's `peer` and
//! `request_id`.
//!
//! # Events
//!
//! | name | target | level | fields |
//! |---|---|---|---|
//! | `armillary.connection.opened` | `armillary::client` / `armillary::server` | INFO | `side`, `peer`, `local` (client), `tls` |
//! | `armillary.connection.closed` | `armillary::client` / `armillary::server` | INFO | `side`, `peer`, `reason` (server: `peer_closed`, `message_error`, `closed`; client: `orderly`, `broken`, `tls_refused`, `dropped`) |
//! | `armillary.connection.refused` | `armillary::server` | WARN | `peer`, `limit` (the option), `value`: accepted and closed at once |
//! | `armillary.connection.broken` | `armillary::client` / `armillary::server` | WARN | `side`, `peer`, `error` |
//! | `armillary.message.rejected` | `armillary::server` | WARN | `peer`, `error`: what a client sent cannot be served (MessageError follows) |
//! | `armillary.message_error.sent` | `armillary::server` | WARN | `peer`, `giop` |
//! | `armillary.message_error.received` | `armillary::client` | WARN | `peer` |
//! | `armillary.limit.reached` | `armillary::client` / `armillary::server` | WARN | `side`, `peer`, `limit` (the `-ORB…` option), `value`, `detail` |
//! | `armillary.limit.backpressure` | `armillary::server` | DEBUG | `peer`, `limit`, `value`: the server stops reading a connection until its requests or replies drain |
//! | `armillary.servant.panicked` | `armillary::servant` | ERROR | `panic` (the message): the request ends with UNKNOWN (`SERVANT_PANICKED`) |
//! | `armillary.amh.responder_dropped` | `armillary::servant` | WARN | `operation`: the request ends with NO_RESPONSE |
//! | `armillary.ami.unhandled_exception` | `armillary::ami` | WARN | `call`, `exception`, `handler_method`; its message is the line `armillary: CALL raised EXCEPTION, and its AMI reply handler does not implement METHOD` |
//! | `armillary.metrics.listening` | `armillary::metrics` | INFO | `address`: where `-ORBMetricsEndpoint` serves |
//! | `armillary.metrics.bad_request` | `armillary::metrics` | DEBUG | `peer`, `error`: a request the metrics endpoint did not serve |
//!
//! The server's limits (`docs/reliability.md`) that `limit.reached` names:
//! `-ORBMaxMessageSize`, `-ORBMaxFragments`, `-ORBMaxPartialBytes`,
//! `-ORBMessageTimeout` (server side, then MessageError), and
//! `-ORBMaxMessageSize` (client side: a request not sent, a reply
//! refused), `-ORBClientMaxOutstanding` (a call that timed out waiting
//! for a free slot); `connection.refused` names `-ORBMaxConnections` and
//! `-ORBMaxConnectionThreads`; `limit.backpressure`
//! `-ORBMaxOutstandingRequests` and `-ORBMaxQueuedReplyBytes`.
//!
//! Events inside a request's span (a servant's panic, an error while its
//! reply is awaited) show its fields too with a subscriber that prints
//! spans, as `tracing-subscriber`'s `fmt` does.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use armillary_giop::giop::{OperationName, RequestHeader};
use armillary_giop::system_exception::SystemException;
use armillary_giop::GiopVersion;
use tracing::field::Empty;
use tracing::Span;

use crate::metrics::RequestMetrics;

/// The client span of one request (see the [module docs](self)).
pub const CLIENT_REQUEST: &str = "armillary.client.request";
/// The server span of one upcall.
pub const SERVER_REQUEST: &str = "armillary.server.request";
/// A connection was opened (accepted, or connected).
pub const CONNECTION_OPENED: &str = "armillary.connection.opened";
/// A connection was closed.
pub const CONNECTION_CLOSED: &str = "armillary.connection.closed";
/// A connection was accepted and closed at once: a limit was reached.
pub const CONNECTION_REFUSED: &str = "armillary.connection.refused";
/// A connection failed: a read or write error, an end of stream without
/// CloseConnection, bytes that are not GIOP.
pub const CONNECTION_BROKEN: &str = "armillary.connection.broken";
/// A client sent what the server cannot serve.
pub const MESSAGE_REJECTED: &str = "armillary.message.rejected";
/// The server sent MessageError and closes the connection.
pub const MESSAGE_ERROR_SENT: &str = "armillary.message_error.sent";
/// A server sent MessageError to this client.
pub const MESSAGE_ERROR_RECEIVED: &str = "armillary.message_error.received";
/// A limit (an `-ORBMax…` option) refused a message or a request.
pub const LIMIT_REACHED: &str = "armillary.limit.reached";
/// A connection is not read until its requests or replies drain.
pub const BACKPRESSURE: &str = "armillary.limit.backpressure";
/// A servant panicked: the request ends with UNKNOWN.
pub const SERVANT_PANICKED: &str = "armillary.servant.panicked";
/// An AMH responder was dropped unanswered: the request ends with
/// NO_RESPONSE.
pub const RESPONDER_DROPPED: &str = "armillary.amh.responder_dropped";
/// An AMI reply handler left an exception to its default body.
pub const AMI_UNHANDLED: &str = "armillary.ami.unhandled_exception";
/// The metrics endpoint listens.
pub const METRICS_LISTENING: &str = "armillary.metrics.listening";
/// The metrics endpoint did not serve a request.
pub const METRICS_BAD_REQUEST: &str = "armillary.metrics.bad_request";

/// The target of the client side's spans and events.
const CLIENT: &str = "armillary::client";
/// The target of the server side's spans and events.
const SERVER: &str = "armillary::server";
/// The target of what servants do.
const SERVANT: &str = "armillary::servant";

/// Which end of a connection an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Server,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// What a request came to, as its span's `outcome` and the metrics'
/// label say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Outcome {
    Normal,
    UserException,
    SystemException,
    LocationForward,
    NeedsAddressingMode,
    Resent,
    Oneway,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Normal => "normal",
            Outcome::UserException => "user_exception",
            Outcome::SystemException => "system_exception",
            Outcome::LocationForward => "location_forward",
            Outcome::NeedsAddressingMode => "needs_addressing_mode",
            Outcome::Resent => "resent",
            Outcome::Oneway => "oneway",
        }
    }
}

/// An object key, shortly: as text when every byte is printable ASCII
/// (a `corbaloc` key such as `NameService`), else in hexadecimal, a key
/// longer than 24 bytes as its first 8 and last 16 bytes (an Armillary
/// key ends with the object's slot and id).
pub(crate) struct ShortKey<'a>(pub(crate) &'a [u8]);

impl fmt::Display for ShortKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.0;
        if !key.is_empty() && key.len() <= 64 && key.iter().all(|b| (0x20..0x7f).contains(b)) {
            // Printable ASCII: valid UTF-8.
            return f.write_str(std::str::from_utf8(key).unwrap_or_default());
        }
        let hex = |f: &mut fmt::Formatter<'_>, bytes: &[u8]| {
            bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
        };
        if key.len() <= 24 {
            return hex(f, key);
        }
        hex(f, &key[..8])?;
        f.write_str("…")?;
        hex(f, &key[key.len() - 16..])
    }
}

/// A `host:port` (an IPv6 address in brackets).
pub(crate) struct HostPort<'a>(pub(crate) &'a str, pub(crate) u16);

impl fmt::Display for HostPort<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.contains(':') {
            true => write!(f, "[{}]:{}", self.0, self.1),
            false => write!(f, "{}:{}", self.0, self.1),
        }
    }
}

/// An address that may be unknown (`-`).
pub(crate) struct Addr(pub(crate) Option<SocketAddr>);

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(addr) => addr.fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// The client span of one attempt at a request (disabled, and free, when
/// no subscriber wants it): `peer` is the server's address, `local` this
/// end's.
#[inline]
pub(crate) fn client_request(
    operation: &str,
    request_id: u32,
    object_key: &[u8],
    peer: HostPort<'_>,
    local: Option<SocketAddr>,
    version: GiopVersion,
) -> Span {
    tracing::debug_span!(
        target: CLIENT,
        CLIENT_REQUEST,
        operation,
        request_id,
        object_key = %ShortKey(object_key),
        peer = %peer,
        local = %Addr(local),
        giop = %version,
        outcome = Empty,
        exception = Empty,
    )
}

/// Records what a request came to in its span (client or server).
#[inline]
pub(crate) fn record_outcome(span: &Span, outcome: Outcome, exception: Option<&SystemException>) {
    if span.is_disabled() {
        return;
    }
    span.record("outcome", outcome.as_str());
    if let Some(e) = exception {
        span.record("exception", tracing::field::display(e));
    }
}

/// What one upcall is accounted by: its span and, with a metrics
/// endpoint, its operation, start and the metrics it goes to. Made only
/// when one of them wants it ([`start`](Self::start)); carried with the
/// request's `OwedReply` and finished when the reply is written.
pub(crate) struct UpcallRecord {
    span: Span,
    metered: Option<(Arc<RequestMetrics>, OperationName, Instant)>,
}

impl UpcallRecord {
    /// The record of the upcall of `request` (in GIOP `version`, from the
    /// client at `peer`, addressed to the key `object_key` gives), or
    /// `None` when neither a subscriber nor `metrics` wants one: then
    /// nothing else is done.
    #[inline]
    pub(crate) fn start<'k>(
        metrics: Option<&Arc<RequestMetrics>>,
        request: &RequestHeader,
        version: GiopVersion,
        peer: Option<SocketAddr>,
        object_key: impl FnOnce() -> Option<std::borrow::Cow<'k, [u8]>>,
    ) -> Option<Box<UpcallRecord>> {
        let span = tracing::debug_span!(
            target: SERVER,
            parent: None,
            SERVER_REQUEST,
            operation = &*request.operation,
            request_id = request.request_id,
            object_key = Empty,
            peer = %Addr(peer),
            giop = %version,
            outcome = Empty,
            exception = Empty,
        );
        if span.is_disabled() && metrics.is_none() {
            return None;
        }
        if !span.is_disabled() {
            if let Some(key) = object_key() {
                span.record("object_key", tracing::field::display(ShortKey(&key)));
            }
        }
        let metered = metrics.map(|m| (m.clone(), request.operation.clone(), Instant::now()));
        Some(Box::new(UpcallRecord { span, metered }))
    }

    /// The upcall's span, to enter while it runs.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The upcall came to `outcome` (with `exception` when the ORB knows
    /// which): recorded in the span and counted.
    pub(crate) fn finish(self, outcome: Outcome, exception: Option<&SystemException>) {
        record_outcome(&self.span, outcome, exception);
        if let Some((metrics, operation, started)) = self.metered {
            metrics.observe(&operation, outcome, started.elapsed());
        }
    }
}

/// A connection was opened.
#[cold]
#[inline(never)]
pub(crate) fn connection_opened(
    side: Side,
    peer: impl fmt::Display,
    local: Option<SocketAddr>,
    tls: bool,
) {
    match side {
        Side::Client => tracing::info!(
            name: CONNECTION_OPENED, target: CLIENT,
            side = side.as_str(), peer = %peer, local = %Addr(local), tls,
            "connection opened"
        ),
        Side::Server => tracing::info!(
            name: CONNECTION_OPENED, target: SERVER,
            side = side.as_str(), peer = %peer, tls,
            "connection accepted"
        ),
    }
}

/// A connection was closed, for `reason`.
#[cold]
#[inline(never)]
pub(crate) fn connection_closed(side: Side, peer: impl fmt::Display, reason: &str) {
    match side {
        Side::Client => tracing::info!(
            name: CONNECTION_CLOSED, target: CLIENT,
            side = side.as_str(), peer = %peer, reason,
            "connection closed"
        ),
        Side::Server => tracing::info!(
            name: CONNECTION_CLOSED, target: SERVER,
            side = side.as_str(), peer = %peer, reason,
            "connection closed"
        ),
    }
}

/// A connection was accepted and closed at once: `limit` (an option) is
/// reached.
#[cold]
#[inline(never)]
pub(crate) fn connection_refused(
    peer: impl FnOnce() -> Option<SocketAddr>,
    limit: &str,
    value: usize,
) {
    tracing::warn!(
        name: CONNECTION_REFUSED, target: SERVER,
        peer = %Addr(peer()), limit, value,
        "connection refused: limit reached"
    );
}

/// A connection failed with `error`.
#[cold]
#[inline(never)]
pub(crate) fn connection_broken(side: Side, peer: impl fmt::Display, error: &dyn fmt::Display) {
    match side {
        Side::Client => tracing::warn!(
            name: CONNECTION_BROKEN, target: CLIENT,
            side = side.as_str(), peer = %peer, error = %error,
            "connection broken"
        ),
        Side::Server => tracing::warn!(
            name: CONNECTION_BROKEN, target: SERVER,
            side = side.as_str(), peer = %peer, error = %error,
            "connection broken"
        ),
    }
}

/// A client sent what cannot be served (`error` says what).
#[cold]
#[inline(never)]
pub(crate) fn message_rejected(peer: Option<SocketAddr>, error: &dyn fmt::Display) {
    tracing::warn!(
        name: MESSAGE_REJECTED, target: SERVER,
        peer = %Addr(peer), error = %error,
        "message rejected"
    );
}

/// The server sent MessageError (GIOP `version`) and closes.
#[cold]
#[inline(never)]
pub(crate) fn message_error_sent(peer: Option<SocketAddr>, version: GiopVersion) {
    tracing::warn!(
        name: MESSAGE_ERROR_SENT, target: SERVER,
        peer = %Addr(peer), giop = %version,
        "MessageError sent"
    );
}

/// The server at `peer` sent MessageError.
#[cold]
#[inline(never)]
pub(crate) fn message_error_received(peer: impl fmt::Display) {
    tracing::warn!(
        name: MESSAGE_ERROR_RECEIVED, target: CLIENT,
        peer = %peer,
        "MessageError received"
    );
}

/// `limit` (an `-ORB…` option, whose value is `value`) refused something
/// (`detail`).
#[cold]
#[inline(never)]
pub(crate) fn limit_reached(
    side: Side,
    peer: impl fmt::Display,
    limit: &str,
    value: usize,
    detail: &dyn fmt::Display,
) {
    match side {
        Side::Client => tracing::warn!(
            name: LIMIT_REACHED, target: CLIENT,
            side = side.as_str(), peer = %peer, limit, value, detail = %detail,
            "limit reached"
        ),
        Side::Server => tracing::warn!(
            name: LIMIT_REACHED, target: SERVER,
            side = side.as_str(), peer = %peer, limit, value, detail = %detail,
            "limit reached"
        ),
    }
}

/// What a frame decoder refused, as a limit reached when the
/// [`FrameError`] is over a limit (`limits`, when known, gives the budget
/// of partly received messages), else as a rejected message (server) or a
/// broken connection (client).
///
/// [`FrameError`]: armillary_giop::giop::FrameError
#[cold]
#[inline(never)]
pub(crate) fn frame_refused(
    side: Side,
    peer: impl fmt::Display,
    error: &armillary_giop::giop::FrameError,
    limits: Option<&armillary_giop::giop::FrameLimits>,
) {
    use armillary_giop::giop::FrameError;
    let limit = match error {
        FrameError::TooLarge { limit, .. } => Some(("-ORBMaxMessageSize", *limit)),
        FrameError::TooManyFragments(limit) => Some(("-ORBMaxFragments", *limit)),
        FrameError::TooMuchPending => Some((
            "-ORBMaxPartialBytes",
            limits.map_or(0, |l| l.max_pending_bytes),
        )),
        _ => None,
    };
    match (limit, side) {
        (Some((limit, value)), side) => limit_reached(side, peer, limit, value, error),
        (None, Side::Server) => tracing::warn!(
            name: MESSAGE_REJECTED, target: SERVER,
            peer = %peer, error = %error,
            "message rejected"
        ),
        (None, Side::Client) => connection_broken(side, peer, error),
    }
}

/// The server stops reading the connection from `peer`: `limit` (with
/// `value`) is reached until its requests or replies drain.
#[cold]
#[inline(never)]
pub(crate) fn backpressure(peer: Option<SocketAddr>, limit: &str, value: usize) {
    tracing::debug!(
        name: BACKPRESSURE, target: SERVER,
        peer = %Addr(peer), limit, value,
        "connection not read until its requests or replies drain"
    );
}

/// A servant (or servant manager) panicked with `payload`; the request
/// ends with UNKNOWN.
#[cold]
#[inline(never)]
pub(crate) fn servant_panicked(payload: Option<&(dyn std::any::Any + Send)>) {
    tracing::error!(
        name: SERVANT_PANICKED, target: SERVANT,
        panic = %PanicMessage(payload),
        "servant panicked: the request ends with UNKNOWN (SERVANT_PANICKED)"
    );
}

/// An AMH responder for `operation` was dropped unanswered.
#[cold]
#[inline(never)]
pub(crate) fn responder_dropped(operation: &str) {
    tracing::warn!(
        name: RESPONDER_DROPPED, target: SERVANT,
        operation,
        "AMH response handler dropped unanswered: the request ends with NO_RESPONSE"
    );
}

/// A panic's message, when it has one.
struct PanicMessage<'a>(Option<&'a (dyn std::any::Any + Send)>);

impl fmt::Display for PanicMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.and_then(|p| {
            p.downcast_ref::<&str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        });
        f.write_str(text.unwrap_or("(a panic unwound through the request)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_shortly_and_the_same_on_both_sides() {
        assert_eq!(ShortKey(b"NameService").to_string(), "NameService");
        assert_eq!(ShortKey(&[0xa7, b'R', 0, 1]).to_string(), "a7520001");
        let long: Vec<u8> = (0..40).collect();
        assert_eq!(
            ShortKey(&long).to_string(),
            "0001020304050607…18191a1b1c1d1e1f2021222324252627"
        );
        assert_eq!(ShortKey(&[]).to_string(), "");
    }

    #[test]
    fn addresses_print_as_host_and_port() {
        assert_eq!(HostPort("127.0.0.1", 2809).to_string(), "127.0.0.1:2809");
        assert_eq!(HostPort("::1", 2809).to_string(), "[::1]:2809");
        assert_eq!(Addr(None).to_string(), "-");
        let panic: Box<dyn std::any::Any + Send> = Box::new("boom");
        assert_eq!(PanicMessage(Some(&*panic)).to_string(), "boom");
        assert_eq!(
            PanicMessage(None).to_string(),
            "(a panic unwound through the request)"
        );
    }
}
