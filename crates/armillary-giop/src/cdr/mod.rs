//! CDR, the Common Data Representation: how every IDL type is laid out in a
//! GIOP message or an encapsulation.
//!
//! [`CdrWriter`] appends values to a growing buffer and [`CdrReader`] takes
//! them off a borrowed one; both know the stream's byte order, GIOP version
//! (which changes how `wchar`/`wstring` look) and negotiated [`CodeSets`].
//! Alignment is measured from an *alignment base*: for a GIOP message that is
//! the first byte of the 12-byte header, for an encapsulation the byte-order
//! octet that starts it. Types that know their own layout implement
//! [`CdrEncode`] and [`CdrDecode`]; generated code uses the same traits.
//!
//! Not here: message headers (see [`crate::giop`]) and TypeCode-driven
//! decoding of `any` (see [`crate::any`]).

pub mod codeset;
mod fixed;
pub mod fragments;
mod long_double;
mod read;
mod spliced;
mod write;

pub use codeset::{CharCodeSet, CodeSets, WCharCodeSet};
pub use fixed::{Fixed, FixedError};
pub use fragments::BlockLayout;
pub use long_double::LongDouble;
pub use read::{CdrReader, SHARED_OCTETS_MIN};
pub use spliced::SplicedBytes;
pub use write::CdrWriter;

use crate::version::GiopVersion;

/// Why a value could not be encoded or decoded. Offsets are stream offsets:
/// counted from the alignment base (the start of the GIOP message, or of the
/// encapsulation being read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CdrError {
    /// The input ended before a value was complete.
    #[error("input ends at offset {offset}: {needed} more bytes needed, {remaining} left")]
    UnexpectedEnd {
        /// Where the value started.
        offset: usize,
        /// How many bytes the value needed.
        needed: usize,
        /// How many were left.
        remaining: usize,
    },
    /// A length (of a string, sequence or encapsulation) is larger than the
    /// rest of the input could hold.
    #[error("length {length} at offset {offset} exceeds the {remaining} bytes left")]
    LengthTooLarge {
        /// Where the length was read.
        offset: usize,
        /// The length as read.
        length: u64,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A boolean octet other than 0 or 1.
    #[error("invalid boolean {value:#04x} at offset {offset}")]
    InvalidBoolean {
        /// Where it was read.
        offset: usize,
        /// The octet.
        value: u8,
    },
    /// A string whose length is zero or whose last octet is not NUL.
    #[error("string at offset {offset} is not NUL-terminated")]
    StringNotTerminated {
        /// Where the string started.
        offset: usize,
    },
    /// Text that is not valid in the transmission code set (bad UTF-8, a
    /// lone surrogate, an odd byte count in UTF-16 data, ...).
    #[error("invalid {code_set} data at offset {offset}")]
    InvalidText {
        /// Where the value started.
        offset: usize,
        /// The code set it should have been in.
        code_set: &'static str,
    },
    /// A character that the transmission code set cannot carry
    /// (DATA_CONVERSION).
    #[error("character {ch:?} cannot be sent in {code_set}")]
    NotRepresentable {
        /// The character.
        ch: char,
        /// The transmission code set.
        code_set: &'static str,
    },
    /// A `wchar` or `wstring` on a stream without a negotiated wchar code set
    /// (always so in GIOP 1.0).
    #[error("no wchar code set was negotiated on this GIOP {version} stream")]
    WCharCodeSetUnknown {
        /// The stream's GIOP version.
        version: GiopVersion,
    },
    /// A code set this crate cannot encode.
    #[error("unsupported code set {0:#010x}")]
    UnsupportedCodeSet(u32),
    /// A `fixed` value that does not fit its digits or is badly encoded.
    #[error("fixed-point value at offset {offset}: {source}")]
    InvalidFixed {
        /// Where the value started.
        offset: usize,
        /// What is wrong with it.
        source: FixedError,
    },
    /// An enum value outside the enum's members.
    #[error(
        "enum value {value} at offset {offset} is out of range (the enum has {count} members)"
    )]
    InvalidEnum {
        /// Where it was read.
        offset: usize,
        /// The value.
        value: u32,
        /// How many members the enum has.
        count: u32,
    },
    /// A bounded string or sequence longer than its bound.
    #[error("length {length} exceeds the bound {bound}")]
    BoundExceeded {
        /// The bound.
        bound: u32,
        /// The actual length.
        length: u64,
    },
    /// A value nested deeper than [`MAX_DEPTH`] levels (a hostile TypeCode,
    /// Any or recursive struct).
    #[error("value nested deeper than {MAX_DEPTH} levels at offset {offset}")]
    TooDeep {
        /// Where the limit was hit.
        offset: usize,
    },
    /// Any other structurally invalid value; `what` names the rule broken.
    #[error("invalid value at offset {offset}: {what}")]
    Invalid {
        /// Where it was read.
        offset: usize,
        /// The rule broken, e.g. "unknown TypeCode kind".
        what: &'static str,
    },
    /// A length or count that does not fit in the 32 bits CDR gives it.
    #[error("length {0} does not fit in a CDR unsigned long")]
    TooLong(usize),
    /// A GIOP 1.1 fragment boundary inside a single value, which no sender
    /// writes (the spec forbids it).
    #[error("a GIOP 1.1 fragment boundary splits the value at offset {offset}")]
    SplitByFragment {
        /// Where the value starts.
        offset: usize,
    },
    /// A block of 8-byte values (a sequence or array) that a GIOP 1.1
    /// fragment boundary cuts, which omniORB's C++ library and omniORBpy
    /// lay out differently, and which the message as a whole does not
    /// tell apart (see [`fragments`]).
    #[error(
        "the block of values at offset {offset} crosses a GIOP 1.1 fragment boundary, \
         and its layout cannot be told for certain"
    )]
    AmbiguousFragment {
        /// Where the block starts.
        offset: usize,
    },
}

/// The deepest nesting a reader accepts (TypeCodes within TypeCodes, Anys
/// within Anys, ...), so that hostile input cannot exhaust the stack.
pub const MAX_DEPTH: u32 = 64;

/// A type that knows how to put itself into a CDR stream.
pub trait CdrEncode {
    /// Appends `self` to `w`, aligning as CDR requires.
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError>;

    /// Appends every item of a slice (the body of a sequence or array).
    /// Primitive types override this to copy in bulk.
    fn encode_slice(items: &[Self], w: &mut CdrWriter) -> Result<(), CdrError>
    where
        Self: Sized,
    {
        items.iter().try_for_each(|item| item.encode(w))
    }
}

/// A type that knows how to read itself from a CDR stream.
pub trait CdrDecode: Sized {
    /// The fewest bytes one value takes on the wire; bounds what a hostile
    /// sequence length can make a reader allocate.
    const MIN_SIZE: usize = 1;

    /// Reads one value.
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError>;

    /// Reads `n` values (the body of a sequence or array). Primitive types
    /// override this to copy in bulk.
    fn decode_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        let mut items = Vec::with_capacity(r.capacity_hint(n, Self::MIN_SIZE));
        for _ in 0..n {
            items.push(Self::decode(r)?);
        }
        Ok(items)
    }
}

macro_rules! primitive {
    ($ty:ty, $size:expr, $write:ident, $read:ident) => {
        impl CdrEncode for $ty {
            fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
                w.$write(*self);
                Ok(())
            }

            fn encode_slice(items: &[Self], w: &mut CdrWriter) -> Result<(), CdrError> {
                // CDR aligns a value only when one is written: an empty
                // sequence is its length and nothing more.
                if items.is_empty() {
                    return Ok(());
                }
                w.align($size);
                w.reserve(items.len() * $size);
                for item in items {
                    w.$write(*item);
                }
                Ok(())
            }
        }

        impl CdrDecode for $ty {
            const MIN_SIZE: usize = $size;

            fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
                r.$read()
            }

            fn decode_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
                // The values are copied in bulk; across GIOP 1.1 fragment
                // boundaries the block may come in several runs (see
                // `fragments`). An empty sequence is its length alone.
                let block = r.read_block(n, $size)?;
                let order = r.byte_order();
                let mut items = Vec::with_capacity(n);
                for part in block.parts() {
                    items.extend(part.chunks_exact($size).map(|c| {
                        let a = c.try_into().unwrap_or([0; $size]);
                        match order {
                            crate::ByteOrder::Big => <$ty>::from_be_bytes(a),
                            crate::ByteOrder::Little => <$ty>::from_le_bytes(a),
                        }
                    }));
                }
                Ok(items)
            }
        }
    };
}

primitive!(i16, 2, write_short, read_short);
primitive!(u16, 2, write_ushort, read_ushort);
primitive!(i32, 4, write_long, read_long);
primitive!(u32, 4, write_ulong, read_ulong);
primitive!(i64, 8, write_longlong, read_longlong);
primitive!(u64, 8, write_ulonglong, read_ulonglong);
primitive!(f32, 4, write_float, read_float);
primitive!(f64, 8, write_double, read_double);

impl CdrEncode for u8 {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_octet(*self);
        Ok(())
    }

    fn encode_slice(items: &[Self], w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_octets(items);
        Ok(())
    }
}

impl CdrDecode for u8 {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_octet()
    }

    fn decode_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        Ok(r.read_octets(n)?.to_vec())
    }
}

impl CdrEncode for bool {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_bool(*self);
        Ok(())
    }
}

impl CdrDecode for bool {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_bool()
    }
}

/// IDL `char`: one octet in the char transmission code set. (IDL `wchar`
/// also maps to Rust `char`; generated code calls
/// [`CdrWriter::write_wchar`] for it explicitly.)
impl CdrEncode for char {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_char(*self)
    }
}

impl CdrDecode for char {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_char()
    }
}

/// IDL `string` (narrow). IDL `wstring` also maps to Rust `String`;
/// generated code calls [`CdrWriter::write_wstring`] for it explicitly.
impl CdrEncode for String {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_string(self)
    }
}

impl CdrEncode for str {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_string(self)
    }
}

impl CdrDecode for String {
    const MIN_SIZE: usize = 5;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_string()
    }
}

/// An unbounded IDL `sequence<T>`.
impl<T: CdrEncode> CdrEncode for Vec<T> {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_len(self.len())?;
        T::encode_slice(self, w)
    }
}

/// An unbounded IDL `sequence<T>`.
impl<T: CdrEncode> CdrEncode for [T] {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_len(self.len())?;
        T::encode_slice(self, w)
    }
}

impl<T: CdrDecode> CdrDecode for Vec<T> {
    const MIN_SIZE: usize = 4;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let n = r.read_seq_len(T::MIN_SIZE)?;
        T::decode_vec(r, n)
    }
}

/// An unbounded IDL `sequence<octet>` held as [`bytes::Bytes`] (the IDL
/// compiler's `Builder::octet_sequences_as_bytes` mapping): decoded as a
/// slice of the received message where the reader knows its buffer (see
/// [`CdrReader::read_octet_seq_shared`]), and encoded spliced into a
/// message rather than copied where the writer splices (see
/// [`CdrWriter::write_octet_seq_shared`]).
impl CdrEncode for bytes::Bytes {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_octet_seq_shared(self)
    }
}

impl CdrDecode for bytes::Bytes {
    const MIN_SIZE: usize = 4;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_octet_seq_shared()
    }
}

/// An IDL array: no length on the wire.
impl<T: CdrEncode, const N: usize> CdrEncode for [T; N] {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        T::encode_slice(self, w)
    }
}

impl<T: CdrDecode, const N: usize> CdrDecode for [T; N] {
    const MIN_SIZE: usize = T::MIN_SIZE * N;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let items = T::decode_vec(r, N)?;
        items.try_into().map_err(|_| CdrError::Invalid {
            offset: r.position(),
            what: "array length",
        })
    }
}

impl<T: CdrEncode + ?Sized> CdrEncode for Box<T> {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        (**self).encode(w)
    }
}

impl<T: CdrDecode> CdrDecode for Box<T> {
    const MIN_SIZE: usize = T::MIN_SIZE;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.nested(|r| T::decode(r)).map(Box::new)
    }
}

impl<T: CdrEncode + ?Sized> CdrEncode for &T {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        (**self).encode(w)
    }
}

impl CdrEncode for LongDouble {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_long_double(*self);
        Ok(())
    }
}

impl CdrDecode for LongDouble {
    const MIN_SIZE: usize = 16;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_long_double()
    }

    fn decode_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        let block = r.read_block(n, 16)?;
        let order = r.byte_order();
        let mut items = Vec::with_capacity(n);
        for part in block.parts() {
            items.extend(part.chunks_exact(16).map(|c| {
                let a: [u8; 16] = c.try_into().unwrap_or([0; 16]);
                match order {
                    crate::ByteOrder::Big => LongDouble::from_be_bytes(a),
                    crate::ByteOrder::Little => LongDouble::from_le_bytes(a),
                }
            }));
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests;
