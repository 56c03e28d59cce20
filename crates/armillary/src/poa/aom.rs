//! The active object map: object id ↔ servant for a RETAIN POA, kept in a
//! slot table so that object keys can carry the slot and find it in O(1).

use std::collections::HashMap;
use std::sync::Arc;

use super::object_activity::ObjectActivity;
use super::ObjectId;
use crate::servant::Servant;
use crate::slots::{SlotRef, SlotTable};

/// One active object.
#[derive(Clone)]
pub(crate) struct Entry {
    pub object_id: ObjectId,
    pub servant: Arc<dyn Servant>,
    /// Its requests in progress, and whether it is being deactivated (then
    /// it stays here, for no new request, until they have finished).
    pub activity: Arc<ObjectActivity>,
}

impl Entry {
    /// True unless the object is being deactivated.
    pub fn is_active(&self) -> bool {
        !self.activity.is_deactivating()
    }
}

/// Identity of a servant: the address of its data.
pub(crate) fn servant_identity(servant: &Arc<dyn Servant>) -> usize {
    Arc::as_ptr(servant) as *const () as usize
}

#[derive(Default)]
pub(crate) struct ActiveObjectMap {
    slots: SlotTable<Entry>,
    by_id: crate::fast_map::FastMap<ObjectId, SlotRef>,
    by_servant: HashMap<usize, Vec<SlotRef>>,
}

impl ActiveObjectMap {
    pub fn insert(&mut self, object_id: ObjectId, servant: Arc<dyn Servant>) -> SlotRef {
        let identity = servant_identity(&servant);
        let slot = self.slots.insert(Entry {
            object_id: object_id.clone(),
            servant,
            activity: ObjectActivity::new(object_id.clone()),
        });
        self.by_id.insert(object_id, slot);
        self.by_servant.entry(identity).or_default().push(slot);
        slot
    }

    pub fn remove(&mut self, object_id: &[u8]) -> Option<Entry> {
        let slot = self.by_id.remove(object_id)?;
        let entry = self.slots.remove(slot)?;
        let identity = servant_identity(&entry.servant);
        if let Some(slots) = self.by_servant.get_mut(&identity) {
            slots.retain(|s| *s != slot);
            if slots.is_empty() {
                self.by_servant.remove(&identity);
            }
        }
        Some(entry)
    }

    /// O(1) lookup by the slot a key carries, checked against the id; an
    /// object being deactivated is found too.
    pub fn get_by_slot(&self, slot: SlotRef, object_id: &[u8]) -> Option<&Entry> {
        self.slots
            .get(slot)
            .filter(|entry| entry.object_id == object_id)
    }

    /// The entry of `object_id`, even while it is being deactivated.
    pub fn get(&self, object_id: &[u8]) -> Option<(SlotRef, &Entry)> {
        let slot = *self.by_id.get(object_id)?;
        self.slots.get(slot).map(|entry| (slot, entry))
    }

    /// The entry of `object_id` unless it is being deactivated: what the
    /// POA's lookups (`id_to_servant`, `id_to_reference`, …) see.
    pub fn get_active(&self, object_id: &[u8]) -> Option<&Entry> {
        self.get(object_id)
            .map(|(_, entry)| entry)
            .filter(|entry| entry.is_active())
    }

    /// The ids `servant` serves, objects being deactivated left out.
    pub fn ids_of(&self, servant: &Arc<dyn Servant>) -> Vec<ObjectId> {
        self.by_servant
            .get(&servant_identity(servant))
            .map(|slots| {
                slots
                    .iter()
                    .filter_map(|s| self.slots.get(*s))
                    .filter(|e| e.is_active())
                    .map(|e| e.object_id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True while `servant` serves an object here, one being deactivated
    /// included.
    pub fn has_servant(&self, servant: &Arc<dyn Servant>) -> bool {
        self.by_servant.contains_key(&servant_identity(servant))
    }

    pub fn drain(&mut self) -> Vec<Entry> {
        self.by_id.clear();
        self.by_servant.clear();
        self.slots.drain()
    }

    /// The objects here, those being deactivated included.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}
