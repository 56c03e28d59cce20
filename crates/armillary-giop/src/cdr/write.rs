//! [`CdrWriter`]: appends CDR-encoded values to a growing buffer.

use bytes::Bytes;

use super::codeset::{CharCodeSet, CodeSets, WCharCodeSet};
use super::spliced::{Splice, SplicedBytes};
use super::{CdrEncode, CdrError, Fixed, LongDouble};
use crate::typecode::DefaultLabelForm;
use crate::version::{ByteOrder, GiopVersion};

/// Encodes values into a buffer in one byte order, for one GIOP version and
/// one set of transmission code sets.
///
/// ```
/// use armillary_giop::{ByteOrder, CdrReader, CdrWriter, GiopVersion};
///
/// let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
/// w.write_octet(7);
/// w.write_long(-2); // aligned to 4: three padding octets first
/// assert_eq!(w.as_bytes(), &[7, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe]);
///
/// let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2);
/// assert_eq!(r.read_octet().unwrap(), 7);
/// assert_eq!(r.read_long().unwrap(), -2);
/// ```
#[derive(Debug, Clone)]
pub struct CdrWriter {
    buf: Vec<u8>,
    /// Byte strings standing in the output between bytes of `buf` (see
    /// [`with_splicing`](Self::with_splicing)), in order.
    splices: Vec<Splice>,
    /// Their length together: the output is `buf.len() + spliced_len`
    /// bytes long.
    spliced_len: usize,
    /// The length from which a shared octet sequence is spliced in rather
    /// than copied; `None`: never.
    splice_min: Option<usize>,
    /// Stream offset of the output's first byte: alignment is computed on
    /// `align_base + len()`.
    align_base: usize,
    order: ByteOrder,
    version: GiopVersion,
    codesets: CodeSets,
    /// How the TypeCodes written here label a union's default member.
    default_label: DefaultLabelForm,
}

impl CdrWriter {
    /// An empty writer whose first byte is at stream offset 0.
    pub fn new(order: ByteOrder, version: GiopVersion) -> Self {
        CdrWriter {
            buf: Vec::new(),
            splices: Vec::new(),
            spliced_len: 0,
            splice_min: None,
            align_base: 0,
            order,
            version,
            codesets: CodeSets::DEFAULT,
            default_label: DefaultLabelForm::ZeroOctet,
        }
    }

    /// An empty writer with room for `capacity` bytes before it allocates
    /// again (a message's writer, so that its header and small body take
    /// one allocation, not one for each time the buffer doubles).
    pub fn with_capacity(order: ByteOrder, version: GiopVersion, capacity: usize) -> Self {
        Self::from_vec(Vec::with_capacity(capacity), order, version)
    }

    /// A writer that appends to `buf`, whose first byte is at stream offset
    /// 0 (so a message header already in `buf` counts for alignment).
    pub fn from_vec(buf: Vec<u8>, order: ByteOrder, version: GiopVersion) -> Self {
        CdrWriter {
            buf,
            ..Self::new(order, version)
        }
    }

    /// Sets the stream offset of the writer's first byte (for a body written
    /// apart from the header that will precede it).
    pub fn with_align_base(mut self, base: usize) -> Self {
        self.align_base = base;
        self
    }

    /// Lets [`write_octet_seq_shared`](Self::write_octet_seq_shared) splice
    /// a byte string of `min_len` bytes or more into the output rather
    /// than copy it: the output is then taken whole with
    /// [`into_spliced`](Self::into_spliced), and written to a socket piece
    /// by piece (a vectored write), the byte string from where it lies.
    /// A writer copies unless told so (the ORB's requests and replies
    /// splice, from [`SHARED_OCTETS_MIN`](super::SHARED_OCTETS_MIN)).
    ///
    /// A splicing writer's [`as_bytes`](Self::as_bytes) is its own buffer
    /// only: [`flatten`](Self::flatten) it first, or read the output with
    /// [`into_bytes`](Self::into_bytes) or `into_spliced`.
    pub fn with_splicing(mut self, min_len: usize) -> Self {
        self.set_splicing(Some(min_len));
        self
    }

    /// Turns splicing on from `min_len` bytes (see
    /// [`with_splicing`](Self::with_splicing)), or off (`None`: what
    /// follows is copied; what was spliced stays).
    pub fn set_splicing(&mut self, min_len: Option<usize>) {
        self.splice_min = min_len;
    }

    /// Sets the transmission code sets.
    pub fn with_codesets(mut self, codesets: CodeSets) -> Self {
        self.codesets = codesets;
        self
    }

    /// Changes the transmission code sets mid-stream.
    pub fn set_codesets(&mut self, codesets: CodeSets) {
        self.codesets = codesets;
    }

    /// Sets how the TypeCodes written label a union's default member (the
    /// zero octet unless set; see [`DefaultLabelForm`] for which ORB reads
    /// which).
    pub fn with_default_label(mut self, form: DefaultLabelForm) -> Self {
        self.default_label = form;
        self
    }

    /// Changes how the TypeCodes written from now on label a union's
    /// default member (for the receiver of one message).
    pub fn set_default_label(&mut self, form: DefaultLabelForm) {
        self.default_label = form;
    }

    /// How the TypeCodes written label a union's default member.
    pub fn default_label(&self) -> DefaultLabelForm {
        self.default_label
    }

    /// The byte order being written.
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

    /// The stream offset of the next byte.
    pub fn position(&self) -> usize {
        self.align_base + self.len()
    }

    /// Bytes written so far (spliced byte strings counted).
    pub fn len(&self) -> usize {
        self.buf.len() + self.spliced_len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes written so far. A splicing writer (see
    /// [`with_splicing`](Self::with_splicing)) that spliced a byte string
    /// in must be [`flatten`](Self::flatten)ed first: here it has only its
    /// own buffer.
    pub fn as_bytes(&self) -> &[u8] {
        debug_assert!(
            self.splices.is_empty(),
            "as_bytes of a writer with byte strings spliced in: flatten it first"
        );
        &self.buf
    }

    /// The bytes written so far, mutable (to patch a length or header);
    /// spliced byte strings are copied in first.
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        self.flatten();
        &mut self.buf
    }

    /// Copies the byte strings spliced in into the writer's own buffer, so
    /// that [`as_bytes`](Self::as_bytes) is the whole output (it splices
    /// no more from then on).
    pub fn flatten(&mut self) {
        self.splice_min = None;
        if self.splices.is_empty() {
            return;
        }
        let spliced = self.take_spliced();
        self.buf = spliced.into_vec();
    }

    /// Gives up the output in one buffer (spliced byte strings copied in).
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.take_spliced().into_vec()
    }

    /// Gives up the output as written: its own buffer and the byte strings
    /// spliced in.
    pub fn into_spliced(mut self) -> SplicedBytes {
        self.take_spliced()
    }

    fn take_spliced(&mut self) -> SplicedBytes {
        let spliced_len = std::mem::take(&mut self.spliced_len);
        SplicedBytes::new(
            std::mem::take(&mut self.buf),
            std::mem::take(&mut self.splices),
            spliced_len,
        )
    }

    /// Drops everything after the first `len` bytes (to rewrite a reply body).
    pub fn truncate(&mut self, len: usize) {
        // Byte strings spliced in at or past `len` go; one across it is cut.
        while let Some(last) = self.splices.last_mut() {
            let before = self.spliced_len - last.bytes.len();
            let start = last.at + before;
            if start >= len {
                self.spliced_len = before;
                self.splices.pop();
                continue;
            }
            if start + last.bytes.len() > len {
                last.bytes.truncate(len - start);
                self.spliced_len = before + last.bytes.len();
            }
            break;
        }
        self.buf.truncate(len.saturating_sub(self.spliced_len));
    }

    /// Makes room for `additional` more bytes.
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Pads with zero octets up to the next multiple of `n` (a power of two).
    #[inline]
    pub fn align(&mut self, n: usize) {
        let pad = self.padding(n);
        if pad > 0 {
            // A fixed-size copy cut to length, not a `resize` (a call to
            // `memset` for a few octets).
            let end = self.buf.len() + pad;
            self.buf.extend_from_slice(&[0; 8]);
            self.buf.truncate(end);
        }
    }

    /// The zero octets [`align`](Self::align) would write for `n`.
    #[inline]
    fn padding(&self, n: usize) -> usize {
        if n.is_power_of_two() {
            // Every CDR alignment (1, 2, 4, 8): a mask, not a division.
            self.position().wrapping_neg() & (n - 1)
        } else {
            (n - self.position() % n) % n
        }
    }

    /// Writes one octet.
    #[inline]
    pub fn write_octet(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Writes raw octets with no length and no alignment.
    #[inline]
    pub fn write_octets(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes a `sequence<octet>`: a length, then the bytes in one copy.
    pub fn write_octet_seq(&mut self, bytes: &[u8]) -> Result<(), CdrError> {
        self.write_len(bytes.len())?;
        self.write_octets(bytes);
        Ok(())
    }

    /// Writes a `sequence<octet>` held in a shared buffer: a length, then
    /// the bytes, spliced in without a copy when the writer splices (see
    /// [`with_splicing`](Self::with_splicing)) and there are enough of
    /// them; else copied, as [`write_octet_seq`](Self::write_octet_seq).
    pub fn write_octet_seq_shared(&mut self, bytes: &Bytes) -> Result<(), CdrError> {
        self.write_len(bytes.len())?;
        match self.splice_min {
            Some(min) if bytes.len() >= min => {
                self.spliced_len += bytes.len();
                self.splices.push(Splice {
                    at: self.buf.len(),
                    bytes: bytes.clone(),
                });
            }
            _ => self.write_octets(bytes),
        }
        Ok(())
    }

    /// Writes a bounded `sequence<octet, bound>` held in a shared buffer
    /// (see [`write_octet_seq_shared`](Self::write_octet_seq_shared)).
    pub fn write_bounded_octet_seq_shared(
        &mut self,
        bytes: &Bytes,
        bound: u32,
    ) -> Result<(), CdrError> {
        within_bound(bytes.len() as u64, bound)?;
        self.write_octet_seq_shared(bytes)
    }

    /// Writes a boolean as octet 0 or 1.
    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    #[inline]
    fn put<const N: usize>(&mut self, be: [u8; N], le: [u8; N]) {
        let value = match self.order {
            ByteOrder::Big => be,
            ByteOrder::Little => le,
        };
        if N == 1 {
            self.buf.push(value[0]);
            return;
        }
        // The padding's zeros and the value in one fixed-size copy, cut to
        // length (N ≤ 8, so padding and value take at most 15 octets).
        let pad = self.padding(N);
        let mut chunk = [0u8; 16];
        chunk[pad..pad + N].copy_from_slice(&value);
        let end = self.buf.len() + pad + N;
        self.buf.extend_from_slice(&chunk);
        self.buf.truncate(end);
    }

    /// Writes a `short`.
    #[inline]
    pub fn write_short(&mut self, v: i16) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes an `unsigned short`.
    #[inline]
    pub fn write_ushort(&mut self, v: u16) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes a `long`.
    #[inline]
    pub fn write_long(&mut self, v: i32) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes an `unsigned long`.
    #[inline]
    pub fn write_ulong(&mut self, v: u32) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes a `long long`.
    #[inline]
    pub fn write_longlong(&mut self, v: i64) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes an `unsigned long long`.
    #[inline]
    pub fn write_ulonglong(&mut self, v: u64) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes a `float`.
    #[inline]
    pub fn write_float(&mut self, v: f32) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes a `double`.
    #[inline]
    pub fn write_double(&mut self, v: f64) {
        self.put(v.to_be_bytes(), v.to_le_bytes());
    }

    /// Writes a `long double` (16 octets, aligned to 8).
    pub fn write_long_double(&mut self, v: LongDouble) {
        self.align(8);
        match self.order {
            ByteOrder::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
            ByteOrder::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
        }
    }

    /// Writes a sequence or string length, which must fit in 32 bits.
    pub fn write_len(&mut self, len: usize) -> Result<(), CdrError> {
        let len = u32::try_from(len).map_err(|_| CdrError::TooLong(len))?;
        self.write_ulong(len);
        Ok(())
    }

    /// Writes a `fixed<digits, scale>` as packed decimal; `v` is rescaled to
    /// `scale` and must fit in `digits`.
    pub fn write_fixed(&mut self, v: &Fixed, digits: u16, scale: u16) -> Result<(), CdrError> {
        let offset = self.position();
        let bytes = v
            .to_cdr(digits, scale)
            .map_err(|source| CdrError::InvalidFixed { offset, source })?;
        self.write_octets(&bytes);
        Ok(())
    }

    /// Writes an IDL `char` in the char transmission code set.
    pub fn write_char(&mut self, c: char) -> Result<(), CdrError> {
        let limit = match self.codesets.char_set {
            CharCodeSet::Iso8859_1 => 0xff,
            CharCodeSet::Utf8 => 0x7f,
        };
        let code = u32::from(c);
        if code > limit {
            return Err(CdrError::NotRepresentable {
                ch: c,
                code_set: char_set_name(self.codesets.char_set),
            });
        }
        self.buf.push(code as u8);
        Ok(())
    }

    /// Writes an IDL `string`: length including the NUL, the bytes, the NUL.
    pub fn write_string(&mut self, s: &str) -> Result<(), CdrError> {
        match self.codesets.char_set {
            CharCodeSet::Utf8 => {
                self.write_len(s.len() + 1)?;
                self.buf.extend_from_slice(s.as_bytes());
            }
            CharCodeSet::Iso8859_1 => {
                if s.is_ascii() {
                    self.write_len(s.len() + 1)?;
                    self.buf.extend_from_slice(s.as_bytes());
                } else {
                    let n = s.chars().count();
                    self.write_len(n + 1)?;
                    self.buf.reserve(n + 1);
                    for c in s.chars() {
                        let code = u32::from(c);
                        if code > 0xff {
                            return Err(CdrError::NotRepresentable {
                                ch: c,
                                code_set: "ISO 8859-1",
                            });
                        }
                        self.buf.push(code as u8);
                    }
                }
            }
        }
        self.buf.push(0);
        Ok(())
    }

    /// Writes a `string<bound>`, checking the bound (in characters) first.
    pub fn write_bounded_string(&mut self, s: &str, bound: u32) -> Result<(), CdrError> {
        within_bound(s.chars().count() as u64, bound)?;
        self.write_string(s)
    }

    fn wchar_set(&self) -> Result<WCharCodeSet, CdrError> {
        match self.codesets.wchar_set {
            Some(set) if self.version >= GiopVersion::V1_1 => Ok(set),
            _ => Err(CdrError::WCharCodeSetUnknown {
                version: self.version,
            }),
        }
    }

    fn put_u16_units(&mut self, units: &[u16], order: ByteOrder) {
        self.buf.reserve(units.len() * 2);
        for u in units {
            match order {
                ByteOrder::Big => self.buf.extend_from_slice(&u.to_be_bytes()),
                ByteOrder::Little => self.buf.extend_from_slice(&u.to_le_bytes()),
            }
        }
    }

    /// Writes an IDL `wchar`: in GIOP 1.1 one aligned UTF-16 code unit; in
    /// GIOP 1.2 an octet count and the code unit (with a BOM if the code sets
    /// say so). A character outside the BMP cannot be one `wchar`.
    pub fn write_wchar(&mut self, c: char) -> Result<(), CdrError> {
        let set = self.wchar_set()?;
        let mut units = [0u16; 2];
        let units = c.encode_utf16(&mut units);
        if units.len() != 1 {
            return Err(CdrError::NotRepresentable {
                ch: c,
                code_set: wchar_set_name(set),
            });
        }
        if self.version == GiopVersion::V1_1 {
            self.write_ushort(units[0]);
        } else if self.codesets.write_bom || looks_like_bom(units) {
            self.write_octet(4);
            self.put_u16_units(&[0xfeff], self.order);
            self.put_u16_units(units, self.order);
        } else {
            self.write_octet(2);
            self.put_u16_units(units, ByteOrder::Big);
        }
        Ok(())
    }

    /// Writes an IDL `wstring`: in GIOP 1.1 a count of code units including
    /// a terminating NUL unit; in GIOP 1.2 a count of octets, an optional BOM
    /// and the code units with no terminator.
    pub fn write_wstring(&mut self, s: &str) -> Result<(), CdrError> {
        let set = self.wchar_set()?;
        let units: Vec<u16> = s.encode_utf16().collect();
        if set == WCharCodeSet::Ucs2 {
            if let Some(c) = s.chars().find(|c| u32::from(*c) > 0xffff) {
                return Err(CdrError::NotRepresentable {
                    ch: c,
                    code_set: wchar_set_name(set),
                });
            }
        }
        if self.version == GiopVersion::V1_1 {
            self.write_len(units.len() + 1)?;
            let order = self.order;
            self.put_u16_units(&units, order);
            self.put_u16_units(&[0], order);
        } else if units.is_empty() {
            self.write_ulong(0);
        } else if self.codesets.write_bom || looks_like_bom(&units) {
            self.write_len(units.len() * 2 + 2)?;
            let order = self.order;
            self.put_u16_units(&[0xfeff], order);
            self.put_u16_units(&units, order);
        } else {
            self.write_len(units.len() * 2)?;
            self.put_u16_units(&units, ByteOrder::Big);
        }
        Ok(())
    }

    /// Writes a `wstring<bound>`, checking the bound (in characters) first.
    pub fn write_bounded_wstring(&mut self, s: &str, bound: u32) -> Result<(), CdrError> {
        within_bound(s.chars().count() as u64, bound)?;
        self.write_wstring(s)
    }

    /// Writes a sequence whose elements need a custom encoder (for example
    /// `sequence<wstring>`).
    pub fn write_seq_with<T>(
        &mut self,
        items: &[T],
        mut f: impl FnMut(&mut CdrWriter, &T) -> Result<(), CdrError>,
    ) -> Result<(), CdrError> {
        self.write_len(items.len())?;
        items.iter().try_for_each(|item| f(self, item))
    }

    /// Writes a bounded `sequence<T, bound>`.
    pub fn write_bounded_seq<T: CdrEncode>(
        &mut self,
        items: &[T],
        bound: u32,
    ) -> Result<(), CdrError> {
        within_bound(items.len() as u64, bound)?;
        items.encode(self)
    }

    /// Writes an encapsulation: a `sequence<octet>` whose content is written
    /// by `body` into a fresh stream in this writer's byte order (and code
    /// sets and default-label form), starting with the byte-order octet,
    /// with alignment restarting at that octet.
    pub fn write_encapsulation(
        &mut self,
        body: impl FnOnce(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<(), CdrError> {
        let mut inner = CdrWriter::new(self.order, self.version)
            .with_codesets(self.codesets)
            .with_default_label(self.default_label);
        inner.write_octet(self.order.flag());
        body(&mut inner)?;
        self.write_octet_seq(&inner.buf)
    }

    /// Reserves an aligned `unsigned long` to be filled in later with
    /// [`patch_ulong`](Self::patch_ulong); returns its offset in the
    /// output.
    pub fn reserve_ulong(&mut self) -> usize {
        self.align(4);
        let at = self.len();
        self.buf.extend_from_slice(&[0; 4]);
        at
    }

    /// Fills in an `unsigned long` reserved earlier (at `at` of the
    /// output, as [`reserve_ulong`](Self::reserve_ulong) said).
    pub fn patch_ulong(&mut self, at: usize, v: u32) {
        let bytes = match self.order {
            ByteOrder::Big => v.to_be_bytes(),
            ByteOrder::Little => v.to_le_bytes(),
        };
        // Where `at` lies in the own buffer: past the byte strings spliced
        // in before it. (A reserved ulong is always in the own buffer.)
        let mut before = 0;
        for splice in &self.splices {
            if splice.at + before >= at {
                break;
            }
            before += splice.bytes.len();
        }
        let own_at = at.saturating_sub(before);
        if let Some(slot) = self.buf.get_mut(own_at..own_at + 4) {
            slot.copy_from_slice(&bytes);
        }
    }

    /// Encodes any [`CdrEncode`] value.
    pub fn write<T: CdrEncode + ?Sized>(&mut self, v: &T) -> Result<(), CdrError> {
        v.encode(self)
    }
}

/// BoundExceeded when a bounded string or sequence of `length` elements
/// would pass its `bound`.
fn within_bound(length: u64, bound: u32) -> Result<(), CdrError> {
    if length > u64::from(bound) {
        return Err(CdrError::BoundExceeded { bound, length });
    }
    Ok(())
}

pub(crate) fn char_set_name(set: CharCodeSet) -> &'static str {
    match set {
        CharCodeSet::Iso8859_1 => "ISO 8859-1",
        CharCodeSet::Utf8 => "UTF-8",
    }
}

pub(crate) fn wchar_set_name(set: WCharCodeSet) -> &'static str {
    match set {
        WCharCodeSet::Utf16 => "UTF-16",
        WCharCodeSet::Ucs2 => "UCS-2",
    }
}

/// Whether GIOP 1.2 UTF-16 text starting with `units` would be read as
/// starting with a byte order mark (U+FEFF, or U+FFFE swapped) if written
/// without one; such text gets a mark, so that its first character stays
/// a character.
fn looks_like_bom(units: &[u16]) -> bool {
    matches!(units.first(), Some(0xfeff | 0xfffe))
}
