//! GIOP protocol versions and the byte order flag shared by every encoding.

use std::fmt;

/// A GIOP protocol version (`major.minor`); Armillary speaks 1.0, 1.1 and 1.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GiopVersion {
    /// Major version, always 1 for the versions we speak.
    pub major: u8,
    /// Minor version: 0, 1 or 2.
    pub minor: u8,
}

impl GiopVersion {
    /// GIOP 1.0: no fragments, no code set negotiation, no wchar.
    pub const V1_0: GiopVersion = GiopVersion { major: 1, minor: 0 };
    /// GIOP 1.1: fragments (not interleaved), code sets, fixed-width wchar.
    pub const V1_1: GiopVersion = GiopVersion { major: 1, minor: 1 };
    /// GIOP 1.2: interleaved fragments, TargetAddress, bodies aligned to 8.
    pub const V1_2: GiopVersion = GiopVersion { major: 1, minor: 2 };

    /// Every version Armillary speaks, oldest first.
    pub const ALL: [GiopVersion; 3] = [Self::V1_0, Self::V1_1, Self::V1_2];

    /// Builds a version from its two numbers.
    pub const fn new(major: u8, minor: u8) -> Self {
        GiopVersion { major, minor }
    }

    /// True for the versions this crate can encode and decode (1.0 to 1.2).
    pub const fn is_supported(self) -> bool {
        self.major == 1 && self.minor <= 2
    }
}

impl Default for GiopVersion {
    fn default() -> Self {
        Self::V1_2
    }
}

impl fmt::Display for GiopVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The byte order of a CDR stream, as carried by the GIOP header flags and
/// by the first octet of every encapsulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ByteOrder {
    /// Most significant byte first (flag bit 0 clear).
    Big,
    /// Least significant byte first (flag bit 0 set).
    #[default]
    Little,
}

impl ByteOrder {
    /// The byte order of the machine this code runs on.
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };

    /// Decodes the GIOP flag bit / encapsulation octet (only bit 0 counts).
    pub const fn from_flag(flag: u8) -> Self {
        if flag & 1 == 1 {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        }
    }

    /// The GIOP flag bit / encapsulation octet for this order.
    pub const fn flag(self) -> u8 {
        match self {
            ByteOrder::Big => 0,
            ByteOrder::Little => 1,
        }
    }
}
