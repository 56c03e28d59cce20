//! `any`: a value together with the TypeCode that describes it.
//!
//! [`DynValue`] is a dynamic value tree for every IDL type; encoding and
//! decoding are driven by the TypeCode, bounded in depth, and check every
//! length against the bytes that remain. Generated code converts its typed
//! values to and from `Any` through [`AnyValue`].

use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, Fixed, LongDouble};
use crate::ior::Ior;
use crate::typecode::{read_label, write_label, TCKind, TypeCode};
use crate::version::{ByteOrder, GiopVersion};

/// A dynamic IDL value.
#[derive(Debug, Clone, PartialEq)]
pub enum DynValue {
    /// `tk_null`, `tk_void`, or a null valuetype.
    Null,
    /// `short`.
    Short(i16),
    /// `long`.
    Long(i32),
    /// `unsigned short`.
    UShort(u16),
    /// `unsigned long`.
    ULong(u32),
    /// `long long`.
    LongLong(i64),
    /// `unsigned long long`.
    ULongLong(u64),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `long double`.
    LongDouble(LongDouble),
    /// `boolean`.
    Boolean(bool),
    /// `char`.
    Char(char),
    /// `wchar`.
    WChar(char),
    /// `octet`.
    Octet(u8),
    /// `string`.
    String(String),
    /// `wstring`.
    WString(String),
    /// `fixed`.
    Fixed(Fixed),
    /// A nested `any`.
    Any(Box<Any>),
    /// A TypeCode.
    TypeCode(TypeCode),
    /// `Principal` (deprecated): its octets.
    Principal(Vec<u8>),
    /// An object reference.
    ObjRef(Ior),
    /// The members of a struct or exception, in order.
    Struct(Vec<DynValue>),
    /// A union: the discriminator value and the selected member (index and
    /// value), if any.
    Union {
        /// The discriminator.
        discriminator: Box<DynValue>,
        /// The active member.
        member: Option<(usize, Box<DynValue>)>,
    },
    /// An enum member index.
    Enum(u32),
    /// A sequence or array of octets, compactly.
    Octets(Vec<u8>),
    /// A sequence or array of anything else.
    Sequence(Vec<DynValue>),
}

/// A value with its TypeCode (`CORBA::Any`).
///
/// Build one with [`Any::new`], [`Any::from_cdr_value`], `Any::from(v)`
/// for primitives and strings, [`Any::wstring`], [`Any::nested`], or a
/// generated type's `to_any`.
#[derive(Debug, Clone)]
pub struct Any {
    /// What the value is.
    pub type_code: TypeCode,
    /// The value.
    pub value: DynValue,
    /// Who received the `any`, when it was decoded from a message.
    origin: Option<Origin>,
}

impl PartialEq for Any {
    /// Equal TypeCodes and values; where the `any` came from does not
    /// count.
    fn eq(&self, other: &Self) -> bool {
        self.type_code == other.type_code && self.value == other.value
    }
}

/// The receiver of a message being decoded: an opaque token that the ORB
/// installs on the decoding thread with [`Origin::enter`]. An `any`
/// decoded meanwhile keeps it, and re-installs it while a typed value is
/// taken out of it ([`Any::to_cdr_value`], [`Any::read_with`]), so that
/// object references inside bind to the ORB that received the `any`, not
/// to whichever ORB is the default, however much later they are taken
/// out.
#[derive(Clone)]
pub struct Origin(std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Origin(..)")
    }
}

thread_local! {
    static DECODING_ORIGIN: std::cell::RefCell<Option<Origin>> =
        const { std::cell::RefCell::new(None) };
}

/// Restores the previous origin of the thread when dropped.
#[derive(Debug)]
#[must_use = "the origin is uninstalled when the guard is dropped"]
pub struct OriginGuard(Option<Origin>);

impl Drop for OriginGuard {
    fn drop(&mut self) {
        let outer = self.0.take();
        DECODING_ORIGIN.with(|d| *d.borrow_mut() = outer);
    }
}

impl Origin {
    /// An origin carrying `token` (the ORB's handle on itself).
    pub fn new(token: std::sync::Arc<dyn std::any::Any + Send + Sync>) -> Origin {
        Origin(token)
    }

    /// The token.
    pub fn token(&self) -> &std::sync::Arc<dyn std::any::Any + Send + Sync> {
        &self.0
    }

    /// Installs this origin on the calling thread until the guard is
    /// dropped (nested installs restore the outer one).
    pub fn enter(self) -> OriginGuard {
        OriginGuard(DECODING_ORIGIN.with(|d| d.borrow_mut().replace(self)))
    }

    /// The origin installed on the calling thread, if any.
    pub fn current() -> Option<Origin> {
        DECODING_ORIGIN.with(|d| d.borrow().clone())
    }
}

fn invalid(r_or_w_offset: usize, what: &'static str) -> CdrError {
    CdrError::Invalid {
        offset: r_or_w_offset,
        what,
    }
}

/// [`Any::null`]: an `any` holding nothing.
impl Default for Any {
    fn default() -> Self {
        Any::null()
    }
}

impl Any {
    /// An `any` holding nothing (`tk_null`).
    pub fn null() -> Any {
        Any::unchecked(TypeCode::null(), DynValue::Null)
    }

    /// An `any` of a value known to fit its TypeCode.
    fn unchecked(type_code: TypeCode, value: DynValue) -> Any {
        Any {
            type_code,
            value,
            origin: None,
        }
    }

    /// An `any` holding a `wstring` (`Any::from(String)` holds a
    /// `string`).
    pub fn wstring(s: impl Into<String>) -> Any {
        Any::unchecked(TypeCode::wstring(0), DynValue::WString(s.into()))
    }

    /// An `any` holding another `any` (`tk_any`).
    pub fn nested(any: Any) -> Any {
        Any::unchecked(TypeCode::any(), DynValue::Any(Box::new(any)))
    }

    /// The `wstring` inside, if the `any` holds one (aliases included).
    pub fn to_wstring(&self) -> Option<String> {
        match (&self.value, self.type_code.unalias().kind()) {
            (DynValue::WString(s), TCKind::WString) => Some(s.clone()),
            _ => None,
        }
    }

    /// The `any` inside, if this one holds an `any` (aliases included).
    pub fn to_nested(&self) -> Option<&Any> {
        match (&self.value, self.type_code.unalias().kind()) {
            (DynValue::Any(a), TCKind::Any) => Some(a),
            _ => None,
        }
    }

    /// Who received the `any`, if it was decoded inside an [`Origin`].
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }

    /// Builds an `any`, checking that the value fits the TypeCode by
    /// encoding it. The stored value is in canonical form (octet sequences
    /// and arrays as [`DynValue::Octets`]), as decoding would produce it.
    pub fn new(type_code: TypeCode, value: DynValue) -> Result<Any, CdrError> {
        let value = round_trip(
            |w| encode_value(&type_code, &value, w, &mut Vec::new()),
            |r| decode_value(&type_code, r, &mut Vec::new()),
        )?;
        Ok(Any::unchecked(type_code, value))
    }

    /// Converts a typed value that implements CDR encoding into an `any`
    /// with `type_code`, by encoding it and decoding it again dynamically.
    pub fn from_cdr_value<T: CdrEncode + ?Sized>(
        type_code: TypeCode,
        value: &T,
    ) -> Result<Any, CdrError> {
        Any::from_writer(type_code, |w| value.encode(w))
    }

    /// Builds an `any` with `type_code` from the value that `write`
    /// encodes (what generated code uses for typedefs, whose Rust types
    /// are aliases); fails when the bytes do not fit the TypeCode.
    pub fn from_writer(
        type_code: TypeCode,
        write: impl Fn(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<Any, CdrError> {
        let value = round_trip(write, |r| decode_value(&type_code, r, &mut Vec::new()))?;
        Ok(Any::unchecked(type_code, value))
    }

    /// Converts the `any` into a typed value, if `type_code` is equivalent
    /// to the `any`'s.
    pub fn to_cdr_value<T: CdrDecode>(&self, type_code: &TypeCode) -> Option<T> {
        self.read_with(type_code, T::decode)
    }

    /// Reads the value with `read`, if `type_code` is equivalent to the
    /// `any`'s. While `read` runs, the `any`'s [`Origin`] is installed.
    pub fn read_with<T>(
        &self,
        type_code: &TypeCode,
        read: impl Fn(&mut CdrReader<'_>) -> Result<T, CdrError>,
    ) -> Option<T> {
        if !self.type_code.equivalent(type_code) {
            return None;
        }
        let _origin = self.origin.clone().map(Origin::enter);
        round_trip(
            |w| encode_value(&self.type_code, &self.value, w, &mut Vec::new()),
            read,
        )
        .ok()
    }

    /// Reads a value of type `type_code` (a parameter, result or exception
    /// of a dynamic request or reply) into an `any` that keeps the
    /// [`Origin`] installed on the calling thread, as a decoded `any` does.
    pub fn decode_as(type_code: &TypeCode, r: &mut CdrReader<'_>) -> Result<Any, CdrError> {
        let value = decode_value(type_code, r, &mut Vec::new())?;
        Ok(Any {
            type_code: type_code.clone(),
            value,
            origin: Origin::current(),
        })
    }

    /// Writes the value alone, without its TypeCode (a parameter, result
    /// or exception of a dynamic request or reply).
    pub fn encode_value(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        encode_value(&self.type_code, &self.value, w, &mut Vec::new())
    }

    /// Extracts a value of a type that implements [`AnyValue`].
    pub fn get<T: AnyValue>(&self) -> Option<T> {
        T::from_any(self)
    }
}

impl CdrEncode for Any {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        self.type_code.encode(w)?;
        let mut stack = Vec::new();
        encode_value(&self.type_code, &self.value, w, &mut stack)
    }
}

impl CdrDecode for Any {
    const MIN_SIZE: usize = 4;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.nested(|r| {
            let type_code = TypeCode::decode(r)?;
            let mut stack = Vec::new();
            let value = decode_value(&type_code, r, &mut stack)?;
            Ok(Any {
                type_code,
                value,
                origin: Origin::current(),
            })
        })
    }
}

/// Encodes with `encode` and decodes the bytes again with `decode`, in the
/// native byte order and GIOP 1.2: how values move between their typed and
/// dynamic forms. The native code sets come first; a `char` above U+007F
/// (which a connection in ISO 8859-1, CORBA's default, delivers, but which
/// UTF-8 cannot carry in one octet) is retried in ISO 8859-1.
fn round_trip<T>(
    encode: impl Fn(&mut CdrWriter) -> Result<(), CdrError>,
    decode: impl Fn(&mut CdrReader<'_>) -> Result<T, CdrError>,
) -> Result<T, CdrError> {
    let attempt = |codesets| {
        let order = ByteOrder::NATIVE;
        let mut w = CdrWriter::new(order, GiopVersion::V1_2).with_codesets(codesets);
        encode(&mut w)?;
        let mut r = CdrReader::new(w.as_bytes(), order, GiopVersion::V1_2).with_codesets(codesets);
        decode(&mut r)
    };
    match attempt(crate::CodeSets::NATIVE) {
        Err(CdrError::NotRepresentable { .. }) => attempt(crate::CodeSets {
            char_set: crate::cdr::CharCodeSet::Iso8859_1,
            ..crate::CodeSets::NATIVE
        }),
        other => other,
    }
}

/// Reads a value of type `tc` (the dynamic half of DII and DSI: a request
/// or reply body read from its operation's parameter TypeCodes).
pub fn read_value(tc: &TypeCode, r: &mut CdrReader<'_>) -> Result<DynValue, CdrError> {
    decode_value(tc, r, &mut Vec::new())
}

/// Writes `value` as type `tc`.
pub fn write_value(tc: &TypeCode, value: &DynValue, w: &mut CdrWriter) -> Result<(), CdrError> {
    encode_value(tc, value, w, &mut Vec::new())
}

/// Resolves recursive placeholders against the enclosing types.
fn resolve<'t>(tc: &'t TypeCode, stack: &[&'t TypeCode]) -> Result<&'t TypeCode, CdrError> {
    if tc.is_recursive_placeholder() {
        let id = tc.id().unwrap_or_default();
        return stack
            .iter()
            .rev()
            .find(|t| t.id().ok() == Some(id))
            .copied()
            .ok_or(invalid(0, "recursive TypeCode outside the type it names"));
    }
    Ok(tc)
}

fn decode_value<'t>(
    tc: &'t TypeCode,
    r: &mut CdrReader<'_>,
    stack: &mut Vec<&'t TypeCode>,
) -> Result<DynValue, CdrError> {
    let tc = resolve(tc, stack)?;
    r.nested(|r| {
        use TCKind as K;
        Ok(match tc.kind() {
            K::Null | K::Void => DynValue::Null,
            K::Short => DynValue::Short(r.read_short()?),
            K::Long => DynValue::Long(r.read_long()?),
            K::UShort => DynValue::UShort(r.read_ushort()?),
            K::ULong => DynValue::ULong(r.read_ulong()?),
            K::LongLong => DynValue::LongLong(r.read_longlong()?),
            K::ULongLong => DynValue::ULongLong(r.read_ulonglong()?),
            K::Float => DynValue::Float(r.read_float()?),
            K::Double => DynValue::Double(r.read_double()?),
            K::LongDouble => DynValue::LongDouble(r.read_long_double()?),
            K::Boolean => DynValue::Boolean(r.read_bool()?),
            K::Char => DynValue::Char(r.read_char()?),
            K::WChar => DynValue::WChar(r.read_wchar()?),
            K::Octet => DynValue::Octet(r.read_octet()?),
            K::String => {
                let bound = tc.length().unwrap_or(0);
                DynValue::String(if bound == 0 {
                    r.read_string()?
                } else {
                    r.read_bounded_string(bound)?
                })
            }
            K::WString => {
                let bound = tc.length().unwrap_or(0);
                DynValue::WString(if bound == 0 {
                    r.read_wstring()?
                } else {
                    r.read_bounded_wstring(bound)?
                })
            }
            K::Fixed => {
                let scale = u16::try_from(tc.fixed_scale().unwrap_or(0))
                    .map_err(|_| invalid(r.position(), "negative fixed scale"))?;
                DynValue::Fixed(r.read_fixed(tc.fixed_digits().unwrap_or(0), scale)?)
            }
            K::Any => DynValue::Any(Box::new(Any::decode(r)?)),
            K::TypeCode => DynValue::TypeCode(TypeCode::decode(r)?),
            K::Principal => DynValue::Principal(r.read_octet_seq()?.to_vec()),
            K::ObjRef | K::AbstractInterface => {
                if tc.kind() == K::AbstractInterface && !r.read_bool()? {
                    return Err(invalid(
                        r.position(),
                        "abstract interface holding a value is not supported",
                    ));
                }
                DynValue::ObjRef(Ior::decode(r)?)
            }
            K::Struct | K::Except => {
                if tc.kind() == K::Except {
                    // An exception in an any carries its repository id first.
                    r.read_string()?;
                }
                stack.push(tc);
                let n = tc.member_count().unwrap_or(0);
                let mut members = Vec::with_capacity(r.capacity_hint(n, 1));
                let mut result = Ok(());
                for i in 0..n {
                    match tc.member_type(i) {
                        Ok(m) => match decode_value(m, r, stack) {
                            Ok(v) => members.push(v),
                            Err(e) => {
                                result = Err(e);
                                break;
                            }
                        },
                        Err(_) => break,
                    }
                }
                stack.pop();
                result?;
                DynValue::Struct(members)
            }
            K::Union => {
                let disc_tc = tc
                    .discriminator_type()
                    .map_err(|_| invalid(r.position(), "union"))?;
                let label = read_label(r, disc_tc)?;
                let discriminator = label_value(disc_tc, label);
                let n = tc.member_count().unwrap_or(0);
                let default = tc.default_index().unwrap_or(-1);
                let chosen = (0..n)
                    .find(|&i| i as i32 != default && tc.member_label(i).ok() == Some(label))
                    .or_else(|| (default >= 0).then_some(default as usize));
                let member = match chosen {
                    Some(i) => {
                        stack.push(tc);
                        let m = tc
                            .member_type(i)
                            .map_err(|_| invalid(r.position(), "union member"));
                        let v = m.and_then(|m| decode_value(m, r, stack));
                        stack.pop();
                        Some((i, Box::new(v?)))
                    }
                    None => None,
                };
                DynValue::Union {
                    discriminator: Box::new(discriminator),
                    member,
                }
            }
            K::Enum => {
                let offset = r.position();
                let v = r.read_ulong()?;
                let count = tc.member_count().unwrap_or(0) as u32;
                if v >= count {
                    return Err(CdrError::InvalidEnum {
                        offset,
                        value: v,
                        count,
                    });
                }
                DynValue::Enum(v)
            }
            K::Sequence | K::Array => {
                let elem = tc
                    .content_type()
                    .map_err(|_| invalid(r.position(), "sequence"))?;
                let min = resolve(elem, stack)?.min_wire_size();
                let n = if tc.kind() == K::Sequence {
                    let n = r.read_seq_len(min)?;
                    if min == 0 && n > 0 {
                        return Err(invalid(
                            r.position(),
                            "sequence of a type whose values take no bytes",
                        ));
                    }
                    let bound = tc.length().unwrap_or(0);
                    if bound != 0 && n as u64 > u64::from(bound) {
                        return Err(CdrError::BoundExceeded {
                            bound,
                            length: n as u64,
                        });
                    }
                    n
                } else {
                    let n = tc.length().unwrap_or(0) as usize;
                    if n > 0 && (min == 0 || n.saturating_mul(min) > r.remaining()) {
                        return Err(CdrError::LengthTooLarge {
                            offset: r.position(),
                            length: n as u64,
                            remaining: r.remaining(),
                        });
                    }
                    n
                };
                // Sequences and arrays of multi-byte primitives are read
                // as one block, as their typed forms are (see
                // `CdrDecode::decode_vec`): other ORBs copy them as one,
                // across GIOP 1.1 fragment boundaries.
                macro_rules! block {
                    ($ty:ty, $variant:ident) => {
                        DynValue::Sequence(
                            <$ty>::decode_vec(r, n)?
                                .into_iter()
                                .map(DynValue::$variant)
                                .collect(),
                        )
                    };
                }
                let elem_kind = resolve(elem, stack)?.unalias().kind();
                if elem_kind == K::Octet {
                    DynValue::Octets(r.read_octets(n)?.to_vec())
                } else if elem_kind == K::Short {
                    block!(i16, Short)
                } else if elem_kind == K::UShort {
                    block!(u16, UShort)
                } else if elem_kind == K::Long {
                    block!(i32, Long)
                } else if elem_kind == K::ULong {
                    block!(u32, ULong)
                } else if elem_kind == K::LongLong {
                    block!(i64, LongLong)
                } else if elem_kind == K::ULongLong {
                    block!(u64, ULongLong)
                } else if elem_kind == K::Float {
                    block!(f32, Float)
                } else if elem_kind == K::Double {
                    block!(f64, Double)
                } else {
                    let mut items = Vec::with_capacity(r.capacity_hint(n, 1));
                    for _ in 0..n {
                        items.push(decode_value(elem, r, stack)?);
                    }
                    DynValue::Sequence(items)
                }
            }
            K::Alias => {
                let content = tc
                    .content_type()
                    .map_err(|_| invalid(r.position(), "alias"))?;
                stack.push(tc);
                let v = decode_value(content, r, stack);
                stack.pop();
                v?
            }
            K::Value | K::ValueBox | K::Event => {
                let offset = r.position();
                match r.read_ulong()? {
                    0 => DynValue::Null,
                    _ => {
                        return Err(invalid(
                            offset,
                            "valuetype values in an any are not supported yet",
                        ))
                    }
                }
            }
            K::Native | K::LocalInterface | K::Component | K::Home => {
                return Err(invalid(r.position(), "this kind cannot travel in an any"))
            }
        })
    })
}

fn label_value(disc: &TypeCode, label: i128) -> DynValue {
    match disc.unalias().kind() {
        TCKind::Short => DynValue::Short(label as i16),
        TCKind::UShort => DynValue::UShort(label as u16),
        TCKind::Long => DynValue::Long(label as i32),
        TCKind::ULong => DynValue::ULong(label as u32),
        TCKind::Enum => DynValue::Enum(label as u32),
        TCKind::LongLong => DynValue::LongLong(label as i64),
        TCKind::ULongLong => DynValue::ULongLong(label as u64),
        TCKind::Boolean => DynValue::Boolean(label != 0),
        TCKind::Char => DynValue::Char(char::from(label as u8)),
        TCKind::Octet => DynValue::Octet(label as u8),
        TCKind::WChar => DynValue::WChar(char::from_u32(label as u32).unwrap_or('\0')),
        _ => DynValue::Null,
    }
}

fn value_label(v: &DynValue) -> Option<i128> {
    Some(match v {
        DynValue::Short(x) => (*x).into(),
        DynValue::UShort(x) => (*x).into(),
        DynValue::Long(x) => (*x).into(),
        DynValue::ULong(x) | DynValue::Enum(x) => (*x).into(),
        DynValue::LongLong(x) => (*x).into(),
        DynValue::ULongLong(x) => (*x).into(),
        DynValue::Boolean(b) => i128::from(*b),
        DynValue::Octet(x) => (*x).into(),
        DynValue::Char(c) | DynValue::WChar(c) => u32::from(*c).into(),
        _ => return None,
    })
}

fn encode_value<'t>(
    tc: &'t TypeCode,
    v: &DynValue,
    w: &mut CdrWriter,
    stack: &mut Vec<&'t TypeCode>,
) -> Result<(), CdrError> {
    let tc = resolve(tc, stack)?;
    if stack.len() > crate::cdr::MAX_DEPTH as usize {
        return Err(CdrError::TooDeep {
            offset: w.position(),
        });
    }
    let at = w.position();
    let mismatch = || invalid(at, "value does not match its TypeCode");
    use TCKind as K;
    match (tc.kind(), v) {
        (K::Null | K::Void, DynValue::Null) => {}
        (K::Short, DynValue::Short(x)) => w.write_short(*x),
        (K::Long, DynValue::Long(x)) => w.write_long(*x),
        (K::UShort, DynValue::UShort(x)) => w.write_ushort(*x),
        (K::ULong, DynValue::ULong(x)) => w.write_ulong(*x),
        (K::LongLong, DynValue::LongLong(x)) => w.write_longlong(*x),
        (K::ULongLong, DynValue::ULongLong(x)) => w.write_ulonglong(*x),
        (K::Float, DynValue::Float(x)) => w.write_float(*x),
        (K::Double, DynValue::Double(x)) => w.write_double(*x),
        (K::LongDouble, DynValue::LongDouble(x)) => w.write_long_double(*x),
        (K::Boolean, DynValue::Boolean(x)) => w.write_bool(*x),
        (K::Char, DynValue::Char(x)) => w.write_char(*x)?,
        (K::WChar, DynValue::WChar(x)) => w.write_wchar(*x)?,
        (K::Octet, DynValue::Octet(x)) => w.write_octet(*x),
        (K::String, DynValue::String(s)) => match tc.length().unwrap_or(0) {
            0 => w.write_string(s)?,
            bound => w.write_bounded_string(s, bound)?,
        },
        (K::WString, DynValue::WString(s)) => match tc.length().unwrap_or(0) {
            0 => w.write_wstring(s)?,
            bound => w.write_bounded_wstring(s, bound)?,
        },
        (K::Fixed, DynValue::Fixed(f)) => {
            let scale = u16::try_from(tc.fixed_scale().unwrap_or(0)).map_err(|_| mismatch())?;
            w.write_fixed(f, tc.fixed_digits().unwrap_or(0), scale)?
        }
        (K::Any, DynValue::Any(a)) => a.encode(w)?,
        (K::TypeCode, DynValue::TypeCode(t)) => t.encode(w)?,
        (K::Principal, DynValue::Principal(p)) => w.write_octet_seq(p)?,
        (K::ObjRef, DynValue::ObjRef(ior)) => ior.encode(w)?,
        (K::AbstractInterface, DynValue::ObjRef(ior)) => {
            w.write_bool(true);
            ior.encode(w)?
        }
        (K::Struct | K::Except, DynValue::Struct(members)) => {
            if members.len() != tc.member_count().unwrap_or(0) {
                return Err(mismatch());
            }
            if tc.kind() == K::Except {
                w.write_string(tc.id().unwrap_or_default())?;
            }
            stack.push(tc);
            let result = members.iter().enumerate().try_for_each(|(i, m)| {
                let mt = tc.member_type(i).map_err(|_| mismatch())?;
                encode_value(mt, m, w, stack)
            });
            stack.pop();
            result?
        }
        (
            K::Union,
            DynValue::Union {
                discriminator,
                member,
            },
        ) => {
            let disc_tc = tc.discriminator_type().map_err(|_| mismatch())?;
            let label = value_label(discriminator).ok_or_else(mismatch)?;
            write_label(w, disc_tc, label)?;
            if let Some((i, value)) = member {
                let mt = tc.member_type(*i).map_err(|_| mismatch())?;
                stack.push(tc);
                let result = encode_value(mt, value, w, stack);
                stack.pop();
                result?
            }
        }
        (K::Enum, DynValue::Enum(x)) => {
            if *x as usize >= tc.member_count().unwrap_or(0) {
                return Err(mismatch());
            }
            w.write_ulong(*x)
        }
        (K::Sequence | K::Array, items @ (DynValue::Octets(_) | DynValue::Sequence(_))) => {
            let elem = tc.content_type().map_err(|_| mismatch())?;
            let len = match items {
                DynValue::Octets(b) => b.len(),
                DynValue::Sequence(s) => s.len(),
                _ => 0,
            };
            let bound = tc.length().unwrap_or(0);
            if tc.kind() == K::Sequence {
                if len > 0 && resolve(elem, stack)?.min_wire_size() == 0 {
                    return Err(invalid(at, "sequence of a type whose values take no bytes"));
                }
                if bound != 0 && len > bound as usize {
                    return Err(CdrError::BoundExceeded {
                        bound,
                        length: len as u64,
                    });
                }
                w.write_len(len)?;
            } else if len != bound as usize {
                return Err(mismatch());
            }
            match items {
                DynValue::Octets(b) => {
                    if resolve(elem, stack)?.unalias().kind() != K::Octet {
                        return Err(mismatch());
                    }
                    w.write_octets(b)
                }
                DynValue::Sequence(s) => {
                    s.iter().try_for_each(|i| encode_value(elem, i, w, stack))?
                }
                _ => {}
            }
        }
        (K::Alias, v) => {
            let content = tc.content_type().map_err(|_| mismatch())?;
            stack.push(tc);
            let result = encode_value(content, v, w, stack);
            stack.pop();
            result?
        }
        (K::Value | K::ValueBox | K::Event, DynValue::Null) => w.write_ulong(0),
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// A Rust type that can go into and come out of an `any`. Implemented for
/// the primitive types and `String` here, and by generated code for IDL
/// types.
pub trait AnyValue: Sized {
    /// The TypeCode of the type.
    fn type_code() -> TypeCode;
    /// Wraps the value in an `any`.
    fn into_any(self) -> Any;
    /// Takes the value out, if the `any` holds this type.
    fn from_any(any: &Any) -> Option<Self>;
}

macro_rules! any_primitive {
    ($($ty:ty => $tc:ident, $variant:ident;)*) => {
        $(
            impl AnyValue for $ty {
                fn type_code() -> TypeCode {
                    TypeCode::$tc()
                }
                fn into_any(self) -> Any {
                    Any::unchecked(TypeCode::$tc(), DynValue::$variant(self))
                }
                fn from_any(any: &Any) -> Option<Self> {
                    if any.type_code.unalias().kind() != TypeCode::$tc().kind() {
                        return None;
                    }
                    match &any.value {
                        DynValue::$variant(v) => Some(v.clone()),
                        _ => None,
                    }
                }
            }

            impl From<$ty> for Any {
                fn from(v: $ty) -> Any {
                    v.into_any()
                }
            }
        )*
    };
}

any_primitive! {
    i16 => short, Short;
    i32 => long, Long;
    u16 => ushort, UShort;
    u32 => ulong, ULong;
    i64 => longlong, LongLong;
    u64 => ulonglong, ULongLong;
    f32 => float, Float;
    f64 => double, Double;
    bool => boolean, Boolean;
    u8 => octet, Octet;
    char => char, Char;
    LongDouble => longdouble, LongDouble;
}

impl AnyValue for String {
    fn type_code() -> TypeCode {
        TypeCode::string(0)
    }
    fn into_any(self) -> Any {
        Any::unchecked(TypeCode::string(0), DynValue::String(self))
    }
    fn from_any(any: &Any) -> Option<Self> {
        match (&any.value, any.type_code.unalias().kind()) {
            (DynValue::String(s), TCKind::String) => Some(s.clone()),
            _ => None,
        }
    }
}

impl From<&str> for Any {
    fn from(s: &str) -> Any {
        s.to_owned().into_any()
    }
}

impl From<String> for Any {
    fn from(s: String) -> Any {
        s.into_any()
    }
}

impl AnyValue for Vec<u8> {
    fn type_code() -> TypeCode {
        TypeCode::sequence(TypeCode::octet(), 0)
    }
    fn into_any(self) -> Any {
        Any::unchecked(Self::type_code(), DynValue::Octets(self))
    }
    fn from_any(any: &Any) -> Option<Self> {
        match (&any.value, any.type_code.unalias().kind()) {
            (DynValue::Octets(b), TCKind::Sequence) => Some(b.clone()),
            _ => None,
        }
    }
}

impl AnyValue for Any {
    fn type_code() -> TypeCode {
        TypeCode::any()
    }
    fn into_any(self) -> Any {
        Any::nested(self)
    }
    fn from_any(any: &Any) -> Option<Self> {
        any.to_nested().cloned()
    }
}

/// Fuzz entry (see [`crate::fuzzing::typecode_any`]).
pub(crate) fn fuzz_one(data: &[u8]) {
    for order in [ByteOrder::Big, ByteOrder::Little] {
        for version in [GiopVersion::V1_1, GiopVersion::V1_2] {
            let cs = crate::CodeSets::NATIVE;
            let mut r = CdrReader::new(data, order, version).with_codesets(cs);
            if let Ok(tc) = TypeCode::decode(&mut r) {
                let mut w = CdrWriter::new(order, version).with_codesets(cs);
                if tc.encode(&mut w).is_ok() {
                    let mut r2 = CdrReader::new(w.as_bytes(), order, version).with_codesets(cs);
                    let back = TypeCode::decode(&mut r2).expect("an encoded TypeCode decodes");
                    assert!(back.equal(&tc), "TypeCode changed in a round trip");
                }
            }
            let mut r = CdrReader::new(data, order, version).with_codesets(cs);
            if let Ok(any) = Any::decode(&mut r) {
                check_round_trip(&any, order, version);
            }
        }
    }
}

/// Fuzz check: an `any` that encodes decodes again and encodes to the same
/// bytes (NaN never equals itself, so the encodings are compared, not the
/// values).
pub(crate) fn check_round_trip(any: &Any, order: ByteOrder, version: GiopVersion) {
    let cs = crate::CodeSets::NATIVE;
    let mut w = CdrWriter::new(order, version).with_codesets(cs);
    if any.encode(&mut w).is_ok() {
        let mut r = CdrReader::new(w.as_bytes(), order, version).with_codesets(cs);
        let back = Any::decode(&mut r).expect("an encoded any decodes");
        let mut w2 = CdrWriter::new(order, version).with_codesets(cs);
        back.encode(&mut w2).expect("a decoded any encodes");
        assert_eq!(
            w.as_bytes(),
            w2.as_bytes(),
            "an any changed in a round trip"
        );
    }
}
