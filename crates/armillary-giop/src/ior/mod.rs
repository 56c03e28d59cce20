//! Interoperable Object References: the IOR structure, its profiles and
//! tagged components.
//!
//! An [`Ior`] is a repository id plus a list of [`TaggedProfile`]s whose
//! bodies are kept as the exact bytes received, so that unknown profiles and
//! components travel on unchanged.

use std::fmt;
use std::str::FromStr;

use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
use crate::version::{ByteOrder, GiopVersion};

mod profile;
pub mod security;
mod url;

pub use profile::{
    decode_multiple_components, orb_type_name, profile_tag_name, KnownComponent, ProfileBody,
    TaggedComponent, ORB_TYPE_ARMILLARY, ORB_TYPE_JACORB, ORB_TYPE_OMNIORB, ORB_TYPE_TAO,
    TAG_ALTERNATE_IIOP_ADDRESS, TAG_CODE_SETS, TAG_ORB_TYPE,
};
pub use url::{escape, CorbalocAddress, ObjectUrl, DEFAULT_PORT};

/// Why an IOR or object URL could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IorError {
    /// The text does not start with `IOR:`.
    #[error("not a stringified IOR (it must start with \"IOR:\")")]
    NotAnIor,
    /// A character of the hex part that is not a hex digit.
    #[error("bad hex digit {ch:?} at character {at}")]
    BadHex {
        /// The character.
        ch: char,
        /// Its position in the text (0-based).
        at: usize,
    },
    /// An odd number of hex digits.
    #[error("odd number of hex digits ({0})")]
    OddHex(usize),
    /// The IOR's CDR encoding is malformed.
    #[error("malformed IOR: {0}")]
    Cdr(CdrError),
    /// Bytes after the IOR inside its encapsulation.
    #[error("{0} unexpected bytes after the IOR")]
    Trailing(usize),
    /// An IIOP profile body is malformed (offsets within the profile).
    #[error("IIOP profile body: {source}")]
    Profile {
        /// The CDR error.
        source: CdrError,
    },
    /// An IIOP major version other than 1.
    #[error("unsupported IIOP version {0}")]
    UnsupportedIiopVersion(GiopVersion),
    /// A malformed corbaloc or corbaname URL.
    #[error("{reason} at character {at}")]
    Url {
        /// Character position (0-based).
        at: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

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

impl Ior {
    /// An IOR with one IIOP profile.
    pub fn iiop(type_id: &str, body: &ProfileBody) -> Result<Ior, CdrError> {
        Ok(Ior {
            type_id: type_id.to_owned(),
            profiles: vec![body.to_profile()?],
        })
    }

    /// The decoded IIOP profiles, in order (malformed ones are skipped).
    pub fn iiop_profiles(&self) -> Vec<ProfileBody> {
        self.profiles
            .iter()
            .filter(|p| p.tag == TAG_INTERNET_IOP)
            .filter_map(|p| ProfileBody::decode(&p.data).ok())
            .collect()
    }

    /// Decodes the CDR encapsulation a stringified IOR carries.
    pub fn from_encapsulation(bytes: &[u8]) -> Result<Ior, IorError> {
        let mut r = CdrReader::encapsulation(bytes, GiopVersion::V1_2, 0).map_err(IorError::Cdr)?;
        let ior = Ior::decode(&mut r).map_err(IorError::Cdr)?;
        // Some ORBs pad the encapsulation; anything but zeros is suspect.
        if r.rest().iter().any(|b| *b != 0) {
            return Err(IorError::Trailing(r.remaining()));
        }
        Ok(ior)
    }

    /// The CDR encapsulation of this IOR in byte `order`.
    pub fn to_encapsulation(&self, order: ByteOrder) -> Result<Vec<u8>, CdrError> {
        let mut w = CdrWriter::new(order, GiopVersion::V1_2);
        w.write_octet(order.flag());
        self.encode(&mut w)?;
        Ok(w.into_bytes())
    }
}

impl FromStr for Ior {
    type Err = IorError;

    /// Parses `IOR:` followed by hex digits (either case); surrounding
    /// white space is ignored.
    fn from_str(s: &str) -> Result<Ior, IorError> {
        let s = s.trim();
        let hex = match s.get(..4) {
            Some(p) if p.eq_ignore_ascii_case("IOR:") => &s[4..],
            _ => return Err(IorError::NotAnIor),
        };
        // The first character that is not a hex digit, named as the
        // character it is (not one byte of it) at its character position.
        if let Some((at, ch)) = hex
            .chars()
            .enumerate()
            .find(|(_, c)| !c.is_ascii_hexdigit())
        {
            return Err(IorError::BadHex { ch, at: at + 4 });
        }
        if hex.len() % 2 != 0 {
            return Err(IorError::OddHex(hex.len()));
        }
        // Only ASCII hex digits are left.
        let digit = |c: u8| char::from(c).to_digit(16).unwrap_or(0) as u8;
        let out: Vec<u8> = hex
            .as_bytes()
            .chunks_exact(2)
            .map(|pair| digit(pair[0]) << 4 | digit(pair[1]))
            .collect();
        Ior::from_encapsulation(&out)
    }
}

impl fmt::Display for Ior {
    /// `IOR:` and lower-case hex of a little-endian encapsulation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self
            .to_encapsulation(ByteOrder::Little)
            .map_err(|_| fmt::Error)?;
        f.write_str("IOR:")?;
        for b in bytes {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Fuzz entry (see [`crate::fuzzing::ior_parse`]).
pub(crate) fn fuzz_one(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(url) = text.parse::<ObjectUrl>() {
            let printed = url.to_string();
            let again: ObjectUrl = printed.parse().expect("a printed URL parses");
            if let (ObjectUrl::Ior(a), ObjectUrl::Ior(b)) = (&url, &again) {
                assert_eq!(a, b);
            }
            let _ = url.to_ior();
        }
    }
    if let Ok(ior) = Ior::from_encapsulation(data) {
        check_decoded(&ior);
    }
    let _ = ProfileBody::decode(data);
}

/// Fuzz check of a decoded IOR (from any decoder): it prints and parses
/// back equal, and every profile and component decodes or fails cleanly,
/// a decoded IIOP profile body re-encoding to an equal one.
pub(crate) fn check_decoded(ior: &Ior) {
    let printed = ior.to_string();
    assert_eq!(&printed.parse::<Ior>().expect("a printed IOR parses"), ior);
    for p in &ior.profiles {
        check_profile(p);
    }
}

/// Fuzz check of one tagged profile (see [`check_decoded`]).
pub(crate) fn check_profile(p: &TaggedProfile) {
    if let Ok(body) = ProfileBody::decode(&p.data) {
        let again = ProfileBody::decode(&body.encode().expect("a decoded body encodes"))
            .expect("an encoded body decodes");
        assert_eq!(again, body);
        for c in &body.components {
            let _ = c.decode_known();
        }
        let _ = body.code_sets();
        let _ = body.addresses();
        let _ = body.tls_addresses();
    }
    let _ = decode_multiple_components(&p.data);
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

/// The type id travels byte for byte as ISO-8859-1, whatever the char
/// code set of the stream around it: so every IOR that decodes (from a
/// stringified IOR or from a message on a UTF-8 connection alike)
/// re-encodes to the same bytes, and printing it cannot fail. Repository
/// ids are ASCII in practice, where this changes nothing; a type id made
/// by the application with characters beyond ISO-8859-1 is written in the
/// stream's code set.
impl CdrEncode for Ior {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        let latin1: Option<Vec<u8>> = self
            .type_id
            .chars()
            .map(|c| u8::try_from(u32::from(c)).ok())
            .collect();
        match latin1 {
            Some(bytes) => {
                w.write_len(bytes.len() + 1)?;
                w.write_octets(&bytes);
                w.write_octet(0);
            }
            None => w.write_string(&self.type_id)?,
        }
        self.profiles.encode(w)
    }
}

impl CdrDecode for Ior {
    const MIN_SIZE: usize = 9;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let id = r.read_string_bytes()?;
        Ok(Ior {
            type_id: id.iter().map(|&b| char::from(b)).collect(),
            profiles: Vec::decode(r)?,
        })
    }
}
