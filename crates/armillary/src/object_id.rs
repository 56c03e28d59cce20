//! [`ObjectId`]: the name of an object within its POA
//! (`PortableServer::ObjectId`), as a type instead of bare bytes.

use std::borrow::Borrow;
use std::fmt;

use smallvec::SmallVec;

use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};

/// An object id: the octets that name an object within its POA
/// (`PortableServer::ObjectId`, an IDL `sequence<octet>`).
///
/// The POA hands out ids it assigns (SYSTEM_ID) and takes the ones the
/// application chooses (USER_ID). Every POA call that takes an id accepts
/// anything that converts into one: an `ObjectId`, a `&ObjectId`, a
/// string, a byte slice or array, or a `Vec<u8>`.
///
/// On the wire it is a `sequence<octet>` ([`CdrEncode`], [`CdrDecode`]).
///
/// `Display` shows an id made of printable ASCII as text and any other id
/// as hexadecimal (system-assigned ids are binary).
///
/// ```
/// use armillary::poa::ObjectId;
///
/// let id = ObjectId::from("quoter");
/// assert_eq!(id.as_bytes(), b"quoter");
/// assert_eq!(id.to_string(), "quoter");
/// assert_eq!(ObjectId::from(vec![0, 1, 0xff]).to_string(), "0001ff");
/// ```
#[derive(Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[doc(alias = "PortableServer::ObjectId")]
pub struct ObjectId(IdBytes);

impl Clone for ObjectId {
    /// One copy of the octets (`SmallVec`'s own `clone` goes octet by
    /// octet; every request's upcall clones its id).
    fn clone(&self) -> Self {
        ObjectId(SmallVec::from_slice(&self.0))
    }
}

/// An id's octets: ids up to [`INLINE_ID`] octets long (system-assigned
/// ids, most names an application chooses) are kept inline, so that a
/// request's id is decoded and handed to its upcall without allocating.
type IdBytes = SmallVec<[u8; INLINE_ID]>;

/// The longest id kept without a heap allocation.
const INLINE_ID: usize = 24;

/// The empty id, for a servant reached without a POA (a local object of
/// the ORB).
pub(crate) static EMPTY: ObjectId = ObjectId(SmallVec::new_const());

impl ObjectId {
    /// The id's octets.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The id's octets, by value.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_vec()
    }

    /// The number of octets.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty id.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The id as text, when it is valid UTF-8 (ids the application chose
    /// from strings usually are).
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
}

impl ObjectId {
    /// The id as text when every octet is printable ASCII.
    fn printable(&self) -> Option<&str> {
        let printable = self.0.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
        if printable && !self.0.is_empty() {
            self.as_str()
        } else {
            None
        }
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.printable() {
            Some(text) => f.write_str(text),
            None => self.0.iter().try_for_each(|b| write!(f, "{b:02x}")),
        }
    }
}

impl fmt::Debug for ObjectId {
    /// `ObjectId("fred")` for a printable id, `ObjectId(0x0001ff)` for
    /// any other.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.printable() {
            Some(text) => f.debug_tuple("ObjectId").field(&text).finish(),
            None => f
                .debug_tuple("ObjectId")
                .field(&format_args!("0x{self}"))
                .finish(),
        }
    }
}

impl From<Vec<u8>> for ObjectId {
    fn from(bytes: Vec<u8>) -> Self {
        ObjectId(SmallVec::from_vec(bytes))
    }
}

impl From<&[u8]> for ObjectId {
    fn from(bytes: &[u8]) -> Self {
        ObjectId(SmallVec::from_slice(bytes))
    }
}

impl<const N: usize> From<&[u8; N]> for ObjectId {
    fn from(bytes: &[u8; N]) -> Self {
        ObjectId(SmallVec::from_slice(bytes))
    }
}

impl From<&Vec<u8>> for ObjectId {
    fn from(bytes: &Vec<u8>) -> Self {
        ObjectId(SmallVec::from_slice(bytes))
    }
}

impl From<&str> for ObjectId {
    fn from(text: &str) -> Self {
        ObjectId(SmallVec::from_slice(text.as_bytes()))
    }
}

impl From<String> for ObjectId {
    fn from(text: String) -> Self {
        ObjectId(SmallVec::from_vec(text.into_bytes()))
    }
}

impl From<&ObjectId> for ObjectId {
    fn from(id: &ObjectId) -> Self {
        id.clone()
    }
}

impl From<ObjectId> for Vec<u8> {
    fn from(id: ObjectId) -> Self {
        id.0.into_vec()
    }
}

impl AsRef<[u8]> for ObjectId {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Borrow<[u8]> for ObjectId {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl PartialEq<[u8]> for ObjectId {
    fn eq(&self, other: &[u8]) -> bool {
        self.0.as_slice() == other
    }
}

impl PartialEq<&[u8]> for ObjectId {
    fn eq(&self, other: &&[u8]) -> bool {
        self.0.as_slice() == *other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for ObjectId {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.0.as_slice() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for ObjectId {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.0.as_slice() == *other
    }
}

impl PartialEq<str> for ObjectId {
    fn eq(&self, other: &str) -> bool {
        self.0.as_slice() == other.as_bytes()
    }
}

impl PartialEq<&str> for ObjectId {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_slice() == other.as_bytes()
    }
}

impl CdrEncode for ObjectId {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_octet_seq(&self.0)
    }
}

impl CdrDecode for ObjectId {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(ObjectId::from(r.read_octet_seq()?))
    }
}
