//! A slot table: a slab whose entries are named by an index and the
//! generation the slot had when the entry went in, so that a stale name
//! (an object deactivated, a POA destroyed, a connection closed) finds
//! nothing instead of whatever reuses the slot.
//!
//! The POA registry, the active object maps and the reactor's handler
//! table are slot tables; object keys and reactor tokens carry `SlotRef`s.

/// A slot index with the generation it had when its entry was inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SlotRef {
    /// Index in the table.
    pub(crate) index: u32,
    /// Generation of that slot when the entry was inserted.
    pub(crate) generation: u32,
}

impl SlotRef {
    /// "No slot" (for example an object that was not in an active object
    /// map when its key was made); never found.
    pub(crate) const NONE: SlotRef = SlotRef {
        index: u32::MAX,
        generation: 0,
    };
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Entries named by [`SlotRef`], O(1) insert, lookup and removal.
pub(crate) struct SlotTable<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for SlotTable<T> {
    fn default() -> Self {
        SlotTable {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> SlotTable<T> {
    /// Stores `value` in a free slot (bumping its generation).
    pub fn insert(&mut self, value: T) -> SlotRef {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        slot.value = Some(value);
        SlotRef {
            index,
            generation: slot.generation,
        }
    }

    /// The entry `r` names, if it is still there.
    pub fn get(&self, r: SlotRef) -> Option<&T> {
        let slot = self.slots.get(r.index as usize)?;
        if slot.generation != r.generation {
            return None;
        }
        slot.value.as_ref()
    }

    /// Takes out the entry `r` names, if it is still there.
    pub fn remove(&mut self, r: SlotRef) -> Option<T> {
        let slot = self.slots.get_mut(r.index as usize)?;
        if slot.generation != r.generation {
            return None;
        }
        let value = slot.value.take()?;
        self.free.push(r.index);
        Some(value)
    }

    /// Every entry with its name.
    pub fn iter(&self) -> impl Iterator<Item = (SlotRef, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.value.as_ref().map(|v| {
                (
                    SlotRef {
                        index: i as u32,
                        generation: s.generation,
                    },
                    v,
                )
            })
        })
    }

    /// Takes out every entry.
    pub fn drain(&mut self) -> Vec<T> {
        let mut out = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Some(v) = s.value.take() {
                out.push(v);
                self.free.push(i as u32);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_names_find_nothing() {
        let mut t = SlotTable::default();
        let a = t.insert("a");
        assert_eq!(t.get(a), Some(&"a"));
        assert_eq!(t.remove(a), Some("a"));
        let b = t.insert("b");
        assert_eq!(b.index, a.index, "the slot is reused");
        assert_eq!(t.get(a), None, "but the old name is stale");
        assert_eq!(t.remove(a), None);
        assert_eq!(t.get(SlotRef::NONE), None);
        assert_eq!(t.iter().count(), 1);
        assert_eq!(t.drain(), vec!["b"]);
        assert_eq!(t.get(b), None);
    }
}
