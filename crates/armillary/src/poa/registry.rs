//! The ORB's table of POAs: every POA numbered in a slot table, so that
//! an object key, which carries its POA's slot, leads to it in O(1), and
//! by name, for persistent keys and `find_POA`.

// The POA's parts, split out of `poa/mod.rs`, with the rest of it in
// scope (its private items included).
use super::*;

/// The ORB-wide table of POAs.
pub(crate) struct PoaRegistry {
    pub(super) orb_token: u64,
    pub(super) factory: Arc<dyn ReferenceFactory>,
    table: RwLock<PoaTable>,
    pub(super) hold_limit: usize,
}

impl std::fmt::Debug for PoaRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoaRegistry")
            .field("orb_token", &self.orb_token)
            .field("hold_limit", &self.hold_limit)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct PoaTable {
    slots: SlotTable<Poa>,
    by_path: crate::fast_map::FastMap<Vec<String>, SlotRef>,
}

impl PoaRegistry {
    /// A registry with its root POA. `orb_token` must differ between runs
    /// of the server (transient keys from an earlier run are refused).
    pub(crate) fn new(
        orb_token: u64,
        factory: Arc<dyn ReferenceFactory>,
        hold_limit: usize,
    ) -> (Arc<PoaRegistry>, Poa) {
        let registry = Arc::new(PoaRegistry {
            orb_token,
            factory,
            table: RwLock::new(PoaTable::default()),
            hold_limit,
        });
        let root = registry.register(
            "RootPOA".to_owned(),
            Vec::new(),
            None,
            Policies::root(),
            PoaManager::new("RootPOAManager", Arc::downgrade(&registry), hold_limit),
        );
        (registry, root)
    }

    pub(super) fn register(
        self: &Arc<Self>,
        name: String,
        path: Vec<String>,
        parent: Option<Weak<PoaInner>>,
        policies: Policies,
        manager: PoaManager,
    ) -> Poa {
        let single = matches!(
            policies.thread,
            ThreadPolicy::SingleThread | ThreadPolicy::MainThread
        );
        let poa = Poa {
            inner: Arc::new(PoaInner {
                name,
                path: path.clone(),
                parent,
                policies,
                manager,
                registry: self.clone(),
                slot: RwLock::new(SlotRef::NONE),
                state: RwLock::new(PoaState::default()),
                single_thread: single.then(Arc::default),
                incarnating: Mutex::new(HashSet::new()),
                incarnated: Condvar::new(),
                next_id: AtomicU64::new(1),
                requests: RequestCount::default(),
                destroyed: AtomicBool::new(false),
            }),
        };
        poa.inner.manager.attach(&poa);
        let mut table = self.table.write();
        let slot = table.slots.insert(poa.clone());
        *poa.inner.slot.write() = slot;
        table.by_path.insert(path, slot);
        poa
    }

    pub(super) fn unregister(&self, poa: &Poa) {
        let slot = *poa.inner.slot.read();
        let mut table = self.table.write();
        table.slots.remove(slot);
        table.by_path.remove(&poa.inner.path);
    }

    pub(super) fn poa_at(&self, slot: SlotRef) -> Option<Poa> {
        self.table.read().slots.get(slot).cloned()
    }

    pub(super) fn poa_by_path(&self, path: &[String]) -> Option<Poa> {
        let table = self.table.read();
        let slot = *table.by_path.get(path)?;
        table.slots.get(slot).cloned()
    }

    /// The root POA.
    pub(super) fn root(&self) -> Option<Poa> {
        self.poa_by_path(&[])
    }

    pub(super) fn find_poa_for(&self, key: &ObjectKey) -> Option<Poa> {
        match &key.poa {
            PoaName::Transient { orb_token } => {
                if *orb_token != self.orb_token {
                    return None;
                }
                let poa = self.poa_at(key.poa_slot)?;
                (poa.inner.policies.lifespan == LifespanPolicy::Transient).then_some(poa)
            }
            PoaName::Persistent { path } => {
                if let Some(poa) = self.poa_at(key.poa_slot) {
                    if &poa.inner.path == path {
                        return Some(poa);
                    }
                }
                if let Some(poa) = self.poa_by_path(path) {
                    return Some(poa);
                }
                // Walk down from the root, letting adapter activators
                // recreate missing POAs.
                let mut poa = self.root()?;
                for name in path {
                    poa = poa.find_or_activate_poa(name).ok()?;
                }
                Some(poa)
            }
        }
    }
}
