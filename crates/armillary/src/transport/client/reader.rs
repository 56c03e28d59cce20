//! Who reads for asynchronous requests, whose owners do not read: the
//! connection's reader thread, or a reactor that watches the socket; and
//! the ending of requests whose deadline has passed.

use std::net::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::read::{readiness, Readiness, POLL_READ};
use super::{release, run, ClientConnection, Closed, ReadState};
use crate::reactor::{EventHandler, Reactor};
use crate::transport::socket_wait::SocketWait;

/// How long the reader thread reads at most before it looks at deadlines
/// again when it cannot wait in a poll of the socket (see
/// [`SocketWait::new`]): a request bound while it reads, with an earlier
/// deadline than that read's end, ends this much late at worst.
const READER_TICK: Duration = Duration::from_millis(50);

/// How long the thread reading for asynchronous requests stays parked
/// once none is outstanding, in case more come (a client making one AMI
/// call at a time would otherwise start a thread per call); also how long
/// the writer thread stays parked with nothing to write.
pub(super) const READER_LINGER: Duration = Duration::from_secs(2);

/// The reactor's handler for a client connection it watches: reads the
/// replies that have arrived when no caller is reading the connection.
struct RepliesReady(std::sync::Weak<ClientConnection>);

impl EventHandler for RepliesReady {
    fn ready(&self, reactor: &Arc<Reactor>, _readiness: crate::reactor::Readiness) {
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        if conn.drain() {
            // A thread may be waiting in the reactor's poll for this reply
            // (another thread handled the event): wake it.
            reactor.post(Box::new(|| {}));
        }
    }

    /// Ends the requests whose deadline passed, and reads what a caller
    /// that stopped leading left in the socket (no new event announces
    /// bytes that arrived while it read); then asks for the next look
    /// while asynchronous requests are outstanding.
    fn tick(&self, reactor: &Arc<Reactor>) {
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        conn.expire();
        self.ready(reactor, crate::reactor::Readiness::default());
        conn.schedule_check(reactor);
    }
}

impl ClientConnection {
    /// Starts an ORB thread that reads this connection while asynchronous
    /// requests (AMI futures and callbacks, whose owners do not read) are
    /// outstanding on it, unless one reads it already (or is parked, then
    /// it is woken); true when it started one. When none remain the thread
    /// parks without reading (a synchronous caller reads its own reply
    /// meanwhile) for [`READER_LINGER`], and ends if none came by then or
    /// the connection closed: one thread per connection with such work,
    /// never one per request, and no thread started per call when calls
    /// come one at a time.
    ///
    /// This is the one place that decides who reads for asynchronous
    /// requests; a reactor that watches client connections can take it over.
    pub(crate) fn ensure_reader(self: &Arc<Self>) -> bool {
        {
            let mut state = self.state.lock();
            if state.closed.is_some() || state.dispatchers.readerless() == 0 {
                return false;
            }
            if state.reader {
                // A parked reader takes the new requests on.
                if state.reader_parked {
                    self.reader_resume.notify_all();
                }
                return false;
            }
            state.reader = true;
        }
        let conn = self.clone();
        let spawned = std::thread::Builder::new()
            .name("armillary-ami-reader".into())
            .spawn(move || conn.read_while_asynchronous());
        if spawned.is_err() {
            // Nobody can read for them: end them rather than leave them
            // hanging.
            let _ = self.stream.socket().shutdown(Shutdown::Both);
            let mut state = self.state.lock();
            state.reader = false;
            self.end(&mut state, Closed::Broken);
            release(state);
            return false;
        }
        true
    }

    /// The body of the thread [`ensure_reader`](Self::ensure_reader)
    /// starts: [reads](Self::read_for_asynchronous) while asynchronous
    /// requests are outstanding, then [lingers](Self::linger).
    fn read_while_asynchronous(&self) {
        // A wait for bytes that a request with an earlier deadline cuts
        // short; without one (no poll available) the thread reads with a
        // timeout of at most `READER_TICK`.
        let mut socket_wait = match SocketWait::new(self.stream.socket()) {
            Ok((wait, waker)) => {
                self.state.lock().reader_waker = Some(waker);
                Some(wait)
            }
            Err(_) => None,
        };
        loop {
            self.read_for_asynchronous(socket_wait.as_mut());
            if !self.linger() {
                return;
            }
        }
    }

    /// Leads (or follows) on the connection while asynchronous requests
    /// are outstanding on it, ending each at its deadline. It first reads
    /// for [`POLL_READ`] at most, which takes a reply that has arrived or
    /// comes at once in one system call; when that read brings nothing,
    /// it waits in `socket_wait` until bytes arrive or the earliest
    /// deadline (a request bound with an earlier one wakes it), so that a
    /// slow reply costs no wake-ups. While a caller reads, it follows
    /// until then. A request bound during that first read with a deadline
    /// sooner than its end ends [`POLL_READ`] late at worst.
    fn read_for_asynchronous(&self, mut socket_wait: Option<&mut SocketWait>) {
        let mut state = self.state.lock();
        // Whether the last read brought something: the next read, not a
        // look and a wait, then comes first.
        let mut reading = true;
        loop {
            #[cfg(test)]
            {
                state.reader_turns += 1;
            }
            self.expire_locked(&mut state);
            if state.closed.is_some() || state.dispatchers.readerless() == 0 {
                break;
            }
            // What the last read or the deadlines ended is told (callbacks
            // run) before the thread sleeps again.
            let handoffs = state.dispatchers.take_handoffs();
            if !handoffs.is_empty() {
                MutexGuard::unlocked(&mut state, || run(handoffs));
                continue;
            }
            let until = state.dispatchers.next_expiry();
            if state.leader {
                match until {
                    Some(until) => {
                        self.wake.wait_until(&mut state, until);
                    }
                    None => self.wake.wait(&mut state),
                }
            } else if let Some(wait) = socket_wait.as_deref_mut() {
                if reading && until.is_none_or(|until| until >= Instant::now() + POLL_READ) {
                    reading = self.lead_once(&mut state, Some(POLL_READ));
                } else if self.has_input() {
                    // What has arrived: a read takes it at once.
                    reading = self.lead_once(&mut state, Some(POLL_READ));
                } else {
                    #[cfg(test)]
                    {
                        state.socket_waits += 1;
                    }
                    MutexGuard::unlocked(&mut state, || wait.wait(until));
                }
            } else {
                let now = Instant::now();
                let timeout = until.map_or(READER_TICK, |d| {
                    d.saturating_duration_since(now)
                        .clamp(Duration::from_millis(1), READER_TICK)
                });
                self.lead_once(&mut state, Some(timeout));
            }
        }
        release(state);
    }

    /// Parks the reader thread, not reading, until asynchronous requests
    /// are outstanding again (true: it reads for them), or the connection
    /// closed or [`READER_LINGER`] passed without any (false: the thread
    /// ends, and the next asynchronous request starts another).
    fn linger(&self) -> bool {
        let mut state = self.state.lock();
        let until = Instant::now() + READER_LINGER;
        state.reader_parked = true;
        let resumed = loop {
            if state.closed.is_some() {
                break false;
            }
            if state.dispatchers.readerless() > 0 {
                break true;
            }
            if self.reader_resume.wait_until(&mut state, until).timed_out() {
                break state.closed.is_none() && state.dispatchers.readerless() > 0;
            }
            #[cfg(test)]
            {
                state.linger_wakeups += 1;
            }
        };
        state.reader_parked = false;
        if !resumed {
            state.reader = false;
            state.reader_waker = None;
        }
        release(state);
        resumed
    }

    /// Whether something waits to be read: bytes in the socket (or its
    /// end), or input the stream has read and not handed out yet.
    fn has_input(&self) -> bool {
        self.stream.has_buffered_input() || readiness(self.stream.socket()) != Readiness::Nothing
    }

    /// Has `reactor` watch the socket and read the replies that arrive
    /// (when no caller reads the connection), once per reactor: a thread
    /// that runs the reactor while it waits (wait on the reactor,
    /// Leader/Followers) gets its reply that way. Without `mio`'s file
    /// descriptor sources (not Unix) the waiting thread finds its reply by
    /// polling the connection between turns of the reactor instead.
    pub(crate) fn watch_with(self: &Arc<Self>, reactor: &Arc<Reactor>) {
        let mut watched = self.watched_by.lock();
        watched.retain(|(r, _)| r.strong_count() > 0);
        if watched
            .iter()
            .any(|(r, _)| std::ptr::eq(r.as_ptr(), Arc::as_ptr(reactor)))
        {
            return;
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let fd = self.stream.socket().as_raw_fd();
            let handler = Arc::new(RepliesReady(Arc::downgrade(self)));
            if let Ok(token) = reactor.register(
                &mut mio::unix::SourceFd(&fd),
                mio::Interest::READABLE,
                handler,
            ) {
                watched.push((Arc::downgrade(reactor), token));
            }
        }
    }

    /// Ends the requests whose deadline has passed.
    fn expire(&self) {
        let mut state = self.state.lock();
        self.expire_locked(&mut state);
        self.wake.notify_all();
        release(state);
    }

    /// Ends the requests whose deadline has passed (see
    /// [`DispatcherTable::expire`]), the read state locked.
    ///
    /// [`DispatcherTable::expire`]: crate::transport::reply::DispatcherTable::expire
    #[inline]
    pub(super) fn expire_locked(&self, state: &mut ReadState) {
        if state.dispatchers.next_expiry().is_none() {
            // No request has a deadline: the clock is not read.
            return;
        }
        self.expire_due(state);
    }

    /// [`expire_locked`](Self::expire_locked) once a request has a
    /// deadline.
    fn expire_due(&self, state: &mut ReadState) {
        let frames = state.frames;
        state.dispatchers.expire(Instant::now(), frames, &mut |id| {
            self.outbox.lock().departure(id)
        });
    }

    /// Has `reactor` read the replies of the asynchronous requests
    /// outstanding on the connection (instead of a reader thread, see
    /// [`ensure_reader`](Self::ensure_reader)), and reads those that came
    /// already.
    pub(crate) fn read_in(self: &Arc<Self>, reactor: &Arc<Reactor>) {
        self.watch_with(reactor);
        if self.drain() {
            reactor.post(Box::new(|| {}));
        }
        self.schedule_check(reactor);
    }

    /// While asynchronous requests the reactor reads for are outstanding,
    /// asks it for a tick (it has no timer of its own) at their earliest
    /// deadline, and within [`TICK_INTERVAL`](crate::reactor::TICK_INTERVAL)
    /// at the latest, for bytes a caller that stopped leading left unread.
    fn schedule_check(&self, reactor: &Reactor) {
        let next = {
            let state = self.state.lock();
            if state.closed.is_some() || state.dispatchers.readerless() == 0 {
                return;
            }
            let soon = Instant::now() + crate::reactor::TICK_INTERVAL;
            state
                .dispatchers
                .next_expiry()
                .map_or(soon, |expiry| expiry.min(soon))
        };
        reactor.tick_at(next);
    }
}
