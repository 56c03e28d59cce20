//! One accepted server connection: reading it (at most one thread at a
//! time, under its read gate), decoding requests, resolving them through
//! the object adapters, handing each upcall to the concurrency model (or
//! running it where the request filter routes it), and
//! writing the replies whole under the connection's write lock; its idle
//! and message timeouts, back-pressure and orderly close.
//!
//! With server request interceptors registered (`crate::interceptors`),
//! a request resolved here starts its interception
//! (`receive_request_service_contexts`), which its `OwedReply` carries to
//! the upcall (`receive_request`, the request's PICurrent slots) and to
//! its reply (the ending point); a request the POA answers at once is
//! answered through it too.
//!
//! Replies to requests read together are written together when the model
//! allows it ([`ServerConcurrency::coalesces_replies`]): the reading thread
//! holds the replies it writes while it runs the requests of one read,
//! and writes them in one go when it is done, when it has held the first
//! for [`HOLD_LIMIT`](reply::HOLD_LIMIT), when they reach
//! [`MAX_HELD_BYTES`](reply::MAX_HELD_BYTES), or before it
//! waits for a reply of its own (`thread_role::waiting_for_reply`; nothing is held
//! while it waits, so the replies to requests it serves meanwhile, nested
//! calls among them, go out at once). A pipelining client then gets many
//! replies per segment, and the server makes one write per read instead
//! of one per request.
//!
//! This module holds the connection's state, its set-up and its reactor
//! events; [`cells`] has the pieces of its state every request touches,
//! each one atomic; [`read`] reads and decodes, [`upcall`] serves what was read,
//! [`reply`] holds and writes the replies, [`close`] keeps the timeouts
//! and closes, [`events`] has its trace events.

mod cells;
mod close;
mod events;
mod read;
mod reply;
mod upcall;

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use armillary_giop::cdr::codeset::CodeSets;
use armillary_giop::giop::FrameDecoder;
use armillary_giop::typecode::DefaultLabelForm;
use armillary_giop::GiopVersion;
use mio::net::TcpStream;
use mio::{Interest, Token};
use parking_lot::Mutex;

use super::adapter::ObjectAdapter;
use super::concurrency::ServerConcurrency;
use super::write_queue::WriteQueue;
use super::Shared;
use crate::reactor::{EventHandler, Reactor, Readiness};
use crate::thread_key::ThreadKey;
use cells::{ConnectionCodeSets, ConnectionVersion, InstantCell, Refusal, ReplyHolder};
use reply::{ConnectionReplies, HeldReplies};

struct ReadGate {
    busy: bool,
    again: bool,
}

/// The socket of a connection: registered with the reactor, or blocking
/// and read by a thread of its own (thread per connection; the thread
/// reads through its own handle to the same socket, so that writers never
/// wait behind a read and the connection costs one descriptor), or gone.
pub(super) enum ConnStream {
    Reactive(TcpStream),
    Blocking(Arc<std::net::TcpStream>),
    Closed,
}

fn closed_error() -> std::io::Error {
    std::io::Error::new(ErrorKind::NotConnected, "connection closed")
}

impl Read for ConnStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            ConnStream::Reactive(s) => s.read(buf),
            ConnStream::Blocking(s) => (&**s).read(buf),
            ConnStream::Closed => Ok(0),
        }
    }
}

impl Write for ConnStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            ConnStream::Reactive(s) => s.write(buf),
            ConnStream::Blocking(s) => (&**s).write(buf),
            ConnStream::Closed => Err(closed_error()),
        }
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            ConnStream::Reactive(s) => s.write_vectored(bufs),
            ConnStream::Blocking(s) => (&**s).write_vectored(bufs),
            ConnStream::Closed => Err(closed_error()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            ConnStream::Reactive(s) => s.flush(),
            ConnStream::Blocking(s) => (&**s).flush(),
            ConnStream::Closed => Ok(()),
        }
    }
}

impl ConnStream {
    fn shutdown(&self) {
        let _ = match self {
            ConnStream::Reactive(s) => s.shutdown(std::net::Shutdown::Both),
            ConnStream::Blocking(s) => s.shutdown(std::net::Shutdown::Both),
            ConnStream::Closed => Ok(()),
        };
    }
}

/// One accepted connection.
pub(crate) struct ServerConnection {
    /// This connection, for work that outlives the current call (a request
    /// parked by a holding POA manager).
    me: std::sync::Weak<ServerConnection>,
    stream: Mutex<ConnStream>,
    /// Thread per connection: the socket its thread blocks reading, so
    /// that writers never wait behind a read.
    blocking_reader: Option<Arc<std::net::TcpStream>>,
    shared: Arc<Shared>,
    token: Mutex<Option<Token>>,
    /// The TLS session of a connection accepted on a TLS endpoint: what
    /// is read is opened by it, what is sent is sealed by it.
    tls: Option<crate::transport::tls::ServerSession>,
    adapter: Weak<dyn ObjectAdapter>,
    /// The server's concurrency model, which runs the requests read.
    concurrency: Arc<dyn ServerConcurrency>,
    /// The connection's number (its stream, for `locality:N`).
    id: u64,
    /// The client's address.
    peer: Option<SocketAddr>,
    gate: Mutex<ReadGate>,
    decoder: Mutex<FrameDecoder>,
    /// The read buffer, allocated once; used only by the reading thread.
    read_buf: Mutex<Vec<u8>>,
    /// Bytes the socket would not take yet.
    outgoing: Mutex<WriteQueue>,
    /// Replies the reading thread holds to write together.
    held_replies: Mutex<HeldReplies>,
    /// The thread holding them, if one does.
    replies_holder: ReplyHolder,
    /// The reply sink of the connection's latest request owed a reply,
    /// kept to serve the next one once its request is answered (see
    /// [`ServerConnection::reply_sink`]).
    spare_sink: Mutex<Option<Arc<ConnectionReplies>>>,
    /// Code sets the client announced (CodeSets service context).
    codesets: ConnectionCodeSets,
    /// How the client labels a union's default member, once one of its
    /// requests' TypeCodes showed it: replies use it from then on.
    default_label_seen: OnceLock<DefaultLabelForm>,
    closed: AtomicBool,
    /// Requests parked by a holding POA manager and not answered yet: the
    /// connection is not idle while there are any.
    held: AtomicUsize,
    /// Requests read and being served (the read gate is not held while
    /// they run): the connection is not idle while there are any.
    running: AtomicUsize,
    /// Whether the client has announced its code sets.
    codesets_known: AtomicBool,
    /// When the connection was opened: the origin of the instants below.
    opened: Instant,
    /// When the connection last read anything.
    last_activity: InstantCell,
    /// The version to use for connection-level messages.
    version: ConnectionVersion,
    /// The peer has closed its sending side, or an event said so: reads
    /// go on to the end of the stream.
    peer_closed: AtomicBool,
    /// The end of the stream was read: nothing more comes, and the
    /// connection closes once what was read is answered.
    eof: AtomicBool,
    /// When the message being received began (`None`: none is).
    partial_since: InstantCell,
    /// Bytes of partly received messages counted in the server's budget.
    charged: AtomicUsize,
    /// Reading stopped because the connection's requests or queued
    /// replies reached their limit (back-pressure).
    read_paused: AtomicBool,
    /// The client sent what cannot be served (a stream the frame decoder
    /// rejects, a message that does not decode or that a client may not
    /// send, a message over the limits): nothing more is read, and once
    /// everything read before it is answered, MessageError goes out in
    /// this version and the connection closes (see
    /// [`close_if_finished`](Self::close_if_finished)).
    refused: Refusal,
    /// Whether a thread has sent that MessageError (it closes too).
    message_error_sent: AtomicBool,
}

impl Drop for ServerConnection {
    fn drop(&mut self) {
        // Let go of the descriptor first, so that the acceptor can use it.
        *self.stream.get_mut() = ConnStream::Closed;
        self.blocking_reader = None;
        let charged = std::mem::take(self.charged.get_mut());
        self.shared
            .partial_bytes
            .fetch_sub(charged, Ordering::SeqCst);
        self.shared.open.fetch_sub(1, Ordering::SeqCst);
        self.concurrency.connection_closed(self.id);
        self.shared.wake_paused_acceptors();
    }
}

impl EventHandler for ServerConnection {
    fn ready(&self, reactor: &Arc<Reactor>, readiness: Readiness) {
        if readiness.read_closed {
            self.peer_closed.store(true, Ordering::SeqCst);
        }
        if readiness.writable {
            self.flush(reactor);
        }
        if readiness.readable || self.take_resumable() {
            self.read_ready(reactor);
        }
    }

    fn tick(&self, reactor: &Arc<Reactor>) {
        // Take the read gate, so that no thread starts reading (and running
        // a request) between the check and the close.
        {
            let mut gate = self.gate.lock();
            if gate.busy {
                return;
            }
            gate.busy = true;
        }
        if self.message_overdue() || self.is_refused() {
            self.trace_overdue();
            self.message_error(reactor);
        } else if self.is_idle() {
            self.close_orderly(reactor);
        }
        let mut gate = self.gate.lock();
        gate.busy = false;
        if std::mem::take(&mut gate.again) && !self.closed.load(Ordering::SeqCst) {
            // Data arrived while the gate was held: read it now.
            drop(gate);
            self.read_ready(reactor);
        } else {
            drop(gate);
            self.schedule_deadline(reactor);
        }
    }
}

impl ServerConnection {
    /// Registers a reactive connection with `reactor` (a blocking one is
    /// read by its own thread instead).
    pub(super) fn register(self: &Arc<Self>, reactor: &Reactor) -> std::io::Result<()> {
        let token = match &mut *self.stream.lock() {
            ConnStream::Reactive(s) => {
                Some(reactor.register(s, Interest::READABLE, self.clone())?)
            }
            ConnStream::Blocking(_) | ConnStream::Closed => None,
        };
        *self.token.lock() = token;
        self.schedule_deadline(reactor);
        Ok(())
    }

    /// What the server's connections share.
    pub(super) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// When the connection last read anything (when it opened, if it
    /// has read nothing).
    pub(super) fn last_activity(&self) -> Instant {
        self.last_activity.get(self.opened).unwrap_or(self.opened)
    }

    /// When the message being received began, if one is.
    pub(super) fn partial_since(&self) -> Option<Instant> {
        self.partial_since.get(self.opened)
    }

    /// A connection just accepted on `stream` (with `blocking_reader`,
    /// the handle its own thread reads, for thread per connection).
    pub(super) fn new(
        stream: ConnStream,
        blocking_reader: Option<Arc<std::net::TcpStream>>,
        shared: Arc<Shared>,
        tls: Option<crate::transport::tls::ServerSession>,
        adapter: Weak<dyn ObjectAdapter>,
        concurrency: Arc<dyn ServerConcurrency>,
    ) -> Arc<ServerConnection> {
        let frame_limits = shared.limits.frame;
        let opened = Instant::now();
        let peer = match &stream {
            ConnStream::Reactive(s) => s.peer_addr().ok(),
            ConnStream::Blocking(s) => s.peer_addr().ok(),
            ConnStream::Closed => None,
        };
        let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
        Arc::new_cyclic(|me| ServerConnection {
            me: me.clone(),
            stream: Mutex::new(stream),
            blocking_reader,
            shared,
            token: Mutex::new(None),
            tls,
            adapter,
            concurrency,
            id,
            peer,
            gate: Mutex::new(ReadGate {
                busy: false,
                again: false,
            }),
            decoder: Mutex::new(FrameDecoder::new(frame_limits)),
            read_buf: Mutex::new(vec![0; crate::transport::READ_BUFFER]),
            outgoing: Mutex::default(),
            held_replies: Mutex::default(),
            replies_holder: ReplyHolder::default(),
            spare_sink: Mutex::new(None),
            codesets: ConnectionCodeSets::new(CodeSets::DEFAULT),
            default_label_seen: OnceLock::new(),
            closed: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            codesets_known: AtomicBool::new(false),
            opened,
            last_activity: InstantCell::new(),
            version: ConnectionVersion::new(GiopVersion::V1_0),
            peer_closed: AtomicBool::new(false),
            eof: AtomicBool::new(false),
            partial_since: InstantCell::new(),
            charged: AtomicUsize::new(0),
            read_paused: AtomicBool::new(false),
            refused: Refusal::default(),
            message_error_sent: AtomicBool::new(false),
        })
    }

    /// Counts a request read by a reactor thread as running, until the
    /// returned guard is dropped.
    fn in_progress(&self, reactor: &Arc<Reactor>) -> Option<InProgress> {
        self.running.fetch_add(1, Ordering::SeqCst);
        self.counted(reactor)
    }

    /// The guard of a request already counted in `running` (under the read
    /// gate, with the others read with it): it uncounts it when dropped.
    fn counted(&self, reactor: &Arc<Reactor>) -> Option<InProgress> {
        let Some(conn) = self.me.upgrade() else {
            // Unreachable: a thread serving the connection holds it.
            self.running.fetch_sub(1, Ordering::SeqCst);
            return None;
        };
        Some(InProgress {
            conn,
            reactor: reactor.clone(),
            reader: Some(ThreadKey::current()),
        })
    }
}

/// A request of a connection being served: counted in the connection's
/// `running` while alive. Dropped on another thread than the one that read
/// it (the concurrency model handed the upcall off), or once handed off
/// (a follower's task), it also does what the reading thread does after
/// serving: close a connection whose peer is done, and read on if reading
/// stopped for back-pressure.
pub(super) struct InProgress {
    conn: Arc<ServerConnection>,
    reactor: Arc<Reactor>,
    /// The thread that read it, while that thread serves it in the same
    /// go (it then does the rest itself); `None` once handed off.
    reader: Option<ThreadKey>,
}

impl InProgress {
    /// The same request, handed to work the reading thread may itself
    /// take up later (a posted task), after it has done its own rest.
    fn handed_off(mut self) -> InProgress {
        self.reader = None;
        self
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.conn.running.fetch_sub(1, Ordering::SeqCst);
        if self.reader == Some(ThreadKey::current()) {
            return;
        }
        self.conn.close_if_finished(&self.reactor);
        if self.conn.take_resumable() {
            let (conn, reactor) = (self.conn.clone(), self.reactor.clone());
            self.reactor
                .post(Box::new(move || conn.read_ready(&reactor)));
        } else {
            self.conn.schedule_deadline(&self.reactor);
        }
    }
}
