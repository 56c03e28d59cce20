//! The two servers of `armillary bench middle-tier`, each a process of
//! its own: the sink (`armillary bench serve-sink`, [`serve_sink`]) and
//! the middle tier (`armillary bench serve-middle-tier`,
//! [`serve_middle_tier`]). Both serve `MiddleTierBench::Quoter`
//! (`omniorb-peers/idl/middle_tier_bench.idl`): `get_quote(stamp)`
//! returns `stamp`.
//!
//! - The sink answers each request `--delay-ms` after it arrived, and
//!   holds any number of them meanwhile without a thread each: its
//!   servant takes the reply out of the request (AMH,
//!   `ServerRequest::respond_later`) and hands the `ResponseHandler` to
//!   one timer thread, which keeps them in a binary heap by deadline and
//!   answers each when it is due. With no delay it answers in the upcall.
//!   It runs the reactive model, and lets each connection have any number
//!   of requests outstanding (the middle tier multiplexes every client's
//!   request over one connection to it).
//! - The middle tier forwards each client's `get_quote(stamp)` to the sink
//!   and answers the client with the sink's answer, under the model's
//!   `-ORBConcurrency`. A synchronous servant
//!   ([`Answering::Synchronous`]) calls the sink with the generated stub
//!   and waits in the upcall; the AMH servant ([`Answering::Amh`]) takes
//!   the reply out of the request, sends the sink's request with an AMI
//!   callback and returns at once: the callback, run by the thread that
//!   reads the sink's reply, answers the client.
//!
//! Each writes its reference to `--ior-file` once it serves, then serves
//! until killed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use armillary::ami::ExceptionHolder;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ResponseHandler;
use armillary::{Orb, Servant, ServerRequest};

use crate::bench_process::write_atomically;
use crate::middle_tier_model::{Answering, MiddleTierModel};

/// The Rust generated from `middle_tier_bench.idl`.
// The generated `_async` methods carry a `#[must_use]` their return type
// already has; the AMI reply handler is generated but unused.
#[allow(
    missing_docs,
    missing_debug_implementations,
    dead_code,
    clippy::double_must_use
)]
pub(crate) mod generated {
    armillary::include_idl!("middle_tier_bench");
}

use generated::middle_tier_bench::{Quoter, QuoterServant, QuoterSkeleton};

/// The repository id both servers answer to.
const QUOTER_ID: &str = "IDL:MiddleTierBench/Quoter:1.0";

/// The only operation.
const GET_QUOTE: &str = "get_quote";

/// Requests one connection may have outstanding at the sink: every
/// client's request, over the middle tier's one connection.
const SINK_MAX_OUTSTANDING: &str = "1000000";

/// `armillary bench serve-sink`: answers `get_quote(stamp)` with `stamp`
/// `delay` after it arrived.
pub(crate) fn serve_sink(ior_file: &Path, delay: Duration) -> Result<ExitCode, String> {
    let (orb, _) = Orb::init([
        "-ORBConcurrency",
        "reactive",
        "-ORBMaxOutstandingRequests",
        SINK_MAX_OUTSTANDING,
    ])
    .map_err(|e| e.to_string())?;
    let timer = if delay.is_zero() {
        None
    } else {
        Some(Timer::start()?)
    };
    let servant: Arc<dyn Servant> = Arc::new(Sink { delay, timer });
    serve(&orb, servant, ior_file)
}

/// `armillary bench serve-middle-tier`: forwards `get_quote` to the sink
/// whose reference is in `sink_ior_file`, as `model` says.
pub(crate) fn serve_middle_tier(
    ior_file: &Path,
    sink_ior_file: &Path,
    model: MiddleTierModel,
) -> Result<ExitCode, String> {
    let sink_ior = std::fs::read_to_string(sink_ior_file)
        .map_err(|e| format!("cannot read {}: {e}", sink_ior_file.display()))?;
    let concurrency = model.concurrency.to_string();
    let (orb, _) = Orb::init([
        "-ORBConcurrency",
        concurrency.as_str(),
        // Every call to the sink over one connection, whatever the model:
        // the sink answers them in any order (the ORB's default would
        // give each waiting upcall a connection of its own, up to 8).
        "-ORBTransportMux",
        "muxed",
        // Every client's request may be waiting at the sink at once.
        "-ORBClientMaxOutstanding",
        SINK_MAX_OUTSTANDING,
    ])
    .map_err(|e| e.to_string())?;
    let sink = Quoter::from_object(
        orb.string_to_object(sink_ior.trim())
            .map_err(|e| e.to_string())?,
    );
    let servant: Arc<dyn Servant> = match model.answering {
        Answering::Synchronous => Arc::new(QuoterSkeleton::new(Forward { sink })),
        Answering::Amh => Arc::new(AmhForward { sink }),
    };
    serve(&orb, servant, ior_file)
}

/// Activates `servant`, publishes its reference in `ior_file` and serves
/// (on this thread too: the `application` model needs one).
fn serve(orb: &Orb, servant: Arc<dyn Servant>, ior_file: &Path) -> Result<ExitCode, String> {
    let poa = orb.root_poa();
    poa.manager().activate().map_err(|e| e.to_string())?;
    let obj = poa
        .servant_to_reference(&servant)
        .map_err(|e| e.to_string())?;
    write_atomically(ior_file, &orb.object_to_string(&obj))?;
    orb.run().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// Reads `get_quote`'s one argument.
fn read_stamp(req: &mut ServerRequest<'_>) -> Result<i64, SystemException> {
    if req.operation() != GET_QUOTE {
        return Err(SystemException::bad_operation(0, CompletionStatus::No));
    }
    req.decode_args(|r| r.read_longlong())
}

/// Answers `handler` with `stamp`.
fn answer(handler: ResponseHandler, stamp: i64) {
    handler.reply(move |w| {
        w.write_longlong(stamp);
        Ok(())
    });
}

/// The sink's servant.
struct Sink {
    delay: Duration,
    /// Where delayed answers wait (none without a delay).
    timer: Option<Timer>,
}

impl Servant for Sink {
    fn repository_id(&self) -> &'static str {
        QUOTER_ID
    }

    fn is_a(&self, id: &str) -> bool {
        id == QUOTER_ID
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let stamp = read_stamp(req)?;
        match &self.timer {
            None => {
                req.results().write_longlong(stamp);
            }
            Some(timer) => {
                let due = Instant::now() + self.delay;
                timer.add(due, req.respond_later(), stamp);
            }
        }
        Ok(())
    }
}

/// An answer the timer owes: the handler, the value and when.
struct Due {
    at: Instant,
    /// Breaks ties in arrival order (and makes the order total).
    seq: u64,
    handler: ResponseHandler,
    stamp: i64,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<Due>>,
    next_seq: u64,
}

/// One thread answering the sink's delayed requests at their deadlines,
/// earliest first.
struct Timer {
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

impl Timer {
    fn start() -> Result<Timer, String> {
        let shared: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let queue = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("sink-timer".into())
            .spawn(move || Timer::run(&queue))
            .map_err(|e| format!("cannot start the sink's timer thread: {e}"))?;
        Ok(Timer { shared })
    }

    /// Owes `stamp` to `handler` at `at`.
    fn add(&self, at: Instant, handler: ResponseHandler, stamp: i64) {
        let (queue, changed) = &*self.shared;
        let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = queue.next_seq;
        queue.next_seq += 1;
        let earliest = queue.heap.peek().is_none_or(|Reverse(d)| at < d.at);
        queue.heap.push(Reverse(Due {
            at,
            seq,
            handler,
            stamp,
        }));
        drop(queue);
        if earliest {
            changed.notify_one();
        }
    }

    /// Answers what is due, then sleeps until the next deadline or a new
    /// earlier one, for ever (the sink runs until killed).
    fn run(shared: &(Mutex<Queue>, Condvar)) {
        let (queue, changed) = shared;
        let mut due = Vec::new();
        loop {
            let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            while q.heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
                if let Some(Reverse(d)) = q.heap.pop() {
                    due.push(d);
                }
            }
            if due.is_empty() {
                let wait = q
                    .heap
                    .peek()
                    .map(|Reverse(d)| d.at.saturating_duration_since(now));
                // The guard is dropped at once: the loop locks again.
                drop(match wait {
                    Some(wait) => changed
                        .wait_timeout(q, wait)
                        .map(|(q, _)| q)
                        .unwrap_or_else(|e| e.into_inner().0),
                    None => changed.wait(q).unwrap_or_else(PoisonError::into_inner),
                });
                continue;
            }
            drop(q);
            // Answered outside the lock: the upcalls keep adding.
            for d in due.drain(..) {
                answer(d.handler, d.stamp);
            }
        }
    }
}

/// The synchronous middle tier: the upcall calls the sink and waits.
struct Forward {
    sink: Quoter,
}

impl QuoterServant for Forward {
    fn get_quote(&self, stamp: i64) -> Result<i64, SystemException> {
        self.sink.get_quote(stamp)
    }
}

/// The AMH middle tier: the upcall sends the sink's request with a
/// callback and returns; the callback answers the client.
struct AmhForward {
    sink: Quoter,
}

impl Servant for AmhForward {
    fn repository_id(&self) -> &'static str {
        QUOTER_ID
    }

    fn is_a(&self, id: &str) -> bool {
        id == QUOTER_ID
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let stamp = read_stamp(req)?;
        // The handler goes to the callback; should the request not even
        // be sent (then the callback never runs), it is taken back here
        // to answer with the reason.
        let handler = Arc::new(Mutex::new(Some(req.respond_later())));
        let for_callback = Arc::clone(&handler);
        let sent = self.sink.as_object().send_callback(
            GET_QUOTE,
            move |w| {
                w.write_longlong(stamp);
                Ok(())
            },
            |r| r.read_longlong(),
            move |outcome: Result<i64, ExceptionHolder<SystemException>>| {
                let taken = for_callback
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(handler) = taken {
                    match outcome {
                        Ok(quote) => answer(handler, quote),
                        Err(holder) => handler.raise_system(&holder.raise()),
                    }
                }
            },
        );
        if let Err(e) = sent {
            let taken = handler
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(handler) = taken {
                handler.raise_system(&e);
            }
        }
        Ok(())
    }
}
