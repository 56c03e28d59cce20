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
//! | `-ORBOnewayPacing yes\|no` | whether a server's reading thread that read nothing but oneways wakes the server's pacer thread before it waits again, so that a client streaming oneways on the same CPU runs on between the reader's turns (default yes; thread per connection and reactive; see [`OrbConfig::oneway_pacing`]) |
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

mod endpoint;
mod options;
mod strategy;
mod trace_level;
mod wire;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use armillary_giop::cdr::codeset::CodeSetComponentInfo;
use armillary_giop::GiopVersion;

pub use endpoint::ListenEndpoint;
pub use options::OrbOptionError;
pub use strategy::{Collocation, ConcurrencyModel, TransportMux, WaitStrategy};
pub use trace_level::TraceLevel;
pub use wire::{CharCodeSet, MaxGiopVersion, UnionDefaultLabel, WcharCodeSet};

use options::bad;
pub(crate) use options::parse_yes_no;
use wire::code_set_component;

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
    /// Whether a reading thread wakes the pacer thread before it waits
    /// again after a read of nothing but oneways (`-ORBOnewayPacing`).
    pub(crate) oneway_pacing: bool,
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
            oneway_pacing: true,
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

    /// Sets whether a server's reading thread (a connection's own thread,
    /// or the reactor thread in the reactive model and for the default
    /// model's connections beyond its bound), having read nothing but
    /// oneways, wakes the server's pacer thread before it waits for more
    /// (default on; `-ORBOnewayPacing yes|no`). Where client and server
    /// share a CPU, the scheduler then lets a client streaming oneways run
    /// on between the reader's turns, so that the stream is read in
    /// batches rather than one message a wake-up: `bench sync`'s oneways a
    /// second went from 0.66 to 0.96 of omniORB's. A read that held a
    /// two-way request wakes nothing, and the models that hand requests to
    /// other threads (thread pool, worker pool, thread per request or
    /// object) do not pace. See `docs/performance.md`, "Two phases, and
    /// the pacer".
    pub fn oneway_pacing(mut self, on: bool) -> Self {
        self.oneway_pacing = on;
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

    /// Whether oneway pacing is on (see
    /// [`oneway_pacing`](Self::oneway_pacing)).
    pub fn get_oneway_pacing(&self) -> bool {
        self.oneway_pacing
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

#[cfg(test)]
mod tests;
