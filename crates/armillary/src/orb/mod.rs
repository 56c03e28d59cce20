//! The ORB: [`Orb`], the operations of `CORBA::ORB` that applications
//! call (initialisation, the root POA, initial references, stringified
//! references, `run` / `work_pending` / `perform_work`, shutdown).
//!
//! The ORB core behind it is split by concern:
//!
//! - [`core`](self::core): `OrbCore`, what one ORB holds (its
//!   configuration, the POA registry, the client connection cache, the
//!   server, the initial references) and its lifecycle; the references it
//!   makes; AMI deliveries.
//! - `adapter.rs`: how the server resolves a request's object key through
//!   the ORB's POAs (the `ObjectAdapter` the server calls).
//! - `crate::invocation`: the client invocation engine, the one place a
//!   client request is sent and its reply concluded, for every form.
//! - `crate::collocation`: the ORB's local objects and the invokers that
//!   call servants in-process.
//!
//! Who runs the server side depends on the concurrency model: the server's
//! own threads (reactive, thread pool, thread per connection, ...), or,
//! with [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads),
//! the application's threads in [`Orb::run`] and [`Orb::perform_work`].

mod adapter;
pub(crate) mod core;

pub(crate) use self::core::OrbCore;
use self::core::{reactor_failed, shut_down_error, CoreFactory};

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use armillary_giop::ior::{Ior, ObjectUrl};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::CdrDecode;
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

use crate::completion::WaitForCompletion;
use crate::config::OrbConfig;
use crate::endpoint::Endpoint;
use crate::object::{Invoker, ObjectRef};
use crate::poa::current::CurrentServant;
use crate::poa::{Poa, PoaRegistry};
use crate::transport::connection_cache::ConnectionCache;
use crate::transport::server::ServerStats;

use crate::collocation::local_objects::{local_reference, LocalPoaServant};
pub use crate::error::OrbError;

/// Why a string could not be turned into a reference
/// ([`Orb::try_string_to_object`]). [`Orb::string_to_object`] reports the
/// same failures as a [`SystemException`] (`From` below).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
    /// The text is not a valid `IOR:`, `corbaloc:` or `corbaname:` string;
    /// the [`IorError`](armillary_giop::ior::IorError) says what is wrong
    /// and where (a bad hex digit and its position, a CDR length that
    /// exceeds what is left and its offset, ...). BAD_PARAM
    /// (`minor::MALFORMED`) as a system exception.
    #[error("malformed object reference: {0}")]
    Malformed(#[from] armillary_giop::ior::IorError),
    /// The string names an initial reference or a name in a naming
    /// context, and resolving it failed with this exception.
    #[error("cannot resolve the reference: {0}")]
    Resolve(SystemException),
}

impl From<ReferenceError> for SystemException {
    fn from(e: ReferenceError) -> SystemException {
        match e {
            ReferenceError::Malformed(_) => {
                SystemException::bad_param(minor::MALFORMED, CompletionStatus::No)
            }
            ReferenceError::Resolve(ex) => ex,
        }
    }
}

/// A CORBA ORB. Cheap to clone; clones are the same ORB.
///
/// An ORB turns stringified references into [`ObjectRef`]s, gives the
/// root POA in which servants are activated, serves requests with the
/// [`ConcurrencyModel`](crate::config::ConcurrencyModel) of its configuration, and is shut down when the
/// application is done with it.
///
/// # Examples
///
/// ```
/// use armillary::Orb;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // `ORB_init`: the -ORB options configure the ORB, the rest is the
/// // application's.
/// let args = ["quoter-client", "-ORBGIOPVersion", "1.1", "quoter.ior"];
/// let (orb, args) = Orb::init(args)?;
/// assert_eq!(args, ["quoter-client", "quoter.ior"]);
///
/// // A reference from a URL; nothing is contacted until it is called.
/// let naming = orb.string_to_object("corbaloc:iiop:127.0.0.1:2809/NameService")?;
/// assert!(!naming.is_nil());
///
/// // References the ORB makes itself point at its own server.
/// let reference = orb.root_poa().create_reference("IDL:Stock/Quoter:1.0")?;
/// let ior = orb.object_to_string(&reference);
/// assert!(ior.starts_with("IOR:"));
///
/// orb.shutdown(armillary::WaitForCompletion::Yes)?;
/// # Ok(())
/// # }
/// ```
///
/// # Lifecycle
///
/// The ORB lives as long as one of its `Orb` values does. When the last
/// one is dropped the ORB shuts down as [`destroy`](Self::destroy) does:
/// its listeners close (the port refuses connections), its server threads
/// stop, its client connections close, its POAs are destroyed and their
/// servants released. Dropping waits for the requests that are running to
/// finish, except inside one of the ORB's own upcalls, where it would wait
/// for itself: there it returns at once and the requests finish on their
/// own. References that outlive the ORB fail with BAD_INV_ORDER
/// ([`minor::ORB_SHUT_DOWN`]); they do not keep it alive, and neither do
/// the ORB's own threads. A servant that holds a clone of its own `Orb`
/// does keep it alive, as any `Arc` cycle does: call
/// [`shutdown`](Self::shutdown) or [`destroy`](Self::destroy) to end it.
///
/// Several ORBs in one process are independent: shutting one down or
/// dropping it touches only its own state.
///
/// ```
/// let (orb, _) = armillary::Orb::init(["app", "-ORBListenEndpoints", "iiop://127.0.0.1:0"]).unwrap();
/// let port = orb.endpoints()[0].port();
/// drop(orb);
/// assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
/// ```
#[derive(Clone)]
pub struct Orb {
    handle: Arc<OrbHandle>,
}

/// What the application's [`Orb`] values share, and only they: its drop
/// (the last `Orb` gone) shuts the ORB down. References and the ORB's own
/// threads hold the core, never this.
struct OrbHandle {
    core: Arc<OrbCore>,
}

impl Drop for OrbHandle {
    fn drop(&mut self) {
        self.core.release();
    }
}

impl fmt::Debug for Orb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.core();
        f.debug_struct("Orb")
            .field("concurrency", &core.config.concurrency)
            .field("endpoints", &self.endpoints())
            .field("shut_down", &core.shut_down.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

fn orb_token() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    now ^ (u64::from(std::process::id()) << 32)
}

impl Orb {
    /// How long [`perform_work`](Self::perform_work) waits for work to
    /// arrive when none is pending.
    pub const PERFORM_WORK_WAIT: Duration = Duration::from_millis(100);

    /// `ORB_init`: an ORB configured from `-ORB…` options; returns the
    /// other arguments for the application.
    pub fn init<I, S>(args: I) -> Result<(Orb, Vec<String>), OrbError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut config = OrbConfig::default();
        let rest = config.apply_args(args)?;
        Ok((Orb::with_config(config)?, rest))
    }

    /// An ORB with this configuration.
    ///
    /// When the server listens: listening endpoints given in the
    /// configuration (`-ORBListenEndpoints`, plain or TLS) are opened now,
    /// so [`endpoints`](Self::endpoints) reports them at once and a
    /// misconfigured endpoint fails here. Without any, the ORB listens only
    /// once it publishes an object: the first time a POA makes a reference
    /// (`servant_to_reference`, `id_to_reference`, a skeleton's
    /// `activate`, ...) the server starts on 127.0.0.1 with a port the
    /// system picks. A client-only ORB never listens.
    pub fn with_config(config: OrbConfig) -> Result<Orb, OrbError> {
        let hold_limit = config.hold_limit;
        config.check()?;
        config.tls.check_version(config.giop_version())?;
        let client_tls = config.tls.client_config()?;
        let profiles =
            crate::transport::profiles::ProfileCache::new(client_tls.is_some(), config.tls.require);
        let connections = ConnectionCache::new(
            client_tls,
            crate::transport::mux::mux(&config),
            config.max_message_size,
        );
        let interceptors = Arc::new(crate::interceptors::initialize(&config));
        let request_metrics = config
            .metrics_endpoint
            .as_ref()
            .map(|_| Arc::new(crate::metrics::RequestMetrics::new()));
        let core = Arc::new_cyclic(|me: &Weak<OrbCore>| {
            let (registry, root) =
                PoaRegistry::new(orb_token(), Arc::new(CoreFactory(me.clone())), hold_limit);
            OrbCore {
                wait: crate::transport::wait::strategy(&config),
                config,
                registry,
                root,
                connections,
                profiles,
                server: Mutex::new(None),
                key_table: RwLock::default(),
                initial: RwLock::new(HashMap::new()),
                deferred: crate::dii::DeferredRequests::default(),
                readers: Mutex::new(Vec::new()),
                callbacks: crate::ami::CallbackQueue::default(),
                interceptors,
                request_metrics,
                metrics_endpoint: Mutex::new(None),
                shut_down: AtomicBool::new(false),
                shutdown_lock: Mutex::new(()),
                shutdown_signal: Condvar::new(),
                scope: crate::object::ScopeToken::new(me.clone() as Weak<dyn Invoker>),
                me: me.clone(),
            }
        });
        let me: Weak<dyn Invoker> = core.me.clone();
        crate::object::register_default_invoker(me);
        // From here a failure drops the handle, which undoes the start.
        let orb = Orb {
            handle: Arc::new(OrbHandle { core }),
        };
        let core = orb.core();
        OrbCore::start_metrics_endpoint(core)?;
        if !core.config.endpoints.is_empty() || core.config.tls.is_server() {
            core.server()?;
        }
        Ok(orb)
    }

    fn core(&self) -> &Arc<OrbCore> {
        &self.handle.core
    }

    /// `PICurrent`: the calling thread's portable-interceptor slots, which
    /// the ORB's initializers allocated (see [`crate::interceptors`]).
    #[doc(alias = "PICurrent")]
    pub fn pi_current(&self) -> crate::interceptors::PiCurrent {
        self.core().interceptors.pi_current()
    }

    /// The root POA.
    pub fn root_poa(&self) -> Poa {
        self.core().root.clone()
    }

    /// `resolve_initial_references` for object references: names given
    /// with `-ORBInitRef`, under `-ORBDefaultInitRef`, or registered with
    /// [`register_initial_reference`](Self::register_initial_reference).
    /// `POACurrent` is a local reference that
    /// [`PoaCurrent::narrow`](crate::poa::PoaCurrent::narrow) accepts, and
    /// `RootPOA` one that [`Poa::narrow`] turns into
    /// [`root_poa`](Self::root_poa).
    ///
    /// ```
    /// use armillary::poa::{Poa, PoaCurrent, PoaError};
    /// let (orb, _) = armillary::Orb::init(["app"]).unwrap();
    /// let obj = orb.resolve_initial_references("POACurrent").unwrap();
    /// let current = PoaCurrent::narrow(&obj).unwrap();
    /// // Outside a request upcall there is nothing to tell.
    /// assert_eq!(current.object_id(), Err(PoaError::NoContext));
    /// let obj = orb.resolve_initial_references("RootPOA").unwrap();
    /// assert!(obj.is_a("IDL:omg.org/PortableServer/POA:2.3").unwrap());
    /// let root = Poa::narrow(&orb, &obj).unwrap();
    /// assert_eq!(root.name(), "RootPOA");
    /// # orb.destroy();
    /// ```
    pub fn resolve_initial_references(&self, name: &str) -> Result<ObjectRef, SystemException> {
        if name == "POACurrent" {
            return Ok(self.poa_current_reference());
        }
        if name == "RootPOA" {
            return Ok(local_reference(self.core(), Arc::new(LocalPoaServant)));
        }
        if let Some(obj) = self.core().initial.read().get(name) {
            return Ok(obj.clone());
        }
        if let Some(url) = self.core().config.initial_references.get(name) {
            return self.string_to_object(url);
        }
        if let Some(base) = &self.core().config.default_initial_reference {
            return self.string_to_object(&format!("{}/{}", base.trim_end_matches('/'), name));
        }
        Err(SystemException::inv_objref(0, CompletionStatus::No))
    }

    fn poa_current_reference(&self) -> ObjectRef {
        local_reference(self.core(), Arc::new(CurrentServant))
    }

    /// Makes `obj` what `resolve_initial_references(name)` returns.
    pub fn register_initial_reference(&self, name: &str, obj: ObjectRef) {
        self.core().initial.write().insert(name.to_owned(), obj);
    }

    /// Lets clients reach `obj` with the plain object key `key` (for
    /// `corbaloc::host:port/key` URLs), like TAO's IOR table.
    pub fn bind_object_key(&self, key: &str, obj: ObjectRef) {
        self.core()
            .key_table
            .write()
            .insert(key.as_bytes().to_vec(), obj);
    }

    /// The stringified IOR of `obj`.
    pub fn object_to_string(&self, obj: &ObjectRef) -> String {
        obj.ior().to_string()
    }

    /// A reference to the object `ior` names, bound to this ORB: its
    /// requests go through this ORB's connections and collocation (use it
    /// for an IOR taken out of a [`DynValue`](armillary_giop::any::DynValue)
    /// or read from elsewhere).
    pub fn ior_to_object(&self, ior: Ior) -> ObjectRef {
        ObjectRef::new(ior, self.core().clone())
    }

    /// Turns an `IOR:`, `corbaloc:` or `corbaname:` string into a
    /// reference. `corbaloc:rir:` resolves an initial reference.
    ///
    /// A malformed string is BAD_PARAM (`minor::MALFORMED`);
    /// [`try_string_to_object`](Self::try_string_to_object) says what is
    /// wrong with it.
    pub fn string_to_object(&self, s: &str) -> Result<ObjectRef, SystemException> {
        self.try_string_to_object(s).map_err(SystemException::from)
    }

    /// [`string_to_object`](Self::string_to_object) with an error that
    /// names what is wrong.
    ///
    /// ```
    /// use armillary::ReferenceError;
    /// use armillary::giop::ior::IorError;
    /// let orb = armillary::Orb::with_config(Default::default()).unwrap();
    /// let e = orb.try_string_to_object("IOR:01zz").unwrap_err();
    /// assert!(matches!(e, ReferenceError::Malformed(IorError::BadHex { ch: 'z', at: 6 })));
    /// assert_eq!(e.to_string(), "malformed object reference: bad hex digit 'z' at character 6");
    /// orb.shutdown(armillary::WaitForCompletion::Yes).unwrap();
    /// ```
    pub fn try_string_to_object(&self, s: &str) -> Result<ObjectRef, ReferenceError> {
        let url: ObjectUrl = s.parse()?;
        match url {
            ObjectUrl::CorbalocRir { key } => self
                .resolve_initial_references(&key)
                .map_err(ReferenceError::Resolve),
            ObjectUrl::Corbaname {
                addresses,
                key,
                name,
            } => self
                .resolve_corbaname(addresses, key, &name)
                .map_err(ReferenceError::Resolve),
            other => match other.to_ior() {
                Some(ior) => Ok(ObjectRef::new(ior, self.core().clone())),
                // Unreachable: only rir: and corbaname: URLs have no IOR.
                None => Err(ReferenceError::Resolve(SystemException::bad_param(
                    minor::MALFORMED,
                    CompletionStatus::No,
                ))),
            },
        }
    }

    /// `corbaname:`: the naming context at the addresses (or the initial
    /// reference) and key, then, for a non-empty name, its
    /// `NamingContextExt::resolve_str`. A name the context cannot resolve
    /// is BAD_PARAM (`minor::CORBANAME_UNRESOLVED`); a context that cannot
    /// be reached fails as any call does.
    fn resolve_corbaname(
        &self,
        addresses: Option<Vec<armillary_giop::ior::CorbalocAddress>>,
        key: Vec<u8>,
        name: &str,
    ) -> Result<ObjectRef, SystemException> {
        let context = match addresses {
            Some(addresses) => {
                let ior = ObjectUrl::Corbaloc { addresses, key }
                    .to_ior()
                    .ok_or_else(|| {
                        SystemException::bad_param(minor::MALFORMED, CompletionStatus::No)
                    })?;
                ObjectRef::new(ior, self.core().clone())
            }
            None => self.resolve_initial_references(&String::from_utf8_lossy(&key))?,
        };
        if name.is_empty() {
            return Ok(context);
        }
        context.invoke(
            "resolve_str",
            &|w| w.write_string(name),
            |reply| match reply {
                crate::object::ReplyBody::Result(r) => Ok(Ok(ObjectRef::decode(r)?)),
                // NotFound, CannotProceed or InvalidName.
                crate::object::ReplyBody::UserException { .. } => Ok(Err(
                    SystemException::bad_param(minor::CORBANAME_UNRESOLVED, CompletionStatus::No),
                )),
            },
        )
    }

    /// Serves requests on the calling thread until
    /// [`shutdown`](Self::shutdown) with
    /// [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads) (several threads may call it
    /// at once: they share the reactor as Leader/Followers). With the other
    /// models the server's own threads do the work and this only blocks
    /// until shutdown.
    ///
    /// Returns `Ok(())` once the ORB is shut down (at once if it already
    /// is). Fails with INTERNAL ([`minor::REACTOR_FAILED`]) when the
    /// reactor failed: the ORB can serve nothing more, so `run` returns
    /// rather than wait for a shutdown.
    pub fn run(&self) -> Result<(), SystemException> {
        let core = self.core();
        let drives = core.driven_by_application();
        loop {
            let server = {
                let mut guard = core.shutdown_lock.lock();
                loop {
                    if core.shut_down.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    // AMI replies for this thread to deliver (a pure
                    // client has nothing else to drive).
                    if drives && !core.callbacks.is_empty() {
                        MutexGuard::unlocked(&mut guard, || core.callbacks.run_ready());
                        continue;
                    }
                    // Not in the `match`: its guard would live to the end
                    // of it, and block every reference made while we wait.
                    let current = core.server.lock().clone();
                    match current {
                        Some(server) if server.failed() => return Err(reactor_failed()),
                        Some(server) if server.driven_by_application() => break server,
                        // The server's threads serve: `shutdown` and a
                        // failure of their reactor signal.
                        Some(_) => core.shutdown_signal.wait(&mut guard),
                        // Nothing to drive yet: `shutdown`, the server's
                        // start and a queued AMI callback all signal.
                        None => core.shutdown_signal.wait(&mut guard),
                    }
                }
            };
            // Queued AMI callbacks wait at most one round of the reactor;
            // else it waits until something happens (a callback queued
            // meanwhile wakes it, and so does `shutdown`).
            let wait = if core.callbacks.is_empty() {
                None
            } else {
                Some(Duration::ZERO)
            };
            if server.drive(wait).is_err() && !core.shut_down.load(Ordering::SeqCst) {
                return Err(reactor_failed());
            }
            core.callbacks.run_ready();
        }
    }

    /// Whether the calling thread has ORB work to do: with
    /// [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads),
    /// whether an AMI callback, a request, a new connection or another
    /// server event is ready for
    /// [`perform_work`](Self::perform_work). With the other models the
    /// server's threads do all the work, so it is always false.
    ///
    /// Fails with BAD_INV_ORDER ([`minor::ORB_SHUT_DOWN`]) after
    /// [`shutdown`](Self::shutdown).
    pub fn work_pending(&self) -> Result<bool, SystemException> {
        if self.core().shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        if self.core().driven_by_application() && !self.core().callbacks.is_empty() {
            return Ok(true);
        }
        let server = self.core().server.lock().clone();
        match server {
            Some(server) if server.failed() => Err(reactor_failed()),
            Some(server) => Ok(server.work_pending()),
            None => Ok(false),
        }
    }

    /// Does one unit of ORB work on the calling thread: with
    /// [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads),
    /// one AMI callback (see [`ami`](crate::ami); a pure client has only
    /// those), one server event (which may run the requests that arrived
    /// together on one connection), one
    /// posted piece of work or one round of idle checks; when nothing is
    /// pending it waits up to [`PERFORM_WORK_WAIT`](Self::PERFORM_WORK_WAIT)
    /// for something to arrive, never longer. With the other models it
    /// only yields the thread: the server's threads do the work.
    ///
    /// Fails with BAD_INV_ORDER ([`minor::ORB_SHUT_DOWN`]) after
    /// [`shutdown`](Self::shutdown), and with INTERNAL
    /// ([`minor::REACTOR_FAILED`]) when the reactor failed.
    ///
    /// ```
    /// use armillary::config::{ConcurrencyModel, OrbConfig};
    /// let orb = armillary::Orb::with_config(
    ///     OrbConfig::new().concurrency(ConcurrencyModel::ApplicationThreads),
    /// )
    /// .unwrap();
    /// // The application's main loop, interleaved with its other work.
    /// for _ in 0..3 {
    ///     if orb.work_pending().unwrap() {
    ///         orb.perform_work().unwrap();
    ///     }
    /// }
    /// orb.shutdown(armillary::WaitForCompletion::Yes).unwrap();
    /// assert!(orb.work_pending().is_err());
    /// ```
    pub fn perform_work(&self) -> Result<(), SystemException> {
        if self.core().shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let drives = self.core().driven_by_application();
        // An AMI reply to deliver is one unit of work.
        if drives && self.core().callbacks.run_one(Duration::ZERO) {
            return Ok(());
        }
        let server = self.core().server.lock().clone();
        match server {
            Some(server) => server
                .perform_work(Self::PERFORM_WORK_WAIT)
                .map_err(|_| reactor_failed()),
            // A pure client: wait for an AMI reply to deliver.
            None if drives => {
                self.core().callbacks.run_one(Self::PERFORM_WORK_WAIT);
                Ok(())
            }
            None => {
                std::thread::yield_now();
                Ok(())
            }
        }
    }

    /// `ORB::shutdown`: stops the ORB. The listeners close, connections
    /// (served and used as a client) close with CloseConnection, the
    /// server's threads and every [`run`](Self::run) return, and calls
    /// through the ORB's references fail with BAD_INV_ORDER
    /// ([`minor::ORB_SHUT_DOWN`]). With [`WaitForCompletion::Yes`] it
    /// returns once the server's threads have finished the requests they
    /// were running; with [`WaitForCompletion::No`] at once. Shutting down
    /// an ORB that is shut down already does nothing.
    ///
    /// The error is the [`SystemException`] CORBA raises:
    /// [`WaitForCompletion::Yes`] from inside an upcall of this same ORB
    /// (a servant's operation, possibly nested) would wait for itself, so
    /// it fails with BAD_INV_ORDER ([`minor::WOULD_DEADLOCK`]) and does
    /// nothing; use [`WaitForCompletion::No`] there.
    ///
    /// ```
    /// use armillary::WaitForCompletion;
    /// let orb = armillary::Orb::with_config(Default::default()).unwrap();
    /// orb.shutdown(WaitForCompletion::Yes)?;
    /// orb.run()?; // Returns at once: the ORB is shut down.
    /// # Ok::<(), armillary::SystemException>(())
    /// ```
    pub fn shutdown(&self, wait: WaitForCompletion) -> Result<(), SystemException> {
        let core = self.core();
        if wait.is_yes() && core.in_own_upcall() {
            return Err(SystemException::bad_inv_order(
                minor::WOULD_DEADLOCK,
                CompletionStatus::No,
            ));
        }
        core.stop(wait);
        Ok(())
    }

    /// Whether the ORB has been shut down.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.core().shut_down.load(Ordering::SeqCst)
    }

    /// The requests sent with `send_multiple_requests`.
    pub(crate) fn deferred_requests(&self) -> &crate::dii::DeferredRequests {
        &self.core().deferred
    }

    /// `ORB::destroy`: shuts the ORB down if needed and releases what it
    /// holds (its POAs and their servants, registered initial references
    /// and object keys), for every clone of this `Orb`. It waits for the
    /// running requests as [`shutdown`](Self::shutdown) with
    /// [`WaitForCompletion::Yes`] does, except inside one of the ORB's own
    /// upcalls, where it does not wait. Dropping the last `Orb` does the
    /// same.
    pub fn destroy(self) {
        self.core().release();
    }

    /// The endpoints the server listens on now, plain IIOP first, then
    /// IIOP over TLS (see [`Endpoint`]). Empty before the server has
    /// started (see [`with_config`](Self::with_config) for when it does)
    /// and after [`shutdown`](Self::shutdown). Asking never starts the
    /// server.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        self.core()
            .server
            .lock()
            .as_ref()
            .map(|s| s.endpoints())
            .unwrap_or_default()
    }

    /// What the server side has done and holds now (connections, accept
    /// calls, memory held by partly received messages); `None` before the
    /// server has started. With `-ORBMetricsEndpoint` they are served for
    /// scraping too (see [`crate::metrics`]).
    pub fn server_stats(&self) -> Option<ServerStats> {
        self.core().server.lock().as_ref().map(|s| s.stats())
    }

    /// The address the metrics endpoint listens on
    /// (`-ORBMetricsEndpoint`, [`OrbConfig::metrics_endpoint`]): the port
    /// the system picked when the configuration asked for port 0. `None`
    /// without one, and after [`shutdown`](Self::shutdown), which closes
    /// it.
    pub fn metrics_endpoint(&self) -> Option<std::net::SocketAddr> {
        self.core()
            .metrics_endpoint
            .lock()
            .as_ref()
            .map(|e| e.address())
    }
}
