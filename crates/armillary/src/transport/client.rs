//! The client side of IIOP: connections cached by endpoint, requests
//! written by the calling thread, replies read by whichever thread leads
//! (Leader/Followers: the leader reads the socket and hands each reply to
//! the [reply dispatcher](super::reply) bound to its request id; followers
//! sleep until their reply or leadership arrives). With one caller this is
//! wait-on-read: the caller reads its own reply, with no thread switch.
//!
//! Sending and collecting are separate: a request binds its dispatcher,
//! is sent, and its reply is collected later by whichever thread reads the
//! connection — a synchronous caller waiting for it ([`wait_reply`]), a
//! waiter for a deferred reply ([`wait_until`]), or a caller polling
//! without blocking ([`poll`], which reads only what has arrived and only
//! when nobody leads).
//!
//! Every request may have a deadline (the ORB's call timeout): a follower
//! sleeps no longer than its own deadline, a leader reads with a socket
//! timeout that ends at its own deadline, then hands the socket on, and
//! whoever reads ends the requests whose deadline has passed. A request
//! that ends unbinds its dispatcher, so a reply that comes later is
//! dropped like any reply nobody waits for.
//!
//! [`wait_reply`]: ClientConnection::wait_reply
//! [`wait_until`]: ClientConnection::wait_until
//! [`poll`]: ClientConnection::poll
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
use parking_lot::{Condvar, Mutex, MutexGuard};

use super::reply::sync::SyncSlot;
pub(crate) use super::reply::Awaited;
use super::reply::{DispatcherTable, Handoff, ReplyDispatcher};
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

pub(crate) struct ReadState {
    decoder: FrameDecoder,
    /// The leader's read buffer, allocated once (zeroing 64 KiB per read
    /// showed up as the largest user-space cost of a call).
    buf: Vec<u8>,
    /// The dispatchers of the requests awaiting their reply, by request id.
    dispatchers: DispatcherTable,
    /// Messages received on the connection so far.
    frames: u64,
    /// Replies handed to their dispatchers so far.
    delivered: u64,
    /// When the last message arrived (or the connection opened).
    last_received: Instant,
    /// The read timeout currently set on the socket.
    read_timeout: Option<Duration>,
    leader: bool,
    /// Whether an ORB thread reads the connection for the asynchronous
    /// requests outstanding on it ([`ClientConnection::ensure_reader`]).
    reader: bool,
    closed: Option<Closed>,
}

impl ReadState {
    /// Marks the connection closed (keeping the first reason) and ends
    /// every outstanding request with it.
    fn close(&mut self, why: Closed) {
        let why = *self.closed.get_or_insert(why);
        self.dispatchers.close_all(why);
    }

    /// Replies handed to their dispatchers so far: a waiter for "any
    /// reply" watches it move.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }
}

/// One TCP (or TLS) connection to a server endpoint.
pub(crate) struct ClientConnection {
    /// The host and port it was opened to, and whether over TLS (its key
    /// in the cache).
    endpoint: (String, u16, bool),
    stream: ClientStream,
    /// Held while a message is written; holds the write timeout currently
    /// set on the socket.
    write_lock: Mutex<Option<Duration>>,
    state: Mutex<ReadState>,
    wake: Condvar,
    next_id: AtomicU32,
    /// The code sets of the connection, fixed by its first GIOP 1.1+
    /// request (which carries them in a CodeSets service context): GIOP
    /// negotiates code sets per connection, so every later request on it
    /// uses these, whatever reference it was made through.
    pub(crate) codesets: std::sync::OnceLock<armillary_giop::cdr::codeset::CodeSets>,
}

impl std::fmt::Debug for ClientConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConnection")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
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

/// How long a non-blocking [`ClientConnection::poll`] may spend reading
/// once the socket has bytes: a TLS record cut in two may need its rest.
const POLL_READ: Duration = Duration::from_millis(1);

impl ClientConnection {
    /// Connects within `connect_timeout` (and, with `tls`, runs the TLS
    /// handshake within it).
    fn open(
        host: &str,
        port: u16,
        tls: Option<&Arc<rustls::ClientConfig>>,
        connect_timeout: Duration,
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
            .set_write_timeout(None)
            .map_err(|_| transient())?;
        Ok(Arc::new(ClientConnection {
            endpoint: (host.to_owned(), port, tls.is_some()),
            stream,
            write_lock: Mutex::new(None),
            state: Mutex::new(ReadState {
                decoder: FrameDecoder::new(super::frame_limits()),
                buf: vec![0; super::READ_BUFFER],
                dispatchers: DispatcherTable::default(),
                frames: 0,
                delivered: 0,
                last_received: Instant::now(),
                read_timeout: None,
                leader: false,
                reader: false,
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
        if state.leader
            || !state.dispatchers.is_empty()
            || state.last_received.elapsed() < TRUST_RECENT
        {
            return false;
        }
        if readiness(self.stream.socket()) == Readiness::Closed {
            state.close(Closed::Broken);
            let _ = self.stream.socket().shutdown(Shutdown::Both);
            release(state);
            return true;
        }
        false
    }

    /// Binds `dispatcher` to the reply of `id` (before the request is
    /// sent); with a `deadline`, whoever reads the connection after it
    /// ends the request as timed out. On a closed connection the
    /// dispatcher learns it at once.
    pub(crate) fn bind(
        &self,
        id: u32,
        dispatcher: Box<dyn ReplyDispatcher>,
        deadline: Option<Instant>,
    ) {
        let mut state = self.state.lock();
        match state.closed {
            Some(closed) => {
                drop(state);
                if let Some(handoff) = dispatcher.dispatch(Awaited::Closed(closed)) {
                    handoff();
                }
            }
            None => {
                let frames = state.frames;
                state.dispatchers.bind(id, dispatcher, frames, deadline);
                release(state);
            }
        }
    }

    /// Binds `dispatcher` to the reply of `id` as [`bind`](Self::bind)
    /// does, once fewer than `limit` requests await their reply on the
    /// connection: until then the caller waits (leading the connection, so
    /// that replies free their slots, when nobody else reads it). False
    /// when `deadline` passed first (nothing is bound then).
    pub(crate) fn bind_within_limit(
        &self,
        id: u32,
        dispatcher: Box<dyn ReplyDispatcher>,
        deadline: Option<Instant>,
        limit: usize,
    ) -> bool {
        let mut dispatcher = Some(dispatcher);
        let ended = self.wait_until(deadline, |state| {
            if state.closed.is_some() {
                return true;
            }
            if state.dispatchers.len() < limit {
                if let Some(d) = dispatcher.take() {
                    let frames = state.frames;
                    state.dispatchers.bind(id, d, frames, deadline);
                }
                return true;
            }
            false
        });
        match dispatcher {
            // Bound, or the connection closed (which the dispatcher learns).
            Some(d) if ended => {
                self.bind(id, d, deadline);
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Forgets the dispatcher of a reply nobody will collect; a reply that
    /// comes later is dropped.
    pub(crate) fn unbind(&self, id: u32) {
        if self.state.lock().dispatchers.unbind(id) {
            // A caller may be waiting for a free slot.
            self.wake.notify_all();
        }
    }

    /// Ends the request `id` as timed out now (its owner's deadline
    /// passed), unless its outcome was dispatched already.
    pub(crate) fn time_out(&self, id: u32) {
        let mut state = self.state.lock();
        let frames = state.frames;
        state.dispatchers.time_out(id, frames);
        self.wake.notify_all();
        release(state);
    }

    /// Writes a whole message. An error means the request did not reach
    /// the server whole (so it was not processed); the connection is then
    /// closed, since part of a message may have left and nothing more can
    /// follow it.
    pub(crate) fn send(&self, bytes: &[u8]) -> Result<(), SendError> {
        self.write(bytes, None)
    }

    /// Writes a whole message as [`send`](Self::send) does, failing if
    /// the server does not take it within `timeout` (`None`: however long
    /// it takes).
    pub(crate) fn send_within(
        &self,
        bytes: &[u8],
        timeout: Option<Duration>,
    ) -> Result<(), SendError> {
        self.write(bytes, Some(timeout))
    }

    /// Writes `bytes`, first setting the socket's write timeout to
    /// `timeout` when one is given and differs from the current one.
    fn write(&self, bytes: &[u8], timeout: Option<Option<Duration>>) -> Result<(), SendError> {
        let written = {
            let mut current = self.write_lock.lock();
            match timeout {
                Some(t) if t != *current => self
                    .stream
                    .socket()
                    .set_write_timeout(t)
                    .map(|()| *current = t)
                    .and_then(|()| self.stream.write_all(bytes)),
                _ => self.stream.write_all(bytes),
            }
        };
        let Err(e) = written else {
            return Ok(());
        };
        let _ = self.stream.socket().shutdown(Shutdown::Both);
        let mut state = self.state.lock();
        state.close(Closed::Broken);
        self.wake.notify_all();
        release(state);
        Err(match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => SendError::TimedOut,
            _ => SendError::Failed,
        })
    }

    /// Waits for the reply to `id`, whose dispatcher fills `slot`, until
    /// `deadline` (for ever without one), reading the socket when no one
    /// else does.
    pub(crate) fn wait_reply(
        &self,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
    ) -> Awaited {
        if !self.wait_until(deadline, |_| slot.is_ready()) {
            self.time_out(id);
        }
        // The dispatcher ran (reply, close or time-out) unless the request
        // was never bound; then nothing can come.
        slot.take().unwrap_or(Awaited::TimedOut { silent: true })
    }

    /// Leads or follows on the connection until `done` (asked with the
    /// read state locked, after each thing that may change it) is true,
    /// the connection has closed (true), or `deadline` passes (false).
    pub(crate) fn wait_until(
        &self,
        deadline: Option<Instant>,
        mut done: impl FnMut(&mut ReadState) -> bool,
    ) -> bool {
        let mut state = self.state.lock();
        let ended = loop {
            if done(&mut state) || state.closed.is_some() {
                break true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| d <= now) {
                break false;
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
            // Lead: read no longer than our own deadline allows (1 ms at
            // least: a zero timeout means none).
            let timeout = deadline.map(|d| (d - now).max(Duration::from_millis(1)));
            self.lead_once(&mut state, timeout);
            // Callbacks the read made ready run now, with the connection
            // free for another leader meanwhile.
            let handoffs = state.dispatchers.take_handoffs();
            if !handoffs.is_empty() {
                MutexGuard::unlocked(&mut state, || run(handoffs));
            }
        };
        release(state);
        ended
    }

    /// Starts an ORB thread that reads this connection while asynchronous
    /// requests (AMI futures and callbacks, whose owners do not read) are
    /// outstanding on it, unless one reads it already; true when it started
    /// one. The thread ends when none remain or the connection closes: one
    /// thread per connection with such work, never one per request.
    ///
    /// This is the one place that decides who reads for asynchronous
    /// requests; a reactor that watches client connections can take it over.
    pub(crate) fn ensure_reader(self: &Arc<Self>) -> bool {
        {
            let mut state = self.state.lock();
            if state.reader || state.closed.is_some() || state.dispatchers.readerless() == 0 {
                return false;
            }
            state.reader = true;
        }
        let conn = self.clone();
        let spawned = std::thread::Builder::new()
            .name("armillary-ami-reader".into())
            .spawn(move || conn.read_while_asynchronous());
        if spawned.is_err() {
            // Nobody can read for them: end them rather than leave them
            // hanging.
            let _ = self.stream.socket().shutdown(Shutdown::Both);
            let mut state = self.state.lock();
            state.reader = false;
            state.close(Closed::Broken);
            self.wake.notify_all();
            release(state);
            return false;
        }
        true
    }

    /// The body of the thread [`ensure_reader`](Self::ensure_reader)
    /// starts: leads (or follows) on the connection until no asynchronous
    /// request is outstanding, waking at least every [`READER_TICK`] to end
    /// those whose deadline passed.
    fn read_while_asynchronous(&self) {
        loop {
            let now = Instant::now();
            let next = self.state.lock().dispatchers.next_expiry();
            let until = next.map_or(now + READER_TICK, |e| e.min(now + READER_TICK));
            let ended = self.wait_until(Some(until), |state| {
                if state.dispatchers.readerless() == 0 || state.closed.is_some() {
                    state.reader = false;
                    return true;
                }
                false
            });
            if ended {
                let mut state = self.state.lock();
                if state.closed.is_some() {
                    state.reader = false;
                }
                return;
            }
            let mut state = self.state.lock();
            let frames = state.frames;
            state.dispatchers.expire(Instant::now(), frames);
            self.wake.notify_all();
            release(state);
        }
    }

    /// Reads what has arrived, without blocking, when no other thread is
    /// reading: replies go to their dispatchers, and requests whose
    /// deadline has passed are ended as timed out.
    pub(crate) fn poll(&self) {
        let mut state = self.state.lock();
        if state.leader || state.closed.is_some() {
            return;
        }
        let frames = state.frames;
        state.dispatchers.expire(Instant::now(), frames);
        if readiness(self.stream.socket()) != Readiness::Nothing {
            self.lead_once(&mut state, Some(POLL_READ));
        }
        release(state);
    }

    /// One read as the leader (with the read state unlocked meanwhile),
    /// `timeout` at most; what it brings is dispatched, then the followers
    /// are woken (one may have its reply, one must lead).
    fn lead_once(&self, state: &mut MutexGuard<'_, ReadState>, timeout: Option<Duration>) {
        if timeout.is_some() || state.read_timeout.is_some() {
            if self.stream.socket().set_read_timeout(timeout).is_err() {
                state.close(Closed::Broken);
                let _ = self.stream.socket().shutdown(Shutdown::Both);
                self.wake.notify_all();
                return;
            }
            state.read_timeout = timeout;
        }
        state.leader = true;
        let mut buf = std::mem::take(&mut state.buf);
        let read = MutexGuard::unlocked(state, || self.stream.read(&mut buf));
        state.leader = false;
        match read {
            Err(e) if is_tls_refusal(&e) => {
                state.closed.get_or_insert(Closed::Refused);
            }
            // Out of time, or a signal: the caller looks at its deadline.
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
                    accept(state, frame);
                }
                if state.frames != before {
                    state.last_received = Instant::now();
                }
            }
        }
        state.buf = buf;
        if let Some(closed) = state.closed {
            state.close(closed);
            self.stream.shutdown();
        } else {
            let frames = state.frames;
            state.dispatchers.expire(Instant::now(), frames);
        }
        self.wake.notify_all();
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
        let mut state = self.state.lock();
        state.close(Closed::Orderly);
        self.wake.notify_all();
        release(state);
    }
}

/// How long the thread reading for asynchronous requests reads at most
/// before it looks at their deadlines again: a request bound while it is
/// blocked in a read, with a deadline earlier than that read's end, ends
/// this much late at worst.
const READER_TICK: Duration = Duration::from_millis(50);

/// Unlocks the read state, then runs what dispatchers handed back meanwhile
/// (AMI callbacks), on this thread.
fn release(mut state: MutexGuard<'_, ReadState>) {
    let handoffs = state.dispatchers.take_handoffs();
    drop(state);
    run(handoffs);
}

/// Runs dispatchers' handoffs, in the order they were dispatched.
fn run(handoffs: Vec<Handoff>) {
    for handoff in handoffs {
        handoff();
    }
}

/// Takes one message the leader read: a reply goes to its dispatcher (or,
/// when none is bound, is dropped: a oneway's, or one whose owner gave up
/// or timed out); anything else closes the connection.
fn accept(state: &mut ReadState, frame: Frame) {
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
            if let Some(id) = id {
                if state.dispatchers.dispatch(id, frame) {
                    state.delivered += 1;
                }
            }
        }
        MessageType::CloseConnection => state.closed = Some(Closed::Orderly),
        MessageType::MessageError => state.closed = Some(Closed::Broken),
        // Requests, fragments-out-of-place and cancels make no sense
        // on a client connection without bidirectional GIOP.
        _ => state.closed = Some(Closed::Broken),
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
    /// one if needed (within `deadline` when there is one).
    pub(crate) fn get(
        &self,
        host: &str,
        port: u16,
        tls: bool,
        deadline: Option<Instant>,
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
        let fresh = ClientConnection::open(host, port, config, connect_timeout)?;
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

/// What a look at a socket without blocking finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readiness {
    /// Nothing to read yet.
    Nothing,
    /// Bytes to read.
    Data,
    /// Its end, or an error: the peer closed or reset the connection.
    Closed,
}

/// Peeks at `stream` without blocking (one `recv(MSG_PEEK | MSG_DONTWAIT)`).
#[cfg(unix)]
fn readiness(stream: &TcpStream) -> Readiness {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    match socket2::SockRef::from(stream)
        .recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT)
    {
        Ok(0) => Readiness::Closed,
        Ok(_) => Readiness::Data,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
            Readiness::Nothing
        }
        Err(_) => Readiness::Closed,
    }
}

/// Peeks at `stream` without blocking (the socket is non-blocking for the
/// duration of the peek).
#[cfg(not(unix))]
fn readiness(stream: &TcpStream) -> Readiness {
    if stream.set_nonblocking(true).is_err() {
        return Readiness::Data;
    }
    let mut byte = [0u8];
    let found = match stream.peek(&mut byte) {
        Ok(0) => Readiness::Closed,
        Ok(_) => Readiness::Data,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
            Readiness::Nothing
        }
        Err(_) => Readiness::Closed,
    };
    let _ = stream.set_nonblocking(false);
    found
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

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

    /// A client connection to a loopback listener, and the server's end of
    /// it.
    fn connected() -> (Arc<ClientConnection>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conn = ClientConnection::open("127.0.0.1", port, None, CONNECT_TIMEOUT).unwrap();
        let (server, _) = listener.accept().unwrap();
        (conn, server)
    }

    /// Binds a synchronous dispatcher to `id` and returns its slot.
    fn expect(conn: &ClientConnection, id: u32) -> Arc<SyncSlot> {
        let slot = Arc::new(SyncSlot::default());
        conn.bind(id, slot.dispatcher(), None);
        slot
    }

    fn value(frame: &Frame) -> i32 {
        let (_, mut body) = frame.decode().unwrap();
        body.read_long().unwrap()
    }

    #[test]
    fn a_timed_out_wait_forgets_its_reply_and_the_connection_carries_on() {
        let (conn, mut server) = connected();

        // Nothing comes: the wait ends at its deadline, with nothing heard.
        let slot1 = expect(&conn, 1);
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(matches!(
            conn.wait_reply(1, &slot1, Some(deadline)),
            Awaited::TimedOut { silent: true }
        ));
        assert!(conn.state.lock().dispatchers.is_empty());

        // The late reply to 1 arrives with the reply to 2: 1's is dropped.
        let slot2 = expect(&conn, 2);
        server
            .write_all(&[reply(1, 111), reply(2, 222)].concat())
            .unwrap();
        match conn.wait_reply(2, &slot2, None) {
            Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
            _ => panic!("no reply to 2"),
        }
        assert!(conn.state.lock().dispatchers.is_empty());
        assert_eq!(conn.state.lock().closed, None);

        // A wait that saw other replies meanwhile is not silent.
        let slot3 = expect(&conn, 3);
        let slot4 = expect(&conn, 4);
        server.write_all(&reply(4, 444)).unwrap();
        match conn.wait_reply(4, &slot4, None) {
            Awaited::Reply(frame) => assert_eq!(value(&frame), 444),
            _ => panic!("no reply to 4"),
        }
        let deadline = Instant::now() + Duration::from_millis(20);
        assert!(matches!(
            conn.wait_reply(3, &slot3, Some(deadline)),
            Awaited::TimedOut { silent: false }
        ));
        // The socket's read timeout is cleared for a wait without deadline.
        let slot5 = expect(&conn, 5);
        server.write_all(&reply(5, 555)).unwrap();
        assert!(matches!(
            conn.wait_reply(5, &slot5, None),
            Awaited::Reply(_)
        ));
        assert_eq!(conn.state.lock().read_timeout, None);
        assert_eq!(conn.stream.socket().read_timeout().unwrap(), None);
    }

    #[test]
    fn an_idle_connection_the_server_closed_is_found_dead_before_use() {
        let (conn, server) = connected();
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
        let (conn, mut server) = connected();
        // Four waiters with short deadlines and one without: the short ones
        // all end (whoever leads), the last gets its reply afterwards.
        let mut slots: Vec<_> = (1..=5).map(|id| expect(&conn, id)).collect();
        let slot5 = slots.pop().unwrap();
        let waiters: Vec<_> = (1..=4)
            .zip(slots)
            .map(|(id, slot)| {
                let conn = conn.clone();
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_millis(20 * u64::from(id));
                    matches!(
                        conn.wait_reply(id, &slot, Some(deadline)),
                        Awaited::TimedOut { .. }
                    )
                })
            })
            .collect();
        let patient = {
            let conn = conn.clone();
            std::thread::spawn(move || match conn.wait_reply(5, &slot5, None) {
                Awaited::Reply(frame) => value(&frame),
                _ => 0,
            })
        };
        for w in waiters {
            assert!(w.join().unwrap());
        }
        server.write_all(&reply(5, 555)).unwrap();
        assert_eq!(patient.join().unwrap(), 555);
        assert!(conn.state.lock().dispatchers.is_empty());
    }

    #[test]
    fn the_leader_delivers_a_deferred_reply_into_its_dispatcher() {
        use crate::transport::reply::deferred::DeferredSlot;
        let (conn, mut server) = connected();
        let deferred = Arc::new(DeferredSlot::default());
        conn.bind(1, deferred.dispatcher(), None);
        let slot2 = expect(&conn, 2);
        // The deferred reply comes first: the synchronous caller, leading,
        // reads it on its way to its own and hands it over.
        server
            .write_all(&[reply(1, 111), reply(2, 222)].concat())
            .unwrap();
        match conn.wait_reply(2, &slot2, None) {
            Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
            _ => panic!("no reply to 2"),
        }
        assert!(deferred.is_ready());
        match deferred.take() {
            Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 111),
            _ => panic!("no deferred reply"),
        }
        assert!(conn.state.lock().dispatchers.is_empty());
    }

    #[test]
    fn a_poll_reads_what_has_arrived_without_blocking() {
        use crate::transport::reply::deferred::DeferredSlot;
        let (conn, mut server) = connected();
        let deferred = Arc::new(DeferredSlot::default());
        conn.bind(1, deferred.dispatcher(), None);
        // Nothing has arrived: the poll returns at once, empty-handed.
        conn.poll();
        assert!(!deferred.is_ready());
        server.write_all(&reply(1, 111)).unwrap();
        // While another thread leads, a poll leaves the socket to it.
        conn.state.lock().leader = true;
        let deadline = Instant::now() + Duration::from_secs(10);
        while readiness(conn.stream.socket()) != Readiness::Data {
            assert!(Instant::now() < deadline, "the reply never arrived");
            std::thread::yield_now();
        }
        conn.poll();
        assert!(!deferred.is_ready());
        conn.state.lock().leader = false;
        // Nobody leads: a poll reads it (the bytes are there already;
        // should TCP have cut the message, a later poll reads the rest).
        while !deferred.is_ready() {
            assert!(Instant::now() < deadline, "the poll never delivered it");
            conn.poll();
        }
        match deferred.take() {
            Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 111),
            _ => panic!("the poll did not deliver the reply"),
        }
        // A deferred request past its deadline is ended by the next poll,
        // and its late reply is dropped.
        let late = Arc::new(DeferredSlot::default());
        conn.bind(2, late.dispatcher(), Some(Instant::now()));
        conn.poll();
        assert!(matches!(
            late.take(),
            Some(Awaited::TimedOut { silent: true })
        ));
        assert!(conn.state.lock().dispatchers.is_empty());
        assert_eq!(Arc::strong_count(&late), 1);
        let patient = Arc::new(DeferredSlot::default());
        conn.bind(3, patient.dispatcher(), None);
        server
            .write_all(&[reply(2, 222), reply(3, 333)].concat())
            .unwrap();
        assert!(conn.wait_until(None, |_| patient.is_ready()));
        match patient.take() {
            Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 333),
            _ => panic!("no reply to 3"),
        }
        assert_eq!(conn.state.lock().closed, None);
    }

    #[test]
    fn a_bind_beyond_the_limit_waits_for_a_reply_or_its_deadline() {
        use crate::transport::reply::deferred::DeferredSlot;
        let (conn, mut server) = connected();
        let first = Arc::new(DeferredSlot::default());
        assert!(conn.bind_within_limit(1, first.dispatcher(), None, 1));
        // The only slot is taken: the deadline passes, nothing is bound.
        let refused = Arc::new(DeferredSlot::default());
        let deadline = Instant::now() + Duration::from_millis(20);
        assert!(!conn.bind_within_limit(2, refused.dispatcher(), Some(deadline), 1));
        assert_eq!(conn.state.lock().dispatchers.len(), 1);
        assert_eq!(Arc::strong_count(&refused), 1);
        // The reply to 1 frees it: the waiting binder reads it and binds.
        server.write_all(&reply(1, 111)).unwrap();
        let second = Arc::new(DeferredSlot::default());
        assert!(conn.bind_within_limit(3, second.dispatcher(), None, 1));
        assert!(first.is_ready());
        assert_eq!(conn.state.lock().dispatchers.len(), 1);
        // Unbinding frees a slot too.
        conn.unbind(3);
        let third = Arc::new(DeferredSlot::default());
        assert!(conn.bind_within_limit(4, third.dispatcher(), Some(Instant::now()), 1));
        // On a closed connection the dispatcher learns it at once.
        drop(server);
        assert!(conn.wait_until(None, |_| false));
        let late = Arc::new(DeferredSlot::default());
        assert!(conn.bind_within_limit(5, late.dispatcher(), None, 1));
        assert!(matches!(late.take(), Some(Awaited::Closed(Closed::Broken))));
    }

    #[test]
    fn a_closing_connection_ends_every_deferred_request() {
        use crate::transport::reply::deferred::DeferredSlot;
        let (conn, server) = connected();
        let slots: Vec<_> = (1..=3)
            .map(|id| {
                let slot = Arc::new(DeferredSlot::default());
                conn.bind(id, slot.dispatcher(), None);
                slot
            })
            .collect();
        drop(server);
        assert!(conn.wait_until(None, |_| false));
        for slot in &slots {
            assert!(matches!(slot.take(), Some(Awaited::Closed(Closed::Broken))));
        }
        // Bound after the close: told at once.
        let after = Arc::new(DeferredSlot::default());
        conn.bind(4, after.dispatcher(), None);
        assert!(matches!(
            after.take(),
            Some(Awaited::Closed(Closed::Broken))
        ));
    }
}
