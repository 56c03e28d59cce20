//! The server side of IIOP: listeners and connections registered with the
//! reactor; each request read is dispatched through the POA on the thread
//! that read it (or where a request filter routes it, or, with
//! `locality:N`, on its connection's worker), and its reply written back
//! on the same connection.
//!
//! With an idle timeout, a connection that has been quiet that long with no
//! request in progress (none being read, run or held by a POA manager) is
//! closed with CloseConnection: by the reactor's idle ticks, or, with
//! thread per connection, by the connection's own thread when its read
//! times out.
//!
//! What one client can make the server hold is bounded (see
//! [`Limits`] and `docs/reliability.md`): a message must be finished
//! within the message timeout and fit the size limits, the partly received
//! messages of all connections share one memory budget, a connection whose
//! requests or queued replies pile up is not read until they drain
//! (back-pressure), and connections beyond the connection limit are closed
//! at once. A peer that closes its sending side gets the replies to what
//! it sent, then the connection closes; out of descriptors, the acceptor
//! waits for a connection to close (or the next tick) instead of spinning.
//!
//! **Invariant:** a connection is read by at most one thread at a time
//! (`ServerConnection::gate`); replies are written whole under the
//! connection's write lock. The requests a thread read run after it has
//! let go of the gate, so in a thread pool several requests of one
//! connection may run at once (a POA with the SINGLE_THREAD_MODEL policy
//! still serializes its own).

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use armillary_giop::cdr::codeset::{CodeSetContext, CodeSets};
use armillary_giop::cdr::CdrWriter;
use armillary_giop::giop::{
    Frame, FrameDecoder, FrameError, FrameLimits, GiopError, KnownServiceContext,
    LocateReplyHeader, LocateStatus, Message, MessageBody, MessageBuilder, ReplyHeader,
    ReplyStatus, RequestHeader, SyncScope, TargetAddress,
};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, CdrEncode, GiopVersion};
use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Token};
use parking_lot::Mutex;

use crate::completion::WaitForCompletion;
use crate::config::ConcurrencyModel;
use crate::endpoint::Endpoint;
use crate::net;
use crate::orb::{OrbCore, OrbError};
use crate::poa::{Admission, Resolution};
use crate::reactor::{EventHandler, Reactor, Readiness};
use crate::request_filter::{run_on_new_thread, Lanes, RequestFilter, RequestInfo, Route};
use crate::servant::{ReplyKind, ServerRequest};
use crate::transport::locality::LocalityPool;

/// How long a server thread waits for events before it looks at the clock
/// (idle checks) and whether the server is stopping.
const EVENT_LOOP_WAIT: Duration = Duration::from_millis(500);

/// The limits the server applies to each client, from the ORB's
/// configuration (see [`OrbConfig`](crate::config::OrbConfig)).
#[derive(Debug, Clone)]
struct Limits {
    frame: FrameLimits,
    idle_timeout: Option<Duration>,
    message_timeout: Option<Duration>,
    max_partial_bytes: usize,
    max_outstanding_requests: usize,
    max_queued_reply_bytes: usize,
    max_connections: usize,
    max_connection_threads: usize,
}

impl Limits {
    fn from_config(config: &crate::config::OrbConfig) -> Limits {
        Limits {
            frame: FrameLimits {
                max_message_size: config.max_message_size,
                max_fragments: config.max_fragments,
                // One connection may hold at most the server's budget.
                max_pending_bytes: config.max_partial_bytes,
                max_reassemblies: super::frame_limits().max_reassemblies,
            },
            idle_timeout: config.idle_timeout,
            message_timeout: config.message_timeout,
            max_partial_bytes: config.max_partial_bytes,
            max_outstanding_requests: config.max_outstanding_requests,
            max_queued_reply_bytes: config.max_queued_reply_bytes,
            max_connections: config.max_connections,
            max_connection_threads: config.max_connection_threads,
        }
    }
}

/// What a server has done and holds, for monitoring and tests
/// ([`Orb::server_stats`](crate::Orb::server_stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Calls to `accept` the listeners have made, successful or not. Out
    /// of descriptors the acceptor tries again only when a connection
    /// closes or at the next tick (twice a second), so this stays small
    /// while the server is exhausted.
    pub accept_calls: u64,
    /// Of those, the ones that failed (out of descriptors, mostly).
    pub accept_failures: u64,
    /// Connections accepted and closed at once because of
    /// `max_connections` or `max_connection_threads`.
    pub connections_refused: u64,
    /// Connections open now.
    pub connections_open: usize,
    /// Bytes the partly received messages of every connection hold now.
    pub partial_bytes: usize,
}

/// What the listeners and connections of one server share: the limits
/// and the counters behind them.
struct Shared {
    limits: Limits,
    reactor: Weak<Reactor>,
    acceptors: Mutex<Vec<Weak<Acceptor>>>,
    open: AtomicUsize,
    threads: AtomicUsize,
    partial_bytes: AtomicUsize,
    accept_calls: AtomicU64,
    accept_failures: AtomicU64,
    refused: AtomicU64,
    /// The threading framework: the filter that routes each request, and
    /// the lanes it may route them to.
    filter: Option<Arc<dyn RequestFilter>>,
    lanes: Lanes,
    /// The `locality:N` model's workers, which run each connection's
    /// requests as one stream.
    locality: Option<LocalityPool>,
    /// Numbers the connections' streams.
    next_stream: AtomicU64,
}

impl Shared {
    /// A connection let go of its descriptor: an acceptor that ran out of
    /// them tries again now.
    fn wake_paused_acceptors(&self) {
        let Some(reactor) = self.reactor.upgrade() else {
            return;
        };
        let acceptors: Vec<Arc<Acceptor>> = self
            .acceptors
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|a| a.paused.load(Ordering::SeqCst))
            .collect();
        for acceptor in acceptors {
            let r = reactor.clone();
            reactor.post(Box::new(move || acceptor.accept_all(&r)));
        }
    }

    fn stats(&self) -> ServerStats {
        ServerStats {
            accept_calls: self.accept_calls.load(Ordering::SeqCst),
            accept_failures: self.accept_failures.load(Ordering::SeqCst),
            connections_refused: self.refused.load(Ordering::SeqCst),
            connections_open: self.open.load(Ordering::SeqCst),
            partial_bytes: self.partial_bytes.load(Ordering::SeqCst),
        }
    }
}

/// The listeners, the reactor and the threads that run it.
pub(crate) struct Server {
    reactor: Arc<Reactor>,
    shared: Arc<Shared>,
    published: Vec<(String, u16)>,
    /// The (host, port) pairs of the TLS endpoints.
    published_tls: Vec<(String, u16)>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Thread per connection: the connections' threads (finished ones are
    /// dropped as new ones come).
    connection_threads: Mutex<Vec<JoinHandle<()>>>,
    connections: Mutex<Vec<std::sync::Weak<ServerConnection>>>,
    /// The reactor failed (its poll returned an error): nothing more is
    /// served, and `Orb::run` says so.
    failed: AtomicBool,
}

struct Acceptor {
    /// `None` once the server has stopped: the port is closed.
    listener: Mutex<Option<TcpListener>>,
    /// The listener's reactor token.
    token: Mutex<Option<Token>>,
    /// For a TLS endpoint, the configuration of its sessions.
    tls: Option<Arc<rustls::ServerConfig>>,
    core: std::sync::Weak<OrbCore>,
    server: std::sync::Weak<Server>,
    shared: Arc<Shared>,
    /// Out of descriptors: the listener's edge-triggered event will not
    /// come again for connections already waiting, so the acceptor tries
    /// again when a connection closes or at the next tick.
    paused: AtomicBool,
}

/// Whether an accept failure means the process or system is out of
/// descriptors or memory (retrying at once would spin).
fn exhausted(e: &std::io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM on Linux and the BSDs alike.
    const CODES: [i32; 4] = [24, 23, 105, 12];
    e.raw_os_error().is_some_and(|c| CODES.contains(&c))
}

struct ReadGate {
    busy: bool,
    again: bool,
}

/// The socket of a connection: registered with the reactor, or blocking
/// and read by a thread of its own (thread per connection; the thread
/// reads through its own handle to the same socket, so that writers never
/// wait behind a read and the connection costs one descriptor), or gone.
enum ConnStream {
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
    /// The client's address.
    peer: Option<SocketAddr>,
    /// The connection's stream, for the `locality:N` model.
    stream_id: u64,
    stream: Mutex<ConnStream>,
    /// Thread per connection: the socket its thread blocks reading, so
    /// that writers never wait behind a read.
    blocking_reader: Option<Arc<std::net::TcpStream>>,
    shared: Arc<Shared>,
    token: Mutex<Option<Token>>,
    /// The TLS session of a connection accepted on a TLS endpoint: what
    /// is read is opened by it, what is sent is sealed by it.
    tls: Option<super::tls::ServerSession>,
    core: std::sync::Weak<OrbCore>,
    gate: Mutex<ReadGate>,
    decoder: Mutex<FrameDecoder>,
    /// The read buffer, allocated once; used only by the reading thread.
    read_buf: Mutex<Vec<u8>>,
    /// Bytes the socket would not take yet.
    outgoing: Mutex<VecDeque<u8>>,
    /// Code sets the client announced (CodeSets service context).
    codesets: Mutex<CodeSets>,
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
        if let Some(pool) = &self.shared.locality {
            pool.close_stream(self.stream_id);
        }
        self.shared.wake_paused_acceptors();
    }
}

impl Server {
    pub(crate) fn start(core: Arc<OrbCore>) -> Result<Arc<Server>, OrbError> {
        // Ticks drive the idle and message timeouts and an acceptor's
        // retries when descriptors ran out: always on.
        let reactor = Reactor::new(true).map_err(|source| OrbError::Listen {
            endpoint: "reactor".into(),
            source,
        })?;
        let shared = Arc::new(Shared {
            limits: Limits::from_config(&core.config),
            reactor: Arc::downgrade(&reactor),
            acceptors: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
            partial_bytes: AtomicUsize::new(0),
            accept_calls: AtomicU64::new(0),
            accept_failures: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            filter: core.config.request_filter.0.clone(),
            lanes: Lanes::start(&core.config.lanes).map_err(|source| OrbError::Listen {
                endpoint: "lane".into(),
                source,
            })?,
            locality: super::locality::pool_for(&core.config).map_err(|source| {
                OrbError::Listen {
                    endpoint: "thread".into(),
                    source,
                }
            })?,
            next_stream: AtomicU64::new(0),
        });
        let mut endpoints = core.config.endpoints.clone();
        let tls_endpoints = &core.config.tls.endpoints;
        let tls_config = if tls_endpoints.is_empty() {
            None
        } else {
            Some(core.config.tls.server_config()?)
        };
        if endpoints.is_empty() && tls_endpoints.is_empty() {
            endpoints.push(crate::config::ListenEndpoint {
                host: "127.0.0.1".into(),
                port: 0,
            });
        }
        let mut listeners = Vec::new();
        let mut published = Vec::new();
        let mut published_tls = Vec::new();
        let all = endpoints.iter().map(|ep| (ep, None));
        let all = all.chain(tls_endpoints.iter().map(|ep| (ep, tls_config.clone())));
        for (ep, tls) in all {
            let describe = format!("{}:{}", ep.host, ep.port);
            let addr: SocketAddr = net::bind_address(ep).map_err(|source| OrbError::Listen {
                endpoint: describe.clone(),
                source,
            })?;
            let listener = net::listen(addr).map_err(|source| OrbError::Listen {
                endpoint: describe.clone(),
                source,
            })?;
            let bound = listener.local_addr().map_err(|source| OrbError::Listen {
                endpoint: describe,
                source,
            })?;
            let hosts = match &core.config.publish_host {
                Some(h) => vec![h.clone()],
                None => net::published_hosts(bound),
            };
            let list = if tls.is_some() {
                &mut published_tls
            } else {
                &mut published
            };
            for h in hosts {
                list.push((h, bound.port()));
            }
            listeners.push((listener, tls));
        }
        let server = Arc::new(Server {
            reactor: reactor.clone(),
            shared: shared.clone(),
            published,
            published_tls,
            threads: Mutex::new(Vec::new()),
            connection_threads: Mutex::new(Vec::new()),
            connections: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
        });
        for (listener, tls) in listeners {
            let acceptor = Arc::new(Acceptor {
                listener: Mutex::new(Some(listener)),
                token: Mutex::new(None),
                tls,
                core: Arc::downgrade(&core),
                server: Arc::downgrade(&server),
                shared: shared.clone(),
                paused: AtomicBool::new(false),
            });
            shared.acceptors.lock().push(Arc::downgrade(&acceptor));
            let mut l = acceptor.listener.lock();
            if let Some(listener) = &mut *l {
                let token = reactor
                    .register(listener, Interest::READABLE, acceptor.clone())
                    .map_err(|source| OrbError::Listen {
                        endpoint: "register".into(),
                        source,
                    })?;
                *acceptor.token.lock() = Some(token);
            }
        }
        let threads = match core.config.concurrency {
            // With thread per connection the reactor only accepts (and runs
            // posted work); with locality it reads, and the workers run.
            ConcurrencyModel::SingleThreadedReactive
            | ConcurrencyModel::ThreadPerConnection
            | ConcurrencyModel::Locality(_) => 1,
            ConcurrencyModel::ThreadPool(n) => n.max(1),
            // The application's threads drive the reactor (`Orb::run`,
            // `Orb::perform_work`).
            ConcurrencyModel::ApplicationThreads => 0,
        };
        for i in 0..threads {
            let driver = server.clone();
            let handle = std::thread::Builder::new()
                .name(format!("armillary-reactor-{i}"))
                .spawn(move || while let Ok(true) = driver.drive(EVENT_LOOP_WAIT) {})
                .map_err(|source| OrbError::Listen {
                    endpoint: "thread".into(),
                    source,
                })?;
            server.threads.lock().push(handle);
        }
        Ok(server)
    }

    /// One turn of an event loop: posted tasks, one event (waiting up to
    /// `wait` for one), then the idle ticks if due. `Ok(false)` once the
    /// server is stopping: the loop should end; an error when the reactor
    /// failed (recorded: see [`failed`](Self::failed)).
    pub(crate) fn drive(&self, wait: Duration) -> std::io::Result<bool> {
        if self.reactor.is_stopping() {
            return Ok(false);
        }
        self.reactor.turn(Some(wait)).inspect_err(|_| self.fail())?;
        self.reactor.tick_if_due();
        Ok(!self.reactor.is_stopping())
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Whether the reactor failed: the server can serve nothing more.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Whether a request, connection event, posted task or idle check is
    /// waiting for a thread to handle it (`Orb::work_pending`).
    pub(crate) fn work_pending(&self) -> bool {
        !self.reactor.is_stopping() && self.reactor.work_pending().unwrap_or(false)
    }

    /// Handles one unit of work on the calling thread, waiting up to
    /// `wait` for one to arrive (`Orb::perform_work`); an error when the
    /// reactor failed.
    pub(crate) fn perform_work(&self, wait: Duration) -> std::io::Result<()> {
        if !self.reactor.is_stopping() {
            self.reactor
                .perform_one(wait)
                .inspect_err(|_| self.fail())?;
        }
        Ok(())
    }

    /// What the server has done and holds now.
    pub(crate) fn stats(&self) -> ServerStats {
        self.shared.stats()
    }

    /// The (host, port) pairs IORs publish.
    pub(crate) fn published(&self) -> Vec<(String, u16)> {
        self.published.clone()
    }

    /// The (host, port) pairs of the TLS endpoints IORs announce.
    pub(crate) fn published_tls(&self) -> Vec<(String, u16)> {
        self.published_tls.clone()
    }

    /// Every endpoint, plain first, then TLS (`Orb::endpoints`).
    pub(crate) fn endpoints(&self) -> Vec<Endpoint> {
        let plain = self.published.iter().map(|(h, p)| (h, p, false));
        let tls = self.published_tls.iter().map(|(h, p)| (h, p, true));
        plain
            .chain(tls)
            .map(|(h, p, tls)| Endpoint::new(h.clone(), *p, tls))
            .collect()
    }

    /// Stops the server: closes the listeners (their ports refuse
    /// connections from now on), closes every connection with
    /// CloseConnection, and stops the threads; with
    /// [`WaitForCompletion::Yes`], waits for them to finish what they are
    /// running (never for the calling thread itself).
    pub(crate) fn stop(&self, wait: WaitForCompletion) {
        self.reactor.stop();
        let acceptors: Vec<Arc<Acceptor>> = self
            .shared
            .acceptors
            .lock()
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        for acceptor in acceptors {
            acceptor.close(&self.reactor);
        }
        let conns: Vec<_> = self
            .connections
            .lock()
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        for c in conns {
            c.close_orderly(&self.reactor);
        }
        if wait.is_yes() {
            // The requests the lanes and workers hold run to their end
            // first.
            self.shared.lanes.join();
            if let Some(pool) = &self.shared.locality {
                pool.join();
            }
            let current = std::thread::current().id();
            let threads: Vec<_> = self.threads.lock().drain(..).collect();
            // Their connections are closed: each thread ends once its
            // request (if any) is answered.
            let per_connection: Vec<_> = self.connection_threads.lock().drain(..).collect();
            for t in threads.into_iter().chain(per_connection) {
                if t.thread().id() != current {
                    let _ = t.join();
                }
            }
        }
        self.shared.lanes.close();
        if let Some(pool) = &self.shared.locality {
            pool.close();
        }
        // What is left (handlers, posted work) would otherwise keep the
        // reactor, and the sockets it holds, alive through itself.
        self.reactor.clear();
    }
}

/// What a LocateRequest finds.
enum Located {
    Here,
    Unknown,
    Forward(crate::object::ObjectRef),
}

/// The key the POAs know for `key`: plain keys (corbaloc) map to a
/// reference this ORB made.
fn poa_key(core: &OrbCore, key: &[u8]) -> Vec<u8> {
    match core.key_table.read().get(key) {
        Some(obj) => obj
            .ior()
            .iiop_profiles()
            .into_iter()
            .next()
            .map(|p| p.object_key)
            .unwrap_or_else(|| key.to_vec()),
        None => key.to_vec(),
    }
}

/// The object key a request addresses, in any of the three GIOP 1.2
/// forms (a profile or reference that is not IIOP has none).
fn target_key(target: &TargetAddress) -> Option<Vec<u8>> {
    let from_profile = |p: &armillary_giop::ior::TaggedProfile| {
        (p.tag == armillary_giop::ior::TAG_INTERNET_IOP)
            .then(|| armillary_giop::ior::ProfileBody::decode(&p.data).ok())
            .flatten()
            .map(|b| b.object_key)
    };
    match target {
        TargetAddress::Key(k) => Some(k.clone()),
        TargetAddress::Profile(p) => from_profile(p),
        TargetAddress::Reference {
            selected_profile_index,
            ior,
        } => ior
            .profiles
            .get(*selected_profile_index as usize)
            .and_then(from_profile),
    }
}

impl EventHandler for Acceptor {
    fn ready(&self, reactor: &Arc<Reactor>, _readiness: Readiness) {
        self.accept_all(reactor);
    }

    fn tick(&self, reactor: &Arc<Reactor>) {
        if self.paused.load(Ordering::SeqCst) {
            self.accept_all(reactor);
        }
    }
}

impl Acceptor {
    /// Closes the listener: the port refuses connections from now on.
    fn close(&self, reactor: &Reactor) {
        let listener = self.listener.lock().take();
        let token = self.token.lock().take();
        if let (Some(mut listener), Some(token)) = (listener, token) {
            reactor.deregister(&mut listener, token);
        }
    }

    /// Accepts every connection waiting. Out of descriptors it stops and
    /// marks itself paused: a closing connection or the next tick calls it
    /// again (the listener's edge-triggered event does not come again for
    /// connections already waiting, and retrying at once would spin).
    fn accept_all(&self, reactor: &Arc<Reactor>) {
        self.paused.store(false, Ordering::SeqCst);
        // Failures other than exhaustion concern one connection (aborted
        // before it was accepted, say); a run of them stops the loop too.
        let mut failures = 0;
        loop {
            self.shared.accept_calls.fetch_add(1, Ordering::SeqCst);
            let accepted = match &*self.listener.lock() {
                Some(listener) => listener.accept(),
                // Closed by the server's stop.
                None => return,
            };
            match accepted {
                Ok((stream, _)) => {
                    failures = 0;
                    self.admit(reactor, stream);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.shared.accept_failures.fetch_add(1, Ordering::SeqCst);
                    failures += 1;
                    if exhausted(&e) || failures >= 16 {
                        self.paused.store(true, Ordering::SeqCst);
                        return;
                    }
                }
            }
        }
    }

    /// Sets up one accepted connection, or closes it at once when the
    /// connection (or thread) limit is reached.
    fn admit(&self, reactor: &Arc<Reactor>, stream: TcpStream) {
        let limits = &self.shared.limits;
        let per_thread = self
            .core
            .upgrade()
            .is_some_and(|c| c.config.concurrency == ConcurrencyModel::ThreadPerConnection);
        let full = self.shared.open.load(Ordering::SeqCst) >= limits.max_connections
            || (per_thread
                && self.shared.threads.load(Ordering::SeqCst) >= limits.max_connection_threads);
        if full {
            // Closed at once rather than left in the backlog.
            self.shared.refused.fetch_add(1, Ordering::SeqCst);
            return;
        }
        let _ = stream.set_nodelay(true);
        let peer = stream.peer_addr().ok();
        let (stream, blocking_reader) = if per_thread {
            let std_stream = std::net::TcpStream::from(stream);
            // The blocking read wakes up that often to see whether the
            // connection idles or a message is overdue. (A zero timeout
            // is refused by the system: 1 ms.)
            let wake = [limits.idle_timeout, limits.message_timeout]
                .into_iter()
                .flatten()
                .min()
                .map(|d| d.max(Duration::from_millis(1)));
            // A reply the client does not take within the message timeout
            // ends the connection (see `send`), so that its thread, and a
            // shutdown, never wait forever on a client that does not read.
            let blocking = std_stream
                .set_nonblocking(false)
                .and_then(|()| std_stream.set_read_timeout(wake))
                .and_then(|()| std_stream.set_write_timeout(limits.message_timeout));
            if blocking.is_err() {
                return;
            }
            let socket = Arc::new(std_stream);
            (ConnStream::Blocking(socket.clone()), Some(socket))
        } else {
            (ConnStream::Reactive(stream), None)
        };
        let tls = match &self.tls {
            Some(config) => match super::tls::ServerSession::new(config.clone()) {
                Some(session) => Some(session),
                None => return,
            },
            None => None,
        };
        // Counted from here; the connection's `drop` uncounts it.
        self.shared.open.fetch_add(1, Ordering::SeqCst);
        let conn = Arc::new_cyclic(|me| ServerConnection {
            me: me.clone(),
            peer,
            stream_id: self.shared.next_stream.fetch_add(1, Ordering::Relaxed),
            stream: Mutex::new(stream),
            blocking_reader,
            shared: self.shared.clone(),
            token: Mutex::new(None),
            tls,
            core: self.core.clone(),
            gate: Mutex::new(ReadGate {
                busy: false,
                again: false,
            }),
            decoder: Mutex::new(FrameDecoder::new(limits.frame)),
            read_buf: Mutex::new(vec![0; super::READ_BUFFER]),
            outgoing: Mutex::new(VecDeque::new()),
            codesets: Mutex::new(CodeSets::DEFAULT),
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
        });
        let registered = match &mut *conn.stream.lock() {
            ConnStream::Reactive(s) => reactor
                .register(s, Interest::READABLE, conn.clone())
                .map(Some),
            ConnStream::Blocking(_) | ConnStream::Closed => Ok(None),
        };
        match registered {
            Ok(token) => *conn.token.lock() = token,
            Err(_) => return,
        }
        if let Some(server) = self.server.upgrade() {
            let mut list = server.connections.lock();
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&conn));
        }
        if reactor.is_stopping() {
            // Accepted while the server stopped, perhaps after it closed
            // the connections it knew.
            conn.close_orderly(reactor);
            return;
        }
        if per_thread {
            self.shared.threads.fetch_add(1, Ordering::SeqCst);
            let (conn2, reactor2) = (conn.clone(), reactor.clone());
            let spawned = std::thread::Builder::new()
                .name("armillary-connection".into())
                .spawn(move || {
                    conn2.serve_blocking(&reactor2);
                    conn2.shared.threads.fetch_sub(1, Ordering::SeqCst);
                });
            match spawned {
                Ok(handle) => {
                    if let Some(server) = self.server.upgrade() {
                        let mut threads = server.connection_threads.lock();
                        threads.retain(|t| !t.is_finished());
                        threads.push(handle);
                    }
                }
                Err(_) => {
                    // No thread for it: the connection cannot be served.
                    self.shared.threads.fetch_sub(1, Ordering::SeqCst);
                    conn.close(reactor);
                }
            }
        }
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
        if self.message_overdue() {
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
        }
    }
}

impl ServerConnection {
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
            let mut frames = Vec::new();
            loop {
                frames.extend(self.read_frames(reactor, frames.len()));
                let mut gate = self.gate.lock();
                if gate.again && !self.closed.load(Ordering::SeqCst) {
                    gate.again = false;
                    continue;
                }
                // Code sets come with the first requests; they must be known
                // before any request of the connection runs on another thread.
                self.note_codesets(&frames);
                self.running.fetch_add(frames.len(), Ordering::SeqCst);
                gate.busy = false;
                break;
            }
            for frame in frames {
                self.dispatch(reactor, frame);
            }
            self.close_if_finished(reactor);
            if !self.take_resumable() {
                return;
            }
        }
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

    /// After the peer closed its sending side: closes once everything it
    /// sent is answered and the replies are written.
    fn close_if_finished(&self, reactor: &Arc<Reactor>) {
        if self.eof.load(Ordering::SeqCst)
            && self.running.load(Ordering::SeqCst) == 0
            && self.held.load(Ordering::SeqCst) == 0
            && self.outgoing.lock().is_empty()
        {
            self.close(reactor);
        }
    }

    /// Takes the code sets a client announces from the requests in
    /// `frames`, until it has announced them.
    fn note_codesets(&self, frames: &[Frame]) {
        if self.codesets_known.load(Ordering::Relaxed) {
            return;
        }
        for frame in frames {
            let Ok(msg) = Message::decode(&frame.bytes) else {
                continue;
            };
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
    /// on this thread, so none is running when it looks; replies are
    /// written blocking, which is this model's back-pressure.
    fn serve_blocking(&self, reactor: &Arc<Reactor>) {
        while !self.closed.load(Ordering::SeqCst) {
            let frames = self.read_frames(reactor, 0);
            if self.message_overdue() {
                self.message_error(reactor);
                return;
            }
            if frames.is_empty() && self.is_idle() {
                self.close_orderly(reactor);
                return;
            }
            self.running.fetch_add(frames.len(), Ordering::SeqCst);
            for frame in frames {
                self.dispatch(reactor, frame);
            }
            if self.eof.load(Ordering::SeqCst) {
                // Requests a filter sent elsewhere close the connection
                // when the last of them is answered.
                self.close_if_finished(reactor);
                return;
            }
        }
    }

    /// Reads what is there and returns the whole messages it completed
    /// (`already`: those the caller read before, for the back-pressure
    /// check). Stops at end of stream (which it records), when the socket
    /// has nothing more, or when the connection is at its limits.
    fn read_frames(&self, reactor: &Arc<Reactor>, already: usize) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut buf = self.read_buf.lock();
        loop {
            if self.closed.load(Ordering::SeqCst) || self.eof.load(Ordering::SeqCst) {
                return frames;
            }
            if self.blocking_reader.is_none() && self.over_limits(already + frames.len()) {
                // Back-pressure: read on once the requests are answered
                // and the replies written (`take_resumable`).
                self.read_paused.store(true, Ordering::SeqCst);
                return frames;
            }
            let n = match &self.blocking_reader {
                // Thread per connection: block without holding the lock.
                Some(reader) => (&**reader).read(&mut buf),
                None => self.stream.lock().read(&mut buf),
            };
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
                        None => &buf[..n],
                        Some(tls) => match tls.open(&buf[..n], &mut plain) {
                            Ok(opened) => {
                                if opened.wants_write {
                                    // Handshake messages.
                                    self.send(reactor, &[]);
                                }
                                if opened.closed {
                                    self.close(reactor);
                                }
                                &plain[..]
                            }
                            Err(_) => {
                                // Not TLS, or a client refused: send the
                                // alert and close.
                                self.send(reactor, &[]);
                                self.close(reactor);
                                return frames;
                            }
                        },
                    };
                    let mut decoder = self.decoder.lock();
                    if let Err(e) = decoder.handle_bytes(data) {
                        drop(decoder);
                        self.frame_error(reactor, &e);
                        return frames;
                    }
                    let before = frames.len();
                    while let Some(f) = decoder.poll_frame() {
                        frames.push(f);
                    }
                    let (pending, idle) = (decoder.pending_bytes(), decoder.is_idle());
                    drop(decoder);
                    if !self.account_partial(pending, idle, frames.len() > before) {
                        self.message_error(reactor);
                        return frames;
                    }
                    if n < buf.len() && !self.peer_closed.load(Ordering::SeqCst) {
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
                Err(_) => {
                    self.close(reactor);
                    return frames;
                }
            }
        }
    }

    /// Answers a stream that cannot be decoded with MessageError; for a
    /// message in a GIOP version this ORB does not speak, in the highest
    /// version both sides understand, as GIOP asks.
    fn frame_error(&self, reactor: &Arc<Reactor>, e: &FrameError) {
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
        self.message_error(reactor);
    }

    /// Runs one message read (counted in `running`, which this uncounts
    /// once it is handled): where the request filter routes it, or where
    /// the model runs it — on this thread, or with `locality:N` as a job of
    /// the connection's stream.
    fn dispatch(&self, reactor: &Arc<Reactor>, frame: Frame) {
        let done = |conn: &ServerConnection| {
            conn.running.fetch_sub(1, Ordering::SeqCst);
        };
        let (route, answer) = match &self.shared.filter {
            Some(filter) => match self.route(filter.as_ref(), &frame) {
                Some((route, answer)) => (route, Some(answer)),
                None => (Route::Default, None),
            },
            None => (Route::Default, None),
        };
        let refuse = |ex: SystemException| {
            if let Some((version, order, request_id, true)) = answer {
                self.reply_exception(reactor, version, order, request_id, &ex);
            }
            done(self);
        };
        // The frame handled on another thread, which then does what this
        // one would have: uncount it, close or read on if due.
        let elsewhere = |frame: Frame| -> Option<Box<dyn FnOnce() + Send>> {
            let (conn, reactor) = (self.me.upgrade()?, reactor.clone());
            Some(Box::new(move || {
                conn.handle(&reactor, frame);
                done(&conn);
                conn.close_if_finished(&reactor);
                if conn.take_resumable() {
                    let (conn, r) = (conn.clone(), reactor.clone());
                    reactor.post(Box::new(move || conn.read_ready(&r)));
                }
            }))
        };
        let here = |frame: Frame| {
            self.handle(reactor, frame);
            done(self);
        };
        match route {
            Route::Lane(name) => {
                let Some(job) = elsewhere(frame) else {
                    return done(self);
                };
                if self.shared.lanes.run(&name, job).is_err() {
                    refuse(SystemException::obj_adapter(
                        minor::UNKNOWN_LANE,
                        CompletionStatus::No,
                    ));
                }
            }
            Route::NewThread => {
                let Some(job) = elsewhere(frame) else {
                    return done(self);
                };
                if run_on_new_thread("armillary-request", job).is_err() {
                    refuse(SystemException::transient(
                        minor::NO_THREAD,
                        CompletionStatus::No,
                    ));
                }
            }
            Route::Reject(ex) => refuse(ex),
            Route::IoThread => here(frame),
            Route::Default => match &self.shared.locality {
                Some(pool) => {
                    let Some(job) = elsewhere(frame) else {
                        return done(self);
                    };
                    // A closing pool gives the job back: it runs here.
                    if let Err(job) = pool.submit(self.stream_id, job) {
                        job();
                    }
                }
                None => here(frame),
            },
        }
    }

    /// What the request filter decides for a Request message, with what
    /// it takes to answer it (`None` for other messages, which run here).
    #[allow(clippy::type_complexity)]
    fn route(
        &self,
        filter: &dyn RequestFilter,
        frame: &Frame,
    ) -> Option<(Route, (GiopVersion, ByteOrder, u32, bool))> {
        let msg = Message::decode(&frame.bytes).ok()?;
        let MessageBody::Request(h) = &msg.body else {
            return None;
        };
        let core = self.core.upgrade()?;
        let key = target_key(&h.target).unwrap_or_default();
        let target = core.registry.describe(&poa_key(&core, &key));
        let info = RequestInfo {
            operation: &h.operation,
            object_key: &key,
            target,
            client: self.peer,
            service_contexts: &h.service_contexts,
            request_id: h.request_id,
            response_expected: h.response_expected(),
        };
        let route = filter.route(&info);
        let answer = (
            msg.header.version,
            msg.header.byte_order,
            h.request_id,
            h.response_expected(),
        );
        Some((route, answer))
    }

    fn handle(&self, reactor: &Arc<Reactor>, frame: Frame) {
        let Ok(msg) = Message::decode(&frame.bytes) else {
            self.message_error(reactor);
            return;
        };
        *self.version.lock() = msg.header.version;
        let Some(core) = self.core.upgrade() else {
            return;
        };
        match &msg.body {
            MessageBody::Request(h) => self.request(reactor, &core, &frame, &msg, h),
            MessageBody::LocateRequest { request_id, target } => {
                let key = target_key(target).unwrap_or_default();
                let (status, forward) = match self.locate(&core, &key) {
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
                    self.send(reactor, &b.finish(false));
                }
            }
            MessageBody::CloseConnection => self.close(reactor),
            MessageBody::MessageError => self.close(reactor),
            // A lone cancel, or one for a request already answered.
            MessageBody::CancelRequest { .. } => {}
            MessageBody::Reply(_) | MessageBody::LocateReply(_) | MessageBody::Fragment { .. } => {
                self.message_error(reactor)
            }
        }
    }

    /// Whether `key` names a live object: a bound plain key or a POA key
    /// whose POA and object exist.
    /// Where the object `key` names is: a bound plain key or a live POA
    /// object is here; a servant manager may forward it.
    fn locate(&self, core: &Arc<OrbCore>, key: &[u8]) -> Located {
        if core.key_table.read().contains_key(key) {
            return Located::Here;
        }
        match core.registry.resolve(key, "_locate") {
            Resolution::Upcall(_) | Resolution::Held(_) => Located::Here,
            Resolution::Forward(to) => Located::Forward(to),
            Resolution::Failed(_) | Resolution::NotAPoaKey => Located::Unknown,
        }
    }

    fn request(
        &self,
        reactor: &Arc<Reactor>,
        core: &Arc<OrbCore>,
        frame: &Frame,
        msg: &Message,
        h: &RequestHeader,
    ) {
        for ctx in &h.service_contexts {
            if let Ok(Some(KnownServiceContext::CodeSets(cs))) = ctx.decode_known() {
                self.set_codesets(cs);
            }
        }
        // The connection's code sets: the defaults until a GIOP 1.1+
        // request announced others, then those for every request on it
        // (a client does the same, whatever the message's version).
        let codesets = *self.codesets.lock();
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
        let key = poa_key(core, &key);
        let resolution = core.registry.resolve(&key, &h.operation);
        let upcall = match resolution {
            Resolution::Upcall(u) => u,
            Resolution::Held(manager) => {
                // Parked until the manager decides; answered then. Until
                // then the connection is not idle.
                let Some(conn) = self.me.upgrade() else {
                    // Unreachable: a thread serving the connection holds it.
                    self.answer_held(reactor, frame.clone(), Admission::Discard);
                    return;
                };
                self.held.fetch_add(1, Ordering::SeqCst);
                let frame = frame.clone();
                let reactor = reactor.clone();
                manager.hold(Box::new(move |admission| {
                    let reactor2 = reactor.clone();
                    reactor.post(Box::new(move || {
                        conn.answer_held(&reactor2, frame, admission);
                        conn.held.fetch_sub(1, Ordering::SeqCst);
                        conn.close_if_finished(&reactor2);
                        if conn.take_resumable() {
                            conn.read_ready(&reactor2);
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
                        self.send(reactor, &b.finish(false));
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
        // The reply body's offset does not depend on its status.
        let body_offset = MessageBuilder::new(
            version,
            order,
            &MessageBody::Reply(ReplyHeader {
                request_id: h.request_id,
                reply_status: ReplyStatus::NoException,
                service_contexts: Vec::new(),
            }),
        )
        .map(|b| b.body_offset())
        .unwrap_or(0);
        let args = frame.reader(msg).with_codesets(codesets);
        let writer = CdrWriter::new(order, version)
            .with_codesets(codesets)
            .with_align_base(body_offset);
        // The servant sees the object id within its POA, not the whole key.
        let object_id = upcall.object_id().clone();
        let mut request = ServerRequest::new(&h.operation, &object_id, args, expected, writer);
        let outcome = {
            let _scope = crate::object::DecodingScope::enter(core.clone());
            upcall.run(&mut request)
        };
        if !expected || h.sync_scope() == SyncScope::WithServer {
            return;
        }
        match outcome {
            Ok(()) => {
                let (kind, w, _) = request.into_reply();
                self.reply(reactor, version, order, h.request_id, kind, w.as_bytes());
            }
            Err(ex) => self.reply_exception(reactor, version, order, h.request_id, &ex),
        }
    }

    /// Carries out the decision a POA manager took on a held request: run
    /// it now, or answer TRANSIENT (discarding) or OBJ_ADAPTER (inactive).
    fn answer_held(&self, reactor: &Arc<Reactor>, frame: Frame, admission: Admission) {
        if admission == Admission::Run {
            self.handle(reactor, frame);
            return;
        }
        let Ok(msg) = Message::decode(&frame.bytes) else {
            return;
        };
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
        let fields = MessageBody::Reply(ReplyHeader {
            request_id,
            reply_status: status,
            service_contexts: Vec::new(),
        });
        if let Ok(mut b) = MessageBuilder::new(version, order, &fields) {
            b.body().write_octets(body);
            self.send(reactor, &b.finish(false));
        }
    }

    fn reply_exception(
        &self,
        reactor: &Arc<Reactor>,
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
        ex: &SystemException,
    ) {
        let fields = MessageBody::Reply(ReplyHeader {
            request_id,
            reply_status: ReplyStatus::SystemException,
            service_contexts: Vec::new(),
        });
        if let Ok(mut b) = MessageBuilder::new(version, order, &fields) {
            let _ = ex.encode_body(b.body());
            self.send(reactor, &b.finish(false));
        }
    }

    /// Writes `bytes`, queueing what the socket will not take now.
    fn send(&self, reactor: &Arc<Reactor>, bytes: &[u8]) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut out = self.outgoing.lock();
        // TLS: seal under the send lock, so records leave in order.
        let mut sealed = Vec::new();
        let bytes = match &self.tls {
            Some(tls) => {
                if tls.seal(bytes, &mut sealed).is_err() {
                    drop(out);
                    self.close(reactor);
                    return;
                }
                &sealed[..]
            }
            None => bytes,
        };
        if !out.is_empty() {
            out.extend(bytes);
            return;
        }
        let mut written = 0;
        while written < bytes.len() {
            // (The stream's lock is let go before `close` takes it.)
            let result = self.stream.lock().write(&bytes[written..]);
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
                Err(_) => {
                    drop(out);
                    self.close(reactor);
                    return;
                }
            }
        }
        if written < bytes.len() {
            out.extend(&bytes[written..]);
            if let (Some(token), ConnStream::Reactive(stream)) =
                (*self.token.lock(), &mut *self.stream.lock())
            {
                let _ = reactor.reregister(stream, token, Interest::READABLE | Interest::WRITABLE);
            }
        }
    }

    fn flush(&self, reactor: &Arc<Reactor>) {
        let mut out = self.outgoing.lock();
        while !out.is_empty() {
            let (front, _) = out.as_slices();
            let r = self.stream.lock().write(front);
            match r {
                Ok(n) if n > 0 => {
                    out.drain(..n);
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

    fn message_error(&self, reactor: &Arc<Reactor>) {
        let version = (*self.version.lock()).min(GiopVersion::V1_2);
        if let Ok(b) = MessageBuilder::new(version, ByteOrder::NATIVE, &MessageBody::MessageError) {
            self.send(reactor, &b.finish(false));
        }
        self.close(reactor);
    }

    /// Sends CloseConnection, then closes.
    pub(crate) fn close_orderly(&self, reactor: &Arc<Reactor>) {
        let version = *self.version.lock();
        if let Ok(b) =
            MessageBuilder::new(version, ByteOrder::NATIVE, &MessageBody::CloseConnection)
        {
            self.send(reactor, &b.finish(false));
        }
        if let Some(tls) = &self.tls {
            tls.send_close_notify();
            self.send(reactor, &[]);
        }
        self.close(reactor);
    }

    fn close(&self, reactor: &Arc<Reactor>) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
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
    }
}
