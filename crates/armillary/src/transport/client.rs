//! The client side of IIOP: a connection to a server (cached by
//! [`connection_cache`](super::connection_cache)), its requests
//! written by the calling thread (or queued for the thread writing the
//! connection), replies read by whichever thread leads (Leader/Followers:
//! the leader reads the socket and hands each reply to the
//! [reply dispatcher](super::reply) bound to its request id; followers
//! sleep until their reply or leadership arrives). With one caller this is
//! wait-on-read: the caller reads its own reply, with no thread switch.
//!
//! Sending and collecting are separate: a request binds its dispatcher,
//! is sent, and its reply is collected later by whichever thread reads the
//! connection — a synchronous caller waiting for it ([`wait_reply`]), a
//! waiter for a deferred reply ([`wait_until`]), a caller polling
//! without blocking ([`poll`], which reads only what has arrived and only
//! when nobody leads), or the connection's reader thread while
//! asynchronous requests are outstanding ([`ensure_reader`]).
//!
//! Every request may have a deadline (the ORB's call timeout): a follower
//! sleeps no longer than its own deadline, a leader reads with a socket
//! timeout that ends at its own deadline, then hands the socket on, and
//! whoever reads ends the requests whose deadline has passed. The reader
//! thread wakes at the earliest deadline of what is outstanding: while
//! nothing has arrived it waits in a poll of the socket
//! ([`SocketWait`](super::socket_wait::SocketWait)) until bytes come or
//! that deadline, and a request bound with an earlier deadline wakes it;
//! with nothing due it does not wake at all. A request that ends unbinds
//! its dispatcher, so a reply that comes later is dropped like any reply
//! nobody waits for.
//!
//! Writes go through the connection's [outbox](super::outbox): a message
//! sent while another thread writes is queued, and that thread writes it
//! with whatever else queued once its own write is done; while
//! asynchronous requests are pipelined, every message is queued for the
//! connection's writer thread ([`write_behind`]). A write is bounded by
//! the earliest deadline of the messages it carries; what a write that
//! fails or runs out of time means for each request is the outbox's
//! (a request none of whose bytes left is sent again on another
//! connection). Closing the connection writes what is queued, then
//! CloseConnection, before it shuts the socket.
//!
//! A reply larger than the ORB's `-ORBMaxMessageSize` ends its request
//! (MARSHAL, [`minor::MESSAGE_SIZE_EXCEEDED`], COMPLETED_YES) and closes
//! the connection, which cannot be read past it.
//!
//! [`wait_reply`]: ClientConnection::wait_reply_by
//! [`wait_until`]: ClientConnection::wait_until
//! [`poll`]: ClientConnection::poll
//! [`ensure_reader`]: ClientConnection::ensure_reader
//! [`write_behind`]: ClientConnection::write_behind
//!
//! **Invariant:** a connection is read by at most one thread at a time.
//!
//! Lock order: the read state before the outbox (a deadline or a close
//! takes a request's message out of the queue); nothing locks the read
//! state while it holds the outbox.

use std::io::ErrorKind;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::cdr::SplicedBytes;
use armillary_giop::giop::{Frame, FrameDecoder, FrameError, MessageBody, MessageType};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::GiopVersion;
use parking_lot::{Condvar, Mutex, MutexGuard};

use super::gather::write_from;
use super::mux::Caller;
use super::outbox::{Batch, Departure, Outbox, Outgoing, Stop, Stopped, Verdict};
use super::reply::sync::SyncSlot;
pub(crate) use super::reply::Awaited;
use super::reply::{DispatcherTable, Handoff, ReplyDispatcher};
use super::socket_wait::{SocketWait, SocketWaker};
use super::tls::{is_tls_refusal, ClientStream, TlsClientStream};
use super::wait::{Serving, Waiter};
use crate::net;
use crate::reactor::{EventHandler, Reactor};
use crate::trace::{HostPort, Side};

/// How long opening a connection may take when the call has no deadline.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long closing a connection waits for what is queued on it, and its
/// CloseConnection, to be written (a server that stops reading must not
/// hold up the ORB's shutdown); then the socket is shut regardless.
const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// An idle connection known open more recently than this (it received a
/// message, or a look found it open) is reused without looking whether the
/// server closed it: back-to-back calls skip the system call, and a server
/// rarely dies between two of them (if it does, the call fails as if it
/// had died during it).
const TRUST_RECENT: Duration = Duration::from_millis(1);

/// What [`ClientConnection::claim_if_idle`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Idle and open: claimed for the caller.
    Claimed,
    /// Carrying a request, read by a thread, or claimed by another caller.
    Busy,
    /// Closed (found so now, or before).
    Closed,
}

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
    /// When the connection was last known open: a message arrived, a
    /// look found it open, or it opened.
    last_known_open: Instant,
    /// The read timeout currently set on the socket.
    read_timeout: Option<Duration>,
    leader: bool,
    /// Taken for one request by the exclusive transport mux, not yet
    /// bound (see [`claim_if_idle`](ClientConnection::claim_if_idle)).
    claimed: bool,
    /// Whether an ORB thread reads the connection for the asynchronous
    /// requests outstanding on it ([`ClientConnection::ensure_reader`]).
    reader: bool,
    /// Whether that thread is parked, not reading, until asynchronous
    /// requests come again ([`ClientConnection::linger`]).
    reader_parked: bool,
    /// Wakes that thread out of its wait for bytes, while it has one.
    reader_waker: Option<SocketWaker>,
    /// How many times that thread went round its loop (what tests watch
    /// to see it does not wake for nothing).
    #[cfg(test)]
    reader_turns: u64,
    /// How many times that thread woke while parked (tests watch that a
    /// synchronous call does not wake it).
    #[cfg(test)]
    linger_wakeups: u64,
    closed: Option<Closed>,
}

impl ReadState {
    /// Marks the connection closed (keeping the first reason) and ends
    /// every outstanding request with it, but those whose messages were
    /// still queued in `outbox` (never written): they may be sent again.
    fn close(&mut self, why: Closed, outbox: &Mutex<Outbox>) {
        let why = *self.closed.get_or_insert(why);
        let unsent = outbox.lock().discard();
        for id in unsent {
            self.dispatchers.settle(id, Awaited::Unsent);
        }
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
    /// Held while a batch is written; holds the write timeout currently
    /// set on the socket.
    write_lock: Mutex<Option<Duration>>,
    /// Messages waiting for the thread that writes the connection.
    outbox: Mutex<Outbox>,
    /// Wakes the writer thread.
    outbox_ready: Condvar,
    /// Signalled when a thread stops writing (a close waits for it).
    outbox_drained: Condvar,
    state: Mutex<ReadState>,
    wake: Condvar,
    /// Wakes the reader thread parked in [`linger`](Self::linger), and
    /// nobody else: `wake` is signalled after every read, and a parked
    /// reader woken by each synchronous call would cost every call a
    /// thread switch.
    reader_resume: Condvar,
    next_id: AtomicU32,
    /// The code sets of the connection, fixed by its first GIOP 1.1+
    /// request (which carries them in a CodeSets service context): GIOP
    /// negotiates code sets per connection, so every later request on it
    /// uses these, whatever reference it was made through.
    pub(crate) codesets: std::sync::OnceLock<armillary_giop::cdr::codeset::CodeSets>,
    /// Set once a request announcing `codesets` has been written: until
    /// then every request carries the announcement too, so that a request
    /// written before the first announcing one (its thread was slower)
    /// is not read with the default code sets.
    pub(crate) codesets_announced: std::sync::atomic::AtomicBool,
    /// The reactors that watch the socket for replies (see
    /// [`watch_with`](Self::watch_with)), with the connection's token in
    /// each.
    watched_by: Mutex<Vec<(std::sync::Weak<Reactor>, mio::Token)>>,
    /// This end's address (what the server sees as its peer: traces name
    /// it).
    local: Option<std::net::SocketAddr>,
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        let reason = match self.state.get_mut().closed {
            Some(Closed::Orderly) => "orderly",
            Some(Closed::Broken) => "broken",
            Some(Closed::Refused) => "tls_refused",
            None => "dropped",
        };
        crate::trace::connection_closed(Side::Client, self.peer(), reason);
        // The socket is still open here: take it out of the reactors.
        #[cfg(unix)]
        for (reactor, token) in self.watched_by.get_mut().drain(..) {
            if let Some(reactor) = reactor.upgrade() {
                use std::os::fd::AsRawFd;
                let fd = self.stream.socket().as_raw_fd();
                reactor.deregister(&mut mio::unix::SourceFd(&fd), token);
            }
        }
    }
}

/// The reactor's handler for a client connection it watches: reads the
/// replies that have arrived when no caller is reading the connection.
struct RepliesReady(std::sync::Weak<ClientConnection>);

impl EventHandler for RepliesReady {
    fn ready(&self, reactor: &Arc<Reactor>, _readiness: crate::reactor::Readiness) {
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        if conn.drain() {
            // A thread may be waiting in the reactor's poll for this reply
            // (another thread handled the event): wake it.
            reactor.post(Box::new(|| {}));
        }
    }

    /// Ends the requests whose deadline passed, and reads what a caller
    /// that stopped leading left in the socket (no new event announces
    /// bytes that arrived while it read); then asks for the next look
    /// while asynchronous requests are outstanding.
    fn tick(&self, reactor: &Arc<Reactor>) {
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        conn.expire();
        self.ready(reactor, crate::reactor::Readiness::default());
        conn.schedule_check(reactor);
    }
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
    /// The socket failed, or the connection is closing: the request did
    /// not leave whole (it may be sent again elsewhere); the connection is
    /// closed.
    Failed,
    /// The server did not take the bytes by the request's deadline; the
    /// connection is closed (part of a message may have left).
    TimedOut,
}

/// How long a non-blocking [`ClientConnection::poll`] may spend reading
/// once the socket has bytes: a TLS record cut in two may need its rest.
const POLL_READ: Duration = Duration::from_millis(1);

impl ClientConnection {
    /// Connects within `connect_timeout` (and, with `tls`, runs the TLS
    /// handshake within it); replies larger than `max_message_size` are
    /// refused.
    pub(super) fn open(
        host: &str,
        port: u16,
        tls: Option<&Arc<rustls::ClientConfig>>,
        connect_timeout: Duration,
        max_message_size: usize,
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
        let local = stream.socket().local_addr().ok();
        crate::trace::connection_opened(Side::Client, HostPort(host, port), local, tls.is_some());
        Ok(Arc::new(ClientConnection {
            endpoint: (host.to_owned(), port, tls.is_some()),
            stream,
            write_lock: Mutex::new(None),
            outbox: Mutex::default(),
            outbox_ready: Condvar::new(),
            outbox_drained: Condvar::new(),
            state: Mutex::new(ReadState {
                decoder: FrameDecoder::new(super::client_frame_limits(max_message_size)),
                buf: vec![0; super::READ_BUFFER],
                dispatchers: DispatcherTable::default(),
                frames: 0,
                delivered: 0,
                last_known_open: Instant::now(),
                read_timeout: None,
                leader: false,
                claimed: false,
                reader: false,
                reader_parked: false,
                reader_waker: None,
                #[cfg(test)]
                reader_turns: 0,
                #[cfg(test)]
                linger_wakeups: 0,
                closed: None,
            }),
            wake: Condvar::new(),
            reader_resume: Condvar::new(),
            next_id: AtomicU32::new(1),
            codesets: std::sync::OnceLock::new(),
            codesets_announced: std::sync::atomic::AtomicBool::new(false),
            watched_by: Mutex::new(Vec::new()),
            local,
        }))
    }

    /// The server's `host:port`, as traces name it.
    /// The host, port and TLS it was opened to: its key in the cache.
    pub(super) fn endpoint(&self) -> (&str, u16, bool) {
        let (host, port, tls) = &self.endpoint;
        (host, *port, *tls)
    }

    pub(crate) fn peer(&self) -> HostPort<'_> {
        HostPort(&self.endpoint.0, self.endpoint.1)
    }

    /// This end's address, as the server sees it.
    pub(crate) fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.local
    }

    /// Takes the connection for one request if it carries none (no reply
    /// awaited, nobody reading it, not taken by another caller): the
    /// exclusive transport mux. The claim ends when the request binds its
    /// dispatcher (the connection is busy until its reply), or with
    /// [`unclaim`](Self::unclaim) (a oneway, or a request never sent).
    ///
    /// An idle connection is looked at as
    /// [`is_dead_while_idle`](Self::is_dead_while_idle) does, under the
    /// same lock: one that the server closed is not claimed.
    pub(crate) fn claim_if_idle(&self) -> Claim {
        let mut state = self.state.lock();
        if state.closed.is_some() {
            return Claim::Closed;
        }
        if state.claimed || state.leader || !state.dispatchers.is_empty() {
            return Claim::Busy;
        }
        if self.dead_while_idle(&mut state) {
            release(state);
            return Claim::Closed;
        }
        state.claimed = true;
        Claim::Claimed
    }

    /// Ends a claim (see [`claim_if_idle`](Self::claim_if_idle)).
    pub(crate) fn unclaim(&self) {
        self.state.lock().claimed = false;
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
    /// it. Costs one non-blocking `recv(MSG_PEEK)`, skipped when the
    /// connection was known open in the last `TRUST_RECENT` (a message
    /// arrived, or an earlier look found it open: a stream of oneways,
    /// which get no replies, looks once per `TRUST_RECENT`, not once per
    /// request).
    pub(super) fn is_dead_while_idle(&self) -> bool {
        let mut state = self.state.lock();
        let dead = self.dead_while_idle(&mut state);
        if dead {
            release(state);
        }
        dead
    }

    /// [`is_dead_while_idle`](Self::is_dead_while_idle), with the read
    /// state locked (`state`); a connection found closed is ended (what
    /// that hands back runs once the caller releases the state).
    fn dead_while_idle(&self, state: &mut ReadState) -> bool {
        if state.closed.is_some() {
            return true;
        }
        if state.leader
            || !state.dispatchers.is_empty()
            || state.last_known_open.elapsed() < TRUST_RECENT
        {
            return false;
        }
        if readiness(self.stream.socket()) == Readiness::Closed {
            self.end(state, Closed::Broken);
            let _ = self.stream.socket().shutdown(Shutdown::Both);
            return true;
        }
        state.last_known_open = Instant::now();
        false
    }

    /// Marks the connection closed for `why` (see [`ReadState::close`])
    /// and wakes whoever waits on it: its followers, its reader thread,
    /// its writer thread. The caller shuts the socket.
    fn end(&self, state: &mut ReadState, why: Closed) {
        state.close(why, &self.outbox);
        if let Some(waker) = &state.reader_waker {
            waker.wake();
        }
        self.wake.notify_all();
        self.reader_resume.notify_all();
        self.outbox_ready.notify_all();
        self.outbox_drained.notify_all();
    }

    /// Binds `dispatcher` to the reply of `id` (before the request is
    /// sent); with a `deadline`, whoever reads the connection after it
    /// ends the request as timed out. On a closed connection the
    /// dispatcher learns it at once.
    pub(crate) fn bind(
        &self,
        id: u32,
        dispatcher: Arc<dyn ReplyDispatcher>,
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
                self.bind_locked(&mut state, id, dispatcher, deadline);
                release(state);
            }
        }
    }

    /// Binds `dispatcher` to `id` on the open connection whose read state
    /// is `state`; a deadline earlier than every other one wakes the
    /// reader thread, which sleeps until the earliest.
    fn bind_locked(
        &self,
        state: &mut ReadState,
        id: u32,
        dispatcher: Arc<dyn ReplyDispatcher>,
        deadline: Option<Instant>,
    ) {
        let earliest =
            deadline.is_some_and(|d| state.dispatchers.next_expiry().is_none_or(|next| d < next));
        let frames = state.frames;
        state.dispatchers.bind(id, dispatcher, frames, deadline);
        state.claimed = false;
        if earliest && state.reader && !state.reader_parked {
            if let Some(waker) = &state.reader_waker {
                waker.wake();
            }
            // Or it follows a caller that reads.
            self.wake.notify_all();
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
        dispatcher: Arc<dyn ReplyDispatcher>,
        deadline: Option<Instant>,
        limit: usize,
    ) -> bool {
        {
            // A free slot (the common case): bound at once, no wait.
            let mut state = self.state.lock();
            if state.closed.is_none() && state.dispatchers.len() < limit {
                self.bind_locked(&mut state, id, dispatcher, deadline);
                return true;
            }
        }
        let mut dispatcher = Some(dispatcher);
        // It may wait for replies to free a slot.
        let _waiting = crate::thread_role::waiting_for_reply();
        let ended = self.wait_until(deadline, |state| {
            if state.closed.is_some() {
                return true;
            }
            if state.dispatchers.len() < limit {
                if let Some(d) = dispatcher.take() {
                    self.bind_locked(state, id, d, deadline);
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
    /// passed), unless its outcome was dispatched already: COMPLETED_NO
    /// when its message was still queued (it is taken out and never
    /// written). When a thread is writing its message, waits for that
    /// thread, which ends it by the same deadline.
    pub(crate) fn time_out(&self, id: u32) {
        let mut state = self.state.lock();
        while state.dispatchers.contains(id) {
            let departure = self.outbox.lock().departure(id);
            if departure == Departure::Writing {
                self.wake.wait(&mut state);
                continue;
            }
            let frames = state.frames;
            state
                .dispatchers
                .time_out(id, frames, departure == Departure::Left);
        }
        self.wake.notify_all();
        release(state);
    }

    /// Sends a whole message, `outgoing` saying which reply it awaits and
    /// when its write must be over, for a request whose caller is `caller`:
    /// writes it now, or leaves it to another thread:
    /// - a deferred or asynchronous request (`Caller::Defers`), while
    ///   asynchronous requests are pipelined on the connection (two or
    ///   more outstanding, this one included), to the connection's
    ///   writer thread ([`write_behind`](Self::write_behind)), which
    ///   writes what queued while it slept or wrote in one go: the sending
    ///   thread makes no system call, and many requests leave per write;
    /// - else, to the thread writing now, if one is, which writes it with
    ///   whatever else queued once its own write is done (so many threads
    ///   calling at once make few writes).
    ///
    /// Messages leave in the order they were sent: once one waits for the
    /// writer thread, every later one does too. `Ok` for a message left
    /// to another thread: what becomes of it reaches its request through
    /// its dispatcher (see [`super::outbox`]). An error means the message
    /// did not leave whole (so the server cannot have run it): the
    /// connection is closing, or this thread's write failed or ran past
    /// the deadline (the connection is then closed).
    pub(crate) fn send(
        self: &Arc<Self>,
        bytes: &SplicedBytes,
        outgoing: Outgoing,
        caller: Caller,
    ) -> Result<(), SendError> {
        // A synchronous call or a oneway does not look: it is written
        // now, or behind whoever writes (or after what is queued).
        let pipelining =
            caller == Caller::Defers && self.state.lock().dispatchers.readerless() >= 2;
        let mut outbox = self.outbox.lock();
        if outbox.shut {
            return Err(SendError::Failed);
        }
        if outbox.writing {
            outbox.push(bytes, outgoing);
            return Ok(());
        }
        if pipelining || !outbox.is_empty() {
            outbox.push(bytes, outgoing);
            if outbox.writer_parked {
                // Woken once: those queued before it runs need no more.
                outbox.writer_parked = false;
                self.outbox_ready.notify_one();
                return Ok(());
            }
            if outbox.writer {
                return Ok(());
            }
            let conn = self.clone();
            let spawned = std::thread::Builder::new()
                .name("armillary-writer".into())
                .spawn(move || conn.write_behind());
            if spawned.is_ok() {
                outbox.writer = true;
                return Ok(());
            }
            // No thread: this one writes what is queued, its own last
            // (what becomes of each reaches its request, this one's too).
            let batch = outbox.take();
            drop(outbox);
            let _ = self.write_in_turn(&batch);
            return Ok(());
        }
        let batch = Batch::single(bytes, outgoing);
        outbox.begin(&batch);
        drop(outbox);
        self.write_in_turn(&batch)
            .map_err(|stopped| match stopped.stop {
                Stop::Failed => SendError::Failed,
                Stop::TimedOut => SendError::TimedOut,
            })
    }

    /// Writes `first` (this thread writes the connection now: it took the
    /// batch from the outbox, or began it), then what queued meanwhile;
    /// returns how `first`'s write went.
    fn write_in_turn(&self, first: &Batch<'_>) -> Result<(), Stopped> {
        let written = self.write_batch(first);
        if written.is_ok() {
            self.write_queued();
        }
        written
    }

    /// Writes what is queued, batch after batch, until nothing is (this
    /// thread writes the connection now), then lets go of the writing.
    fn write_queued(&self) {
        loop {
            let batch = {
                let mut outbox = self.outbox.lock();
                if outbox.is_empty() {
                    outbox.written();
                    self.outbox_drained.notify_all();
                    return;
                }
                outbox.take()
            };
            if self.write_batch(&batch).is_err() {
                // The connection is closed, the writing given up.
                return;
            }
        }
    }

    /// The body of the writer thread (see [`send`](Self::send)): writes
    /// what queued, a batch per turn, and parks when nothing is queued;
    /// ends when the connection closes (once what was queued before its
    /// CloseConnection is written) or after [`READER_LINGER`] with nothing
    /// to write.
    fn write_behind(&self) {
        while let Some(batch) = self.next_batch_behind() {
            if self.write_batch(&batch).is_ok() {
                self.write_queued();
            }
        }
    }

    /// The writer thread's next batch, once messages are queued and no
    /// other thread writes; `None` when the thread is to end.
    fn next_batch_behind(&self) -> Option<Batch<'static>> {
        let mut outbox = self.outbox.lock();
        let mut yielded = false;
        loop {
            if !outbox.is_empty() && !outbox.writing {
                return Some(outbox.take());
            }
            if outbox.shut && outbox.is_empty() {
                outbox.writer = false;
                return None;
            }
            if !yielded {
                // Let the senders (on this CPU, say) queue more before
                // parking, which costs them a wake-up.
                yielded = true;
                MutexGuard::unlocked(&mut outbox, std::thread::yield_now);
                continue;
            }
            outbox.writer_parked = true;
            let idle = self
                .outbox_ready
                .wait_for(&mut outbox, READER_LINGER)
                .timed_out();
            outbox.writer_parked = false;
            if idle && outbox.is_empty() {
                outbox.writer = false;
                return None;
            }
        }
    }

    /// Writes `batch` (this thread writes the connection now). When the
    /// write stops before its end, each request of the batch not written
    /// whole learns what that means (see [`super::outbox`]), and the
    /// connection is closed: the bytes on the wire may end in the middle
    /// of a message, so nothing more can follow them.
    fn write_batch(&self, batch: &Batch<'_>) -> Result<(), Stopped> {
        match self.put_on_wire(batch) {
            Ok(()) => {
                self.outbox.lock().left();
                // Requests whose deadline passed while they were written
                // (whoever found it passed left them to this thread) end
                // now; a caller may wait for that. (The clock is read only
                // for a batch with a deadline.)
                let Some(earliest) = batch.deadline_from(0) else {
                    return Ok(());
                };
                let now = Instant::now();
                if earliest <= now {
                    let mut state = self.state.lock();
                    let frames = state.frames;
                    for id in batch.overdue(now) {
                        state.dispatchers.time_out(id, frames, true);
                    }
                    self.wake.notify_all();
                    release(state);
                }
                Ok(())
            }
            Err(stopped) => {
                let mut state = self.state.lock();
                for (id, verdict) in batch.verdicts(stopped, Instant::now()) {
                    let outcome = match verdict {
                        Verdict::Unsent => Awaited::Unsent,
                        Verdict::TimedOut => Awaited::TimedOut {
                            silent: false,
                            sent: false,
                        },
                    };
                    state.dispatchers.settle(id, outcome);
                }
                if state.closed.is_none() {
                    crate::trace::connection_broken(Side::Client, self.peer(), &"a write failed");
                }
                self.end(&mut state, Closed::Broken);
                self.outbox.lock().written();
                self.stream.shutdown();
                release(state);
                Err(stopped)
            }
        }
    }

    /// Writes the bytes of `batch` to the socket, each write bounded by
    /// the earliest deadline of the messages not yet written whole; says
    /// how far it got when it stops before the end.
    fn put_on_wire(&self, batch: &Batch<'_>) -> Result<(), Stopped> {
        let mut timeout = self.write_lock.lock();
        let wire = self
            .stream
            .seal(batch.bytes(), batch.ends())
            .map_err(|_| Stopped {
                stop: Stop::Failed,
                whole: 0,
                partly: false,
            })?;
        let bytes = wire.bytes();
        let end = |i: usize| wire.end(i, batch.end(i));
        let mut written = 0;
        let mut whole = 0;
        loop {
            while whole < batch.len() && end(whole) <= written {
                whole += 1;
            }
            if whole == batch.len() {
                return Ok(());
            }
            let partly = written > whole.checked_sub(1).map_or(0, end);
            let stopped = |stop| Stopped {
                stop,
                whole,
                partly,
            };
            let wanted = match batch.deadline_from(whole) {
                None => None,
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    // A zero timeout means none: 1 ms at least.
                    Some(left) if !left.is_zero() => Some(left.max(Duration::from_millis(1))),
                    _ => return Err(stopped(Stop::TimedOut)),
                },
            };
            if needs_new_timeout(*timeout, wanted) {
                if self.stream.socket().set_write_timeout(wanted).is_err() {
                    return Err(stopped(Stop::Failed));
                }
                *timeout = wanted;
            }
            match write_from(self.stream.socket(), bytes, written) {
                Ok(0) => return Err(stopped(Stop::Failed)),
                Ok(n) => written += n,
                // Out of time (the deadline is looked at again), or a
                // signal.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(_) => return Err(stopped(Stop::Failed)),
            }
        }
    }

    /// Waits for the reply to `id`, whose dispatcher fills `slot`, until
    /// `deadline` (for ever without one), reading the socket when no one
    /// else does.
    #[cfg(test)]
    pub(crate) fn wait_reply(
        self: &Arc<Self>,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
    ) -> Awaited {
        use super::wait::{Serve, Serving, WaitOnRead};
        let serving = Serving::from(Serve::Nothing);
        self.wait_reply_by(id, slot, deadline, &WaitOnRead, &serving)
    }

    /// Waits for the reply to `id`, whose dispatcher fills `slot`, until
    /// `deadline` (for ever without one), the way `strategy` waits,
    /// serving `serving` meanwhile.
    pub(crate) fn wait_reply_by(
        self: &Arc<Self>,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
        strategy: &dyn Waiter,
        serving: &Serving,
    ) -> Awaited {
        if !strategy.wait(serving, self, deadline, &mut |_| slot.is_ready()) {
            self.time_out(id);
        }
        // The dispatcher ran (reply, close or time-out) unless the request
        // was never bound; then nothing can come.
        slot.take().unwrap_or(Awaited::TimedOut {
            silent: true,
            sent: true,
        })
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
            // The time left, for a call with a deadline (the clock is read
            // only then).
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|left| left.is_zero()) {
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
            let timeout = left.map(|left| left.max(Duration::from_millis(1)));
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
    /// outstanding on it, unless one reads it already (or is parked, then
    /// it is woken); true when it started one. When none remain the thread
    /// parks without reading (a synchronous caller reads its own reply
    /// meanwhile) for [`READER_LINGER`], and ends if none came by then or
    /// the connection closed: one thread per connection with such work,
    /// never one per request, and no thread started per call when calls
    /// come one at a time.
    ///
    /// This is the one place that decides who reads for asynchronous
    /// requests; a reactor that watches client connections can take it over.
    pub(crate) fn ensure_reader(self: &Arc<Self>) -> bool {
        {
            let mut state = self.state.lock();
            if state.closed.is_some() || state.dispatchers.readerless() == 0 {
                return false;
            }
            if state.reader {
                // A parked reader takes the new requests on.
                if state.reader_parked {
                    self.reader_resume.notify_all();
                }
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
            self.end(&mut state, Closed::Broken);
            release(state);
            return false;
        }
        true
    }

    /// The body of the thread [`ensure_reader`](Self::ensure_reader)
    /// starts: [reads](Self::read_for_asynchronous) while asynchronous
    /// requests are outstanding, then [lingers](Self::linger).
    fn read_while_asynchronous(&self) {
        // A wait for bytes that a request with an earlier deadline cuts
        // short; without one (no poll available) the thread reads with a
        // timeout of at most `READER_TICK`.
        let mut socket_wait = match SocketWait::new(self.stream.socket()) {
            Ok((wait, waker)) => {
                self.state.lock().reader_waker = Some(waker);
                Some(wait)
            }
            Err(_) => None,
        };
        loop {
            self.read_for_asynchronous(socket_wait.as_mut());
            if !self.linger() {
                return;
            }
        }
    }

    /// Leads (or follows) on the connection while asynchronous requests
    /// are outstanding on it, ending each at its deadline. With nothing
    /// to read it waits in `socket_wait` until bytes arrive or the
    /// earliest deadline (a request bound with an earlier one wakes it);
    /// while a caller reads, it follows until then.
    fn read_for_asynchronous(&self, mut socket_wait: Option<&mut SocketWait>) {
        let mut state = self.state.lock();
        loop {
            #[cfg(test)]
            {
                state.reader_turns += 1;
            }
            self.expire_locked(&mut state);
            if state.closed.is_some() || state.dispatchers.readerless() == 0 {
                break;
            }
            // What the last read or the deadlines ended is told (callbacks
            // run) before the thread sleeps again.
            let handoffs = state.dispatchers.take_handoffs();
            if !handoffs.is_empty() {
                MutexGuard::unlocked(&mut state, || run(handoffs));
                continue;
            }
            let until = state.dispatchers.next_expiry();
            if state.leader {
                match until {
                    Some(until) => {
                        self.wake.wait_until(&mut state, until);
                    }
                    None => self.wake.wait(&mut state),
                }
            } else if let Some(wait) = socket_wait.as_deref_mut() {
                if self.has_input() {
                    // What has arrived: a read takes it at once.
                    self.lead_once(&mut state, Some(POLL_READ));
                } else {
                    MutexGuard::unlocked(&mut state, || wait.wait(until));
                }
            } else {
                let now = Instant::now();
                let timeout = until.map_or(READER_TICK, |d| {
                    d.saturating_duration_since(now)
                        .clamp(Duration::from_millis(1), READER_TICK)
                });
                self.lead_once(&mut state, Some(timeout));
            }
        }
        release(state);
    }

    /// Parks the reader thread, not reading, until asynchronous requests
    /// are outstanding again (true: it reads for them), or the connection
    /// closed or [`READER_LINGER`] passed without any (false: the thread
    /// ends, and the next asynchronous request starts another).
    fn linger(&self) -> bool {
        let mut state = self.state.lock();
        let until = Instant::now() + READER_LINGER;
        state.reader_parked = true;
        let resumed = loop {
            if state.closed.is_some() {
                break false;
            }
            if state.dispatchers.readerless() > 0 {
                break true;
            }
            if self.reader_resume.wait_until(&mut state, until).timed_out() {
                break state.closed.is_none() && state.dispatchers.readerless() > 0;
            }
            #[cfg(test)]
            {
                state.linger_wakeups += 1;
            }
        };
        state.reader_parked = false;
        if !resumed {
            state.reader = false;
            state.reader_waker = None;
        }
        release(state);
        resumed
    }

    /// Whether something waits to be read: bytes in the socket (or its
    /// end), or input the stream has read and not handed out yet.
    fn has_input(&self) -> bool {
        self.stream.has_buffered_input() || readiness(self.stream.socket()) != Readiness::Nothing
    }

    /// Reads what has arrived, without blocking, when no other thread is
    /// reading: replies go to their dispatchers, and requests whose
    /// deadline has passed are ended as timed out.
    pub(crate) fn poll(&self) {
        let mut state = self.state.lock();
        if state.leader || state.closed.is_some() {
            return;
        }
        self.expire_locked(&mut state);
        if readiness(self.stream.socket()) != Readiness::Nothing {
            self.lead_once(&mut state, Some(POLL_READ));
        }
        release(state);
    }

    /// Whether `done` holds (asked with the read state locked) or the
    /// connection has closed.
    pub(crate) fn is_done(&self, done: &mut dyn FnMut(&mut ReadState) -> bool) -> bool {
        let mut state = self.state.lock();
        done(&mut state) || state.closed.is_some()
    }

    /// Sleeps until `done` holds or the connection closes (true), or
    /// `until` passes (false), without reading: woken whenever a thread
    /// that reads the connection has read something (a follower of a
    /// reactor that reads it, see [`watch_with`](Self::watch_with)).
    pub(crate) fn follow_until(
        &self,
        until: Instant,
        done: &mut dyn FnMut(&mut ReadState) -> bool,
    ) -> bool {
        let mut state = self.state.lock();
        loop {
            if done(&mut state) || state.closed.is_some() {
                return true;
            }
            if self.wake.wait_until(&mut state, until).timed_out() {
                return done(&mut state) || state.closed.is_some();
            }
        }
    }

    /// Has `reactor` watch the socket and read the replies that arrive
    /// (when no caller reads the connection), once per reactor: a thread
    /// that runs the reactor while it waits (wait on the reactor,
    /// Leader/Followers) gets its reply that way. Without `mio`'s file
    /// descriptor sources (not Unix) the waiting thread finds its reply by
    /// polling the connection between turns of the reactor instead.
    pub(crate) fn watch_with(self: &Arc<Self>, reactor: &Arc<Reactor>) {
        let mut watched = self.watched_by.lock();
        watched.retain(|(r, _)| r.strong_count() > 0);
        if watched
            .iter()
            .any(|(r, _)| std::ptr::eq(r.as_ptr(), Arc::as_ptr(reactor)))
        {
            return;
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let fd = self.stream.socket().as_raw_fd();
            let handler = Arc::new(RepliesReady(Arc::downgrade(self)));
            if let Ok(token) = reactor.register(
                &mut mio::unix::SourceFd(&fd),
                mio::Interest::READABLE,
                handler,
            ) {
                watched.push((Arc::downgrade(reactor), token));
            }
        }
    }

    /// Ends the requests whose deadline has passed.
    fn expire(&self) {
        let mut state = self.state.lock();
        self.expire_locked(&mut state);
        self.wake.notify_all();
        release(state);
    }

    /// Ends the requests whose deadline has passed (see
    /// [`DispatcherTable::expire`]), the read state locked.
    fn expire_locked(&self, state: &mut ReadState) {
        if state.dispatchers.next_expiry().is_none() {
            // No request has a deadline: the clock is not read.
            return;
        }
        let frames = state.frames;
        state.dispatchers.expire(Instant::now(), frames, &mut |id| {
            self.outbox.lock().departure(id)
        });
    }

    /// Has `reactor` read the replies of the asynchronous requests
    /// outstanding on the connection (instead of a reader thread, see
    /// [`ensure_reader`](Self::ensure_reader)), and reads those that came
    /// already.
    pub(crate) fn read_in(self: &Arc<Self>, reactor: &Arc<Reactor>) {
        self.watch_with(reactor);
        if self.drain() {
            reactor.post(Box::new(|| {}));
        }
        self.schedule_check(reactor);
    }

    /// While asynchronous requests the reactor reads for are outstanding,
    /// asks it for a tick (it has no timer of its own) at their earliest
    /// deadline, and within [`TICK_INTERVAL`](crate::reactor::TICK_INTERVAL)
    /// at the latest, for bytes a caller that stopped leading left unread.
    fn schedule_check(&self, reactor: &Reactor) {
        let next = {
            let state = self.state.lock();
            if state.closed.is_some() || state.dispatchers.readerless() == 0 {
                return;
            }
            let soon = Instant::now() + crate::reactor::TICK_INTERVAL;
            state
                .dispatchers
                .next_expiry()
                .map_or(soon, |expiry| expiry.min(soon))
        };
        reactor.tick_at(next);
    }

    /// Reads every reply that has arrived, without blocking, unless a
    /// caller is reading the connection (it will read them). True if any
    /// reply was handed to its dispatcher.
    fn drain(&self) -> bool {
        let mut state = self.state.lock();
        let before = state.delivered;
        while !state.leader
            && state.closed.is_none()
            && readiness(self.stream.socket()) != Readiness::Nothing
        {
            self.lead_once(&mut state, Some(POLL_READ));
        }
        let delivered = state.delivered != before || state.closed.is_some();
        release(state);
        delivered
    }

    /// One read as the leader (with the read state unlocked meanwhile),
    /// `timeout` at most; what it brings is dispatched, then the followers
    /// are woken (one may have its reply, one must lead).
    fn lead_once(&self, state: &mut MutexGuard<'_, ReadState>, timeout: Option<Duration>) {
        if needs_new_timeout(state.read_timeout, timeout) {
            if self.stream.socket().set_read_timeout(timeout).is_err() {
                self.end(state, Closed::Broken);
                let _ = self.stream.socket().shutdown(Shutdown::Both);
                return;
            }
            state.read_timeout = timeout;
        }
        state.leader = true;
        let mut buf = std::mem::take(&mut state.buf);
        // The rest of a large reply arriving is read straight into its
        // own buffer: its body then reaches the frame with no copy.
        let mut direct = state.decoder.lend_for_read(super::DIRECT_READ);
        let read = MutexGuard::unlocked(state, || match &mut direct {
            Some(lent) => self.stream.read(lent.room()),
            None => self.stream.read(&mut buf),
        });
        state.leader = false;
        if !matches!(read, Ok(1..)) {
            if let Some(lent) = direct.take() {
                // Nothing read into it: the decoder takes it back as it was.
                let _ = state.decoder.handle_direct_read(lent, 0);
            }
        }
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
                if state.closed.is_none() {
                    let why = read
                        .as_ref()
                        .err()
                        .map_or(ENDED, |e| e as &dyn std::fmt::Display);
                    crate::trace::connection_broken(Side::Client, self.peer(), why);
                }
                state.closed.get_or_insert(Closed::Broken);
            }
            Ok(n) => {
                let mut too_large = None;
                let decoded = match direct.take() {
                    Some(lent) => state.decoder.handle_direct_read(lent, n),
                    None => state.decoder.handle_bytes(&buf[..n]),
                };
                if let Err(e) = decoded {
                    if matches!(e, FrameError::TooLarge { .. }) {
                        too_large = state.decoder.refused_request_id();
                    }
                    crate::trace::frame_refused(Side::Client, self.peer(), &e, None);
                    state.closed = Some(Closed::Broken);
                }
                let before = state.frames;
                while let Some(frame) = state.decoder.poll_frame() {
                    state.frames += 1;
                    if accept(state, frame) == Some(MessageType::MessageError) {
                        crate::trace::message_error_received(self.peer());
                    }
                }
                if state.frames != before {
                    state.last_known_open = Instant::now();
                }
                // The reply the decoder refused ends its request alone;
                // the close ends the others.
                if let Some(id) = too_large {
                    state.dispatchers.settle(id, Awaited::ReplyTooLarge);
                }
            }
        }
        state.buf = buf;
        if let Some(closed) = state.closed {
            self.end(state, closed);
            self.stream.shutdown();
        } else {
            self.expire_locked(state);
        }
        self.wake.notify_all();
    }

    /// Closes the connection in an orderly way: what is queued on it is
    /// written, then CloseConnection (GIOP 1.2 style), before the socket
    /// is shut, and nothing more is sent on it. A server that does not
    /// take those bytes within [`CLOSE_LIMIT`] does not hold the close up.
    pub(crate) fn close(&self, version: GiopVersion) {
        let limit = Instant::now() + CLOSE_LIMIT;
        let message = armillary_giop::giop::MessageBuilder::new(
            version,
            armillary_giop::ByteOrder::NATIVE,
            &MessageBody::CloseConnection,
        );
        let batch = {
            let mut outbox = self.outbox.lock();
            if std::mem::replace(&mut outbox.shut, true) {
                // Closing, or closed, already.
                None
            } else {
                if let Ok(message) = message {
                    let outgoing = Outgoing {
                        reply: None,
                        deadline: Some(limit),
                    };
                    outbox.push(&message.finish_spliced(false), outgoing);
                }
                if outbox.writing || outbox.writer {
                    // The thread writing, or the writer thread, writes it
                    // after the others.
                    if outbox.writer_parked {
                        outbox.writer_parked = false;
                        self.outbox_ready.notify_one();
                    }
                    while (outbox.writing || !outbox.is_empty())
                        && !self
                            .outbox_drained
                            .wait_until(&mut outbox, limit)
                            .timed_out()
                    {}
                    None
                } else {
                    (!outbox.is_empty()).then(|| outbox.take())
                }
            }
        };
        if let Some(batch) = batch {
            // Should it fail, the connection is closed already.
            let _ = self.write_in_turn(&batch);
        }
        // Closed (orderly) before the socket is shut, so that a thread
        // blocked reading it does not take the shutdown for a broken
        // connection.
        let mut state = self.state.lock();
        self.end(&mut state, Closed::Orderly);
        release(state);
        self.stream.shutdown();
    }
}

/// How long the reader thread reads at most before it looks at deadlines
/// again when it cannot wait in a poll of the socket (see
/// [`SocketWait::new`]): a request bound while it reads, with an earlier
/// deadline than that read's end, ends this much late at worst.
const READER_TICK: Duration = Duration::from_millis(50);

/// How long the thread reading for asynchronous requests stays parked
/// once none is outstanding, in case more come (a client making one AMI
/// call at a time would otherwise start a thread per call); also how long
/// the writer thread stays parked with nothing to write.
const READER_LINGER: Duration = Duration::from_secs(2);

/// Whether a read or write that may last `wanted` must first set the
/// socket's timeout, now `current`. A shorter timeout that is still at
/// least half of the one wanted is kept: the reader (or writer) then wakes
/// a little early and looks again (every read of a reader with a moving
/// deadline would otherwise cost a `setsockopt`).
fn needs_new_timeout(current: Option<Duration>, wanted: Option<Duration>) -> bool {
    match (current, wanted) {
        (None, None) => false,
        (Some(current), Some(wanted)) => !(current <= wanted && current >= wanted / 2),
        _ => true,
    }
}

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
/// or timed out); anything else closes the connection. Returns the
/// message's type.
fn accept(state: &mut ReadState, frame: Frame) -> Option<MessageType> {
    let Ok(header) = armillary_giop::giop::MessageHeader::decode(&frame.bytes) else {
        state.closed = Some(Closed::Broken);
        return None;
    };
    match header.message_type {
        MessageType::Reply | MessageType::LocateReply => {
            // The id only: the caller decodes the reply (once), and a
            // malformed one reaches it as MARSHAL.
            if let Some(id) = frame.reply_request_id() {
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
    Some(header.message_type)
}

/// What a read that found the end of the stream says.
const ENDED: &dyn std::fmt::Display = &"the server closed the connection without CloseConnection";

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
pub(crate) mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    use armillary_giop::giop::{ReplyHeader, ReplyStatus};
    use armillary_giop::ByteOrder;

    use super::*;

    /// A GIOP 1.2 Reply to `id` whose body is the long `value`.
    pub(crate) fn reply(id: u32, value: i32) -> Vec<u8> {
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
    pub(crate) fn connected() -> (Arc<ClientConnection>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conn =
            ClientConnection::open("127.0.0.1", port, None, CONNECT_TIMEOUT, 1 << 20).unwrap();
        let (server, _) = listener.accept().unwrap();
        (conn, server)
    }

    /// Binds a synchronous dispatcher to `id` and returns its slot.
    pub(crate) fn expect(conn: &ClientConnection, id: u32) -> Arc<SyncSlot> {
        let slot = Arc::new(SyncSlot::default());
        conn.bind(id, slot.dispatcher(), None);
        slot
    }

    /// The long a reply's body holds.
    pub(crate) fn value(frame: &Frame) -> i32 {
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
            Awaited::TimedOut { silent: true, .. }
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
            Awaited::TimedOut { silent: false, .. }
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
            Some(Awaited::TimedOut { silent: true, .. })
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
    fn an_asynchronous_reply_is_read_by_an_orb_thread_and_its_callback_runs_unlocked() {
        use crate::transport::reply::callback::Notify;
        use crate::transport::reply::deferred::DeferredSlot;
        let (conn, mut server) = connected();
        let slot = Arc::new(DeferredSlot::new(true));
        conn.bind(1, slot.dispatcher(), None);
        let (tx, rx) = std::sync::mpsc::channel();
        let conn2 = conn.clone();
        let seen = slot.clone();
        assert!(slot
            .on_ready(Notify::Continue(Box::new(move || {
                // The read state is free: the continuation may use the
                // connection.
                let unlocked = conn2.state.try_lock().is_some();
                let _ = tx.send((unlocked, seen.take(), std::thread::current().id()));
            })))
            .is_none());
        assert!(conn.ensure_reader());
        // One reader per connection.
        assert!(!conn.ensure_reader());
        server.write_all(&reply(1, 111)).unwrap();
        let (unlocked, outcome, thread) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(unlocked);
        assert_ne!(thread, std::thread::current().id());
        match outcome {
            Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 111),
            _ => panic!("no reply in the slot"),
        }
        // With nothing asynchronous outstanding, the reader parks (not
        // reading)...
        let deadline = Instant::now() + Duration::from_secs(60);
        while !conn.state.lock().reader_parked {
            assert!(Instant::now() < deadline, "the reader never parked");
            std::thread::yield_now();
        }
        // ... so a synchronous caller reads its own reply, and needs no
        // reader; nor does it wake the parked one (a thread switch a call).
        let wakeups = conn.state.lock().linger_wakeups;
        let sync = expect(&conn, 2);
        assert!(!conn.ensure_reader());
        server.write_all(&reply(2, 222)).unwrap();
        match conn.wait_reply(2, &sync, None) {
            Awaited::Reply(frame) => assert_eq!(value(&frame), 222),
            _ => panic!("no reply to 2"),
        }
        assert_eq!(conn.state.lock().linger_wakeups, wakeups);
        // The next asynchronous request wakes the same thread: none is
        // started for it.
        let again = Arc::new(DeferredSlot::new(true));
        conn.bind(3, again.dispatcher(), None);
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = again.clone();
        assert!(again
            .on_ready(Notify::Continue(Box::new(move || {
                let _ = tx.send((seen.take(), std::thread::current().id()));
            })))
            .is_none());
        assert!(!conn.ensure_reader());
        server.write_all(&reply(3, 333)).unwrap();
        let (outcome, same) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert_eq!(same, thread);
        match outcome {
            Some(Awaited::Reply(frame)) => assert_eq!(value(&frame), 333),
            _ => panic!("no reply to 3"),
        }
        // Closing the connection ends the reader.
        conn.close(GiopVersion::V1_2);
        let deadline = Instant::now() + Duration::from_secs(60);
        while conn.state.lock().reader {
            assert!(Instant::now() < deadline, "the reader never ended");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_close_writes_what_is_queued_then_close_connection_before_it_shuts() {
        use armillary_testkit::giop::split_messages;
        use std::io::Read;
        let (conn, mut server) = connected();
        // Another thread writes (this test plays it): a message sent now
        // queues behind it, and so does the close's CloseConnection.
        conn.outbox.lock().writing = true;
        let message = reply(7, 777);
        conn.send(&message.clone().into(), Outgoing::default(), Caller::Waits)
            .unwrap();
        let closer = {
            let conn = conn.clone();
            std::thread::spawn(move || conn.close(GiopVersion::V1_2))
        };
        armillary_testkit::wait_until("the close queues CloseConnection", || {
            conn.outbox.lock().shut
        });
        // The writing thread, its own write done, writes what queued.
        conn.write_queued();
        closer.join().unwrap();
        // The server gets the message, then CloseConnection, then the end.
        let mut received = Vec::new();
        server.read_to_end(&mut received).unwrap();
        let messages = split_messages(&received);
        assert_eq!(messages.len(), 2, "{received:?}");
        assert_eq!(messages[0], message);
        let close = armillary_giop::giop::Message::decode(&messages[1]).unwrap();
        assert!(matches!(close.body, MessageBody::CloseConnection));
    }

    #[test]
    fn the_reader_thread_wakes_at_the_earliest_deadline_and_not_for_nothing() {
        use crate::transport::reply::deferred::DeferredSlot;
        let (conn, _server) = connected();
        // An asynchronous request with a far deadline: its reader thread
        // waits for bytes, or that deadline.
        let patient = Arc::new(DeferredSlot::new(true));
        let far = Instant::now() + Duration::from_secs(3600);
        conn.bind(1, patient.dispatcher(), Some(far));
        assert!(conn.ensure_reader());
        let turns = || conn.state.lock().reader_turns;
        armillary_testkit::wait_until("the reader runs", || turns() >= 1);
        // Nothing comes and nothing is due: it does not wake (a reader
        // that looked at deadlines every so often would have, many
        // times).
        let waiting = turns();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(turns(), waiting, "the reader woke with nothing due");
        // A request bound with an earlier deadline wakes it: that request
        // ends at its deadline, while the first still waits.
        let hasty = Arc::new(DeferredSlot::new(true));
        let soon = Instant::now() + Duration::from_millis(20);
        conn.bind(2, hasty.dispatcher(), Some(soon));
        armillary_testkit::wait_until("the hasty request times out", || hasty.is_ready());
        assert!(matches!(
            hasty.take(),
            Some(Awaited::TimedOut { sent: true, .. })
        ));
        assert!(!patient.is_ready());
        assert!(conn.state.lock().dispatchers.contains(1));
        conn.close(GiopVersion::V1_2);
        assert!(matches!(
            patient.take(),
            Some(Awaited::Closed(Closed::Orderly))
        ));
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

    #[test]
    fn a_read_timeout_is_set_again_only_when_the_one_set_is_too_long_or_far_too_short() {
        let ms = Duration::from_millis;
        // Nothing set and nothing wanted, or the one set still fits.
        assert!(!needs_new_timeout(None, None));
        assert!(!needs_new_timeout(Some(ms(50)), Some(ms(50))));
        assert!(!needs_new_timeout(Some(ms(49)), Some(ms(50))));
        assert!(!needs_new_timeout(Some(ms(25)), Some(ms(50))));
        // Longer than wanted: the read would outlast its deadline.
        assert!(needs_new_timeout(Some(ms(50)), Some(ms(49))));
        // Less than half: the reader would wake too often.
        assert!(needs_new_timeout(Some(ms(24)), Some(ms(50))));
        // Between a timeout and none.
        assert!(needs_new_timeout(None, Some(ms(50))));
        assert!(needs_new_timeout(Some(ms(50)), None));
    }
}
