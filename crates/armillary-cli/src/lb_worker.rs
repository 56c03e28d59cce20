//! The replica of `armillary lb worker` (a demo server to try the
//! locator with) and of `armillary bench lb`: `LbBench::Worker`
//! (`tests/interop/idl/lb_worker.idl`, compiled by `build.rs`), whose
//! `work(micros)` holds the server's one backend for that long, asleep,
//! and answers the server's name; served on a thread pool, so that
//! requests wait for the backend inside the servant, where
//! [`RequestsInProgress`] counts them as the load the replica reports.
//!
//! Why asleep, and why one backend: on a machine of two cores, a service
//! time spent computing would make every replica compete for the same
//! CPUs, and three replicas could not serve more than one server with
//! two threads; the Visibroker study's servers spent theirs in a
//! database reached through one mutex-protected connection (its
//! Pro*C/C++ API was not thread-safe). A replica here is such a server:
//! its capacity is one request per service time whatever its threads, so
//! N replicas serve N times as many, and what the benchmark measures is
//! the locator's architecture, not the machine's CPUs.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use armillary::config::OrbConfig;
use armillary::{CompletionStatus, Orb, OrbError, SystemException};
use armillary_lb::load_balancing::Locator;
use armillary_lb::replica::{RegistrationError, ReplicaRegistration, RequestsInProgress};

use crate::bench_process::write_atomically;

#[allow(
    missing_docs,
    missing_debug_implementations,
    dead_code,
    clippy::double_must_use
)]
mod generated {
    armillary::include_idl!("lb_worker");
}

pub(crate) use generated::lb_bench::Worker;
use generated::lb_bench::{WorkerServant, WorkerSkeleton};

/// A server with one backend, which `work` holds.
struct WorkerImpl {
    name: String,
    backend: Mutex<()>,
    busy: RequestsInProgress,
}

impl WorkerServant for WorkerImpl {
    fn work(&self, micros: i32) -> Result<String, SystemException> {
        let micros = u64::try_from(micros)
            .map_err(|_| SystemException::bad_param(0, CompletionStatus::No))?;
        let _counted = self.busy.enter();
        let _held = self.backend.lock().unwrap_or_else(PoisonError::into_inner);
        std::thread::sleep(Duration::from_micros(micros));
        Ok(self.name.clone())
    }
}

/// How to run a worker.
#[derive(Debug, Clone)]
pub(crate) struct WorkerOptions {
    /// The name `work` answers.
    pub(crate) name: String,
    /// The group to register in.
    pub(crate) group: String,
    /// The locators to register with (none: serve alone).
    pub(crate) locators: Vec<String>,
    /// `-ORBListenEndpoints`, if not a port the system picks.
    pub(crate) endpoint: Option<String>,
    /// `-ORBConcurrency`.
    pub(crate) concurrency: String,
    /// How often the load is reported.
    pub(crate) report_period: Duration,
    /// Where to write the worker's own IOR once it is registered.
    pub(crate) ior_file: Option<PathBuf>,
}

/// Why a worker could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkerError {
    /// The ORB could not be set up (a bad option, an endpoint in use).
    #[error("cannot start the worker's ORB")]
    Orb(#[source] OrbError),
    /// The POA refused the servant.
    #[error("cannot activate the worker")]
    Activate(#[source] armillary::poa::PoaError),
    /// A locator URL is not a reference.
    #[error("bad locator reference {url:?}")]
    LocatorUrl {
        /// The URL.
        url: String,
        /// The ORB's reason.
        #[source]
        source: armillary::ReferenceError,
    },
    /// A locator refused the worker, or could not be reached.
    #[error("cannot register with the locator at {url}")]
    Register {
        /// The locator's URL.
        url: String,
        /// What went wrong.
        #[source]
        source: RegistrationError,
    },
    /// The IOR file could not be written (the message says which and
    /// why).
    #[error("{0}")]
    Write(String),
    /// The ORB's main loop failed.
    #[error("the worker's ORB failed")]
    Run(#[source] SystemException),
}

/// Serves a worker, registered with every locator of `options`, until
/// killed.
pub(crate) fn serve(options: &WorkerOptions) -> Result<(), WorkerError> {
    let mut args = vec!["-ORBConcurrency".to_owned(), options.concurrency.clone()];
    if let Some(endpoint) = &options.endpoint {
        args.extend(["-ORBListenEndpoints".to_owned(), endpoint.clone()]);
    }
    let mut config = OrbConfig::default();
    config
        .apply_args(args)
        .map_err(|e| WorkerError::Orb(e.into()))?;
    let orb = Orb::with_config(config).map_err(WorkerError::Orb)?;
    let poa = orb.root_poa();
    poa.manager().activate().map_err(WorkerError::Activate)?;
    let busy = RequestsInProgress::default();
    let worker = WorkerSkeleton::new(WorkerImpl {
        name: options.name.clone(),
        backend: Mutex::new(()),
        busy: busy.clone(),
    })
    .activate(&poa)
    .map_err(WorkerError::Activate)?;
    let mut registrations = Vec::new();
    for url in &options.locators {
        let locator = orb
            .try_string_to_object(url)
            .map_err(|source| WorkerError::LocatorUrl {
                url: url.clone(),
                source,
            })?;
        let load = busy.clone();
        let registration = ReplicaRegistration::start(
            &Locator::from_object(locator),
            &options.group,
            worker.as_object(),
            options.report_period,
            move || load.load(),
        )
        .map_err(|source| WorkerError::Register {
            url: url.clone(),
            source,
        })?;
        registrations.push(registration);
    }
    let ior = orb.object_to_string(worker.as_object());
    match &options.ior_file {
        Some(path) => write_atomically(path, &format!("{ior}\n")).map_err(WorkerError::Write)?,
        None => println!("{ior}"),
    }
    orb.run().map_err(WorkerError::Run)?;
    drop(registrations);
    Ok(())
}
