//! What an ORB speaks to its peers: the highest GIOP version
//! ([`MaxGiopVersion`]), the native code sets ([`CharCodeSet`],
//! [`WcharCodeSet`]) and the form of a union's default label
//! ([`UnionDefaultLabel`]).

use armillary_giop::cdr::codeset::{self, CodeSetComponent};
use armillary_giop::typecode::DefaultLabelForm;
use armillary_giop::GiopVersion;

/// The highest GIOP version an ORB speaks and publishes in its references
/// (`-ORBGIOPVersion`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum MaxGiopVersion {
    /// GIOP 1.0: no fragments, no code set negotiation; IIOP 1.0 profiles
    /// carry no components (so no TLS endpoints).
    V1_0,
    /// GIOP 1.1: fragments, code sets.
    V1_1,
    /// GIOP 1.2: interleaved fragments, bidirectional-ready headers.
    #[default]
    V1_2,
}

/// The wire version, as the messages and profiles of
/// [`armillary::giop`](crate::giop) spell it.
impl From<MaxGiopVersion> for GiopVersion {
    fn from(version: MaxGiopVersion) -> GiopVersion {
        match version {
            MaxGiopVersion::V1_0 => GiopVersion::V1_0,
            MaxGiopVersion::V1_1 => GiopVersion::V1_1,
            MaxGiopVersion::V1_2 => GiopVersion::V1_2,
        }
    }
}

/// The setting for a wire version (an IOR profile's, say); a version
/// Armillary does not speak is given back as the error.
///
/// ```
/// use armillary::giop::GiopVersion;
/// use armillary::config::MaxGiopVersion;
/// assert_eq!(MaxGiopVersion::try_from(GiopVersion::V1_1), Ok(MaxGiopVersion::V1_1));
/// let v1_3 = GiopVersion { major: 1, minor: 3 };
/// assert_eq!(MaxGiopVersion::try_from(v1_3), Err(v1_3));
/// ```
impl TryFrom<GiopVersion> for MaxGiopVersion {
    type Error = GiopVersion;

    fn try_from(version: GiopVersion) -> Result<Self, GiopVersion> {
        match version {
            GiopVersion::V1_0 => Ok(MaxGiopVersion::V1_0),
            GiopVersion::V1_1 => Ok(MaxGiopVersion::V1_1),
            GiopVersion::V1_2 => Ok(MaxGiopVersion::V1_2),
            other => Err(other),
        }
    }
}

impl MaxGiopVersion {
    /// The version an `-ORBGIOPVersion` value names.
    pub(super) fn parse(value: &str) -> Option<Self> {
        match value {
            "1.0" => Some(MaxGiopVersion::V1_0),
            "1.1" => Some(MaxGiopVersion::V1_1),
            "1.2" => Some(MaxGiopVersion::V1_2),
            _ => None,
        }
    }
}

/// The native code set for `char` and `string` data
/// (`-ORBNativeCharCodeSet`). The other one is offered as a conversion
/// code set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CharCodeSet {
    /// UTF-8 (`0x05010001`).
    #[default]
    Utf8,
    /// ISO 8859-1, Latin-1 (`0x00010001`).
    Iso8859_1,
}

impl CharCodeSet {
    pub(super) const ALL: [CharCodeSet; 2] = [CharCodeSet::Utf8, CharCodeSet::Iso8859_1];

    /// The OSF registry id.
    pub(super) fn id(self) -> u32 {
        match self {
            CharCodeSet::Utf8 => codeset::UTF_8,
            CharCodeSet::Iso8859_1 => codeset::ISO_8859_1,
        }
    }

    /// The code set an `-ORBNativeCharCodeSet` value names.
    pub(super) fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_uppercase().as_str() {
            "UTF-8" | "UTF8" => Some(CharCodeSet::Utf8),
            "ISO-8859-1" | "ISO8859-1" | "LATIN-1" => Some(CharCodeSet::Iso8859_1),
            _ => None,
        }
    }
}

/// The native code set for `wchar` and `wstring` data
/// (`-ORBNativeWCharCodeSet`). The other one is offered as a conversion
/// code set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcharCodeSet {
    /// UTF-16 (`0x00010109`).
    #[default]
    Utf16,
    /// UCS-2, level 1 (`0x00010100`).
    Ucs2,
}

impl WcharCodeSet {
    pub(super) const ALL: [WcharCodeSet; 2] = [WcharCodeSet::Utf16, WcharCodeSet::Ucs2];

    /// The OSF registry id.
    pub(super) fn id(self) -> u32 {
        match self {
            WcharCodeSet::Utf16 => codeset::UTF_16,
            WcharCodeSet::Ucs2 => codeset::UCS_2,
        }
    }

    /// The code set an `-ORBNativeWCharCodeSet` value names.
    pub(super) fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_uppercase().as_str() {
            "UTF-16" | "UTF16" => Some(WcharCodeSet::Utf16),
            "UCS-2" | "UCS2" => Some(WcharCodeSet::Ucs2),
            _ => None,
        }
    }
}

/// A code set component naming `native` and offering the rest of `all`
/// for conversion.
pub(super) fn code_set_component(
    native: u32,
    all: impl IntoIterator<Item = u32>,
) -> CodeSetComponent {
    CodeSetComponent {
        native_code_set: native,
        conversion_code_sets: all.into_iter().filter(|c| *c != native).collect(),
    }
}

/// How this ORB's TypeCodes label a union's default member when it does
/// not know which form the receiver reads (`-ORBUnionDefaultLabel`).
///
/// ORBs disagree: omniORB and TAO read a value of the discriminator's
/// type there, JacORB and the JDK ORB the zero octet, and neither reads
/// the other's form wherever the two put the member's name at different
/// places (see `armillary_giop::typecode` for the sources). So a request
/// takes the form its target's ORB reads, known from the `TAG_ORB_TYPE`
/// component of the reference, and a reply the form the client's own
/// TypeCodes showed on the connection; this setting is for the rest:
/// references without an ORB type (a `corbaloc:` URL, say) or from
/// Armillary (which reads both), and replies to clients whose TypeCodes
/// have not shown their form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnionDefaultLabel {
    /// A zero of the discriminator's type (`discriminator`; the default).
    #[default]
    Discriminator,
    /// The zero octet (`zero-octet`).
    ZeroOctet,
}

impl From<UnionDefaultLabel> for DefaultLabelForm {
    fn from(label: UnionDefaultLabel) -> DefaultLabelForm {
        match label {
            UnionDefaultLabel::Discriminator => DefaultLabelForm::DiscriminatorTyped,
            UnionDefaultLabel::ZeroOctet => DefaultLabelForm::ZeroOctet,
        }
    }
}
