//! The client's open connections, by endpoint, handed out for one request
//! at a time as the [transport mux](super::mux) says: a cached connection
//! the mux lets the request use, or a new one.
//!
//! Each endpoint's connections are one [`Slot`], found by host, port and
//! TLS in the cache's map. A [`Route`] (an address of a decoded profile,
//! kept by the [profile cache](super::profiles)) remembers the slot it
//! found the first time, so a reference called again and again reaches
//! its connections without the map: no hash, no lock of the whole cache.
//! That is why the map never drops a slot once made (closing every
//! connection empties the slots, and keeps them).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::GiopVersion;
use parking_lot::Mutex;

use super::client::{ClientConnection, CONNECT_TIMEOUT};
use super::mux::{Caller, Taken, TransportMux};
use super::tls::Route;
use crate::fast_map::FastMap;

/// The cached connections to one endpoint. Its lock is held while a
/// connection is chosen or opened, so callers that need the same endpoint
/// at once share (muxed) or take turns at (exclusive) the connections
/// instead of each opening its own.
type Slot = Arc<Mutex<Vec<Arc<ClientConnection>>>>;

/// One host's connection slots, by port and whether they are TLS.
type HostSlots = FastMap<(u16, bool), Slot>;

/// The slot of a [`Route`]'s endpoint, found in the cache on the route's
/// first use and remembered (see the module docs). A route belongs to one
/// ORB's profile cache, so the slot is always its ORB's.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteSlot(OnceLock<Slot>);

/// Open connections, by endpoint (and whether they are TLS), handed out
/// as the [transport mux](super::mux) says.
pub(crate) struct ConnectionCache {
    /// By host, then by port and TLS (so that a lookup allocates no key).
    /// Slots are never removed (routes remember theirs).
    connections: Mutex<FastMap<String, HostSlots>>,
    /// How TLS connections are made; `None` without trusted roots.
    tls: Option<Arc<rustls::ClientConfig>>,
    /// Whether requests share connections.
    mux: Box<dyn TransportMux>,
    /// The largest reply a connection accepts (`-ORBMaxMessageSize`).
    max_message_size: usize,
}

impl ConnectionCache {
    /// A cache whose TLS connections use `tls`, sharing connections as
    /// `mux` says, whose connections accept replies of at most
    /// `max_message_size` bytes.
    pub(crate) fn new(
        tls: Option<Arc<rustls::ClientConfig>>,
        mux: Box<dyn TransportMux>,
        max_message_size: usize,
    ) -> Self {
        ConnectionCache {
            connections: Mutex::default(),
            tls,
            mux,
            max_message_size,
        }
    }

    /// Whether TLS connections can be made.
    pub(crate) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The slot of `host:port` (TLS or not), if there is one.
    fn existing_slot(&self, host: &str, port: u16, tls: bool) -> Option<Slot> {
        self.connections
            .lock()
            .get(host)
            .and_then(|by_port| by_port.get(&(port, tls)))
            .cloned()
    }

    /// The slot of `host:port` (TLS or not), made if there is none.
    fn slot(&self, host: &str, port: u16, tls: bool) -> Slot {
        let mut connections = self.connections.lock();
        let found = connections
            .get(host)
            .and_then(|by_port| by_port.get(&(port, tls)));
        match found {
            Some(slot) => slot.clone(),
            None => connections
                .entry(host.to_owned())
                .or_default()
                .entry((port, tls))
                .or_default()
                .clone(),
        }
    }

    /// A live connection to `route` for one request whose caller is
    /// `caller`: a cached one the mux lets it use, or a new one (opened
    /// within `deadline` when there is one).
    pub(crate) fn get(
        &self,
        route: &Route,
        caller: Caller,
        deadline: Option<Instant>,
    ) -> Result<Checkout, SystemException> {
        let config = match (route.tls, &self.tls) {
            (false, _) => None,
            (true, Some(config)) => Some(config),
            (true, None) => {
                return Err(SystemException::no_permission(
                    minor::TLS_NOT_CONFIGURED,
                    CompletionStatus::No,
                ))
            }
        };
        let slot = route
            .slot
            .0
            .get_or_init(|| self.slot(&route.host, route.port, route.tls));
        // Another caller may be opening a connection: wait for it no
        // longer than our own deadline.
        let mut list = match deadline {
            Some(deadline) => slot.try_lock_until(deadline).ok_or_else(|| {
                SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::No)
            })?,
            None => slot.lock(),
        };
        let mut i = 0;
        while i < list.len() {
            let c = &list[i];
            match self.mux.take(c, caller) {
                // A claim looked whether the server closed it.
                Taken::Claimed => return Ok(Checkout(c.clone(), true)),
                Taken::Shared if !c.is_dead_while_idle() => return Ok(Checkout(c.clone(), false)),
                Taken::Shared | Taken::Closed => {
                    list.remove(i);
                }
                Taken::No => i += 1,
            }
        }
        if list.len() >= self.mux.max_per_endpoint() {
            // All busy and no more allowed: share one (see the mux).
            if let Some(c) = list.first() {
                return Ok(Checkout(c.clone(), false));
            }
        }
        let connect_timeout = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), CONNECT_TIMEOUT),
            None => CONNECT_TIMEOUT,
        };
        let fresh = ClientConnection::open(
            &route.host,
            route.port,
            config,
            connect_timeout,
            self.max_message_size,
        )?;
        let claimed = self.mux.take(&fresh, caller) == Taken::Claimed;
        list.push(fresh.clone());
        Ok(Checkout(fresh, claimed))
    }

    /// Drops `conn` from the cache (it failed or closed).
    pub(crate) fn evict(&self, conn: &Arc<ClientConnection>) {
        let (host, port, tls) = conn.endpoint();
        if let Some(slot) = self.existing_slot(host, port, tls) {
            slot.lock().retain(|c| !Arc::ptr_eq(c, conn));
        }
    }

    /// Closes every connection with CloseConnection (the slots stay,
    /// empty: routes remember them).
    pub(crate) fn close_all(&self, version: GiopVersion) {
        let slots: Vec<Slot> = self
            .connections
            .lock()
            .values()
            .flat_map(|by_port| by_port.values().cloned())
            .collect();
        for slot in slots {
            let list = std::mem::take(&mut *slot.lock());
            for c in list {
                c.close(version);
            }
        }
    }

    /// The connections cached to `host:port` now (for tests).
    #[cfg(test)]
    pub(crate) fn count(&self, host: &str, port: u16) -> usize {
        self.existing_slot(host, port, false)
            .map_or(0, |s| s.lock().len())
    }
}

impl std::fmt::Debug for ConnectionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionCache")
            .field("mux", &self.mux)
            .finish_non_exhaustive()
    }
}

/// A connection handed out for one request: ends the exclusive mux's
/// claim on it when dropped, unless the request ended it first by binding
/// its reply's dispatcher ([`bound`](Self::bound)), which keeps the
/// connection busy until the reply.
#[derive(Debug)]
pub(crate) struct Checkout(Arc<ClientConnection>, bool);

impl Checkout {
    /// Says that the request bound its reply's dispatcher on the
    /// connection, which ended the claim: dropping the checkout then
    /// leaves the connection alone (another caller may have claimed it by
    /// then, once the reply came).
    pub(crate) fn bound(&mut self) {
        self.1 = false;
    }
}

impl std::ops::Deref for Checkout {
    type Target = Arc<ClientConnection>;

    fn deref(&self) -> &Arc<ClientConnection> {
        &self.0
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if self.1 {
            self.0.unclaim();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;
    use crate::transport::client::tests::expect;

    fn route(port: u16) -> Route {
        Route::new("127.0.0.1".into(), port, false)
    }

    /// A cache of the exclusive mux, at most `max_per_endpoint`
    /// connections to an endpoint.
    fn exclusive(max_per_endpoint: usize) -> ConnectionCache {
        let mux = crate::transport::mux::Exclusive {
            max_per_endpoint,
            deferred_share: false,
        };
        ConnectionCache::new(None, Box::new(mux), 1 << 20)
    }

    /// A loopback listener (its connections wait in its backlog) and its
    /// port.
    fn listening() -> (TcpListener, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        (listener, port)
    }

    #[test]
    fn the_exclusive_mux_opens_a_connection_per_busy_request_and_reuses_idle_ones() {
        use crate::transport::mux::Muxed;
        let (_listener, port) = listening();
        let get = |cache: &ConnectionCache| cache.get(&route(port), Caller::Waits, None).unwrap();

        let cache = exclusive(64);
        let first = get(&cache);
        let _slot = expect(&first, 1);
        // A reply is awaited on the first: the next request opens another.
        let second = get(&cache);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(cache.count("127.0.0.1", port), 2);
        let (first_conn, second_conn) = (Arc::clone(&first), Arc::clone(&second));
        drop((first, second));
        // The second carries nothing (a oneway went out on it): reused.
        let third = get(&cache);
        assert!(Arc::ptr_eq(&third, &second_conn));
        // Taken, even before its request binds: the next opens a third.
        let fourth = get(&cache);
        assert!(!Arc::ptr_eq(&fourth, &first_conn) && !Arc::ptr_eq(&fourth, &second_conn));
        assert_eq!(cache.count("127.0.0.1", port), 3);
        drop((third, fourth));
        // The first's reply is in (here: given up): idle again, reused.
        first_conn.unbind(1);
        let again = get(&cache);
        assert!(Arc::ptr_eq(&again, &first_conn));
        assert_eq!(cache.count("127.0.0.1", port), 3);

        let cache = ConnectionCache::new(None, Box::new(Muxed), 1 << 20);
        let a = get(&cache);
        let _slot = expect(&a, 1);
        let b = get(&cache);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.count("127.0.0.1", port), 1);
    }

    #[test]
    fn a_cached_connection_the_server_closed_is_dropped_and_replaced() {
        let (listener, port) = listening();
        let cache = exclusive(8);
        let first = Arc::clone(&cache.get(&route(port), Caller::Waits, None).unwrap());
        drop(listener.accept().unwrap());
        // The FIN travels asynchronously, and an idle connection is
        // looked at once a millisecond: ask until the close is seen,
        // bounded.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let next = Arc::clone(&cache.get(&route(port), Caller::Waits, None).unwrap());
            if !Arc::ptr_eq(&next, &first) {
                break;
            }
            assert!(Instant::now() < deadline, "the close was never seen");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            cache.count("127.0.0.1", port),
            1,
            "the closed one is dropped"
        );
    }

    #[test]
    fn a_route_keeps_its_slot_and_the_slot_outlives_closing_every_connection() {
        let (_listener, port) = listening();
        let cache = exclusive(8);
        let kept = route(port);
        let first = Arc::clone(&cache.get(&kept, Caller::Waits, None).unwrap());
        // A route met for the first time finds the same slot in the map.
        let again = Arc::clone(&cache.get(&route(port), Caller::Waits, None).unwrap());
        assert!(Arc::ptr_eq(&first, &again));
        cache.close_all(GiopVersion::V1_2);
        assert_eq!(cache.count("127.0.0.1", port), 0);
        // The route's remembered slot is still the cache's: what it opens
        // now, the cache holds (and would close and evict).
        let fresh = Arc::clone(&cache.get(&kept, Caller::Waits, None).unwrap());
        assert!(!Arc::ptr_eq(&fresh, &first));
        assert_eq!(cache.count("127.0.0.1", port), 1);
        cache.evict(&fresh);
        assert_eq!(cache.count("127.0.0.1", port), 0);
    }
}
