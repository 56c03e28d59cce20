//! Armillary's object keys: what a POA puts in a reference so that a request
//! finds its servant in O(1) (active demultiplexing).
//!
//! A transient key carries the ORB instance token, the POA's slot and
//! generation in the ORB's POA table, and the object's slot and generation
//! in the POA's active object map, then the object id. A stale key (a
//! destroyed POA, a deactivated object, an earlier run of the server) fails
//! the generation or token check instead of reaching the wrong servant.
//! A persistent key carries the POA's full name instead of the token, so
//! it still resolves after a restart; its slots are only hints.

/// The first bytes of every Armillary object key.
pub(crate) const MAGIC: [u8; 4] = [0xa7, b'R', b'M', 1];

const TRANSIENT: u8 = 0;
const PERSISTENT: u8 = 1;

use super::ObjectId;
pub(crate) use crate::slots::SlotRef;

/// How a key names its POA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PoaName {
    /// A transient POA of the ORB instance with this token.
    Transient {
        /// The ORB instance token.
        orb_token: u64,
    },
    /// A persistent POA with this full name (root's children first).
    Persistent {
        /// The names from the root POA down, root excluded.
        path: Vec<String>,
    },
}

/// A decoded Armillary object key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectKey {
    /// Which POA.
    pub(crate) poa: PoaName,
    /// The POA's slot in the ORB's table.
    pub(crate) poa_slot: SlotRef,
    /// The object's slot in the POA's active object map.
    pub(crate) object_slot: SlotRef,
    /// The object id.
    pub(crate) object_id: ObjectId,
}

fn put_slot(out: &mut Vec<u8>, slot: SlotRef) {
    out.extend_from_slice(&slot.index.to_le_bytes());
    out.extend_from_slice(&slot.generation.to_le_bytes());
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }

    fn slot(&mut self) -> Option<SlotRef> {
        Some(SlotRef {
            index: self.u32()?,
            generation: self.u32()?,
        })
    }
}

impl ObjectKey {
    /// The key's bytes, as they go into an IIOP profile.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.object_id.len());
        out.extend_from_slice(&MAGIC);
        match &self.poa {
            PoaName::Transient { orb_token } => {
                out.push(TRANSIENT);
                out.extend_from_slice(&orb_token.to_le_bytes());
            }
            PoaName::Persistent { path } => {
                out.push(PERSISTENT);
                out.extend_from_slice(&(path.len() as u16).to_le_bytes());
                for name in path {
                    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
                    out.extend_from_slice(name.as_bytes());
                }
            }
        }
        put_slot(&mut out, self.poa_slot);
        put_slot(&mut out, self.object_slot);
        out.extend_from_slice(self.object_id.as_bytes());
        out
    }

    /// Decodes a key; `None` if it is not an Armillary key (then it may be
    /// a plain key bound in the ORB's key table, e.g. `NameService`).
    pub(crate) fn decode(bytes: &[u8]) -> Option<ObjectKey> {
        let mut c = Cursor(bytes);
        if c.take(4)? != MAGIC {
            return None;
        }
        let poa = match c.take(1)?[0] {
            TRANSIENT => PoaName::Transient {
                orb_token: c.u64()?,
            },
            PERSISTENT => {
                let count = c.u16()?;
                let mut path = Vec::new();
                for _ in 0..count {
                    let len = c.u16()?;
                    let name = std::str::from_utf8(c.take(usize::from(len))?).ok()?;
                    path.push(name.to_owned());
                }
                PoaName::Persistent { path }
            }
            _ => return None,
        };
        Some(ObjectKey {
            poa,
            poa_slot: c.slot()?,
            object_slot: c.slot()?,
            object_id: ObjectId::from(c.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_garbage_is_rejected() {
        let keys = [
            ObjectKey {
                poa: PoaName::Transient { orb_token: 42 },
                poa_slot: SlotRef {
                    index: 1,
                    generation: 2,
                },
                object_slot: SlotRef {
                    index: 3,
                    generation: 4,
                },
                object_id: ObjectId::from("oid"),
            },
            ObjectKey {
                poa: PoaName::Persistent {
                    path: vec!["quoter".into(), "sub/poa".into()],
                },
                poa_slot: SlotRef::NONE,
                object_slot: SlotRef::NONE,
                object_id: ObjectId::default(),
            },
        ];
        for key in keys {
            let bytes = key.encode();
            assert_eq!(ObjectKey::decode(&bytes), Some(key));
            for cut in 0..bytes.len() - 1 {
                // Any truncation inside the fixed part is rejected; a cut in
                // the object id just shortens the id.
                let _ = ObjectKey::decode(&bytes[..cut]);
            }
        }
        assert_eq!(ObjectKey::decode(b"NameService"), None);
    }
}
