//! The `-ORB…` command-line options: [`OrbConfig::apply_args`] parses them
//! into an [`OrbConfig`], and a bad one is an [`OrbOptionError`].

use std::time::Duration;

use super::{
    CharCodeSet, Collocation, ListenEndpoint, MaxGiopVersion, OrbConfig, TraceLevel, TransportMux,
    UnionDefaultLabel, WaitStrategy, WcharCodeSet,
};

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

pub(super) fn bad(option: &str, value: &str, reason: &'static str) -> OrbOptionError {
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
/// A yes-or-no option's value: `1`, `yes`, `true` or `0`, `no`, `false`.
pub(crate) fn parse_yes_no(option: &str, value: &str) -> Result<bool, OrbOptionError> {
    match value {
        "1" | "yes" | "true" => Ok(true),
        "0" | "no" | "false" => Ok(false),
        _ => Err(bad(option, value, "expected yes or no")),
    }
}

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
                "-ORBOnewayPacing" => self.oneway_pacing = parse_yes_no(&option, &value()?)?,
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
