//! The reactor: one epoll instance (through mio) that tells the server
//! which sockets are ready, shared by the threads of the concurrency model.
//!
//! With one thread this is the single-threaded reactive model. With N
//! threads it is Leader/Followers: the thread that holds the poll lock is
//! the leader and waits for events; it takes one event, gives the lock to
//! the next follower and handles its event, so there is always a thread
//! waiting and no hand-off of work between threads. Events one poll
//! returned beyond the first wait in a queue for the followers, which take
//! them before they poll again (a leader never sits on events another
//! thread could be handling). Posted tasks are units of work like events:
//! a thread takes one per turn, and nobody waits in the poll while one is
//! queued, so the tasks posted together (the requests of one read that
//! the reading thread hands on: see `transport::server`) run on as many
//! threads as are free.
//!
//! With no server threads at all (`ConcurrencyModel::ApplicationThreads`)
//! the application drives the same reactor: [`Reactor::turn`] from
//! `Orb::run`, [`Reactor::work_pending`] and [`Reactor::perform_one`] from
//! `Orb::work_pending` and `Orb::perform_work`.
//!
//! The reactor has no timer of its own: a thread waits in the poll until
//! an event, a posted task (the waker), [`stop`](Reactor::stop), or the
//! next round of ticks a handler asked for at one of its deadlines
//! ([`Reactor::tick_at`]: idle and message timeouts, a paused acceptor's
//! retry, asynchronous requests' deadlines). An idle server with no
//! deadline near does not wake up, and whatever it must do next wakes it
//! at once.
//!
//! **Invariant:** the poll lock is never held while a handler runs.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Registry, Token, Waker};
use parking_lot::{Mutex, RwLock};

use crate::pacer::Pacer;
use crate::slots::{SlotRef, SlotTable};

/// Something registered with the reactor: a listener or a connection.
pub(crate) trait EventHandler: Send + Sync + 'static {
    /// The socket is ready. Called on whichever thread leads at the time;
    /// the handler serialises its own reads.
    fn ready(&self, reactor: &Arc<Reactor>, readiness: Readiness);

    /// A round of ticks, at a time some handler asked for with
    /// [`Reactor::tick_at`] (one of its deadlines), on every handler: each
    /// checks its own deadlines, and asks again for those still ahead.
    /// The default does nothing.
    fn tick(&self, _reactor: &Arc<Reactor>) {}
}

const WAKER: Token = Token(usize::MAX);

thread_local! {
    /// The reactors whose events this thread is handling, innermost last.
    static HANDLING: RefCell<Vec<Weak<Reactor>>> = const { RefCell::new(Vec::new()) };
}

/// Marks the calling thread as handling an event of `reactor` (an upcall
/// may come of it) until the returned guard drops: a wait for a reply
/// inside serves that reactor (`transport::wait`).
pub(crate) fn handling(reactor: &Arc<Reactor>) -> HandlingGuard {
    HANDLING.with(|r| r.borrow_mut().push(Arc::downgrade(reactor)));
    HandlingGuard(())
}

/// Unmarks the calling thread when dropped (see [`handling`]).
#[derive(Debug)]
pub(crate) struct HandlingGuard(());

impl Drop for HandlingGuard {
    fn drop(&mut self) {
        HANDLING.with(|r| r.borrow_mut().pop());
    }
}

/// The reactor whose event the calling thread handles, innermost first.
pub(crate) fn innermost_handled() -> Option<Arc<Reactor>> {
    HANDLING.with(|r| r.borrow().last().and_then(Weak::upgrade))
}

/// Whether the calling thread is handling an event of `reactor` (an
/// upcall it runs, or an application thread's `Orb::run`), at any depth.
pub(crate) fn handles_events_of(reactor: &Arc<Reactor>) -> bool {
    HANDLING.with(|r| {
        r.borrow()
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(reactor)))
    })
}

/// A posted piece of work, run by an event loop thread.
pub(crate) use crate::task_queue::Task;

/// The least time between two rounds of ticks: deadlines that fall close
/// together are checked in one round, at most that late (so an AMI
/// request's call timeout, checked at a round, fires on time).
const TICK_SPACING: Duration = Duration::from_millis(1);

/// How often a handler with nothing due but something to look at again
/// (bytes a caller left unread, a paused acceptor) asks for a round.
pub(crate) const TICK_INTERVAL: Duration = Duration::from_millis(500);

/// What one event says about a socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Readiness {
    /// There is something to read (data, the peer's close or an error).
    pub readable: bool,
    /// The socket takes writes again (or failed).
    pub writable: bool,
    /// The peer has closed its sending side (`EPOLLRDHUP`) or the socket
    /// failed: the reader must read until end of stream, because with
    /// edge-triggered events no later event will announce the close.
    pub read_closed: bool,
}

/// One readiness event polled but not handled yet.
#[derive(Debug, Clone, Copy)]
struct Ready {
    token: Token,
    readiness: Readiness,
}

pub(crate) struct Reactor {
    poll: Mutex<(Poll, Events)>,
    /// Events polled but not handled yet. Filled only by the thread that
    /// holds the poll lock; emptied by any.
    ready: Mutex<VecDeque<Ready>>,
    registry: Registry,
    waker: Waker,
    handlers: RwLock<SlotTable<Arc<dyn EventHandler>>>,
    tasks: Mutex<VecDeque<Task>>,
    stopping: AtomicBool,
    /// Waits in the poll that ended because their time was up, with no
    /// event and no wake-up (see [`timed_out_waits`](Self::timed_out_waits)).
    timed_out_waits: AtomicU64,
    /// When the next round of ticks is due, as handlers asked
    /// ([`tick_at`](Self::tick_at)); `None`: no handler has a deadline.
    next_tick: Mutex<Option<Instant>>,
    /// When the last round ran.
    last_tick: Mutex<Instant>,
    /// A server's pacer (see `crate::pacer`), woken before the next wait
    /// in the poll when `pace` says so.
    pacer: OnceLock<Arc<Pacer>>,
    /// Set by [`pace_before_wait`](Self::pace_before_wait).
    pace: AtomicBool,
}

/// A reactor token is the handler's slot: generation in the high half,
/// index in the low half.
fn token(slot: SlotRef) -> Token {
    Token(((u64::from(slot.generation) << 32) | u64::from(slot.index)) as usize)
}

fn slot(token: Token) -> SlotRef {
    SlotRef {
        index: (token.0 as u64 & 0xffff_ffff) as u32,
        generation: (token.0 as u64 >> 32) as u32,
    }
}

impl Reactor {
    /// A reactor, with no handler and no deadline yet.
    pub fn new() -> io::Result<Arc<Reactor>> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(&registry, WAKER)?;
        Ok(Arc::new(Reactor {
            poll: Mutex::new((poll, Events::with_capacity(256))),
            ready: Mutex::new(VecDeque::new()),
            registry,
            waker,
            handlers: RwLock::new(SlotTable::default()),
            tasks: Mutex::new(VecDeque::new()),
            stopping: AtomicBool::new(false),
            timed_out_waits: AtomicU64::new(0),
            next_tick: Mutex::new(None),
            last_tick: Mutex::new(Instant::now()),
            pacer: OnceLock::new(),
            pace: AtomicBool::new(false),
        }))
    }

    /// Registers `source` for `interest`, with `make` building its handler
    /// from the token it was given.
    pub fn register<S: mio::event::Source + ?Sized>(
        &self,
        source: &mut S,
        interest: Interest,
        handler: Arc<dyn EventHandler>,
    ) -> io::Result<Token> {
        let tok = token(self.handlers.write().insert(handler));
        if let Err(e) = self.registry.register(source, tok, interest) {
            self.forget(tok);
            return Err(e);
        }
        Ok(tok)
    }

    /// Changes what `source` is watched for.
    pub fn reregister<S: mio::event::Source + ?Sized>(
        &self,
        source: &mut S,
        tok: Token,
        interest: Interest,
    ) -> io::Result<()> {
        self.registry.reregister(source, tok, interest)
    }

    /// Stops watching `source` and drops its handler.
    pub fn deregister<S: mio::event::Source + ?Sized>(&self, source: &mut S, tok: Token) {
        let _ = self.registry.deregister(source);
        self.forget(tok);
    }

    fn forget(&self, tok: Token) {
        self.handlers.write().remove(slot(tok));
    }

    fn handler(&self, tok: Token) -> Option<Arc<dyn EventHandler>> {
        self.handlers.read().get(slot(tok)).cloned()
    }

    /// Queues `task` to run on an event loop thread soon.
    pub fn post(&self, task: Task) {
        self.tasks.lock().push_back(task);
        let _ = self.waker.wake();
    }

    /// Asks every event loop to return.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
    }

    /// Drops every handler and posted task, once stopped: a handler or a
    /// task may hold the reactor itself (a cycle), and a handler its
    /// socket. A thread still handling an event keeps its own handle to
    /// the handler until it is done.
    pub fn clear(&self) {
        debug_assert!(self.is_stopping());
        // Taken out of the locks first: a handler's drop may post work.
        let handlers = std::mem::take(&mut *self.handlers.write());
        drop(handlers);
        let tasks = std::mem::take(&mut *self.tasks.lock());
        drop(tasks);
        self.ready.lock().clear();
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Gives a server's reactor its pacer (once; a later one is ignored).
    pub fn set_pacer(&self, pacer: Arc<Pacer>) {
        let _ = self.pacer.set(pacer);
    }

    /// Asks that the pacer be woken before this reactor's next wait in the
    /// poll: a reactor thread read nothing but oneways (see
    /// `crate::pacer`). Nothing without a pacer.
    pub fn pace_before_wait(&self) {
        if self.pacer.get().is_some() {
            self.pace.store(true, Ordering::Relaxed);
        }
    }

    /// How many waits in the poll have ended because their time was up,
    /// with no event and no wake-up.
    pub fn timed_out_waits(&self) -> u64 {
        self.timed_out_waits.load(Ordering::SeqCst)
    }

    /// Does one unit of work: a posted task, else one event (a queued
    /// one, or, as leader, waiting up to `timeout` for one), which it
    /// handles. Returns whether anything was done.
    pub fn turn(self: &Arc<Self>, timeout: Option<Duration>) -> io::Result<bool> {
        if self.run_one_task() {
            return Ok(true);
        }
        match self.next_event(timeout)? {
            Some(ready) => Ok(self.dispatch(ready)),
            // Woken by a posted task.
            None => Ok(self.run_one_task()),
        }
    }

    /// As [`turn`](Self::turn), but without waiting for the poll while
    /// another thread holds it: `None` then, when there was nothing else
    /// to do (that thread handles what arrives). For a thread that waits
    /// for something else too (see `transport::wait`).
    pub fn try_turn(self: &Arc<Self>, timeout: Option<Duration>) -> io::Result<Option<bool>> {
        if self.run_one_task() {
            return Ok(Some(true));
        }
        let queued = self.ready.lock().pop_front();
        let ready = match queued {
            Some(ready) => Some(ready),
            None => match self.poll.try_lock() {
                Some(mut guard) => {
                    let queued = self.ready.lock().pop_front();
                    match queued {
                        Some(ready) => Some(ready),
                        None => {
                            self.poll_into_queue(&mut guard, timeout)?;
                            drop(guard);
                            self.ready.lock().pop_front()
                        }
                    }
                }
                None => return Ok(None),
            },
        };
        match ready {
            Some(ready) => Ok(Some(self.dispatch(ready))),
            None => Ok(Some(self.run_one_task())),
        }
    }

    /// Whether a posted task, a polled event or a due tick is waiting.
    /// Polls without waiting (keeping what it finds for
    /// [`perform_one`](Self::perform_one)) unless another thread is
    /// polling already: that thread will handle what arrives.
    pub fn work_pending(&self) -> io::Result<bool> {
        if !self.tasks.lock().is_empty() || !self.ready.lock().is_empty() || self.tick_due() {
            return Ok(true);
        }
        if let Some(mut guard) = self.poll.try_lock() {
            self.poll_into_queue(&mut guard, Some(Duration::ZERO))?;
        }
        Ok(!self.ready.lock().is_empty())
    }

    /// Does one unit of work: one posted task, or the round of ticks when
    /// due, or one event (waiting up to `timeout` for one). Returns
    /// whether anything was done.
    pub fn perform_one(self: &Arc<Self>, timeout: Duration) -> io::Result<bool> {
        if self.run_one_task() {
            return Ok(true);
        }
        if self.tick_if_due() {
            return Ok(true);
        }
        match self.next_event(Some(timeout))? {
            Some(ready) => Ok(self.dispatch(ready)),
            // Woken by a posted task: run it now rather than on the next call.
            None => Ok(self.run_one_task()),
        }
    }

    /// One event: a queued one if there is one, else (as leader) the
    /// first of those that arrive within `timeout`. With a timeout it
    /// waits no longer than that for the lead either (another thread may
    /// be waiting in the poll with none).
    fn next_event(&self, timeout: Option<Duration>) -> io::Result<Option<Ready>> {
        if let Some(ready) = self.ready.lock().pop_front() {
            return Ok(Some(ready));
        }
        let mut guard = match timeout {
            Some(timeout) => match self.poll.try_lock_for(timeout) {
                Some(guard) => guard,
                // That thread handles what arrives.
                None => return Ok(self.ready.lock().pop_front()),
            },
            None => self.poll.lock(),
        };
        // While this thread waited for leadership, the previous leader may
        // have queued more than it took.
        if let Some(ready) = self.ready.lock().pop_front() {
            return Ok(Some(ready));
        }
        self.poll_into_queue(&mut guard, timeout)?;
        let ready = self.ready.lock().pop_front();
        Ok(ready)
        // The poll lock is released here: a follower becomes leader and
        // takes the next queued event, if any.
    }

    /// Polls (the caller holds the poll lock) and queues what arrived,
    /// waiting up to `timeout` (`None`: for ever) and no later than the
    /// next round of ticks. It does not wait while a task is queued or
    /// the reactor is stopping: the waker that announced either may have
    /// woken another poll already (its event does not come again).
    fn poll_into_queue(
        &self,
        guard: &mut (Poll, Events),
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        let timeout = if self.is_stopping() || !self.tasks.lock().is_empty() {
            Some(Duration::ZERO)
        } else {
            match *self.next_tick.lock() {
                Some(at) => {
                    let until = at.saturating_duration_since(Instant::now());
                    Some(timeout.map_or(until, |t| t.min(until)))
                }
                None => timeout,
            }
        };
        if self.pace.load(Ordering::Relaxed) && self.pace.swap(false, Ordering::Relaxed) {
            if let Some(pacer) = self.pacer.get() {
                pacer.wake();
            }
        }
        let (poll, events) = guard;
        match poll.poll(events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        if events.is_empty() && timeout != Some(Duration::ZERO) {
            self.timed_out_waits.fetch_add(1, Ordering::SeqCst);
        }
        let mut queue = self.ready.lock();
        queue.extend(events.iter().filter(|e| e.token() != WAKER).map(|e| Ready {
            token: e.token(),
            readiness: Readiness {
                readable: e.is_readable() || e.is_read_closed() || e.is_error(),
                writable: e.is_writable() || e.is_write_closed(),
                read_closed: e.is_read_closed() || e.is_error(),
            },
        }));
        Ok(())
    }

    fn dispatch(self: &Arc<Self>, ready: Ready) -> bool {
        match self.handler(ready.token) {
            Some(handler) => {
                // A reply awaited inside the handler's upcall is awaited
                // serving this reactor (see `transport::wait`).
                let _handling = handling(self);
                handler.ready(self, ready.readiness);
                true
            }
            // Deregistered since it was polled.
            None => false,
        }
    }

    /// Runs the first posted task, if any: work of this reactor, like a
    /// handler's (a reply awaited inside it is awaited serving this
    /// reactor). True if it ran one.
    fn run_one_task(self: &Arc<Self>) -> bool {
        let task = self.tasks.lock().pop_front();
        match task {
            Some(task) => {
                let _handling = handling(self);
                task();
                true
            }
            None => false,
        }
    }

    /// Asks for a round of ticks at `at` (a handler's deadline), or as
    /// soon after it as rounds may come ([`TICK_SPACING`] apart). A
    /// thread waiting in the poll for a later time is woken to wait for
    /// this one instead.
    pub fn tick_at(&self, at: Instant) {
        let at = at.max(*self.last_tick.lock() + TICK_SPACING);
        {
            let mut next = self.next_tick.lock();
            if next.is_some_and(|next| next <= at) {
                return;
            }
            *next = Some(at);
        }
        let _ = self.waker.wake();
    }

    fn tick_due(&self) -> bool {
        self.next_tick.lock().is_some_and(|at| at <= Instant::now())
    }

    /// Calls every handler's `tick` if a round is due (see
    /// [`tick_at`](Self::tick_at)); one thread does so per round however
    /// many drive the reactor.
    pub fn tick_if_due(self: &Arc<Self>) -> bool {
        {
            let mut next = self.next_tick.lock();
            let now = Instant::now();
            match *next {
                Some(at) if at <= now => *next = None,
                _ => return false,
            }
            // Before anyone can ask for the next round (as the handlers
            // do below), which comes `TICK_SPACING` after this one.
            *self.last_tick.lock() = now;
        }
        self.tick_all();
        true
    }

    /// Calls every handler's `tick`.
    fn tick_all(self: &Arc<Self>) {
        let handlers: Vec<Arc<dyn EventHandler>> = self
            .handlers
            .read()
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        for h in handlers {
            h.tick(self);
        }
    }
}

impl crate::task_queue::TaskQueue for Reactor {
    /// Posts `task`; once the reactor is stopping, drops it instead (and
    /// what else is queued, which no loop will run): a task may hold what
    /// holds the reactor.
    fn run_later(&self, task: Task) {
        self.post(task);
        if self.is_stopping() {
            let tasks = std::mem::take(&mut *self.tasks.lock());
            drop(tasks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 25): a round of ticks asked for just after one
    /// came was put off by 500 ms, so the call timeout of an AMI request
    /// whose replies a reactor reads fired up to that late.
    #[test]
    fn a_deadline_after_a_round_gets_a_round_of_its_own_at_once() {
        let reactor = Reactor::new().unwrap();
        reactor.tick_at(Instant::now());
        let came = (0..1000).any(|_| {
            std::thread::sleep(Duration::from_millis(1));
            reactor.tick_if_due()
        });
        assert!(came, "the first round never came");
        let deadline = Instant::now() + Duration::from_millis(20);
        reactor.tick_at(deadline);
        let next = reactor.next_tick.lock().expect("a round is due");
        // The round is set for the deadline itself (it may be a little
        // later only if the deadline came within a round's spacing).
        assert!(
            next <= deadline + Duration::from_millis(5),
            "{next:?} is after {deadline:?}"
        );
    }
}
