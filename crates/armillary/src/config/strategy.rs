//! The strategies an ORB runs by: how the server runs requests
//! ([`ConcurrencyModel`]), how a thread waits for a reply
//! ([`WaitStrategy`]), whether requests share connections
//! ([`TransportMux`]) and how a call reaches an object of this process
//! ([`Collocation`]).

/// How the server side runs requests.
///
/// # Order of a connection's requests
///
/// What a client may rely on when it sends several requests on one
/// connection (as an Armillary or omniORB client does for calls to one
/// server from any number of its threads), model by model:
///
/// | model | a connection's requests run |
/// |---|---|
/// | [`SingleThreadedReactive`](Self::SingleThreadedReactive) | one at a time, in the order they arrived |
/// | [`ThreadPerConnection`](Self::ThreadPerConnection) | one at a time, in the order they arrived |
/// | [`ThreadPerConnectionUpTo`](Self::ThreadPerConnectionUpTo) (the default) | one at a time, in the order they arrived |
/// | [`ApplicationThreads`](Self::ApplicationThreads) | in order while one thread drives the ORB; as in a pool when several do |
/// | [`ThreadPool`](Self::ThreadPool) | in no guaranteed order, possibly at the same time |
/// | [`ThreadPerRequest`](Self::ThreadPerRequest) | in no guaranteed order, possibly at the same time |
/// | [`WorkerPool`](Self::WorkerPool) | started in arrival order, then in parallel on the workers (in order with one worker) |
/// | [`ThreadPerObject`](Self::ThreadPerObject) | one object's one at a time in arrival order; different objects' at the same time |
///
/// In the ordered models a oneway request has run before any request
/// the client sends after it on the same connection: a oneway `ping`
/// followed by a two-way `count` sees the ping counted. A thread pool
/// keeps no such order: the thread that read some requests lets go of the
/// connection before it runs them, so another thread may read, run and
/// answer the next request first (that is what lets a servant call back
/// into its own server on the same connection without waiting for
/// itself). A client that needs a oneway to have run before its next
/// request under a pool sends it with `SyncScope::WithTarget`
/// ([`ObjectRef::invoke_oneway_with`](crate::ObjectRef::invoke_oneway_with)),
/// which returns once the upcall is over, or makes the operation two-way.
/// Two-way calls a client makes one after another (each waiting for its
/// reply) are ordered in every model; calls made at the same time from
/// several client threads are ordered in none, and a POA with the
/// `SINGLE_THREAD_MODEL` policy serializes its upcalls without ordering
/// them. Requests a holding POA manager queued are released in arrival
/// order when it is activated, as work posted to the server's event
/// loop: they are not ordered with the requests the connection brings
/// after them. In the ordered models, a request whose upcall waits for a
/// reply (a nested call) lets the waiting thread serve meanwhile (see
/// [`WaitStrategy`]): requests that arrive then, the callbacks of the
/// nested call first of all, run inside that wait, before the waiting
/// request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConcurrencyModel {
    /// One reactor thread reads every connection and runs every upcall.
    /// A connection's requests run in the order they arrived.
    SingleThreadedReactive,
    /// N threads share the reactor; one leads (waits for events) while the
    /// others follow (Leader/Followers). Requests of one connection may
    /// run concurrently and in any order, oneways included (see above):
    /// requests read together run on as many free threads, none waits
    /// behind another's upcall while a thread is free.
    ThreadPool(usize),
    /// Every connection gets a thread that blocks reading it and runs its
    /// requests (the reactor only accepts), in the order they arrived. A
    /// connection beyond
    /// [`max_connection_threads`](super::OrbConfig::max_connection_threads) is
    /// refused.
    ThreadPerConnection,
    /// The default: thread per connection for the first N connections
    /// open at a time (at most
    /// [`max_connection_threads`](super::OrbConfig::max_connection_threads));
    /// one reactor thread reads the connections beyond them and runs their
    /// requests, as [`SingleThreadedReactive`](Self::SingleThreadedReactive)
    /// does. A connection keeps the reader it got when it was accepted.
    /// Every connection's requests run one at a time, in the order they
    /// arrived; different connections' run at the same time (those the
    /// reactor reads, one after another). omniORB's default is the same
    /// shape: while connections are few, each is read by a thread blocked
    /// on it, which answers a request with no event loop in between
    /// (`-ORBConcurrency thread-per-connection:N`).
    ThreadPerConnectionUpTo(usize),
    /// The ORB starts no server threads: the application's own threads run
    /// the reactor in [`Orb::run`](crate::Orb::run) or, one unit of work at
    /// a time, in [`Orb::perform_work`](crate::Orb::perform_work). Requests
    /// are served only while some thread does so, and by any thread of the
    /// application that waits for a reply (with the default
    /// [`WaitStrategy`]): a call this ORB makes to one of its own objects,
    /// or one whose servant calls back, is served by the calling thread
    /// itself. With one
    /// driving thread a connection's requests run in arrival order; with
    /// several, in no guaranteed order, as in a pool.
    ApplicationThreads,
    /// One reactor thread reads; every request runs on a new thread of its
    /// own, at most `cap` at a time (`None`: no cap). A request that
    /// arrives with `cap` upcalls running is answered at once with
    /// TRANSIENT ([`minor::SERVER_BUSY`](crate::minor::SERVER_BUSY),
    /// COMPLETED_NO): the reading thread never waits for an upcall to end.
    /// Requests of one connection run in parallel, in no guaranteed order.
    ThreadPerRequest(Option<usize>),
    /// One reactor thread reads requests into a bounded queue of `queue`
    /// requests; `workers` threads take them in arrival order and run them
    /// (Visibroker's thread pool). A request that finds the queue full is
    /// answered at once with TRANSIENT
    /// ([`minor::SERVER_BUSY`](crate::minor::SERVER_BUSY), COMPLETED_NO).
    WorkerPool {
        /// Threads that run upcalls (at least one).
        workers: usize,
        /// Requests waiting for a worker, at most (at least one).
        queue: usize,
    },
    /// One reactor thread reads; every object (POA and object id) gets a
    /// queue and a thread of its own while it has requests: one object's
    /// requests run one at a time in arrival order, different objects'
    /// in parallel. The thread ends once its object's queue is empty, so
    /// an object that is deactivated, or whose POA is destroyed, keeps no
    /// thread.
    ThreadPerObject,
    /// Locality-aware scheduling (Jacobsen's MICO study): one reactor
    /// thread reads every connection and hands each request to N workers
    /// as a job of its connection's *stream*. A stream stays on one worker
    /// while it has work pending, and runs there in arrival order; an idle
    /// worker takes the waiting stream with the most requests, switching
    /// for fewer than a threshold only after lingering for its own; no
    /// stream waits more than a bounded number of other requests (the
    /// bound and its proof: `transport/server/concurrency/locality.rs`). `-ORBConcurrency
    /// locality:N`.
    Locality(usize),
}

impl ConcurrencyModel {
    /// Requests a worker pool queues when `-ORBConcurrency worker-pool:N`
    /// names no queue length.
    pub const DEFAULT_WORKER_QUEUE: usize = 1024;

    /// Connections the default model gives threads of their own
    /// ([`ThreadPerConnectionUpTo`](Self::ThreadPerConnectionUpTo)).
    pub const DEFAULT_CONNECTION_THREADS: usize = 64;

    /// Parses an `-ORBConcurrency` value (`reactive`, `thread-pool:N`,
    /// `thread-per-connection[:N]`, `application`, `thread-per-request[:CAP]`,
    /// `worker-pool:N[:QUEUE]`, `thread-per-object`, `locality:N`); `None` when it is
    /// none of these or a count is 0.
    ///
    /// ```
    /// use armillary::config::ConcurrencyModel;
    /// assert_eq!(
    ///     ConcurrencyModel::parse("worker-pool:4:100"),
    ///     Some(ConcurrencyModel::WorkerPool { workers: 4, queue: 100 })
    /// );
    /// assert_eq!(
    ///     ConcurrencyModel::parse("thread-per-request:8"),
    ///     Some(ConcurrencyModel::ThreadPerRequest(Some(8)))
    /// );
    /// assert_eq!(ConcurrencyModel::parse("worker-pool:0"), None);
    /// ```
    pub fn parse(value: &str) -> Option<ConcurrencyModel> {
        let count = |n: &str| n.parse::<usize>().ok().filter(|&n| n > 0);
        let mut parts = value.split(':');
        let name = parts.next()?;
        let args: Vec<&str> = parts.collect();
        Some(match (name, args.as_slice()) {
            ("reactive", []) => ConcurrencyModel::SingleThreadedReactive,
            ("thread-per-connection", []) => ConcurrencyModel::ThreadPerConnection,
            ("thread-per-connection", [n]) => ConcurrencyModel::ThreadPerConnectionUpTo(count(n)?),
            ("application", []) => ConcurrencyModel::ApplicationThreads,
            ("thread-per-object", []) => ConcurrencyModel::ThreadPerObject,
            ("thread-pool", [n]) => ConcurrencyModel::ThreadPool(count(n)?),
            ("thread-per-request", []) => ConcurrencyModel::ThreadPerRequest(None),
            ("thread-per-request", [cap]) => ConcurrencyModel::ThreadPerRequest(Some(count(cap)?)),
            ("worker-pool", [n]) => ConcurrencyModel::WorkerPool {
                workers: count(n)?,
                queue: Self::DEFAULT_WORKER_QUEUE,
            },
            ("worker-pool", [n, q]) => ConcurrencyModel::WorkerPool {
                workers: count(n)?,
                queue: count(q)?,
            },
            ("locality", [n]) => ConcurrencyModel::Locality(count(n)?),
            _ => return None,
        })
    }

    /// One instance of every model, with `threads` where a model takes a
    /// thread count: the menu a benchmark compares (`armillary bench
    /// threading`). A new model joins the menu here.
    ///
    /// ```
    /// use armillary::config::ConcurrencyModel;
    /// let menu = ConcurrencyModel::menu(4);
    /// assert!(menu.contains(&ConcurrencyModel::ThreadPool(4)));
    /// assert!(menu.iter().all(|m| m.to_string().parse::<ConcurrencyModel>() == Ok(*m)));
    /// ```
    pub fn menu(threads: usize) -> Vec<ConcurrencyModel> {
        let threads = threads.max(1);
        vec![
            ConcurrencyModel::SingleThreadedReactive,
            ConcurrencyModel::ThreadPool(threads),
            ConcurrencyModel::ThreadPerConnection,
            ConcurrencyModel::ThreadPerConnectionUpTo(Self::DEFAULT_CONNECTION_THREADS),
            ConcurrencyModel::ApplicationThreads,
            ConcurrencyModel::ThreadPerRequest(None),
            ConcurrencyModel::WorkerPool {
                workers: threads,
                queue: Self::DEFAULT_WORKER_QUEUE,
            },
            ConcurrencyModel::ThreadPerObject,
            ConcurrencyModel::Locality(threads),
        ]
    }
}

/// The `-ORBConcurrency` spelling: `reactive`, `thread-pool:4`, …
impl std::fmt::Display for ConcurrencyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConcurrencyModel::SingleThreadedReactive => f.write_str("reactive"),
            ConcurrencyModel::ThreadPool(n) => write!(f, "thread-pool:{n}"),
            ConcurrencyModel::ThreadPerConnection => f.write_str("thread-per-connection"),
            ConcurrencyModel::ThreadPerConnectionUpTo(n) => write!(f, "thread-per-connection:{n}"),
            ConcurrencyModel::ApplicationThreads => f.write_str("application"),
            ConcurrencyModel::ThreadPerRequest(None) => f.write_str("thread-per-request"),
            ConcurrencyModel::ThreadPerRequest(Some(cap)) => {
                write!(f, "thread-per-request:{cap}")
            }
            ConcurrencyModel::WorkerPool { workers, queue } => {
                write!(f, "worker-pool:{workers}:{queue}")
            }
            ConcurrencyModel::ThreadPerObject => f.write_str("thread-per-object"),
            ConcurrencyModel::Locality(n) => write!(f, "locality:{n}"),
        }
    }
}

/// Parses the `-ORBConcurrency` spelling (see
/// [`ConcurrencyModel::parse`]); the error says what was expected.
impl std::str::FromStr for ConcurrencyModel {
    type Err = &'static str;

    fn from_str(v: &str) -> Result<Self, &'static str> {
        ConcurrencyModel::parse(v).ok_or(
            "expected reactive, thread-pool:N, thread-per-connection, application, \
             thread-per-request[:CAP], worker-pool:N[:QUEUE], thread-per-object or locality:N \
             (counts 1 or more)",
        )
    }
}

/// How a thread that waits for a reply waits (`-ORBWaitStrategy`).
///
/// What matters is whether the waiting thread keeps serving: a servant
/// that calls another ORB, which calls back into this one (A calls B, B's
/// servant calls A, A's servant calls B again over the same connections),
/// needs the thread that waits inside the upcall to keep serving this
/// ORB's requests, or the callback finds no thread and the chain hangs.
///
/// | strategy | a thread waiting for a reply |
/// |---|---|
/// | [`Read`](Self::Read) | reads its connection (callers of one connection take turns reading and hand each other their replies) and serves nothing meanwhile |
/// | [`Reactor`](Self::Reactor) | inside an upcall (or when the application's threads drive the ORB): keeps serving while it waits, by running the ORB's reactor (or, with thread per connection, the connection it serves); otherwise as `Read` |
/// | [`LeaderFollowers`](Self::LeaderFollowers) | as `Reactor`, but of several threads waiting on the reactor one leads it and the others sleep until the leader hands them their reply or the lead |
///
/// The default is `LeaderFollowers` for every model
/// ([`OrbConfig::get_wait_strategy`](super::OrbConfig::get_wait_strategy)):
/// nested upcalls then work in each, to any depth. Outside upcalls every
/// strategy waits as `Read` does (the server's own threads serve
/// meanwhile), so a pure client, and any
/// thread that is not serving, keeps the fastest path: the caller reads
/// its own reply. Only a thread waiting inside an upcall (or any waiting
/// thread with application threads) pays for running the reactor.
///
/// `Read` is accepted with a thread pool, where a waiting pool thread
/// leaves the others to serve (a chain of nested calls then works as long
/// as it needs no more pool threads of one ORB at once than the pool has:
/// each level of the chain that the ORB hosts holds one), and with thread
/// per request, where every request has a thread of its own. With every
/// other model the nested request would wait for the very thread that
/// waits on read (the reactive model's only thread, a connection's or an
/// object's thread, the application's thread, the worker of the client's
/// stream or a pool's only worker), so `Read` is refused when the ORB
/// starts ([`OrbOptionError::BadValue`](super::OrbOptionError::BadValue)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitStrategy {
    /// Wait on read: block reading the connection (`read`).
    Read,
    /// Wait on the reactor: serve while waiting inside an upcall
    /// (`reactor`).
    Reactor,
    /// Leader/Followers: serve while waiting, one waiting thread leading
    /// the reactor at a time (`lf`; the default).
    #[default]
    LeaderFollowers,
}

impl WaitStrategy {
    /// Whether a thread waiting this way inside an upcall leaves `model`
    /// able to serve a nested request.
    pub fn is_safe_with(self, model: ConcurrencyModel) -> bool {
        if self != WaitStrategy::Read {
            return true;
        }
        // Every model named: one added to the enum does not compile
        // until it is placed here.
        match model {
            // Other threads serve the nested request: the pool's others,
            // or a thread of its own.
            ConcurrencyModel::ThreadPool(_) | ConcurrencyModel::ThreadPerRequest(_) => true,
            // The nested request waits for the thread that waits on read:
            // the only reactor thread, the connection's thread, the
            // application's thread, the object's thread, or the worker of
            // the client's stream (and, with a worker pool, possibly its
            // only worker).
            ConcurrencyModel::SingleThreadedReactive
            | ConcurrencyModel::ThreadPerConnection
            | ConcurrencyModel::ThreadPerConnectionUpTo(_)
            | ConcurrencyModel::ApplicationThreads
            | ConcurrencyModel::WorkerPool { .. }
            | ConcurrencyModel::ThreadPerObject
            | ConcurrencyModel::Locality(_) => false,
        }
    }

    pub(super) fn option_value(self) -> &'static str {
        match self {
            WaitStrategy::Read => "read",
            WaitStrategy::Reactor => "reactor",
            WaitStrategy::LeaderFollowers => "lf",
        }
    }
}

/// Whether requests to one server share a connection
/// (`-ORBTransportMux`).
///
/// | mux | requests to one endpoint |
/// |---|---|
/// | [`ExclusiveCalls`](Self::ExclusiveCalls) (the default) | a synchronous call (or oneway) as with `Exclusive`; deferred and asynchronous requests (DII deferred, AMI), whose replies the ORB reads for them, share one connection as with `Muxed` |
/// | [`Exclusive`](Self::Exclusive) | one at a time per connection: a request takes an idle cached connection or opens another; at most [`max_connections_per_server`](super::OrbConfig::max_connections_per_server) per endpoint (default 8), beyond which requests share them |
/// | [`Muxed`](Self::Muxed) | share one connection, any number at once; replies are matched to requests by id (fewest connections) |
///
/// Oneways count as busy only while they are written. Exclusive
/// synchronous calls are the default because a caller then reads its own reply
/// from its own connection (no hand-over between threads), and a server
/// reading each connection on a thread of its own (the default model)
/// serves concurrent callers in parallel: omniORB's defaults
/// (`oneCallPerConnection`, `maxGIOPConnectionPerServer`) have the same
/// shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportMux {
    /// One synchronous call at a time per connection, deferred and
    /// asynchronous requests sharing one (`exclusive-calls`; the
    /// default).
    #[default]
    ExclusiveCalls,
    /// One request at a time per connection (`exclusive`).
    Exclusive,
    /// Many requests per connection (`muxed`).
    Muxed,
}

/// How a call reaches an object served in this process
/// (`-ORBCollocation`): the collocation strategies of Schmidt, Wang and
/// Kuhns' *Collocation Optimizations for CORBA*.
///
/// A reference is collocated when one of its IIOP profiles names an
/// endpoint of a running ORB of this process (whichever ORB made or
/// decoded the reference). The strategy is the calling reference's
/// ([`ObjectRef::with_collocation`](crate::ObjectRef::with_collocation)),
/// else its ORB's. Generated stubs then hand the arguments to the servant
/// as Rust values, never encoded; DII requests, DSI and asynchronous
/// (AMH) servants are reached in-process through CDR.
///
/// | strategy | what a collocated call does |
/// |---|---|
/// | [`ThruPoa`](Self::ThruPoa) | goes through the target's POA on the calling thread, keeping every semantic of a remote call: the ORB and POA alive, the POA manager's state, servant managers, `SINGLE_THREAD_MODEL`, the POA's concurrency model where it hands requests to other threads, interceptors, POA Current, LOCATION_FORWARD, oneway sync scopes, the call timeout, a panicking servant as UNKNOWN (the default) |
/// | [`Direct`](Self::Direct) | calls the servant found in the active object map at once, with none of the POA's checks (see `docs/collocation.md` for exactly what it gives up); falls back to `ThruPoa` for objects not in an active object map |
/// | [`None`](Self::None) | over loopback IIOP, as if the object were remote |
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Collocation {
    /// Over loopback IIOP, as if remote (`none`).
    None,
    /// Through the target's POA, without IIOP or CDR (`thru-poa`; the
    /// default).
    #[default]
    ThruPoa,
    /// Straight to the servant (`direct`).
    Direct,
}

impl Collocation {
    /// The option's spelling (`none`, `thru-poa`, `direct`).
    pub fn as_str(self) -> &'static str {
        match self {
            Collocation::None => "none",
            Collocation::ThruPoa => "thru-poa",
            Collocation::Direct => "direct",
        }
    }
}
