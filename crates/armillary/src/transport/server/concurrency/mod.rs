//! The server's concurrency models: which threads read the connections
//! and on which thread a request that was read runs.
//!
//! Each model is one [`ServerConcurrency`] in a file of its own
//! (`reactive.rs`, `thread_pool.rs`, `thread_per_connection.rs`,
//! `application.rs`, `thread_per_request.rs`, `worker_pool.rs`,
//! `thread_per_object.rs`, `locality.rs`), and [`for_model`] is the one
//! place that maps a [`ConcurrencyModel`] to its implementation (an
//! exhaustive `match`: a model added to the enum does not compile until it
//! has its arm). [`for_config`] builds the ORB's model from its
//! configuration: a POA may choose another model for its own requests
//! (`Policy::Concurrency`), and `per_poa.rs` routes each request to its
//! POA's model, which decides where the request runs (the ORB's model
//! still decides who reads). The server and the ORB ask the model; they
//! never branch on which one it is. Adding a model is adding a file and
//! an arm in `for_model`.
//!
//! A model decides two things:
//! - who reads: how many threads the server starts to drive its reactor
//!   ([`reactor_threads`](ServerConcurrency::reactor_threads)), whether
//!   the application's threads drive it instead
//!   ([`driven_by_application`](ServerConcurrency::driven_by_application)),
//!   and which connections are read by a blocking thread of their own
//!   ([`connection_threads`](ServerConcurrency::connection_threads));
//! - where a request runs once it was read and resolved to a servant
//!   ([`schedule`](ServerConcurrency::schedule)): on the thread that read
//!   it, or handed to another.
//!
//! **Invariant:** a model never blocks a reading thread on an upcall it
//! could hand off, and `stop(WaitForCompletion::Yes)` returns only once the
//! upcalls it handed off have finished (never waiting for the calling
//! thread itself).

mod application;
mod locality;
mod per_poa;
mod reactive;
mod thread_per_connection;
mod thread_per_object;
mod thread_per_request;
mod thread_pool;
mod worker_pool;

use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;

use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use parking_lot::Mutex;

use crate::completion::WaitForCompletion;
use crate::config::{ConcurrencyModel, OrbConfig};
use crate::owed_reply::OwedReply;
use crate::poa::{ObjectId, Poa, Upcall};

/// One server concurrency model (see the module docs).
pub(crate) trait ServerConcurrency: Send + Sync + fmt::Debug {
    /// How many threads the server starts to drive its reactor (accept,
    /// read, run posted work); 0 when the application's threads do.
    fn reactor_threads(&self) -> usize;

    /// Whether the application's threads drive the reactor, in
    /// `Orb::run` and `Orb::perform_work`.
    fn driven_by_application(&self) -> bool {
        false
    }

    /// Which accepted connections get a thread of their own that blocks
    /// reading them (the reactor reads the others). Such a connection
    /// counts against `max_connection_threads`.
    fn connection_threads(&self) -> ConnectionThreads {
        ConnectionThreads::None
    }

    /// Whether the thread that read several requests at once may hold the
    /// replies of those it runs itself and write them together once it
    /// has run them all (one write instead of one per reply; see
    /// `ServerConnection::read_ready` and `serve_blocking`). Only a model
    /// whose reading thread runs every request of the connection it read
    /// in turn may (the reactive model's one thread, a connection's own
    /// thread): there a request behind a blocked upcall waits for it
    /// anyway, and a thread that blocks waiting for a reply of its own
    /// writes what it holds first.
    fn coalesces_replies(&self) -> bool {
        false
    }

    /// Whether a reading thread that read nothing but oneways wakes the
    /// server's pacer before it waits for more (`-ORBOnewayPacing`; see
    /// `crate::pacer`). Measured to help where the reading thread runs
    /// what it read itself (the reactive model, a connection's own
    /// thread): a client streaming oneways on its CPU runs on instead of
    /// being preempted at every message. Where it hands requests to other
    /// threads (a worker pool), their wake-ups already do what the pacer
    /// does, and the pacer on top let the client queue so much that its
    /// sends cost more (a million oneways took 3.5 s instead of 2.6).
    fn paces_oneways(&self) -> bool {
        false
    }

    /// Whether the thread that read several requests at once hands all
    /// but the first to the other reactor threads (Leader/Followers
    /// promotion: one posted to the reactor per request, each taken by a
    /// free thread in its turn) before it serves the first itself, so
    /// that no request waits behind another's upcall while a thread is
    /// free. For a model whose several reactor threads run what they read.
    fn promotes_followers(&self) -> bool {
        false
    }

    /// Runs a request that was read and resolved to a servant: here, on
    /// the thread that read it, or on another thread. The request's reply
    /// is written by [`ResolvedRequest::run`], wherever it runs.
    fn schedule(&self, request: ResolvedRequest) {
        request.run();
    }

    /// Whether [`schedule`](Self::schedule) runs a request to an object
    /// of `poa` on the calling thread, as [`ResolvedRequest::run`] does:
    /// the server then runs it there without making a
    /// [`ResolvedRequest`] (see [`run_resolved`]). A model that may hand
    /// a request to another thread, or reject it, says false.
    fn runs_here(&self, _poa: &Poa) -> bool {
        true
    }

    /// The server is stopping (its connections are closed): end the
    /// threads the model started; with [`WaitForCompletion::Yes`], wait
    /// for the upcalls they run (never for the calling thread itself).
    fn stop(&self, _wait: WaitForCompletion) {}

    /// The connection numbered `connection` (see [`ResolvedRequest::connection`])
    /// has closed: forget what the model keeps about it.
    fn connection_closed(&self, _connection: u64) {}
}

/// Which connections a model reads on threads of their own (see
/// [`ServerConcurrency::connection_threads`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnectionThreads {
    /// None: the reactor reads every connection.
    None,
    /// Every connection; one that would pass `max_connection_threads` is
    /// refused.
    Every,
    /// The first `n` open at a time (and at most `max_connection_threads`);
    /// the reactor reads those accepted beyond.
    UpTo(usize),
}

impl ConnectionThreads {
    /// Whether a connection accepted while `running` connection threads
    /// run gets a thread, with `max` the server's limit.
    pub(crate) fn gives_thread(self, running: usize, max: usize) -> bool {
        match self {
            ConnectionThreads::None => false,
            ConnectionThreads::Every => true,
            ConnectionThreads::UpTo(n) => running < n.min(max),
        }
    }
}

/// The model `config` asks for, with the POA-level choices routed on top
/// of it: the one place that maps the configuration to the models. Fails
/// when a model's threads cannot be started.
pub(crate) fn for_config(config: &OrbConfig) -> std::io::Result<Arc<dyn ServerConcurrency>> {
    let orb = for_model(config.concurrency)?;
    Ok(Arc::new(per_poa::PerPoa::new(config.concurrency, orb)))
}

/// Whether the application's threads drive an ORB configured with
/// `config` (in `Orb::run` / `Orb::perform_work`), known before its server
/// starts (a pure client delivers its AMI callbacks there too). Agrees
/// with [`ServerConcurrency::driven_by_application`] of the model
/// [`for_config`] picks.
pub(crate) fn driven_by_application(config: &OrbConfig) -> bool {
    config.concurrency == ConcurrencyModel::ApplicationThreads
}

/// The implementation of one [`ConcurrencyModel`].
fn for_model(model: ConcurrencyModel) -> std::io::Result<Arc<dyn ServerConcurrency>> {
    Ok(match model {
        ConcurrencyModel::ThreadPool(n) => Arc::new(thread_pool::ThreadPool::new(n)),
        ConcurrencyModel::ThreadPerConnection => {
            Arc::new(thread_per_connection::ThreadPerConnection::every())
        }
        ConcurrencyModel::ThreadPerConnectionUpTo(n) => {
            Arc::new(thread_per_connection::ThreadPerConnection::up_to(n))
        }
        ConcurrencyModel::ApplicationThreads => Arc::new(application::ApplicationThreads),
        ConcurrencyModel::Locality(n) => Arc::new(locality::Locality::new(n)),
        ConcurrencyModel::ThreadPerRequest(cap) => {
            Arc::new(thread_per_request::ThreadPerRequest::new(cap))
        }
        ConcurrencyModel::WorkerPool { workers, queue } => {
            Arc::new(worker_pool::WorkerPool::start(workers, queue)?)
        }
        ConcurrencyModel::ThreadPerObject => Arc::new(thread_per_object::ThreadPerObject::new()),
        ConcurrencyModel::SingleThreadedReactive => Arc::new(reactive::Reactive),
    })
}

/// The answer to a request a model has no room for: TRANSIENT with
/// [`minor::SERVER_BUSY`], COMPLETED_NO (the client may send it again).
fn busy() -> SystemException {
    SystemException::transient(minor::SERVER_BUSY, CompletionStatus::No)
}

/// The threads a model started, so that stopping can wait for them; once
/// stopped it starts no more.
#[derive(Debug, Default)]
struct ModelThreads {
    /// `None` once stopped.
    handles: Mutex<Option<Vec<JoinHandle<()>>>>,
}

impl ModelThreads {
    fn new() -> ModelThreads {
        ModelThreads {
            handles: Mutex::new(Some(Vec::new())),
        }
    }

    /// Runs `work` on a new thread called `name`; an error when the system
    /// has no thread for it or the model has stopped (`work` is dropped).
    fn spawn(&self, name: &str, work: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let mut handles = self.handles.lock();
        let Some(handles) = handles.as_mut() else {
            return Err(std::io::Error::other("the server is stopping"));
        };
        handles.retain(|h| !h.is_finished());
        let handle = std::thread::Builder::new().name(name.into()).spawn(work)?;
        handles.push(handle);
        Ok(())
    }

    /// Starts no more threads; with [`WaitForCompletion::Yes`], waits for
    /// those running (never for the calling thread itself).
    fn stop(&self, wait: WaitForCompletion) {
        let handles = self.handles.lock().take().unwrap_or_default();
        if wait.is_yes() {
            let current = std::thread::current().id();
            for handle in handles {
                if handle.thread().id() != current {
                    let _ = handle.join();
                }
            }
        }
    }
}

/// A request read and resolved to a servant, ready to run: the upcall
/// and the work around it (decoding the arguments, the reply). Running it
/// writes the reply on the connection it came from; a model that cannot
/// run a request answers it with [`ResolvedRequest::reject`]. It carries the
/// reply its request is owed ([`OwedReply`]), so that one dropped unrun,
/// or whose upcall panics outside the servant, is still answered.
pub(crate) struct ResolvedRequest {
    upcall: Upcall,
    reply: OwedReply,
    connection: u64,
    run: Box<dyn FnOnce(Upcall, OwedReply) + Send>,
}

impl ResolvedRequest {
    /// A request whose upcall `run` carries out and answers with `reply`.
    pub(crate) fn new(
        upcall: Upcall,
        reply: OwedReply,
        connection: u64,
        run: Box<dyn FnOnce(Upcall, OwedReply) + Send>,
    ) -> ResolvedRequest {
        ResolvedRequest {
            upcall,
            reply,
            connection,
            run,
        }
    }

    /// The POA of the target object.
    pub(crate) fn poa(&self) -> &Poa {
        self.upcall.poa()
    }

    /// The target object's id within its POA.
    pub(crate) fn object_id(&self) -> &ObjectId {
        self.upcall.object_id()
    }

    /// The number of the connection the request came on (unique in the
    /// server).
    pub(crate) fn connection(&self) -> u64 {
        self.connection
    }

    /// Runs the upcall on the calling thread and writes its reply; for a
    /// SINGLE_THREAD_MODEL POA whose upcall another thread is in and
    /// waiting for a reply, that thread runs it inside its wait instead
    /// (see `poa::single_thread`).
    ///
    /// A panic on the way (a servant's is caught around the servant
    /// already: one in a servant locator's `postinvoke`, say) ends here:
    /// the thread goes on, whichever model's it is, and the request is
    /// answered with UNKNOWN by the reply it owes.
    pub(crate) fn run(self) {
        let ResolvedRequest {
            upcall, reply, run, ..
        } = self;
        run_resolved(upcall, reply, run);
    }

    /// Answers the request with `exception` (COMPLETED_NO: the upcall
    /// does not run), when the model cannot take it.
    pub(crate) fn reject(self, exception: SystemException) {
        drop(self.upcall);
        self.reply.exception(&exception);
    }
}

impl fmt::Debug for ResolvedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedRequest")
            .field("upcall", &self.upcall)
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

/// Runs `run` (a request's upcall and its reply) on the calling thread,
/// as [`ResolvedRequest::run`] does: for a SINGLE_THREAD_MODEL POA whose
/// upcall another thread is in and waiting for a reply, that thread runs
/// it inside its wait instead; a panic on the way ends here. What a
/// server runs where the model [`runs_here`](ServerConcurrency::runs_here)
/// calls, without boxing `run`.
#[inline]
pub(crate) fn run_resolved(
    upcall: Upcall,
    reply: OwedReply,
    run: impl FnOnce(Upcall, OwedReply) + Send + 'static,
) {
    let single = upcall.poa().single_thread().cloned();
    let job = move || run_caught(move || run(upcall, reply));
    match single {
        Some(single) => single.run_or_hand_over(Box::new(job)),
        None => job(),
    }
}

/// [`run_resolved`] for a `run` that borrows (the request it answers
/// stays where it was read, not moved into a closure that could outlive
/// it): runs it here, unless the target is a SINGLE_THREAD_MODEL POA,
/// whose upcalls may have to be handed to another thread; then the
/// request comes back, not run, for `run_resolved`.
#[inline]
pub(crate) fn run_here(
    upcall: Upcall,
    reply: OwedReply,
    run: impl FnOnce(Upcall, OwedReply),
) -> Option<(Upcall, OwedReply)> {
    if upcall.poa().single_thread().is_some() {
        return Some((upcall, reply));
    }
    run_caught(move || run(upcall, reply));
    None
}

/// Runs an upcall's work, a panic in it ending here (the request's
/// reply, dropped unanswered on the way, answers it).
fn run_caught(work: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
}
