//! The client side of IIOP: connections cached by endpoint, requests
//! written by the calling thread, replies read by whichever waiting caller
//! leads (Leader/Followers: the leader reads the socket and hands each
//! reply to its owner; followers sleep until their reply or leadership
//! arrives). With one caller this is wait-on-read: the caller reads its own
//! reply, with no thread switch.
//!
//! Every wait may have a deadline (the ORB's call timeout): a follower
//! sleeps no longer than its own deadline, and a leader reads with a socket
//! timeout that ends at its own deadline, then hands the socket on. A
//! caller that gives up removes its entry, so a reply that comes later is
//! dropped like any reply nobody waits for.
//!
//! **Invariant:** a connection is read by at most one thread at a time.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::giop::{Frame, FrameDecoder, MessageBody, MessageType};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::GiopVersion;
use parking_lot::{Condvar, Mutex};

use super::tls::{is_tls_refusal, ClientStream, TlsClientStream};
use crate::net;

/// How long opening a connection may take when the call has no deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An idle connection that received a message more recently than this is
/// reused without looking whether the server closed it: back-to-back calls
/// skip the system call, and a server rarely dies between two of them (if
/// it does, the call fails as if it had died during it).
const TRUST_RECENT: Duration = Duration::from_millis(1);

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

/// A request whose reply is awaited.
struct Pending {
    /// The reply, once it arrived.
    reply: Option<Frame>,
    /// `ReadState::frames` when the request was registered: if it has not
    /// moved when the caller gives up, the server said nothing at all
    /// meanwhile.
    frames_before: u64,
}

struct ReadState {
    decoder: FrameDecoder,
    /// The leader's read buffer, allocated once (zeroing 64 KiB per read
    /// showed up as the largest user-space cost of a call).
    buf: Vec<u8>,
    /// Requests awaiting their reply, by request id.
    replies: HashMap<u32, Pending>,
    /// Messages received on the connection so far.
    frames: u64,
    /// When the last of them arrived (or the connection opened).
    last_received: Instant,
    /// The read timeout currently set on the socket.
    read_timeout: Option<Duration>,
    leader: bool,
    closed: Option<Closed>,
}

/// One TCP (or TLS) connection to a server endpoint.
pub(crate) struct ClientConnection {
    /// The host and port it was opened to, and whether over TLS (its key
    /// in the cache).
    endpoint: (String, u16, bool),
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
    /// The deadline passed first. `silent`: nothing at all arrived on the
    /// connection since the request was registered (a hung server, or a
    /// peer gone without closing).
    TimedOut {
        silent: bool,
    },
}

/// Why a request could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendError {
    /// The socket failed; the connection is closed.
    Failed,
    /// The server did not take the bytes within the call timeout; the
    /// connection is closed (part of a message may have left).
    TimedOut,
}

impl ClientConnection {
    /// Connects within `connect_timeout` (and, with `tls`, runs the TLS
    /// handshake within it); with `write_timeout`, a write that the server
    /// does not take in that time fails.
    fn open(
        host: &str,
        port: u16,
        tls: Option<&Arc<rustls::ClientConfig>>,
        connect_timeout: Duration,
        write_timeout: Option<Duration>,
    ) -> Result<Arc<Self>, SystemException> {
        let transient = || SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No);
        let socket = net::connect(host, port, connect_timeout).map_err(|_| transient())?;
        let stream = match tls {
            Some(config) => ClientStream::Tls(Box::new(TlsClientStream::handshake(
                socket,
                config.clone(),
                host,
                connect_timeout,
            )?)),
            None => ClientStream::Plain(socket),
        };
        stream
            .socket()
            .set_write_timeout(write_timeout)
            .map_err(|_| transient())?;
        Ok(Arc::new(ClientConnection {
            endpoint: (host.to_owned(), port, tls.is_some()),
            stream,
            write_lock: Mutex::new(()),
            state: Mutex::new(ReadState {
                decoder: FrameDecoder::new(super::frame_limits()),
                buf: vec![0; super::READ_BUFFER],
                replies: HashMap::new(),
                frames: 0,
                last_received: Instant::now(),
                read_timeout: None,
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

    /// True when the server closed a connection nobody is using: nothing
    /// is awaited on it (so nobody reads it) and the socket has reached
    /// its end or failed. A server that died or closed an idle connection
    /// without CloseConnection leaves this state behind, and a request
    /// sent into it would fail as if the server had died in the middle of
    /// it. Costs one non-blocking `recv(MSG_PEEK)`, skipped when a message
    /// arrived in the last `TRUST_RECENT`.
    fn is_dead_while_idle(&self) -> bool {
        let mut state = self.state.lock();
        if state.closed.is_some() {
            return true;
        }
        if state.leader || !state.replies.is_empty() || state.last_received.elapsed() < TRUST_RECENT
        {
            return false;
        }
        if peer_has_closed(self.stream.socket()) {
            state.closed = Some(Closed::Broken);
            let _ = self.stream.socket().shutdown(Shutdown::Both);
            return true;
        }
        false
    }

    /// Registers interest in the reply to `id` (before sending it).
    pub(crate) fn expect_reply(&self, id: u32) {
        let mut state = self.state.lock();
        let frames_before = state.frames;
        state.replies.insert(
            id,
            Pending {
                reply: None,
                frames_before,
            },
        );
    }

    /// Forgets a reply nobody will wait for.
    pub(crate) fn forget_reply(&self, id: u32) {
        self.state.lock().replies.remove(&id);
    }

    /// Writes a whole message. An error means the request did not reach
    /// the server whole (so it was not processed); the connection is then
    /// closed, since part of a message may have left and nothing more can
    /// follow it.
    pub(crate) fn send(&self, bytes: &[u8]) -> Result<(), SendError> {
        let written = {
            let _guard = self.write_lock.lock();
            self.stream.write_all(bytes)
        };
        let Err(e) = written else {
            return Ok(());
        };
        let _ = self.stream.socket().shutdown(Shutdown::Both);
        self.state.lock().closed.get_or_insert(Closed::Broken);
        self.wake.notify_all();
        Err(match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => SendError::TimedOut,
            _ => SendError::Failed,
        })
    }

    /// Waits for the reply to `id` until `deadline` (for ever without
    /// one), reading the socket when no one else does.
    pub(crate) fn wait_reply(&self, id: u32, deadline: Option<Instant>) -> Awaited {
        let mut state = self.state.lock();
        loop {
            if let Some(pending) = state.replies.get_mut(&id) {
                if let Some(frame) = pending.reply.take() {
                    state.replies.remove(&id);
                    return Awaited::Reply(frame);
                }
            }
            if let Some(closed) = state.closed {
                state.replies.remove(&id);
                return Awaited::Closed(closed);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| d <= now) {
                let frames = state.frames;
                let silent = state
                    .replies
                    .remove(&id)
                    .is_none_or(|p| p.frames_before == frames);
                return Awaited::TimedOut { silent };
            }
            if state.leader {
                match deadline {
                    Some(deadline) => {
                        self.wake.wait_until(&mut state, deadline);
                    }
                    None => self.wake.wait(&mut state),
                }
                continue;
            }
            // Lead: read without holding the lock, no longer than our own
            // deadline allows (1 ms at least: a zero timeout means none).
            let timeout = deadline.map(|d| (d - now).max(Duration::from_millis(1)));
            if timeout.is_some() || state.read_timeout.is_some() {
                if self.stream.socket().set_read_timeout(timeout).is_err() {
                    state.closed = Some(Closed::Broken);
                    let _ = self.stream.socket().shutdown(Shutdown::Both);
                    self.wake.notify_all();
                    continue;
                }
                state.read_timeout = timeout;
            }
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
                // Out of time, or a signal: the loop looks at the deadline.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Ok(0) | Err(_) => {
                    state.closed.get_or_insert(Closed::Broken);
                }
                Ok(n) => {
                    if state.decoder.handle_bytes(&buf[..n]).is_err() {
                        state.closed = Some(Closed::Broken);
                    }
                    let before = state.frames;
                    while let Some(frame) = state.decoder.poll_frame() {
                        state.frames += 1;
                        self.accept(&mut state, frame);
                    }
                    if state.frames != before {
                        state.last_received = Instant::now();
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
                if let Some(pending) = id.and_then(|id| state.replies.get_mut(&id)) {
                    pending.reply = Some(frame);
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

/// The cached connection to one endpoint. Its lock is held while the
/// connection is opened, so callers that need the same endpoint at once
/// share one connection instead of each opening their own.
type Slot = Arc<Mutex<Option<Arc<ClientConnection>>>>;

/// Open connections, by endpoint (and whether they are TLS).
#[derive(Default)]
pub(crate) struct ConnectionCache {
    connections: Mutex<HashMap<(String, u16, bool), Slot>>,
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
    /// one if needed (within `deadline` when there is one); with
    /// `call_timeout`, writes that the server does not take within it
    /// fail.
    pub(crate) fn get(
        &self,
        host: &str,
        port: u16,
        tls: bool,
        deadline: Option<Instant>,
        call_timeout: Option<Duration>,
    ) -> Result<Arc<ClientConnection>, SystemException> {
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
        let key = (host.to_owned(), port, tls);
        let slot = self.connections.lock().entry(key).or_default().clone();
        // Another caller may be opening the connection: wait for it no
        // longer than our own deadline.
        let mut slot = match deadline {
            Some(deadline) => slot.try_lock_until(deadline).ok_or_else(|| {
                SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::No)
            })?,
            None => slot.lock(),
        };
        if let Some(c) = &*slot {
            if !c.is_dead_while_idle() {
                return Ok(c.clone());
            }
        }
        let connect_timeout = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), CONNECT_TIMEOUT),
            None => CONNECT_TIMEOUT,
        };
        *slot = None;
        let fresh = ClientConnection::open(host, port, config, connect_timeout, call_timeout)?;
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Drops `conn` from the cache (it failed or closed).
    pub(crate) fn evict(&self, conn: &Arc<ClientConnection>) {
        let slot = self.connections.lock().get(&conn.endpoint).cloned();
        if let Some(slot) = slot {
            let mut slot = slot.lock();
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
                *slot = None;
            }
        }
    }

    /// Closes every connection with CloseConnection.
    pub(crate) fn close_all(&self, version: GiopVersion) {
        let slots: Vec<Slot> = self.connections.lock().drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Some(c) = slot.lock().take() {
                c.close(version);
            }
        }
    }
}

/// True when a peek at `stream` (without blocking) finds its end or an
/// error: the peer closed or reset a connection that owes us nothing.
#[cfg(unix)]
fn peer_has_closed(stream: &TcpStream) -> bool {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    match socket2::SockRef::from(stream)
        .recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT)
    {
        Ok(n) => n == 0,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted),
    }
}

/// True when a peek at `stream` (without blocking) finds its end or an
/// error: the peer closed or reset a connection that owes us nothing.
#[cfg(not(unix))]
fn peer_has_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8];
    let closed = match stream.peek(&mut byte) {
        Ok(n) => n == 0,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted),
    };
    let _ = stream.set_nonblocking(false);
    closed
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;

    use armillary_giop::giop::{ReplyHeader, ReplyStatus};
    use armillary_giop::ByteOrder;

    use super::*;

    fn reply(id: u32, value: i32) -> Vec<u8> {
        let mut b = armillary_giop::giop::MessageBuilder::new(
            GiopVersion::V1_2,
            ByteOrder::NATIVE,
            &MessageBody::Reply(ReplyHeader {
                request_id: id,
                reply_status: ReplyStatus::NoException,
                service_contexts: Vec::new(),
            }),
        )
        .unwrap();
        b.body().write_long(value);
        b.finish(false)
    }

    fn value(frame: &Frame) -> i32 {
        let (_, mut body) = frame.decode().unwrap();
        body.read_long().unwrap()
    }

    #[test]
    fn a_timed_out_wait_forgets_its_reply_and_the_connection_carries_on() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conn = ClientConnection::open("127.0.0.1", port, None, CONNECT_TIMEOUT, None).unwrap();
        let (mut server, _) = listener.accept().unwrap();

        // Nothing comes: the wait ends at its deadline, with nothing heard.
        conn.expect_reply(1);
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(matches!(
            conn.wait_reply(1, Some(deadline)),
            Awaited::TimedOut { silent: true }
        ));
        assert!(conn.state.lock().replies.is_empty());

        // The late reply to 1 arrives with the reply to 2: 1's is dropped.
        conn.expect_reply(2);
        server
            .write_all(&[reply(1, 111), reply(2, 222)].concat())
            .unwrap();
        match conn.wait_reply(2, None) {
            Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
            _ => panic!("no reply to 2"),
        }
        assert!(conn.state.lock().replies.is_empty());
        assert_eq!(conn.state.lock().closed, None);

        // A wait that saw other replies meanwhile is not silent.
        conn.expect_reply(3);
        conn.expect_reply(4);
        server.write_all(&reply(4, 444)).unwrap();
        match conn.wait_reply(4, None) {
            Awaited::Reply(frame) => assert_eq!(value(&frame), 444),
            _ => panic!("no reply to 4"),
        }
        let deadline = Instant::now() + Duration::from_millis(20);
        assert!(matches!(
            conn.wait_reply(3, Some(deadline)),
            Awaited::TimedOut { silent: false }
        ));
        // The socket's read timeout is cleared for a wait without deadline.
        conn.expect_reply(5);
        server.write_all(&reply(5, 555)).unwrap();
        assert!(matches!(conn.wait_reply(5, None), Awaited::Reply(_)));
        assert_eq!(conn.state.lock().read_timeout, None);
        assert_eq!(conn.stream.socket().read_timeout().unwrap(), None);
    }

    #[test]
    fn an_idle_connection_the_server_closed_is_found_dead_before_use() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conn = ClientConnection::open("127.0.0.1", port, None, CONNECT_TIMEOUT, None).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert!(!conn.is_dead_while_idle());
        drop(server);
        // The FIN travels asynchronously: poll for it, bounded.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !conn.is_dead_while_idle() {
            assert!(Instant::now() < deadline, "the close was never seen");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn followers_and_the_leader_each_keep_their_own_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conn = ClientConnection::open("127.0.0.1", port, None, CONNECT_TIMEOUT, None).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // Four waiters with short deadlines and one without: the short ones
        // all end (whoever leads), the last gets its reply afterwards.
        for id in 1..=5 {
            conn.expect_reply(id);
        }
        let waiters: Vec<_> = (1..=4)
            .map(|id| {
                let conn = conn.clone();
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_millis(20 * u64::from(id));
                    matches!(
                        conn.wait_reply(id, Some(deadline)),
                        Awaited::TimedOut { .. }
                    )
                })
            })
            .collect();
        let patient = {
            let conn = conn.clone();
            std::thread::spawn(move || match conn.wait_reply(5, None) {
                Awaited::Reply(frame) => value(&frame),
                _ => 0,
            })
        };
        for w in waiters {
            assert!(w.join().unwrap());
        }
        server.write_all(&reply(5, 555)).unwrap();
        assert_eq!(patient.join().unwrap(), 555);
        assert!(conn.state.lock().replies.is_empty());
    }
}
