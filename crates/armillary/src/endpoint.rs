//! [`Endpoint`]: one address an ORB's server listens on, as
//! [`Orb::endpoints`](crate::Orb::endpoints) reports it, and its
//! conversions to socket addresses.

use std::fmt;
use std::net::{AddrParseError, IpAddr, SocketAddr, ToSocketAddrs};

/// One address the ORB's server listens on: the host it publishes in its
/// object references (not necessarily the address it bound: a wildcard
/// endpoint publishes the host's real addresses, one `Endpoint` each),
/// the port, and whether it speaks plain IIOP or IIOP over TLS.
///
/// It prints in the syntax of `-ORBListenEndpoints`: `iiop://host:port`
/// or `iiops://host:port` (an IPv6 host in brackets).
///
/// It is a [`SocketAddr`] when its host is an IP address
/// ([`socket_addr`](Self::socket_addr), `SocketAddr::try_from`; there is
/// no infallible `From`, since a published host may be a name,
/// `-ORBEndpointPublish`), and it resolves like `(host, port)` wherever
/// a [`ToSocketAddrs`] is taken (`TcpStream::connect(&endpoint)`).
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

    /// The socket address, when the host is an IP address; a host name is
    /// an error here (it is not looked up: use the endpoint as a
    /// [`ToSocketAddrs`] for that).
    ///
    /// ```
    /// use std::net::{SocketAddr, TcpStream};
    ///
    /// let (orb, _) = armillary::Orb::init(["app", "-ORBListenEndpoints", "iiop://127.0.0.1:0"]).unwrap();
    /// let endpoint = orb.endpoints()[0].clone();
    /// let address: SocketAddr = endpoint.socket_addr().unwrap();
    /// assert_eq!(address, SocketAddr::from(([127, 0, 0, 1], endpoint.port())));
    /// assert_eq!(SocketAddr::try_from(&endpoint), Ok(address));
    /// // As a ToSocketAddrs: connect to it (a name would be resolved).
    /// TcpStream::connect(&endpoint).unwrap();
    /// # orb.shutdown(armillary::WaitForCompletion::Yes).unwrap();
    /// ```
    pub fn socket_addr(&self) -> Result<SocketAddr, AddrParseError> {
        let ip: IpAddr = self.host.parse()?;
        Ok(SocketAddr::new(ip, self.port))
    }
}

/// The endpoint's address when its host is an IP address (see
/// [`Endpoint::socket_addr`]).
impl TryFrom<&Endpoint> for SocketAddr {
    type Error = AddrParseError;

    fn try_from(endpoint: &Endpoint) -> Result<SocketAddr, AddrParseError> {
        endpoint.socket_addr()
    }
}

/// The endpoint's address when its host is an IP address (see
/// [`Endpoint::socket_addr`]).
impl TryFrom<Endpoint> for SocketAddr {
    type Error = AddrParseError;

    fn try_from(endpoint: Endpoint) -> Result<SocketAddr, AddrParseError> {
        endpoint.socket_addr()
    }
}

/// The addresses of `(host, port)`: the host's own if it is an IP
/// address, else what the system resolves its name to.
impl ToSocketAddrs for Endpoint {
    type Iter = std::vec::IntoIter<SocketAddr>;

    fn to_socket_addrs(&self) -> std::io::Result<Self::Iter> {
        (self.host.as_str(), self.port).to_socket_addrs()
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

    #[test]
    fn is_a_socket_address_when_its_host_is_an_ip_address() {
        use std::net::{SocketAddr, ToSocketAddrs};

        let v6 = Endpoint::new("::1".into(), 7, false);
        let expected: SocketAddr = "[::1]:7".parse().unwrap();
        assert_eq!(v6.socket_addr(), Ok(expected));
        assert_eq!(SocketAddr::try_from(v6.clone()), Ok(expected));
        assert_eq!(
            v6.to_socket_addrs().unwrap().collect::<Vec<_>>(),
            [expected]
        );

        let named = Endpoint::new("host.example".into(), 1, true);
        assert!(named.socket_addr().is_err());
        assert!(SocketAddr::try_from(&named).is_err());
    }
}
