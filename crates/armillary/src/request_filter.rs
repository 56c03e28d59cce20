//! The threading framework (MT-Orbix's "thread filter", in the Visibroker
//! survey of threading architectures): the public [`RequestFilter`], what
//! it sees ([`RequestInfo`]) and decides ([`Route`]), and the server-side
//! lanes and new-thread runner that carry its decisions out.
//!
//! **Precedence: the filter first, then the POA's model, then the ORB's.**
//! The filter is the application's decision about one request, made with
//! its target POA in view ([`RequestInfo::poa_path`]); a POA's
//! `Policy::Concurrency` is a standing choice for all its requests. So a
//! route the filter chooses (a lane, a new thread, the I/O thread, a
//! rejection) is where the request runs, whatever model its POA chose, and
//! [`Route::Default`] leaves it to the POA's model (or the ORB's, when the
//! POA chose none). A filter that wants a POA's requests to run as the POA
//! says answers `Default` for them. The route holds for the request's
//! whole life: a request a holding POA manager parks runs where its route
//! says once released (the filter is not asked again). A POA's
//! SINGLE_THREAD_MODEL is no model but a serialisation: it holds wherever
//! the request runs.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use armillary_giop::giop::ServiceContext;
use armillary_giop::system_exception::SystemException;
use parking_lot::{Condvar, Mutex};

use crate::poa::ObjectId;

/// Decides where each request runs: the threading framework (MT-Orbix's
/// "thread filter", in the Visibroker
/// survey of threading architectures): a [`RequestFilter`] the application
/// installs with [`OrbConfig::request_filter`](crate::config::OrbConfig::request_filter)
/// sees each request the server reads — its target, operation, client and
/// service contexts — and decides where it runs ([`Route`]): where the
/// ORB's concurrency model would run it, on a named *lane* (a pool of
/// threads configured with [`OrbConfig::lane`](crate::config::OrbConfig::lane)),
/// on a thread of its own, on the thread that read it, or nowhere (the
/// client gets the exception the filter chose, TRANSIENT when overloaded
/// for example).
///
/// ```
/// use armillary::config::OrbConfig;
/// use armillary::giop::system_exception::{CompletionStatus, SystemException};
/// use armillary::{RequestInfo, Route};
///
/// let config = OrbConfig::new()
///     .lane("slow", 4)
///     .request_filter(|request: &RequestInfo<'_>| match request.operation() {
///         "report" => Route::Lane("slow".into()),
///         "ping" => Route::IoThread,
///         "forbidden" => Route::Reject(SystemException::no_permission(0, CompletionStatus::No)),
///         _ => Route::Default,
///     });
/// assert_eq!(config.get_lanes().len(), 1);
/// ```
///
/// The filter runs on the thread that read the request, before the POA
/// looks for the servant: it should decide quickly and never block. What
/// it decides holds for that one request, before the target POA's own
/// model (`Policy::Concurrency`), which only `Route::Default` defers to
/// (see the module docs); the POA's SINGLE_THREAD_MODEL still serializes
/// a POA's upcalls wherever they run.
///
/// A closure `Fn(&RequestInfo<'_>) -> Route` is a filter.
pub trait RequestFilter: Send + Sync + 'static {
    /// Where `request` runs. Called on the thread that read it, before
    /// the POA looks for its servant; it should not block.
    fn route(&self, request: &RequestInfo<'_>) -> Route;
}

impl<F> RequestFilter for F
where
    F: Fn(&RequestInfo<'_>) -> Route + Send + Sync + 'static,
{
    fn route(&self, request: &RequestInfo<'_>) -> Route {
        self(request)
    }
}

/// Where a request runs, as a [`RequestFilter`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Route {
    /// Where the target POA's concurrency model (`Policy::Concurrency`)
    /// runs it, or the ORB's when the POA chose none. Every other route
    /// comes before the POA's model.
    Default,
    /// On the lane (a pool of threads) of this name, in the order the
    /// lane received its requests. A lane the configuration does not name
    /// answers OBJ_ADAPTER ([`minor::UNKNOWN_LANE`](armillary_giop::system_exception::minor::UNKNOWN_LANE)).
    Lane(String),
    /// On a new thread, which ends with the request. If the system
    /// refuses a thread the client gets TRANSIENT
    /// ([`minor::NO_THREAD`](armillary_giop::system_exception::minor::NO_THREAD)).
    NewThread,
    /// On the thread that read it, before that thread reads anything
    /// more: for short operations that must not wait for a worker.
    IoThread,
    /// Not at all: a two-way request is answered with this exception
    /// (completion status NO is right: nothing ran); a oneway is dropped.
    Reject(SystemException),
}

/// What a [`RequestFilter`] sees of a request.
#[derive(Debug)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    pub(crate) operation: &'a str,
    pub(crate) object_key: &'a [u8],
    pub(crate) target: Option<(Vec<String>, ObjectId)>,
    pub(crate) client: Option<SocketAddr>,
    pub(crate) service_contexts: &'a [ServiceContext],
    pub(crate) request_id: u32,
    pub(crate) response_expected: bool,
}

impl<'a> RequestInfo<'a> {
    /// The operation's name.
    pub fn operation(&self) -> &'a str {
        self.operation
    }

    /// The object key, as the request carried it.
    pub fn object_key(&self) -> &'a [u8] {
        self.object_key
    }

    /// The target object's id within its POA, when the key is a POA key.
    pub fn object_id(&self) -> Option<&ObjectId> {
        self.target.as_ref().map(|(_, id)| id)
    }

    /// The target POA's full name (its ancestors' names from below the
    /// root down, then its own; empty for the root POA), when the key is a
    /// POA key.
    pub fn poa_path(&self) -> Option<&[String]> {
        self.target.as_ref().map(|(path, _)| path.as_slice())
    }

    /// The client's address (the connection's peer), when known.
    pub fn client(&self) -> Option<SocketAddr> {
        self.client
    }

    /// The request's service contexts, as they travelled.
    pub fn service_contexts(&self) -> &'a [ServiceContext] {
        self.service_contexts
    }

    /// The data of the service context `id`, if the request carried one.
    pub fn service_context(&self, id: u32) -> Option<&'a [u8]> {
        self.service_contexts
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.data.as_slice())
    }

    /// The GIOP request id (unique per connection).
    pub fn request_id(&self) -> u32 {
        self.request_id
    }

    /// Whether the client waits for a reply (false for a oneway).
    pub fn response_expected(&self) -> bool {
        self.response_expected
    }
}

/// A lane: a named pool of threads that [`Route::Lane`] sends requests to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LaneConfig {
    /// The lane's name.
    pub name: String,
    /// Its threads (at least one).
    pub threads: usize,
}

/// The request filter an [`OrbConfig`](crate::config::OrbConfig) holds:
/// two are equal when they are the same filter.
#[derive(Clone, Default)]
pub(crate) struct FilterSlot(pub(crate) Option<Arc<dyn RequestFilter>>);

impl std::fmt::Debug for FilterSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(RequestFilter)"
        } else {
            "None"
        })
    }
}

impl PartialEq for FilterSlot {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for FilterSlot {}

/// Work for a lane.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct LaneQueue {
    jobs: VecDeque<Job>,
    closing: bool,
}

/// One lane's queue and threads.
struct Lane {
    queue: Arc<(Mutex<LaneQueue>, Condvar)>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The lanes of a server, by name.
pub(crate) struct Lanes {
    lanes: HashMap<String, Lane>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.lanes.keys()).finish()
    }
}

impl Lanes {
    /// Starts the threads of every lane in `configs`.
    pub(crate) fn start(configs: &[LaneConfig]) -> std::io::Result<Lanes> {
        let mut lanes = Lanes {
            lanes: HashMap::new(),
        };
        for config in configs {
            let queue = Arc::new((Mutex::new(LaneQueue::default()), Condvar::new()));
            let mut threads = Vec::new();
            for i in 0..config.threads.max(1) {
                let mine = queue.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("lane-{}-{i}", config.name))
                    .spawn(move || lane_worker(&mine));
                match spawned {
                    Ok(h) => threads.push(h),
                    Err(e) => {
                        lanes.lanes.insert(
                            config.name.clone(),
                            Lane {
                                queue,
                                threads: Mutex::new(threads),
                            },
                        );
                        lanes.join();
                        return Err(e);
                    }
                }
            }
            lanes.lanes.insert(
                config.name.clone(),
                Lane {
                    queue,
                    threads: Mutex::new(threads),
                },
            );
        }
        Ok(lanes)
    }

    /// Queues `job` on the lane `name`; gives it back when there is no
    /// such lane or it is closing.
    pub(crate) fn run(&self, name: &str, job: Job) -> Result<(), Job> {
        let Some(lane) = self.lanes.get(name) else {
            return Err(job);
        };
        let mut queue = lane.queue.0.lock();
        if queue.closing {
            return Err(job);
        }
        queue.jobs.push_back(job);
        drop(queue);
        lane.queue.1.notify_one();
        Ok(())
    }

    /// Takes no more jobs; the lanes' threads run what is queued, then
    /// end.
    pub(crate) fn close(&self) {
        for lane in self.lanes.values() {
            lane.queue.0.lock().closing = true;
            lane.queue.1.notify_all();
        }
    }

    /// Closes, and waits for the lanes' threads to end (except for a lane
    /// thread calling this).
    pub(crate) fn join(&self) {
        self.close();
        let me = std::thread::current().id();
        for lane in self.lanes.values() {
            for h in std::mem::take(&mut *lane.threads.lock()) {
                if h.thread().id() != me {
                    let _ = h.join();
                }
            }
        }
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        self.join();
    }
}

fn lane_worker(queue: &(Mutex<LaneQueue>, Condvar)) {
    let mut q = queue.0.lock();
    loop {
        if let Some(job) = q.jobs.pop_front() {
            drop(q);
            // A panicking upcall must not take the lane's thread with it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            q = queue.0.lock();
        } else if q.closing {
            return;
        } else {
            queue.1.wait(&mut q);
        }
    }
}

/// Runs `job` on a new thread named `name`; gives it back if the system
/// refuses a thread.
pub(crate) fn run_on_new_thread(name: &str, job: Job) -> Result<(), Job> {
    // The job comes back through this slot if the spawn fails.
    let slot = Arc::new(Mutex::new(Some(job)));
    let mine = slot.clone();
    let spawned = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            if let Some(job) = mine.lock().take() {
                job();
            }
        });
    match spawned {
        Ok(_) => Ok(()),
        Err(_) => slot.lock().take().map_or(Ok(()), Err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(30);
        while !cond() {
            assert!(Instant::now() < end, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_lane_runs_its_jobs_in_order_on_its_threads() {
        let lanes = Lanes::start(&[LaneConfig {
            name: "slow".into(),
            threads: 1,
        }])
        .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        for i in 0..10 {
            let log = log.clone();
            assert!(lanes
                .run(
                    "slow",
                    Box::new(move || log
                        .lock()
                        .push((i, std::thread::current().name().map(str::to_owned))))
                )
                .is_ok());
        }
        assert!(lanes.run("nope", Box::new(|| {})).is_err());
        wait_until("every job ran", || log.lock().len() == 10);
        let log = log.lock().clone();
        assert_eq!(
            log.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        assert!(log.iter().all(|(_, n)| n.as_deref() == Some("lane-slow-0")));
        lanes.join();
        assert!(lanes.run("slow", Box::new(|| {})).is_err());
    }

    #[test]
    fn a_new_thread_runs_the_job() {
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        assert!(run_on_new_thread(
            "request",
            Box::new(move || {
                assert_eq!(std::thread::current().name(), Some("request"));
                d.fetch_add(1, Ordering::SeqCst);
            })
        )
        .is_ok());
        wait_until("the thread ran", || done.load(Ordering::SeqCst) == 1);
    }

    #[test]
    fn closures_are_filters_and_info_finds_service_contexts() {
        let filter: Arc<dyn RequestFilter> = Arc::new(|r: &RequestInfo<'_>| {
            if r.service_context(7).is_some() {
                Route::IoThread
            } else {
                Route::Lane(r.operation().to_owned())
            }
        });
        let contexts = [ServiceContext {
            id: 7,
            data: vec![1],
        }];
        let mut info = RequestInfo {
            operation: "op",
            object_key: b"key",
            target: None,
            client: None,
            service_contexts: &contexts,
            request_id: 1,
            response_expected: true,
        };
        assert_eq!(filter.route(&info), Route::IoThread);
        info.service_contexts = &[];
        assert_eq!(filter.route(&info), Route::Lane("op".into()));
        assert_eq!(info.object_id(), None);
        assert_eq!(FilterSlot(Some(filter.clone())), FilterSlot(Some(filter)));
    }
}
