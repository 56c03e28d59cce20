//! The server's concurrency models: which threads read the connections
//! and on which thread a request that was read runs.
//!
//! Each model is one [`ServerConcurrency`] in a file of its own
//! (`reactive.rs`, `thread_pool.rs`, `thread_per_connection.rs`,
//! `application.rs`), and [`for_config`] is the one place that picks it
//! from the ORB's configuration. The server and the ORB ask the model;
//! they never branch on which one it is. Adding a model is adding a file
//! and a line in `for_config`.
//!
//! A model decides two things:
//! - who reads: how many threads the server starts to drive its reactor
//!   ([`reactor_threads`](ServerConcurrency::reactor_threads)), whether
//!   the application's threads drive it instead
//!   ([`driven_by_application`](ServerConcurrency::driven_by_application)),
//!   and whether each connection is read by a blocking thread of its own
//!   ([`thread_per_connection`](ServerConcurrency::thread_per_connection));
//! - where a request runs once it was read and resolved to a servant
//!   ([`dispatch`](ServerConcurrency::dispatch)): on the thread that read
//!   it, or handed to another.
//!
//! **Invariant:** a model never blocks a reading thread on an upcall it
//! could hand off, and `stop(WaitForCompletion::Yes)` returns only once the
//! upcalls it handed off have finished (never waiting for the calling
//! thread itself).

mod application;
mod locality;
mod reactive;
mod thread_per_connection;
mod thread_pool;

use std::fmt;
use std::sync::Arc;

use crate::completion::WaitForCompletion;
use crate::config::{ConcurrencyModel, OrbConfig};
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

    /// Whether every accepted connection gets a thread of its own that
    /// blocks reading it (the reactor then only accepts). Such a
    /// connection counts against `max_connection_threads`.
    fn thread_per_connection(&self) -> bool {
        false
    }

    /// Runs a request that was read and resolved to a servant: here, on
    /// the thread that read it, or on another thread. The request's reply
    /// is written by [`Dispatch::run`], wherever it runs.
    fn dispatch(&self, request: Dispatch) {
        request.run();
    }

    /// The server is stopping (its connections are closed): end the
    /// threads the model started; with [`WaitForCompletion::Yes`], wait
    /// for the upcalls they run (never for the calling thread itself).
    fn stop(&self, _wait: WaitForCompletion) {}

    /// The connection numbered `connection` (see [`Dispatch::connection`])
    /// has closed: forget what the model keeps about it.
    fn connection_closed(&self, _connection: u64) {}
}

/// The model `config` asks for: the one place that maps the
/// configuration's [`ConcurrencyModel`] to its implementation.
pub(crate) fn for_config(config: &OrbConfig) -> Arc<dyn ServerConcurrency> {
    match config.concurrency {
        ConcurrencyModel::SingleThreadedReactive => Arc::new(reactive::Reactive),
        ConcurrencyModel::ThreadPool(n) => Arc::new(thread_pool::ThreadPool::new(n)),
        ConcurrencyModel::ThreadPerConnection => {
            Arc::new(thread_per_connection::ThreadPerConnection)
        }
        ConcurrencyModel::ApplicationThreads => Arc::new(application::ApplicationThreads),
        ConcurrencyModel::Locality(n) => Arc::new(locality::Locality::new(n)),
    }
}

/// A request read and resolved to a servant, ready to run: the upcall
/// and the work around it (decoding the arguments, the reply). Running it
/// writes the reply on the connection it came from; dropping it unrun
/// gives the request no answer, so a model that cannot run a request
/// answers it with [`Dispatch::reject`].
pub(crate) struct Dispatch {
    upcall: Upcall,
    operation: Arc<str>,
    connection: u64,
    run: Box<dyn FnOnce(Upcall) + Send>,
    reject: Box<dyn FnOnce(armillary_giop::system_exception::SystemException) + Send>,
}

impl Dispatch {
    /// A request whose upcall `run` carries out, and which `reject`
    /// answers with an exception instead.
    pub(crate) fn new(
        upcall: Upcall,
        operation: Arc<str>,
        connection: u64,
        run: Box<dyn FnOnce(Upcall) + Send>,
        reject: Box<dyn FnOnce(armillary_giop::system_exception::SystemException) + Send>,
    ) -> Dispatch {
        Dispatch {
            upcall,
            operation,
            connection,
            run,
            reject,
        }
    }

    /// The POA of the target object.
    #[allow(dead_code)] // For the models that choose by target.
    pub(crate) fn poa(&self) -> &Poa {
        self.upcall.poa()
    }

    /// The target object's id within its POA.
    #[allow(dead_code)] // For the models that choose by target.
    pub(crate) fn object_id(&self) -> &ObjectId {
        self.upcall.object_id()
    }

    /// The operation the request calls.
    #[allow(dead_code)] // For the models that choose by target.
    pub(crate) fn operation(&self) -> &str {
        &self.operation
    }

    /// The number of the connection the request came on (unique in the
    /// server).
    pub(crate) fn connection(&self) -> u64 {
        self.connection
    }

    /// Runs the upcall on the calling thread and writes its reply.
    pub(crate) fn run(self) {
        (self.run)(self.upcall);
    }

    /// Answers the request with `exception` (COMPLETED_NO: the upcall
    /// does not run), when the model cannot take it.
    #[allow(dead_code)] // For the models with limits.
    pub(crate) fn reject(self, exception: armillary_giop::system_exception::SystemException) {
        drop(self.upcall);
        (self.reject)(exception);
    }
}

impl fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatch")
            .field("upcall", &self.upcall)
            .field("operation", &self.operation)
            .finish_non_exhaustive()
    }
}
