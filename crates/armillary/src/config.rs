//! ORB configuration: the builder API and the `-ORB…` command-line options
//! that fill it.
//!
//! | option | meaning |
//! |---|---|
//! | `-ORBListenEndpoints iiop://host:port` (also `-ORBEndpoint giop:tcp:host:port`) | where the server listens; repeatable; port 0 picks one; host `0.0.0.0`/`::` listens on every interface and publishes the host's real addresses |
//! | `-ORBEndpointPublish host` | the host name or address to put in IORs |
//! | `-ORBInitRef Name=URL` | what `resolve_initial_references("Name")` returns |
//! | `-ORBDefaultInitRef URL` | prefix for names not given by `-ORBInitRef` (`URL/Name`) |
//! | `-ORBGIOPVersion 1.0\|1.1\|1.2` | the highest GIOP version to speak (default 1.2) |
//! | `-ORBNativeCharCodeSet UTF-8\|ISO-8859-1` | native char code set |
//! | `-ORBNativeWCharCodeSet UTF-16\|UCS-2` | native wchar code set |
//! | `-ORBConcurrency reactive\|thread-pool:N\|thread-per-connection[:N]\|application\|thread-per-request[:CAP]\|worker-pool:N[:QUEUE]\|thread-per-object\|locality:N` | server concurrency model; `thread-pool`, `thread-per-request` and `worker-pool` (and `application` with several driving threads) do not keep the order of a connection's requests, oneways included (see [`ConcurrencyModel`]) |
//! | `-ORBIdleTimeout DURATION` | close connections idle this long (default 180s; 0: never; a bare number is seconds) |
//! | `-ORBHoldLimit N` | requests a holding POA manager queues |
//! | `-ORBClientCallTimeout DURATION` | the longest a call this ORB makes may take, from its start to its reply (0: no limit, the default); a late call fails with TIMEOUT (`minor::CALL_TIMEOUT`); a thread ([`CallTimeout`](crate::CallTimeout)) or a reference ([`ObjectRef::with_call_timeout`](crate::ObjectRef::with_call_timeout)) may override it; a bare number is milliseconds |
//! | `-ORBLane NAME:THREADS` | a lane, a pool of threads a [`RequestFilter`](crate::RequestFilter) may route requests to; repeatable |
//! | `-ORBClientMaxOutstanding N` (also `-ORBMaxOutstanding`) | requests this ORB may have awaiting their reply on one client connection; a caller beyond blocks until one is answered or its call timeout passes (then TIMEOUT, `minor::CALL_TIMEOUT`, COMPLETED_NO) (default 1024) |
//! | `-ORBCollocation none\|thru-poa\|direct` | how a call reaches an object this process serves: through its POA without IIOP or CDR (`thru-poa`, the default), straight to the servant (`direct`), or over loopback IIOP as if remote (`none`); a reference may override it (see [`Collocation`]) |
//! | `-ORBTransportMux exclusive-calls\|exclusive\|muxed` | whether each synchronous call to a server takes a connection of its own, idle ones reused, deferred and asynchronous requests sharing one (`exclusive-calls`, the default), every request takes one of its own (`exclusive`), or all share one (`muxed`); at most `-ORBMaxConnectionsPerServer` per server, beyond which requests share them; see [`TransportMux`] |
//! | `-ORBMaxConnectionsPerServer N` | connections the exclusive transports open to one server (default 8), as omniORB's `maxGIOPConnectionPerServer` |
//! | `-ORBUnionDefaultLabel discriminator\|zero-octet` | how this ORB's TypeCodes label a union's default member for a peer whose form it does not know: a zero of the discriminator's type (the default; omniORB and TAO read it) or the zero octet (JacORB and the JDK ORB read it); see [`UnionDefaultLabel`] |
//! | `-ORBWaitStrategy read\|reactor\|lf` | how a thread waits for a reply: reading its connection, or serving the ORB meanwhile inside upcalls (so that nested callbacks never deadlock); default `lf`; `read` is accepted only with the thread-pool and thread-per-request models, where another thread serves a nested call (see [`WaitStrategy`]) |
//! | `-ORBListenEndpoints iiops://host:port` (also `ssliop://host:port`, `-ORBEndpoint giop:ssl:host:port`) | where the server listens for IIOP over TLS; repeatable |
//! | `-ORBTlsCert FILE` | this ORB's certificate chain (PEM; may hold the key too) |
//! | `-ORBTlsKey FILE` | this ORB's private key (PEM) |
//! | `-ORBTlsCa FILE` | trusted roots (PEM) for servers' and clients' certificates; repeatable; with it, references that announce TLS are called over TLS only |
//! | `-ORBTlsClientAuth none\|optional\|required` | whether TLS endpoints ask clients for a certificate (default none) |
//! | `-ORBTlsRequire yes\|no` | call only over TLS: a reference without a TLS endpoint raises NO_PERMISSION (`minor::TLS_REQUIRED`) |
//! | `-ORBMessageTimeout DURATION` | time a client has to finish sending a message it has begun; then MessageError and close (default 5s; 0: no limit; a bare number is seconds) |
//! | `-ORBMaxMessageSize BYTES` (also `-ORBgiopMaxMsgSize`) | largest message (reassembled) the ORB accepts or sends: a larger request gets MessageError from the server; a larger reply ends the client's call with MARSHAL (`minor::MESSAGE_SIZE_EXCEEDED`, COMPLETED_YES) and closes the connection; a larger request is not sent (MARSHAL, COMPLETED_NO) (default 64M) |
//! | `-ORBMaxPartialBytes BYTES` | memory all partly received messages of the server may hold together; the connection that goes beyond gets MessageError (default 256M) |
//! | `-ORBMaxFragments N` | most fragments one message may come in (default 16384) |
//! | `-ORBMaxOutstandingRequests N` | requests of one connection read and not answered yet; beyond, the server stops reading it (default 256) |
//! | `-ORBMaxQueuedReplyBytes BYTES` | reply bytes queued for a client that does not read them; beyond, the server stops reading it (default 16M) |
//! | `-ORBMaxConnections N` | connections open at once; beyond, a new connection is closed at once (default 4096) |
//! | `-ORBMaxConnectionThreads N` | thread per connection: most connection threads; beyond, a new connection is closed at once (default 1024) |
//! | `-ORBTraceLevel 0..5` | how much the ORB reports through the `tracing` crate where the application installs a subscriber that honours it (the `armillary` command and the examples do): 0 nothing (the default), 1 errors, 2 warnings, 3 connections, 4 requests, 5 everything (see [`TraceLevel`] and [`crate::trace`]); the ORB itself installs no subscriber, and `RUST_LOG` wins where set |
//! | `-ORBMetricsEndpoint HOST:PORT` | serve the server's counters and per-operation request metrics in the Prometheus text format at `http://HOST:PORT/metrics` (port 0 picks one: [`Orb::metrics_endpoint`](crate::Orb::metrics_endpoint)); none by default (see [`crate::metrics`]) |
//!
//! Sizes take a `K`, `M` or `G` suffix (powers of 1,024). Durations take
//! a unit, `us`, `ms`, `s` or `m`, and may be fractional (`200ms`, `5s`,
//! `2m`, `1.5s`); a bare number is in the option's historical unit,
//! seconds except for `-ORBClientCallTimeout`'s milliseconds. A bad value
//! is an [`OrbOptionError::BadValue`] naming the option, the value and
//! what is accepted:
//!
//! ```
//! use armillary::config::OrbConfig;
//!
//! let mut config = OrbConfig::new();
//! config.apply_args(["-ORBIdleTimeout", "2m", "-ORBClientCallTimeout", "1.5s"]).unwrap();
//! assert_eq!(config.get_idle_timeout(), Some(std::time::Duration::from_secs(120)));
//! assert_eq!(config.get_call_timeout(), Some(std::time::Duration::from_millis(1500)));
//!
//! let error = config.apply_args(["-ORBIdleTimeout", "5x"]).unwrap_err();
//! assert!(error.to_string().starts_with(r#"bad value "5x" for -ORBIdleTimeout: expected a duration"#));
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use armillary_giop::cdr::codeset::{self, CodeSetComponent, CodeSetComponentInfo};
use armillary_giop::typecode::DefaultLabelForm;
use armillary_giop::GiopVersion;

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
    /// [`max_connection_threads`](OrbConfig::max_connection_threads) is
    /// refused.
    ThreadPerConnection,
    /// The default: thread per connection for the first N connections
    /// open at a time (at most
    /// [`max_connection_threads`](OrbConfig::max_connection_threads));
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
/// ([`OrbConfig::get_wait_strategy`]): nested upcalls then work in each,
/// to any depth. Outside upcalls every strategy waits as `Read` does (the
/// server's own threads serve meanwhile), so a pure client, and any
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
/// starts ([`OrbOptionError::BadValue`]).
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

    fn option_value(self) -> &'static str {
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
/// | [`Exclusive`](Self::Exclusive) | one at a time per connection: a request takes an idle cached connection or opens another; at most [`max_connections_per_server`](OrbConfig::max_connections_per_server) per endpoint (default 8), beyond which requests share them |
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

/// How this ORB's TypeCodes label a union's default member when it does
/// not know which form the receiver reads (`-ORBUnionDefaultLabel`).
///
/// ORBs disagree: omniORB and TAO read a value of the discriminator's
/// type there, JacORB and the JDK ORB the zero octet, and neither reads
/// the other's form wherever the two put the member's name at different
/// places (see `armillary_giop::typecode` for the sources). So a request
/// takes the form its target's ORB reads, known from the `TAG_ORB_TYPE`
/// component of the reference, and a reply the form the client's own
/// TypeCodes showed on the connection; this setting is for the rest:
/// references without an ORB type (a `corbaloc:` URL, say) or from
/// Armillary (which reads both), and replies to clients whose TypeCodes
/// have not shown their form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnionDefaultLabel {
    /// A zero of the discriminator's type (`discriminator`; the default).
    #[default]
    Discriminator,
    /// The zero octet (`zero-octet`).
    ZeroOctet,
}

impl From<UnionDefaultLabel> for DefaultLabelForm {
    fn from(label: UnionDefaultLabel) -> DefaultLabelForm {
        match label {
            UnionDefaultLabel::Discriminator => DefaultLabelForm::DiscriminatorTyped,
            UnionDefaultLabel::ZeroOctet => DefaultLabelForm::ZeroOctet,
        }
    }
}

/// One listening endpoint: a host name or address and a port.
///
/// ```
/// use armillary::config::ListenEndpoint;
/// let any = ListenEndpoint::new("0.0.0.0", 2809);
/// assert_eq!((any.host(), any.port()), ("0.0.0.0", 2809));
/// let v6 = ListenEndpoint::from(std::net::SocketAddr::from(([0u16, 0, 0, 0, 0, 0, 0, 1], 0)));
/// assert_eq!(v6.host(), "::1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ListenEndpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl ListenEndpoint {
    /// An endpoint on `host` (a name or address; `0.0.0.0` or `::` for
    /// every interface) and `port` (0 lets the system choose).
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        ListenEndpoint {
            host: host.into(),
            port,
        }
    }

    /// The host name or address to bind.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port; 0 lets the system choose.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl From<std::net::SocketAddr> for ListenEndpoint {
    fn from(addr: std::net::SocketAddr) -> Self {
        ListenEndpoint::new(addr.ip().to_string(), addr.port())
    }
}

/// How much the ORB reports through the [`tracing`](https://docs.rs/tracing)
/// crate (`-ORBTraceLevel 0..5`, in the spirit of omniORB's
/// `-ORBtraceLevel`): each level adds the events of a `tracing` level (see
/// [`crate::trace`] for every span and event).
///
/// The ORB emits its events whatever this says, and a library installs no
/// subscriber: this is what an application that installs one reads to
/// choose its filter ([`directive`](Self::directive)), as the `armillary`
/// command and the examples do, a `RUST_LOG` filter taking precedence.
///
/// ```
/// use armillary::config::{OrbConfig, TraceLevel};
///
/// let mut config = OrbConfig::new();
/// config.apply_args(["-ORBTraceLevel", "4"]).unwrap();
/// assert_eq!(config.get_trace_level(), TraceLevel::Requests);
/// assert_eq!(config.get_trace_level().directive(), "armillary=debug");
/// assert_eq!(TraceLevel::default(), TraceLevel::Off);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum TraceLevel {
    /// 0: nothing (the default).
    #[default]
    Off,
    /// 1: errors (`ERROR`): a servant that panicked.
    Errors,
    /// 2: warnings too (`WARN`): connections refused or broken,
    /// MessageErrors, limits reached, dropped AMH responders, AMI replies
    /// nobody handled.
    Warnings,
    /// 3: connections too (`INFO`): opened and closed, the metrics
    /// endpoint.
    Connections,
    /// 4: requests too (`DEBUG`): a span per request on each side, with
    /// its outcome; back-pressure.
    Requests,
    /// 5: everything (`TRACE`).
    Everything,
}

impl TraceLevel {
    /// Every level, by number.
    const ALL: [TraceLevel; 6] = [
        TraceLevel::Off,
        TraceLevel::Errors,
        TraceLevel::Warnings,
        TraceLevel::Connections,
        TraceLevel::Requests,
        TraceLevel::Everything,
    ];

    /// The level numbered `number` (0 to 5), as `-ORBTraceLevel` takes it.
    pub fn from_number(number: u8) -> Option<TraceLevel> {
        Self::ALL.get(usize::from(number)).copied()
    }

    /// The level's number, 0 to 5.
    pub fn number(self) -> u8 {
        match self {
            TraceLevel::Off => 0,
            TraceLevel::Errors => 1,
            TraceLevel::Warnings => 2,
            TraceLevel::Connections => 3,
            TraceLevel::Requests => 4,
            TraceLevel::Everything => 5,
        }
    }

    /// The `tracing` filter directive that shows the ORB's events of this
    /// level (in the syntax of `RUST_LOG` and `tracing-subscriber`'s
    /// `EnvFilter`): `armillary=off` … `armillary=trace`.
    pub fn directive(self) -> &'static str {
        match self {
            TraceLevel::Off => "armillary=off",
            TraceLevel::Errors => "armillary=error",
            TraceLevel::Warnings => "armillary=warn",
            TraceLevel::Connections => "armillary=info",
            TraceLevel::Requests => "armillary=debug",
            TraceLevel::Everything => "armillary=trace",
        }
    }
}

/// The highest GIOP version an ORB speaks and publishes in its references
/// (`-ORBGIOPVersion`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum MaxGiopVersion {
    /// GIOP 1.0: no fragments, no code set negotiation; IIOP 1.0 profiles
    /// carry no components (so no TLS endpoints).
    V1_0,
    /// GIOP 1.1: fragments, code sets.
    V1_1,
    /// GIOP 1.2: interleaved fragments, bidirectional-ready headers.
    #[default]
    V1_2,
}

/// The wire version, as the messages and profiles of
/// [`armillary::giop`](crate::giop) spell it.
impl From<MaxGiopVersion> for GiopVersion {
    fn from(version: MaxGiopVersion) -> GiopVersion {
        match version {
            MaxGiopVersion::V1_0 => GiopVersion::V1_0,
            MaxGiopVersion::V1_1 => GiopVersion::V1_1,
            MaxGiopVersion::V1_2 => GiopVersion::V1_2,
        }
    }
}

/// The setting for a wire version (an IOR profile's, say); a version
/// Armillary does not speak is given back as the error.
///
/// ```
/// use armillary::giop::GiopVersion;
/// use armillary::config::MaxGiopVersion;
/// assert_eq!(MaxGiopVersion::try_from(GiopVersion::V1_1), Ok(MaxGiopVersion::V1_1));
/// let v1_3 = GiopVersion { major: 1, minor: 3 };
/// assert_eq!(MaxGiopVersion::try_from(v1_3), Err(v1_3));
/// ```
impl TryFrom<GiopVersion> for MaxGiopVersion {
    type Error = GiopVersion;

    fn try_from(version: GiopVersion) -> Result<Self, GiopVersion> {
        match version {
            GiopVersion::V1_0 => Ok(MaxGiopVersion::V1_0),
            GiopVersion::V1_1 => Ok(MaxGiopVersion::V1_1),
            GiopVersion::V1_2 => Ok(MaxGiopVersion::V1_2),
            other => Err(other),
        }
    }
}

impl MaxGiopVersion {
    /// The version an `-ORBGIOPVersion` value names.
    fn parse(value: &str) -> Option<Self> {
        match value {
            "1.0" => Some(MaxGiopVersion::V1_0),
            "1.1" => Some(MaxGiopVersion::V1_1),
            "1.2" => Some(MaxGiopVersion::V1_2),
            _ => None,
        }
    }
}

/// The native code set for `char` and `string` data
/// (`-ORBNativeCharCodeSet`). The other one is offered as a conversion
/// code set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CharCodeSet {
    /// UTF-8 (`0x05010001`).
    #[default]
    Utf8,
    /// ISO 8859-1, Latin-1 (`0x00010001`).
    Iso8859_1,
}

impl CharCodeSet {
    const ALL: [CharCodeSet; 2] = [CharCodeSet::Utf8, CharCodeSet::Iso8859_1];

    /// The OSF registry id.
    fn id(self) -> u32 {
        match self {
            CharCodeSet::Utf8 => codeset::UTF_8,
            CharCodeSet::Iso8859_1 => codeset::ISO_8859_1,
        }
    }

    /// The code set an `-ORBNativeCharCodeSet` value names.
    fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_uppercase().as_str() {
            "UTF-8" | "UTF8" => Some(CharCodeSet::Utf8),
            "ISO-8859-1" | "ISO8859-1" | "LATIN-1" => Some(CharCodeSet::Iso8859_1),
            _ => None,
        }
    }
}

/// The native code set for `wchar` and `wstring` data
/// (`-ORBNativeWCharCodeSet`). The other one is offered as a conversion
/// code set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcharCodeSet {
    /// UTF-16 (`0x00010109`).
    #[default]
    Utf16,
    /// UCS-2, level 1 (`0x00010100`).
    Ucs2,
}

impl WcharCodeSet {
    const ALL: [WcharCodeSet; 2] = [WcharCodeSet::Utf16, WcharCodeSet::Ucs2];

    /// The OSF registry id.
    fn id(self) -> u32 {
        match self {
            WcharCodeSet::Utf16 => codeset::UTF_16,
            WcharCodeSet::Ucs2 => codeset::UCS_2,
        }
    }

    /// The code set an `-ORBNativeWCharCodeSet` value names.
    fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_uppercase().as_str() {
            "UTF-16" | "UTF16" => Some(WcharCodeSet::Utf16),
            "UCS-2" | "UCS2" => Some(WcharCodeSet::Ucs2),
            _ => None,
        }
    }
}

/// A code set component naming `native` and offering the rest of `all`
/// for conversion.
fn code_set_component(native: u32, all: impl IntoIterator<Item = u32>) -> CodeSetComponent {
    CodeSetComponent {
        native_code_set: native,
        conversion_code_sets: all.into_iter().filter(|c| *c != native).collect(),
    }
}

/// Everything an ORB is configured with: build it with the chained
/// setters below, or with the `-ORB…` options ([`apply_args`](Self::apply_args),
/// which [`Orb::init`](crate::Orb::init) calls), or both.
///
/// Every setter takes the configuration by value and returns it, so they
/// chain; each takes a value that is already typed and so cannot fail
/// (parsing text is the business of the `-ORB…` options). Collections are
/// added to one item at a time ([`listen`](Self::listen),
/// [`initial_reference`](Self::initial_reference)). Read a value back
/// with the getter of the same name with `get_` in front, as
/// [`std::process::Command`] does. The defaults are those of the options
/// table in the [module documentation](self).
///
/// ```
/// use std::time::Duration;
/// use armillary::config::{ConcurrencyModel, ListenEndpoint, MaxGiopVersion, OrbConfig};
///
/// let mut config = OrbConfig::new()
///     .listen(ListenEndpoint::new("127.0.0.1", 0))
///     .concurrency(ConcurrencyModel::ThreadPool(4))
///     .max_giop_version(MaxGiopVersion::V1_1)
///     .call_timeout(Duration::from_secs(2))
///     .idle_timeout(None)
///     .max_message_size(1 << 20)
///     .initial_reference("NameService", "corbaloc::localhost:2809/NameService");
/// // Command-line options apply on top and hand back the other arguments.
/// let rest = config.apply_args(["app", "-ORBMaxConnections", "64"])?;
/// assert_eq!(rest, ["app"]);
/// assert_eq!(config.get_concurrency(), ConcurrencyModel::ThreadPool(4));
/// assert_eq!(config.get_call_timeout(), Some(Duration::from_secs(2)));
/// assert_eq!(config.get_max_connections(), 64);
/// assert_eq!(config.get_endpoints(), [ListenEndpoint::new("127.0.0.1", 0)]);
/// let orb = armillary::Orb::with_config(config)?;
/// # drop(orb);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OrbConfig {
    /// Where to listen; empty means 127.0.0.1 on a system-chosen port,
    /// opened the first time a server object is created.
    pub(crate) endpoints: Vec<ListenEndpoint>,
    /// Host to publish in IORs instead of the bound address.
    pub(crate) publish_host: Option<String>,
    /// `-ORBInitRef` entries.
    pub(crate) initial_references: HashMap<String, String>,
    /// `-ORBDefaultInitRef`.
    pub(crate) default_initial_reference: Option<String>,
    /// Highest GIOP version spoken (and published); see
    /// [`giop_version`](Self::giop_version).
    pub(crate) max_giop_version: MaxGiopVersion,
    /// Native code set for char data; see [`code_sets`](Self::code_sets).
    pub(crate) char_code_set: CharCodeSet,
    /// Native code set for wchar data.
    pub(crate) wchar_code_set: WcharCodeSet,
    /// Server concurrency model.
    pub(crate) concurrency: ConcurrencyModel,
    /// Idle connections are closed (with CloseConnection) after this long
    /// (`None`: never).
    pub(crate) idle_timeout: Option<Duration>,
    // The server's limits on what one client can make it hold; see
    // `docs/reliability.md` and the setters' docs.
    pub(crate) message_timeout: Option<Duration>,
    pub(crate) max_message_size: usize,
    pub(crate) max_partial_bytes: usize,
    pub(crate) max_fragments: usize,
    pub(crate) max_outstanding_requests: usize,
    pub(crate) max_queued_reply_bytes: usize,
    pub(crate) max_connections: usize,
    pub(crate) max_connection_threads: usize,
    /// Most requests a holding POA manager queues.
    pub(crate) hold_limit: usize,
    /// Most LOCATION_FORWARD hops one invocation follows.
    pub(crate) max_forwards: u32,
    /// IIOP over TLS (see [`crate::tls`]).
    pub(crate) tls: crate::tls::TlsConfig,
    /// The longest a call this ORB makes may take (`None`: no limit).
    pub(crate) call_timeout: Option<Duration>,
    /// Most requests awaiting their reply on one client connection.
    pub(crate) client_max_outstanding: usize,
    /// How a thread waits for a reply.
    pub(crate) wait_strategy: WaitStrategy,
    /// Whether requests share connections.
    pub(crate) transport_mux: TransportMux,
    /// Most connections the exclusive transport opens to one endpoint.
    pub(crate) max_connections_per_server: usize,
    pub(crate) collocation: Collocation,
    /// How TypeCodes label a union's default member for a peer whose
    /// form is not known.
    pub(crate) union_default_label: UnionDefaultLabel,
    /// The threading framework's filter (see [`crate::RequestFilter`]).
    pub(crate) request_filter: crate::request_filter::FilterSlot,
    /// The lanes a request filter may route requests to.
    pub(crate) lanes: Vec<crate::request_filter::LaneConfig>,
    /// The ORB initializers that register portable interceptors (set with
    /// `OrbConfig::orb_initializer`, in `crate::interceptors`).
    pub(crate) orb_initializers: InitializerSlot,
    /// How much an application's subscriber shows (`-ORBTraceLevel`).
    pub(crate) trace_level: TraceLevel,
    /// Where the metrics are served (`-ORBMetricsEndpoint`), if anywhere.
    pub(crate) metrics_endpoint: Option<ListenEndpoint>,
}

/// The ORB initializers an [`OrbConfig`] holds, each an
/// `Arc<dyn interceptors::OrbInitializer>` behind `Any`: the trait belongs
/// to a layer above this one (it names references), which alone makes and
/// reads these. Two lists are equal when they hold the same initializers.
#[derive(Clone, Default)]
pub(crate) struct InitializerSlot(pub(crate) Vec<Arc<dyn std::any::Any + Send + Sync>>);

impl std::fmt::Debug for InitializerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ORB initializer(s)", self.0.len())
    }
}

impl PartialEq for InitializerSlot {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

impl Eq for InitializerSlot {}

impl Default for OrbConfig {
    fn default() -> Self {
        OrbConfig {
            endpoints: Vec::new(),
            publish_host: None,
            initial_references: HashMap::new(),
            default_initial_reference: None,
            max_giop_version: MaxGiopVersion::default(),
            char_code_set: CharCodeSet::default(),
            wchar_code_set: WcharCodeSet::default(),
            concurrency: ConcurrencyModel::ThreadPerConnectionUpTo(
                ConcurrencyModel::DEFAULT_CONNECTION_THREADS,
            ),
            idle_timeout: Some(Duration::from_secs(180)),
            message_timeout: Some(Duration::from_secs(5)),
            max_message_size: 64 << 20,
            max_partial_bytes: 256 << 20,
            max_fragments: 16 << 10,
            max_outstanding_requests: 256,
            max_queued_reply_bytes: 16 << 20,
            max_connections: 4096,
            max_connection_threads: 1024,
            hold_limit: 1024,
            max_forwards: 16,
            tls: crate::tls::TlsConfig::default(),
            call_timeout: None,
            client_max_outstanding: 1024,
            wait_strategy: WaitStrategy::LeaderFollowers,
            transport_mux: TransportMux::ExclusiveCalls,
            max_connections_per_server: 8,
            collocation: Collocation::ThruPoa,
            union_default_label: UnionDefaultLabel::Discriminator,
            request_filter: crate::request_filter::FilterSlot::default(),
            lanes: Vec::new(),
            orb_initializers: InitializerSlot::default(),
            trace_level: TraceLevel::Off,
            metrics_endpoint: None,
        }
    }
}

/// A duration setter's argument: `None` or zero means no limit, as 0 does
/// in the `-ORB…` options.
fn limit(d: impl Into<Option<Duration>>) -> Option<Duration> {
    d.into().filter(|d| !d.is_zero())
}

impl OrbConfig {
    /// The default configuration (the same as [`OrbConfig::default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a plain IIOP endpoint to listen on (`-ORBListenEndpoints
    /// iiop://host:port`); the server listens on every endpoint added.
    /// Without any, it listens on 127.0.0.1 on a port the system
    /// chooses, opened the first time a server object is created. A host
    /// of `0.0.0.0` or `::` listens on every interface and publishes the
    /// host's real addresses. TLS endpoints are added with
    /// [`TlsConfig::listen`](crate::tls::TlsConfig::listen).
    pub fn listen(mut self, endpoint: impl Into<ListenEndpoint>) -> Self {
        self.endpoints.push(endpoint.into());
        self
    }

    /// Sets the host name or address to put in references instead of the
    /// bound address (`-ORBEndpointPublish`).
    pub fn publish_host(mut self, host: impl Into<String>) -> Self {
        self.publish_host = Some(host.into());
        self
    }

    /// Sets what [`Orb::resolve_initial_references`](crate::Orb::resolve_initial_references)
    /// returns for `name`: the object `url` (an IOR, `corbaloc:` or
    /// `corbaname:` URL) names (`-ORBInitRef Name=URL`). A second call with
    /// the same name replaces the first.
    pub fn initial_reference(mut self, name: impl Into<String>, url: impl Into<String>) -> Self {
        self.initial_references.insert(name.into(), url.into());
        self
    }

    /// Sets the prefix for initial references not given by
    /// [`initial_reference`](Self::initial_reference): `prefix/Name`
    /// (`-ORBDefaultInitRef`).
    pub fn default_initial_reference(mut self, prefix: impl Into<String>) -> Self {
        self.default_initial_reference = Some(prefix.into());
        self
    }

    /// Sets the highest GIOP version to speak and publish (default 1.2,
    /// `-ORBGIOPVersion`).
    pub fn max_giop_version(mut self, version: MaxGiopVersion) -> Self {
        self.max_giop_version = version;
        self
    }

    /// Sets the native code set for char data (default UTF-8,
    /// `-ORBNativeCharCodeSet`).
    pub fn char_code_set(mut self, code_set: CharCodeSet) -> Self {
        self.char_code_set = code_set;
        self
    }

    /// Sets the native code set for wchar data (default UTF-16,
    /// `-ORBNativeWCharCodeSet`).
    pub fn wchar_code_set(mut self, code_set: WcharCodeSet) -> Self {
        self.wchar_code_set = code_set;
        self
    }

    /// Sets the server concurrency model (default
    /// [`ThreadPerConnectionUpTo`](ConcurrencyModel::ThreadPerConnectionUpTo)`(64)`:
    /// thread per connection, the reactor beyond 64 connections;
    /// `-ORBConcurrency`).
    pub fn concurrency(mut self, model: ConcurrencyModel) -> Self {
        self.concurrency = model;
        self
    }

    /// Sets how long a connection may stay idle before it is closed with
    /// CloseConnection (default 180 s; `None` or zero: never;
    /// `-ORBIdleTimeout`).
    pub fn idle_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.idle_timeout = limit(timeout);
        self
    }

    /// Sets the time a client has to finish a message once its first byte
    /// arrived; after it the connection gets MessageError and is closed
    /// (default 5 s; `None` or zero: no limit; `-ORBMessageTimeout`).
    pub fn message_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.message_timeout = limit(timeout);
        self
    }

    /// Sets the largest message the ORB accepts, header included, and the
    /// largest message reassembled from fragments, on both sides (default
    /// 64 MiB, at least 1; `-ORBMaxMessageSize`): a larger request gets
    /// MessageError from the server; a larger reply ends the client's call
    /// with MARSHAL ([`minor::MESSAGE_SIZE_EXCEEDED`](crate::minor::MESSAGE_SIZE_EXCEEDED),
    /// COMPLETED_YES) and closes its connection; and a request larger than
    /// this is not sent (MARSHAL, the same minor code, COMPLETED_NO), as
    /// omniORB does with its `giopMaxMsgSize`.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }

    /// Sets the most bytes all partly received messages of the server may
    /// hold together; a connection that needs more gets MessageError
    /// (default 256 MiB, at least 1; `-ORBMaxPartialBytes`).
    pub fn max_partial_bytes(mut self, bytes: usize) -> Self {
        self.max_partial_bytes = bytes.max(1);
        self
    }

    /// Sets the most fragments one message may come in (default 16,384,
    /// at least 1; `-ORBMaxFragments`).
    pub fn max_fragments(mut self, count: usize) -> Self {
        self.max_fragments = count.max(1);
        self
    }

    /// Sets the most requests of one connection read and not answered yet
    /// (running or held); beyond, the server stops reading the connection
    /// until some are answered (default 256, at least 1;
    /// `-ORBMaxOutstandingRequests`).
    pub fn max_outstanding_requests(mut self, count: usize) -> Self {
        self.max_outstanding_requests = count.max(1);
        self
    }

    /// Sets the most reply bytes queued for a client that does not read
    /// them; beyond, the server stops reading the connection until the
    /// client takes its replies (default 16 MiB, at least 1;
    /// `-ORBMaxQueuedReplyBytes`).
    pub fn max_queued_reply_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_reply_bytes = bytes.max(1);
        self
    }

    /// Sets the most connections open at once; a connection beyond it is
    /// accepted and closed at once (default 4,096, at least 1;
    /// `-ORBMaxConnections`).
    pub fn max_connections(mut self, count: usize) -> Self {
        self.max_connections = count.max(1);
        self
    }

    /// Sets the most connection threads under
    /// [`ThreadPerConnection`](ConcurrencyModel::ThreadPerConnection), where
    /// a connection beyond it is accepted and closed at once, and under
    /// [`ThreadPerConnectionUpTo`](ConcurrencyModel::ThreadPerConnectionUpTo),
    /// where the reactor reads it (default 1,024, at least 1;
    /// `-ORBMaxConnectionThreads`).
    pub fn max_connection_threads(mut self, count: usize) -> Self {
        self.max_connection_threads = count.max(1);
        self
    }

    /// Sets the most requests a holding POA manager queues; beyond, a
    /// request is answered with TRANSIENT (default 1,024; `-ORBHoldLimit`).
    pub fn hold_limit(mut self, count: usize) -> Self {
        self.hold_limit = count;
        self
    }

    /// Sets the most LOCATION_FORWARD hops one invocation follows
    /// (default 16).
    pub fn max_forwards(mut self, hops: u32) -> Self {
        self.max_forwards = hops;
        self
    }

    /// Sets the IIOP over TLS configuration: TLS endpoints, certificates,
    /// trusted roots, client authentication (`-ORBTls…`; see
    /// [`crate::tls`]).
    pub fn tls(mut self, tls: crate::tls::TlsConfig) -> Self {
        self.tls = tls;
        self
    }

    /// Sets the longest a call this ORB makes may take, connecting,
    /// sending and waiting for its reply included (default and `None` or
    /// zero: no limit; `-ORBClientCallTimeout`). A call that runs out of
    /// time fails with TIMEOUT (`minor::CALL_TIMEOUT`) and its reply,
    /// should it come later, is discarded.
    pub fn call_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.call_timeout = limit(timeout);
        self
    }

    /// Sets how a thread waits for a reply (default
    /// [`WaitStrategy::LeaderFollowers`]; `-ORBWaitStrategy`). A strategy
    /// the concurrency model cannot use safely is refused when the ORB
    /// starts (see [`check`](Self::check)).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.wait_strategy = strategy;
        self
    }

    /// Sets whether requests to one server share a connection (default
    /// [`TransportMux::ExclusiveCalls`]; `-ORBTransportMux`).
    pub fn transport_mux(mut self, mux: TransportMux) -> Self {
        self.transport_mux = mux;
        self
    }

    /// Sets the most connections the exclusive transports open to one
    /// server (endpoint); with all of them busy, a request shares one
    /// (default 8, at least 1; `-ORBMaxConnectionsPerServer`).
    pub fn max_connections_per_server(mut self, count: usize) -> Self {
        self.max_connections_per_server = count.max(1);
        self
    }

    /// Sets how calls reach objects served in this process (default
    /// [`Collocation::ThruPoa`]; `-ORBCollocation`).
    pub fn collocation(mut self, collocation: Collocation) -> Self {
        self.collocation = collocation;
        self
    }

    /// Sets how TypeCodes label a union's default member for a peer whose
    /// form this ORB does not know (default
    /// [`UnionDefaultLabel::Discriminator`]; `-ORBUnionDefaultLabel`).
    pub fn union_default_label(mut self, label: UnionDefaultLabel) -> Self {
        self.union_default_label = label;
        self
    }

    /// Sets the most requests this ORB may have awaiting their reply on one
    /// client connection (default 1,024, at least 1;
    /// `-ORBClientMaxOutstanding`). A request beyond the limit waits, before
    /// it is sent, until one of the connection's replies comes (the waiting
    /// caller reads the connection meanwhile if nobody else does) or its
    /// call timeout passes: then it fails with TIMEOUT
    /// (`minor::CALL_TIMEOUT`, COMPLETED_NO), having sent nothing. Waiting,
    /// rather than failing at once, is what a full socket buffer does too:
    /// a client that sends faster than the server answers is slowed to the
    /// server's pace instead of having to retry, while its memory stays
    /// bounded by the limit; a caller that must not wait sets a call
    /// timeout. Oneways without a sync scope await no reply and do not
    /// count.
    pub fn client_max_outstanding(mut self, count: usize) -> Self {
        self.client_max_outstanding = count.max(1);
        self
    }

    /// Installs the threading framework's filter: it decides where each
    /// request the server reads runs, or rejects it (see
    /// [`RequestFilter`](crate::RequestFilter)). Without one, every
    /// request runs where the concurrency model puts it.
    pub fn request_filter(mut self, filter: impl crate::RequestFilter) -> Self {
        self.request_filter = crate::request_filter::FilterSlot(Some(std::sync::Arc::new(filter)));
        self
    }

    /// Adds a lane, a pool of `threads` threads named `name`, that a
    /// request filter may send requests to with
    /// [`Route::Lane`](crate::Route::Lane) (`-ORBLane name:threads`). A
    /// second lane of the same name replaces the first.
    pub fn lane(mut self, name: impl Into<String>, threads: usize) -> Self {
        let name = name.into();
        self.lanes.retain(|l| l.name != name);
        self.lanes.push(crate::request_filter::LaneConfig {
            name,
            threads: threads.max(1),
        });
        self
    }

    /// Sets how much an application's subscriber shows of what the ORB
    /// reports (default [`TraceLevel::Off`]; `-ORBTraceLevel`). The ORB
    /// installs no subscriber itself: see [`TraceLevel`].
    pub fn trace_level(mut self, level: TraceLevel) -> Self {
        self.trace_level = level;
        self
    }

    /// Serves the metrics (the server's counters, and the count and
    /// duration of its upcalls by operation and outcome) in the Prometheus
    /// text format at `http://endpoint/metrics`, from a thread of its own
    /// that the ORB's shutdown stops (`-ORBMetricsEndpoint HOST:PORT`; port
    /// 0 lets the system choose: see
    /// [`Orb::metrics_endpoint`](crate::Orb::metrics_endpoint)). Without
    /// it (the default) nothing is counted per request. See
    /// [`crate::metrics`].
    pub fn metrics_endpoint(mut self, endpoint: impl Into<ListenEndpoint>) -> Self {
        self.metrics_endpoint = Some(endpoint.into());
        self
    }

    /// The plain IIOP endpoints to listen on, in the order added.
    pub fn get_endpoints(&self) -> &[ListenEndpoint] {
        &self.endpoints
    }

    /// The host published in references, if one is set.
    pub fn get_publish_host(&self) -> Option<&str> {
        self.publish_host.as_deref()
    }

    /// The URL set for the initial reference `name`, if any.
    pub fn get_initial_reference(&self, name: &str) -> Option<&str> {
        self.initial_references.get(name).map(String::as_str)
    }

    /// Every initial reference set, as `(name, url)` pairs in no
    /// particular order.
    pub fn get_initial_references(&self) -> impl Iterator<Item = (&str, &str)> {
        self.initial_references
            .iter()
            .map(|(name, url)| (name.as_str(), url.as_str()))
    }

    /// The prefix for other initial references, if one is set.
    pub fn get_default_initial_reference(&self) -> Option<&str> {
        self.default_initial_reference.as_deref()
    }

    /// The highest GIOP version spoken.
    pub fn get_max_giop_version(&self) -> MaxGiopVersion {
        self.max_giop_version
    }

    /// The native code set for char data.
    pub fn get_char_code_set(&self) -> CharCodeSet {
        self.char_code_set
    }

    /// The native code set for wchar data.
    pub fn get_wchar_code_set(&self) -> WcharCodeSet {
        self.wchar_code_set
    }

    /// The server concurrency model.
    pub fn get_concurrency(&self) -> ConcurrencyModel {
        self.concurrency
    }

    /// How long a connection may stay idle (`None`: for ever).
    pub fn get_idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// The time a client has to finish a message (`None`: no limit).
    pub fn get_message_timeout(&self) -> Option<Duration> {
        self.message_timeout
    }

    /// The largest message the server accepts, in bytes.
    pub fn get_max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// The most bytes partly received messages may hold together.
    pub fn get_max_partial_bytes(&self) -> usize {
        self.max_partial_bytes
    }

    /// The most fragments one message may come in.
    pub fn get_max_fragments(&self) -> usize {
        self.max_fragments
    }

    /// The most requests of one connection read and not answered yet.
    pub fn get_max_outstanding_requests(&self) -> usize {
        self.max_outstanding_requests
    }

    /// The most reply bytes queued for a client that does not read them.
    pub fn get_max_queued_reply_bytes(&self) -> usize {
        self.max_queued_reply_bytes
    }

    /// The most connections open at once.
    pub fn get_max_connections(&self) -> usize {
        self.max_connections
    }

    /// The most connection threads under thread per connection.
    pub fn get_max_connection_threads(&self) -> usize {
        self.max_connection_threads
    }

    /// The most connections the exclusive transport opens to one server.
    pub fn get_max_connections_per_server(&self) -> usize {
        self.max_connections_per_server
    }

    /// The most requests a holding POA manager queues.
    pub fn get_hold_limit(&self) -> usize {
        self.hold_limit
    }

    /// The most LOCATION_FORWARD hops one invocation follows.
    pub fn get_max_forwards(&self) -> u32 {
        self.max_forwards
    }

    /// The most requests awaiting their reply on one client connection
    /// (see [`client_max_outstanding`](Self::client_max_outstanding)).
    pub fn get_client_max_outstanding(&self) -> usize {
        self.client_max_outstanding
    }

    /// Whether requests to one server share a connection.
    pub fn get_transport_mux(&self) -> TransportMux {
        self.transport_mux
    }

    /// How calls reach objects served in this process (see
    /// [`Collocation`]).
    pub fn get_collocation(&self) -> Collocation {
        self.collocation
    }

    /// How TypeCodes label a union's default member for a peer whose form
    /// is not known (see [`UnionDefaultLabel`]).
    pub fn get_union_default_label(&self) -> UnionDefaultLabel {
        self.union_default_label
    }

    /// How a thread waits for a reply (see [`WaitStrategy`]).
    pub fn get_wait_strategy(&self) -> WaitStrategy {
        self.wait_strategy
    }

    /// Refuses a combination of options that cannot work: a wait strategy
    /// that leaves the concurrency model no thread for a nested upcall.
    /// [`Orb::with_config`](crate::Orb::with_config) calls it.
    pub fn check(&self) -> Result<(), OrbOptionError> {
        let wait = self.get_wait_strategy();
        if !wait.is_safe_with(self.concurrency) {
            return Err(bad(
                "-ORBWaitStrategy",
                wait.option_value(),
                "a thread waiting on read inside an upcall would leave this concurrency model \
                 no thread to serve a nested call (it would deadlock): use reactor or lf",
            ));
        }
        Ok(())
    }

    /// The request filter, if one is installed.
    pub fn get_request_filter(&self) -> Option<&std::sync::Arc<dyn crate::RequestFilter>> {
        self.request_filter.0.as_ref()
    }

    /// The lanes, in the order added.
    pub fn get_lanes(&self) -> &[crate::request_filter::LaneConfig] {
        &self.lanes
    }

    /// The IIOP over TLS configuration.
    pub fn get_tls(&self) -> &crate::tls::TlsConfig {
        &self.tls
    }

    /// The longest a call this ORB makes may take (`None`: no limit).
    pub fn get_call_timeout(&self) -> Option<Duration> {
        self.call_timeout
    }

    /// How much an application's subscriber shows (see [`TraceLevel`]).
    pub fn get_trace_level(&self) -> TraceLevel {
        self.trace_level
    }

    /// Where the metrics are served, if anywhere (see
    /// [`metrics_endpoint`](Self::metrics_endpoint)).
    pub fn get_metrics_endpoint(&self) -> Option<&ListenEndpoint> {
        self.metrics_endpoint.as_ref()
    }

    /// The highest GIOP version, as the wire layer spells it.
    pub(crate) fn giop_version(&self) -> GiopVersion {
        self.max_giop_version.into()
    }

    /// The code sets published in references and negotiated: each native
    /// code set, with the other code set of its kind for conversion.
    pub(crate) fn code_sets(&self) -> CodeSetComponentInfo {
        CodeSetComponentInfo {
            for_char_data: code_set_component(
                self.char_code_set.id(),
                CharCodeSet::ALL.map(CharCodeSet::id),
            ),
            for_wchar_data: code_set_component(
                self.wchar_code_set.id(),
                WcharCodeSet::ALL.map(WcharCodeSet::id),
            ),
        }
    }
}

/// A bad `-ORB…` option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OrbOptionError {
    /// The option needs a value and none followed.
    #[error("{0} needs a value")]
    MissingValue(String),
    /// The value is not valid for the option.
    #[error("bad value {value:?} for {option}: {reason}")]
    BadValue {
        /// The option.
        option: String,
        /// The value given.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An `-ORB` option this ORB does not know.
    #[error("unknown ORB option {0}")]
    Unknown(String),
}

fn bad(option: &str, value: &str, reason: &'static str) -> OrbOptionError {
    OrbOptionError::BadValue {
        option: option.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

/// Splits `host:port` where host may be a bracketed IPv6 address.
fn split_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, rest) = rest.split_once(']')?;
        (host, rest.strip_prefix(':').unwrap_or(""))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, p),
            None => (s, ""),
        }
    };
    let port = if port.is_empty() {
        0
    } else {
        port.parse().ok()?
    };
    Some((host.to_owned(), port))
}

/// A TLS endpoint (`iiops://`, `ssliop://`, `giop:ssl:`), or `None` for
/// another form.
fn parse_tls_endpoint(option: &str, value: &str) -> Option<Result<ListenEndpoint, OrbOptionError>> {
    let rest = value
        .strip_prefix("iiops://")
        .or_else(|| value.strip_prefix("ssliop://"))
        .or_else(|| value.strip_prefix("giop:ssl:"))?;
    Some(host_port_endpoint(option, value, rest))
}

fn host_port_endpoint(
    option: &str,
    value: &str,
    rest: &str,
) -> Result<ListenEndpoint, OrbOptionError> {
    let rest = rest.trim_end_matches('/');
    let (host, port) = split_host_port(rest).ok_or_else(|| bad(option, value, "bad host:port"))?;
    let host = if host.is_empty() {
        "127.0.0.1".to_owned()
    } else {
        host
    };
    Ok(ListenEndpoint::new(host, port))
}

fn parse_endpoint(option: &str, value: &str) -> Result<ListenEndpoint, OrbOptionError> {
    let rest = value
        .strip_prefix("iiop://")
        .or_else(|| value.strip_prefix("giop:tcp:"))
        .ok_or_else(|| {
            bad(
                option,
                value,
                "expected iiop://host:port, giop:tcp:host:port or iiops://host:port",
            )
        })?;
    host_port_endpoint(option, value, rest)
}

/// A byte count with an optional `K`, `M` or `G` suffix (powers of 1,024).
fn parse_size(option: &str, value: &str) -> Result<usize, OrbOptionError> {
    let (digits, shift) = match value.as_bytes().last() {
        Some(b'k' | b'K') => (&value[..value.len() - 1], 10),
        Some(b'm' | b'M') => (&value[..value.len() - 1], 20),
        Some(b'g' | b'G') => (&value[..value.len() - 1], 30),
        _ => (value, 0),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1usize << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| bad(option, value, "expected a byte count such as 65536 or 64M"))
}

/// A positive count.
fn parse_count(option: &str, value: &str) -> Result<usize, OrbOptionError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| bad(option, value, "expected a count of 1 or more"))
}

/// What a duration option's number means without a unit: the unit the
/// option took before units were accepted, kept so that old command lines
/// mean what they meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BareUnit {
    /// `-ORBIdleTimeout`, `-ORBMessageTimeout`.
    Seconds,
    /// `-ORBClientCallTimeout`.
    Milliseconds,
}

impl BareUnit {
    fn nanos(self) -> u128 {
        match self {
            BareUnit::Seconds => NANOS_PER_SECOND,
            BareUnit::Milliseconds => 1_000_000,
        }
    }

    /// What a bad value's error says is accepted.
    fn expected(self) -> &'static str {
        match self {
            BareUnit::Seconds => {
                "expected a duration: a number with a unit, us, ms, s or m (200ms, 1.5s, 2m), \
                 or a bare number of seconds; 0: no limit"
            }
            BareUnit::Milliseconds => {
                "expected a duration: a number with a unit, us, ms, s or m (200ms, 1.5s, 2m), \
                 or a bare number of milliseconds; 0: no limit"
            }
        }
    }
}

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// The units a duration option's number may carry, in nanoseconds.
const DURATION_UNITS: [(&str, u128); 5] = [
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", NANOS_PER_SECOND),
    ("m", 60 * NANOS_PER_SECOND),
];

/// The value of every duration option: a decimal number (`5`, `1.5`,
/// `.25`; no sign, no exponent) with a unit from [`DURATION_UNITS`] right
/// after it, or without one in the option's `bare` unit; exact to the
/// nanosecond (finer digits are dropped). Zero means no limit (`None`).
fn parse_duration(
    option: &str,
    value: &str,
    bare: BareUnit,
) -> Result<Option<Duration>, OrbOptionError> {
    let refused = || bad(option, value, bare.expected());
    let (number, unit) = match value.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => {
            let (number, unit) = value.split_at(at);
            let unit = DURATION_UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .ok_or_else(refused)?;
            (number, unit.1)
        }
        None => (value, bare.nanos()),
    };
    let nanos = decimal_times(number, unit).ok_or_else(refused)?;
    let seconds = u64::try_from(nanos / NANOS_PER_SECOND).map_err(|_| refused())?;
    // Below one second's nanoseconds, so it fits.
    let sub_second = (nanos % NANOS_PER_SECOND) as u32;
    let duration = Duration::new(seconds, sub_second);
    Ok((!duration.is_zero()).then_some(duration))
}

/// `number` (decimal digits with at most one point, a digit on one side
/// of it at least) times `unit`, truncated to a whole number; `None` for
/// anything else or on overflow.
fn decimal_times(number: &str, unit: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    // Digits past the 18th are below a nanosecond for every unit.
    let fraction = &fraction[..fraction.len().min(18)];
    let part = if fraction.is_empty() {
        0
    } else {
        let scale = 10u128.pow(fraction.len() as u32);
        fraction.parse::<u128>().ok()? * unit / scale
    };
    whole.checked_mul(unit)?.checked_add(part)
}

impl OrbConfig {
    /// Applies the `-ORB…` options in `args` and returns the other
    /// arguments, in order, for the application.
    pub fn apply_args<I, S>(&mut self, args: I) -> Result<Vec<String>, OrbOptionError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut rest = Vec::new();
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            if !arg.starts_with("-ORB") {
                rest.push(arg);
                continue;
            }
            // Both `-ORBOption value` and `-ORBOption=value`.
            let (option, inline) = match arg.split_once('=') {
                Some((o, v)) if !o.contains("InitRef") || arg.matches('=').count() > 1 => {
                    (o.to_owned(), Some(v.to_owned()))
                }
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| OrbOptionError::MissingValue(option.clone()))
            };
            match option.as_str() {
                "-ORBListenEndpoints" | "-ORBEndpoint" | "-ORBendPoint" => {
                    let v = value()?;
                    for one in v.split([';', ' ']).filter(|s| !s.is_empty()) {
                        match parse_tls_endpoint(&option, one) {
                            Some(tls) => self.tls.endpoints.push(tls?),
                            None => self.endpoints.push(parse_endpoint(&option, one)?),
                        }
                    }
                }
                "-ORBEndpointPublish" | "-ORBendPointPublish" => {
                    self.publish_host = Some(value()?);
                }
                "-ORBInitRef" => {
                    let v = value()?;
                    let (name, url) = v
                        .split_once('=')
                        .ok_or_else(|| bad(&option, &v, "expected Name=URL"))?;
                    if name.is_empty() || url.is_empty() {
                        return Err(bad(&option, &v, "expected Name=URL"));
                    }
                    self.initial_references
                        .insert(name.to_owned(), url.to_owned());
                }
                "-ORBDefaultInitRef" => self.default_initial_reference = Some(value()?),
                "-ORBGIOPVersion" | "-ORBmaxGIOPVersion" => {
                    let v = value()?;
                    self.max_giop_version = MaxGiopVersion::parse(&v)
                        .ok_or_else(|| bad(&option, &v, "expected 1.0, 1.1 or 1.2"))?;
                }
                "-ORBNativeCharCodeSet" => {
                    let v = value()?;
                    self.char_code_set = CharCodeSet::parse(&v)
                        .ok_or_else(|| bad(&option, &v, "expected UTF-8 or ISO-8859-1"))?;
                }
                "-ORBNativeWCharCodeSet" => {
                    let v = value()?;
                    self.wchar_code_set = WcharCodeSet::parse(&v)
                        .ok_or_else(|| bad(&option, &v, "expected UTF-16 or UCS-2"))?;
                }
                "-ORBConcurrency" => {
                    let v = value()?;
                    self.concurrency = v.parse().map_err(|why| bad(&option, &v, why))?;
                }
                "-ORBIdleTimeout" => {
                    self.idle_timeout = parse_duration(&option, &value()?, BareUnit::Seconds)?
                }
                "-ORBMessageTimeout" => {
                    self.message_timeout = parse_duration(&option, &value()?, BareUnit::Seconds)?
                }
                "-ORBMaxMessageSize" | "-ORBgiopMaxMsgSize" => {
                    self.max_message_size = parse_size(&option, &value()?)?
                }
                "-ORBMaxPartialBytes" => self.max_partial_bytes = parse_size(&option, &value()?)?,
                "-ORBMaxFragments" => self.max_fragments = parse_count(&option, &value()?)?,
                "-ORBMaxOutstandingRequests" => {
                    self.max_outstanding_requests = parse_count(&option, &value()?)?
                }
                "-ORBMaxQueuedReplyBytes" => {
                    self.max_queued_reply_bytes = parse_size(&option, &value()?)?
                }
                "-ORBCollocation" => {
                    let v = value()?;
                    self.collocation = match v.as_str() {
                        "none" => Collocation::None,
                        "thru-poa" | "thru_poa" => Collocation::ThruPoa,
                        "direct" => Collocation::Direct,
                        _ => return Err(bad(&option, &v, "expected none, thru-poa or direct")),
                    };
                }
                "-ORBTransportMux" => {
                    let v = value()?;
                    self.transport_mux = match v.as_str() {
                        "exclusive-calls" => TransportMux::ExclusiveCalls,
                        "exclusive" => TransportMux::Exclusive,
                        "muxed" => TransportMux::Muxed,
                        _ => {
                            return Err(bad(
                                &option,
                                &v,
                                "expected exclusive-calls, exclusive or muxed",
                            ))
                        }
                    };
                }
                "-ORBUnionDefaultLabel" => {
                    let v = value()?;
                    self.union_default_label = match v.as_str() {
                        "discriminator" => UnionDefaultLabel::Discriminator,
                        "zero-octet" => UnionDefaultLabel::ZeroOctet,
                        _ => return Err(bad(&option, &v, "expected discriminator or zero-octet")),
                    };
                }
                "-ORBWaitStrategy" => {
                    let v = value()?;
                    self.wait_strategy = match v.as_str() {
                        "read" | "rw" => WaitStrategy::Read,
                        "reactor" => WaitStrategy::Reactor,
                        "lf" | "leader-followers" => WaitStrategy::LeaderFollowers,
                        _ => return Err(bad(&option, &v, "expected read, reactor or lf")),
                    };
                }
                "-ORBLane" => {
                    let v = value()?;
                    let (name, threads) = v
                        .split_once(':')
                        .and_then(|(name, n)| Some((name, n.parse::<usize>().ok()?)))
                        .filter(|(name, n)| !name.is_empty() && *n > 0)
                        .ok_or_else(|| bad(&option, &v, "expected NAME:THREADS, THREADS ≥ 1"))?;
                    *self = std::mem::take(self).lane(name, threads);
                }
                "-ORBClientMaxOutstanding" | "-ORBMaxOutstanding" => {
                    self.client_max_outstanding = parse_count(&option, &value()?)?
                }
                "-ORBMaxConnections" => self.max_connections = parse_count(&option, &value()?)?,
                "-ORBMaxConnectionThreads" => {
                    self.max_connection_threads = parse_count(&option, &value()?)?
                }
                "-ORBMaxConnectionsPerServer" => {
                    self.max_connections_per_server = parse_count(&option, &value()?)?
                }
                "-ORBHoldLimit" => {
                    let v = value()?;
                    self.hold_limit = v
                        .parse()
                        .map_err(|_| bad(&option, &v, "expected a count"))?;
                }
                o if o.starts_with("-ORBTls") => {
                    let v = value()?;
                    self.tls.apply_option(&option, v)?;
                }
                "-ORBClientCallTimeout" => {
                    self.call_timeout = parse_duration(&option, &value()?, BareUnit::Milliseconds)?
                }
                "-ORBTraceLevel" | "-ORBtraceLevel" => {
                    let v = value()?;
                    self.trace_level = v
                        .parse::<u8>()
                        .ok()
                        .and_then(TraceLevel::from_number)
                        .ok_or_else(|| bad(&option, &v, "expected a level from 0 (off) to 5"))?;
                }
                "-ORBMetricsEndpoint" => {
                    let v = value()?;
                    self.metrics_endpoint = Some(host_port_endpoint(&option, &v, &v)?);
                }
                _ => return Err(OrbOptionError::Unknown(option)),
            }
        }
        Ok(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_parsed_and_the_rest_returned() {
        let mut c = OrbConfig::default();
        let rest = c
            .apply_args([
                "prog",
                "-ORBListenEndpoints",
                "iiop://[::1]:2809",
                "-ORBInitRef",
                "NameService=corbaloc::localhost:2809/NameService",
                "--ior-file",
                "x.ior",
                "-ORBGIOPVersion=1.1",
                "-ORBConcurrency",
                "thread-pool:4",
                "-ORBEndpoint",
                "giop:tcp::0",
            ])
            .unwrap();
        assert_eq!(rest, ["prog", "--ior-file", "x.ior"]);
        assert_eq!(
            c.endpoints,
            [
                ListenEndpoint {
                    host: "::1".into(),
                    port: 2809
                },
                ListenEndpoint {
                    host: "127.0.0.1".into(),
                    port: 0
                }
            ]
        );
        assert_eq!(
            c.initial_references["NameService"],
            "corbaloc::localhost:2809/NameService"
        );
        assert_eq!(c.max_giop_version, MaxGiopVersion::V1_1);
        assert_eq!(c.concurrency, ConcurrencyModel::ThreadPool(4));
        for (value, model) in [
            ("reactive", ConcurrencyModel::SingleThreadedReactive),
            (
                "thread-per-connection",
                ConcurrencyModel::ThreadPerConnection,
            ),
            (
                "thread-per-connection:8",
                ConcurrencyModel::ThreadPerConnectionUpTo(8),
            ),
            ("application", ConcurrencyModel::ApplicationThreads),
            ("locality:3", ConcurrencyModel::Locality(3)),
            (
                "thread-per-request",
                ConcurrencyModel::ThreadPerRequest(None),
            ),
            (
                "thread-per-request:3",
                ConcurrencyModel::ThreadPerRequest(Some(3)),
            ),
            (
                "worker-pool:2",
                ConcurrencyModel::WorkerPool {
                    workers: 2,
                    queue: ConcurrencyModel::DEFAULT_WORKER_QUEUE,
                },
            ),
            (
                "worker-pool:2:5",
                ConcurrencyModel::WorkerPool {
                    workers: 2,
                    queue: 5,
                },
            ),
            ("thread-per-object", ConcurrencyModel::ThreadPerObject),
        ] {
            let mut c = OrbConfig::default();
            c.apply_args(["-ORBConcurrency", value]).unwrap();
            assert_eq!(c.concurrency, model, "{value}");
        }
        for bad in [
            "thread-pool:0",
            "threads",
            "application:2",
            "locality:0",
            "locality",
            "thread-per-request:0",
            "worker-pool",
            "worker-pool:2:0",
            "worker-pool:1:2:3",
            "thread-per-object:1",
        ] {
            assert!(matches!(
                OrbConfig::default().apply_args(["-ORBConcurrency", bad]),
                Err(OrbOptionError::BadValue { .. })
            ));
        }
        for bad in ["slow", "slow:0", ":2", "slow:x"] {
            assert!(matches!(
                OrbConfig::default().apply_args(["-ORBLane", bad]),
                Err(OrbOptionError::BadValue { .. })
            ));
        }
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBGIOPVersion", "2.0"]),
            Err(OrbOptionError::BadValue { .. })
        ));
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBInitRef"]),
            Err(OrbOptionError::MissingValue(_))
        ));
        let mut c = OrbConfig::default();
        c.apply_args(["-ORBClientCallTimeout", "250"]).unwrap();
        assert_eq!(c.call_timeout, Some(Duration::from_millis(250)));
        c.apply_args(["-ORBClientCallTimeout=0"]).unwrap();
        assert_eq!(c.call_timeout, None);
        c.apply_args(["-ORBClientCallTimeout", "1s"]).unwrap();
        assert_eq!(c.call_timeout, Some(Duration::from_secs(1)));
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBBogus", "1"]),
            Err(OrbOptionError::Unknown(_))
        ));
    }

    #[test]
    fn every_duration_option_takes_a_unit_and_keeps_its_bare_unit() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        let with_units = [
            ("200ms", Some(ms(200))),
            ("5s", Some(ms(5_000))),
            ("2m", Some(ms(120_000))),
            ("1.5s", Some(ms(1_500))),
            (".25s", Some(ms(250))),
            ("1.5m", Some(ms(90_000))),
            ("250us", Some(us(250))),
            ("250µs", Some(us(250))),
            ("0.0015ms", Some(Duration::from_nanos(1_500))),
            ("1.0000000001s", Some(Duration::from_nanos(1_000_000_000))),
            ("0s", None),
            ("0ms", None),
        ];
        let bare_seconds = [
            ("3", Some(ms(3_000))),
            ("2.5", Some(ms(2_500))),
            ("0", None),
        ];
        let bare_millis = [
            ("250", Some(ms(250))),
            ("2.5", Some(us(2_500))),
            ("0", None),
        ];
        /// A value and the duration it sets.
        type Case = (&'static str, Option<Duration>);
        /// An option, its bare-number cases, and where it lands.
        type DurationOption<'a> = (&'a str, &'a [Case], fn(&OrbConfig) -> Option<Duration>);
        let options: [DurationOption<'_>; 3] = [
            ("-ORBIdleTimeout", &bare_seconds, |c| c.idle_timeout),
            ("-ORBMessageTimeout", &bare_seconds, |c| c.message_timeout),
            ("-ORBClientCallTimeout", &bare_millis, |c| c.call_timeout),
        ];
        for (option, bare, read) in options {
            for (value, expected) in with_units.iter().chain(bare) {
                let mut c = OrbConfig::default();
                c.apply_args([option, *value]).unwrap();
                assert_eq!(read(&c), *expected, "{option} {value}");
            }
            for value in [
                "5x",
                "",
                ".",
                "-1",
                "1e3",
                "5 s",
                "s",
                "1.2.3",
                "inf",
                "NaN",
                "5S",
                "1h",
                "99999999999999999999999m",
            ] {
                let error = OrbConfig::default()
                    .apply_args([option, value])
                    .unwrap_err();
                let text = error.to_string();
                assert!(
                    matches!(&error, OrbOptionError::BadValue { option: o, value: v, .. }
                        if o == option && v == value),
                    "{option} {value}: {error:?}"
                );
                assert!(text.contains("us, ms, s or m"), "{text}");
            }
        }
        let error = OrbConfig::default()
            .apply_args(["-ORBIdleTimeout", "5x"])
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "bad value \"5x\" for -ORBIdleTimeout: expected a duration: a number with a unit, \
             us, ms, s or m (200ms, 1.5s, 2m), or a bare number of seconds; 0: no limit"
        );
        let error = OrbConfig::default()
            .apply_args(["-ORBClientCallTimeout=soon"])
            .unwrap_err();
        assert!(
            error.to_string().contains("bare number of milliseconds"),
            "{error}"
        );
    }

    #[test]
    fn tls_options_are_parsed() {
        use crate::tls::{ClientAuth, PemSource};
        let mut c = OrbConfig::default();
        let rest = c
            .apply_args([
                "-ORBListenEndpoints",
                "iiops://0.0.0.0:4433;iiop://127.0.0.1:2809",
                "-ORBEndpoint",
                "giop:ssl:[::1]:0",
                "-ORBListenEndpoints=ssliop://host.example:1",
                "-ORBTlsCert",
                "cert.pem",
                "-ORBTlsKey=key.pem",
                "-ORBTlsCa",
                "a.pem",
                "-ORBTlsCa",
                "b.pem",
                "-ORBTlsClientAuth",
                "optional",
                "-ORBTlsRequire",
                "yes",
                "app",
            ])
            .unwrap();
        assert_eq!(rest, ["app"]);
        let ep = |host: &str, port| ListenEndpoint {
            host: host.into(),
            port,
        };
        assert_eq!(c.endpoints, [ep("127.0.0.1", 2809)]);
        assert_eq!(
            c.tls.endpoints,
            [ep("0.0.0.0", 4433), ep("::1", 0), ep("host.example", 1)]
        );
        assert_eq!(
            c.tls.certificate_chain,
            Some(PemSource::File("cert.pem".into()))
        );
        assert_eq!(c.tls.private_key, Some(PemSource::File("key.pem".into())));
        assert_eq!(c.tls.trusted_roots.len(), 2);
        assert_eq!(c.tls.client_auth, ClientAuth::Optional);
        assert!(c.tls.require && c.tls.is_server() && c.tls.is_client());
        for (option, value) in [
            ("-ORBTlsClientAuth", "sometimes"),
            ("-ORBTlsRequire", "maybe"),
            ("-ORBListenEndpoints", "iiops://[::1"),
        ] {
            assert!(
                matches!(
                    OrbConfig::default().apply_args([option, value]),
                    Err(OrbOptionError::BadValue { .. })
                ),
                "{option} {value}"
            );
        }
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBTlsBogus", "1"]),
            Err(OrbOptionError::Unknown(_))
        ));
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBTlsCa"]),
            Err(OrbOptionError::MissingValue(_))
        ));
    }

    #[test]
    fn limits_have_safe_defaults_and_options() {
        let d = OrbConfig::default();
        assert_eq!(d.idle_timeout, Some(Duration::from_secs(180)));
        assert_eq!(d.message_timeout, Some(Duration::from_secs(5)));
        assert_eq!(d.max_message_size, 64 << 20);
        let mut c = OrbConfig::default();
        c.apply_args([
            "-ORBMaxMessageSize",
            "2M",
            "-ORBMaxPartialBytes=1G",
            "-ORBMaxFragments",
            "8",
            "-ORBMaxOutstandingRequests",
            "4",
            "-ORBMaxQueuedReplyBytes",
            "64K",
            "-ORBMaxConnections",
            "10",
            "-ORBMaxConnectionThreads",
            "3",
            "-ORBMaxConnectionsPerServer",
            "2",
            "-ORBIdleTimeout",
            "0",
            "-ORBMessageTimeout",
            "0.5",
        ])
        .unwrap();
        assert_eq!(c.max_message_size, 2 << 20);
        assert_eq!(c.max_partial_bytes, 1 << 30);
        assert_eq!(c.max_fragments, 8);
        assert_eq!(c.max_outstanding_requests, 4);
        assert_eq!(c.max_queued_reply_bytes, 64 << 10);
        assert_eq!(c.max_connections, 10);
        assert_eq!(c.max_connection_threads, 3);
        assert_eq!(c.max_connections_per_server, 2);
        assert_eq!(c.idle_timeout, None);
        assert_eq!(c.message_timeout, Some(Duration::from_millis(500)));
        for (option, value) in [
            ("-ORBMaxMessageSize", "0"),
            ("-ORBMaxMessageSize", "12Q"),
            ("-ORBMaxConnections", "-1"),
            ("-ORBMessageTimeout", "soon"),
            ("-ORBMaxPartialBytes", "99999999999999999999G"),
            ("-ORBTraceLevel", "6"),
            ("-ORBTraceLevel", "debug"),
            ("-ORBMetricsEndpoint", "127.0.0.1:http"),
            ("-ORBMetricsEndpoint", "[::1"),
        ] {
            assert!(
                matches!(
                    OrbConfig::default().apply_args([option, value]),
                    Err(OrbOptionError::BadValue { .. })
                ),
                "{option} {value}"
            );
        }
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBBogus", "1"]),
            Err(OrbOptionError::Unknown(_))
        ));
    }

    /// Every `-ORB…` option and the setter that stands for it give equal
    /// configurations.
    #[test]
    fn every_option_has_a_setter_with_the_same_effect() {
        use crate::tls::{ClientAuth, TlsConfig};
        let ms = Duration::from_millis;
        let cases: Vec<(Vec<&str>, OrbConfig)> = vec![
            (
                vec!["-ORBListenEndpoints", "iiop://[::1]:2809;giop:tcp::0"],
                OrbConfig::new()
                    .listen(ListenEndpoint::new("::1", 2809))
                    .listen(ListenEndpoint::new("127.0.0.1", 0)),
            ),
            (
                vec!["-ORBEndpointPublish", "host.example"],
                OrbConfig::new().publish_host("host.example"),
            ),
            (
                vec![
                    "-ORBInitRef",
                    "A=corbaloc::h:1/A",
                    "-ORBInitRef=B=corbaloc::h:2/B",
                ],
                OrbConfig::new()
                    .initial_reference("A", "corbaloc::h:1/A")
                    .initial_reference("B", "corbaloc::h:2/B"),
            ),
            (
                vec!["-ORBDefaultInitRef", "corbaloc::h:1"],
                OrbConfig::new().default_initial_reference("corbaloc::h:1"),
            ),
            (
                vec!["-ORBGIOPVersion", "1.0"],
                OrbConfig::new().max_giop_version(MaxGiopVersion::V1_0),
            ),
            (
                vec!["-ORBNativeCharCodeSet", "ISO-8859-1"],
                OrbConfig::new().char_code_set(CharCodeSet::Iso8859_1),
            ),
            (
                vec!["-ORBNativeWCharCodeSet", "UCS-2"],
                OrbConfig::new().wchar_code_set(WcharCodeSet::Ucs2),
            ),
            (
                vec!["-ORBConcurrency", "thread-pool:3"],
                OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(3)),
            ),
            (
                vec!["-ORBIdleTimeout", "0"],
                OrbConfig::new().idle_timeout(None),
            ),
            (
                vec!["-ORBIdleTimeout", "2.5"],
                OrbConfig::new().idle_timeout(ms(2500)),
            ),
            (
                vec!["-ORBMessageTimeout", "0"],
                OrbConfig::new().message_timeout(Duration::ZERO),
            ),
            (
                vec!["-ORBMaxMessageSize", "2M"],
                OrbConfig::new().max_message_size(2 << 20),
            ),
            (
                vec!["-ORBgiopMaxMsgSize", "4096"],
                OrbConfig::new().max_message_size(4096),
            ),
            (
                vec!["-ORBMaxPartialBytes", "1G"],
                OrbConfig::new().max_partial_bytes(1 << 30),
            ),
            (
                vec!["-ORBMaxFragments", "8"],
                OrbConfig::new().max_fragments(8),
            ),
            (
                vec!["-ORBMaxOutstandingRequests", "4"],
                OrbConfig::new().max_outstanding_requests(4),
            ),
            (
                vec!["-ORBMaxQueuedReplyBytes", "64K"],
                OrbConfig::new().max_queued_reply_bytes(64 << 10),
            ),
            (
                vec!["-ORBMaxConnections", "10"],
                OrbConfig::new().max_connections(10),
            ),
            (
                vec!["-ORBMaxConnectionThreads", "3"],
                OrbConfig::new().max_connection_threads(3),
            ),
            (vec!["-ORBHoldLimit", "0"], OrbConfig::new().hold_limit(0)),
            (
                vec!["-ORBCollocation", "direct"],
                OrbConfig::new().collocation(Collocation::Direct),
            ),
            (
                vec!["-ORBCollocation", "none"],
                OrbConfig::new().collocation(Collocation::None),
            ),
            (
                vec!["-ORBClientCallTimeout", "250"],
                OrbConfig::new().call_timeout(ms(250)),
            ),
            (
                vec!["-ORBClientMaxOutstanding", "8"],
                OrbConfig::new().client_max_outstanding(8),
            ),
            (
                // `exclusive-calls` is the default: shown after another
                // option.
                vec![
                    "-ORBTransportMux",
                    "muxed",
                    "-ORBConcurrency",
                    "thread-pool:2",
                    "-ORBTransportMux",
                    "exclusive-calls",
                ],
                OrbConfig::new()
                    .concurrency(ConcurrencyModel::ThreadPool(2))
                    .transport_mux(TransportMux::ExclusiveCalls),
            ),
            (
                vec!["-ORBTransportMux", "exclusive"],
                OrbConfig::new().transport_mux(TransportMux::Exclusive),
            ),
            (
                vec!["-ORBTransportMux", "muxed"],
                OrbConfig::new().transport_mux(TransportMux::Muxed),
            ),
            (
                vec!["-ORBMaxConnectionsPerServer", "2"],
                OrbConfig::new().max_connections_per_server(2),
            ),
            (
                vec!["-ORBUnionDefaultLabel", "zero-octet"],
                OrbConfig::new().union_default_label(UnionDefaultLabel::ZeroOctet),
            ),
            (
                // `discriminator` is the default: shown after the other.
                vec![
                    "-ORBUnionDefaultLabel",
                    "zero-octet",
                    "-ORBHoldLimit",
                    "7",
                    "-ORBUnionDefaultLabel",
                    "discriminator",
                ],
                OrbConfig::new()
                    .hold_limit(7)
                    .union_default_label(UnionDefaultLabel::Discriminator),
            ),
            (
                vec!["-ORBWaitStrategy", "read"],
                OrbConfig::new().wait_strategy(WaitStrategy::Read),
            ),
            (
                vec!["-ORBWaitStrategy", "reactor"],
                OrbConfig::new().wait_strategy(WaitStrategy::Reactor),
            ),
            (
                // `lf` is the default: shown after another option.
                vec![
                    "-ORBWaitStrategy",
                    "read",
                    "-ORBConcurrency",
                    "thread-pool:2",
                    "-ORBWaitStrategy",
                    "lf",
                ],
                OrbConfig::new()
                    .concurrency(ConcurrencyModel::ThreadPool(2))
                    .wait_strategy(WaitStrategy::LeaderFollowers),
            ),
            (
                vec!["-ORBMaxOutstanding", "9"],
                OrbConfig::new().client_max_outstanding(9),
            ),
            (
                vec!["-ORBLane", "slow:3", "-ORBLane", "fast:1"],
                OrbConfig::new().lane("slow", 3).lane("fast", 1),
            ),
            (
                vec!["-ORBTraceLevel", "4"],
                OrbConfig::new().trace_level(TraceLevel::Requests),
            ),
            (
                vec!["-ORBtraceLevel=1"],
                OrbConfig::new().trace_level(TraceLevel::Errors),
            ),
            (
                vec!["-ORBMetricsEndpoint", "127.0.0.1:9464"],
                OrbConfig::new().metrics_endpoint(ListenEndpoint::new("127.0.0.1", 9464)),
            ),
            (
                vec!["-ORBMetricsEndpoint", "[::1]:0"],
                OrbConfig::new().metrics_endpoint(ListenEndpoint::new("::1", 0)),
            ),
            (
                vec![
                    "-ORBListenEndpoints",
                    "iiops://0.0.0.0:4433",
                    "-ORBTlsCert",
                    "cert.pem",
                    "-ORBTlsKey",
                    "key.pem",
                    "-ORBTlsCa",
                    "ca.pem",
                    "-ORBTlsClientAuth",
                    "required",
                    "-ORBTlsRequire",
                    "yes",
                ],
                OrbConfig::new().tls(
                    TlsConfig::new()
                        .listen(ListenEndpoint::new("0.0.0.0", 4433))
                        .certificate_file("cert.pem")
                        .private_key_file("key.pem")
                        .trusted_roots_file("ca.pem")
                        .client_auth(ClientAuth::Required)
                        .require(true),
                ),
            ),
        ];
        for (args, built) in cases {
            let mut parsed = OrbConfig::new();
            assert_eq!(parsed.apply_args(args.iter().copied()), Ok(vec![]));
            assert_eq!(parsed, built, "{args:?}");
            assert_ne!(parsed, OrbConfig::default(), "{args:?} changed nothing");
        }
        // The one option without a command-line form.
        assert_eq!(OrbConfig::new().max_forwards(2).get_max_forwards(), 2);
    }

    #[test]
    fn getters_read_back_what_the_setters_set() {
        let c = OrbConfig::new()
            .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 7)))
            .publish_host("h")
            .initial_reference("A", "corbaloc::h:1/A")
            .default_initial_reference("corbaloc::h:2")
            .max_giop_version(MaxGiopVersion::V1_1)
            .char_code_set(CharCodeSet::Iso8859_1)
            .wchar_code_set(WcharCodeSet::Ucs2)
            .concurrency(ConcurrencyModel::ThreadPerConnection)
            .idle_timeout(Duration::from_secs(1))
            .message_timeout(None)
            .max_message_size(1)
            .max_partial_bytes(2)
            .max_fragments(3)
            .max_outstanding_requests(4)
            .max_queued_reply_bytes(5)
            .max_connections(6)
            .max_connection_threads(7)
            .hold_limit(8)
            .max_forwards(9)
            .tls(crate::tls::TlsConfig::new().require(true))
            .call_timeout(Duration::from_secs(10))
            .client_max_outstanding(11)
            .union_default_label(UnionDefaultLabel::ZeroOctet);
        assert_eq!(c.get_client_max_outstanding(), 11);
        assert_eq!(c.get_union_default_label(), UnionDefaultLabel::ZeroOctet);
        assert_eq!(c.get_endpoints(), [ListenEndpoint::new("127.0.0.1", 7)]);
        assert_eq!(c.get_publish_host(), Some("h"));
        assert_eq!(c.get_initial_reference("A"), Some("corbaloc::h:1/A"));
        assert_eq!(c.get_initial_reference("B"), None);
        assert_eq!(
            c.get_initial_references().collect::<Vec<_>>(),
            [("A", "corbaloc::h:1/A")]
        );
        assert_eq!(c.get_default_initial_reference(), Some("corbaloc::h:2"));
        assert_eq!(c.get_max_giop_version(), MaxGiopVersion::V1_1);
        assert_eq!(c.get_char_code_set(), CharCodeSet::Iso8859_1);
        assert_eq!(c.get_wchar_code_set(), WcharCodeSet::Ucs2);
        assert_eq!(c.get_concurrency(), ConcurrencyModel::ThreadPerConnection);
        assert_eq!(c.get_idle_timeout(), Some(Duration::from_secs(1)));
        assert_eq!(c.get_message_timeout(), None);
        assert_eq!(
            [
                c.get_max_message_size(),
                c.get_max_partial_bytes(),
                c.get_max_fragments(),
                c.get_max_outstanding_requests(),
                c.get_max_queued_reply_bytes(),
                c.get_max_connections(),
                c.get_max_connection_threads(),
                c.get_hold_limit(),
            ],
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(c.get_max_forwards(), 9);
        assert!(c.get_tls().get_require());
        assert_eq!(c.get_call_timeout(), Some(Duration::from_secs(10)));
        assert_eq!(c.get_trace_level(), TraceLevel::Off);
        assert_eq!(c.get_metrics_endpoint(), None);
        let c = c
            .trace_level(TraceLevel::Everything)
            .metrics_endpoint(ListenEndpoint::new("127.0.0.1", 0));
        assert_eq!(c.get_trace_level(), TraceLevel::Everything);
        assert_eq!(
            c.get_metrics_endpoint(),
            Some(&ListenEndpoint::new("127.0.0.1", 0))
        );
        for n in 0..=5 {
            assert_eq!(TraceLevel::from_number(n).map(TraceLevel::number), Some(n));
        }
        assert_eq!(TraceLevel::from_number(6), None);
    }

    #[test]
    fn setters_keep_limits_meaningful() {
        // A zero duration is no limit, as 0 is in the options; a zero
        // count would refuse everything, so it is raised to one.
        let c = OrbConfig::new()
            .call_timeout(Duration::ZERO)
            .idle_timeout(Duration::ZERO)
            .client_max_outstanding(0)
            .max_connections(0)
            .max_message_size(0);
        assert_eq!(c.get_call_timeout(), None);
        assert_eq!(c.get_idle_timeout(), None);
        assert_eq!(c.get_max_connections(), 1);
        assert_eq!(c.get_client_max_outstanding(), 1);
        assert_eq!(c.get_max_message_size(), 1);
        assert_eq!(OrbConfig::new(), OrbConfig::default());
    }

    #[test]
    fn user_level_enums_convert_to_the_wire_values() {
        for (text, version, wire) in [
            ("1.0", MaxGiopVersion::V1_0, GiopVersion::V1_0),
            ("1.1", MaxGiopVersion::V1_1, GiopVersion::V1_1),
            ("1.2", MaxGiopVersion::V1_2, GiopVersion::V1_2),
        ] {
            assert_eq!(MaxGiopVersion::parse(text), Some(version));
            assert_eq!(GiopVersion::from(version), wire);
            assert_eq!(MaxGiopVersion::try_from(wire), Ok(version));
            let mut c = OrbConfig::new();
            c.apply_args(["-ORBmaxGIOPVersion", text]).unwrap();
            assert_eq!(c.giop_version(), wire);
        }
        assert_eq!(OrbConfig::new().giop_version(), GiopVersion::V1_2);
        assert!(MaxGiopVersion::V1_0 < MaxGiopVersion::V1_2);

        // The default publishes what Armillary always published.
        assert_eq!(
            OrbConfig::new().code_sets(),
            CodeSetComponentInfo::armillary()
        );
        for (names, set, native, conversion) in [
            (
                &["UTF-8", "utf8"][..],
                CharCodeSet::Utf8,
                codeset::UTF_8,
                codeset::ISO_8859_1,
            ),
            (
                &["ISO-8859-1", "iso8859-1", "Latin-1"][..],
                CharCodeSet::Iso8859_1,
                codeset::ISO_8859_1,
                codeset::UTF_8,
            ),
        ] {
            for name in names {
                let mut c = OrbConfig::new();
                c.apply_args(["-ORBNativeCharCodeSet", name]).unwrap();
                assert_eq!(c.get_char_code_set(), set, "{name}");
                let info = c.code_sets();
                assert_eq!(info.for_char_data.native_code_set, native);
                assert_eq!(info.for_char_data.conversion_code_sets, [conversion]);
                assert_eq!(
                    info.for_wchar_data,
                    CodeSetComponentInfo::armillary().for_wchar_data
                );
            }
        }
        for (names, set, native, conversion) in [
            (
                &["UTF-16", "utf16"][..],
                WcharCodeSet::Utf16,
                codeset::UTF_16,
                codeset::UCS_2,
            ),
            (
                &["UCS-2", "ucs2"][..],
                WcharCodeSet::Ucs2,
                codeset::UCS_2,
                codeset::UTF_16,
            ),
        ] {
            for name in names {
                let mut c = OrbConfig::new();
                c.apply_args(["-ORBNativeWCharCodeSet", name]).unwrap();
                assert_eq!(c.get_wchar_code_set(), set, "{name}");
                let info = c.code_sets();
                assert_eq!(info.for_wchar_data.native_code_set, native);
                assert_eq!(info.for_wchar_data.conversion_code_sets, [conversion]);
                assert_eq!(
                    info.for_char_data,
                    CodeSetComponentInfo::armillary().for_char_data
                );
            }
        }
        // A wchar code set is no char code set, and the other way round.
        for (option, value) in [
            ("-ORBNativeCharCodeSet", "UTF-16"),
            ("-ORBNativeWCharCodeSet", "UTF-8"),
            ("-ORBNativeCharCodeSet", "EBCDIC"),
        ] {
            assert!(
                matches!(
                    OrbConfig::new().apply_args([option, value]),
                    Err(OrbOptionError::BadValue { .. })
                ),
                "{option} {value}"
            );
        }
    }
}
