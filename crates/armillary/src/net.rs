//! Addresses and sockets: binding listeners, choosing what host an IOR
//! publishes, and connecting with the options IIOP wants (TCP_NODELAY).
//!
//! **Invariant:** an IOR never publishes an address a client cannot use:
//! a listener bound to every interface (`0.0.0.0`, `::`) publishes the
//! host's real addresses (or the host the user names), never the
//! wildcard.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::config::ListenEndpoint;

/// Resolves a configured endpoint to the address to bind.
pub(crate) fn bind_address(endpoint: &ListenEndpoint) -> io::Result<SocketAddr> {
    let host = endpoint.host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, endpoint.port));
    }
    (host, endpoint.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}")))
}

/// Opens a non-blocking listening socket with SO_REUSEADDR (so a persistent
/// server can restart on its fixed port at once).
pub(crate) fn listen(addr: SocketAddr) -> io::Result<mio::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // `::` listens on IPv6 only; IPv4 needs its own endpoint.
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(mio::net::TcpListener::from_std(socket.into()))
}

/// The hosts to publish for a listener bound to `bound`: the bound address
/// itself, or, for a wildcard, every non-loopback address of this host of
/// the same family (loopback if there is none).
pub(crate) fn published_hosts(bound: SocketAddr) -> Vec<String> {
    let ip = bound.ip();
    if !ip.is_unspecified() {
        return vec![ip.to_string()];
    }
    let mut hosts: Vec<String> = if_addrs::get_if_addrs()
        .unwrap_or_default()
        .into_iter()
        .map(|i| i.ip())
        .filter(|a| a.is_ipv4() == ip.is_ipv4() && !a.is_loopback())
        .filter(|a| match a {
            // Link-local IPv6 addresses need a scope id no IOR can carry.
            IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
            IpAddr::V4(_) => true,
        })
        .map(|a| a.to_string())
        .collect();
    if hosts.is_empty() {
        hosts.push(if ip.is_ipv4() { "127.0.0.1" } else { "::1" }.to_owned());
    }
    hosts
}

/// Connects to `host:port` (trying every address it resolves to) with
/// TCP_NODELAY set, within `timeout` per address.
pub(crate) fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => (host, port).to_socket_addrs()?.collect(),
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"));
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_never_published() {
        let hosts = published_hosts("0.0.0.0:2809".parse().unwrap());
        assert!(!hosts.is_empty());
        assert!(hosts.iter().all(|h| h != "0.0.0.0"));
        assert_eq!(
            published_hosts("127.0.0.1:1".parse().unwrap()),
            ["127.0.0.1"]
        );
        let v6 = published_hosts("[::]:1".parse().unwrap());
        assert!(v6.iter().all(|h| h != "::"));
    }

    #[test]
    fn listen_and_connect_on_loopback() {
        let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stream = connect("127.0.0.1", port, Duration::from_secs(5)).unwrap();
        assert!(stream.nodelay().unwrap());
    }
}
