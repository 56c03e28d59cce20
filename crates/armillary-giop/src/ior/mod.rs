//! Interoperable Object References: the IOR structure, its profiles and
//! tagged components.
//!
//! An [`Ior`] is a repository id plus a list of [`TaggedProfile`]s whose
//! bodies are kept as the exact bytes received, so that unknown profiles and
//! components travel on unchanged.

use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};

/// Profile tag of an IIOP profile (`TAG_INTERNET_IOP`).
pub const TAG_INTERNET_IOP: u32 = 0;
/// Profile tag of a multiple-components profile (`TAG_MULTIPLE_COMPONENTS`).
pub const TAG_MULTIPLE_COMPONENTS: u32 = 1;

/// An interoperable object reference as it travels in CDR.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Ior {
    /// The most derived repository id the server knows, e.g.
    /// `IDL:Stock/Quoter:1.0`; empty for a nil reference.
    pub type_id: String,
    /// The ways to reach the object, in the server's order of preference.
    pub profiles: Vec<TaggedProfile>,
}

/// One profile of an IOR: a tag and its encapsulated body, byte-exact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaggedProfile {
    /// The profile tag (`TAG_INTERNET_IOP`, `TAG_MULTIPLE_COMPONENTS`, ...).
    pub tag: u32,
    /// The profile body as received (an encapsulation for the standard tags).
    pub data: Vec<u8>,
}

impl Ior {
    /// The nil object reference: no type id, no profiles.
    pub fn nil() -> Self {
        Ior::default()
    }

    /// True for the nil reference.
    pub fn is_nil(&self) -> bool {
        self.profiles.is_empty()
    }
}

impl CdrEncode for TaggedProfile {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_ulong(self.tag);
        w.write_octet_seq(&self.data)
    }
}

impl CdrDecode for TaggedProfile {
    const MIN_SIZE: usize = 8;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(TaggedProfile {
            tag: r.read_ulong()?,
            data: r.read_octet_seq()?.to_vec(),
        })
    }
}

impl CdrEncode for Ior {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_string(&self.type_id)?;
        self.profiles.encode(w)
    }
}

impl CdrDecode for Ior {
    const MIN_SIZE: usize = 9;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Ior {
            type_id: r.read_string()?,
            profiles: Vec::decode(r)?,
        })
    }
}
