//! Wait strategies: how a thread that has sent a request waits for its
//! reply (TAO's wait strategies, chosen by `-ORBWaitStrategy`; see
//! [`crate::config::WaitStrategy`] for the user's view).
//!
//! A waiting thread either only reads its connection ([`read`]), or keeps
//! serving what the ORB must serve while it waits ([`reactor`],
//! [`leader_followers`]): that is what lets a servant call another ORB
//! which calls back into this one (a nested upcall) without deadlock, in
//! every server concurrency model. What there is to serve depends on the
//! thread, and is found in one place ([`serving`]):
//!
//! - a thread that handles a reactor event (a server thread in an upcall,
//!   or an application thread in `Orb::run`/`perform_work`) serves that
//!   reactor: it runs it, so requests of the ORB's server and replies of
//!   client connections (which are then registered with the reactor) are
//!   handled meanwhile;
//! - a thread whose concurrency model queued work for it alone (the
//!   connection a thread-per-connection thread reads, the queue of a
//!   worker-pool, thread-per-object or locality worker) runs that work
//!   through its serving hook (`thread_role::serve_while_waiting`);
//! - with [`ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads)
//!   any thread serves the ORB's reactor (nobody else may be running it);
//! - any other thread serves nothing: the server's own threads do;
//! - a thread already [`MAX_NESTED_SERVING`](crate::thread_role::MAX_NESTED_SERVING)
//!   serving waits deep serves nothing more until an inner wait returns
//!   (its stack is bounded; requests wait for it instead).
//!
//! And whatever the strategy, a thread in an upcall of a
//! SINGLE_THREAD_MODEL POA runs the requests for that POA that other
//! threads hand over to it while it waits (a callback into the POA, which
//! would otherwise wait for the upcall that waits for it: see
//! `poa::single_thread`), between slices of its wait.
//!
//! A thread that serves nothing waits on read whatever the strategy, so a
//! pure client keeps the fastest path (the caller reads its own reply).
//!
//! **Invariant:** a client connection is read by at most one thread at a
//! time, whichever strategy reads it (the connection's leader flag: the
//! reactor's handler for it reads only when no caller leads it).

mod leader_followers;
mod reactor;
mod read;

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::{ClientConnection, ReadState};
use crate::config::OrbConfig;
use crate::reactor::Reactor;
use crate::thread_role::{hand_overs, HandOvers};

pub(crate) use leader_followers::LeaderFollowers;
pub(crate) use reactor::WaitOnReactor;
pub(crate) use read::WaitOnRead;

/// The longest a serving waiter spends in one wait for an event before it
/// looks again at its own reply (which another thread may have read) and
/// at its deadline. Bounds latency only in the rare case that nothing
/// wakes it; replies normally wake it at once.
const SLICE: Duration = Duration::from_millis(2);

/// What a waiting thread must keep serving while it waits: what it
/// serves by running it ([`Serve`]), and the requests handed over to it
/// for the SINGLE_THREAD_MODEL POAs whose upcalls it is in.
#[derive(Debug)]
pub(crate) struct Serving {
    what: Serve,
    /// Marks those POAs' owner as waiting while the wait lasts (other
    /// threads hand their requests over meanwhile); `None` when the thread
    /// is in no such upcall.
    handed_over: Option<HandOvers>,
    /// Counts this wait among those the thread nests while it serves.
    _nested: Option<crate::thread_role::NestedServing>,
}

/// What a waiting thread serves by running it.
pub(crate) enum Serve {
    /// Nothing: the server's own threads serve (or there is no server).
    Nothing,
    /// A reactor: the thread's upcall came from it, or the application's
    /// threads drive it.
    Reactor(Arc<Reactor>),
    /// The work this thread's concurrency model queued for it alone (the
    /// connection a thread-per-connection thread reads, a worker's
    /// queue): its serving hook (`thread_role::serve_while_waiting`),
    /// which runs some of it and tells whether it ran any.
    Hook(Rc<dyn Fn() -> bool>),
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Serve::Nothing => "Nothing",
            Serve::Reactor(_) => "Reactor",
            Serve::Hook(_) => "Hook",
        })
    }
}

impl From<Serve> for Serving {
    /// Serving `what`, with nothing handed over.
    fn from(what: Serve) -> Serving {
        Serving {
            what,
            handed_over: None,
            _nested: None,
        }
    }
}

impl Serving {
    /// What the thread serves by running it.
    pub(crate) fn what(&self) -> &Serve {
        &self.what
    }

    /// Whether requests may be handed over to this thread while it waits:
    /// then even a wait that serves nothing else must run them now and
    /// then.
    fn takes_hand_overs(&self) -> bool {
        self.handed_over.is_some()
    }

    /// Runs one request handed over to this thread, if any. True if it
    /// ran one.
    fn run_handed_over(&self) -> bool {
        self.handed_over.as_ref().is_some_and(HandOvers::run_one)
    }
}

/// How a thread waits for a reply on a client connection.
pub(crate) trait Waiter: Send + Sync + std::fmt::Debug {
    /// Waits until `done` (asked with the connection's read state locked)
    /// is true or the connection has closed (true), or `deadline` passes
    /// (false), serving `serving` meanwhile as the strategy does.
    fn wait(
        &self,
        serving: &Serving,
        conn: &Arc<ClientConnection>,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&mut ReadState) -> bool,
    ) -> bool;

    /// Arranges for the replies of asynchronous requests (AMI) on `conn`,
    /// whose owners do not wait for them, to be read by `reactor` (the
    /// ORB's, when it has a server); false when this strategy leaves that
    /// to a reader thread of the connection (the default).
    fn read_asynchronous(
        &self,
        reactor: Option<&Arc<Reactor>>,
        conn: &Arc<ClientConnection>,
    ) -> bool {
        let _ = (reactor, conn);
        false
    }
}

/// [`Waiter::read_asynchronous`] for the strategies that run the
/// reactor: the reactor reads the connection, so `Orb::run` and
/// `Orb::perform_work` (application threads), or the server's threads,
/// deliver AMI replies without a thread of their own. Deadlines of those
/// requests are then checked at the reactor's ticks, which the connection
/// asks for while they are outstanding (at their earliest deadline, and
/// every [`TICK_INTERVAL`](crate::reactor::TICK_INTERVAL) at least).
fn read_in_reactor(reactor: Option<&Arc<Reactor>>, conn: &Arc<ClientConnection>) -> bool {
    match reactor {
        Some(reactor) if !reactor.is_stopping() => {
            conn.read_in(reactor);
            true
        }
        _ => false,
    }
}

/// The wait strategy `config` asks for (the one place it is chosen; a
/// strategy added to the option has no arm here until it has a file).
pub(crate) fn strategy(config: &OrbConfig) -> Box<dyn Waiter> {
    match config.get_wait_strategy() {
        crate::config::WaitStrategy::Read => Box::new(WaitOnRead),
        crate::config::WaitStrategy::Reactor => Box::new(WaitOnReactor),
        crate::config::WaitStrategy::LeaderFollowers => Box::new(LeaderFollowers::default()),
    }
}

/// What the calling thread must serve while it waits for a reply:
/// `driven` is the reactor of its ORB's server when the application's
/// threads drive it (any waiting thread serves it then). While the
/// returned value lives, the SINGLE_THREAD_MODEL POAs whose upcalls the
/// thread is in take it as waiting (their requests are handed over to it).
pub(crate) fn serving(driven: Option<Arc<Reactor>>) -> Serving {
    let handed_over = hand_overs();
    let (what, nested) = match what_to_serve(driven) {
        // A wait that serves nothing and takes no work handed over runs
        // nothing, so it nests nothing: not counted.
        Serve::Nothing if handed_over.is_none() => (Serve::Nothing, None),
        // Too deep already: this wait serves nothing more but work
        // handed over (see `thread_role::nested_serving`).
        what => match crate::thread_role::nested_serving() {
            Some(nested) => (what, Some(nested)),
            None => (Serve::Nothing, None),
        },
    };
    Serving {
        what,
        handed_over,
        _nested: nested,
    }
}

fn what_to_serve(driven: Option<Arc<Reactor>>) -> Serve {
    if let Some(hook) = crate::thread_role::serving_hook() {
        return Serve::Hook(hook);
    }
    if let Some(reactor) = crate::reactor::innermost_handled() {
        return Serve::Reactor(reactor);
    }
    match driven {
        Some(reactor) => Serve::Reactor(reactor),
        None => Serve::Nothing,
    }
}

/// The end of the next slice of a serving wait: `SLICE` from now, or the
/// deadline if sooner.
fn slice_end(deadline: Option<Instant>) -> Instant {
    let end = Instant::now() + SLICE;
    deadline.map_or(end, |d| d.min(end))
}

/// Waits for `done` on `conn`, alternately leading the client connection
/// for a slice and running `serve`: with thread per connection (or a
/// model's worker), what arrived on the thread's own server connection (or
/// its queue), and the requests handed over to it (no other thread reads
/// either: the client connection's leader flag and the server
/// connection's thread guarantee it).
fn wait_in_slices(
    serve: &dyn Fn() -> bool,
    conn: &Arc<ClientConnection>,
    deadline: Option<Instant>,
    done: &mut dyn FnMut(&mut ReadState) -> bool,
) -> bool {
    loop {
        if conn.wait_until(Some(slice_end(deadline)), &mut *done) {
            return true;
        }
        if deadline.is_some_and(|d| d <= Instant::now()) {
            return false;
        }
        serve();
    }
}

/// Reads `conn` until `done` (true), the connection closes (true) or
/// `deadline` passes (false), serving nothing but the requests handed over
/// to the thread, if it takes any (then in slices).
fn wait_reading(
    serving: &Serving,
    conn: &Arc<ClientConnection>,
    deadline: Option<Instant>,
    done: &mut dyn FnMut(&mut ReadState) -> bool,
) -> bool {
    if serving.takes_hand_overs() {
        wait_in_slices(&|| serving.run_handed_over(), conn, deadline, done)
    } else {
        conn.wait_until(deadline, done)
    }
}

/// Thread per connection (or a model's worker): waits for `done` on
/// `conn`, serving between slices what `serve` serves and the requests
/// handed over.
fn wait_serving_own_connection(
    serving: &Serving,
    serve: &dyn Fn() -> bool,
    conn: &Arc<ClientConnection>,
    deadline: Option<Instant>,
    done: &mut dyn FnMut(&mut ReadState) -> bool,
) -> bool {
    let both = || {
        let served = serve();
        serving.run_handed_over() || served
    };
    wait_in_slices(&both, conn, deadline, done)
}

/// Runs `reactor` (which also reads `conn`, registered with it) until
/// `done`, the connection closes (true) or `deadline` passes (false).
/// While another thread polls the reactor (a server thread of a pool, or
/// another waiter), it does not queue for the poll behind it but sleeps
/// until something is read from `conn` (that thread's handler for `conn`
/// reads it and wakes it) or the slice ends. A stopping reactor serves
/// nothing more: the wait goes on reading `conn`.
fn run_reactor_until(
    serving: &Serving,
    reactor: &Arc<Reactor>,
    conn: &Arc<ClientConnection>,
    deadline: Option<Instant>,
    done: &mut dyn FnMut(&mut ReadState) -> bool,
) -> bool {
    conn.watch_with(reactor);
    loop {
        serving.run_handed_over();
        // A reply another thread read, or one waiting in the socket
        // (which the reactor announces only once).
        conn.poll();
        if conn.is_done(&mut *done) {
            return true;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| d <= now) {
            return false;
        }
        if reactor.is_stopping() {
            return wait_reading(serving, conn, deadline, done);
        }
        let end = slice_end(deadline);
        match reactor.try_turn(Some(end.saturating_duration_since(now))) {
            Ok(Some(_)) => {
                reactor.tick_if_due();
            }
            // Another thread polls the reactor (it reads the connection
            // too): sleep until something is read from the connection.
            Ok(None) => {
                if conn.follow_until(end, &mut *done) {
                    return true;
                }
            }
            Err(_) => return wait_reading(serving, conn, deadline, done),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::transport::client::tests::{connected, expect, reply, value};
    use crate::transport::client::Awaited;
    use crate::transport::reply::deferred::DeferredSlot;

    const LIMIT: Duration = Duration::from_secs(20);

    fn reply_value(awaited: Option<Awaited>) -> i32 {
        match awaited {
            Some(Awaited::Reply(frame)) => value(&frame),
            _ => panic!("no reply"),
        }
    }

    #[test]
    fn a_waiter_on_the_reactor_serves_it_until_its_reply_comes() {
        let reactor = Reactor::new().unwrap();
        let (conn, server) = connected();
        let serving = Serving::from(Serve::Reactor(reactor.clone()));
        let served = Arc::new(AtomicUsize::new(0));
        let strategies: [&dyn Waiter; 2] = [&WaitOnReactor, &LeaderFollowers::default()];
        for (id, strategy) in (1..).zip(strategies) {
            let slot = expect(&conn, id);
            // Work for the reactor, which only the waiting thread runs: it
            // sends the reply the waiter waits for.
            let served = served.clone();
            let mut server = server.try_clone().unwrap();
            reactor.post(Box::new(move || {
                served.fetch_add(1, Ordering::SeqCst);
                server.write_all(&reply(id, 100 + id as i32)).unwrap();
            }));
            let deadline = Some(Instant::now() + LIMIT);
            assert!(strategy.wait(&serving, &conn, deadline, &mut |_| slot.is_ready()));
            assert_eq!(reply_value(slot.take()), 100 + id as i32);
        }
        assert_eq!(served.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_thread_per_connection_waiter_serves_its_connection_meanwhile() {
        let (conn, server) = connected();
        let slot = expect(&conn, 1);
        let calls = Rc::new(std::cell::Cell::new(0));
        let serve = {
            let calls = calls.clone();
            let server = std::cell::RefCell::new(server);
            move || {
                // The first nested request "served" answers the waiter.
                calls.set(calls.get() + 1);
                if calls.get() == 1 {
                    server.borrow_mut().write_all(&reply(1, 111)).unwrap();
                }
                true
            }
        };
        let serving = Serving::from(Serve::Hook(Rc::new(serve)));
        let deadline = Some(Instant::now() + LIMIT);
        assert!(WaitOnReactor.wait(&serving, &conn, deadline, &mut |_| slot.is_ready()));
        assert_eq!(reply_value(slot.take()), 111);
        assert!(calls.get() >= 1);
    }

    #[test]
    fn a_follower_gets_the_reply_its_leader_read() {
        let reactor = Reactor::new().unwrap();
        let lf = Arc::new(LeaderFollowers::default());
        let (conn1, mut server1) = connected();
        let (conn2, mut server2) = connected();
        let slot1 = expect(&conn1, 1);
        let slot2 = expect(&conn2, 1);
        // Both connections are watched before either thread waits, so that
        // whoever leads reads both.
        conn1.watch_with(&reactor);
        conn2.watch_with(&reactor);
        let waiter = |conn: Arc<ClientConnection>,
                      slot: Arc<crate::transport::reply::sync::SyncSlot>| {
            let (lf, reactor) = (lf.clone(), reactor.clone());
            std::thread::spawn(move || {
                let serving = Serving::from(Serve::Reactor(reactor));
                let deadline = Some(Instant::now() + LIMIT);
                assert!(lf.wait(&serving, &conn, deadline, &mut |_| slot.is_ready()));
                reply_value(slot.take())
            })
        };
        let t1 = waiter(conn1.clone(), slot1);
        let t2 = waiter(conn2.clone(), slot2);
        server2.write_all(&reply(1, 222)).unwrap();
        assert_eq!(t2.join().unwrap(), 222);
        server1.write_all(&reply(1, 111)).unwrap();
        assert_eq!(t1.join().unwrap(), 111);
        assert!(lf.leader.lock().is_none());
    }

    #[test]
    fn the_reactor_reads_the_replies_of_asynchronous_requests() {
        let reactor = Reactor::new().unwrap();
        let (conn, mut server) = connected();
        let slot = Arc::new(DeferredSlot::new(true));
        conn.bind(1, slot.dispatcher(), None);
        // Wait on read leaves them to a reader thread.
        assert!(!WaitOnRead.read_asynchronous(Some(&reactor), &conn));
        assert!(!WaitOnReactor.read_asynchronous(None, &conn));
        assert!(LeaderFollowers::default().read_asynchronous(Some(&reactor), &conn));
        server.write_all(&reply(1, 111)).unwrap();
        // Nothing but the reactor reads the connection here.
        let deadline = Instant::now() + LIMIT;
        while !slot.is_ready() {
            assert!(
                Instant::now() < deadline,
                "the reactor never read the reply"
            );
            reactor.turn(Some(Duration::from_millis(10))).unwrap();
        }
        assert_eq!(reply_value(slot.take()), 111);
    }

    #[test]
    fn the_strategy_follows_the_configuration() {
        use crate::config::WaitStrategy as Kind;
        let pick = |c: OrbConfig| format!("{:?}", strategy(&c));
        assert!(pick(OrbConfig::new()).starts_with("LeaderFollowers"));
        assert_eq!(
            pick(OrbConfig::new().wait_strategy(Kind::Read)),
            "WaitOnRead"
        );
        assert_eq!(
            pick(OrbConfig::new().wait_strategy(Kind::Reactor)),
            "WaitOnReactor"
        );
    }

    #[test]
    fn a_thread_serves_what_it_handles_innermost_first() {
        let outer = Reactor::new().unwrap();
        let inner = Reactor::new().unwrap();
        let top = || match serving(None).what {
            Serve::Reactor(r) => Some(r),
            _ => None,
        };
        assert!(top().is_none());
        {
            let _a = crate::reactor::handling(&outer);
            assert!(Arc::ptr_eq(&top().unwrap(), &outer));
            {
                let _b = crate::reactor::handling(&inner);
                assert!(Arc::ptr_eq(&top().unwrap(), &inner));
            }
            assert!(Arc::ptr_eq(&top().unwrap(), &outer));
        }
        assert!(top().is_none());
        // An application-driven ORB's reactor, when nothing closer is.
        assert!(Arc::ptr_eq(
            &match serving(Some(outer.clone())).what {
                Serve::Reactor(r) => r,
                other => panic!("{other:?}"),
            },
            &outer
        ));
        // A serving hook comes first.
        let served = Rc::new(std::cell::Cell::new(0));
        {
            let s = served.clone();
            let _hook = crate::thread_role::serve_while_waiting(move || {
                s.set(s.get() + 1);
                true
            });
            let _a = crate::reactor::handling(&outer);
            match serving(None).what {
                Serve::Hook(hook) => assert!(hook()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(served.get(), 1);
        assert!(crate::thread_role::serving_hook().is_none());
    }
}
