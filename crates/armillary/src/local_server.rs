//! The seam between a reference and an object served in this process.
//!
//! Every ORB of the process that serves registers the endpoints its IORs
//! publish in one process-wide table ([`register`]); a reference whose
//! IIOP profile names one of them is *collocated*, however it was made
//! (an IOR string, `string_to_object`, a skeleton's `activate`, decoded
//! from a reply or an `any`). What a reference found is kept with it
//! ([`LocalBinding`]): the serving ORB, as a [`LocalServer`] (implemented
//! by the ORB core, `crate::collocation`, so that this layer does not
//! depend on it), and the object key. A lookup that found nothing is not
//! made again until an ORB starts or stops serving.
//!
//! A call on a collocated reference goes to [`LocalServer::call`] with its
//! [`LocalBody`]: the stub's argument encoder (`Marshalled`: DII, DSI
//! and asynchronous servants, untyped calls), or a [`TypedCall`], the
//! generated stub's call as a Rust closure on the servant's interface
//! trait, run with no CDR at all when the servant offers that interface
//! ([`Servant::local_interface`](crate::Servant::local_interface)).

use std::any::{Any, TypeId};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use armillary_giop::giop::ServiceContext;
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{CompletionStatus, SystemException};
use parking_lot::RwLock;

use crate::config::Collocation;
use crate::object::{DecodingScope, Invoker, ObjectRef, OutgoingRequest, ReplyMessage, ScopeToken};
use crate::object_id::ObjectId;
use crate::pending::PendingReply;
use crate::poa::KeptSlot;
use crate::servant::{contain, Servant};

/// An ORB of this process that serves, as collocated calls see it.
pub(crate) trait LocalServer: Send + Sync {
    /// Carries out one attempt at `request` on the object `key` names, in
    /// this process, as `strategy` says (never `Collocation::None`), to
    /// end by `deadline` (the calling ORB's reckoning of its timeout).
    fn call(
        self: Arc<Self>,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        strategy: Collocation,
        body: LocalBody<'_>,
        contexts: Option<&mut CallContexts>,
    ) -> LocalAttempt;

    /// Whether this ORB has server request interceptors: its collocated
    /// calls then carry encoded arguments, so that they see them as a
    /// remote request's.
    fn intercepts(&self) -> bool;

    /// Sends the two-way `request` in this process for a reply collected
    /// later (DII deferred, AMI pollers, futures and callbacks): the
    /// pending reply, or `None` when the object is not served here after
    /// all (the caller sends it over IIOP then). An AMI callback's
    /// delivery goes to `caller` (the calling reference's ORB).
    fn send(
        &self,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        strategy: Collocation,
        caller: &Arc<dyn Invoker>,
    ) -> Option<PendingReply>;

    /// How many LOCATION_FORWARDs one call follows (`-ORBMaxForwards`).
    fn max_forwards(&self) -> u32;
}

/// What one collocated attempt came to.
pub(crate) enum LocalAttempt {
    /// The object is not served here after all (its ORB is shutting down,
    /// the key is not one of its objects'): the call goes over IIOP.
    NotHere,
    /// Done: the reply of a marshalled two-way call, `None` for a oneway
    /// or a typed call (whose outcome its [`TypedCall`] holds).
    Done(Option<ReplyMessage>),
    /// LOCATION_FORWARD: the call goes on to this reference.
    Forward(ObjectRef),
    /// The call ended in a system exception.
    Failed(SystemException),
}

/// The service contexts of a collocated call whose client interceptors
/// run: those its request carries (what `send_request` added), and
/// those its reply brought back.
#[derive(Debug, Default)]
pub(crate) struct CallContexts {
    pub(crate) request: Vec<ServiceContext>,
    pub(crate) reply: Vec<ServiceContext>,
}

/// How a collocated call carries its arguments.
pub(crate) enum LocalBody<'a> {
    /// Encoded with the request's `args`, decoded by the servant's
    /// skeleton; the reply comes back encoded.
    Marshalled,
    /// A generated stub's call on the servant's interface trait.
    Typed(&'a mut dyn TypedCall),
}

impl LocalBody<'_> {
    /// The same body, for one more attempt (after a forward).
    pub(crate) fn reborrow(&mut self) -> LocalBody<'_> {
        match self {
            LocalBody::Marshalled => LocalBody::Marshalled,
            LocalBody::Typed(call) => LocalBody::Typed(&mut **call),
        }
    }
}

/// A generated stub's call on a servant's interface trait, type-erased
/// (see `ObjectRef::invoke_typed`). Its outcome stays in it for the stub.
pub(crate) trait TypedCall {
    /// The `TypeId` of `Arc<dyn XServant>` the call needs
    /// ([`Servant::local_interface`](crate::Servant::local_interface)).
    fn interface(&self) -> TypeId;

    /// Runs the call on the servant's view `view` (what
    /// `local_interface(self.interface())` returned), on this thread.
    fn run(&mut self, view: &dyn Any);

    /// The call as a `'static` job that another thread runs on the
    /// servant's view (a call bounded by its timeout, or one the POA's
    /// concurrency model hands to its threads); its outcome comes back
    /// into this call when the job has run. `None` once taken.
    fn detach(&mut self) -> Option<DetachedCall>;
}

/// A typed call detached from its caller to run on another thread, on
/// the servant's view (see [`TypedCall::detach`]).
pub(crate) type DetachedCall = Box<dyn FnOnce(&dyn Any) + Send>;

/// The endpoints one serving ORB registered.
struct Registered {
    endpoints: Vec<(String, u16)>,
    server: Weak<dyn LocalServer>,
    /// True until it unregisters (read without touching `server`).
    serving: Arc<AtomicBool>,
    /// The scope a typed call to its objects runs its servant in.
    scope: ScopeToken,
}

/// Every serving ORB of the process (see the module docs).
static SERVERS: RwLock<Vec<Registered>> = RwLock::new(Vec::new());

/// Changes whenever an ORB registers or unregisters: a lookup that found
/// nothing at one generation is good until the next.
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The names of this host's loopback interface: an endpoint published
/// under one is reached under any.
const LOOPBACK: [&str; 3] = ["127.0.0.1", "localhost", "::1"];

fn same_host(published: &str, named: &str) -> bool {
    published.eq_ignore_ascii_case(named)
        || (LOOPBACK.contains(&published) && LOOPBACK.contains(&named))
}

/// Makes `server` the ORB that serves `endpoints` (host, port pairs its
/// IORs publish) in this process, until [`unregister`]ed; `scope` is
/// its decoding scope, which a typed collocated call runs its servant
/// in, so that a reference the servant decodes itself (from a store,
/// say) binds to the ORB serving it, not to whichever ORB started last.
pub(crate) fn register(
    endpoints: Vec<(String, u16)>,
    server: Weak<dyn LocalServer>,
    scope: ScopeToken,
) {
    let mut servers = SERVERS.write();
    servers.retain(|r| r.server.strong_count() > 0);
    servers.push(Registered {
        endpoints,
        server,
        serving: Arc::new(AtomicBool::new(true)),
        scope,
    });
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// Removes `server`'s registration: references to its objects are no
/// longer found collocated (those that found it already see it gone).
pub(crate) fn unregister(server: &Weak<dyn LocalServer>) {
    let mut servers = SERVERS.write();
    servers.retain(|r| {
        let leaving = Weak::ptr_eq(&r.server, server);
        if leaving {
            r.serving.store(false, Ordering::SeqCst);
        }
        r.server.strong_count() > 0 && !leaving
    });
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// The ORB of this process serving the first IIOP profile of `ior` that
/// names one, with that profile's object key.
fn lookup(ior: &Ior) -> Option<LocalTarget> {
    let profiles = ior.iiop_profiles();
    if profiles.is_empty() {
        return None;
    }
    let servers = SERVERS.read();
    profiles.into_iter().find_map(|profile| {
        servers.iter().find_map(|registered| {
            let serves = registered
                .endpoints
                .iter()
                .any(|(host, port)| *port == profile.port && same_host(host, &profile.host));
            serves.then(|| LocalTarget {
                server: registered.server.clone(),
                serving: registered.serving.clone(),
                scope: registered.scope.clone(),
                key: profile.object_key.clone(),
                kept: KeptSlot::default(),
                direct: OnceLock::new(),
                direct_view: OnceLock::new(),
            })
        })
    })
}

/// An object of this process a reference reaches: its ORB and its key.
pub(crate) struct LocalTarget {
    server: Weak<dyn LocalServer>,
    /// Its ORB's registration, true while it serves.
    serving: Arc<AtomicBool>,
    /// Its ORB's decoding scope (see [`register`]).
    scope: ScopeToken,
    key: Vec<u8>,
    /// The object the `thru-poa` strategy found in its POA's active object
    /// map, for later calls to skip the lookup (`poa::KeptTarget`).
    kept: KeptSlot,
    /// The servant the `direct` strategy calls, and its object id, once
    /// found in the active object map (see `collocation::direct`).
    direct: OnceLock<(Arc<dyn Servant>, ObjectId)>,
    /// That servant as the Rust interface a typed stub calls: the
    /// `TypeId` of `Arc<dyn XServant>` and that `Arc`, once asked for.
    direct_view: OnceLock<(TypeId, Box<dyn Any + Send + Sync>)>,
}

impl std::fmt::Debug for LocalTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTarget")
            .field("key", &self.key)
            .field("serving", &self.serving.load(Ordering::Relaxed))
            .field("direct", &self.direct.get().is_some())
            .finish_non_exhaustive()
    }
}

impl LocalTarget {
    /// The object key.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// The serving ORB, while it is there.
    pub(crate) fn server(&self) -> Option<Arc<dyn LocalServer>> {
        self.server.upgrade()
    }

    /// Where the `thru-poa` strategy keeps the object it found.
    pub(crate) fn kept(&self) -> &KeptSlot {
        &self.kept
    }

    /// A typed two-way call of the `thru-poa` strategy to the object kept
    /// (`poa::KeptTarget`: found in its POA's active object map by an
    /// earlier call, in a POA that runs requests on the thread that reads
    /// them, of an ORB with no server interceptors), on the calling
    /// thread, as `collocation::thru_poa` would make it, without a lookup
    /// or a lock. The caller has checked that the call has no timeout and
    /// its ORB no client interceptors. `None`, with nothing done, when the
    /// call must go the whole way (nothing kept, or the object, its POA or
    /// its manager not taking requests now: that way answers it).
    pub(crate) fn call_kept(
        &self,
        call: &mut dyn TypedCall,
    ) -> Option<Result<(), SystemException>> {
        // Its ORB serving and still there (a load, not an upgrade: the
        // call needs nothing of the ORB but its decoding scope).
        if !self.serving.load(Ordering::Acquire) || self.server.strong_count() == 0 {
            return None;
        }
        // After the oneways this thread posted, as on a connection.
        crate::thread_role::wait_for_posted_oneways();
        let _scope = DecodingScope::enter_token(&self.scope);
        let interface = call.interface();
        let ran = self.kept.run(|servant| {
            contain(CompletionStatus::Maybe, || {
                Ok::<bool, SystemException>(match servant.local_interface(interface) {
                    Some(view) => {
                        call.run(view);
                        true
                    }
                    None => false,
                })
            })
        })?;
        match ran {
            Ok(true) => Some(Ok(())),
            Err(e) => Some(Err(e)),
            // Not a servant of the interface this stub calls (it did not
            // run): the whole way, encoded.
            Ok(false) => None,
        }
    }

    /// The servant the `direct` strategy keeps, and its object id, while
    /// its ORB serves.
    pub(crate) fn direct(&self) -> Option<&(Arc<dyn Servant>, ObjectId)> {
        if !self.serving.load(Ordering::Acquire) {
            return None;
        }
        self.direct.get()
    }

    /// The servant the `direct` strategy keeps, as the interface trait
    /// `S` (`dyn XServant`), while its ORB serves: kept the first time it
    /// is asked for, so that a plain call costs no more lookups.
    pub(crate) fn direct_view<S: ?Sized + Send + Sync + 'static>(&self) -> Option<&Arc<S>> {
        let wanted = TypeId::of::<Arc<S>>();
        if let Some((kept, view)) = self.direct_view.get() {
            if *kept == wanted && self.serving.load(Ordering::Acquire) {
                return view.downcast_ref::<Arc<S>>();
            }
        }
        let (servant, _) = self.direct()?;
        let view = servant.local_interface(wanted)?.downcast_ref::<Arc<S>>()?;
        let (kept, kept_view) = self
            .direct_view
            .get_or_init(|| (wanted, Box::new(view.clone())));
        match *kept == wanted {
            true => kept_view.downcast_ref::<Arc<S>>(),
            // Asked for as another interface first: no shortcut for this one.
            false => Some(view),
        }
    }

    /// Keeps `servant` (the object `object_id`) for the `direct` strategy
    /// (the first one kept stays).
    pub(crate) fn set_direct(&self, servant: Arc<dyn Servant>, object_id: ObjectId) {
        let _ = self.direct.set((servant, object_id));
    }
}

/// What a reference keeps of its lookups in the table (see the module
/// docs). A reference holds it as this trait object: its hash and
/// equality read only its IOR, and its type shows no interior
/// mutability to those who key maps with it (Clippy's
/// `mutable_key_type`).
pub(crate) trait LocalCache: Send + Sync + std::fmt::Debug {
    /// The object of this process `ior` names, if any.
    fn target(&self, ior: &Ior) -> Option<&LocalTarget>;
}

/// A new, empty cache.
pub(crate) fn cache() -> Arc<dyn LocalCache> {
    Arc::new(LocalBinding::default())
}

/// What a reference found out about being collocated (see the module
/// docs); shared by the references made from it with
/// `with_call_timeout` / `with_collocation`.
#[derive(Debug, Default)]
struct LocalBinding {
    found: OnceLock<LocalTarget>,
    /// The generation at which a lookup found nothing (0: never looked).
    missed_at: AtomicU64,
}

impl LocalCache for LocalBinding {
    /// The object of this process `ior` names, if any (see the module
    /// docs for when the table is read again).
    fn target(&self, ior: &Ior) -> Option<&LocalTarget> {
        if let Some(found) = self.found.get() {
            return Some(found);
        }
        let generation = GENERATION.load(Ordering::SeqCst);
        if self.missed_at.load(Ordering::Relaxed) == generation {
            return None;
        }
        match lookup(ior) {
            Some(found) => Some(self.found.get_or_init(|| found)),
            None => {
                self.missed_at.store(generation, Ordering::Relaxed);
                None
            }
        }
    }
}
