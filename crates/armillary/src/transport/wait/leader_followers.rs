//! Leader/Followers: of the threads that must keep serving while they
//! wait (see [`super::serving`]), one leads, running the reactor; the
//! others follow, sleeping on their connection's condition variable, which
//! is signalled whenever a reply is read from it (by the reactor's handler
//! for the connection, on the leader's thread or another). The leader
//! hands each reply it reads to its owner that way, and gives up the lead
//! when its own reply has come; a follower takes it then. A leader whose
//! upcall waits again (a nested call) goes on leading.
//!
//! A thread-per-connection thread serves its own connection instead (no
//! other thread waits on it); a thread that serves nothing waits on read.

use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use parking_lot::Mutex;

use super::{
    read_in_reactor, run_reactor_until, slice_end, wait_reading, wait_serving_own_connection,
    Serve, Serving, Waiter,
};
use crate::reactor::Reactor;
use crate::transport::client::{ClientConnection, ReadState};

/// Leader/Followers (`-ORBWaitStrategy lf`, the default for most models).
#[derive(Debug, Default)]
pub(crate) struct LeaderFollowers {
    /// The thread that leads the reactor, if one does.
    pub(super) leader: Mutex<Option<ThreadId>>,
}

/// What a waiting thread is to do.
enum Role {
    /// Lead, having taken the lead (it gives it up when done).
    Took,
    /// Lead, as the leader already (a nested wait).
    Leading,
    /// Follow: another thread leads.
    Follow,
}

impl LeaderFollowers {
    fn role(&self) -> Role {
        let me = std::thread::current().id();
        let mut leader = self.leader.lock();
        match *leader {
            None => {
                *leader = Some(me);
                Role::Took
            }
            Some(t) if t == me => Role::Leading,
            Some(_) => Role::Follow,
        }
    }
}

impl Waiter for LeaderFollowers {
    fn wait(
        &self,
        serving: &Serving,
        conn: &Arc<ClientConnection>,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&mut ReadState) -> bool,
    ) -> bool {
        let reactor = match serving.what() {
            Serve::Nothing => return wait_reading(serving, conn, deadline, done),
            Serve::Hook(serve) => {
                return wait_serving_own_connection(serving, &**serve, conn, deadline, done)
            }
            Serve::Reactor(reactor) => reactor,
        };
        // The leader reads the connection through the reactor.
        conn.watch_with(reactor);
        loop {
            match self.role() {
                Role::Follow => {
                    serving.run_handed_over();
                    // What arrived while nobody read it (a reactor that
                    // cannot watch the connection, see `watch_with`).
                    conn.poll();
                    // Sleep until something is read from the connection
                    // (perhaps our reply) or the slice ends (the lead may
                    // be free by then).
                    if conn.follow_until(slice_end(deadline), &mut *done) {
                        return true;
                    }
                    if deadline.is_some_and(|d| d <= Instant::now()) {
                        return false;
                    }
                }
                Role::Leading => return run_reactor_until(serving, reactor, conn, deadline, done),
                Role::Took => {
                    let got = run_reactor_until(serving, reactor, conn, deadline, done);
                    *self.leader.lock() = None;
                    return got;
                }
            }
        }
    }

    fn read_asynchronous(
        &self,
        reactor: Option<&Arc<Reactor>>,
        conn: &Arc<ClientConnection>,
    ) -> bool {
        read_in_reactor(reactor, conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_leads_and_leads_again_when_nested() {
        let lf = Arc::new(LeaderFollowers::default());
        assert!(matches!(lf.role(), Role::Took));
        assert!(matches!(lf.role(), Role::Leading));
        let other = {
            let lf = lf.clone();
            std::thread::spawn(move || matches!(lf.role(), Role::Follow))
        };
        assert!(other.join().unwrap());
        *lf.leader.lock() = None;
        let other = {
            let lf = lf.clone();
            std::thread::spawn(move || matches!(lf.role(), Role::Took))
        };
        assert!(other.join().unwrap());
    }
}
