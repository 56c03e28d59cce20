//! TypeCodes: run-time descriptions of IDL types, as `any` values and the
//! Interface Repository carry them (CORBA 3.0 §4.11, CDR §15.3.5).
//!
//! A [`TypeCode`] is an immutable, cheaply cloned tree. Recursive types
//! (`struct Node { sequence<Node> children; }`) are described the way
//! `ORB::create_recursive_tc` does it: the inner occurrence is a
//! [`TypeCode::recursive`] placeholder naming the enclosing type's
//! repository id. On the wire such a placeholder is an *indirection* back
//! to the enclosing TypeCode; decoding turns indirections back into
//! placeholders (or, for a repeated non-recursive type, into a copy).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};

/// The kind of a TypeCode (`CORBA::TCKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum TCKind {
    Null = 0,
    Void,
    Short,
    Long,
    UShort,
    ULong,
    Float,
    Double,
    Boolean,
    Char,
    Octet,
    Any,
    TypeCode,
    Principal,
    ObjRef,
    Struct,
    Union,
    Enum,
    String,
    Sequence,
    Array,
    Alias,
    Except,
    LongLong,
    ULongLong,
    LongDouble,
    WChar,
    WString,
    Fixed,
    Value,
    ValueBox,
    Native,
    AbstractInterface,
    LocalInterface,
    Component,
    Home,
    Event,
}

impl TCKind {
    const ALL: [TCKind; 37] = [
        TCKind::Null,
        TCKind::Void,
        TCKind::Short,
        TCKind::Long,
        TCKind::UShort,
        TCKind::ULong,
        TCKind::Float,
        TCKind::Double,
        TCKind::Boolean,
        TCKind::Char,
        TCKind::Octet,
        TCKind::Any,
        TCKind::TypeCode,
        TCKind::Principal,
        TCKind::ObjRef,
        TCKind::Struct,
        TCKind::Union,
        TCKind::Enum,
        TCKind::String,
        TCKind::Sequence,
        TCKind::Array,
        TCKind::Alias,
        TCKind::Except,
        TCKind::LongLong,
        TCKind::ULongLong,
        TCKind::LongDouble,
        TCKind::WChar,
        TCKind::WString,
        TCKind::Fixed,
        TCKind::Value,
        TCKind::ValueBox,
        TCKind::Native,
        TCKind::AbstractInterface,
        TCKind::LocalInterface,
        TCKind::Component,
        TCKind::Home,
        TCKind::Event,
    ];

    /// From the CDR value.
    pub fn from_u32(v: u32) -> Option<Self> {
        Self::ALL.get(v as usize).copied()
    }
}

/// One member of a struct or exception.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructMember {
    /// Member name.
    pub name: String,
    /// Member type.
    pub type_code: TypeCode,
}

/// One member of a union.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnionMember {
    /// The label value (booleans as 0/1, chars as their code, enums as
    /// their index); ignored for the default member.
    pub label: i128,
    /// Member name.
    pub name: String,
    /// Member type.
    pub type_code: TypeCode,
}

/// One state member of a valuetype.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValueMember {
    /// Member name.
    pub name: String,
    /// Member type.
    pub type_code: TypeCode,
    /// 0 private, 1 public.
    pub visibility: i16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Repr {
    Simple(TCKind),
    String {
        wide: bool,
        bound: u32,
    },
    Interface {
        kind: TCKind,
        id: String,
        name: String,
    },
    Struct {
        kind: TCKind,
        id: String,
        name: String,
        members: Vec<StructMember>,
    },
    Union {
        id: String,
        name: String,
        discriminator: TypeCode,
        default_index: i32,
        members: Vec<UnionMember>,
    },
    Enum {
        id: String,
        name: String,
        members: Vec<String>,
    },
    Sequence {
        element: TypeCode,
        bound: u32,
    },
    Array {
        element: TypeCode,
        length: u32,
    },
    Alias {
        kind: TCKind,
        id: String,
        name: String,
        content: TypeCode,
    },
    Fixed {
        digits: u16,
        scale: i16,
    },
    Value {
        kind: TCKind,
        id: String,
        name: String,
        modifier: i16,
        base: Option<TypeCode>,
        members: Vec<ValueMember>,
    },
    Recursive {
        id: String,
    },
}

/// A CORBA TypeCode. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TypeCode(Arc<Repr>);

/// Why a TypeCode operation does not apply (`TypeCode::BadKind` /
/// `Bounds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TypeCodeError {
    /// The operation does not apply to this kind.
    #[error("operation not valid for this TypeCode kind")]
    BadKind,
    /// A member index out of range.
    #[error("member index out of range")]
    Bounds,
}

macro_rules! simple {
    ($($name:ident => $kind:ident),* $(,)?) => {
        impl TypeCode {
            $(
                #[doc = concat!("The TypeCode of `", stringify!($kind), "`.")]
                pub fn $name() -> TypeCode {
                    TypeCode::simple(TCKind::$kind)
                }
            )*
        }
    };
}

simple! {
    null => Null, void => Void, short => Short, long => Long, ushort => UShort,
    ulong => ULong, float => Float, double => Double, boolean => Boolean,
    char => Char, octet => Octet, any => Any, tc_typecode => TypeCode,
    principal => Principal, longlong => LongLong, ulonglong => ULongLong,
    longdouble => LongDouble, wchar => WChar,
}

/// `tk_null`, the TypeCode of no value (what a default-constructed
/// `TypeCode` member of a generated struct holds).
impl Default for TypeCode {
    fn default() -> Self {
        TypeCode::null()
    }
}

impl TypeCode {
    fn new(repr: Repr) -> Self {
        TypeCode(Arc::new(repr))
    }

    /// A TypeCode of a kind with no parameters (`short`, `any`, ...).
    pub fn simple(kind: TCKind) -> Self {
        Self::new(Repr::Simple(kind))
    }

    /// `string` (bound 0 = unbounded).
    pub fn string(bound: u32) -> Self {
        Self::new(Repr::String { wide: false, bound })
    }

    /// `wstring` (bound 0 = unbounded).
    pub fn wstring(bound: u32) -> Self {
        Self::new(Repr::String { wide: true, bound })
    }

    /// An object reference type (`tk_objref`).
    pub fn objref(id: &str, name: &str) -> Self {
        Self::interface(TCKind::ObjRef, id, name)
    }

    /// An interface-like type: objref, abstract or local interface,
    /// native, component or home.
    pub fn interface(kind: TCKind, id: &str, name: &str) -> Self {
        Self::new(Repr::Interface {
            kind,
            id: id.into(),
            name: name.into(),
        })
    }

    /// A struct.
    pub fn struct_tc(id: &str, name: &str, members: Vec<StructMember>) -> Self {
        Self::new(Repr::Struct {
            kind: TCKind::Struct,
            id: id.into(),
            name: name.into(),
            members,
        })
    }

    /// An exception.
    pub fn exception_tc(id: &str, name: &str, members: Vec<StructMember>) -> Self {
        Self::new(Repr::Struct {
            kind: TCKind::Except,
            id: id.into(),
            name: name.into(),
            members,
        })
    }

    /// A union; `default_index` is -1 when there is no default member.
    pub fn union_tc(
        id: &str,
        name: &str,
        discriminator: TypeCode,
        default_index: i32,
        members: Vec<UnionMember>,
    ) -> Self {
        Self::new(Repr::Union {
            id: id.into(),
            name: name.into(),
            discriminator,
            default_index,
            members,
        })
    }

    /// An enum.
    pub fn enum_tc(id: &str, name: &str, members: &[&str]) -> Self {
        Self::new(Repr::Enum {
            id: id.into(),
            name: name.into(),
            members: members.iter().map(|m| (*m).to_owned()).collect(),
        })
    }

    /// `sequence<element, bound>` (bound 0 = unbounded).
    pub fn sequence(element: TypeCode, bound: u32) -> Self {
        Self::new(Repr::Sequence { element, bound })
    }

    /// `element[length]` (a multi-dimensional array nests these).
    pub fn array(element: TypeCode, length: u32) -> Self {
        Self::new(Repr::Array { element, length })
    }

    /// A typedef.
    pub fn alias(id: &str, name: &str, content: TypeCode) -> Self {
        Self::new(Repr::Alias {
            kind: TCKind::Alias,
            id: id.into(),
            name: name.into(),
            content,
        })
    }

    /// A value box.
    pub fn value_box(id: &str, name: &str, content: TypeCode) -> Self {
        Self::new(Repr::Alias {
            kind: TCKind::ValueBox,
            id: id.into(),
            name: name.into(),
            content,
        })
    }

    /// `fixed<digits, scale>`.
    pub fn fixed(digits: u16, scale: i16) -> Self {
        Self::new(Repr::Fixed { digits, scale })
    }

    /// A valuetype (or eventtype with `kind` Event).
    pub fn value_tc(
        kind: TCKind,
        id: &str,
        name: &str,
        modifier: i16,
        base: Option<TypeCode>,
        members: Vec<ValueMember>,
    ) -> Self {
        Self::new(Repr::Value {
            kind,
            id: id.into(),
            name: name.into(),
            modifier,
            base,
            members,
        })
    }

    /// A placeholder for the enclosing type with repository id `id`, to
    /// build recursive types (`create_recursive_tc`).
    pub fn recursive(id: &str) -> Self {
        Self::new(Repr::Recursive { id: id.into() })
    }

    /// The kind. A recursive placeholder reports the kind it stands for
    /// only once resolved; unresolved it reports `Struct`.
    pub fn kind(&self) -> TCKind {
        match &*self.0 {
            Repr::Simple(k) => *k,
            Repr::String { wide: false, .. } => TCKind::String,
            Repr::String { wide: true, .. } => TCKind::WString,
            Repr::Interface { kind, .. }
            | Repr::Struct { kind, .. }
            | Repr::Alias { kind, .. }
            | Repr::Value { kind, .. } => *kind,
            Repr::Union { .. } => TCKind::Union,
            Repr::Enum { .. } => TCKind::Enum,
            Repr::Sequence { .. } => TCKind::Sequence,
            Repr::Array { .. } => TCKind::Array,
            Repr::Fixed { .. } => TCKind::Fixed,
            Repr::Recursive { .. } => TCKind::Struct,
        }
    }

    /// True for a [`TypeCode::recursive`] placeholder.
    pub fn is_recursive_placeholder(&self) -> bool {
        matches!(&*self.0, Repr::Recursive { .. })
    }

    /// The repository id.
    pub fn id(&self) -> Result<&str, TypeCodeError> {
        match &*self.0 {
            Repr::Interface { id, .. }
            | Repr::Struct { id, .. }
            | Repr::Union { id, .. }
            | Repr::Enum { id, .. }
            | Repr::Alias { id, .. }
            | Repr::Value { id, .. }
            | Repr::Recursive { id } => Ok(id),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The simple name.
    pub fn name(&self) -> Result<&str, TypeCodeError> {
        match &*self.0 {
            Repr::Interface { name, .. }
            | Repr::Struct { name, .. }
            | Repr::Union { name, .. }
            | Repr::Enum { name, .. }
            | Repr::Alias { name, .. }
            | Repr::Value { name, .. } => Ok(name),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// How many members (struct, union, enum, exception, value).
    pub fn member_count(&self) -> Result<usize, TypeCodeError> {
        match &*self.0 {
            Repr::Struct { members, .. } => Ok(members.len()),
            Repr::Union { members, .. } => Ok(members.len()),
            Repr::Enum { members, .. } => Ok(members.len()),
            Repr::Value { members, .. } => Ok(members.len()),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The name of member `i`.
    pub fn member_name(&self, i: usize) -> Result<&str, TypeCodeError> {
        let name = match &*self.0 {
            Repr::Struct { members, .. } => members.get(i).map(|m| m.name.as_str()),
            Repr::Union { members, .. } => members.get(i).map(|m| m.name.as_str()),
            Repr::Enum { members, .. } => members.get(i).map(String::as_str),
            Repr::Value { members, .. } => members.get(i).map(|m| m.name.as_str()),
            _ => return Err(TypeCodeError::BadKind),
        };
        name.ok_or(TypeCodeError::Bounds)
    }

    /// The type of member `i`.
    pub fn member_type(&self, i: usize) -> Result<&TypeCode, TypeCodeError> {
        let tc = match &*self.0 {
            Repr::Struct { members, .. } => members.get(i).map(|m| &m.type_code),
            Repr::Union { members, .. } => members.get(i).map(|m| &m.type_code),
            Repr::Value { members, .. } => members.get(i).map(|m| &m.type_code),
            _ => return Err(TypeCodeError::BadKind),
        };
        tc.ok_or(TypeCodeError::Bounds)
    }

    /// The label of union member `i`.
    pub fn member_label(&self, i: usize) -> Result<i128, TypeCodeError> {
        match &*self.0 {
            Repr::Union { members, .. } => {
                members.get(i).map(|m| m.label).ok_or(TypeCodeError::Bounds)
            }
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The discriminator type of a union.
    pub fn discriminator_type(&self) -> Result<&TypeCode, TypeCodeError> {
        match &*self.0 {
            Repr::Union { discriminator, .. } => Ok(discriminator),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The index of a union's default member, or -1.
    pub fn default_index(&self) -> Result<i32, TypeCodeError> {
        match &*self.0 {
            Repr::Union { default_index, .. } => Ok(*default_index),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The bound of a string or sequence, or the length of an array.
    pub fn length(&self) -> Result<u32, TypeCodeError> {
        match &*self.0 {
            Repr::String { bound, .. } | Repr::Sequence { bound, .. } => Ok(*bound),
            Repr::Array { length, .. } => Ok(*length),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The element type of a sequence or array, or the aliased type.
    pub fn content_type(&self) -> Result<&TypeCode, TypeCodeError> {
        match &*self.0 {
            Repr::Sequence { element, .. } | Repr::Array { element, .. } => Ok(element),
            Repr::Alias { content, .. } => Ok(content),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The digits of a fixed type.
    pub fn fixed_digits(&self) -> Result<u16, TypeCodeError> {
        match &*self.0 {
            Repr::Fixed { digits, .. } => Ok(*digits),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The scale of a fixed type.
    pub fn fixed_scale(&self) -> Result<i16, TypeCodeError> {
        match &*self.0 {
            Repr::Fixed { scale, .. } => Ok(*scale),
            _ => Err(TypeCodeError::BadKind),
        }
    }

    /// The type with aliases removed.
    pub fn unalias(&self) -> &TypeCode {
        let mut tc = self;
        while let Repr::Alias {
            kind: TCKind::Alias,
            content,
            ..
        } = &*tc.0
        {
            tc = content;
        }
        tc
    }

    /// `TypeCode::equal`: the same type in every detail, names included.
    pub fn equal(&self, other: &TypeCode) -> bool {
        self == other
    }

    /// `TypeCode::equivalent`: the same type once aliases are stripped,
    /// ignoring names (and, where both have one, deciding by repository
    /// id alone).
    pub fn equivalent(&self, other: &TypeCode) -> bool {
        equivalent(self, other, 0)
    }

    /// The TypeCode without names (`get_compact_typecode`).
    pub fn compact(&self) -> TypeCode {
        let r = match &*self.0 {
            Repr::Interface { kind, id, .. } => Repr::Interface {
                kind: *kind,
                id: id.clone(),
                name: String::new(),
            },
            Repr::Struct {
                kind, id, members, ..
            } => Repr::Struct {
                kind: *kind,
                id: id.clone(),
                name: String::new(),
                members: members
                    .iter()
                    .map(|m| StructMember {
                        name: String::new(),
                        type_code: m.type_code.compact(),
                    })
                    .collect(),
            },
            Repr::Union {
                id,
                discriminator,
                default_index,
                members,
                ..
            } => Repr::Union {
                id: id.clone(),
                name: String::new(),
                discriminator: discriminator.compact(),
                default_index: *default_index,
                members: members
                    .iter()
                    .map(|m| UnionMember {
                        label: m.label,
                        name: String::new(),
                        type_code: m.type_code.compact(),
                    })
                    .collect(),
            },
            Repr::Enum { id, members, .. } => Repr::Enum {
                id: id.clone(),
                name: String::new(),
                members: members.iter().map(|_| String::new()).collect(),
            },
            Repr::Sequence { element, bound } => Repr::Sequence {
                element: element.compact(),
                bound: *bound,
            },
            Repr::Array { element, length } => Repr::Array {
                element: element.compact(),
                length: *length,
            },
            Repr::Alias {
                kind, id, content, ..
            } => Repr::Alias {
                kind: *kind,
                id: id.clone(),
                name: String::new(),
                content: content.compact(),
            },
            other => other.clone(),
        };
        TypeCode::new(r)
    }

    /// The smallest number of bytes a value of this type takes on the
    /// wire (to bound sequence lengths and pre-allocation). 0 only for
    /// types whose values take no bytes at all (`null`, `void`, empty
    /// structs or arrays), which no sequence may hold.
    pub(crate) fn min_wire_size(&self) -> usize {
        self.min_wire_size_at(0)
    }

    fn min_wire_size_at(&self, depth: u32) -> usize {
        if depth > 8 || self.is_recursive_placeholder() {
            return 1;
        }
        let tc = self.unalias();
        match tc.kind() {
            TCKind::Null | TCKind::Void => 0,
            TCKind::Short | TCKind::UShort => 2,
            TCKind::Long | TCKind::ULong | TCKind::Float | TCKind::Enum => 4,
            TCKind::String | TCKind::WString | TCKind::Sequence | TCKind::Any => 4,
            TCKind::TypeCode | TCKind::Value | TCKind::ValueBox | TCKind::Event => 4,
            TCKind::LongLong | TCKind::ULongLong | TCKind::Double => 8,
            TCKind::LongDouble => 16,
            TCKind::Struct | TCKind::Except => match &*tc.0 {
                Repr::Struct { members, .. } => members
                    .iter()
                    .map(|m| m.type_code.min_wire_size_at(depth + 1))
                    .fold(0usize, usize::saturating_add),
                _ => 1,
            },
            TCKind::Array => {
                let n = tc.length().unwrap_or(0) as usize;
                tc.content_type()
                    .map_or(1, |e| e.min_wire_size_at(depth + 1))
                    .saturating_mul(n)
            }
            _ => 1,
        }
    }
}

fn equivalent(a: &TypeCode, b: &TypeCode, depth: u32) -> bool {
    if depth > 64 {
        return true;
    }
    let (a, b) = (a.unalias(), b.unalias());
    if a.kind() != b.kind() {
        return false;
    }
    if let (Ok(x), Ok(y)) = (a.id(), b.id()) {
        if !x.is_empty() && !y.is_empty() {
            return x == y;
        }
    }
    match (&*a.0, &*b.0) {
        (Repr::Struct { members: m, .. }, Repr::Struct { members: n, .. }) => {
            m.len() == n.len()
                && m.iter()
                    .zip(n)
                    .all(|(x, y)| equivalent(&x.type_code, &y.type_code, depth + 1))
        }
        (
            Repr::Union {
                discriminator: d,
                default_index: i,
                members: m,
                ..
            },
            Repr::Union {
                discriminator: e,
                default_index: j,
                members: n,
                ..
            },
        ) => {
            i == j
                && equivalent(d, e, depth + 1)
                && m.len() == n.len()
                && m.iter().zip(n).all(|(x, y)| {
                    x.label == y.label && equivalent(&x.type_code, &y.type_code, depth + 1)
                })
        }
        (Repr::Enum { members: m, .. }, Repr::Enum { members: n, .. }) => m.len() == n.len(),
        (
            Repr::Sequence {
                element: x,
                bound: p,
            },
            Repr::Sequence {
                element: y,
                bound: q,
            },
        )
        | (
            Repr::Array {
                element: x,
                length: p,
            },
            Repr::Array {
                element: y,
                length: q,
            },
        ) => p == q && equivalent(x, y, depth + 1),
        (Repr::Alias { content: x, .. }, Repr::Alias { content: y, .. }) => {
            equivalent(x, y, depth + 1)
        }
        _ => {
            a == b
                || matches!(
                    (&*a.0, &*b.0),
                    (Repr::Interface { .. }, Repr::Interface { .. })
                )
        }
    }
}

impl CdrEncode for TypeCode {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        TypeCode::encode(self, w)
    }
}

impl CdrDecode for TypeCode {
    const MIN_SIZE: usize = 4;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        TypeCode::decode(r)
    }
}

impl fmt::Debug for TypeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Repr::Simple(k) => write!(f, "{k:?}"),
            Repr::String { wide, bound } => {
                write!(f, "{}<{bound}>", if *wide { "wstring" } else { "string" })
            }
            Repr::Sequence { element, bound } => write!(f, "sequence<{element:?}, {bound}>"),
            Repr::Array { element, length } => write!(f, "{element:?}[{length}]"),
            Repr::Fixed { digits, scale } => write!(f, "fixed<{digits},{scale}>"),
            Repr::Recursive { id } => write!(f, "recursive({id})"),
            _ => write!(f, "{:?} {}", self.kind(), self.id().unwrap_or_default()),
        }
    }
}

const INDIRECTION: u32 = 0xffff_ffff;

/// Where enclosing TypeCodes started, for indirections: (repository id,
/// absolute offset of the TypeCode's kind field).
#[derive(Default)]
struct EncodeState {
    enclosing: Vec<(String, usize)>,
}

impl TypeCode {
    /// Writes the TypeCode.
    pub fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        let mut state = EncodeState::default();
        self.encode_at(w, 0, &mut state)
    }

    /// `base`: absolute stream offset of `w`'s first byte.
    fn encode_at(
        &self,
        w: &mut CdrWriter,
        base: usize,
        st: &mut EncodeState,
    ) -> Result<(), CdrError> {
        w.align(4);
        let start = base + w.len();
        if let Repr::Recursive { id } = &*self.0 {
            let target = st
                .enclosing
                .iter()
                .rev()
                .find(|(i, _)| i == id)
                .map(|(_, at)| *at)
                .ok_or(CdrError::Invalid {
                    offset: w.position(),
                    what: "recursive TypeCode placeholder outside the type it names",
                })?;
            w.write_ulong(INDIRECTION);
            let here = base + w.len();
            w.write_long(target as i64 as i32 - here as i32);
            return Ok(());
        }
        w.write_ulong(self.kind() as u32);
        let pushed = match self.id() {
            Ok(id) if !id.is_empty() => {
                st.enclosing.push((id.to_owned(), start));
                true
            }
            _ => false,
        };
        let result = self.encode_params(w, base, st);
        if pushed {
            st.enclosing.pop();
        }
        result
    }

    fn encode_params(
        &self,
        w: &mut CdrWriter,
        base: usize,
        st: &mut EncodeState,
    ) -> Result<(), CdrError> {
        // Complex kinds: an encapsulation whose content starts 4 bytes after
        // the (aligned) length.
        let encaps =
            |w: &mut CdrWriter,
             st: &mut EncodeState,
             body: &dyn Fn(&mut CdrWriter, usize, &mut EncodeState) -> Result<(), CdrError>|
             -> Result<(), CdrError> {
                w.align(4);
                let inner_base = base + w.len() + 4;
                w.write_encapsulation(|inner| body(inner, inner_base, st))
            };
        match &*self.0 {
            Repr::Simple(_) | Repr::Recursive { .. } => Ok(()),
            Repr::String { bound, .. } => {
                w.write_ulong(*bound);
                Ok(())
            }
            Repr::Interface { id, name, .. } => encaps(w, st, &|e, _, _| {
                e.write_string(id)?;
                e.write_string(name)
            }),
            Repr::Struct {
                id, name, members, ..
            } => encaps(w, st, &|e, b, st| {
                e.write_string(id)?;
                e.write_string(name)?;
                e.write_len(members.len())?;
                for m in members {
                    e.write_string(&m.name)?;
                    m.type_code.encode_at(e, b, st)?;
                }
                Ok(())
            }),
            Repr::Union {
                id,
                name,
                discriminator,
                default_index,
                members,
            } => encaps(w, st, &|e, b, st| {
                e.write_string(id)?;
                e.write_string(name)?;
                discriminator.encode_at(e, b, st)?;
                e.write_long(*default_index);
                e.write_len(members.len())?;
                for (i, m) in members.iter().enumerate() {
                    if i as i32 == *default_index {
                        e.write_octet(0);
                    } else {
                        write_label(e, discriminator, m.label)?;
                    }
                    e.write_string(&m.name)?;
                    m.type_code.encode_at(e, b, st)?;
                }
                Ok(())
            }),
            Repr::Enum { id, name, members } => encaps(w, st, &|e, _, _| {
                e.write_string(id)?;
                e.write_string(name)?;
                e.write_len(members.len())?;
                members.iter().try_for_each(|m| e.write_string(m))
            }),
            Repr::Sequence { element, bound } => encaps(w, st, &|e, b, st| {
                element.encode_at(e, b, st)?;
                e.write_ulong(*bound);
                Ok(())
            }),
            Repr::Array { element, length } => encaps(w, st, &|e, b, st| {
                element.encode_at(e, b, st)?;
                e.write_ulong(*length);
                Ok(())
            }),
            Repr::Alias {
                id, name, content, ..
            } => encaps(w, st, &|e, b, st| {
                e.write_string(id)?;
                e.write_string(name)?;
                content.encode_at(e, b, st)
            }),
            Repr::Fixed { digits, scale } => {
                w.write_ushort(*digits);
                w.write_short(*scale);
                Ok(())
            }
            Repr::Value {
                id,
                name,
                modifier,
                base: concrete,
                members,
                ..
            } => encaps(w, st, &|e, b, st| {
                e.write_string(id)?;
                e.write_string(name)?;
                e.write_short(*modifier);
                match concrete {
                    Some(tc) => tc.encode_at(e, b, st)?,
                    None => TypeCode::null().encode_at(e, b, st)?,
                }
                e.write_len(members.len())?;
                for m in members {
                    e.write_string(&m.name)?;
                    m.type_code.encode_at(e, b, st)?;
                    e.write_short(m.visibility);
                }
                Ok(())
            }),
        }
    }

    /// Reads a TypeCode.
    pub fn decode(r: &mut CdrReader<'_>) -> Result<TypeCode, CdrError> {
        let mut st = DecodeState::default();
        decode_at(r, 0, &mut st)
    }
}

/// Writes a union label as the discriminator type requires.
pub(crate) fn write_label(w: &mut CdrWriter, disc: &TypeCode, label: i128) -> Result<(), CdrError> {
    let bad = CdrError::Invalid {
        offset: w.position(),
        what: "union label does not fit its discriminator type",
    };
    match disc.unalias().kind() {
        TCKind::Short => w.write_short(i16::try_from(label).map_err(|_| bad)?),
        TCKind::UShort => w.write_ushort(u16::try_from(label).map_err(|_| bad)?),
        TCKind::Long => w.write_long(i32::try_from(label).map_err(|_| bad)?),
        TCKind::ULong | TCKind::Enum => w.write_ulong(u32::try_from(label).map_err(|_| bad)?),
        TCKind::LongLong => w.write_longlong(i64::try_from(label).map_err(|_| bad)?),
        TCKind::ULongLong => w.write_ulonglong(u64::try_from(label).map_err(|_| bad)?),
        TCKind::Boolean => w.write_bool(label != 0),
        TCKind::Char => w.write_octet(u8::try_from(label).map_err(|_| bad)?),
        TCKind::WChar => {
            let c = u32::try_from(label)
                .ok()
                .and_then(char::from_u32)
                .ok_or(bad)?;
            w.write_wchar(c)?
        }
        _ => {
            return Err(CdrError::Invalid {
                offset: w.position(),
                what: "invalid union discriminator type",
            })
        }
    }
    Ok(())
}

/// Reads a union label (or discriminator value) of the discriminator type.
pub(crate) fn read_label(r: &mut CdrReader<'_>, disc: &TypeCode) -> Result<i128, CdrError> {
    Ok(match disc.unalias().kind() {
        TCKind::Short => r.read_short()?.into(),
        TCKind::UShort => r.read_ushort()?.into(),
        TCKind::Long => r.read_long()?.into(),
        TCKind::ULong | TCKind::Enum => r.read_ulong()?.into(),
        TCKind::LongLong => r.read_longlong()?.into(),
        TCKind::ULongLong => r.read_ulonglong()?.into(),
        TCKind::Boolean => i128::from(r.read_bool()?),
        TCKind::Char => r.read_octet()?.into(),
        TCKind::WChar => u32::from(r.read_wchar()?).into(),
        _ => {
            return Err(CdrError::Invalid {
                offset: r.position(),
                what: "invalid union discriminator type",
            })
        }
    })
}

/// Skips the label of a union's default member. TAO, the JDK ORB and
/// Armillary write it as the zero octet; omniORB writes a zero of the
/// discriminator's type, aligned. Where the two put the member's name at
/// different places (a discriminator wider than an octet, at some
/// alignments), the form after which a plausible name and TypeCode kind
/// follow is taken, the zero octet when both look plausible.
fn skip_default_label(e: &mut CdrReader<'_>, disc: &TypeCode) -> Result<(), CdrError> {
    let mut narrow = e.clone();
    narrow.read_octet()?;
    let mut wide = e.clone();
    let wide_zero = matches!(read_label(&mut wide, disc), Ok(0));
    let name_at = |r: &CdrReader<'_>| {
        let mut r = r.clone();
        r.align(4).map(|_| r.position()).ok()
    };
    let take_wide = wide_zero
        && name_at(&wide) != name_at(&narrow)
        && plausible_member(&wide)
        && !plausible_member(&narrow);
    *e = if take_wide { wide } else { narrow };
    Ok(())
}

/// Whether a union member's name and the kind of its TypeCode can be read
/// at `r`.
fn plausible_member(r: &CdrReader<'_>) -> bool {
    let mut r = r.clone();
    r.read_string().is_ok()
        && matches!(r.read_ulong(), Ok(kind) if kind <= 0x20 || kind == 0xffff_ffff)
}

#[derive(Default)]
struct DecodeState {
    /// TypeCodes being decoded: (absolute offset, repository id).
    open: Vec<(usize, String)>,
    /// TypeCodes fully decoded, by absolute offset (for repeated types).
    done: HashMap<usize, TypeCode>,
}

fn decode_at(
    r: &mut CdrReader<'_>,
    base: usize,
    st: &mut DecodeState,
) -> Result<TypeCode, CdrError> {
    r.nested(|r| {
        r.align(4)?;
        let start = base + r.position();
        let offset = r.position();
        let raw = r.read_ulong()?;
        if raw == INDIRECTION {
            let here = base + r.position();
            let delta = r.read_long()?;
            let target = here as i64 + i64::from(delta);
            if let Some((_, id)) = st.open.iter().find(|(at, _)| *at as i64 == target) {
                return Ok(TypeCode::recursive(id));
            }
            if let Some(tc) = st.done.get(&(target as usize)).filter(|_| target >= 0) {
                return Ok(tc.clone());
            }
            return Err(CdrError::Invalid {
                offset,
                what: "TypeCode indirection does not point at an earlier TypeCode",
            });
        }
        let kind = TCKind::from_u32(raw).ok_or(CdrError::Invalid {
            offset,
            what: "unknown TypeCode kind",
        })?;
        let tc = decode_params(r, kind, base, start, st)?;
        st.done.insert(start, tc.clone());
        Ok(tc)
    })
}

fn decode_params(
    r: &mut CdrReader<'_>,
    kind: TCKind,
    base: usize,
    start: usize,
    st: &mut DecodeState,
) -> Result<TypeCode, CdrError> {
    use TCKind as K;
    Ok(match kind {
        K::String => TypeCode::string(r.read_ulong()?),
        K::WString => TypeCode::wstring(r.read_ulong()?),
        K::Fixed => {
            let digits = r.read_ushort()?;
            let scale = r.read_short()?;
            TypeCode::fixed(digits, scale)
        }
        K::ObjRef
        | K::AbstractInterface
        | K::LocalInterface
        | K::Native
        | K::Component
        | K::Home => {
            let (mut e, _) = open_encaps(r, base)?;
            let id = e.read_string()?;
            let name = e.read_string()?;
            TypeCode::interface(kind, &id, &name)
        }
        K::Struct | K::Except => {
            let (mut e, b) = open_encaps(r, base)?;
            let id = e.read_string()?;
            let name = e.read_string()?;
            st.open.push((start, id.clone()));
            let members = e.read_seq_with(8, |e| {
                Ok(StructMember {
                    name: e.read_string()?,
                    type_code: decode_at(e, b, st)?,
                })
            });
            st.open.pop();
            TypeCode::new(Repr::Struct {
                kind,
                id,
                name,
                members: members?,
            })
        }
        K::Union => {
            let (mut e, b) = open_encaps(r, base)?;
            let id = e.read_string()?;
            let name = e.read_string()?;
            st.open.push((start, id.clone()));
            let result = (|| {
                let discriminator = decode_at(&mut e, b, st)?;
                let default_index = e.read_long()?;
                let n = e.read_seq_len(8)?;
                let mut members = Vec::with_capacity(e.capacity_hint(n, 8));
                for i in 0..n {
                    let label = if i as i32 == default_index {
                        // The default member's label has no meaning; it is
                        // kept as 0.
                        skip_default_label(&mut e, &discriminator)?;
                        0
                    } else {
                        read_label(&mut e, &discriminator)?
                    };
                    members.push(UnionMember {
                        label,
                        name: e.read_string()?,
                        type_code: decode_at(&mut e, b, st)?,
                    });
                }
                Ok::<_, CdrError>((discriminator, default_index, members))
            })();
            st.open.pop();
            let (discriminator, default_index, members) = result?;
            TypeCode::union_tc(&id, &name, discriminator, default_index, members)
        }
        K::Enum => {
            let (mut e, _) = open_encaps(r, base)?;
            let id = e.read_string()?;
            let name = e.read_string()?;
            let members = e.read_seq_with(5, |e| e.read_string())?;
            TypeCode::new(Repr::Enum { id, name, members })
        }
        K::Sequence | K::Array => {
            let (mut e, b) = open_encaps(r, base)?;
            let element = decode_at(&mut e, b, st)?;
            let n = e.read_ulong()?;
            if kind == K::Sequence {
                TypeCode::sequence(element, n)
            } else {
                TypeCode::array(element, n)
            }
        }
        K::Alias | K::ValueBox => {
            let (mut e, b) = open_encaps(r, base)?;
            let id = e.read_string()?;
            let name = e.read_string()?;
            st.open.push((start, id.clone()));
            let content = decode_at(&mut e, b, st);
            st.open.pop();
            TypeCode::new(Repr::Alias {
                kind,
                id,
                name,
                content: content?,
            })
        }
        K::Value | K::Event => {
            let (mut e, b) = open_encaps(r, base)?;
            let id = e.read_string()?;
            let name = e.read_string()?;
            let modifier = e.read_short()?;
            st.open.push((start, id.clone()));
            let result = (|| {
                let concrete = decode_at(&mut e, b, st)?;
                let members = e.read_seq_with(10, |e| {
                    Ok(ValueMember {
                        name: e.read_string()?,
                        type_code: decode_at(e, b, st)?,
                        visibility: e.read_short()?,
                    })
                })?;
                Ok::<_, CdrError>((concrete, members))
            })();
            st.open.pop();
            let (concrete, members) = result?;
            let base_tc = (concrete.kind() != K::Null).then_some(concrete);
            TypeCode::value_tc(kind, &id, &name, modifier, base_tc, members)
        }
        simple => TypeCode::simple(simple),
    })
}

/// Opens the encapsulated parameter list of a complex TypeCode: a reader
/// over it and the absolute offset of its first byte.
fn open_encaps<'a>(r: &mut CdrReader<'a>, base: usize) -> Result<(CdrReader<'a>, usize), CdrError> {
    r.align(4)?;
    let inner_base = base + r.position() + 4;
    let e = r.read_encapsulation()?;
    Ok((e, inner_base))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ByteOrder, GiopVersion};

    fn node() -> TypeCode {
        TypeCode::struct_tc(
            "IDL:Test/Node:1.0",
            "Node",
            vec![
                StructMember {
                    name: "value".into(),
                    type_code: TypeCode::long(),
                },
                StructMember {
                    name: "children".into(),
                    type_code: TypeCode::sequence(TypeCode::recursive("IDL:Test/Node:1.0"), 0),
                },
            ],
        )
    }

    fn round_trip(tc: &TypeCode, order: ByteOrder) -> TypeCode {
        let mut w = CdrWriter::new(order, GiopVersion::V1_2);
        w.write_octet(1);
        tc.encode(&mut w).unwrap();
        let mut r = CdrReader::new(w.as_bytes(), order, GiopVersion::V1_2);
        r.read_octet().unwrap();
        let back = TypeCode::decode(&mut r).unwrap();
        assert!(r.is_empty());
        back
    }

    #[test]
    fn recursive_types_use_indirections() {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            assert_eq!(round_trip(&node(), order), node());
        }
        let alias = TypeCode::alias("IDL:Test/L:1.0", "L", TypeCode::long());
        assert!(alias.equivalent(&TypeCode::long()));
        assert!(!alias.equal(&TypeCode::long()));
        assert!(node().equivalent(&node().compact()));
        assert_eq!(node().member_name(1), Ok("children"));
        assert_eq!(node().member_type(5), Err(TypeCodeError::Bounds));
        assert_eq!(TypeCode::long().member_count(), Err(TypeCodeError::BadKind));
    }

    #[test]
    fn hostile_indirections_are_refused() {
        // Indirection pointing at itself.
        let mut bytes = vec![0xff, 0xff, 0xff, 0xff];
        bytes.extend_from_slice(&(-4i32).to_be_bytes());
        let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
        assert!(TypeCode::decode(&mut r).is_err());
        // Forward.
        let mut bytes = vec![0xff, 0xff, 0xff, 0xff];
        bytes.extend_from_slice(&100i32.to_be_bytes());
        let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
        assert!(TypeCode::decode(&mut r).is_err());
        // Deep nesting of sequences.
        let mut tc = TypeCode::long();
        for _ in 0..100 {
            tc = TypeCode::sequence(tc, 0);
        }
        let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        tc.encode(&mut w).unwrap();
        let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2);
        assert!(matches!(
            TypeCode::decode(&mut r),
            Err(CdrError::TooDeep { .. })
        ));
    }

    /// Regression: omniORB 4.2 writes a union's default label as a zero of
    /// the discriminator's type (8 aligned bytes for `unsigned long long`),
    /// not as the zero octet; both decode. The bytes are omniORB's own
    /// (`create_union_tc` marshalled little-endian, stale bytes in its
    /// alignment gaps included) for
    /// `union U switch (D) { case 0: unsigned short a; default: unsigned short b; }`.
    #[test]
    fn omniorb_default_labels_of_the_discriminator_type_decode() {
        for (disc, hex) in [
            (
                TypeCode::ulong(),
                "100000004800000001d422840a00000049444c3a553a312e30000000020000005500398d\
                 0500000001000000020000000000000002000000610000000400000000000000020000006200\
                 000004000000",
            ),
            (
                TypeCode::ulonglong(),
                "100000005400000001bb524a0a00000049444c3a553a312e3000398d020000005500398d\
                 1800000001000000020000000000000000000000020000006100000004000000020000000000\
                 000000000000020000006200000004000000",
            ),
        ] {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let mut r = CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2);
            let tc = TypeCode::decode(&mut r).unwrap();
            assert!(r.is_empty());
            let member = |label, name: &str| UnionMember {
                label,
                name: name.into(),
                type_code: TypeCode::ushort(),
            };
            let expected = TypeCode::union_tc(
                "IDL:U:1.0",
                "U",
                disc,
                1,
                vec![member(0, "a"), member(0, "b")],
            );
            assert_eq!(tc, expected);
            // Armillary's own form (the zero octet) still decodes.
            assert_eq!(round_trip(&expected, ByteOrder::Big), expected);
        }
    }
}
