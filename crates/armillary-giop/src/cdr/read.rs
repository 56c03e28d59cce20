//! [`CdrReader`]: takes CDR-encoded values off a borrowed buffer, checking
//! every length before it reads.

use bytes::Bytes;

use super::codeset::{CharCodeSet, CodeSets, WCharCodeSet};
use super::fragments::BlockLayout;
use super::write::{char_set_name, wchar_set_name};
use super::{CdrDecode, CdrError, Fixed, LongDouble, MAX_DEPTH};
use crate::typecode::DefaultLabelForm;
use crate::version::{ByteOrder, GiopVersion};

/// Decodes values from a byte slice. Never panics on any input: every read
/// checks what is left first and reports a [`CdrError`] with the offset.
#[derive(Debug, Clone)]
pub struct CdrReader<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
    /// Stream offset of `buf[0]`.
    pub(super) align_base: usize,
    order: ByteOrder,
    version: GiopVersion,
    codesets: CodeSets,
    depth: u32,
    /// Indices where a GIOP 1.1 fragment's data starts: from each one on,
    /// alignment counts as if the fragment's 12-byte header preceded it
    /// (see [`fragments`](super::fragments)).
    pub(super) fragment_starts: &'a [usize],
    /// How a block of primitive values cut by one of those starts is read.
    pub(super) layout: BlockLayout,
    /// The form of the first union default label the TypeCodes read here
    /// showed unambiguously.
    default_label_seen: Option<DefaultLabelForm>,
    /// The shared buffer `buf` lies in, when it has one (a received
    /// message's): large octet sequences are then handed out as slices of
    /// it ([`read_octet_seq_shared`](Self::read_octet_seq_shared)).
    source: Option<&'a Bytes>,
}

/// The smallest octet sequence [`CdrReader::read_octet_seq_shared`] hands
/// out as a slice of the message's buffer rather than as a copy: a small
/// one is cheaper to copy than to share, and a copy does not keep the
/// whole message alive.
pub const SHARED_OCTETS_MIN: usize = 1024;

impl<'a> CdrReader<'a> {
    /// A reader over `buf`, whose first byte is at stream offset 0.
    pub fn new(buf: &'a [u8], order: ByteOrder, version: GiopVersion) -> Self {
        CdrReader {
            buf,
            pos: 0,
            align_base: 0,
            order,
            version,
            codesets: CodeSets::DEFAULT,
            depth: 0,
            fragment_starts: &[],
            layout: BlockLayout::Undecided,
            default_label_seen: None,
            source: None,
        }
    }

    /// Names the shared buffer the reader's bytes lie in (a received
    /// message's), so that [`read_octet_seq_shared`](Self::read_octet_seq_shared)
    /// can hand out slices of it instead of copies. A reader over bytes
    /// that are not in `source` copies as if it had none.
    #[inline]
    pub fn with_source(mut self, source: &'a Bytes) -> Self {
        self.source = Some(source);
        self
    }

    /// Sets the stream offset of `buf[0]` (for a body whose header was cut
    /// off).
    #[inline]
    pub fn with_align_base(mut self, base: usize) -> Self {
        self.align_base = base;
        self
    }

    /// Starts reading at index `pos` of the buffer (e.g. after a header
    /// that was already decoded); alignment still counts from `buf[0]`.
    #[inline]
    pub fn with_position(mut self, pos: usize) -> Self {
        self.pos = pos.min(self.buf.len());
        self
    }

    /// Sets the transmission code sets.
    #[inline]
    pub fn with_codesets(mut self, codesets: CodeSets) -> Self {
        self.codesets = codesets;
        self
    }

    /// Changes the transmission code sets mid-stream.
    pub fn set_codesets(&mut self, codesets: CodeSets) {
        self.codesets = codesets;
    }

    /// Changes the byte order mid-stream.
    pub fn set_byte_order(&mut self, order: ByteOrder) {
        self.order = order;
    }

    /// The byte order being read.
    pub fn byte_order(&self) -> ByteOrder {
        self.order
    }

    /// The GIOP version whose rules apply.
    pub fn version(&self) -> GiopVersion {
        self.version
    }

    /// The transmission code sets in use.
    pub fn codesets(&self) -> CodeSets {
        self.codesets
    }

    /// How the sender labels a union's default member in its TypeCodes, as
    /// far as the TypeCodes read so far showed it: the form of the first
    /// default label that could be read only one way (`None` while every
    /// one read either way, or there was none). A server answers in it
    /// (see [`DefaultLabelForm`]).
    pub fn default_label_seen(&self) -> Option<DefaultLabelForm> {
        self.default_label_seen
    }

    /// Records the form a TypeCode's default label showed, unless an
    /// earlier one did.
    pub(crate) fn note_default_label(&mut self, form: DefaultLabelForm) {
        self.default_label_seen.get_or_insert(form);
    }

    /// The stream offset of the next byte.
    pub fn position(&self) -> usize {
        self.align_base + self.pos
    }

    /// Index of the next byte in the buffer.
    pub fn index(&self) -> usize {
        self.pos
    }

    /// Goes back to index `index` of the buffer (one this reader was at:
    /// what it read from there on is read again).
    pub(crate) fn rewind_to(&mut self, index: usize) {
        self.pos = index.min(self.buf.len());
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte was read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// The whole buffer this reader reads from.
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// How many items to pre-allocate for a sequence of `n` items of at
    /// least `min_size` bytes each: never more than the input could hold.
    pub fn capacity_hint(&self, n: usize, min_size: usize) -> usize {
        n.min(self.remaining() / min_size.max(1)).min(1 << 16)
    }

    /// Skips padding up to the next multiple of `n` (a power of two).
    ///
    /// In a reassembled GIOP 1.1 message, padding that reaches the start of
    /// the next fragment ends there, and alignment restarts from that
    /// fragment's header: omniORB pads to the end of a full fragment, then
    /// aligns again in the next one.
    #[inline]
    pub fn align(&mut self, n: usize) -> Result<(), CdrError> {
        let aligned = if !self.fragment_starts.is_empty() {
            self.aligned_index(self.pos, n)
        } else if n.is_power_of_two() {
            // Every CDR alignment (1, 2, 4, 8): a mask, not a division.
            self.pos + ((self.align_base + self.pos).wrapping_neg() & (n - 1))
        } else {
            self.pos + (n - (self.align_base + self.pos) % n) % n
        };
        if aligned > self.buf.len() {
            return Err(self.end(aligned - self.pos));
        }
        self.pos = aligned;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    pub(super) fn end(&self, needed: usize) -> CdrError {
        CdrError::UnexpectedEnd {
            offset: self.position(),
            needed,
            remaining: self.remaining(),
        }
    }

    /// Takes `n` raw bytes with no alignment.
    #[inline]
    pub fn read_octets(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        if n > self.remaining() {
            return Err(self.end(n));
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), CdrError> {
        self.read_octets(n).map(|_| ())
    }

    /// Takes an aligned primitive of `N` bytes (`N` a power of two): one
    /// branch when it lies whole in an unfragmented buffer, the general
    /// path ([`take_aligned`](Self::take_aligned)) otherwise.
    #[inline(always)]
    fn take<const N: usize>(&mut self) -> Result<[u8; N], CdrError> {
        let at = self.pos + ((self.align_base + self.pos).wrapping_neg() & (N - 1));
        if self.fragment_starts.is_empty() {
            if let Some(Ok(out)) = self.buf.get(at..at + N).map(<[u8; N]>::try_from) {
                self.pos = at + N;
                return Ok(out);
            }
        }
        self.take_aligned()
    }

    /// [`take`](Self::take)'s general path: a fragmented message's
    /// alignment, and the error of a read past the end.
    #[cold]
    #[inline(never)]
    fn take_aligned<const N: usize>(&mut self) -> Result<[u8; N], CdrError> {
        self.align(N)?;
        if !self.fragment_starts.is_empty() {
            self.check_not_split(N)?;
        }
        let bytes = self.read_octets(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// Reads one octet.
    #[inline]
    pub fn read_octet(&mut self) -> Result<u8, CdrError> {
        Ok(self.read_octets(1)?[0])
    }

    /// Reads a boolean; anything but 0 or 1 is an error.
    pub fn read_bool(&mut self) -> Result<bool, CdrError> {
        let offset = self.position();
        match self.read_octet()? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(CdrError::InvalidBoolean { offset, value }),
        }
    }
}

macro_rules! read_number {
    ($($name:ident -> $ty:ty),* $(,)?) => {
        impl CdrReader<'_> {
            $(
                #[doc = concat!("Reads an aligned `", stringify!($ty), "`.")]
                #[inline]
                pub fn $name(&mut self) -> Result<$ty, CdrError> {
                    let bytes = self.take()?;
                    Ok(match self.order {
                        ByteOrder::Big => <$ty>::from_be_bytes(bytes),
                        ByteOrder::Little => <$ty>::from_le_bytes(bytes),
                    })
                }
            )*
        }
    };
}

read_number! {
    read_short -> i16,
    read_ushort -> u16,
    read_long -> i32,
    read_ulong -> u32,
    read_longlong -> i64,
    read_ulonglong -> u64,
    read_float -> f32,
    read_double -> f64,
}

impl<'a> CdrReader<'a> {
    /// Reads a `long double` (16 octets, aligned to 8).
    pub fn read_long_double(&mut self) -> Result<LongDouble, CdrError> {
        self.align(8)?;
        self.check_not_split(16)?;
        let bytes: [u8; 16] = self.read_octets(16)?.try_into().map_err(|_| self.end(16))?;
        Ok(match self.order {
            ByteOrder::Big => LongDouble::from_be_bytes(bytes),
            ByteOrder::Little => LongDouble::from_le_bytes(bytes),
        })
    }

    /// Reads a `fixed<digits, scale>`.
    pub fn read_fixed(&mut self, digits: u16, scale: u16) -> Result<Fixed, CdrError> {
        let offset = self.position();
        let bytes = self.read_octets(Fixed::encoded_len(digits))?;
        Fixed::from_cdr(bytes, scale).map_err(|source| CdrError::InvalidFixed { offset, source })
    }

    /// Reads a sequence length and checks that `n` elements of at least
    /// `min_size` bytes each could fit in what is left.
    #[inline]
    pub fn read_seq_len(&mut self, min_size: usize) -> Result<usize, CdrError> {
        let offset = self.position();
        let n = self.read_ulong()?;
        let need = u64::from(n).saturating_mul(min_size.max(1) as u64);
        if need > self.remaining() as u64 {
            return Err(CdrError::LengthTooLarge {
                offset,
                length: u64::from(n),
                remaining: self.remaining(),
            });
        }
        Ok(n as usize)
    }

    /// Reads a `sequence<octet>` without copying it.
    #[inline]
    pub fn read_octet_seq(&mut self) -> Result<&'a [u8], CdrError> {
        let n = self.read_seq_len(1)?;
        self.read_octets(n)
    }

    /// Reads a `sequence<octet>` as [`Bytes`]: one of
    /// [`SHARED_OCTETS_MIN`] octets or more is a slice of the message's
    /// buffer (no copy; it keeps the message's memory alive while it
    /// lives) when the reader knows that buffer
    /// ([`with_source`](Self::with_source)), else a copy.
    pub fn read_octet_seq_shared(&mut self) -> Result<Bytes, CdrError> {
        let octets = self.read_octet_seq()?;
        if octets.len() >= SHARED_OCTETS_MIN {
            if let Some(source) = self.source {
                let start = (octets.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
                if start <= source.len() && octets.len() <= source.len() - start {
                    return Ok(source.slice(start..start + octets.len()));
                }
            }
        }
        Ok(Bytes::copy_from_slice(octets))
    }

    /// Reads an IDL `char` in the char transmission code set.
    pub fn read_char(&mut self) -> Result<char, CdrError> {
        let offset = self.position();
        let b = self.read_octet()?;
        match self.codesets.char_set {
            CharCodeSet::Utf8 if b > 0x7f => Err(CdrError::InvalidText {
                offset,
                code_set: "UTF-8",
            }),
            _ => Ok(char::from(b)),
        }
    }

    /// Reads the bytes of an IDL `string` (without its NUL), borrowed.
    #[inline]
    pub fn read_string_bytes(&mut self) -> Result<&'a [u8], CdrError> {
        let offset = self.position();
        let n = self.read_seq_len(1)?;
        let bytes = self.read_octets(n)?;
        match bytes.split_last() {
            Some((0, text)) => Ok(text),
            _ => Err(CdrError::StringNotTerminated { offset }),
        }
    }

    /// Reads an IDL `string`, decoding it from the char transmission code
    /// set.
    pub fn read_string(&mut self) -> Result<String, CdrError> {
        let offset = self.position();
        let bytes = self.read_string_bytes()?;
        match self.codesets.char_set {
            CharCodeSet::Utf8 => {
                String::from_utf8(bytes.to_vec()).map_err(|_| CdrError::InvalidText {
                    offset,
                    code_set: char_set_name(CharCodeSet::Utf8),
                })
            }
            CharCodeSet::Iso8859_1 => Ok(if bytes.is_ascii() {
                // ASCII is valid UTF-8: one copy, no per-byte conversion.
                String::from_utf8_lossy(bytes).into_owned()
            } else {
                bytes.iter().map(|&b| char::from(b)).collect()
            }),
        }
    }

    /// Reads a `string<bound>`, checking the bound.
    pub fn read_bounded_string(&mut self, bound: u32) -> Result<String, CdrError> {
        let s = self.read_string()?;
        let length = s.chars().count() as u64;
        if length > u64::from(bound) {
            return Err(CdrError::BoundExceeded { bound, length });
        }
        Ok(s)
    }

    fn wchar_set(&self) -> Result<WCharCodeSet, CdrError> {
        match self.codesets.wchar_set {
            Some(set) if self.version >= GiopVersion::V1_1 => Ok(set),
            _ => Err(CdrError::WCharCodeSetUnknown {
                version: self.version,
            }),
        }
    }

    /// Decodes UTF-16 octets of GIOP 1.2 wide data: a leading BOM chooses
    /// the byte order (and is dropped); without one the data is big-endian.
    /// A mark with nothing after it is the character U+FEFF itself (big
    /// endian, as omniORB sends a `wchar` U+FEFF it copies from a
    /// big-endian any): empty wide text has no octets at all.
    fn utf16_units(&self, bytes: &[u8], offset: usize) -> Result<Vec<u16>, CdrError> {
        let invalid = CdrError::InvalidText {
            offset,
            code_set: "UTF-16",
        };
        if bytes.len() % 2 != 0 {
            return Err(invalid);
        }
        let (order, body) = match bytes {
            [0xfe, 0xff, rest @ ..] if !rest.is_empty() => (ByteOrder::Big, rest),
            [0xff, 0xfe, rest @ ..] if !rest.is_empty() => (ByteOrder::Little, rest),
            _ => (ByteOrder::Big, bytes),
        };
        Ok(body
            .chunks_exact(2)
            .map(|c| match order {
                ByteOrder::Big => u16::from_be_bytes([c[0], c[1]]),
                ByteOrder::Little => u16::from_le_bytes([c[0], c[1]]),
            })
            .collect())
    }

    fn units_to_string(
        &self,
        set: WCharCodeSet,
        units: &[u16],
        offset: usize,
    ) -> Result<String, CdrError> {
        let invalid = CdrError::InvalidText {
            offset,
            code_set: wchar_set_name(set),
        };
        if set == WCharCodeSet::Ucs2 && units.iter().any(|u| (0xd800..0xe000).contains(u)) {
            return Err(invalid);
        }
        String::from_utf16(units).map_err(|_| invalid)
    }

    /// Reads an IDL `wchar` (see [`CdrWriter::write_wchar`](super::CdrWriter::write_wchar)
    /// for the two layouts).
    pub fn read_wchar(&mut self) -> Result<char, CdrError> {
        let set = self.wchar_set()?;
        let offset = self.position();
        let invalid = CdrError::InvalidText {
            offset,
            code_set: wchar_set_name(set),
        };
        let unit = if self.version == GiopVersion::V1_1 {
            self.read_ushort()?
        } else {
            let n = usize::from(self.read_octet()?);
            let bytes = self.read_octets(n)?;
            match self.utf16_units(bytes, offset)?.as_slice() {
                [unit] => *unit,
                _ => return Err(invalid),
            }
        };
        char::from_u32(u32::from(unit)).ok_or(invalid)
    }

    /// Reads an IDL `wstring`.
    pub fn read_wstring(&mut self) -> Result<String, CdrError> {
        let set = self.wchar_set()?;
        let offset = self.position();
        if self.version == GiopVersion::V1_1 {
            let n = self.read_seq_len(2)?;
            let mut units = Vec::with_capacity(n);
            for _ in 0..n {
                units.push(self.read_ushort()?);
            }
            // The count includes a terminating NUL unit; tolerate its absence
            // in an empty string, as some ORBs send length 0.
            if units.last() == Some(&0) {
                units.pop();
            } else if n != 0 {
                return Err(CdrError::StringNotTerminated { offset });
            }
            self.units_to_string(set, &units, offset)
        } else {
            let bytes = self.read_octet_seq()?;
            let units = self.utf16_units(bytes, offset)?;
            self.units_to_string(set, &units, offset)
        }
    }

    /// Reads a `wstring<bound>`, checking the bound.
    pub fn read_bounded_wstring(&mut self, bound: u32) -> Result<String, CdrError> {
        let s = self.read_wstring()?;
        let length = s.chars().count() as u64;
        if length > u64::from(bound) {
            return Err(CdrError::BoundExceeded { bound, length });
        }
        Ok(s)
    }

    /// Reads a sequence whose elements need a custom decoder (for example
    /// `sequence<wstring>`); `min_size` is the fewest bytes one element takes.
    pub fn read_seq_with<T>(
        &mut self,
        min_size: usize,
        mut f: impl FnMut(&mut CdrReader<'a>) -> Result<T, CdrError>,
    ) -> Result<Vec<T>, CdrError> {
        let n = self.read_seq_len(min_size)?;
        let mut items = Vec::with_capacity(self.capacity_hint(n, min_size));
        for _ in 0..n {
            items.push(f(self)?);
        }
        Ok(items)
    }

    /// Reads a bounded `sequence<T, bound>`.
    pub fn read_bounded_seq<T: CdrDecode>(&mut self, bound: u32) -> Result<Vec<T>, CdrError> {
        let n = self.read_seq_len(T::MIN_SIZE)?;
        if n as u64 > u64::from(bound) {
            return Err(CdrError::BoundExceeded {
                bound,
                length: n as u64,
            });
        }
        T::decode_vec(self, n)
    }

    /// Reads an encapsulation and returns a reader over its content: byte
    /// order from its first octet, alignment restarting at that octet,
    /// same version and code sets. The outer reader moves past it.
    pub fn read_encapsulation(&mut self) -> Result<CdrReader<'a>, CdrError> {
        let offset = self.position();
        let bytes = self.read_octet_seq()?;
        CdrReader::encapsulation(bytes, self.version, offset)
            .map(|r| r.with_codesets(self.codesets).with_depth(self.depth))
    }

    /// A reader over the content of an encapsulation held in `bytes` (for
    /// example a tagged component's body). An empty encapsulation is an
    /// error: it cannot even hold its byte-order octet.
    pub fn encapsulation(
        bytes: &'a [u8],
        version: GiopVersion,
        offset: usize,
    ) -> Result<CdrReader<'a>, CdrError> {
        let Some(&flag) = bytes.first() else {
            return Err(CdrError::Invalid {
                offset,
                what: "empty encapsulation",
            });
        };
        if flag > 1 {
            return Err(CdrError::Invalid {
                offset,
                what: "encapsulation byte order octet is neither 0 nor 1",
            });
        }
        Ok(CdrReader::new(bytes, ByteOrder::from_flag(flag), version).with_position(1))
    }

    fn with_depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// Runs `f` one nesting level deeper, failing with
    /// [`CdrError::TooDeep`] past [`MAX_DEPTH`].
    pub fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, CdrError>,
    ) -> Result<T, CdrError> {
        if self.depth >= MAX_DEPTH {
            return Err(CdrError::TooDeep {
                offset: self.position(),
            });
        }
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        out
    }

    /// The current nesting depth.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Decodes any [`CdrDecode`] value.
    pub fn read<T: CdrDecode>(&mut self) -> Result<T, CdrError> {
        T::decode(self)
    }
}
