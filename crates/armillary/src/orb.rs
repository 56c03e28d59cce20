//! The ORB: configuration, the POA registry, the client connection cache,
//! the server, and the operations of `CORBA::ORB`.
//!
//! Who runs the server side depends on the concurrency model: the server's
//! own threads (reactive, thread pool, thread per connection), or, with
//! [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads), the application's threads in
//! [`Orb::run`] and [`Orb::perform_work`].

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use armillary_giop::cdr::codeset::{negotiate, CodeSets};
use armillary_giop::cdr::CdrReader;
use armillary_giop::giop::{
    LocateStatus, MessageBody, MessageBuilder, ReplyStatus, RequestHeader, ServiceContext,
    SyncScope, TargetAddress,
};
use armillary_giop::ior::{Ior, ObjectUrl, ProfileBody, TaggedComponent, ORB_TYPE_ARMILLARY};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, CdrDecode, GiopVersion};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

use crate::collocated::CollocatedInvoker;
use crate::completion::WaitForCompletion;
use crate::config::OrbConfig;
use crate::deferred::{PendingReply, RemoteDeferred};
use crate::endpoint::Endpoint;
use crate::object::{Invoker, Location, ObjectRef, OutgoingRequest, ReplyMessage, ReplyOutcome};
use crate::poa::current::CurrentServant;
use crate::poa::{Poa, PoaRegistry, ReferenceFactory, Resolution};
use crate::transport::client::{
    Awaited, Checkout, ClientConnection, Closed, ConnectionCache, SendError,
};
use crate::transport::outbox::Outgoing;
use crate::transport::reply::sync::SyncSlot;
use crate::transport::reply::ReplyDispatcher;
use crate::transport::server::{Located, ObjectAdapter, Server, ServerStats};

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

pub(crate) struct OrbCore {
    pub(crate) config: OrbConfig,
    pub(crate) registry: Arc<PoaRegistry>,
    root: Poa,
    pub(crate) connections: ConnectionCache,
    /// The IIOP profiles of the references called, decoded once.
    profiles: crate::transport::profiles::ProfileCache,
    /// How a caller waits for its reply (from the configuration).
    wait: Box<dyn crate::transport::wait::Waiter>,
    server: Mutex<Option<Arc<Server>>>,
    /// Plain object keys bound by the application (`corbaloc` targets).
    pub(crate) key_table: RwLock<HashMap<Vec<u8>, ObjectRef>>,
    initial: RwLock<HashMap<String, ObjectRef>>,
    /// Requests sent with `send_multiple_requests`, until collected.
    deferred: crate::dii::DeferredRequests,
    /// Connections an ORB thread reads for AMI futures and callbacks
    /// (closed at shutdown, which ends those threads).
    readers: Mutex<Vec<Weak<ClientConnection>>>,
    /// AMI callbacks waiting for an application thread
    /// ([`ConcurrencyModel::ApplicationThreads`]).
    callbacks: crate::ami::CallbackQueue,
    pub(crate) shut_down: AtomicBool,
    shutdown_lock: Mutex<()>,
    shutdown_signal: Condvar,
    me: Weak<OrbCore>,
}

struct CoreFactory(Weak<OrbCore>);

impl ReferenceFactory for CoreFactory {
    fn make_reference(&self, type_id: &str, object_key: Vec<u8>, _persistent: bool) -> ObjectRef {
        match self.0.upgrade() {
            Some(core) => core.make_reference(type_id, object_key),
            None => ObjectRef::nil(),
        }
    }

    fn object_key(&self, reference: &ObjectRef) -> Option<Vec<u8>> {
        reference
            .ior()
            .iiop_profiles()
            .into_iter()
            .next()
            .map(|p| p.object_key)
    }
}

const POA_REPOSITORY_ID: &str = "IDL:omg.org/PortableServer/POA:2.3";

/// What the `RootPOA` initial reference is as an object: a local object
/// whose only remote-style use is `_is_a`; its operations are the Rust
/// methods of the [`Poa`] that [`Poa::narrow`] returns.
struct LocalPoaServant;

impl crate::Servant for LocalPoaServant {
    fn repository_id(&self) -> &'static str {
        POA_REPOSITORY_ID
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == POA_REPOSITORY_ID
    }

    fn dispatch(&self, _request: &mut crate::ServerRequest<'_>) -> Result<(), SystemException> {
        // A POA is a local object: call it through `Poa::narrow`.
        Err(SystemException::no_implement(0, CompletionStatus::No))
    }
}

impl Poa {
    /// `PortableServer::POA::_narrow` of the reference that
    /// `orb.resolve_initial_references("RootPOA")` returned: `orb`'s root
    /// POA. `None` for any other reference (a POA is a local object and is
    /// never reached through a remote reference).
    pub fn narrow(orb: &Orb, reference: &ObjectRef) -> Option<Poa> {
        let local = reference.ior().iiop_profiles().is_empty();
        (local && !reference.is_nil() && reference.type_id() == POA_REPOSITORY_ID)
            .then(|| orb.root_poa())
    }
}

fn shut_down_error() -> SystemException {
    SystemException::bad_inv_order(minor::ORB_SHUT_DOWN, CompletionStatus::No)
}

fn reactor_failed() -> SystemException {
    SystemException::internal(minor::REACTOR_FAILED, CompletionStatus::No)
}

/// The invoker of a local object the ORB hands out (POA Current): the
/// object's own operations run in-process, on the calling thread. A
/// reference decoded from their replies binds to this invoker (see
/// `object::DecodingScope`) yet belongs to the ORB, so requests for any
/// other target go to the ORB.
struct LocalInvoker {
    ior: Ior,
    local: CollocatedInvoker,
    orb: Weak<OrbCore>,
}

impl LocalInvoker {
    /// Runs `call` with the invoker a request to `target` goes through:
    /// the local object's own, or the ORB's (BAD_INV_ORDER once it is
    /// gone).
    fn route<T>(
        &self,
        target: &Ior,
        call: impl FnOnce(&dyn Invoker) -> Result<T, SystemException>,
    ) -> Result<T, SystemException> {
        if *target == self.ior {
            return call(&self.local);
        }
        call(&*self.orb.upgrade().ok_or_else(shut_down_error)?)
    }
}

impl Invoker for LocalInvoker {
    fn invoke(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        self.route(target, |invoker| invoker.invoke(target, request))
    }

    fn send_deferred(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.route(target, |invoker| invoker.send_deferred(target, request))
    }

    fn send_asynchronous(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.route(target, |invoker| invoker.send_asynchronous(target, request))
    }

    /// The local object is here (a collocated invoker's answer).
    fn locate(&self, target: &Ior) -> Result<Location, SystemException> {
        self.route(target, |invoker| invoker.locate(target))
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
                key_table: RwLock::new(HashMap::new()),
                initial: RwLock::new(HashMap::new()),
                deferred: crate::dii::DeferredRequests::default(),
                readers: Mutex::new(Vec::new()),
                callbacks: crate::ami::CallbackQueue::default(),
                shut_down: AtomicBool::new(false),
                shutdown_lock: Mutex::new(()),
                shutdown_signal: Condvar::new(),
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
        if !core.config.endpoints.is_empty() || core.config.tls.is_server() {
            core.server()?;
        }
        Ok(orb)
    }

    fn core(&self) -> &Arc<OrbCore> {
        &self.handle.core
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
            return Ok(self.local_reference(Arc::new(LocalPoaServant)));
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
        self.local_reference(Arc::new(CurrentServant))
    }

    /// A reference to a local object of this ORB, served on the calling
    /// thread by `servant`.
    fn local_reference(&self, servant: Arc<dyn crate::Servant>) -> ObjectRef {
        let ior = CollocatedInvoker::new(servant.clone())
            .into_object_ref()
            .ior()
            .clone();
        let invoker = LocalInvoker {
            ior: ior.clone(),
            local: CollocatedInvoker::new(servant),
            orb: Arc::downgrade(self.core()),
        };
        ObjectRef::new(ior, Arc::new(invoker))
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
    /// server has started.
    pub fn server_stats(&self) -> Option<ServerStats> {
        self.core().server.lock().as_ref().map(|s| s.stats())
    }
}

impl OrbCore {
    /// Shuts down (idempotent): no new server, no more default-invoker
    /// binding, the server stopped, client connections closed, and every
    /// `run` told.
    fn stop(&self, wait: WaitForCompletion) {
        self.shut_down.store(true, Ordering::SeqCst);
        let me: Weak<dyn Invoker> = self.me.clone();
        crate::object::unregister_default_invoker(&me);
        let server = self.server.lock().take();
        if let Some(server) = server {
            server.stop(wait);
        }
        self.connections.close_all(self.config.giop_version());
        // Connections read for AMI requests that left the cache (a silent
        // timeout evicted them) close too: their readers end, and their
        // requests with them.
        let readers = std::mem::take(&mut *self.readers.lock());
        for conn in readers.iter().filter_map(Weak::upgrade) {
            conn.close(self.config.giop_version());
        }
        // AMI callbacks queued for application threads that will not run
        // the ORB any more are delivered here, so that each still happens
        // exactly once.
        self.callbacks.run_ready();
        self.deferred.clear();
        let _guard = self.shutdown_lock.lock();
        self.shutdown_signal.notify_all();
    }

    /// Makes sure `conn` is read while AMI futures or callbacks await
    /// replies on it: by the ORB's reactor when the wait strategy runs it
    /// and the ORB has a server whose own threads run that reactor (see
    /// `transport::wait`), else by an ORB thread (see
    /// [`ClientConnection::ensure_reader`]), remembering the connection so
    /// that shutdown ends that thread. A reactor that only the application
    /// runs (`Orb::run`, `Orb::perform_work`) never reads them: a future
    /// awaited, or a poller waited on, by a thread that does not drive the
    /// ORB would wait for ever. Nor does a reactor whose event the calling
    /// thread is handling (an upcall sending the request): that thread may
    /// block on the reply.
    pub(crate) fn read_for_asynchronous(&self, conn: &Arc<ClientConnection>) {
        // The wait strategy may have the ORB's reactor read it instead.
        // Nor one this thread runs: it may block on the reply (a servant
        // awaiting a future inside its upcall), and then nobody would read.
        let server = self.running_server().filter(|server| {
            !server.driven_by_application() && !crate::reactor::handles_events_of(server.reactor())
        });
        let by_reactor = self
            .wait
            .read_asynchronous(server.as_ref().map(|s| s.reactor()), conn);
        if by_reactor || conn.ensure_reader() {
            let mut readers = self.readers.lock();
            readers.retain(|r| r.strong_count() > 0);
            readers.push(Arc::downgrade(conn));
        }
    }

    /// Whether the application's threads drive this ORB (`Orb::run`,
    /// `Orb::perform_work`): its concurrency model says so.
    pub(crate) fn driven_by_application(&self) -> bool {
        crate::transport::server::driven_by_application(&self.config)
    }

    /// Delivers an AMI callback's outcome (`work` calls the application):
    /// at once on this thread (the one that read the reply, after it let
    /// go of the connection), or, with
    /// [`ConcurrencyModel::ApplicationThreads`], queued for [`Orb::run`] /
    /// [`Orb::perform_work`].
    pub(crate) fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        if !self.driven_by_application() || self.shut_down.load(Ordering::SeqCst) {
            work();
            return;
        }
        let first = self.callbacks.push(work);
        // A shutdown since the check above runs what is queued itself, but
        // may have done so before this was queued.
        if self.shut_down.load(Ordering::SeqCst) {
            self.callbacks.run_ready();
        }
        // A thread in `perform_work` may be waiting on the server's
        // reactor: wake it to run the callback (once: it runs those queued
        // after it before it waits again).
        if let (true, Some(server)) = (first, self.running_server()) {
            server.reactor().post(Box::new(|| {}));
        }
        let _guard = self.shutdown_lock.lock();
        self.shutdown_signal.notify_all();
    }

    /// `destroy` and the last handle's drop: shuts down (not waiting for
    /// itself inside its own upcall) and lets go of what could keep the
    /// core alive through references to itself (servants, tables).
    fn release(&self) {
        let wait = if self.in_own_upcall() {
            WaitForCompletion::No
        } else {
            WaitForCompletion::Yes
        };
        self.stop(wait);
        let _ = self
            .root
            .destroy(crate::poa::Etherealize::Yes, WaitForCompletion::No);
        let keys = std::mem::take(&mut *self.key_table.write());
        let initial = std::mem::take(&mut *self.initial.write());
        // Dropped outside the locks: a reference's drop may come back.
        drop((keys, initial));
    }

    /// Whether the calling thread runs an upcall of this ORB.
    fn in_own_upcall(&self) -> bool {
        crate::poa::current::in_upcall_of(&self.registry)
    }

    pub(crate) fn server(&self) -> Result<Arc<Server>, OrbError> {
        let mut slot = self.server.lock();
        if let Some(s) = &*slot {
            return Ok(s.clone());
        }
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(OrbError::Destroyed);
        }
        let adapter: Weak<dyn ObjectAdapter> = self.me.clone();
        let server = Server::start(&self.config, adapter)?;
        *slot = Some(server.clone());
        drop(slot);
        // Threads in `run` wait for a server to drive.
        let _guard = self.shutdown_lock.lock();
        self.shutdown_signal.notify_all();
        Ok(server)
    }

    fn make_reference(self: &Arc<Self>, type_id: &str, key: Vec<u8>) -> ObjectRef {
        let server = self.server().ok();
        let published = server.as_ref().map(|s| s.published()).unwrap_or_default();
        let published_tls = server.map(|s| s.published_tls()).unwrap_or_default();
        let version = self.config.giop_version();
        let mut profiles = Vec::new();
        // A server with only TLS endpoints publishes port 0 in the profile
        // itself, as omniORB does: the TLS components say where to go.
        let first = match (published.first(), published_tls.first()) {
            (Some(plain), _) => Some(plain.clone()),
            (None, Some((host, _))) => Some((host.clone(), 0)),
            (None, None) => None,
        };
        for (host, port) in first.iter() {
            let mut body = ProfileBody::new(version, host, *port, key.clone());
            if version >= GiopVersion::V1_1 {
                body.components
                    .push(TaggedComponent::orb_type(ORB_TYPE_ARMILLARY));
                body.components
                    .push(TaggedComponent::code_sets(&self.config.code_sets()));
                body.components
                    .extend(crate::transport::tls::ior_components(
                        &self.config.tls,
                        &published_tls,
                        !published.is_empty(),
                    ));
                for (h, p) in published.iter().skip(1) {
                    if let Ok(alt) = TaggedComponent::alternate_address(h, *p) {
                        body.components.push(alt);
                    }
                }
            }
            if let Ok(p) = body.to_profile() {
                profiles.push(p);
            }
        }
        ObjectRef::new(
            Ior {
                type_id: type_id.to_owned(),
                profiles,
            },
            self.clone(),
        )
    }

    /// Waits for the reply to `id` on `conn` (its dispatcher fills `slot`)
    /// as the ORB's wait strategy does, serving meanwhile what the calling
    /// thread must serve.
    fn wait_reply(
        &self,
        conn: &Arc<ClientConnection>,
        id: u32,
        slot: &SyncSlot,
        deadline: Option<Instant>,
    ) -> Awaited {
        let _waiting = crate::thread_role::waiting_for_reply();
        let serving = crate::transport::wait::serving(self.driven_reactor());
        conn.wait_reply_by(id, slot, deadline, &*self.wait, &serving)
    }

    /// Waits on `conn` until `done` (or the connection closes: true) or
    /// `deadline` (false), as the ORB's wait strategy does.
    pub(crate) fn wait_on(
        &self,
        conn: &Arc<ClientConnection>,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&mut crate::transport::client::ReadState) -> bool,
    ) -> bool {
        let _waiting = crate::thread_role::waiting_for_reply();
        let serving = crate::transport::wait::serving(self.driven_reactor());
        self.wait.wait(&serving, conn, deadline, done)
    }

    /// The reactor of this ORB's server when the application's threads
    /// drive it: any thread waiting for a reply serves it then.
    fn driven_reactor(&self) -> Option<Arc<crate::reactor::Reactor>> {
        if !self.driven_by_application() {
            return None;
        }
        self.running_server().map(|server| server.reactor().clone())
    }

    /// The server, if it has started (without starting it).
    pub(crate) fn running_server(&self) -> Option<Arc<Server>> {
        self.server.lock().clone()
    }

    /// The connection to `route` for a call that must end by `deadline`.
    fn connection(
        &self,
        route: &crate::transport::tls::Route,
        deadline: Option<Instant>,
    ) -> Result<Checkout, SystemException> {
        self.connections
            .get(&route.host, route.port, route.tls, deadline)
    }

    /// What a reply wait that ran out of time means for the call and the
    /// connection: TIMEOUT, COMPLETED_MAYBE when the request left whole
    /// (`sent`), COMPLETED_NO when it never did. A connection on which the
    /// server said nothing at all since the request left (hung, or gone
    /// without closing) is not used for new calls; calls already waiting
    /// on it keep it until they end, and it closes with the last of them.
    /// A connection that still carries other replies stays, and the late
    /// reply is dropped when it comes.
    fn timed_out(&self, conn: &Arc<ClientConnection>, silent: bool, sent: bool) -> SystemException {
        if silent && sent {
            self.connections.evict(conn);
        }
        let completed = if sent {
            CompletionStatus::Maybe
        } else {
            CompletionStatus::No
        };
        SystemException::timeout(minor::CALL_TIMEOUT, completed)
    }

    /// One synchronous attempt at `request` on `target`; `addressing` is
    /// the GIOP 1.2 addressing disposition (0 key, 1 profile, 2 whole
    /// reference). The attempt ends by `deadline` when there is one.
    fn invoke_once(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        addressing: i16,
        deadline: Option<Instant>,
    ) -> Result<Attempt, SystemException> {
        let slot = Arc::new(SyncSlot::default());
        let sent = match self.send_once(target, request, addressing, deadline, slot.dispatcher())? {
            Ok(sent) => sent,
            Err(attempt) => return Ok(attempt),
        };
        let awaited = self.wait_reply(&sent.conn, sent.id, &slot, deadline);
        self.finish(&sent, awaited, request.response_expected)
    }

    /// Sends one attempt at `request` on `target` (see
    /// [`invoke_once`](Self::invoke_once)), its reply to go to
    /// `dispatcher`: the request as sent, or what the attempt already came
    /// to (a oneway is done once written; a request that could not be
    /// written whole is retried).
    pub(crate) fn send_once(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
        addressing: i16,
        deadline: Option<Instant>,
        dispatcher: Box<dyn ReplyDispatcher>,
    ) -> Result<Result<Sent, Attempt>, SystemException> {
        let (index, usable) = self.profiles.first_iiop(&target.profiles).ok_or_else(|| {
            SystemException::inv_objref(minor::UNREGISTERED_OBJECT, CompletionStatus::No)
        })?;
        let profile = &usable.body;
        let address = match addressing {
            1 => TargetAddress::Profile(target.profiles[index].clone()),
            2 => TargetAddress::Reference {
                selected_profile_index: index as u32,
                ior: target.clone(),
            },
            _ => TargetAddress::Key(profile.object_key.clone()),
        };
        let version = profile.iiop_version.min(self.config.giop_version());
        let mut last_error = None;
        for route in usable.routes.clone()? {
            let conn = match self.connection(&route, deadline) {
                Ok(c) => c,
                Err(e) => {
                    last_error = Some(e);
                    continue;
                }
            };
            let id = conn.next_request_id();
            let mut contexts = Vec::new();
            // Code sets belong to the connection: the first request fixes
            // them (from its reference's profile) and announces them.
            // (A GIOP 1.0 request cannot negotiate, but on a connection
            // whose code sets are fixed it uses them too: the server reads
            // the connection's text that way, whatever the version.)
            let codesets = if let Some(fixed) = conn.codesets.get() {
                *fixed
            } else if version < GiopVersion::V1_1 {
                CodeSets::DEFAULT
            } else {
                let chosen = negotiate(&self.config.code_sets(), profile.code_sets().as_ref())
                    .map_err(|_| SystemException::codeset_incompatible(0, CompletionStatus::No))?;
                if conn.codesets.set(chosen).is_ok() {
                    contexts.push(ServiceContext::code_sets(chosen.to_context(), version));
                }
                // Another request may have fixed them first.
                *conn.codesets.get().unwrap_or(&chosen)
            };
            let announces_codesets = !contexts.is_empty();
            let header = MessageBody::Request(RequestHeader {
                request_id: id,
                response_flags: if request.response_expected {
                    SyncScope::WithTarget.response_flags()
                } else {
                    request.sync_scope.response_flags()
                },
                reserved: [0; 3],
                target: if version >= GiopVersion::V1_2 {
                    address.clone()
                } else {
                    TargetAddress::Key(profile.object_key.clone())
                },
                operation: request.operation.to_owned(),
                service_contexts: contexts,
                requesting_principal: Vec::new(),
            });
            let mut builder = MessageBuilder::new(version, ByteOrder::NATIVE, &header)
                .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
            builder.body().set_codesets(codesets);
            // Union default labels in the form the target's ORB reads.
            builder.body().set_default_label(
                usable
                    .default_label
                    .unwrap_or(self.config.union_default_label.into()),
            );
            (request.args)(builder.body())
                .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
            let bytes = builder.finish(false);
            if bytes.len() > self.config.max_message_size {
                // Never sent. Had it announced the connection's code sets,
                // the server would not know them: the connection goes.
                if announces_codesets {
                    self.connections.evict(&conn);
                }
                return Err(SystemException::marshal(
                    minor::MESSAGE_SIZE_EXCEEDED,
                    CompletionStatus::No,
                ));
            }
            // Oneways with SYNC_WITH_SERVER or _TARGET still get a reply.
            let wait = request.response_expected || request.sync_scope != SyncScope::None;
            // Back-pressure: past the connection's limit of requests
            // awaiting a reply, wait for one of them to end (reading the
            // connection meanwhile if nobody does), no longer than the
            // call's deadline.
            if wait
                && !conn.bind_within_limit(
                    id,
                    dispatcher,
                    deadline,
                    self.config.client_max_outstanding,
                )
            {
                return Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                ));
            }
            let outgoing = Outgoing {
                reply: wait.then_some(id),
                deadline,
            };
            if let Err(e) = conn.send(&bytes, outgoing) {
                // Not sent whole: the server cannot have run it.
                conn.unbind(id);
                self.connections.evict(&conn);
                return match e {
                    SendError::Failed => Ok(Err(Attempt::Retry)),
                    SendError::TimedOut => Err(SystemException::timeout(
                        minor::CALL_TIMEOUT,
                        CompletionStatus::No,
                    )),
                };
            }
            if !wait {
                return Ok(Err(Attempt::Done(None)));
            }
            return Ok(Ok(Sent {
                conn: Arc::clone(&conn),
                id,
                codesets,
            }));
        }
        Err(last_error.unwrap_or_else(|| {
            SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No)
        }))
    }

    /// What the outcome of a sent attempt means for the call: its reply,
    /// or why there is none (a request that a server closed the
    /// connection on before answering is retried).
    pub(crate) fn finish(
        &self,
        sent: &Sent,
        awaited: Awaited,
        response_expected: bool,
    ) -> Result<Attempt, SystemException> {
        let conn = &sent.conn;
        match awaited {
            Awaited::TimedOut { silent, sent } => Err(self.timed_out(conn, silent, sent)),
            // Nothing reached the server: sent again.
            Awaited::Closed(Closed::Orderly) | Awaited::Unsent => {
                self.connections.evict(conn);
                Ok(Attempt::Retry)
            }
            Awaited::ReplyTooLarge => {
                self.connections.evict(conn);
                Err(SystemException::marshal(
                    minor::MESSAGE_SIZE_EXCEEDED,
                    CompletionStatus::Yes,
                ))
            }
            Awaited::Closed(Closed::Broken) => {
                self.connections.evict(conn);
                Err(SystemException::comm_failure(
                    minor::CONNECTION_LOST,
                    CompletionStatus::Maybe,
                ))
            }
            Awaited::Closed(Closed::Refused) => {
                self.connections.evict(conn);
                Err(crate::transport::tls::refused())
            }
            Awaited::Reply(frame) => match self.reply(frame, sent.codesets)? {
                // A synchronised oneway only needed to know it arrived.
                Attempt::Done(_) if !response_expected => Ok(Attempt::Done(None)),
                other => Ok(other),
            },
        }
    }

    fn reply(
        &self,
        frame: armillary_giop::giop::Frame,
        codesets: CodeSets,
    ) -> Result<Attempt, SystemException> {
        let marshal = |e: &armillary_giop::cdr::CdrError| {
            SystemException::from_cdr_error(e, CompletionStatus::Maybe)
        };
        let msg = frame
            .message()
            .map_err(|_| SystemException::marshal(minor::MALFORMED, CompletionStatus::Maybe))?;
        let MessageBody::Reply(header) = &msg.body else {
            return Err(SystemException::marshal(
                minor::MALFORMED,
                CompletionStatus::Maybe,
            ));
        };
        let mut body: CdrReader<'_> = frame.reader(&msg).with_codesets(codesets);
        let outcome = match header.reply_status {
            ReplyStatus::NoException => ReplyOutcome::Normal,
            ReplyStatus::UserException => ReplyOutcome::UserException,
            ReplyStatus::SystemException => {
                return Err(SystemException::decode_body(&mut body).map_err(|e| marshal(&e))?)
            }
            ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm => {
                return Ok(Attempt::Forward(
                    Ior::decode(&mut body).map_err(|e| marshal(&e))?,
                ));
            }
            ReplyStatus::NeedsAddressingMode => {
                return Ok(Attempt::Readdress(
                    body.read_short().map_err(|e| marshal(&e))?,
                ));
            }
        };
        Ok(Attempt::Done(Some(ReplyMessage {
            body_offset: msg.body_offset,
            byte_order: msg.header.byte_order,
            version: msg.header.version,
            codesets,
            outcome,
            bytes: frame.bytes,
            fragment_starts: frame.fragment_starts,
        })))
    }
}

impl OrbCore {
    fn locate_once(
        &self,
        target: &Ior,
        deadline: Option<Instant>,
    ) -> Result<Option<Location>, SystemException> {
        let profile = target.iiop_profiles().into_iter().next().ok_or_else(|| {
            SystemException::inv_objref(minor::UNREGISTERED_OBJECT, CompletionStatus::No)
        })?;
        let version = profile.iiop_version.min(self.config.giop_version());
        let route = crate::transport::tls::routes(
            &profile,
            self.connections.has_tls(),
            self.config.tls.require,
        )?
        .into_iter()
        .next()
        .ok_or_else(|| SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No))?;
        let conn = self.connection(&route, deadline)?;
        let id = conn.next_request_id();
        let fields = MessageBody::LocateRequest {
            request_id: id,
            target: TargetAddress::Key(profile.object_key.clone()),
        };
        let bytes = MessageBuilder::new(version, ByteOrder::NATIVE, &fields)
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?
            .finish(false);
        let slot = Arc::new(SyncSlot::default());
        conn.bind(id, slot.dispatcher(), deadline);
        let outgoing = Outgoing {
            reply: Some(id),
            deadline,
        };
        if let Err(e) = conn.send(&bytes, outgoing) {
            conn.unbind(id);
            self.connections.evict(&conn);
            return match e {
                SendError::Failed => Ok(None),
                SendError::TimedOut => Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                )),
            };
        }
        let frame = match self.wait_reply(&conn, id, &slot, deadline) {
            Awaited::Reply(frame) => frame,
            Awaited::TimedOut { silent, sent } => return Err(self.timed_out(&conn, silent, sent)),
            Awaited::Closed(Closed::Orderly) | Awaited::Unsent => {
                self.connections.evict(&conn);
                return Ok(None);
            }
            Awaited::ReplyTooLarge => {
                self.connections.evict(&conn);
                return Err(SystemException::marshal(
                    minor::MESSAGE_SIZE_EXCEEDED,
                    CompletionStatus::Yes,
                ));
            }
            Awaited::Closed(Closed::Broken) => {
                self.connections.evict(&conn);
                return Err(SystemException::comm_failure(
                    minor::CONNECTION_LOST,
                    CompletionStatus::No,
                ));
            }
            Awaited::Closed(Closed::Refused) => {
                self.connections.evict(&conn);
                return Err(crate::transport::tls::refused());
            }
        };
        let malformed = || SystemException::marshal(minor::MALFORMED, CompletionStatus::No);
        let msg = frame.message().map_err(|_| malformed())?;
        let MessageBody::LocateReply(h) = msg.body else {
            return Err(malformed());
        };
        let mut body = frame.reader(&msg);
        Ok(Some(match h.locate_status {
            LocateStatus::ObjectHere => Location::Here,
            LocateStatus::UnknownObject => Location::Unknown,
            LocateStatus::ObjectForward | LocateStatus::ObjectForwardPerm => {
                let ior = Ior::decode(&mut body).map_err(|_| malformed())?;
                let me = self.me.upgrade().ok_or_else(malformed)?;
                Location::Forward(ObjectRef::new(ior, me))
            }
            LocateStatus::LocSystemException => {
                return Err(SystemException::decode_body(&mut body).map_err(|_| malformed())?)
            }
            LocateStatus::LocNeedsAddressingMode => {
                return Err(SystemException::no_implement(0, CompletionStatus::No))
            }
        }))
    }
}

impl OrbCore {
    /// The call timeout of `request` sent now: the reference's, the
    /// thread's or the ORB's (see [`crate::timeout`]).
    pub(crate) fn timeout_for(&self, request: &OutgoingRequest<'_>) -> Option<Duration> {
        request.effective_timeout(self.config.call_timeout)
    }

    /// When `request`, starting now, must end: the one place every way of
    /// sending a request (synchronous, oneway, deferred, and the
    /// asynchronous forms to come) takes its deadline from.
    pub(crate) fn deadline_for(&self, request: &OutgoingRequest<'_>) -> Option<Instant> {
        crate::timeout::deadline(self.timeout_for(request))
    }

    /// When a call starting now that is made through no particular
    /// reference (a LocateRequest) must end: the thread's or the ORB's
    /// timeout.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        crate::timeout::deadline(crate::timeout::effective(None, self.config.call_timeout))
    }
}

/// What one attempt at a request came to.
pub(crate) enum Attempt {
    Done(Option<ReplyMessage>),
    Forward(Ior),
    /// The server wants another addressing disposition.
    Readdress(i16),
    Retry,
}

/// A request sent on a connection, its reply awaited.
pub(crate) struct Sent {
    pub(crate) conn: Arc<ClientConnection>,
    pub(crate) id: u32,
    /// The connection's code sets, which the reply is read with.
    codesets: CodeSets,
}

/// Where a request goes next: its target (which forwards change), its
/// addressing disposition, and the forwards and retries spent so far.
pub(crate) struct Progress {
    pub(crate) target: Ior,
    pub(crate) addressing: i16,
    forwards: u32,
    retries: u32,
}

impl Progress {
    pub(crate) fn new(target: &Ior) -> Self {
        Progress {
            target: target.clone(),
            addressing: 0,
            forwards: 0,
            retries: 0,
        }
    }

    /// Takes in what an attempt came to: the reply (`Some`) when the call
    /// is done, `None` when it must be sent again (re-addressed, forwarded,
    /// or refused by an orderly close), an error when it cannot be.
    pub(crate) fn after(
        &mut self,
        attempt: Attempt,
        max_forwards: u32,
    ) -> Result<Option<Option<ReplyMessage>>, SystemException> {
        match attempt {
            Attempt::Readdress(wanted) => {
                if wanted == self.addressing || !(0..=2).contains(&wanted) {
                    return Err(SystemException::marshal(
                        minor::MALFORMED,
                        CompletionStatus::No,
                    ));
                }
                self.addressing = wanted;
            }
            Attempt::Done(reply) => return Ok(Some(reply)),
            Attempt::Forward(to) => {
                self.forwards += 1;
                if self.forwards > max_forwards {
                    return Err(SystemException::transient(
                        minor::FORWARD_LIMIT,
                        CompletionStatus::No,
                    ));
                }
                self.target = to;
            }
            Attempt::Retry => {
                self.retries += 1;
                if self.retries > 3 {
                    return Err(SystemException::transient(
                        minor::CONNECT_FAILED,
                        CompletionStatus::No,
                    ));
                }
            }
        }
        Ok(None)
    }
}

/// The server dispatches requests through the ORB's POAs.
impl OrbCore {
    /// The POA key a plain key (corbaloc) bound to a reference this ORB
    /// made maps to; `None` for other keys.
    fn mapped_key(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.key_table.read().get(key).and_then(|obj| {
            obj.ior()
                .iiop_profiles()
                .into_iter()
                .next()
                .map(|p| p.object_key)
        })
    }
}

impl ObjectAdapter for OrbCore {
    fn resolve(&self, key: &[u8], operation: &str) -> Resolution {
        let mapped = self.mapped_key(key);
        self.registry
            .resolve(mapped.as_deref().unwrap_or(key), operation)
    }

    fn describe_key(&self, key: &[u8]) -> Option<(Vec<String>, crate::poa::ObjectId)> {
        let mapped = self.mapped_key(key);
        self.registry.describe(mapped.as_deref().unwrap_or(key))
    }

    fn locate_key(&self, key: &[u8]) -> Located {
        if self.key_table.read().contains_key(key) {
            return Located::Here;
        }
        match self.registry.resolve(key, "_locate") {
            Resolution::Upcall(_) | Resolution::Held(_) => Located::Here,
            Resolution::Forward(to) => Located::Forward(to),
            Resolution::Failed(_) | Resolution::NotAPoaKey => Located::Unknown,
        }
    }

    fn decoding_scope(&self) -> Option<crate::object::DecodingScope> {
        let me: Arc<dyn Invoker> = self.me.upgrade()?;
        Some(crate::object::DecodingScope::enter(me))
    }

    fn server_failed(&self) {
        let _guard = self.shutdown_lock.lock();
        self.shutdown_signal.notify_all();
    }
}

impl Invoker for OrbCore {
    fn send_deferred(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let me = self.me.upgrade().ok_or_else(shut_down_error)?;
        Ok(RemoteDeferred::send(me, target, request, false))
    }

    fn send_asynchronous(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let me = self.me.upgrade().ok_or_else(shut_down_error)?;
        Ok(RemoteDeferred::send(me, target, request, true))
    }

    fn locate(&self, target: &Ior) -> Result<Location, SystemException> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        let deadline = self.deadline();
        // An orderly close before the answer: ask again on a new connection.
        for _ in 0..3 {
            if let Some(location) = self.locate_once(target, deadline)? {
                return Ok(location);
            }
        }
        Err(SystemException::transient(
            minor::CONNECT_FAILED,
            CompletionStatus::No,
        ))
    }

    fn invoke(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        let deadline = self.deadline_for(request);
        let mut progress = Progress::new(target);
        loop {
            // A shutdown while an attempt was under way closed its
            // connection: no new one is opened for the retry.
            if self.shut_down.load(Ordering::SeqCst) {
                return Err(shut_down_error());
            }
            // Every attempt so far ended before the server ran the request
            // (re-addressed, forwarded, or refused by an orderly close).
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                ));
            }
            let attempt =
                self.invoke_once(&progress.target, request, progress.addressing, deadline)?;
            if let Some(reply) = progress.after(attempt, self.config.max_forwards)? {
                return Ok(reply);
            }
        }
    }
}
