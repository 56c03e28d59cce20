//! Object URLs: `IOR:`, `corbaloc:` and `corbaname:` (CORBA 3.0 §13.6.10).

use std::fmt;
use std::str::FromStr;

use super::{Ior, IorError, ProfileBody};
use crate::version::GiopVersion;

/// The default port of `corbaloc:iiop:` addresses.
pub const DEFAULT_PORT: u16 = 2809;

/// One `iiop:` address of a corbaloc URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CorbalocAddress {
    /// The IIOP version (`1.0` when the URL does not say).
    pub version: GiopVersion,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port (2809 when the URL does not say).
    pub port: u16,
}

/// A parsed object URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectUrl {
    /// `IOR:…`
    Ior(Ior),
    /// `corbaloc:iiop:…/key`
    Corbaloc {
        /// The addresses, in order.
        addresses: Vec<CorbalocAddress>,
        /// The object key (%-escapes decoded).
        key: Vec<u8>,
    },
    /// `corbaloc:rir:/key`
    CorbalocRir {
        /// The initial reference name (`NameService` by default).
        key: String,
    },
    /// `corbaname:…#name`
    Corbaname {
        /// Where the naming context is: iiop addresses, or `None` for `rir:`.
        addresses: Option<Vec<CorbalocAddress>>,
        /// The naming context's key (`NameService` by default).
        key: Vec<u8>,
        /// The stringified name to resolve (`a/b.kind`), unescaped; may be
        /// empty (the context itself).
        name: String,
    },
}

/// Decodes `%XX` escapes.
fn unescape(s: &str, start: usize) -> Result<Vec<u8>, IorError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or(IorError::Url {
                at: start + i,
                reason: "truncated %-escape",
            })?;
            let v = u8::from_str_radix(hex, 16).map_err(|_| IorError::Url {
                at: start + i,
                reason: "bad %-escape",
            })?;
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Escapes bytes that are not URL-safe.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b";/:?@&=+$,-_.!~*'()".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn parse_address(s: &str, start: usize) -> Result<CorbalocAddress, IorError> {
    let err = |at: usize, reason| IorError::Url {
        at: start + at,
        reason,
    };
    let body = if let Some(rest) = s.strip_prefix("iiop:") {
        (rest, 5)
    } else if let Some(rest) = s.strip_prefix(':') {
        (rest, 1)
    } else {
        return Err(err(0, "unsupported protocol (expected iiop: or :)"));
    };
    let (mut rest, mut off) = body;
    let mut version = GiopVersion::V1_0;
    if let Some((v, r)) = rest.split_once('@') {
        let (maj, min) = v
            .split_once('.')
            .ok_or(err(off, "bad version (expected major.minor)"))?;
        let maj: u8 = maj.parse().map_err(|_| err(off, "bad version"))?;
        let min: u8 = min.parse().map_err(|_| err(off, "bad version"))?;
        version = GiopVersion::new(maj, min);
        off += v.len() + 1;
        rest = r;
    }
    let (host, port_text) = if let Some(r) = rest.strip_prefix('[') {
        let (h, after) = r
            .split_once(']')
            .ok_or(err(off, "unterminated [IPv6 address]"))?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or(err(off + h.len() + 2, "expected :port"))?,
            ),
        };
        (h, port)
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    if host.is_empty() {
        return Err(err(off, "missing host"));
    }
    let bracketed = rest.starts_with('[');
    let valid = host.bytes().all(|b| {
        b.is_ascii_alphanumeric() || b"-._".contains(&b) || (bracketed && b":%".contains(&b))
    });
    if !valid || (bracketed && !host.contains(':')) {
        return Err(err(off, "invalid host"));
    }
    let port = match port_text {
        None | Some("") => DEFAULT_PORT,
        Some(p) => p.parse().map_err(|_| err(off + host.len(), "bad port"))?,
    };
    Ok(CorbalocAddress {
        version,
        host: host.to_owned(),
        port,
    })
}

fn parse_addresses(list: &str, start: usize) -> Result<Vec<CorbalocAddress>, IorError> {
    let mut out = Vec::new();
    let mut at = start;
    for part in list.split(',') {
        out.push(parse_address(part, at)?);
        at += part.len() + 1;
    }
    Ok(out)
}

impl FromStr for ObjectUrl {
    type Err = IorError;

    fn from_str(s: &str) -> Result<Self, IorError> {
        let s = s.trim();
        let lower = s.get(..10).unwrap_or(s).to_ascii_lowercase();
        if lower.starts_with("ior:") {
            return s.parse().map(ObjectUrl::Ior);
        }
        if lower.starts_with("corbaloc:") {
            let rest = &s[9..];
            let (addr, key) = rest.split_once('/').unwrap_or((rest, ""));
            if addr == "rir:" || addr.starts_with("rir:") && addr.len() == 4 {
                let key = if key.is_empty() {
                    "NameService".to_owned()
                } else {
                    String::from_utf8_lossy(&unescape(key, 9 + addr.len() + 1)?).into_owned()
                };
                return Ok(ObjectUrl::CorbalocRir { key });
            }
            if !rest.contains('/') {
                return Err(IorError::Url {
                    at: s.len(),
                    reason: "missing /key",
                });
            }
            let addresses = parse_addresses(addr, 9)?;
            let key = unescape(key, 9 + addr.len() + 1)?;
            return Ok(ObjectUrl::Corbaloc { addresses, key });
        }
        if lower.starts_with("corbaname:") {
            let rest = &s[10..];
            let (loc, name) = rest.split_once('#').unwrap_or((rest, ""));
            let name_start = 10 + loc.len() + 1;
            let name =
                String::from_utf8(unescape(name, name_start)?).map_err(|_| IorError::Url {
                    at: name_start,
                    reason: "name is not UTF-8",
                })?;
            let (addr, key) = loc.split_once('/').unwrap_or((loc, ""));
            let key = if key.is_empty() {
                b"NameService".to_vec()
            } else {
                unescape(key, 10 + addr.len() + 1)?
            };
            let addresses = if addr == "rir:" {
                None
            } else {
                Some(parse_addresses(addr, 10)?)
            };
            return Ok(ObjectUrl::Corbaname {
                addresses,
                key,
                name,
            });
        }
        Err(IorError::Url {
            at: 0,
            reason: "expected IOR:, corbaloc: or corbaname:",
        })
    }
}

fn write_addresses(f: &mut fmt::Formatter<'_>, addresses: &[CorbalocAddress]) -> fmt::Result {
    for (i, a) in addresses.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        let host = if a.host.contains(':') {
            format!("[{}]", a.host)
        } else {
            a.host.clone()
        };
        write!(f, "iiop:{}@{}:{}", a.version, host, a.port)?;
    }
    Ok(())
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectUrl::Ior(ior) => write!(f, "{ior}"),
            ObjectUrl::Corbaloc { addresses, key } => {
                f.write_str("corbaloc:")?;
                write_addresses(f, addresses)?;
                write!(f, "/{}", escape(key))
            }
            ObjectUrl::CorbalocRir { key } => write!(f, "corbaloc:rir:/{}", escape(key.as_bytes())),
            ObjectUrl::Corbaname {
                addresses,
                key,
                name,
            } => {
                f.write_str("corbaname:")?;
                match addresses {
                    Some(a) => write_addresses(f, a)?,
                    None => f.write_str("rir:")?,
                }
                write!(f, "/{}#{}", escape(key), escape(name.as_bytes()))
            }
        }
    }
}

impl ObjectUrl {
    /// The IOR this URL denotes without asking anyone: for `corbaloc:iiop`
    /// one IIOP profile per address (no type id); `None` for `rir:` and
    /// `corbaname:`, which need an ORB to resolve.
    pub fn to_ior(&self) -> Option<Ior> {
        match self {
            ObjectUrl::Ior(ior) => Some(ior.clone()),
            ObjectUrl::Corbaloc { addresses, key } => {
                let profiles = addresses
                    .iter()
                    .filter_map(|a| {
                        ProfileBody::new(a.version, &a.host, a.port, key.clone())
                            .to_profile()
                            .ok()
                    })
                    .collect();
                Some(Ior {
                    type_id: String::new(),
                    profiles,
                })
            }
            ObjectUrl::CorbalocRir { .. } | ObjectUrl::Corbaname { .. } => None,
        }
    }
}
