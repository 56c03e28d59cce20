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
//! | `-ORBConcurrency reactive\|thread-pool:N\|thread-per-connection\|application` | server concurrency model |
//! | `-ORBIdleTimeout SECS` | close connections idle this long (0: never) |
//! | `-ORBHoldLimit N` | requests a holding POA manager queues |
//! | `-ORBClientCallTimeout MS` | the longest a call this ORB makes may take, from its start to its reply (0: no limit, the default); a late call fails with TIMEOUT (`minor::CALL_TIMEOUT`) |

use std::collections::HashMap;
use std::time::Duration;

use armillary_giop::cdr::codeset::{self, CodeSetComponent, CodeSetComponentInfo};
use armillary_giop::GiopVersion;

/// How the server side runs requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConcurrencyModel {
    /// One reactor thread reads every connection and runs every upcall.
    SingleThreadedReactive,
    /// N threads share the reactor; one leads (waits for events) while the
    /// others follow (Leader/Followers).
    ThreadPool(usize),
    /// Every connection gets a thread that blocks reading it and runs its
    /// requests (the reactor only accepts).
    ThreadPerConnection,
    /// The ORB starts no server threads: the application's own threads run
    /// the reactor in [`Orb::run`](crate::Orb::run) or, one unit of work at
    /// a time, in [`Orb::perform_work`](crate::Orb::perform_work). Requests
    /// are served only while some thread does so; a thread waiting for a
    /// reply serves nothing meanwhile, so a call this ORB makes to one of
    /// its own objects needs another thread driving the ORB.
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
    /// Idle connections are closed (with CloseConnection) after this long.
    pub idle_timeout: Option<Duration>,
    /// Most requests a holding POA manager queues.
    pub hold_limit: usize,
    /// Most LOCATION_FORWARD hops one invocation follows.
    pub max_forwards: u32,
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
            idle_timeout: None,
            hold_limit: 1024,
            max_forwards: 16,
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

fn parse_endpoint(option: &str, value: &str) -> Result<ListenEndpoint, OrbOptionError> {
    let rest = value
        .strip_prefix("iiop://")
        .or_else(|| value.strip_prefix("giop:tcp:"))
        .ok_or_else(|| {
            bad(
                option,
                value,
                "expected iiop://host:port or giop:tcp:host:port",
            )
        })?;
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

fn code_set_named(option: &str, value: &str) -> Result<u32, OrbOptionError> {
    match value.to_ascii_uppercase().as_str() {
        "UTF-8" | "UTF8" => Ok(codeset::UTF_8),
        "ISO-8859-1" | "ISO8859-1" | "LATIN-1" => Ok(codeset::ISO_8859_1),
        "UTF-16" | "UTF16" => Ok(codeset::UTF_16),
        "UCS-2" | "UCS2" => Ok(codeset::UCS_2),
        _ => Err(bad(option, value, "unknown code set")),
    }
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
                        self.endpoints.push(parse_endpoint(&option, one)?);
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
                "-ORBIdleTimeout" => {
                    let v = value()?;
                    let secs: u64 = v
                        .parse()
                        .map_err(|_| bad(&option, &v, "expected seconds"))?;
                    self.idle_timeout = (secs > 0).then(|| Duration::from_secs(secs));
                }
                "-ORBHoldLimit" => {
                    let v = value()?;
                    self.hold_limit = v
                        .parse()
                        .map_err(|_| bad(&option, &v, "expected a count"))?;
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
}
