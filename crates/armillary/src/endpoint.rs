//! [`Endpoint`]: one address an ORB's server listens on, as
//! [`Orb::endpoints`](crate::Orb::endpoints) reports it.

use std::fmt;

/// One address the ORB's server listens on: the host it publishes in its
/// object references (not necessarily the address it bound: a wildcard
/// endpoint publishes the host's real addresses, one `Endpoint` each),
/// the port, and whether it speaks plain IIOP or IIOP over TLS.
///
/// It prints in the syntax of `-ORBListenEndpoints`: `iiop://host:port`
/// or `iiops://host:port` (an IPv6 host in brackets).
///
/// ```
/// let (orb, _) = armillary::Orb::init(["app", "-ORBListenEndpoints", "iiop://127.0.0.1:0"]).unwrap();
/// let endpoint = orb.endpoints()[0].clone();
/// assert_eq!(endpoint.host(), "127.0.0.1");
/// assert!(!endpoint.is_tls());
/// assert_eq!(endpoint.to_string(), format!("iiop://127.0.0.1:{}", endpoint.port()));
/// # orb.shutdown(armillary::WaitForCompletion::Yes).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Endpoint {
    host: String,
    port: u16,
    tls: bool,
}

impl Endpoint {
    pub(crate) fn new(host: String, port: u16, tls: bool) -> Endpoint {
        Endpoint { host, port, tls }
    }

    /// The host name or address object references publish for it.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port it listens on (the one the system picked, for a
    /// configured port 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// True for IIOP over TLS (`iiops://`), false for plain IIOP
    /// (`iiop://`).
    pub fn is_tls(&self) -> bool {
        self.tls
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "iiops" } else { "iiop" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Endpoint;

    #[test]
    fn prints_in_the_listen_endpoint_syntax() {
        let cases = [
            (
                Endpoint::new("127.0.0.1".into(), 2809, false),
                "iiop://127.0.0.1:2809",
            ),
            (
                Endpoint::new("host.example".into(), 1, true),
                "iiops://host.example:1",
            ),
            (Endpoint::new("::1".into(), 7, false), "iiop://[::1]:7"),
        ];
        for (endpoint, text) in cases {
            assert_eq!(endpoint.to_string(), text);
        }
    }
}
