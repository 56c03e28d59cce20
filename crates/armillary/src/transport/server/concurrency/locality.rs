//! Locality-aware scheduling of request streams, after Jacobsen's MICO
//! study ("thread-per-request is cheap when threads are cheap; keep a
//! client's stream on one processor"): a pool of workers runs jobs tagged
//! with the stream they belong to (for the server, a connection), so that
//! the requests of one stream run one after another on the same worker,
//! whose caches still hold that stream's working set.
//!
//! [`Locality`] is the `locality:N` concurrency model: one reactor thread
//! reads every connection and submits each request a connection brings as
//! a job of that connection's stream to a [`LocalityPool`] of N workers.
//! The pool is the scheduler: it knows streams and jobs, not GIOP.
//!
//! A worker blocked in an upcall holds its stream; a servant that calls
//! back into this server over another connection needs another worker,
//! so at most N − 1 nested upcalls can be in progress at once (as with
//! any pool of N threads).
//!
//! # The policy
//!
//! A stream is *owned* by at most one worker at a time; only its owner
//! runs its jobs, in the order they were submitted. A worker keeps its
//! stream while it is idle, so that the stream's next request finds it.
//! A stream with pending jobs and no owner is *waiting*.
//!
//! 1. **Affinity.** A worker whose stream has pending jobs runs the next
//!    one. It gives the stream up only after `quantum` jobs in a row while
//!    another stream is waiting (the *quantum*), or when it has nothing
//!    more to run and takes another stream.
//! 2. **Largest group first.** A worker free to choose (its stream is
//!    empty, or its quantum is spent) takes the waiting stream with the
//!    most pending jobs, but only when that number reaches `threshold`
//!    (switching streams costs a reload of the caches, worth it only for
//!    a group of requests).
//! 3. **Linger.** When no waiting stream reaches the threshold, a worker
//!    that owns a stream waits up to `linger` for that stream to bring
//!    more work (or for a waiting stream to reach the threshold), then
//!    takes the largest waiting stream anyway. A worker that owns nothing
//!    takes it at once.
//!
//! Each worker sleeps on its own condition variable: a job wakes its
//! stream's owner, or one idle worker (one owning no stream first) when
//! the stream has no owner, never the whole pool.
//! 4. **Ageing.** Each time a worker takes a stream, every other waiting
//!    stream is *passed over* once. A stream passed over `age_limit`
//!    times is *aged*: aged streams are taken before all others, oldest
//!    first (in the order they started waiting).
//!
//! # The fairness bound
//!
//! No stream starves. Let stream X start waiting while C streams exist
//! and N workers run. Call a *decision* a worker's taking of a stream.
//!
//! - Every decision that takes another stream passes X over, so after at
//!   most `age_limit` such decisions X is aged (rule 4).
//! - Aged streams are taken oldest first and before any other stream, and
//!   a stream is aged at most once per wait; at most C − 1 streams can be
//!   aged ahead of X. So X is taken at the latest by the
//!   (`age_limit` + C)-th decision after it started waiting.
//! - Decisions keep coming while X waits: a worker that runs a stream runs
//!   at most `quantum` jobs of it while X waits (rule 1) and then decides;
//!   a worker that is idle decides within `linger` (rule 3).
//!
//! Hence X's first job starts after at most (`age_limit` + C) · `quantum`
//! jobs of other streams per worker, that is (`age_limit` + C) · N ·
//! `quantum` jobs in all, and no later than `linger` after a worker has
//! become idle. Once a worker owns X, X's jobs run in order, `quantum` at a
//! time between such waits. The test `a_waiting_stream_is_taken_within_
//! the_bound` checks the bound when other streams keep growing.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::{ResolvedRequest, ServerConcurrency};
use crate::completion::WaitForCompletion;
use crate::poa::Poa;

/// What the scheduler runs.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// The `locality:N` concurrency model (see the module docs).
#[derive(Debug)]
pub(crate) struct Locality {
    /// `None` if the system refused the workers: requests then run on the
    /// reactor thread, as in the reactive model, rather than not at all.
    pool: Option<LocalityPool>,
}

impl Locality {
    /// The model with `workers` workers (at least one).
    pub(crate) fn new(workers: usize) -> Locality {
        Locality {
            pool: LocalityPool::start("armillary-locality", LocalityConfig::new(workers)).ok(),
        }
    }
}

impl ServerConcurrency for Locality {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn runs_here(&self, _poa: &Poa) -> bool {
        self.pool.is_none()
    }

    fn schedule(&self, request: ResolvedRequest) {
        let Some(pool) = &self.pool else {
            return request.run();
        };
        let stream = request.connection();
        // A closing pool gives the job back: it runs here.
        if let Err(job) = pool.submit(stream, Box::new(move || request.run())) {
            job();
        }
    }

    fn stop(&self, wait: WaitForCompletion) {
        if let Some(pool) = &self.pool {
            if wait.is_yes() {
                pool.join();
            } else {
                pool.close();
            }
        }
    }

    fn connection_closed(&self, connection: u64) {
        if let Some(pool) = &self.pool {
            pool.close_stream(connection);
        }
    }
}

/// The scheduler's knobs (see the module docs for what each does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocalityConfig {
    /// Worker threads.
    pub(crate) workers: usize,
    /// Pending jobs a waiting stream needs for a worker to switch to it
    /// without lingering first.
    pub(crate) threshold: usize,
    /// Jobs a worker runs in a row from its stream while another waits.
    pub(crate) quantum: usize,
    /// Times a waiting stream may be passed over before it goes first.
    pub(crate) age_limit: u32,
    /// How long an idle worker waits for its own stream before taking a
    /// waiting stream below the threshold.
    pub(crate) linger: Duration,
}

impl LocalityConfig {
    /// `workers` workers with the default knobs: threshold 2, quantum 16,
    /// age limit 4, linger 200 µs (about the cost of reloading a working
    /// set of a few hundred kilobytes into cache).
    pub(crate) fn new(workers: usize) -> Self {
        LocalityConfig {
            workers: workers.max(1),
            threshold: 2,
            quantum: 16,
            age_limit: 4,
            linger: Duration::from_micros(200),
        }
    }
}

/// One stream's queue.
struct Stream {
    pending: VecDeque<Job>,
    /// The worker that owns the stream.
    owner: Option<usize>,
    /// Times passed over since it started waiting.
    passed: u32,
    /// When it started waiting (a sequence number).
    waiting_since: u64,
    /// The stream was closed: forget it once empty and unowned.
    closed: bool,
}

#[derive(Default)]
struct State {
    streams: HashMap<u64, Stream>,
    /// Numbers `waiting_since`.
    sequence: u64,
    /// No more jobs: workers exit once every queue is empty.
    closing: bool,
    /// Per worker: asleep (or lingering) and not yet woken.
    idle: Vec<bool>,
    /// Per worker: it owns a stream.
    owns: Vec<bool>,
}

impl State {
    fn waiting(&self) -> impl Iterator<Item = (u64, &Stream)> {
        self.streams
            .iter()
            .filter(|(_, s)| s.owner.is_none() && !s.pending.is_empty())
            .map(|(id, s)| (*id, s))
    }

    /// The stream a worker free to choose takes (rules 2 and 4), and
    /// whether it reaches the threshold; `avoid` is taken only if nothing
    /// else waits.
    fn choose(&self, config: &LocalityConfig, avoid: Option<u64>) -> Option<(u64, bool)> {
        let pick = |skip: Option<u64>| {
            let candidates = || self.waiting().filter(|(id, _)| Some(*id) != skip);
            let aged = candidates()
                .filter(|(_, s)| s.passed >= config.age_limit)
                .min_by_key(|(_, s)| s.waiting_since);
            if let Some((id, _)) = aged {
                return Some((id, true));
            }
            candidates()
                .max_by(|(_, a), (_, b)| {
                    a.pending
                        .len()
                        .cmp(&b.pending.len())
                        .then(b.waiting_since.cmp(&a.waiting_since))
                })
                .map(|(id, s)| (id, s.pending.len() >= config.threshold))
        };
        pick(avoid).or_else(|| pick(None))
    }

    /// `worker` takes `stream`; every other waiting stream is passed over.
    fn take(&mut self, worker: usize, stream: u64) {
        for (id, s) in self.streams.iter_mut() {
            if *id != stream && s.owner.is_none() && !s.pending.is_empty() {
                s.passed = s.passed.saturating_add(1);
            }
        }
        if let Some(s) = self.streams.get_mut(&stream) {
            s.owner = Some(worker);
            s.passed = 0;
        }
    }

    /// `worker` gives `stream` up; it waits again if it has jobs.
    fn release(&mut self, stream: u64) {
        self.sequence += 1;
        let sequence = self.sequence;
        if let Some(s) = self.streams.get_mut(&stream) {
            s.owner = None;
            s.waiting_since = sequence;
            if s.pending.is_empty() && s.closed {
                self.streams.remove(&stream);
            }
        }
    }
}

struct Shared {
    config: LocalityConfig,
    state: Mutex<State>,
    /// One per worker: each sleeps on its own, so that a job wakes only
    /// the worker that should run it (its stream's owner, or one idle
    /// worker for a waiting stream), not all of them.
    wake: Vec<Condvar>,
}

impl Shared {
    /// Wakes worker `w` if it sleeps.
    fn wake_worker(&self, state: &mut State, w: usize) {
        if state.idle[w] {
            state.idle[w] = false;
            self.wake[w].notify_one();
        }
    }

    /// `stream` has a new job: wakes its owner, or, if it has none, an
    /// idle worker (one that owns no stream first).
    fn wake_for(&self, state: &mut State, stream: u64) {
        match state.streams.get(&stream).and_then(|s| s.owner) {
            Some(owner) => self.wake_worker(state, owner),
            None => self.wake_idle(state),
        }
    }

    /// Wakes one idle worker, one that owns no stream first.
    fn wake_idle(&self, state: &mut State) {
        let pick = (0..state.idle.len())
            .filter(|&w| state.idle[w])
            .min_by_key(|&w| state.owns[w]);
        if let Some(w) = pick {
            self.wake_worker(state, w);
        }
    }

    fn wake_all(&self, state: &mut State) {
        for w in 0..state.idle.len() {
            self.wake_worker(state, w);
        }
    }
}

/// The worker pool (see the module docs).
pub(crate) struct LocalityPool {
    shared: Arc<Shared>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for LocalityPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalityPool")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl LocalityPool {
    /// Starts the workers, named `name-0`, `name-1`, …
    pub(crate) fn start(name: &str, config: LocalityConfig) -> std::io::Result<LocalityPool> {
        let shared = Arc::new(Shared {
            config,
            state: Mutex::new(State {
                idle: vec![false; config.workers],
                owns: vec![false; config.workers],
                ..State::default()
            }),
            wake: (0..config.workers).map(|_| Condvar::new()).collect(),
        });
        let pool = LocalityPool {
            shared: shared.clone(),
            workers: Mutex::new(Vec::new()),
        };
        for worker in 0..config.workers {
            let shared = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("{name}-{worker}"))
                .spawn(move || {
                    // A worker whose job waits for a reply runs waiting
                    // jobs meanwhile (a nested call back into this server).
                    let nested = shared.clone();
                    let _serving = crate::thread_role::serve_while_waiting(move || {
                        run_nested(&nested, worker)
                    });
                    work(&shared, worker);
                });
            match handle {
                Ok(h) => pool.workers.lock().push(h),
                Err(e) => {
                    pool.close();
                    return Err(e);
                }
            }
        }
        Ok(pool)
    }

    /// Queues `job` on `stream`; gives it back once the pool is closing.
    pub(crate) fn submit(&self, stream: u64, job: Job) -> Result<(), Job> {
        let mut state = self.shared.state.lock();
        if state.closing {
            return Err(job);
        }
        state.sequence += 1;
        let sequence = state.sequence;
        let s = state.streams.entry(stream).or_insert_with(|| Stream {
            pending: VecDeque::new(),
            owner: None,
            passed: 0,
            waiting_since: sequence,
            closed: false,
        });
        if s.owner.is_none() && s.pending.is_empty() {
            s.waiting_since = sequence;
            s.passed = 0;
        }
        s.closed = false;
        s.pending.push_back(job);
        self.shared.wake_for(&mut state, stream);
        Ok(())
    }

    /// The stream ends (its connection closed): it is forgotten once its
    /// pending jobs have run.
    pub(crate) fn close_stream(&self, stream: u64) {
        let mut state = self.shared.state.lock();
        if let Some(s) = state.streams.get_mut(&stream) {
            s.closed = true;
            if s.pending.is_empty() && s.owner.is_none() {
                state.streams.remove(&stream);
            }
        }
    }

    /// Takes no more jobs; the workers run what is queued and exit.
    pub(crate) fn close(&self) {
        let mut state = self.shared.state.lock();
        state.closing = true;
        // Sleeping workers that are woken see `closing`; the others see it
        // when they look next.
        self.shared.wake_all(&mut state);
        for wake in &self.shared.wake {
            wake.notify_all();
        }
    }

    /// Closes and waits for the workers to exit (not from a worker).
    pub(crate) fn join(&self) {
        self.close();
        let handles = std::mem::take(&mut *self.workers.lock());
        let me = std::thread::current().id();
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }
}

impl Drop for LocalityPool {
    fn drop(&mut self) {
        self.join();
    }
}

/// What a worker whose job waits for a reply runs meanwhile: the next job
/// of a stream it owns, else the first job of a waiting stream, which it
/// owns while the job runs (so a stream's jobs still run one at a time,
/// in order). True if it ran one.
fn run_nested(shared: &Shared, worker: usize) -> bool {
    let mut state = shared.state.lock();
    let own = state
        .streams
        .iter_mut()
        .find(|(_, s)| s.owner == Some(worker) && !s.pending.is_empty())
        .and_then(|(_, s)| s.pending.pop_front());
    if let Some(job) = own {
        drop(state);
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
        return true;
    }
    let Some((id, _)) = state.choose(&shared.config, None) else {
        return false;
    };
    let job = state.streams.get_mut(&id).and_then(|s| {
        s.owner = Some(worker);
        s.pending.pop_front()
    });
    drop(state);
    if let Some(job) = job {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
    }
    let mut state = shared.state.lock();
    state.release(id);
    if state.waiting().next().is_some() {
        shared.wake_idle(&mut state);
    }
    true
}

/// One worker's loop.
fn work(shared: &Shared, worker: usize) {
    let config = &shared.config;
    // The stream this worker owns, and how many jobs it ran in a row.
    let mut current: Option<u64> = None;
    let mut run = 0usize;
    let mut state = shared.state.lock();
    loop {
        // Rule 1: keep to the stream while its quantum lasts.
        let mut spent = false;
        if let Some(id) = current {
            let others_wait = state.waiting().next().is_some();
            let job = state.streams.get_mut(&id).and_then(|s| {
                if run < config.quantum || !others_wait {
                    s.pending.pop_front()
                } else {
                    spent = true;
                    None
                }
            });
            if let Some(job) = job {
                run += 1;
                drop(state);
                // A panicking job must not take the worker with it.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
                state = shared.state.lock();
                continue;
            }
        }
        // Rules 2–4: choose another stream.
        match state.choose(config, current.filter(|_| spent)) {
            Some((next, ready)) => {
                let lingering = !ready && current.is_some() && !spent;
                if lingering {
                    // Rule 3: wait for our own stream a little.
                    let deadline = Instant::now() + config.linger;
                    let own_work = |state: &State| {
                        current
                            .and_then(|id| state.streams.get(&id))
                            .is_some_and(|s| !s.pending.is_empty())
                    };
                    // A group that reaches the threshold (or ages) while
                    // we linger ends the wait too.
                    let worth_switching =
                        |state: &State| state.choose(config, None).is_some_and(|(_, ready)| ready);
                    while !own_work(&state) && !state.closing && !worth_switching(&state) {
                        state.idle[worker] = true;
                        let timed_out = shared.wake[worker]
                            .wait_until(&mut state, deadline)
                            .timed_out();
                        state.idle[worker] = false;
                        if timed_out {
                            break;
                        }
                    }
                    if own_work(&state) {
                        continue;
                    }
                    // Whatever waits may have changed meanwhile.
                    let Some((again, _)) = state.choose(config, None) else {
                        continue;
                    };
                    switch(&mut state, &mut current, &mut run, worker, again);
                } else {
                    switch(&mut state, &mut current, &mut run, worker, next);
                }
                // The stream given up may wait now: an idle worker may
                // take it.
                if state.waiting().next().is_some() {
                    shared.wake_idle(&mut state);
                }
            }
            None => {
                if state.closing && state.streams.values().all(|s| s.pending.is_empty()) {
                    if let Some(id) = current.take() {
                        state.release(id);
                    }
                    state.owns[worker] = false;
                    shared.wake_all(&mut state);
                    return;
                }
                state.idle[worker] = true;
                shared.wake[worker].wait(&mut state);
                state.idle[worker] = false;
            }
        }
    }
}

/// Gives up the current stream (if any) and takes `next`.
fn switch(state: &mut State, current: &mut Option<u64>, run: &mut usize, worker: usize, next: u64) {
    if let Some(id) = current.take() {
        state.release(id);
    }
    state.take(worker, next);
    state.owns[worker] = true;
    *current = Some(next);
    *run = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread::ThreadId;

    /// Far beyond what a working pool needs; reached only on failure.
    const DEADLINE: Duration = Duration::from_secs(30);

    /// Waits until `cond` holds, failing the test at the deadline.
    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + DEADLINE;
        while !cond() {
            assert!(Instant::now() < end, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// What ran: (stream, job number, thread), in order.
    type Log = Arc<Mutex<Vec<(u64, usize, ThreadId)>>>;

    fn logging(log: &Log, stream: u64, n: usize) -> Job {
        let log = log.clone();
        Box::new(move || log.lock().push((stream, n, std::thread::current().id())))
    }

    /// A job that says it started, then blocks until the gate opens.
    fn gated(started: &Arc<AtomicUsize>, gate: &Arc<(Mutex<bool>, Condvar)>) -> Job {
        let (started, gate) = (started.clone(), gate.clone());
        Box::new(move || {
            started.fetch_add(1, Ordering::SeqCst);
            let mut open = gate.0.lock();
            while !*open {
                gate.1.wait(&mut open);
            }
        })
    }

    fn open(gate: &Arc<(Mutex<bool>, Condvar)>) {
        *gate.0.lock() = true;
        gate.1.notify_all();
    }

    fn config(workers: usize) -> LocalityConfig {
        LocalityConfig {
            linger: Duration::from_millis(1),
            ..LocalityConfig::new(workers)
        }
    }

    #[test]
    fn a_stream_stays_on_its_worker_in_order() {
        let pool = LocalityPool::start("loc", config(2)).unwrap();
        let log: Log = Arc::default();
        let started = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        // Each worker takes one stream and blocks in its first job.
        assert!(pool.submit(1, gated(&started, &gate)).is_ok());
        assert!(pool.submit(2, gated(&started, &gate)).is_ok());
        wait_until("both streams started", || {
            started.load(Ordering::SeqCst) == 2
        });
        for n in 0..20 {
            let _ = pool.submit(1, logging(&log, 1, n));
            let _ = pool.submit(2, logging(&log, 2, n));
        }
        open(&gate);
        wait_until("every job ran", || log.lock().len() == 40);
        let log = log.lock().clone();
        for stream in [1, 2] {
            let mine: Vec<_> = log.iter().filter(|(s, ..)| *s == stream).collect();
            let order: Vec<usize> = mine.iter().map(|(_, n, _)| *n).collect();
            assert_eq!(order, (0..20).collect::<Vec<_>>(), "stream {stream}");
            assert!(
                mine.iter().all(|(.., t)| *t == mine[0].2),
                "stream {stream} moved between workers"
            );
        }
        assert_ne!(
            log[0].2,
            log.iter().find(|(s, ..)| *s != log[0].0).unwrap().2
        );
        pool.join();
    }

    #[test]
    fn an_idle_worker_takes_the_largest_group() {
        let pool = LocalityPool::start("loc", config(1)).unwrap();
        let log: Log = Arc::default();
        let started = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let _ = pool.submit(9, gated(&started, &gate));
        wait_until("the worker is busy", || started.load(Ordering::SeqCst) == 1);
        let _ = pool.submit(1, logging(&log, 1, 0));
        for n in 0..3 {
            let _ = pool.submit(2, logging(&log, 2, n));
        }
        for n in 0..2 {
            let _ = pool.submit(3, logging(&log, 3, n));
        }
        open(&gate);
        wait_until("every job ran", || log.lock().len() == 6);
        let streams: Vec<u64> = log.lock().iter().map(|(s, ..)| *s).collect();
        // Largest group first; stream 1 (below the threshold) last.
        assert_eq!(streams, [2, 2, 2, 3, 3, 1]);
        pool.join();
    }

    #[test]
    fn a_waiting_stream_is_taken_within_the_bound() {
        // One worker; streams 1 and 2 keep growing (each of their jobs
        // submits two more), stream 3 has a single job. Without ageing the
        // largest-group rule would never pick stream 3.
        let cfg = LocalityConfig {
            quantum: 3,
            age_limit: 2,
            ..config(1)
        };
        let pool = Arc::new(LocalityPool::start("loc", cfg).unwrap());
        let log: Log = Arc::default();
        let started = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let budget = Arc::new(AtomicUsize::new(400));
        fn growing(pool: &Arc<LocalityPool>, log: &Log, budget: &Arc<AtomicUsize>, s: u64) -> Job {
            let (pool, log, budget) = (pool.clone(), log.clone(), budget.clone());
            Box::new(move || {
                log.lock().push((s, 0, std::thread::current().id()));
                for _ in 0..2 {
                    if budget
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
                        .is_ok()
                    {
                        let _ = pool.submit(s, growing(&pool, &log, &budget, s));
                    }
                }
            })
        }
        let _ = pool.submit(9, gated(&started, &gate));
        wait_until("the worker is busy", || started.load(Ordering::SeqCst) == 1);
        for _ in 0..4 {
            let _ = pool.submit(1, growing(&pool, &log, &budget, 1));
            let _ = pool.submit(2, growing(&pool, &log, &budget, 2));
        }
        let _ = pool.submit(3, logging(&log, 3, 0));
        open(&gate);
        wait_until("stream 3 ran", || log.lock().iter().any(|(s, ..)| *s == 3));
        let before = log.lock().iter().take_while(|(s, ..)| *s != 3).count();
        // The documented bound with N = 1 and C = 4 streams (9, 1, 2, 3).
        let bound = (cfg.age_limit as usize + 4) * cfg.quantum;
        assert!(
            before <= bound,
            "{before} jobs ran before stream 3, bound {bound}"
        );
        wait_until("the budget is spent", || budget.load(Ordering::SeqCst) == 0);
        pool.join();
    }

    #[test]
    fn closing_runs_what_is_queued_and_stops_the_workers() {
        let pool = LocalityPool::start("loc", config(3)).unwrap();
        let log: Log = Arc::default();
        for n in 0..30 {
            assert!(pool
                .submit(n as u64 % 5, logging(&log, n as u64 % 5, n))
                .is_ok());
        }
        pool.join();
        assert_eq!(log.lock().len(), 30);
        assert!(pool.submit(1, logging(&log, 1, 99)).is_err());
        assert!(pool.workers.lock().is_empty());
    }

    #[test]
    fn a_panicking_job_does_not_kill_its_worker() {
        let pool = LocalityPool::start("loc", config(1)).unwrap();
        let log: Log = Arc::default();
        let _ = pool.submit(1, Box::new(|| panic!("servant bug")));
        let _ = pool.submit(1, logging(&log, 1, 0));
        wait_until("the next job ran", || log.lock().len() == 1);
        pool.join();
    }
}
