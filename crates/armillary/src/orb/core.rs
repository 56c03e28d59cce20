//! `OrbCore`: what one ORB holds, and its lifecycle. The application's
//! [`Orb`](super::Orb) values hold it through one handle whose drop shuts
//! it down; references and the server's threads hold it (or a `Weak` of
//! it) directly, so they cannot keep the ORB running. The client
//! invocation engine that works on it is `crate::invocation`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use armillary_giop::ior::{Ior, ProfileBody, TaggedComponent, ORB_TYPE_ARMILLARY};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::GiopVersion;
use parking_lot::{Condvar, Mutex, RwLock};

use crate::completion::WaitForCompletion;
use crate::config::OrbConfig;
use crate::object::{Invoker, ObjectRef};
use crate::poa::{Poa, PoaRegistry, ReferenceFactory};
use crate::transport::client::ClientConnection;
use crate::transport::connection_cache::ConnectionCache;
use crate::transport::server::{ObjectAdapter, Server};

use crate::error::OrbError;

pub(crate) struct OrbCore {
    pub(crate) config: OrbConfig,
    pub(crate) registry: Arc<PoaRegistry>,
    pub(crate) root: Poa,
    pub(crate) connections: ConnectionCache,
    /// The IIOP profiles of the references called, decoded once.
    pub(crate) profiles: crate::transport::profiles::ProfileCache,
    /// How a caller waits for its reply (from the configuration).
    pub(crate) wait: Box<dyn crate::transport::wait::Waiter>,
    pub(crate) server: Mutex<Option<Arc<Server>>>,
    /// Plain object keys bound by the application (`corbaloc` targets).
    pub(crate) key_table: RwLock<crate::fast_map::FastMap<Vec<u8>, ObjectRef>>,
    pub(crate) initial: RwLock<HashMap<String, ObjectRef>>,
    /// Requests sent with `send_multiple_requests`, until collected.
    pub(crate) deferred: crate::dii::DeferredRequests,
    /// Connections an ORB thread reads for AMI futures and callbacks
    /// (closed at shutdown, which ends those threads).
    pub(crate) readers: Mutex<Vec<Weak<ClientConnection>>>,
    /// AMI callbacks waiting for an application thread
    /// ([`ConcurrencyModel::ApplicationThreads`]).
    pub(crate) callbacks: crate::ami::CallbackQueue,
    /// The portable interceptors and PICurrent slots the configuration's
    /// initializers registered (none: every hook is one branch).
    pub(crate) interceptors: Arc<crate::interceptors::Interceptors>,
    /// Where the server counts its upcalls, with `-ORBMetricsEndpoint`.
    pub(crate) request_metrics: Option<Arc<crate::metrics::RequestMetrics>>,
    /// The metrics endpoint, while it runs (stopped at shutdown).
    pub(crate) metrics_endpoint: Mutex<Option<crate::metrics::endpoint::MetricsEndpoint>>,
    pub(crate) shut_down: AtomicBool,
    pub(crate) shutdown_lock: Mutex<()>,
    pub(crate) shutdown_signal: Condvar,
    pub(crate) me: Weak<OrbCore>,
    /// The decoding scope of this ORB's messages, made once: a request's
    /// arguments and a reply's results are read inside it
    /// ([`DecodingScope::enter_token`](crate::object::DecodingScope::enter_token)).
    pub(crate) scope: crate::object::ScopeToken,
}

pub(super) struct CoreFactory(pub(super) Weak<OrbCore>);

impl ReferenceFactory for CoreFactory {
    fn make_reference(&self, type_id: &str, object_key: Vec<u8>, _persistent: bool) -> ObjectRef {
        match self.0.upgrade() {
            Some(core) => core.make_reference(type_id, object_key),
            None => ObjectRef::nil(),
        }
    }

    /// The key of the reference's first IIOP profile, when that profile
    /// names an address this ORB's server publishes (a persistent POA's
    /// key says only the POA's path, which another server may share).
    fn object_key(&self, reference: &ObjectRef) -> Option<Vec<u8>> {
        let core = self.0.upgrade()?;
        let server = core.server.lock();
        let server = server.as_ref()?;
        let (published, published_tls) = (server.published(), server.published_tls());
        let profile = reference.ior().iiop_profiles().into_iter().next()?;
        let address = (profile.host.clone(), profile.port);
        // A server with TLS endpoints only publishes port 0 in the profile
        // (see `make_reference`).
        let ours = published.contains(&address)
            || (profile.port == 0 && published_tls.iter().any(|(h, _)| *h == profile.host));
        ours.then_some(profile.object_key)
    }
}

pub(crate) fn shut_down_error() -> SystemException {
    SystemException::bad_inv_order(minor::ORB_SHUT_DOWN, CompletionStatus::No)
}

pub(crate) fn reactor_failed() -> SystemException {
    SystemException::internal(minor::REACTOR_FAILED, CompletionStatus::No)
}
impl OrbCore {
    /// Shuts down (idempotent): no new server, no more default-invoker
    /// binding, the server stopped, client connections closed, and every
    /// `run` told.
    pub(crate) fn stop(&self, wait: WaitForCompletion) {
        self.shut_down.store(true, Ordering::SeqCst);
        let me: Weak<dyn Invoker> = self.me.clone();
        crate::object::unregister_default_invoker(&me);
        self.unregister_local();
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
        let endpoint = self.metrics_endpoint.lock().take();
        if let Some(mut endpoint) = endpoint {
            endpoint.stop();
        }
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
    pub(crate) fn release(&self) {
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
    pub(crate) fn in_own_upcall(&self) -> bool {
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
        let server = Server::start(&self.config, adapter, self.request_metrics.clone())?;
        *slot = Some(server.clone());
        drop(slot);
        self.register_local(&server);
        // Threads in `run` wait for a server to drive.
        let _guard = self.shutdown_lock.lock();
        self.shutdown_signal.notify_all();
        Ok(server)
    }

    pub(crate) fn make_reference(self: &Arc<Self>, type_id: &str, key: Vec<u8>) -> ObjectRef {
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
                if !self.interceptors.ior.is_empty() {
                    body.components.extend(crate::interceptors::ior_components(
                        &self.interceptors,
                        type_id,
                    ));
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

    /// Starts the metrics endpoint, when the configuration asks for one:
    /// the server's counters (read from `core` at each scrape) and its
    /// request metrics.
    pub(crate) fn start_metrics_endpoint(core: &Arc<OrbCore>) -> Result<(), OrbError> {
        let (Some(endpoint), Some(metrics)) =
            (&core.config.metrics_endpoint, &core.request_metrics)
        else {
            return Ok(());
        };
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        let weak = core.me.clone();
        registry.register_collector(Box::new(crate::metrics::endpoint::ServerStatsCollector(
            move || weak.upgrade()?.running_server().map(|s| s.stats()),
        )));
        let started = crate::metrics::endpoint::MetricsEndpoint::start(endpoint, registry)
            .map_err(|source| OrbError::Listen {
                endpoint: format!("metrics {}:{}", endpoint.host(), endpoint.port()),
                source,
            })?;
        *core.metrics_endpoint.lock() = Some(started);
        Ok(())
    }

    /// The server, if it has started (without starting it).
    pub(crate) fn running_server(&self) -> Option<Arc<Server>> {
        self.server.lock().clone()
    }
}

/// The server dispatches requests through the ORB's POAs.
impl OrbCore {
    /// The POA key a plain key (corbaloc) bound to a reference this ORB
    /// made maps to; `None` for other keys.
    pub(crate) fn mapped_key(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.key_table.read().get(key).and_then(|obj| {
            obj.ior()
                .iiop_profiles()
                .into_iter()
                .next()
                .map(|p| p.object_key)
        })
    }
}
