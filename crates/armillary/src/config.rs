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
//! | `-ORBConcurrency reactive\|thread-pool:N\|thread-per-connection\|application` | server concurrency model; `thread-pool` (and `application` with several driving threads) does not keep the order of a connection's requests, oneways included (see [`ConcurrencyModel`]) |
//! | `-ORBIdleTimeout SECS` | close connections idle this long (default 180; 0: never) |
//! | `-ORBHoldLimit N` | requests a holding POA manager queues |
//! | `-ORBClientCallTimeout MS` | the longest a call this ORB makes may take, from its start to its reply (0: no limit, the default); a late call fails with TIMEOUT (`minor::CALL_TIMEOUT`) |
//! | `-ORBListenEndpoints iiops://host:port` (also `ssliop://host:port`, `-ORBEndpoint giop:ssl:host:port`) | where the server listens for IIOP over TLS; repeatable |
//! | `-ORBTlsCert FILE` | this ORB's certificate chain (PEM; may hold the key too) |
//! | `-ORBTlsKey FILE` | this ORB's private key (PEM) |
//! | `-ORBTlsCa FILE` | trusted roots (PEM) for servers' and clients' certificates; repeatable; with it, references that announce TLS are called over TLS only |
//! | `-ORBTlsClientAuth none\|optional\|required` | whether TLS endpoints ask clients for a certificate (default none) |
//! | `-ORBTlsRequire yes\|no` | call only over TLS: a reference without a TLS endpoint raises NO_PERMISSION (`minor::TLS_REQUIRED`) |
//! | `-ORBMessageTimeout SECS` | time a client has to finish sending a message it has begun; then MessageError and close (default 5; 0: no limit) |
//! | `-ORBMaxMessageSize BYTES` (also `-ORBgiopMaxMsgSize`) | largest message (reassembled) the server accepts; larger: MessageError (default 64M) |
//! | `-ORBMaxPartialBytes BYTES` | memory all partly received messages of the server may hold together; the connection that goes beyond gets MessageError (default 256M) |
//! | `-ORBMaxFragments N` | most fragments one message may come in (default 16384) |
//! | `-ORBMaxOutstandingRequests N` | requests of one connection read and not answered yet; beyond, the server stops reading it (default 256) |
//! | `-ORBMaxQueuedReplyBytes BYTES` | reply bytes queued for a client that does not read them; beyond, the server stops reading it (default 16M) |
//! | `-ORBMaxConnections N` | connections open at once; beyond, a new connection is closed at once (default 4096) |
//! | `-ORBMaxConnectionThreads N` | thread per connection: most connection threads; beyond, a new connection is closed at once (default 1024) |
//!
//! Sizes take a `K`, `M` or `G` suffix (powers of 1,024); times may be
//! fractional (`0.5`).

use std::collections::HashMap;
use std::time::Duration;

use armillary_giop::cdr::codeset::{self, CodeSetComponent, CodeSetComponentInfo};
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
/// | [`ApplicationThreads`](Self::ApplicationThreads) | in order while one thread drives the ORB; as in a pool when several do |
/// | [`ThreadPool`](Self::ThreadPool) | in no guaranteed order, possibly at the same time |
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
/// after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConcurrencyModel {
    /// One reactor thread reads every connection and runs every upcall.
    /// A connection's requests run in the order they arrived.
    SingleThreadedReactive,
    /// N threads share the reactor; one leads (waits for events) while the
    /// others follow (Leader/Followers). Requests of one connection may
    /// run concurrently and in any order, oneways included (see above).
    ThreadPool(usize),
    /// Every connection gets a thread that blocks reading it and runs its
    /// requests (the reactor only accepts), in the order they arrived.
    ThreadPerConnection,
    /// The ORB starts no server threads: the application's own threads run
    /// the reactor in [`Orb::run`](crate::Orb::run) or, one unit of work at
    /// a time, in [`Orb::perform_work`](crate::Orb::perform_work). Requests
    /// are served only while some thread does so; a thread waiting for a
    /// reply serves nothing meanwhile, so a call this ORB makes to one of
    /// its own objects needs another thread driving the ORB. With one
    /// driving thread a connection's requests run in arrival order; with
    /// several, in no guaranteed order, as in a pool.
    ApplicationThreads,
}

/// One listening endpoint as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenEndpoint {
    /// Host name or address to bind (`0.0.0.0` or `::` for every interface).
    pub host: String,
    /// Port; 0 lets the system choose.
    pub port: u16,
}

/// Everything an ORB is configured with.
#[derive(Debug, Clone)]
pub struct OrbConfig {
    /// Where to listen; empty means 127.0.0.1 on a system-chosen port,
    /// opened the first time a server object is created.
    pub endpoints: Vec<ListenEndpoint>,
    /// Host to publish in IORs instead of the bound address.
    pub publish_host: Option<String>,
    /// `-ORBInitRef` entries.
    pub initial_references: HashMap<String, String>,
    /// `-ORBDefaultInitRef`.
    pub default_initial_reference: Option<String>,
    /// Highest GIOP version spoken (and published).
    pub max_giop_version: GiopVersion,
    /// Native and conversion code sets published and negotiated.
    pub codesets: CodeSetComponentInfo,
    /// Server concurrency model.
    pub concurrency: ConcurrencyModel,
    /// Idle connections are closed (with CloseConnection) after this long
    /// (default 180 s; `None`: never).
    pub idle_timeout: Option<Duration>,
    // The server's limits on what one client can make it hold; see
    // `docs/reliability.md`.
    /// Time a client has to finish a message once its first byte arrived;
    /// after it the connection gets MessageError and is closed (default
    /// 5 s; `None`: no limit).
    pub message_timeout: Option<Duration>,
    /// Largest message the server accepts, header included, and largest
    /// message reassembled from fragments (default 64 MiB).
    pub max_message_size: usize,
    /// Most bytes all partly received messages of the server may hold
    /// together; a connection that needs more gets MessageError (default
    /// 256 MiB).
    pub max_partial_bytes: usize,
    /// Most fragments one message may come in (default 16,384).
    pub max_fragments: usize,
    /// Most requests of one connection read and not answered yet
    /// (running or held); beyond, the server stops reading the
    /// connection until some are answered (default 256).
    pub max_outstanding_requests: usize,
    /// Most reply bytes queued for a client that does not read them;
    /// beyond, the server stops reading the connection until the client
    /// takes its replies (default 16 MiB).
    pub max_queued_reply_bytes: usize,
    /// Most connections open at once; a connection beyond it is accepted
    /// and closed at once (default 4,096).
    pub max_connections: usize,
    /// Thread per connection: most connection threads; a connection
    /// beyond it is accepted and closed at once (default 1,024).
    pub max_connection_threads: usize,
    /// Most requests a holding POA manager queues.
    pub hold_limit: usize,
    /// Most LOCATION_FORWARD hops one invocation follows.
    pub max_forwards: u32,
    /// IIOP over TLS: TLS endpoints, certificates, trusted roots, client
    /// authentication (see [`crate::tls`]).
    pub tls: crate::tls::TlsConfig,
    /// The longest a call this ORB makes may take, connecting, sending and
    /// waiting for its reply included; `None` waits for ever. A call that
    /// runs out of time fails with TIMEOUT (`minor::CALL_TIMEOUT`) and its
    /// reply, should it come later, is discarded.
    pub call_timeout: Option<Duration>,
}

impl Default for OrbConfig {
    fn default() -> Self {
        OrbConfig {
            endpoints: Vec::new(),
            publish_host: None,
            initial_references: HashMap::new(),
            default_initial_reference: None,
            max_giop_version: GiopVersion::V1_2,
            codesets: CodeSetComponentInfo::armillary(),
            concurrency: ConcurrencyModel::SingleThreadedReactive,
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
    Ok(ListenEndpoint {
        host: if host.is_empty() {
            "127.0.0.1".to_owned()
        } else {
            host
        },
        port,
    })
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

fn code_set_named(option: &str, value: &str) -> Result<u32, OrbOptionError> {
    match value.to_ascii_uppercase().as_str() {
        "UTF-8" | "UTF8" => Ok(codeset::UTF_8),
        "ISO-8859-1" | "ISO8859-1" | "LATIN-1" => Ok(codeset::ISO_8859_1),
        "UTF-16" | "UTF16" => Ok(codeset::UTF_16),
        "UCS-2" | "UCS2" => Ok(codeset::UCS_2),
        _ => Err(bad(option, value, "unknown code set")),
    }
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

/// Seconds (fractions allowed); 0 means no limit.
fn parse_timeout(option: &str, value: &str) -> Result<Option<Duration>, OrbOptionError> {
    let secs: f64 = value
        .parse()
        .map_err(|_| bad(option, value, "expected seconds"))?;
    let d =
        Duration::try_from_secs_f64(secs).map_err(|_| bad(option, value, "expected seconds"))?;
    Ok((!d.is_zero()).then_some(d))
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
                    self.max_giop_version = match v.as_str() {
                        "1.0" => GiopVersion::V1_0,
                        "1.1" => GiopVersion::V1_1,
                        "1.2" => GiopVersion::V1_2,
                        _ => return Err(bad(&option, &v, "expected 1.0, 1.1 or 1.2")),
                    };
                }
                "-ORBNativeCharCodeSet" => {
                    let v = value()?;
                    let id = code_set_named(&option, &v)?;
                    self.codesets.for_char_data = CodeSetComponent {
                        native_code_set: id,
                        conversion_code_sets: [codeset::UTF_8, codeset::ISO_8859_1]
                            .into_iter()
                            .filter(|c| *c != id)
                            .collect(),
                    };
                }
                "-ORBNativeWCharCodeSet" => {
                    let v = value()?;
                    let id = code_set_named(&option, &v)?;
                    self.codesets.for_wchar_data = CodeSetComponent {
                        native_code_set: id,
                        conversion_code_sets: [codeset::UTF_16, codeset::UCS_2]
                            .into_iter()
                            .filter(|c| *c != id)
                            .collect(),
                    };
                }
                "-ORBConcurrency" => {
                    let v = value()?;
                    self.concurrency = match v.split_once(':') {
                        None if v == "reactive" => ConcurrencyModel::SingleThreadedReactive,
                        None if v == "thread-per-connection" => {
                            ConcurrencyModel::ThreadPerConnection
                        }
                        None if v == "application" => ConcurrencyModel::ApplicationThreads,
                        Some(("thread-pool", n)) => match n.parse::<usize>() {
                            Ok(n) if n > 0 => ConcurrencyModel::ThreadPool(n),
                            _ => return Err(bad(&option, &v, "thread count must be 1 or more")),
                        },
                        _ => {
                            return Err(bad(
                                &option,
                                &v,
                                "expected reactive, thread-pool:N, thread-per-connection or application",
                            ))
                        }
                    };
                }
                "-ORBIdleTimeout" => self.idle_timeout = parse_timeout(&option, &value()?)?,
                "-ORBMessageTimeout" => self.message_timeout = parse_timeout(&option, &value()?)?,
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
                "-ORBMaxConnections" => self.max_connections = parse_count(&option, &value()?)?,
                "-ORBMaxConnectionThreads" => {
                    self.max_connection_threads = parse_count(&option, &value()?)?
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
                    let v = value()?;
                    let ms: u64 = v
                        .parse()
                        .map_err(|_| bad(&option, &v, "expected milliseconds"))?;
                    self.call_timeout = (ms > 0).then(|| Duration::from_millis(ms));
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
        assert_eq!(c.max_giop_version, GiopVersion::V1_1);
        assert_eq!(c.concurrency, ConcurrencyModel::ThreadPool(4));
        for (value, model) in [
            ("reactive", ConcurrencyModel::SingleThreadedReactive),
            (
                "thread-per-connection",
                ConcurrencyModel::ThreadPerConnection,
            ),
            ("application", ConcurrencyModel::ApplicationThreads),
        ] {
            let mut c = OrbConfig::default();
            c.apply_args(["-ORBConcurrency", value]).unwrap();
            assert_eq!(c.concurrency, model, "{value}");
        }
        for bad in ["thread-pool:0", "threads", "application:2"] {
            assert!(matches!(
                OrbConfig::default().apply_args(["-ORBConcurrency", bad]),
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
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBClientCallTimeout", "1s"]),
            Err(OrbOptionError::BadValue { .. })
        ));
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBBogus", "1"]),
            Err(OrbOptionError::Unknown(_))
        ));
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
        assert_eq!(c.idle_timeout, None);
        assert_eq!(c.message_timeout, Some(Duration::from_millis(500)));
        for (option, value) in [
            ("-ORBMaxMessageSize", "0"),
            ("-ORBMaxMessageSize", "12Q"),
            ("-ORBMaxConnections", "-1"),
            ("-ORBMessageTimeout", "soon"),
            ("-ORBMaxPartialBytes", "99999999999999999999G"),
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
}
