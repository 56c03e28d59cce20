//! Code sets: which encodings `char`/`string` and `wchar`/`wstring` use on a
//! connection, and the negotiation that picks them (CORBA 3.0 §13.10).
//!
//! A server publishes its native and conversion code sets in the
//! `TAG_CODE_SETS` component of its IOR; the client picks the transmission
//! code sets with [`negotiate`] and tells the server in the `CodeSets`
//! service context of its first request. Both sides then encode with the
//! resulting [`CodeSets`].

use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};

/// An OSF code set registry number.
pub type CodeSetId = u32;

/// ISO 8859-1 (Latin-1): the default char code set.
pub const ISO_8859_1: CodeSetId = 0x0001_0001;
/// ISO 646 (ASCII), a subset of the others.
pub const ISO_646: CodeSetId = 0x0001_0020;
/// UTF-8: Armillary's native char code set and the char fallback.
pub const UTF_8: CodeSetId = 0x0501_0001;
/// UTF-16: Armillary's native wchar code set and the wchar fallback.
pub const UTF_16: CodeSetId = 0x0001_0109;
/// UCS-2 level 1, which other ORBs may publish for wchar.
pub const UCS_2: CodeSetId = 0x0001_0100;

/// The code sets a stream encodes characters with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodeSets {
    /// Transmission code set for `char` and `string`.
    pub char_set: CharCodeSet,
    /// Transmission code set for `wchar` and `wstring`; `None` until
    /// negotiated (always `None` in GIOP 1.0), and then wide characters are an
    /// error.
    pub wchar_set: Option<WCharCodeSet>,
    /// Whether wide strings written in GIOP 1.2 carry a byte order mark (and
    /// are then in the stream's byte order) or are written big-endian without
    /// one. Both forms are always accepted on read.
    pub write_bom: bool,
}

impl CodeSets {
    /// What a connection uses before negotiation: ISO 8859-1 and no wchar.
    pub const DEFAULT: CodeSets = CodeSets {
        char_set: CharCodeSet::Iso8859_1,
        wchar_set: None,
        write_bom: true,
    };

    /// UTF-8 and UTF-16, what two Armillary ORBs agree on.
    pub const NATIVE: CodeSets = CodeSets {
        char_set: CharCodeSet::Utf8,
        wchar_set: Some(WCharCodeSet::Utf16),
        write_bom: true,
    };

    /// The code sets named by a `CodeSets` service context, if this crate can
    /// encode them.
    pub fn from_context(ctx: &CodeSetContext) -> Result<CodeSets, CdrError> {
        let char_set = CharCodeSet::from_id(ctx.char_data)
            .ok_or(CdrError::UnsupportedCodeSet(ctx.char_data))?;
        let wchar_set = match ctx.wchar_data {
            0 => None,
            id => Some(WCharCodeSet::from_id(id).ok_or(CdrError::UnsupportedCodeSet(id))?),
        };
        Ok(CodeSets {
            char_set,
            wchar_set,
            write_bom: true,
        })
    }

    /// The service context that announces these code sets.
    pub fn to_context(&self) -> CodeSetContext {
        CodeSetContext {
            char_data: self.char_set.id(),
            wchar_data: self.wchar_set.map_or(0, WCharCodeSet::id),
        }
    }
}

impl Default for CodeSets {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A char transmission code set this crate can encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CharCodeSet {
    /// ISO 8859-1: one octet per character, U+0000 to U+00FF.
    Iso8859_1,
    /// UTF-8: strings carry any Unicode text; a single `char` must be ASCII.
    Utf8,
}

impl CharCodeSet {
    /// The registry number.
    pub const fn id(self) -> CodeSetId {
        match self {
            CharCodeSet::Iso8859_1 => ISO_8859_1,
            CharCodeSet::Utf8 => UTF_8,
        }
    }

    /// The code set for a registry number (ISO 646 is read as ISO 8859-1, of
    /// which it is a subset).
    pub const fn from_id(id: CodeSetId) -> Option<Self> {
        match id {
            ISO_8859_1 | ISO_646 => Some(CharCodeSet::Iso8859_1),
            UTF_8 => Some(CharCodeSet::Utf8),
            _ => None,
        }
    }
}

/// A wchar transmission code set this crate can encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WCharCodeSet {
    /// UTF-16, with surrogate pairs in wide strings.
    Utf16,
    /// UCS-2: UTF-16 without surrogates (Basic Multilingual Plane only).
    Ucs2,
}

impl WCharCodeSet {
    /// The registry number.
    pub const fn id(self) -> CodeSetId {
        match self {
            WCharCodeSet::Utf16 => UTF_16,
            WCharCodeSet::Ucs2 => UCS_2,
        }
    }

    /// The code set for a registry number.
    pub const fn from_id(id: CodeSetId) -> Option<Self> {
        match id {
            UTF_16 => Some(WCharCodeSet::Utf16),
            UCS_2 => Some(WCharCodeSet::Ucs2),
            _ => None,
        }
    }
}

/// One half of the `TAG_CODE_SETS` component: a native code set and the
/// code sets the server can convert from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CodeSetComponent {
    /// The code set the process uses internally.
    pub native_code_set: CodeSetId,
    /// Code sets it also accepts, in order of preference.
    pub conversion_code_sets: Vec<CodeSetId>,
}

/// The body of the `TAG_CODE_SETS` tagged component.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CodeSetComponentInfo {
    /// Code sets for `char` and `string`.
    pub for_char_data: CodeSetComponent,
    /// Code sets for `wchar` and `wstring`.
    pub for_wchar_data: CodeSetComponent,
}

impl CodeSetComponentInfo {
    /// What Armillary publishes: UTF-8 native with ISO 8859-1 conversion for
    /// char; UTF-16 native with UCS-2 conversion for wchar.
    pub fn armillary() -> Self {
        CodeSetComponentInfo {
            for_char_data: CodeSetComponent {
                native_code_set: UTF_8,
                conversion_code_sets: vec![ISO_8859_1],
            },
            for_wchar_data: CodeSetComponent {
                native_code_set: UTF_16,
                conversion_code_sets: vec![UCS_2],
            },
        }
    }
}

impl CdrEncode for CodeSetComponent {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_ulong(self.native_code_set);
        self.conversion_code_sets.encode(w)
    }
}

impl CdrDecode for CodeSetComponent {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(CodeSetComponent {
            native_code_set: r.read_ulong()?,
            conversion_code_sets: Vec::decode(r)?,
        })
    }
}

impl CdrEncode for CodeSetComponentInfo {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        self.for_char_data.encode(w)?;
        self.for_wchar_data.encode(w)
    }
}

impl CdrDecode for CodeSetComponentInfo {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(CodeSetComponentInfo {
            for_char_data: CodeSetComponent::decode(r)?,
            for_wchar_data: CodeSetComponent::decode(r)?,
        })
    }
}

/// The body of the `CodeSets` service context: the transmission code sets
/// the client chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CodeSetContext {
    /// Transmission code set for char data.
    pub char_data: CodeSetId,
    /// Transmission code set for wchar data (0 when none was chosen).
    pub wchar_data: CodeSetId,
}

impl CdrEncode for CodeSetContext {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_ulong(self.char_data);
        w.write_ulong(self.wchar_data);
        Ok(())
    }
}

impl CdrDecode for CodeSetContext {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(CodeSetContext {
            char_data: r.read_ulong()?,
            wchar_data: r.read_ulong()?,
        })
    }
}

/// Why code set negotiation found no transmission code set
/// (`CODESET_INCOMPATIBLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no common code set: client native {client:#010x}, server native {server:#010x}")]
pub struct CodeSetIncompatible {
    /// The client's native code set.
    pub client: CodeSetId,
    /// The server's native code set.
    pub server: CodeSetId,
}

/// Chooses the transmission code set for one kind of data (CORBA 3.0
/// §13.10.2.6): the client's native set if the server can take it, else the
/// server's native set if the client can produce it, else the first
/// conversion set both share, else the fallback (UTF-8 / UTF-16) when the
/// two natives are compatible enough to go through it.
pub fn negotiate_one(
    client: &CodeSetComponent,
    server: &CodeSetComponent,
    fallback: CodeSetId,
) -> Result<CodeSetId, CodeSetIncompatible> {
    let (cn, sn) = (client.native_code_set, server.native_code_set);
    if cn == sn || server.conversion_code_sets.contains(&cn) {
        return Ok(cn);
    }
    if client.conversion_code_sets.contains(&sn) {
        return Ok(sn);
    }
    if let Some(common) = client
        .conversion_code_sets
        .iter()
        .find(|c| server.conversion_code_sets.contains(c))
    {
        return Ok(*common);
    }
    // Both natives are Unicode-capable or Latin: the fallback carries them.
    let unicode = |id| matches!(id, ISO_8859_1 | ISO_646 | UTF_8 | UTF_16 | UCS_2);
    if unicode(cn) && unicode(sn) {
        return Ok(fallback);
    }
    Err(CodeSetIncompatible {
        client: cn,
        server: sn,
    })
}

/// Negotiates both char and wchar code sets between what this process
/// supports and what a server's IOR publishes. `server` is `None` when the
/// IOR has no `TAG_CODE_SETS` component: then char data is ISO 8859-1 and
/// wchar data cannot be sent.
pub fn negotiate(
    client: &CodeSetComponentInfo,
    server: Option<&CodeSetComponentInfo>,
) -> Result<CodeSets, CodeSetIncompatible> {
    let Some(server) = server else {
        return Ok(CodeSets::DEFAULT);
    };
    let char_id = negotiate_one(&client.for_char_data, &server.for_char_data, UTF_8)?;
    let char_set = CharCodeSet::from_id(char_id).ok_or(CodeSetIncompatible {
        client: client.for_char_data.native_code_set,
        server: char_id,
    })?;
    let wchar_set = if server.for_wchar_data.native_code_set == 0 {
        None
    } else {
        let id = negotiate_one(&client.for_wchar_data, &server.for_wchar_data, UTF_16)?;
        Some(WCharCodeSet::from_id(id).ok_or(CodeSetIncompatible {
            client: client.for_wchar_data.native_code_set,
            server: id,
        })?)
    };
    Ok(CodeSets {
        char_set,
        wchar_set,
        write_bom: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comp(native: CodeSetId, conv: &[CodeSetId]) -> CodeSetComponent {
        CodeSetComponent {
            native_code_set: native,
            conversion_code_sets: conv.to_vec(),
        }
    }

    #[test]
    fn negotiation_follows_the_spec_order() {
        let ours = CodeSetComponentInfo::armillary();
        // omniORB 4.2 publishes char native UTF-8 (conv ISO 8859-1) and
        // wchar native UTF-16.
        let omni = CodeSetComponentInfo {
            for_char_data: comp(UTF_8, &[ISO_8859_1]),
            for_wchar_data: comp(UTF_16, &[]),
        };
        let cs = negotiate(&ours, Some(&omni)).unwrap();
        assert_eq!(cs.char_set, CharCodeSet::Utf8);
        assert_eq!(cs.wchar_set, Some(WCharCodeSet::Utf16));

        // Server native Latin-1 that converts to nothing: client converts.
        assert_eq!(
            negotiate_one(&comp(UTF_8, &[ISO_8859_1]), &comp(ISO_8859_1, &[]), UTF_8),
            Ok(ISO_8859_1)
        );
        // Shared conversion set.
        assert_eq!(
            negotiate_one(&comp(1, &[7, 9]), &comp(2, &[9, 7]), UTF_8),
            Ok(7)
        );
        // Incompatible.
        assert!(negotiate_one(&comp(1, &[]), &comp(2, &[]), UTF_8).is_err());
        // No component: defaults.
        assert_eq!(negotiate(&ours, None).unwrap(), CodeSets::DEFAULT);
    }
}
