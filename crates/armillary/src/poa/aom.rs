//! The active object map: object id ↔ servant for a RETAIN POA, in slots
//! with generation counters so that object keys can carry the slot index.

use std::collections::HashMap;
use std::sync::Arc;

use super::key::SlotRef;
use crate::servant::Servant;

/// One active object.
#[derive(Clone)]
pub(crate) struct Entry {
    pub object_id: Vec<u8>,
    pub servant: Arc<dyn Servant>,
}

struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

/// Identity of a servant: the address of its data.
pub(crate) fn servant_identity(servant: &Arc<dyn Servant>) -> usize {
    Arc::as_ptr(servant) as *const () as usize
}

#[derive(Default)]
pub(crate) struct ActiveObjectMap {
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_id: HashMap<Vec<u8>, u32>,
    by_servant: HashMap<usize, Vec<u32>>,
}

impl ActiveObjectMap {
    pub fn insert(&mut self, object_id: Vec<u8>, servant: Arc<dyn Servant>) -> SlotRef {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    entry: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        self.by_id.insert(object_id.clone(), index);
        self.by_servant
            .entry(servant_identity(&servant))
            .or_default()
            .push(index);
        slot.entry = Some(Entry { object_id, servant });
        SlotRef {
            index,
            generation: slot.generation,
        }
    }

    pub fn remove(&mut self, object_id: &[u8]) -> Option<Entry> {
        let index = self.by_id.remove(object_id)?;
        let entry = self.slots.get_mut(index as usize)?.entry.take()?;
        let identity = servant_identity(&entry.servant);
        if let Some(slots) = self.by_servant.get_mut(&identity) {
            slots.retain(|s| *s != index);
            if slots.is_empty() {
                self.by_servant.remove(&identity);
            }
        }
        self.free.push(index);
        Some(entry)
    }

    /// O(1) lookup by the slot a key carries, checked against the id.
    pub fn get_by_slot(&self, slot: SlotRef, object_id: &[u8]) -> Option<&Entry> {
        let s = self.slots.get(slot.index as usize)?;
        let entry = s.entry.as_ref()?;
        (s.generation == slot.generation && entry.object_id == object_id).then_some(entry)
    }

    pub fn get(&self, object_id: &[u8]) -> Option<(SlotRef, &Entry)> {
        let index = *self.by_id.get(object_id)?;
        let s = self.slots.get(index as usize)?;
        let entry = s.entry.as_ref()?;
        Some((
            SlotRef {
                index,
                generation: s.generation,
            },
            entry,
        ))
    }

    pub fn ids_of(&self, servant: &Arc<dyn Servant>) -> Vec<Vec<u8>> {
        self.by_servant
            .get(&servant_identity(servant))
            .map(|slots| {
                slots
                    .iter()
                    .filter_map(|i| self.slots.get(*i as usize)?.entry.as_ref())
                    .map(|e| e.object_id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn has_servant(&self, servant: &Arc<dyn Servant>) -> bool {
        self.by_servant.contains_key(&servant_identity(servant))
    }

    pub fn drain(&mut self) -> Vec<Entry> {
        let entries = self
            .slots
            .iter_mut()
            .filter_map(|s| s.entry.take())
            .collect();
        self.by_id.clear();
        self.by_servant.clear();
        self.free = (0..self.slots.len() as u32).collect();
        entries
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}
