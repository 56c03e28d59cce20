//! ORB initializers: how an application registers its interceptors and
//! allocates PICurrent slots while an ORB starts
//! (`PortableInterceptor::ORBInitializer`, `ORBInitInfo`).

use std::sync::Arc;

use super::{
    ClientRequestInterceptor, Interceptors, IorInterceptor, ServerRequestInterceptor, SlotId,
};
use crate::config::OrbConfig;

/// Called while an ORB starts, in the order the initializers were given
/// to the configuration: every initializer's `pre_init`, then every
/// one's `post_init`. Both may register interceptors and allocate slots.
pub trait OrbInitializer: Send + Sync + 'static {
    /// Called first.
    fn pre_init(&self, info: &mut OrbInitInfo) {
        let _ = info;
    }

    /// Called after every initializer's `pre_init`.
    fn post_init(&self, info: &mut OrbInitInfo) {
        let _ = info;
    }
}

/// What an [`OrbInitializer`] registers with the ORB it initializes.
#[derive(Default)]
pub struct OrbInitInfo {
    client: Vec<Arc<dyn ClientRequestInterceptor>>,
    server: Vec<Arc<dyn ServerRequestInterceptor>>,
    ior: Vec<Arc<dyn IorInterceptor>>,
    slots: u32,
}

impl std::fmt::Debug for OrbInitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrbInitInfo")
            .field("client", &self.client.len())
            .field("server", &self.server.len())
            .field("ior", &self.ior.len())
            .field("slots", &self.slots)
            .finish()
    }
}

impl OrbInitInfo {
    /// Adds a client request interceptor; they run in the order added
    /// (ending points in the reverse order).
    pub fn add_client_request_interceptor(
        &mut self,
        interceptor: Arc<dyn ClientRequestInterceptor>,
    ) {
        self.client.push(interceptor);
    }

    /// Adds a server request interceptor; they run in the order added
    /// (ending points in the reverse order).
    pub fn add_server_request_interceptor(
        &mut self,
        interceptor: Arc<dyn ServerRequestInterceptor>,
    ) {
        self.server.push(interceptor);
    }

    /// Adds an IOR interceptor.
    pub fn add_ior_interceptor(&mut self, interceptor: Arc<dyn IorInterceptor>) {
        self.ior.push(interceptor);
    }

    /// Allocates a new [`PiCurrent`](super::PiCurrent) slot.
    pub fn allocate_slot_id(&mut self) -> SlotId {
        let id = SlotId(self.slots);
        self.slots += 1;
        id
    }
}

impl OrbConfig {
    /// Adds an ORB initializer (`ORBInitializer`): it registers the ORB's
    /// portable interceptors and allocates its PICurrent slots while the
    /// ORB starts (see [`crate::interceptors`]). Initializers run in the
    /// order added.
    pub fn orb_initializer(mut self, initializer: Arc<dyn OrbInitializer>) -> Self {
        self.orb_initializers.0.push(Arc::new(initializer));
        self
    }
}

/// Runs `config`'s initializers: the interceptors the ORB starts with.
pub(crate) fn initialize(config: &OrbConfig) -> Interceptors {
    let initializers: Vec<&Arc<dyn OrbInitializer>> = config
        .orb_initializers
        .0
        .iter()
        .filter_map(|i| i.downcast_ref::<Arc<dyn OrbInitializer>>())
        .collect();
    if initializers.is_empty() {
        return Interceptors::none();
    }
    let mut info = OrbInitInfo::default();
    for initializer in &initializers {
        initializer.pre_init(&mut info);
    }
    for initializer in &initializers {
        initializer.post_init(&mut info);
    }
    Interceptors::new(info.client, info.server, info.ior, info.slots as usize)
}
