//! The client side of IIOP: connections cached by endpoint, requests
//! written by the calling thread, replies read by whichever waiting caller
//! leads (Leader/Followers: the leader reads the socket and hands each
//! reply to its owner; followers sleep until their reply or leadership
//! arrives). With one caller this is wait-on-read: the caller reads its own
//! reply, with no thread switch.
//!
//! **Invariant:** a connection is read by at most one thread at a time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use armillary_giop::giop::{Frame, FrameDecoder, MessageBody, MessageType};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::GiopVersion;
use parking_lot::{Condvar, Mutex};

use super::tls::{is_tls_refusal, ClientStream, TlsClientStream};
use crate::net;

/// Why a connection stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closed {
    /// The server sent CloseConnection: it processed nothing still
    /// outstanding, so those requests may be sent again.
    Orderly,
    /// EOF, a reset, garbage, or a MessageError.
    Broken,
    /// The TLS session failed (the server refused this client's
    /// certificate, or the lack of one): the server received nothing.
    Refused,
}

struct ReadState {
    decoder: FrameDecoder,
    /// The leader's read buffer, allocated once (zeroing 64 KiB per read
    /// showed up as the largest user-space cost of a call).
    buf: Vec<u8>,
    /// Replies that arrived, by request id; `None` while still awaited.
    replies: HashMap<u32, Option<Frame>>,
    leader: bool,
    closed: Option<Closed>,
}

/// One TCP (or TLS) connection to a server endpoint.
pub(crate) struct ClientConnection {
    stream: ClientStream,
    write_lock: Mutex<()>,
    state: Mutex<ReadState>,
    wake: Condvar,
    next_id: AtomicU32,
    /// The code sets of the connection, fixed by its first GIOP 1.1+
    /// request (which carries them in a CodeSets service context): GIOP
    /// negotiates code sets per connection, so every later request on it
    /// uses these, whatever reference it was made through.
    pub(crate) codesets: std::sync::OnceLock<armillary_giop::cdr::codeset::CodeSets>,
}

/// What waiting for a reply produced.
pub(crate) enum Awaited {
    Reply(Frame),
    Closed(Closed),
}

impl ClientConnection {
    fn open(
        host: &str,
        port: u16,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Arc<Self>, SystemException> {
        let timeout = Duration::from_secs(10);
        let stream = net::connect(host, port, timeout)
            .map_err(|_| SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No))?;
        let stream = match tls {
            Some(config) => ClientStream::Tls(Box::new(TlsClientStream::handshake(
                stream,
                config.clone(),
                host,
                timeout,
            )?)),
            None => ClientStream::Plain(stream),
        };
        Ok(Arc::new(ClientConnection {
            stream,
            write_lock: Mutex::new(()),
            state: Mutex::new(ReadState {
                decoder: FrameDecoder::new(super::frame_limits()),
                buf: vec![0; super::READ_BUFFER],
                replies: HashMap::new(),
                leader: false,
                closed: None,
            }),
            wake: Condvar::new(),
            next_id: AtomicU32::new(1),
            codesets: std::sync::OnceLock::new(),
        }))
    }

    /// A fresh request id.
    pub(crate) fn next_request_id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// True once the connection can carry nothing more.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed.is_some()
    }

    /// Registers interest in the reply to `id` (before sending it).
    pub(crate) fn expect_reply(&self, id: u32) {
        self.state.lock().replies.insert(id, None);
    }

    /// Forgets a reply nobody will wait for.
    pub(crate) fn forget_reply(&self, id: u32) {
        self.state.lock().replies.remove(&id);
    }

    /// Writes a whole message. An error means the request did not reach
    /// the server whole (so it was not processed).
    pub(crate) fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        let _guard = self.write_lock.lock();
        self.stream.write_all(bytes)
    }

    /// Waits for the reply to `id`, reading the socket when no one else
    /// does.
    pub(crate) fn wait_reply(&self, id: u32) -> Awaited {
        let mut state = self.state.lock();
        loop {
            if let Some(slot) = state.replies.get_mut(&id) {
                if let Some(frame) = slot.take() {
                    state.replies.remove(&id);
                    return Awaited::Reply(frame);
                }
            }
            if let Some(closed) = state.closed {
                state.replies.remove(&id);
                return Awaited::Closed(closed);
            }
            if state.leader {
                self.wake.wait(&mut state);
                continue;
            }
            // Lead: read without holding the lock.
            state.leader = true;
            let mut buf = std::mem::take(&mut state.buf);
            drop(state);
            let read = self.stream.read(&mut buf);
            state = self.state.lock();
            state.leader = false;
            match read {
                Err(e) if is_tls_refusal(&e) => {
                    state.closed.get_or_insert(Closed::Refused);
                }
                Ok(0) | Err(_) => {
                    state.closed.get_or_insert(Closed::Broken);
                }
                Ok(n) => {
                    if state.decoder.handle_bytes(&buf[..n]).is_err() {
                        state.closed = Some(Closed::Broken);
                    }
                    while let Some(frame) = state.decoder.poll_frame() {
                        self.accept(&mut state, frame);
                    }
                }
            }
            state.buf = buf;
            if state.closed.is_some() {
                self.stream.shutdown();
            }
            // Wake the followers: one may have its reply, one must lead.
            self.wake.notify_all();
        }
    }

    fn accept(&self, state: &mut ReadState, frame: Frame) {
        let Ok(header) = armillary_giop::giop::MessageHeader::decode(&frame.bytes) else {
            state.closed = Some(Closed::Broken);
            return;
        };
        match header.message_type {
            MessageType::Reply | MessageType::LocateReply => {
                let id = match armillary_giop::giop::Message::decode(&frame.bytes) {
                    Ok(m) => m.body.request_id(),
                    Err(_) => None,
                };
                // A reply nobody waits for (cancelled, or to a oneway) is
                // dropped.
                if let Some(slot) = id.and_then(|id| state.replies.get_mut(&id)) {
                    *slot = Some(frame);
                }
            }
            MessageType::CloseConnection => state.closed = Some(Closed::Orderly),
            MessageType::MessageError => state.closed = Some(Closed::Broken),
            // Requests, fragments-out-of-place and cancels make no sense
            // on a client connection without bidirectional GIOP.
            _ => state.closed = Some(Closed::Broken),
        }
    }

    /// Sends CloseConnection (GIOP 1.2 style) and closes.
    pub(crate) fn close(&self, version: GiopVersion) {
        if let Ok(b) = armillary_giop::giop::MessageBuilder::new(
            version,
            armillary_giop::ByteOrder::NATIVE,
            &MessageBody::CloseConnection,
        ) {
            let _ = self.send(&b.finish(false));
        }
        self.stream.shutdown();
        self.state.lock().closed.get_or_insert(Closed::Orderly);
        self.wake.notify_all();
    }
}

/// Open connections, by endpoint (and whether they are TLS).
#[derive(Default)]
pub(crate) struct ConnectionCache {
    connections: Mutex<HashMap<(String, u16, bool), Arc<ClientConnection>>>,
    /// How TLS connections are made; `None` without trusted roots.
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl ConnectionCache {
    /// A cache whose TLS connections use `tls`.
    pub(crate) fn new(tls: Option<Arc<rustls::ClientConfig>>) -> Self {
        ConnectionCache {
            connections: Mutex::default(),
            tls,
        }
    }

    /// Whether TLS connections can be made.
    pub(crate) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The live connection to `host:port` (over TLS with `tls`), opening
    /// one if needed.
    pub(crate) fn get(
        &self,
        host: &str,
        port: u16,
        tls: bool,
    ) -> Result<Arc<ClientConnection>, SystemException> {
        let key = (host.to_owned(), port, tls);
        if let Some(c) = self.connections.lock().get(&key) {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let config = match (tls, &self.tls) {
            (false, _) => None,
            (true, Some(config)) => Some(config),
            (true, None) => {
                return Err(SystemException::no_permission(
                    minor::TLS_NOT_CONFIGURED,
                    CompletionStatus::No,
                ))
            }
        };
        let fresh = ClientConnection::open(host, port, config)?;
        self.connections.lock().insert(key, fresh.clone());
        Ok(fresh)
    }

    /// Drops `conn` from the cache (it failed or closed).
    pub(crate) fn evict(&self, conn: &Arc<ClientConnection>) {
        self.connections.lock().retain(|_, c| !Arc::ptr_eq(c, conn));
    }

    /// Closes every connection with CloseConnection.
    pub(crate) fn close_all(&self, version: GiopVersion) {
        let all: Vec<_> = self.connections.lock().drain().map(|(_, c)| c).collect();
        for c in all {
            c.close(version);
        }
    }
}
