//! Where an ORB listens: [`ListenEndpoint`], a host and a port, for its
//! IIOP, TLS and metrics endpoints.

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
