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
//! for [`HOLD_LIMIT`], when they reach [`MAX_HELD_BYTES`], or before it
//! waits for a reply of its own (`thread_role::waiting_for_reply`; nothing is held
//! while it waits, so the replies to requests it serves meanwhile, nested
//! calls among them, go out at once). A pipelining client then gets many
//! replies per segment, and the server makes one write per read instead
//! of one per request.

use std::borrow::Cow;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use armillary_giop::cdr::codeset::{CodeSetContext, CodeSets};
use armillary_giop::cdr::{CdrWriter, SplicedBytes};
use armillary_giop::giop::{
    Frame, FrameDecoder, FrameError, GiopError, KnownServiceContext, LocateReplyHeader,
    LocateStatus, Message, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus, SyncScope,
    TargetAddress,
};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::typecode::DefaultLabelForm;
use armillary_giop::{ByteOrder, CdrEncode, GiopVersion};
use mio::net::TcpStream;
use mio::{Interest, Token};
use parking_lot::Mutex;
use smallvec::SmallVec;

use super::adapter::{Located, ObjectAdapter};
use super::concurrency::{run_here, run_resolved, ResolvedRequest, ServerConcurrency};
use super::write_queue::WriteQueue;
use super::Shared;
use crate::interceptors::{ServerInterception, ServerOutcome};
use crate::owed_reply::{OwedReply, ReplySink};
use crate::poa::{Admission, Resolution, Upcall};
use crate::reactor::{EventHandler, Reactor, Readiness};
use crate::request_filter::{RequestFilter, RequestInfo, Route};
use crate::servant::{ReplyKind, ServerRequest};
use crate::task_queue::TaskQueue;
use crate::thread_role;
use crate::trace::{Addr, Side, UpcallRecord};
use crate::transport::gather::write_from;

/// The frames one read completed: most often one (a synchronous client
/// sends its next request after the reply), kept inline so that the
/// read allocates no list.
type ReadFrames = SmallVec<[Frame; 1]>;

/// The messages decoded from one read's frames, with their frames.
type ReadMessages = SmallVec<[ReadMessage; 1]>;

/// A message read, with its frame: a few hundred bytes, so it is served
/// where it lies, by reference; a path that must keep it past the read
/// (another thread runs it, a holding POA manager parks it) takes it out.
type ReadMessage = Option<(Frame, Message)>;

/// The longest the reading thread holds a reply while it runs the other
/// requests read with it.
const HOLD_LIMIT: Duration = Duration::from_millis(1);

/// Held replies are written as soon as they add up to this many bytes.
const MAX_HELD_BYTES: usize = 64 * 1024;

/// Replies the reading thread holds, to write them together (see the
/// module docs).
#[derive(Default)]
struct HeldReplies {
    /// The thread whose replies are held; `None` while none are.
    thread: Option<ThreadId>,
    /// The replies held, whole messages in the order they were written
    /// (before TLS seals them), their spliced pieces still shared.
    bytes: SplicedBytes,
    /// When the first of them was held.
    since: Option<Instant>,
}

/// The replies a thread holds on one connection, written when the thread
/// is about to block (`thread_role::write_held_replies`).
struct HeldOn {
    conn: Weak<ServerConnection>,
    reactor: Arc<Reactor>,
}

impl thread_role::HeldReplies for HeldOn {
    fn write_held(&self) {
        if let Some(conn) = self.conn.upgrade() {
            conn.write_held(&self.reactor);
        }
    }
}

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
    /// The reply sink of the connection's latest request owed a reply,
    /// kept to serve the next one once its request is answered (see
    /// [`ServerConnection::reply_sink`]).
    spare_sink: Mutex<Option<Arc<ConnectionReplies>>>,
    /// Code sets the client announced (CodeSets service context).
    codesets: Mutex<CodeSets>,
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
    last_activity: Mutex<Instant>,
    /// The version to use for connection-level messages.
    version: Mutex<GiopVersion>,
    /// The peer has closed its sending side, or an event said so: reads
    /// go on to the end of the stream.
    peer_closed: AtomicBool,
    /// The end of the stream was read: nothing more comes, and the
    /// connection closes once what was read is answered.
    eof: AtomicBool,
    /// When the message being received began (`None`: none is).
    partial_since: Mutex<Option<Instant>>,
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
    refused: Mutex<Option<GiopVersion>>,
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

/// Whether a client may send a message of this kind to a server: not a
/// reply, nor a fragment outside a fragmented message.
fn client_may_send(body: &MessageBody) -> bool {
    !matches!(
        body,
        MessageBody::Reply(_) | MessageBody::LocateReply(_) | MessageBody::Fragment { .. }
    )
}

/// The object key a request addresses, in any of the three GIOP 1.2
/// forms (a profile or reference that is not IIOP has none).
fn target_key(target: &TargetAddress) -> Option<Cow<'_, [u8]>> {
    let from_profile = |p: &armillary_giop::ior::TaggedProfile| {
        (p.tag == armillary_giop::ior::TAG_INTERNET_IOP)
            .then(|| armillary_giop::ior::ProfileBody::decode(&p.data).ok())
            .flatten()
            .map(|b| b.object_key)
    };
    match target {
        TargetAddress::Key(k) => Some(Cow::Borrowed(k)),
        TargetAddress::Profile(p) => from_profile(p).map(Cow::Owned),
        TargetAddress::Reference {
            selected_profile_index,
            ior,
        } => ior
            .profiles
            .get(*selected_profile_index as usize)
            .and_then(from_profile)
            .map(Cow::Owned),
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
            spare_sink: Mutex::new(None),
            codesets: Mutex::new(CodeSets::DEFAULT),
            default_label_seen: OnceLock::new(),
            closed: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            codesets_known: AtomicBool::new(false),
            last_activity: Mutex::new(Instant::now()),
            version: Mutex::new(GiopVersion::V1_0),
            peer_closed: AtomicBool::new(false),
            eof: AtomicBool::new(false),
            partial_since: Mutex::new(None),
            charged: AtomicUsize::new(0),
            read_paused: AtomicBool::new(false),
            refused: Mutex::new(None),
            message_error_sent: AtomicBool::new(false),
        })
    }

    /// Reads while data is there (only one thread at a time does so), then
    /// serves what it read. The read gate is released before the requests
    /// run, so that another thread of the pool can read and serve the
    /// connection's next request meanwhile: a servant that calls back into
    /// this server (a nested upcall multiplexed on the same connection)
    /// does not wait for itself. Reading stops while the connection's
    /// requests or queued replies are at their limit, and goes on here
    /// once they are below it.
    fn read_ready(&self, reactor: &Arc<Reactor>) {
        loop {
            {
                let mut gate = self.gate.lock();
                if gate.busy {
                    gate.again = true;
                    return;
                }
                gate.busy = true;
            }
            let mut messages = ReadMessages::new();
            loop {
                let frames = self.read_frames(reactor, messages.len());
                let decoded = self.decode_read(frames);
                if messages.is_empty() {
                    messages = decoded;
                } else {
                    messages.extend(decoded);
                }
                let mut gate = self.gate.lock();
                if gate.again && !self.closed.load(Ordering::SeqCst) && !self.is_refused() {
                    gate.again = false;
                    continue;
                }
                // Code sets come with the first requests; they must be known
                // before any request of the connection runs on another thread.
                self.note_codesets(&messages);
                self.running.fetch_add(messages.len(), Ordering::SeqCst);
                gate.busy = false;
                break;
            }
            if messages.len() > 1 && self.concurrency.promotes_followers() {
                for (frame, msg) in messages.drain(1..).flatten() {
                    self.hand_to_follower(reactor, frame, msg);
                }
            }
            self.serve_read(reactor, messages, || self.counted(reactor));
            self.close_if_finished(reactor);
            if !self.take_resumable() {
                self.schedule_deadline(reactor);
                return;
            }
        }
    }

    /// Posts a message read with others to the reactor, where a free
    /// thread takes it in its turn and serves it (see
    /// [`ServerConcurrency::promotes_followers`]); it is counted as
    /// running already, and stays so until answered.
    fn hand_to_follower(&self, reactor: &Arc<Reactor>, frame: Frame, msg: Message) {
        let Some(in_progress) = self.counted(reactor) else {
            return;
        };
        let in_progress = in_progress.handed_off();
        let conn = in_progress.conn.clone();
        let reactor2 = reactor.clone();
        reactor.post(Box::new(move || {
            conn.serve(&reactor2, &mut Some((frame, msg)), Some(in_progress));
        }));
    }

    /// Whether the connection's requests in progress (with `more` just
    /// read) or its queued replies are at their limit: then it is not
    /// read until they drain.
    fn over_limits(&self, more: usize) -> bool {
        let limits = &self.shared.limits;
        let outstanding =
            self.running.load(Ordering::SeqCst) + self.held.load(Ordering::SeqCst) + more;
        outstanding >= limits.max_outstanding_requests
            || self.outgoing.lock().len() >= limits.max_queued_reply_bytes
    }

    /// Whether reading stopped for back-pressure and may go on now (the
    /// caller then reads).
    fn take_resumable(&self) -> bool {
        self.read_paused.load(Ordering::SeqCst)
            && !self.closed.load(Ordering::SeqCst)
            && !self.over_limits(0)
            && self.read_paused.swap(false, Ordering::SeqCst)
    }

    /// After the peer closed its sending side, or sent what cannot be
    /// served: once everything it sent before is answered and the replies
    /// are written, closes (sending MessageError first in the second
    /// case).
    fn close_if_finished(&self, reactor: &Arc<Reactor>) {
        let refused = *self.refused.lock();
        let finished = (self.eof.load(Ordering::SeqCst) || refused.is_some())
            && self.running.load(Ordering::SeqCst) == 0
            && self.held.load(Ordering::SeqCst) == 0
            && self.outgoing.lock().is_empty()
            && self.held_replies.lock().bytes.is_empty();
        if !finished {
            return;
        }
        if let Some(version) = refused {
            // One thread sends it, and closes after it.
            if self.message_error_sent.swap(true, Ordering::SeqCst) {
                return;
            }
            if let Ok(b) =
                MessageBuilder::new(version, ByteOrder::NATIVE, &MessageBody::MessageError)
            {
                crate::trace::message_error_sent(self.peer, version);
                self.send(reactor, b.finish_spliced(false));
            }
        }
        self.close(reactor);
    }

    /// Whether the client sent what cannot be served (see `refused`).
    fn is_refused(&self) -> bool {
        self.refused.lock().is_some()
    }

    /// Starts holding the replies this thread writes (true), unless some
    /// thread holds them already (false).
    fn hold_replies(&self, reactor: &Arc<Reactor>) -> bool {
        if thread_role::is_waiting_for_reply() {
            return false;
        }
        {
            let mut held = self.held_replies.lock();
            if held.thread.is_some() {
                return false;
            }
            held.thread = Some(std::thread::current().id());
        }
        let held = HeldOn {
            conn: self.me.clone(),
            reactor: reactor.clone(),
        };
        thread_role::hold_replies(self.holding_key(), std::rc::Rc::new(held));
        true
    }

    /// Stops holding replies and writes those held.
    fn release_replies(&self, reactor: &Arc<Reactor>) {
        thread_role::stop_holding(self.holding_key());
        self.held_replies.lock().thread = None;
        self.write_held(reactor);
    }

    /// This connection's key among the replies a thread holds.
    fn holding_key(&self) -> usize {
        self.me.as_ptr() as usize
    }

    /// Writes the replies held (holding goes on).
    fn write_held(&self, reactor: &Arc<Reactor>) {
        let bytes = {
            let mut held = self.held_replies.lock();
            held.since = None;
            std::mem::take(&mut held.bytes)
        };
        if !bytes.is_empty() {
            self.write(reactor, bytes);
        }
    }

    /// Writes the replies held if the first has waited `limit`.
    fn write_held_if_older(&self, reactor: &Arc<Reactor>, limit: Duration) {
        let since = self.held_replies.lock().since;
        if since.is_some_and(|t| t.elapsed() >= limit) {
            self.write_held(reactor);
        }
    }

    /// Takes the code sets a client announces from the requests in
    /// `messages`, until it has announced them.
    fn note_codesets(&self, messages: &[ReadMessage]) {
        if self.codesets_known.load(Ordering::Relaxed) {
            return;
        }
        for (_, msg) in messages.iter().flatten() {
            if let MessageBody::Request(h) = &msg.body {
                for ctx in &h.service_contexts {
                    if let Ok(Some(KnownServiceContext::CodeSets(cs))) = ctx.decode_known() {
                        self.set_codesets(cs);
                        self.codesets_known.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Asks the reactor for a round of ticks at the connection's next
    /// deadline (the reactor has no timer of its own): the end of the idle
    /// timeout after its last activity, once nothing is in progress, and
    /// the end of the message timeout of a message being received. Called
    /// whenever one of them may have changed: after reading, when its
    /// last request in progress ends, at a tick. (A thread-per-connection
    /// connection's thread keeps them itself.)
    fn schedule_deadline(&self, reactor: &Reactor) {
        if self.blocking_reader.is_some() || self.closed.load(Ordering::SeqCst) {
            return;
        }
        let limits = &self.shared.limits;
        let quiet =
            self.running.load(Ordering::SeqCst) == 0 && self.held.load(Ordering::SeqCst) == 0;
        let idle = limits
            .idle_timeout
            .filter(|_| quiet)
            .map(|timeout| *self.last_activity.lock() + timeout);
        let message = limits
            .message_timeout
            .zip(*self.partial_since.lock())
            .map(|(timeout, since)| since + timeout);
        if let Some(at) = idle.into_iter().chain(message).min() {
            reactor.tick_at(at);
        }
    }

    /// Whether the connection has been quiet for the idle timeout with no
    /// request in progress: nothing half-received, nothing parked. (The
    /// caller makes sure that no thread is reading or running a request.)
    fn is_idle(&self) -> bool {
        let Some(idle) = self.shared.limits.idle_timeout else {
            return false;
        };
        self.last_activity.lock().elapsed() >= idle
            && self.held.load(Ordering::SeqCst) == 0
            && self.running.load(Ordering::SeqCst) == 0
            && self.decoder.lock().is_idle()
    }

    /// Whether a message begun on this connection has not been finished
    /// within the message timeout.
    fn message_overdue(&self) -> bool {
        match (
            self.shared.limits.message_timeout,
            *self.partial_since.lock(),
        ) {
            (Some(limit), Some(since)) => since.elapsed() >= limit,
            _ => false,
        }
    }

    /// Accounts for what the decoder holds after a read: the server's
    /// budget for partly received messages, and when the message being
    /// received began (`completed`: a message was finished by this read,
    /// so whatever follows it began now). False when the connection must
    /// be refused: over the budget, or its message is overdue.
    fn account_partial(&self, pending: usize, idle: bool, completed: bool) -> bool {
        let before = self.charged.swap(pending, Ordering::SeqCst);
        let total = if pending >= before {
            self.shared
                .partial_bytes
                .fetch_add(pending - before, Ordering::SeqCst)
                + (pending - before)
        } else {
            self.shared
                .partial_bytes
                .fetch_sub(before - pending, Ordering::SeqCst)
                - (before - pending)
        };
        {
            let mut since = self.partial_since.lock();
            if idle {
                *since = None;
            } else if completed || since.is_none() {
                *since = Some(Instant::now());
            }
        }
        total <= self.shared.limits.max_partial_bytes && !self.message_overdue()
    }

    /// Thread per connection: read and serve until the connection closes.
    /// The read times out as often as the idle or message timeout needs
    /// (see the acceptor); the thread then closes an idle connection with
    /// CloseConnection, or an overdue one with MessageError. Requests run
    /// on this thread (unless a POA's model hands them off: they count as
    /// running until answered, so the connection is not idle meanwhile);
    /// replies are written blocking, which is this model's back-pressure.
    pub(super) fn serve_blocking(&self, reactor: &Arc<Reactor>) {
        while !self.closed.load(Ordering::SeqCst) {
            let messages = self.decode_read(self.read_frames(reactor, 0));
            if messages.is_empty() && !self.is_refused() && self.is_idle() {
                self.close_orderly(reactor);
                return;
            }
            self.serve_read(reactor, messages, || self.in_progress(reactor));
            if self.message_overdue() {
                self.trace_overdue();
                self.refuse();
            }
            if self.eof.load(Ordering::SeqCst) || self.is_refused() {
                // Closed now if everything is answered (after MessageError
                // when refused); else by the last request in progress (one
                // a POA's model or the request filter runs on another
                // thread, or one a POA manager holds) when it ends.
                self.close_if_finished(reactor);
                return;
            }
        }
    }

    /// Thread per connection, while the connection's thread waits for a
    /// reply inside an upcall: reads what has arrived (waiting 1 ms at
    /// most) and serves it there and then (a nested call back into this
    /// server on this connection). True if it served anything.
    pub(super) fn serve_available(&self, reactor: &Arc<Reactor>) -> bool {
        let Some(reader) = &self.blocking_reader else {
            return false;
        };
        let Ok(before) = reader.read_timeout() else {
            return false;
        };
        if reader
            .set_read_timeout(Some(std::time::Duration::from_millis(1)))
            .is_err()
        {
            return false;
        }
        let messages = self.decode_read(self.read_frames(reactor, 0));
        if reader.set_read_timeout(before).is_err() {
            self.close(reactor);
        }
        let served = !messages.is_empty();
        for mut read in messages {
            self.serve(reactor, &mut read, self.in_progress(reactor));
        }
        served
    }

    /// Reads what is there and returns the whole messages it completed
    /// (`already`: those the caller read before, for the back-pressure
    /// check). Stops at end of stream (which it records), when the socket
    /// has nothing more, when the connection is at its limits, or when
    /// the stream cannot be decoded or breaks a limit (which refuses the
    /// connection: the messages completed before are still returned, to be
    /// answered before MessageError).
    fn read_frames(&self, reactor: &Arc<Reactor>, already: usize) -> ReadFrames {
        let mut frames = ReadFrames::new();
        let mut buf = self.read_buf.lock();
        loop {
            if self.closed.load(Ordering::SeqCst)
                || self.eof.load(Ordering::SeqCst)
                || self.is_refused()
            {
                return frames;
            }
            if self.blocking_reader.is_none() && self.over_limits(already + frames.len()) {
                // Back-pressure: read on once the requests are answered
                // and the replies written (`take_resumable`).
                self.trace_backpressure();
                self.read_paused.store(true, Ordering::SeqCst);
                return frames;
            }
            // The rest of a large message arriving is read straight into
            // its own buffer (not over TLS, whose records are opened
            // first): its body then reaches the frame with no copy.
            let mut direct = match &self.tls {
                None => self
                    .decoder
                    .lock()
                    .lend_for_read(crate::transport::DIRECT_READ),
                Some(_) => None,
            };
            let (n, room) = {
                let target: &mut [u8] = match &mut direct {
                    Some(lent) => lent.room(),
                    None => &mut buf,
                };
                let room = target.len();
                let n = match &self.blocking_reader {
                    // Thread per connection: block without holding the lock.
                    Some(reader) => (&**reader).read(target),
                    None => self.stream.lock().read(target),
                };
                (n, room)
            };
            if !matches!(n, Ok(1..)) {
                if let Some(lent) = direct.take() {
                    // Nothing read into it: the decoder takes it back as it
                    // was.
                    let _ = self.decoder.lock().handle_direct_read(lent, 0);
                }
            }
            match n {
                Ok(0) => {
                    // The peer will send nothing more: answer what it sent,
                    // then close (a message it left unfinished never ends).
                    self.eof.store(true, Ordering::SeqCst);
                    self.peer_closed.store(true, Ordering::SeqCst);
                    return frames;
                }
                Ok(n) => {
                    *self.last_activity.lock() = Instant::now();
                    let mut plain = Vec::new();
                    let data = match &self.tls {
                        _ if direct.is_some() => &[][..],
                        None => &buf[..n],
                        Some(tls) => match tls.open(&buf[..n], &mut plain) {
                            Ok(opened) => {
                                if opened.wants_write {
                                    // Handshake messages.
                                    self.send(reactor, SplicedBytes::default());
                                }
                                if opened.closed {
                                    self.close(reactor);
                                }
                                &plain[..]
                            }
                            Err(_) => {
                                // Not TLS, or a client refused: send the
                                // alert and close.
                                self.send(reactor, SplicedBytes::default());
                                self.close(reactor);
                                return frames;
                            }
                        },
                    };
                    let mut decoder = self.decoder.lock();
                    let decoded = match direct.take() {
                        Some(lent) => decoder.handle_direct_read(lent, n),
                        None => decoder.handle_bytes(data),
                    };
                    // The messages completed before any error.
                    let before = frames.len();
                    while let Some(f) = decoder.poll_frame() {
                        frames.push(f);
                    }
                    if let Err(e) = decoded {
                        drop(decoder);
                        self.frame_error(&e);
                        return frames;
                    }
                    let (pending, idle) = (decoder.pending_bytes(), decoder.is_idle());
                    drop(decoder);
                    if !self.account_partial(pending, idle, frames.len() > before) {
                        self.trace_partial_refused();
                        self.refuse();
                        return frames;
                    }
                    // A thread blocking on its connection serves what it
                    // has before it reads again (a read that filled its
                    // room exactly, as a direct read ending a message
                    // does, would otherwise block until the next request).
                    let blocking_with_frames =
                        self.blocking_reader.is_some() && frames.len() > before;
                    if (n < room || blocking_with_frames)
                        && !self.peer_closed.load(Ordering::SeqCst)
                    {
                        // The socket was drained by this read: with epoll in
                        // edge-triggered mode any later data raises a new
                        // event, so the read that would only say WouldBlock
                        // is skipped (one syscall less per request). Not so
                        // once the peer has closed: the event that said so
                        // has been taken, so read on to the end of stream.
                        return frames;
                    }
                }
                // Nothing more now; for a blocking socket, its read timeout
                // expired (WouldBlock on Unix, TimedOut on Windows).
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return frames
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    crate::trace::connection_broken(Side::Server, Addr(self.peer), &e);
                    self.close(reactor);
                    return frames;
                }
            }
        }
    }

    /// Refuses a stream that cannot be decoded (MessageError once what
    /// was read before is answered); for a message in a GIOP version this
    /// ORB does not speak, in the highest version both sides understand,
    /// as GIOP asks.
    fn frame_error(&self, e: &FrameError) {
        crate::trace::frame_refused(
            Side::Server,
            Addr(self.peer),
            e,
            Some(&self.shared.limits.frame),
        );
        if let FrameError::Header {
            source: GiopError::UnsupportedVersion(v),
            ..
        } = e
        {
            *self.version.lock() = if *v > GiopVersion::V1_2 {
                GiopVersion::V1_2
            } else {
                GiopVersion::V1_0
            };
        }
        self.refuse();
    }

    /// Decodes the messages read, in order, up to the first that does not
    /// decode or that a client may not send (a reply or a lone fragment):
    /// that one refuses the connection, and those after it are dropped
    /// unread. Every message kept is answered before the MessageError.
    fn decode_read(&self, frames: ReadFrames) -> ReadMessages {
        let mut messages = ReadMessages::with_capacity(frames.len());
        for frame in frames {
            match frame.message() {
                Ok(msg) if client_may_send(&msg.body) => messages.push(Some((frame, msg))),
                other => {
                    crate::trace::message_rejected(self.peer, &RejectedMessage(other.err()));
                    self.refuse();
                    break;
                }
            }
        }
        messages
    }

    /// Serves the messages of one read in turn, `in_progress` giving each
    /// its guard. Where the model allows it (`coalesces_replies`), the
    /// replies of several go out together: held while they run and
    /// written at the end (see the module docs).
    fn serve_read(
        &self,
        reactor: &Arc<Reactor>,
        mut messages: ReadMessages,
        in_progress: impl Fn() -> Option<InProgress>,
    ) {
        let hold = messages.len() > 1
            && self.concurrency.coalesces_replies()
            && self.hold_replies(reactor);
        for read in &mut messages {
            if hold {
                self.write_held_if_older(reactor, HOLD_LIMIT);
            }
            self.serve(reactor, read, in_progress());
        }
        if hold {
            self.release_replies(reactor);
        }
    }

    /// Serves one message read: where the request filter routes it (the
    /// threading framework), else as the concurrency model does.
    /// `in_progress` counts a request read by a reactor thread as running
    /// until it is answered (it may be answered on another thread).
    #[inline]
    fn serve(
        &self,
        reactor: &Arc<Reactor>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
    ) {
        let route = match (&self.shared.filter, &*read) {
            (Some(filter), Some((_, msg))) => self.route(filter.as_ref(), msg),
            _ => Route::Default,
        };
        self.place(reactor, read, in_progress, route);
    }

    /// Serves a message where `route` says: as the concurrency model does
    /// (`Default`: the target POA's model, else the ORB's), or where the
    /// request filter routed it, which comes first (see
    /// `request_filter`). The route stays with the request: one a holding
    /// POA manager parks is placed by it again when released.
    #[inline]
    fn place(
        &self,
        reactor: &Arc<Reactor>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
        route: Route,
    ) {
        let Some((_, msg)) = &*read else {
            return;
        };
        let answer = match &msg.body {
            MessageBody::Request(h) => Some((
                msg.header.version,
                msg.header.byte_order,
                h.request_id,
                h.response_expected(),
            )),
            _ => None,
        };
        let refuse = |ex: SystemException, in_progress: Option<InProgress>| {
            if let Some((version, order, request_id, true)) = answer {
                self.reply_exception(reactor, version, order, request_id, &ex);
            }
            drop(in_progress);
        };
        // The request served on another thread, which runs its upcall
        // itself; it counts as running until then.
        let elsewhere = |read: &mut ReadMessage, in_progress: Option<InProgress>, route| {
            let in_progress = in_progress.or_else(|| self.in_progress(reactor));
            let (conn, reactor) = (self.me.upgrade()?, reactor.clone());
            let mut read = read.take();
            let job: super::lanes::Job =
                Box::new(move || conn.handle(&reactor, &mut read, in_progress, route));
            Some(job)
        };
        match route {
            Route::Default | Route::IoThread => self.handle(reactor, read, in_progress, route),
            Route::Reject(ex) => refuse(ex, in_progress),
            Route::Lane(name) => {
                let route = Route::Lane(name.clone());
                let Some(job) = elsewhere(read, in_progress, route) else {
                    return;
                };
                if let Err(job) = self.shared.lanes.run(&name, job) {
                    drop(job);
                    refuse(
                        SystemException::obj_adapter(minor::UNKNOWN_LANE, CompletionStatus::No),
                        None,
                    );
                }
            }
            Route::NewThread => {
                let Some(job) = elsewhere(read, in_progress, Route::NewThread) else {
                    return;
                };
                if let Err(job) = super::lanes::run_on_new_thread("armillary-request", job) {
                    drop(job);
                    refuse(
                        SystemException::transient(minor::NO_THREAD, CompletionStatus::No),
                        None,
                    );
                }
            }
        }
    }

    /// What the request filter decides for a Request message (other
    /// messages are served as usual: `Default`).
    fn route(&self, filter: &dyn RequestFilter, msg: &Message) -> Route {
        let MessageBody::Request(h) = &msg.body else {
            return Route::Default;
        };
        let Some(adapter) = self.adapter.upgrade() else {
            return Route::Default;
        };
        let key = target_key(&h.target).unwrap_or_default();
        let info = RequestInfo {
            operation: &h.operation,
            object_key: &key,
            target: adapter.describe_key(&key),
            client: self.peer,
            service_contexts: &h.service_contexts,
            request_id: h.request_id,
            response_expected: h.response_expected(),
        };
        filter.route(&info)
    }

    /// Serves one message that was read (`msg`, decoded from `frame`) on
    /// this thread, running a request's upcall here too, unless its
    /// `route` is `Default` (then the concurrency model decides).
    #[inline]
    fn handle(
        &self,
        reactor: &Arc<Reactor>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
        route: Route,
    ) {
        let Some((_, msg)) = &*read else {
            return;
        };
        *self.version.lock() = msg.header.version;
        let Some(adapter) = self.adapter.upgrade() else {
            return;
        };
        if matches!(msg.body, MessageBody::Request(_)) {
            self.request(reactor, &adapter, read, in_progress, route);
            return;
        }
        match &msg.body {
            MessageBody::Request(_) => {}
            MessageBody::LocateRequest { request_id, target } => {
                let key = target_key(target).unwrap_or_default();
                let (status, forward) = match adapter.locate_key(&key) {
                    Located::Here => (LocateStatus::ObjectHere, None),
                    Located::Unknown => (LocateStatus::UnknownObject, None),
                    Located::Forward(to) => (LocateStatus::ObjectForward, Some(to)),
                };
                let fields = MessageBody::LocateReply(LocateReplyHeader {
                    request_id: *request_id,
                    locate_status: status,
                });
                let (version, order) = (msg.header.version, msg.header.byte_order);
                if let Ok(mut b) = MessageBuilder::new(version, order, &fields) {
                    if let Some(to) = forward {
                        let _ = to.ior().encode(b.body());
                    }
                    self.send(reactor, b.finish_spliced(false));
                }
            }
            // The client sends nothing more: what it sent before is
            // answered, then the connection closes.
            MessageBody::CloseConnection => {
                self.eof.store(true, Ordering::SeqCst);
                self.close_if_finished(reactor);
            }
            MessageBody::MessageError => self.close(reactor),
            // A lone cancel, or one for a request already answered.
            MessageBody::CancelRequest { .. } => {}
            // Refused when read (`decode_read`).
            MessageBody::Reply(_) | MessageBody::LocateReply(_) | MessageBody::Fragment { .. } => {
                self.message_error(reactor)
            }
        }
    }

    /// Resolves a request to its servant and hands the upcall to the
    /// concurrency model, or answers it at once (no such object, a
    /// forward, a holding POA manager that parks it).
    #[inline]
    fn request(
        &self,
        reactor: &Arc<Reactor>,
        adapter: &Arc<dyn ObjectAdapter>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
        route: Route,
    ) {
        let Some((
            frame,
            msg @ Message {
                body: MessageBody::Request(h),
                ..
            },
        )) = &*read
        else {
            return;
        };
        for ctx in &h.service_contexts {
            if let Ok(Some(KnownServiceContext::CodeSets(cs))) = ctx.decode_known() {
                self.set_codesets(cs);
            }
        }
        let version = msg.header.version;
        let order = msg.header.byte_order;
        let expected = h.response_expected();
        let key = match target_key(&h.target) {
            Some(k) => k,
            None => {
                if expected {
                    let ex = SystemException::no_implement(0, CompletionStatus::No);
                    self.reply_exception(reactor, version, order, h.request_id, &ex);
                }
                return;
            }
        };
        let resolution = adapter.resolve(&key, &h.operation);
        // The server interceptors' starting point, once the request's
        // fate is known (a request a holding POA manager parks comes
        // back here when it runs). A request the POA answers at once is
        // answered through them too.
        let mut interception = None;
        if let Some(interceptors) = adapter.server_interceptors() {
            if !matches!(resolution, Resolution::Held(_)) {
                let mut started = ServerInterception::start(
                    interceptors,
                    h.request_id,
                    &h.operation,
                    expected,
                    h.sync_scope(),
                    h.service_contexts.clone(),
                );
                let early = match started
                    .as_mut()
                    .map(|i| i.receive_request_service_contexts())
                {
                    Some(Err(outcome)) => Some(outcome),
                    _ => match &resolution {
                        Resolution::Forward(to) => Some(ServerOutcome::Forward(to.clone())),
                        Resolution::Failed(ex) => Some(ServerOutcome::System(ex.clone())),
                        Resolution::NotAPoaKey => {
                            Some(ServerOutcome::System(SystemException::object_not_exist(
                                minor::UNREGISTERED_OBJECT,
                                CompletionStatus::No,
                            )))
                        }
                        Resolution::Upcall(_) | Resolution::Held(_) => None,
                    },
                };
                if let Some(outcome) = early {
                    let reply = match expected {
                        true => OwedReply::new(
                            self.reply_sink(reactor, None),
                            version,
                            order,
                            h.request_id,
                        ),
                        false => OwedReply::nothing(),
                    };
                    reply.intercepted(started).answer(outcome);
                    return;
                }
                interception = started;
            }
        }
        let upcall = match resolution {
            Resolution::Upcall(u) => u,
            Resolution::Held(manager) => {
                // Parked until the manager decides; answered then. Until
                // then the connection is not idle.
                let frame = frame.clone();
                let Some(conn) = self.me.upgrade() else {
                    // Unreachable: a thread serving the connection holds it.
                    self.answer_held(reactor, frame, Admission::Discard, route);
                    return;
                };
                self.held.fetch_add(1, Ordering::SeqCst);
                let reactor = reactor.clone();
                manager.hold(Box::new(move |admission| {
                    let reactor2 = reactor.clone();
                    reactor.post(Box::new(move || {
                        conn.answer_held(&reactor2, frame, admission, route);
                        conn.held.fetch_sub(1, Ordering::SeqCst);
                        conn.close_if_finished(&reactor2);
                        if conn.take_resumable() {
                            conn.read_ready(&reactor2);
                        } else {
                            conn.schedule_deadline(&reactor2);
                        }
                    }));
                }));
                return;
            }
            Resolution::Forward(to) => {
                if expected {
                    let fields = MessageBody::Reply(ReplyHeader {
                        request_id: h.request_id,
                        reply_status: ReplyStatus::LocationForward,
                        service_contexts: Vec::new(),
                    });
                    if let Ok(mut b) = MessageBuilder::new(version, order, &fields) {
                        let mut body =
                            CdrWriter::new(order, version).with_align_base(b.body_offset());
                        let _ = to.ior().encode(&mut body);
                        b.body().write_octets(body.as_bytes());
                        self.send(reactor, b.finish_spliced(false));
                    }
                }
                return;
            }
            Resolution::Failed(ex) => {
                if expected {
                    self.reply_exception(reactor, version, order, h.request_id, &ex);
                }
                return;
            }
            Resolution::NotAPoaKey => {
                if expected {
                    let ex = SystemException::object_not_exist(
                        minor::UNREGISTERED_OBJECT,
                        CompletionStatus::No,
                    );
                    self.reply_exception(reactor, version, order, h.request_id, &ex);
                }
                return;
            }
        };
        if h.sync_scope() == SyncScope::WithServer {
            // SYNC_WITH_SERVER: the server has it and the target exists;
            // acknowledge before the upcall.
            self.reply(
                reactor,
                version,
                order,
                h.request_id,
                ReplyKind::Normal,
                &[],
            );
        }
        // A request owed a reply counts as in progress until the reply is
        // written, wherever and whenever that is (an asynchronous servant
        // answers after its upcall): its guard lives in the reply's sink.
        // Any other request is done when its upcall returns.
        let (reply, in_progress) = if expected && h.sync_scope() != SyncScope::WithServer {
            let sink = self.reply_sink(reactor, in_progress);
            (OwedReply::new(sink, version, order, h.request_id), None)
        } else {
            (OwedReply::nothing(), in_progress)
        };
        let reply = reply.intercepted(interception);
        let elsewhere = route == Route::Default && !self.concurrency.runs_here(upcall.poa());
        let (upcall, reply) = if elsewhere {
            (upcall, reply)
        } else {
            // Here, on the reading thread (as the model would run it, or
            // where the request filter routed it), the request where it
            // was read.
            let tasks: Arc<dyn TaskQueue> = reactor.clone();
            let here = run_here(upcall, reply, |upcall, reply| {
                self.run_upcall(&**adapter, frame, msg, upcall, (reply, tasks));
            });
            match here {
                None => return drop(in_progress),
                Some(back) => back,
            }
        };
        let (Some(conn), Some((frame, msg))) = (self.me.upgrade(), read.take()) else {
            // Unreachable: a thread serving the connection holds it.
            return;
        };
        let adapter = adapter.clone();
        let tasks: Arc<dyn TaskQueue> = reactor.clone();
        let run = move |upcall: Upcall, reply: OwedReply| {
            conn.run_upcall(&*adapter, &frame, &msg, upcall, (reply, tasks));
            drop(in_progress);
        };
        if elsewhere {
            let request = ResolvedRequest::new(upcall, reply, self.id, Box::new(run));
            self.concurrency.schedule(request);
        } else {
            // A SINGLE_THREAD_MODEL POA's, perhaps handed over.
            run_resolved(upcall, reply, run);
        }
    }

    /// Runs the upcall of the request in `frame` (resolved to `upcall`)
    /// on the calling thread and answers it through `owed` (the reply, the
    /// operation's name, and where an asynchronous servant's work goes
    /// on), unless its servant took the reply to answer later.
    fn run_upcall(
        &self,
        adapter: &dyn ObjectAdapter,
        frame: &Frame,
        msg: &Message,
        upcall: Upcall,
        owed: (OwedReply, Arc<dyn TaskQueue>),
    ) {
        let MessageBody::Request(h) = &msg.body else {
            // Unreachable: only requests are dispatched.
            return;
        };
        // The connection's code sets: the defaults until a GIOP 1.1+
        // request announced others, then those for every request on it
        // (a client does the same, whatever the message's version).
        let codesets = *self.codesets.lock();
        let version = msg.header.version;
        let order = msg.header.byte_order;
        let expected = h.response_expected();
        // The reply body's offset does not depend on its status.
        let body_offset = MessageBuilder::reply_body_offset(version);
        let args = frame.reader(msg).with_codesets(codesets);
        // Union default labels in the form the client's TypeCodes showed
        // (this request's, see `ServerRequest::results`, or an earlier
        // one's), else the configured one: GIOP does not say which ORB the
        // client is.
        let default_label = self
            .default_label_seen
            .get()
            .copied()
            .unwrap_or(self.shared().default_label);
        let (mut reply, tasks) = owed;
        let record =
            UpcallRecord::start(self.shared.metrics.as_ref(), h, version, self.peer, || {
                target_key(&h.target)
            });
        let _in_request = record.as_ref().map(|r| r.span().clone().entered());
        reply.record(record);
        // The servant writes its results straight into the reply message
        // (one buffer for the reply); a oneway's writer only if it writes.
        let (writer, message) = match reply.prepare() {
            Some(message) => {
                let (writer, shape) = message.into_parts();
                (writer, Some(shape))
            }
            None => (
                CdrWriter::new(order, version).with_align_base(body_offset),
                None,
            ),
        };
        let writer = writer
            .with_codesets(codesets)
            .with_default_label(default_label);
        // The servant sees the object id within its POA, not the whole key.
        let object_id = upcall.object_id().clone();
        // An intercepted request: `receive_request` on this thread, then
        // the request's PICurrent slots are the servant's.
        let mut request_scope = None;
        if let Some(interception) = reply.interception_mut() {
            interception.set_target(&object_id);
            match interception.receive_request() {
                Ok(()) => request_scope = Some(interception.enter_request_scope()),
                Err(outcome) => {
                    reply.answer(outcome);
                    return;
                }
            }
        }
        let mut request = ServerRequest::new(&h.operation, &object_id, args, expected, writer);
        request.owing(reply, tasks);
        request.in_message(message);
        let outcome = {
            let _scope = adapter.decoding_scope();
            upcall.run(&mut request)
        };
        drop(request_scope);
        if let Some(form) = request.default_label_seen() {
            // The first form shown stays: a client's ORB does not change.
            let _ = self.default_label_seen.set(form);
        }
        request.conclude(outcome);
    }
}

/// Where the reply of one of a connection's requests goes (the sink of
/// its [`OwedReply`]): written, or held with the others of its read, as
/// [`ServerConnection::send`] does. It keeps the request counted as in
/// progress until the reply is written.
///
/// A sink serves one request at a time; the connection keeps its latest
/// and serves its next request with it once the request is answered
/// ([`ServerConnection::reply_sink`]), so that a connection whose client
/// waits for each reply makes one sink, not one a request.
struct ConnectionReplies {
    /// Weak: the connection keeps its spare sink.
    conn: Weak<ServerConnection>,
    reactor: Arc<Reactor>,
    in_progress: Mutex<Option<InProgress>>,
}

impl ReplySink for ConnectionReplies {
    /// Writes the reply, then lets its request go (an owed reply is sent
    /// once).
    fn send_reply(&self, message: SplicedBytes) {
        if let Some(conn) = self.conn.upgrade() {
            conn.send(&self.reactor, message);
        }
        let done = self.in_progress.lock().take();
        drop(done);
    }

    /// The reading thread will have moved on when the reply is written:
    /// whoever writes it then does what the reader does after serving
    /// (closing a finished connection, reading on after back-pressure).
    fn answered_later(&self) {
        let mut in_progress = self.in_progress.lock();
        *in_progress = in_progress.take().map(InProgress::handed_off);
    }
}

impl ServerConnection {
    /// The sink for the reply of a request counted by `in_progress`: the
    /// connection's spare, when no request holds it any more, else a new
    /// one (the spare from then on).
    fn reply_sink(
        &self,
        reactor: &Arc<Reactor>,
        in_progress: Option<InProgress>,
    ) -> Arc<ConnectionReplies> {
        let mut spare = self.spare_sink.lock();
        // Only the connection holds it: its request was answered, and no
        // one else can take it while the lock is held.
        if let Some(sink) = spare.as_ref().filter(|s| Arc::strong_count(s) == 1) {
            *sink.in_progress.lock() = in_progress;
            return sink.clone();
        }
        let sink = Arc::new(ConnectionReplies {
            conn: self.me.clone(),
            reactor: reactor.clone(),
            in_progress: Mutex::new(in_progress),
        });
        *spare = Some(sink.clone());
        sink
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
            reader: Some(std::thread::current().id()),
        })
    }

    /// Carries out the decision a POA manager took on a held request: run
    /// it now, where its `route` says (the request filter is not asked
    /// again), or answer TRANSIENT (discarding) or OBJ_ADAPTER (inactive).
    fn answer_held(
        &self,
        reactor: &Arc<Reactor>,
        frame: Frame,
        admission: Admission,
        route: Route,
    ) {
        let Ok(msg) = frame.message() else {
            return;
        };
        if admission == Admission::Run {
            let in_progress = self.in_progress(reactor);
            self.place(reactor, &mut Some((frame, msg)), in_progress, route);
            return;
        }
        let MessageBody::Request(h) = &msg.body else {
            return;
        };
        if !h.response_expected() {
            return;
        }
        let ex = if admission == Admission::Discard {
            SystemException::transient(minor::POA_DISCARDING, CompletionStatus::No)
        } else {
            SystemException::obj_adapter(minor::ADAPTER_INACTIVE, CompletionStatus::No)
        };
        let (version, order) = (msg.header.version, msg.header.byte_order);
        self.reply_exception(reactor, version, order, h.request_id, &ex);
    }

    fn set_codesets(&self, ctx: CodeSetContext) {
        if let Ok(cs) = CodeSets::from_context(&ctx) {
            *self.codesets.lock() = cs;
        }
    }

    /// Sends a reply whose body was encoded for the body offset of a
    /// reply header in this version and byte order (it does not depend on
    /// the status).
    #[allow(clippy::too_many_arguments)]
    fn reply(
        &self,
        reactor: &Arc<Reactor>,
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
        kind: ReplyKind,
        body: &[u8],
    ) {
        let status = match kind {
            ReplyKind::Normal => ReplyStatus::NoException,
            ReplyKind::UserException => ReplyStatus::UserException,
            ReplyKind::SystemException => ReplyStatus::SystemException,
        };
        let mut b = MessageBuilder::reply(version, order, request_id, status);
        b.body().write_octets(body);
        self.send(reactor, b.finish_spliced(false));
    }

    fn reply_exception(
        &self,
        reactor: &Arc<Reactor>,
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
        ex: &SystemException,
    ) {
        let mut b = MessageBuilder::reply(version, order, request_id, ReplyStatus::SystemException);
        // A system exception body is a string (an ASCII repository id) and
        // two ulongs: it encodes.
        let _ = ex.encode_body(b.body());
        self.send(reactor, b.finish_spliced(false));
    }

    /// Sends one message: held with the others of its read when this
    /// thread holds the connection's replies, else written at once.
    fn send(&self, reactor: &Arc<Reactor>, message: SplicedBytes) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // (Nothing to send: what TLS has to say, written at once.)
        if !message.is_empty() {
            let mut held = self.held_replies.lock();
            if held.thread.is_some()
                && held.thread == Some(std::thread::current().id())
                && !thread_role::is_waiting_for_reply()
            {
                held.since.get_or_insert_with(Instant::now);
                held.bytes.append(message);
                if held.bytes.len() < MAX_HELD_BYTES {
                    return;
                }
                held.since = None;
                let bytes = std::mem::take(&mut held.bytes);
                drop(held);
                return self.write(reactor, bytes);
            }
        }
        self.write(reactor, message)
    }

    /// Writes `bytes` (its pieces in one vectored write), queueing what
    /// the socket will not take now (the buffer and pieces themselves, not
    /// a copy).
    fn write(&self, reactor: &Arc<Reactor>, bytes: SplicedBytes) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut out = self.outgoing.lock();
        // TLS: seal under the send lock, so records leave in order.
        let bytes = match &self.tls {
            Some(tls) => {
                let mut sealed = Vec::new();
                let plain = bytes.into_vec();
                if tls.seal(&plain, &mut sealed).is_err() {
                    drop(out);
                    self.close(reactor);
                    return;
                }
                SplicedBytes::from(sealed)
            }
            None => bytes,
        };
        if !out.is_empty() {
            out.push(bytes, 0);
            return;
        }
        let mut written = 0;
        while written < bytes.len() {
            // (The stream's lock is let go before `close` takes it.)
            let result = write_from(&mut *self.stream.lock(), &bytes, written);
            match result {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // The rest waits in `outgoing` for a writable event. (On a
                // blocking socket this is the write timeout: the client
                // does not take its replies, and is closed below.)
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.blocking_reader.is_none() => {
                    break
                }
                Err(e) => {
                    drop(out);
                    crate::trace::connection_broken(Side::Server, Addr(self.peer), &e);
                    self.close(reactor);
                    return;
                }
            }
        }
        if written < bytes.len() {
            out.push(bytes, written);
            if let (Some(token), ConnStream::Reactive(stream)) =
                (*self.token.lock(), &mut *self.stream.lock())
            {
                let _ = reactor.reregister(stream, token, Interest::READABLE | Interest::WRITABLE);
            }
        }
    }

    fn flush(&self, reactor: &Arc<Reactor>) {
        let mut out = self.outgoing.lock();
        while let Some((first, from)) = out.front() {
            let r = write_from(&mut *self.stream.lock(), first, from);
            match r {
                Ok(n) if n > 0 => {
                    out.consume(n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                _ => {
                    drop(out);
                    self.close(reactor);
                    return;
                }
            }
        }
        drop(out);
        if let (Some(token), ConnStream::Reactive(stream)) =
            (*self.token.lock(), &mut *self.stream.lock())
        {
            let _ = reactor.reregister(stream, token, Interest::READABLE);
        }
        self.close_if_finished(reactor);
    }

    /// Refuses the connection (see [`refuse`](Self::refuse)) and closes
    /// it with MessageError once what was read before is answered: at
    /// once when nothing is in progress, else when the last request in
    /// progress ends.
    fn message_error(&self, reactor: &Arc<Reactor>) {
        self.refuse();
        self.close_if_finished(reactor);
    }

    /// Records that the client sent what cannot be served: nothing more
    /// is read, and the MessageError is sent in the connection's version
    /// now (GIOP 1.2 at most). The first reason stays.
    fn refuse(&self) {
        let mut refused = self.refused.lock();
        if refused.is_none() {
            *refused = Some((*self.version.lock()).min(GiopVersion::V1_2));
        }
    }

    /// Sends CloseConnection, then closes.
    pub(crate) fn close_orderly(&self, reactor: &Arc<Reactor>) {
        let version = *self.version.lock();
        if let Ok(b) =
            MessageBuilder::new(version, ByteOrder::NATIVE, &MessageBody::CloseConnection)
        {
            self.send(reactor, b.finish_spliced(false));
        }
        if let Some(tls) = &self.tls {
            tls.send_close_notify();
            self.send(reactor, SplicedBytes::default());
        }
        self.close(reactor);
    }

    pub(super) fn close(&self, reactor: &Arc<Reactor>) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // The replies held go out first, and a MessageError or
        // CloseConnection sent while they were held after them.
        self.write_held(reactor);
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        crate::trace::connection_closed(Side::Server, Addr(self.peer), self.close_reason());
        // Give back what a partly received message held, before the peer
        // can see the close: once it has, it may rightly expect another
        // connection to fit in the budget this one freed.
        let charged = self.charged.swap(0, Ordering::SeqCst);
        self.shared
            .partial_bytes
            .fetch_sub(charged, Ordering::SeqCst);
        let token = self.token.lock().take();
        let mut stream = self.stream.lock();
        let _ = stream.flush();
        stream.shutdown();
        if let (Some(token), ConnStream::Reactive(s)) = (token, &mut *stream) {
            reactor.deregister(s, token);
        }
        if matches!(*stream, ConnStream::Reactive(_)) {
            // The descriptor is free now, whoever still holds the
            // connection (a request parked by a POA manager, say). (A
            // blocking socket is freed when its thread ends.)
            *stream = ConnStream::Closed;
        }
        drop(stream);
        if let Some(mut decoder) = self.decoder.try_lock() {
            *decoder = FrameDecoder::new(self.shared.limits.frame);
        }
        *self.partial_since.lock() = None;
        self.outgoing.lock().clear();
        self.held_replies.lock().bytes = SplicedBytes::default();
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
    reader: Option<std::thread::ThreadId>,
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
        if self.reader == Some(std::thread::current().id()) {
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

/// Why a message read was refused, for its event: it did not decode, or
/// a client may not send it.
struct RejectedMessage(Option<GiopError>);

impl std::fmt::Display for RejectedMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(e) => write!(f, "a message that does not decode: {e}"),
            None => f.write_str("a message a client may not send (a reply or a lone fragment)"),
        }
    }
}

/// The events of a connection (see `crate::trace`).
impl ServerConnection {
    /// The client's address.
    pub(super) fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Why the connection is closing, as its closed event says.
    fn close_reason(&self) -> &'static str {
        if self.message_error_sent.load(Ordering::SeqCst) {
            "message_error"
        } else if self.eof.load(Ordering::SeqCst) {
            "peer_closed"
        } else {
            "closed"
        }
    }

    /// A message overdue: the message timeout is reached.
    #[cold]
    fn trace_overdue(&self) {
        if !tracing::level_enabled!(tracing::Level::WARN) {
            return;
        }
        if let (Some(limit), true) = (self.shared.limits.message_timeout, self.message_overdue()) {
            let detail = format_args!("a message not finished within {limit:?}");
            crate::trace::limit_reached(
                Side::Server,
                Addr(self.peer),
                "-ORBMessageTimeout",
                limit.as_millis().try_into().unwrap_or(usize::MAX),
                &detail,
            );
        }
    }

    /// Refused after a read: over the budget of partly received messages,
    /// or overdue.
    #[cold]
    fn trace_partial_refused(&self) {
        if !tracing::level_enabled!(tracing::Level::WARN) {
            return;
        }
        if self.message_overdue() {
            return self.trace_overdue();
        }
        let limit = self.shared.limits.max_partial_bytes;
        let detail = format_args!("partly received messages hold more than {limit} bytes");
        crate::trace::limit_reached(
            Side::Server,
            Addr(self.peer),
            "-ORBMaxPartialBytes",
            limit,
            &detail,
        );
    }

    /// Reading stops for back-pressure.
    #[cold]
    fn trace_backpressure(&self) {
        if !tracing::level_enabled!(tracing::Level::DEBUG) {
            return;
        }
        let limits = &self.shared.limits;
        let (limit, value) = if self.outgoing.lock().len() >= limits.max_queued_reply_bytes {
            ("-ORBMaxQueuedReplyBytes", limits.max_queued_reply_bytes)
        } else {
            (
                "-ORBMaxOutstandingRequests",
                limits.max_outstanding_requests,
            )
        };
        crate::trace::backpressure(self.peer, limit, value);
    }
}
