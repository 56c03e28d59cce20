//! A wait for one socket to become readable that another thread can cut
//! short: what a client connection's reader thread sleeps in while nothing
//! has arrived, so that it wakes when bytes arrive, when a request with a
//! deadline earlier than the one it sleeps until is bound (the binding
//! thread [wakes](SocketWaker::wake) it), or at that deadline — and at no
//! other time.
//!
//! It is a poll of its own (epoll, through mio) with the socket registered
//! for reading, and a waker. The events are edge-triggered: the reader
//! looks at the socket without blocking before it waits, and bytes that
//! arrive after that look raise an event the wait sees. Where mio cannot
//! watch a standard socket (not Unix), [`SocketWait::new`] fails and the
//! reader falls back to reading with a timeout.

use std::io;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

/// The token of the socket in the poll.
#[cfg(unix)]
const SOCKET: mio::Token = mio::Token(0);

/// The token of the waker.
#[cfg(unix)]
const WAKER: mio::Token = mio::Token(1);

/// A poll of one socket's readability, with a [`SocketWaker`].
#[derive(Debug)]
pub(crate) struct SocketWait {
    poll: mio::Poll,
    events: mio::Events,
}

/// Ends a [`SocketWait::wait`] under way, or the next one.
#[derive(Debug, Clone)]
pub(crate) struct SocketWaker(Arc<mio::Waker>);

impl SocketWait {
    /// A wait on `socket`'s readability, and its waker.
    #[cfg(unix)]
    pub(crate) fn new(socket: &TcpStream) -> io::Result<(SocketWait, SocketWaker)> {
        use std::os::fd::AsRawFd;
        let poll = mio::Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), WAKER)?;
        let fd = socket.as_raw_fd();
        poll.registry().register(
            &mut mio::unix::SourceFd(&fd),
            SOCKET,
            mio::Interest::READABLE,
        )?;
        let wait = SocketWait {
            poll,
            events: mio::Events::with_capacity(2),
        };
        Ok((wait, SocketWaker(Arc::new(waker))))
    }

    /// Not available: mio watches only its own sockets here.
    #[cfg(not(unix))]
    pub(crate) fn new(_socket: &TcpStream) -> io::Result<(SocketWait, SocketWaker)> {
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Waits until bytes arrive on the socket (or it fails, or the peer
    /// closes it), the waker is woken, or `until` passes (`None`: no
    /// limit). It may also end early, for nothing: the caller looks again.
    pub(crate) fn wait(&mut self, until: Option<Instant>) {
        let timeout = until.map(|u| u.saturating_duration_since(Instant::now()));
        // An error (a signal) ends the wait early, which is allowed.
        let _ = self.poll.poll(&mut self.events, timeout);
    }
}

impl SocketWaker {
    /// Ends the wait under way, or the next one.
    pub(crate) fn wake(&self) {
        let _ = self.0.wake();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_wait_ends_for_bytes_for_a_wake_or_at_its_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let (mut wait, waker) = SocketWait::new(&client).unwrap();
        // Only a wait that does not end reaches this.
        let far = || Some(Instant::now() + Duration::from_secs(60));
        let started = Instant::now();
        // At its deadline (here: one already passed).
        wait.wait(Some(Instant::now()));
        // For a wake from another thread.
        let woken = {
            let waker = waker.clone();
            std::thread::spawn(move || waker.wake())
        };
        wait.wait(far());
        woken.join().unwrap();
        // For bytes.
        server.write_all(b"x").unwrap();
        wait.wait(far());
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}
