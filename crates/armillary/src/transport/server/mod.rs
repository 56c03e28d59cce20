//! The server side of IIOP: listeners and connections registered with the
//! reactor (`connection/`); each request read is resolved through the
//! object adapters (`adapter.rs`: the server depends on that trait, not on
//! the ORB), handed to the concurrency model (`concurrency/`: which
//! threads read and where a request runs), and its reply written back on
//! the same connection.
//!
//! With an idle timeout, a connection that has been quiet that long with no
//! request in progress (none being read, run or held by a POA manager) is
//! closed with CloseConnection: by a round of ticks the reactor runs at
//! that deadline (it has no timer of its own: see `reactor.rs`), or, with
//! thread per connection, by the connection's own thread when its read
//! times out.
//!
//! What one client can make the server hold is bounded (see
//! [`Limits`] and `docs/reliability.md`): a message must be finished
//! within the message timeout and fit the size limits, the partly received
//! messages of all connections share one memory budget, a connection whose
//! requests or queued replies pile up is not read until they drain
//! (back-pressure), and connections beyond the connection limit are closed
//! at once. A peer that closes its sending side (or sends CloseConnection)
//! gets the replies to what it sent, then the connection closes; one that
//! sends what cannot be served (a stream the frame decoder rejects, a
//! message that does not decode, one over the limits) gets the replies to
//! what it sent before it, then MessageError, then the close, in every
//! model (nothing after the bad message runs); out of descriptors, the acceptor
//! waits for a connection to close (or the next tick) instead of spinning.
//!
//! **Invariant:** a connection is read by at most one thread at a time
//! (`ServerConnection::gate`); replies are written whole under the
//! connection's write lock. The requests a thread read run after it has
//! let go of the gate (on that thread or where the concurrency model
//! hands them), so in a thread pool several requests of one connection
//! may run at once (a POA with the SINGLE_THREAD_MODEL policy
//! still serializes its own).

mod adapter;
pub(crate) mod concurrency;
mod connection;
mod lanes;
mod write_queue;

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use armillary_giop::giop::FrameLimits;
use armillary_giop::typecode::DefaultLabelForm;
use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Token};
use parking_lot::Mutex;

pub(crate) use adapter::{Located, ObjectAdapter};
pub(crate) use concurrency::driven_by_application;
use concurrency::{ConnectionThreads, ServerConcurrency};
use connection::{ConnStream, ServerConnection};

use crate::completion::WaitForCompletion;
use crate::config::OrbConfig;
use crate::endpoint::Endpoint;
use crate::error::OrbError;
use crate::net;
use crate::reactor::{EventHandler, Reactor, Readiness};

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
    fn from_config(config: &OrbConfig) -> Limits {
        Limits {
            frame: FrameLimits {
                max_message_size: config.max_message_size,
                max_fragments: config.max_fragments,
                // One connection may hold at most the server's budget.
                max_pending_bytes: config.max_partial_bytes,
                max_reassemblies: super::MAX_REASSEMBLIES,
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
    /// closes or at the next tick (half a second later), so this stays small
    /// while the server is exhausted.
    pub accept_calls: u64,
    /// Of those, the ones that failed (out of descriptors, mostly).
    pub accept_failures: u64,
    /// Connections accepted and closed at once because of
    /// `max_connections` or `max_connection_threads`.
    pub connections_refused: u64,
    /// Connections open now.
    pub connections_open: usize,
    /// Of those, the ones a thread of their own reads (thread per
    /// connection, and the default model's first connections).
    pub connection_threads: usize,
    /// Bytes the partly received messages of every connection hold now.
    pub partial_bytes: usize,
    /// Waits for the server's events (by its threads, by application
    /// threads in `Orb::run` or `Orb::perform_work`, by a thread that
    /// serves while it waits for a reply) that ended because their time
    /// was up, with nothing to do.
    pub timed_out_waits: u64,
    /// Times a reading thread (a connection's own, or a reactor thread),
    /// having read nothing but oneways, woke the pacer thread before it
    /// waited again (see
    /// [`OrbConfig::oneway_pacing`](crate::config::OrbConfig::oneway_pacing)).
    pub pacer_wakeups: u64,
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
    filter: Option<Arc<dyn crate::RequestFilter>>,
    lanes: lanes::Lanes,
    /// Numbers the connections (the streams of `locality:N`).
    next_connection: AtomicU64,
    /// How replies label a union's default member for a client whose
    /// TypeCodes have not shown its form (`-ORBUnionDefaultLabel`).
    default_label: DefaultLabelForm,
    /// Where upcalls are counted, when the ORB serves its metrics
    /// (`-ORBMetricsEndpoint`); `None`: no work per request.
    metrics: Option<Arc<crate::metrics::RequestMetrics>>,
    /// What a reader wakes before it waits again after a read of nothing
    /// but oneways (`-ORBOnewayPacing`; see `crate::pacer`); the reactor
    /// holds it too. `None` when the option is off or the model does not
    /// pace (`ServerConcurrency::paces_oneways`).
    pacer: Option<Arc<crate::pacer::Pacer>>,
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

    fn stats(&self, reactor: &Reactor) -> ServerStats {
        ServerStats {
            timed_out_waits: reactor.timed_out_waits(),
            accept_calls: self.accept_calls.load(Ordering::SeqCst),
            accept_failures: self.accept_failures.load(Ordering::SeqCst),
            connections_refused: self.refused.load(Ordering::SeqCst),
            connections_open: self.open.load(Ordering::SeqCst),
            connection_threads: self.threads.load(Ordering::SeqCst),
            partial_bytes: self.partial_bytes.load(Ordering::SeqCst),
            pacer_wakeups: self.pacer.as_ref().map_or(0, |p| p.wakeups()),
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
    /// The concurrency model: who reads, and where requests run.
    concurrency: Arc<dyn ServerConcurrency>,
    /// Told when the reactor fails.
    adapter: Weak<dyn ObjectAdapter>,
}

struct Acceptor {
    /// `None` once the server has stopped: the port is closed.
    listener: Mutex<Option<TcpListener>>,
    /// The listener's reactor token.
    token: Mutex<Option<Token>>,
    /// For a TLS endpoint, the configuration of its sessions.
    tls: Option<Arc<rustls::ServerConfig>>,
    adapter: Weak<dyn ObjectAdapter>,
    concurrency: Arc<dyn ServerConcurrency>,
    server: Weak<Server>,
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

impl Server {
    /// Opens the listeners `config` asks for and starts the threads of its
    /// concurrency model; requests go through `adapter`, and upcalls are
    /// counted in `metrics` when there are any.
    pub(crate) fn start(
        config: &OrbConfig,
        adapter: Weak<dyn ObjectAdapter>,
        metrics: Option<Arc<crate::metrics::RequestMetrics>>,
    ) -> Result<Arc<Server>, OrbError> {
        let concurrency = concurrency::for_config(config).map_err(|source| OrbError::Listen {
            endpoint: "thread".into(),
            source,
        })?;
        let reactor = Reactor::new().map_err(|source| OrbError::Listen {
            endpoint: "reactor".into(),
            source,
        })?;
        let shared = Arc::new(Shared {
            limits: Limits::from_config(config),
            reactor: Arc::downgrade(&reactor),
            acceptors: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
            partial_bytes: AtomicUsize::new(0),
            accept_calls: AtomicU64::new(0),
            accept_failures: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            filter: config.request_filter.0.clone(),
            default_label: config.union_default_label.into(),
            lanes: lanes::Lanes::start(&config.lanes).map_err(|source| OrbError::Listen {
                endpoint: "lane".into(),
                source,
            })?,
            next_connection: AtomicU64::new(0),
            metrics,
            pacer: (config.oneway_pacing && concurrency.paces_oneways())
                .then(|| Arc::new(crate::pacer::Pacer::new())),
        });
        if let Some(pacer) = &shared.pacer {
            reactor.set_pacer(pacer.clone());
        }
        let mut endpoints = config.endpoints.clone();
        let tls_endpoints = &config.tls.endpoints;
        let tls_config = if tls_endpoints.is_empty() {
            None
        } else {
            Some(config.tls.server_config()?)
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
            let hosts = match &config.publish_host {
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
            concurrency: concurrency.clone(),
            adapter: adapter.clone(),
        });
        for (listener, tls) in listeners {
            let acceptor = Arc::new(Acceptor {
                listener: Mutex::new(Some(listener)),
                token: Mutex::new(None),
                tls,
                adapter: adapter.clone(),
                concurrency: concurrency.clone(),
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
        let threads = concurrency.reactor_threads();
        for i in 0..threads {
            let driver = server.clone();
            // A reactor thread serves every client while it waits, so it
            // may nest a wait per waiting client: a stack for that many.
            let handle = std::thread::Builder::new()
                .name(format!("armillary-reactor-{i}"))
                .stack_size(crate::thread_role::DEEP_SERVING_STACK)
                .spawn(move || {
                    crate::thread_role::allow_deep_serving();
                    while let Ok(true) = driver.drive(None) {}
                })
                .map_err(|source| OrbError::Listen {
                    endpoint: "thread".into(),
                    source,
                })?;
            server.threads.lock().push(handle);
        }
        Ok(server)
    }

    /// One turn of an event loop: a posted task or one event (waiting up
    /// to `wait` for one, `None`: until something happens), then the
    /// round of ticks if due. `Ok(false)` once the server is stopping: the
    /// loop should end; an error when the reactor failed (recorded: see
    /// [`failed`](Self::failed)).
    pub(crate) fn drive(&self, wait: Option<Duration>) -> std::io::Result<bool> {
        if self.reactor.is_stopping() {
            return Ok(false);
        }
        self.reactor.turn(wait).inspect_err(|_| self.fail())?;
        self.reactor.tick_if_due();
        Ok(!self.reactor.is_stopping())
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
        if let Some(adapter) = self.adapter.upgrade() {
            adapter.server_failed();
        }
    }

    /// The reactor (a thread waiting for a reply may run it: see
    /// `transport::wait`).
    pub(crate) fn reactor(&self) -> &Arc<Reactor> {
        &self.reactor
    }

    /// Whether the reactor failed: the server can serve nothing more.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Whether the application's threads drive this server (`Orb::run`,
    /// `Orb::perform_work`) rather than its own.
    pub(crate) fn driven_by_application(&self) -> bool {
        self.concurrency.driven_by_application()
    }

    /// Whether a request, connection event, posted task or idle check is
    /// waiting for an application thread to handle it
    /// (`Orb::work_pending`): never when the server's own threads do the
    /// work.
    pub(crate) fn work_pending(&self) -> bool {
        self.driven_by_application()
            && !self.reactor.is_stopping()
            && self.reactor.work_pending().unwrap_or(false)
    }

    /// Handles one unit of work on the calling thread, waiting up to
    /// `wait` for one to arrive (`Orb::perform_work`); an error when the
    /// reactor failed. When the server's own threads do the work, it only
    /// yields the thread.
    pub(crate) fn perform_work(&self, wait: Duration) -> std::io::Result<()> {
        if !self.driven_by_application() {
            std::thread::yield_now();
            return Ok(());
        }
        if !self.reactor.is_stopping() {
            self.reactor
                .perform_one(wait)
                .inspect_err(|_| self.fail())?;
        }
        Ok(())
    }

    /// What the server has done and holds now.
    pub(crate) fn stats(&self) -> ServerStats {
        self.shared.stats(&self.reactor)
    }

    /// Runs `request` (a collocated call's, resolved in this process) as
    /// the concurrency model says.
    pub(crate) fn schedule(&self, request: concurrency::ResolvedRequest) {
        self.concurrency.schedule(request);
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
            // The requests the lanes hold run to their end first.
            self.shared.lanes.join();
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
        // The model's own threads, if any (after the reactor's: those may
        // still hand it work until they end).
        self.concurrency.stop(wait);
        self.shared.lanes.close();
        // What is left (handlers, posted work) would otherwise keep the
        // reactor, and the sockets it holds, alive through itself.
        self.reactor.clear();
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
                        reactor.tick_at(std::time::Instant::now() + crate::reactor::TICK_INTERVAL);
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
        let threads = self.concurrency.connection_threads();
        let running = self.shared.threads.load(Ordering::SeqCst);
        let per_thread = threads.gives_thread(running, limits.max_connection_threads);
        let full = self.shared.open.load(Ordering::SeqCst) >= limits.max_connections
            || (threads == ConnectionThreads::Every && running >= limits.max_connection_threads);
        if full {
            // Closed at once rather than left in the backlog.
            self.shared.refused.fetch_add(1, Ordering::SeqCst);
            let (limit, value) =
                if self.shared.open.load(Ordering::SeqCst) >= limits.max_connections {
                    ("-ORBMaxConnections", limits.max_connections)
                } else {
                    ("-ORBMaxConnectionThreads", limits.max_connection_threads)
                };
            crate::trace::connection_refused(|| stream.peer_addr().ok(), limit, value);
            return;
        }
        let _ = stream.set_nodelay(true);
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
        let conn = ServerConnection::new(
            stream,
            blocking_reader,
            self.shared.clone(),
            tls,
            self.adapter.clone(),
            self.concurrency.clone(),
        );
        if conn.register(reactor).is_err() {
            return;
        }
        crate::trace::connection_opened(
            crate::trace::Side::Server,
            crate::trace::Addr(conn.peer()),
            None,
            self.tls.is_some(),
        );
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
                    // A reply this thread waits for inside an upcall: the
                    // wait serves this connection meanwhile.
                    let _serving = {
                        let (conn, reactor) = (conn2.clone(), reactor2.clone());
                        crate::thread_role::serve_while_waiting(move || {
                            conn.serve_available(&reactor)
                        })
                    };
                    conn2.serve_blocking(&reactor2);
                    conn2.shared().threads.fetch_sub(1, Ordering::SeqCst);
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
