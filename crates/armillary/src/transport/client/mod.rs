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

mod read;
mod reader;
mod write;

use std::net::Shutdown;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::giop::{FrameDecoder, MessageBody};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::GiopVersion;
use parking_lot::{Condvar, Mutex, MutexGuard};

use read::{readiness, Readiness};
pub(crate) use write::SendError;

use super::outbox::{Departure, Outbox, Outgoing};
pub(crate) use super::reply::Awaited;
use super::reply::{DispatcherTable, Handoff, ReplyDispatcher};
use super::socket_wait::SocketWaker;
use super::tls::{ClientStream, TlsClientStream};
use crate::net;
use crate::reactor::Reactor;
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
    /// Until when the connection is trusted to be open without a look:
    /// [`TRUST_RECENT`] after it was last known open (a message arrived,
    /// a look found it open, or it opened). Kept as the end of the span,
    /// so that each call compares two instants instead of subtracting.
    trusted_until: Instant,
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
    /// How many times that thread went to wait for bytes in its socket
    /// wait (tests watch it then sleeps until something is due).
    #[cfg(test)]
    socket_waits: u64,
    closed: Option<Closed>,
}

impl ReadState {
    /// Records that the connection is known open now (a message arrived,
    /// or a look found it open): it is trusted for [`TRUST_RECENT`].
    fn known_open(&mut self) {
        self.trusted_until = Instant::now() + TRUST_RECENT;
    }

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

impl std::fmt::Debug for ClientConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConnection")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

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
                trusted_until: Instant::now() + TRUST_RECENT,
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
                #[cfg(test)]
                socket_waits: 0,
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
        if state.leader || !state.dispatchers.is_empty() || Instant::now() < state.trusted_until {
            return false;
        }
        if readiness(self.stream.socket()) == Readiness::Closed {
            self.end(state, Closed::Broken);
            let _ = self.stream.socket().shutdown(Shutdown::Both);
            return true;
        }
        state.known_open();
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
    if !handoffs.is_empty() {
        run(handoffs);
    }
}

/// Whether a read or write that failed with `e` only ran out of time (a
/// socket timeout) or was cut short by a signal: nothing moved, and the
/// caller looks at its deadline and tries again.
fn ran_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Runs dispatchers' handoffs, in the order they were dispatched.
fn run(handoffs: Vec<Handoff>) {
    for handoff in handoffs {
        handoff();
    }
}

#[cfg(test)]
pub(crate) mod tests;
