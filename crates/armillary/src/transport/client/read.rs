//! Reading and waiting: Leader/Followers on the connection (a caller
//! leads, reading the socket, or follows until its reply or leadership
//! comes), non-blocking polls and drains, and what a read brings.

use std::io::ErrorKind;
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary_giop::giop::{Frame, FrameError, MessageType};
use parking_lot::MutexGuard;

use super::{
    needs_new_timeout, ran_out, release, run, Awaited, ClientConnection, Closed, ReadState,
};
use crate::trace::Side;
use crate::transport::reply::sync::SyncSlot;
use crate::transport::tls::is_tls_refusal;
use crate::transport::wait::{Serving, Waiter};

/// How long a non-blocking [`ClientConnection::poll`] may spend reading
/// once the socket has bytes: a TLS record cut in two may need its rest.
pub(super) const POLL_READ: Duration = Duration::from_millis(1);

impl ClientConnection {
    /// Waits for the reply to `id`, whose dispatcher fills `slot`, until
    /// `deadline` (for ever without one), reading the socket when no one
    /// else does.
    #[cfg(test)]
    pub(crate) fn wait_reply(
        self: &Arc<Self>,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
    ) -> Awaited {
        use crate::transport::wait::{Serve, Serving, WaitOnRead};
        let serving = Serving::from(Serve::Nothing);
        self.wait_reply_by(id, slot, deadline, &WaitOnRead, &serving)
    }

    /// Waits for the reply to `id`, whose dispatcher fills `slot`, until
    /// `deadline` (for ever without one), the way `strategy` waits,
    /// serving `serving` meanwhile.
    pub(crate) fn wait_reply_by(
        self: &Arc<Self>,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
        strategy: &dyn Waiter,
        serving: &Serving,
    ) -> Awaited {
        if !strategy.wait(serving, self, deadline, &mut |_| slot.is_ready()) {
            self.time_out(id);
        }
        // The dispatcher ran (reply, close or time-out) unless the request
        // was never bound; then nothing can come.
        slot.take().unwrap_or(Awaited::TimedOut {
            silent: true,
            sent: true,
        })
    }

    /// Leads or follows on the connection until `done` (asked with the
    /// read state locked, after each thing that may change it) is true,
    /// the connection has closed (true), or `deadline` passes (false).
    pub(crate) fn wait_until(
        &self,
        deadline: Option<Instant>,
        mut done: impl FnMut(&mut ReadState) -> bool,
    ) -> bool {
        let mut state = self.state.lock();
        let ended = loop {
            if done(&mut state) || state.closed.is_some() {
                break true;
            }
            // The time left, for a call with a deadline (the clock is read
            // only then).
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|left| left.is_zero()) {
                break false;
            }
            if state.leader {
                match deadline {
                    Some(deadline) => {
                        self.wake.wait_until(&mut state, deadline);
                    }
                    None => self.wake.wait(&mut state),
                }
                continue;
            }
            // Lead: read no longer than our own deadline allows (1 ms at
            // least: a zero timeout means none).
            let timeout = left.map(|left| left.max(Duration::from_millis(1)));
            self.lead_once(&mut state, timeout);
            // Callbacks the read made ready run now, with the connection
            // free for another leader meanwhile.
            let handoffs = state.dispatchers.take_handoffs();
            if !handoffs.is_empty() {
                MutexGuard::unlocked(&mut state, || run(handoffs));
            }
        };
        release(state);
        ended
    }

    /// Reads what has arrived, without blocking, when no other thread is
    /// reading: replies go to their dispatchers, and requests whose
    /// deadline has passed are ended as timed out.
    pub(crate) fn poll(&self) {
        let mut state = self.state.lock();
        if state.leader || state.closed.is_some() {
            return;
        }
        self.expire_locked(&mut state);
        if readiness(self.stream.socket()) != Readiness::Nothing {
            self.lead_once(&mut state, Some(POLL_READ));
        }
        release(state);
    }

    /// Whether `done` holds (asked with the read state locked) or the
    /// connection has closed.
    pub(crate) fn is_done(&self, done: &mut dyn FnMut(&mut ReadState) -> bool) -> bool {
        let mut state = self.state.lock();
        done(&mut state) || state.closed.is_some()
    }

    /// Sleeps until `done` holds or the connection closes (true), or
    /// `until` passes (false), without reading: woken whenever a thread
    /// that reads the connection has read something (a follower of a
    /// reactor that reads it, see [`watch_with`](Self::watch_with)).
    pub(crate) fn follow_until(
        &self,
        until: Instant,
        done: &mut dyn FnMut(&mut ReadState) -> bool,
    ) -> bool {
        let mut state = self.state.lock();
        loop {
            if done(&mut state) || state.closed.is_some() {
                return true;
            }
            if self.wake.wait_until(&mut state, until).timed_out() {
                return done(&mut state) || state.closed.is_some();
            }
        }
    }

    /// Reads every reply that has arrived, without blocking, unless a
    /// caller is reading the connection (it will read them). True if any
    /// reply was handed to its dispatcher.
    pub(super) fn drain(&self) -> bool {
        let mut state = self.state.lock();
        let before = state.delivered;
        while !state.leader
            && state.closed.is_none()
            && readiness(self.stream.socket()) != Readiness::Nothing
        {
            self.lead_once(&mut state, Some(POLL_READ));
        }
        let delivered = state.delivered != before || state.closed.is_some();
        release(state);
        delivered
    }

    /// One read as the leader (with the read state unlocked meanwhile),
    /// `timeout` at most; what it brings is dispatched, then the followers
    /// are woken (one may have its reply, one must lead). False when the
    /// read brought nothing: its time ran out (or a signal cut it short)
    /// with the connection still open.
    pub(super) fn lead_once(
        &self,
        state: &mut MutexGuard<'_, ReadState>,
        timeout: Option<Duration>,
    ) -> bool {
        if needs_new_timeout(state.read_timeout, timeout) {
            if self.stream.socket().set_read_timeout(timeout).is_err() {
                self.end(state, Closed::Broken);
                let _ = self.stream.socket().shutdown(Shutdown::Both);
                return true;
            }
            state.read_timeout = timeout;
        }
        state.leader = true;
        let mut buf = std::mem::take(&mut state.buf);
        // The rest of a large reply arriving is read straight into its
        // own buffer: its body then reaches the frame with no copy.
        let mut direct = state.decoder.lend_for_read(crate::transport::DIRECT_READ);
        let read = MutexGuard::unlocked(state, || match &mut direct {
            Some(lent) => self.stream.read(lent.room()),
            None => self.stream.read(&mut buf),
        });
        state.leader = false;
        let brought = !matches!(&read, Err(e) if ran_out(e));
        if !matches!(read, Ok(1..)) {
            if let Some(lent) = direct.take() {
                // Nothing read into it: the decoder takes it back as it was.
                let _ = state.decoder.handle_direct_read(lent, 0);
            }
        }
        match read {
            Err(e) if is_tls_refusal(&e) => {
                state.closed.get_or_insert(Closed::Refused);
            }
            // Out of time, or a signal: the caller looks at its deadline.
            Err(e) if ran_out(&e) => {}
            Ok(0) | Err(_) => {
                if state.closed.is_none() {
                    let why = read
                        .as_ref()
                        .err()
                        .map_or(ENDED, |e| e as &dyn std::fmt::Display);
                    crate::trace::connection_broken(Side::Client, self.peer(), why);
                }
                state.closed.get_or_insert(Closed::Broken);
            }
            Ok(n) => {
                let mut too_large = None;
                let decoded = match direct.take() {
                    Some(lent) => state.decoder.handle_direct_read(lent, n),
                    None => state.decoder.handle_bytes(&buf[..n]),
                };
                if let Err(e) = decoded {
                    if matches!(e, FrameError::TooLarge { .. }) {
                        too_large = state.decoder.refused_request_id();
                    }
                    crate::trace::frame_refused(Side::Client, self.peer(), &e, None);
                    state.closed = Some(Closed::Broken);
                }
                let before = state.frames;
                while let Some(frame) = state.decoder.poll_frame() {
                    state.frames += 1;
                    if accept(state, frame) == Some(MessageType::MessageError) {
                        crate::trace::message_error_received(self.peer());
                    }
                }
                if state.frames != before {
                    state.known_open();
                }
                // The reply the decoder refused ends its request alone;
                // the close ends the others.
                if let Some(id) = too_large {
                    state.dispatchers.settle(id, Awaited::ReplyTooLarge);
                }
            }
        }
        state.buf = buf;
        if let Some(closed) = state.closed {
            self.end(state, closed);
            self.stream.shutdown();
        } else {
            self.expire_locked(state);
        }
        self.wake.notify_all();
        brought
    }
}

/// Takes one message the leader read: a reply goes to its dispatcher (or,
/// when none is bound, is dropped: a oneway's, or one whose owner gave up
/// or timed out); anything else closes the connection. Returns the
/// message's type.
fn accept(state: &mut ReadState, frame: Frame) -> Option<MessageType> {
    let Ok(header) = armillary_giop::giop::MessageHeader::decode(&frame.bytes) else {
        state.closed = Some(Closed::Broken);
        return None;
    };
    match header.message_type {
        MessageType::Reply | MessageType::LocateReply => {
            // The id only: the caller decodes the reply (once), and a
            // malformed one reaches it as MARSHAL.
            if let Some(id) = frame.reply_request_id() {
                if state.dispatchers.dispatch(id, frame) {
                    state.delivered += 1;
                }
            }
        }
        MessageType::CloseConnection => state.closed = Some(Closed::Orderly),
        MessageType::MessageError => state.closed = Some(Closed::Broken),
        // Requests, fragments-out-of-place and cancels make no sense
        // on a client connection without bidirectional GIOP.
        _ => state.closed = Some(Closed::Broken),
    }
    Some(header.message_type)
}

/// What a read that found the end of the stream says.
const ENDED: &dyn std::fmt::Display = &"the server closed the connection without CloseConnection";

/// What a look at a socket without blocking finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Readiness {
    /// Nothing to read yet.
    Nothing,
    /// Bytes to read.
    Data,
    /// Its end, or an error: the peer closed or reset the connection.
    Closed,
}

/// Peeks at `stream` without blocking (one `recv(MSG_PEEK | MSG_DONTWAIT)`).
#[cfg(unix)]
pub(super) fn readiness(stream: &TcpStream) -> Readiness {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    match socket2::SockRef::from(stream)
        .recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT)
    {
        Ok(0) => Readiness::Closed,
        Ok(_) => Readiness::Data,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
            Readiness::Nothing
        }
        Err(_) => Readiness::Closed,
    }
}

/// Peeks at `stream` without blocking (the socket is non-blocking for the
/// duration of the peek).
#[cfg(not(unix))]
pub(super) fn readiness(stream: &TcpStream) -> Readiness {
    if stream.set_nonblocking(true).is_err() {
        return Readiness::Data;
    }
    let mut byte = [0u8];
    let found = match stream.peek(&mut byte) {
        Ok(0) => Readiness::Closed,
        Ok(_) => Readiness::Data,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
            Readiness::Nothing
        }
        Err(_) => Readiness::Closed,
    };
    let _ = stream.set_nonblocking(false);
    found
}
