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
//!
//! # The label of a union's default member
//!
//! A `tk_union` TypeCode carries a label for every member, the default
//! member included, and ORBs disagree on what that one is:
//!
//! - The CORBA API marks the default member with a label of type octet
//!   and value 0 (CORBA 3.0 §10.5.11.1, `UnionDef`: "a label with type
//!   octet and value 0 indicates the default union member"; the same in
//!   `TypeCode::member_label` and `ORB::create_union_tc`). The CDR
//!   encoding (§15.3.5.1) carries each member's label before its name
//!   and type; ORBs read the default member's two ways there.
//! - omniORB 4.2.5 and 4.3.3 write and read every label, the default
//!   member's too, as a value of the discriminator's type, at that type's
//!   alignment (`src/lib/omniORB/dynamic/typecode.cc`:
//!   `TypeCode_union::NP_marshalComplexParams` and
//!   `NP_unmarshalComplexParams`, through
//!   `TypeCode_union_helper::marshalLabel` / `unmarshalLabel`; 4.3.3
//!   differs only in macro names). The default member's value is 0
//!   (`create_union_tc` stores `Discriminator(0)`; omniidl's tables for
//!   `PR_union_tc` say `0`, `omniidl_be/cxx/dynskel/typecode.py`) and is
//!   ignored on reading. So omniORB misreads a zero octet wherever the
//!   two forms put the member's name at different places. It has no
//!   `wchar` discriminators in TypeCodes.
//! - TAO writes every label through `Case_T::marshal_label` in the
//!   discriminator's type (`tao/AnyTypeCode/Union_TypeCode.cpp`,
//!   `TypeCode_Case_T.cpp`); its IDL compiler gives the default case the
//!   union's default discriminator value, one no case uses
//!   (`be_union_branch::gen_default_label_value`; `(E) -1` for an enum
//!   whose enumerators are all used), not 0. It reads every label, the
//!   default's too, in the discriminator's type
//!   (`tao/AnyTypeCode/TypeCode_CDR_Extraction.cpp`, `tc_union_factory`;
//!   integer, char, boolean and enum discriminators only) and finds the
//!   default member by its index (`tao/AnyTypeCode/skip.cpp`).
//! - JacORB writes the zero octet and reads one octet for the default
//!   member (`org/jacorb/orb/typecode/UnionTypeCodeWriter.java`,
//!   `UnionTypeCodeReader.java`); so does the JDK ORB on reading
//!   (`com/sun/corba/se/impl/corba/TypeCodeImpl.java`: "for the default
//!   case, read off the zero octet").
//!
//! (TAO as in `DOCGroup/ACE_TAO`'s master, JacORB as in `JacORB/JacORB`'s
//! at 74b62ee.) Where the two forms put the member's name at the same
//! place (a `long` label that falls 4-aligned, any `char`, `boolean` or
//! `octet` one) every ORB reads either; elsewhere none reads both.
//!
//! So the writer chooses per receiver ([`DefaultLabelForm`], set on the
//! [`CdrWriter`]; the zero octet unless set). The ORB sets it per message:
//! a request takes the form its target reads, known from the
//! `TAG_ORB_TYPE` component of the target's IIOP profile
//! ([`DefaultLabelForm::read_by`]): omniORB publishes `0x41545400`
//! (`omniORB_TAG_ORB_TYPE`, `orbcore/constants.cc`, in every IIOP 1.1+
//! profile, `orbcore/ior.cc`) and TAO `0x54414f00` (`TAO_ORB_TYPE`), both
//! read the discriminator's type; JacORB publishes `0x4a414300`
//! (`ORBConstants.JACORB_ORB_ID`, added by `ORB.java`) and reads the zero
//! octet. A reference without one, or from Armillary (which reads both),
//! gets the ORB's configured form. A reply takes the form the client's own
//! TypeCodes showed ([`CdrReader::default_label_seen`]), in that request
//! or an earlier one on the connection, else the configured form: GIOP
//! does not say which ORB a client is.
//!
//! Armillary reads both forms, any label value (TAO's too), and tells them
//! apart for certain: where they put the member's name at the same place
//! there is nothing to tell; where one form's label cannot be read (a
//! zero octet is no `wchar`) it is the other; elsewhere the rest of the
//! union is read both ways, and the reading that decodes wins (no name
//! in a TypeCode may hold a NUL, as no IDL name does: a reading that
//! takes a length's zero octets for a name's characters fails); if both
//! do, the only one that ends exactly at the end of the union's
//! encapsulation. Two readings left undecided with different members
//! are a MARSHAL error, never a guess. Reading twice is bounded: one
//! TypeCode's decoding parses at most about twice as many TypeCodes as
//! its bytes can hold, so hostile nesting of ambiguous labels is refused
//! instead of taking exponential time.

use std::collections::BTreeMap;
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

/// How a TypeCode writes the label of a union's default member (see the
/// module docs for which ORB reads which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DefaultLabelForm {
    /// The zero octet, as the CORBA API marks the default member: what
    /// JacORB and the JDK ORB read.
    #[default]
    ZeroOctet,
    /// A zero of the discriminator's type, at that type's alignment: what
    /// omniORB and TAO read.
    DiscriminatorTyped,
}

impl DefaultLabelForm {
    /// The form the ORB that published `TAG_ORB_TYPE` id `orb_type` reads;
    /// `None` for Armillary (which reads both) and for ORBs not known.
    ///
    /// ```
    /// use armillary_giop::ior::{ORB_TYPE_JACORB, ORB_TYPE_OMNIORB};
    /// use armillary_giop::typecode::DefaultLabelForm;
    ///
    /// assert_eq!(
    ///     DefaultLabelForm::read_by(ORB_TYPE_OMNIORB),
    ///     Some(DefaultLabelForm::DiscriminatorTyped)
    /// );
    /// assert_eq!(
    ///     DefaultLabelForm::read_by(ORB_TYPE_JACORB),
    ///     Some(DefaultLabelForm::ZeroOctet)
    /// );
    /// assert_eq!(DefaultLabelForm::read_by(0x1234_5678), None);
    /// ```
    pub fn read_by(orb_type: u32) -> Option<DefaultLabelForm> {
        use crate::ior::{ORB_TYPE_JACORB, ORB_TYPE_OMNIORB, ORB_TYPE_TAO};
        match orb_type {
            ORB_TYPE_OMNIORB | ORB_TYPE_TAO => Some(DefaultLabelForm::DiscriminatorTyped),
            ORB_TYPE_JACORB => Some(DefaultLabelForm::ZeroOctet),
            _ => None,
        }
    }
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
                write_name(e, id)?;
                write_name(e, name)
            }),
            Repr::Struct {
                id, name, members, ..
            } => encaps(w, st, &|e, b, st| {
                write_name(e, id)?;
                write_name(e, name)?;
                e.write_len(members.len())?;
                for m in members {
                    write_name(e, &m.name)?;
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
                write_name(e, id)?;
                write_name(e, name)?;
                discriminator.encode_at(e, b, st)?;
                e.write_long(*default_index);
                e.write_len(members.len())?;
                for (i, m) in members.iter().enumerate() {
                    if i as i32 == *default_index {
                        match e.default_label() {
                            DefaultLabelForm::ZeroOctet => e.write_octet(0),
                            DefaultLabelForm::DiscriminatorTyped => {
                                write_label(e, discriminator, 0)?
                            }
                        }
                    } else {
                        write_label(e, discriminator, m.label)?;
                    }
                    write_name(e, &m.name)?;
                    m.type_code.encode_at(e, b, st)?;
                }
                Ok(())
            }),
            Repr::Enum { id, name, members } => encaps(w, st, &|e, _, _| {
                write_name(e, id)?;
                write_name(e, name)?;
                e.write_len(members.len())?;
                members.iter().try_for_each(|m| write_name(e, m))
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
                write_name(e, id)?;
                write_name(e, name)?;
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
                write_name(e, id)?;
                write_name(e, name)?;
                e.write_short(*modifier);
                match concrete {
                    Some(tc) => tc.encode_at(e, b, st)?,
                    None => TypeCode::null().encode_at(e, b, st)?,
                }
                e.write_len(members.len())?;
                for m in members {
                    write_name(e, &m.name)?;
                    m.type_code.encode_at(e, b, st)?;
                    e.write_short(m.visibility);
                }
                Ok(())
            }),
        }
    }

    /// Reads a TypeCode. A union's default label is read in either form
    /// (see the module docs); the form one showed unambiguously is noted
    /// on `r` ([`CdrReader::default_label_seen`]).
    pub fn decode(r: &mut CdrReader<'_>) -> Result<TypeCode, CdrError> {
        let mut st = DecodeState::default();
        let tc = decode_at(r, 0, &mut st)?;
        if let Some(form) = st.seen {
            r.note_default_label(form);
        }
        Ok(tc)
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
        TCKind::Char | TCKind::Octet => w.write_octet(u8::try_from(label).map_err(|_| bad)?),
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
        TCKind::Char | TCKind::Octet => r.read_octet()?.into(),
        TCKind::WChar => u32::from(r.read_wchar()?).into(),
        _ => {
            return Err(CdrError::Invalid {
                offset: r.position(),
                what: "invalid union discriminator type",
            })
        }
    })
}

/// What decoding one TypeCode keeps track of.
#[derive(Default)]
struct DecodeState {
    /// TypeCodes being decoded: (absolute offset, repository id).
    open: Vec<(usize, String)>,
    /// TypeCodes fully decoded, by absolute offset (for repeated types).
    /// Ordered, so that what a discarded reading of a default label added
    /// (everything from the label on) can be split off.
    done: BTreeMap<usize, TypeCode>,
    /// TypeCodes parsed so far, both readings of ambiguous labels counted.
    parsed: usize,
    /// The most `parsed` may reach: set from the length of the outermost
    /// encapsulation when it is opened (see [`parse_budget`]).
    budget: Option<usize>,
    /// The form of the first default label only one reading could take.
    seen: Option<DefaultLabelForm>,
}

impl DecodeState {
    /// Fails once more TypeCodes were parsed than the budget allows. The
    /// failure is the decoding's, not one reading's: which reading of an
    /// ambiguous label runs out depends only on the order they run in.
    fn check_budget(&self, offset: usize) -> Result<(), CdrError> {
        match self.budget {
            Some(budget) if self.parsed > budget => Err(CdrError::Invalid {
                offset,
                what: "TypeCode too costly to decode (ambiguous union default labels)",
            }),
            _ => Ok(()),
        }
    }
}

/// How many TypeCodes decoding a TypeCode whose outermost encapsulation
/// holds `len` bytes may parse: read once, every TypeCode in it starts at
/// its own 4-aligned offset, so at most `len / 4 + 1` of them; twice that
/// (and a little) leaves room for reading ambiguous default labels both
/// ways, where the wrong reading of well-formed input fails within a few
/// TypeCodes, but refuses input crafted to make both readings parse on and
/// on, nested (which would double the work at every level).
fn parse_budget(len: usize) -> usize {
    2 * (len / 4 + 1) + 16
}

/// Reads a TypeCode's repository id, name or member name. No IDL name
/// holds a NUL, and a C or C++ ORB would cut one there, so one that does
/// is refused: where a union's default label can be read two ways, the
/// wrong reading takes bytes of the other's lengths (whose high octets
/// are zero) for a name's characters, and fails here.
fn read_name(e: &mut CdrReader<'_>) -> Result<String, CdrError> {
    let offset = e.position();
    let name = e.read_string()?;
    match name.contains('\0') {
        true => Err(CdrError::Invalid {
            offset,
            what: "TypeCode name or repository id holds a NUL",
        }),
        false => Ok(name),
    }
}

/// Writes a TypeCode's repository id, name or member name: one holding a
/// NUL, which no receiver could read back (see [`read_name`]), is an
/// error.
fn write_name(e: &mut CdrWriter, name: &str) -> Result<(), CdrError> {
    if name.contains('\0') {
        return Err(CdrError::Invalid {
            offset: e.len(),
            what: "TypeCode name or repository id holds a NUL",
        });
    }
    e.write_string(name)
}

/// One way of reading a union's members from its default member on (see
/// [`read_members_from_default`]).
struct Reading<'a> {
    members: Vec<UnionMember>,
    /// The encapsulation after the last member.
    rest: CdrReader<'a>,
    /// The TypeCodes it decoded, by absolute offset.
    done: BTreeMap<usize, TypeCode>,
    /// The first form a union inside it showed.
    seen: Option<DefaultLabelForm>,
}

/// Reads a union's `n` members, the default one's label (at index
/// `default_index`) in whichever form it was written.
fn read_union_members(
    e: &mut CdrReader<'_>,
    b: usize,
    st: &mut DecodeState,
    disc: &TypeCode,
    default_index: i32,
    n: usize,
) -> Result<Vec<UnionMember>, CdrError> {
    let mut members = Vec::with_capacity(e.capacity_hint(n, 8));
    for i in 0..n {
        if i as i32 == default_index {
            members.extend(read_members_from_default(e, b, st, disc, n - i)?);
            break;
        }
        let label = read_label(e, disc)?;
        members.push(read_member(e, b, st, label)?);
    }
    Ok(members)
}

/// A member's name and type, after its label.
fn read_member(
    e: &mut CdrReader<'_>,
    b: usize,
    st: &mut DecodeState,
    label: i128,
) -> Result<UnionMember, CdrError> {
    Ok(UnionMember {
        label,
        name: read_name(e)?,
        type_code: decode_at(e, b, st)?,
    })
}

/// Reads the `count` last members of a union, the first of which is the
/// default member, whose label `e` is at. Its label may be the zero octet
/// or a value of the discriminator's type (any value: TAO writes the
/// union's default discriminator value). Where both put the member's name
/// at the same place, either will do; elsewhere the rest is read both
/// ways, and the reading taken is the one that decodes (where TAO's
/// label is a small number, the zero-octet reading can take the label for
/// a name's length and the typed reading's name length for its
/// characters, which [`read_name`] refuses for their zero octets); if
/// both do, the only one that ends exactly at the end of the
/// encapsulation. Two readings still undecided that differ are an error.
/// The default member's label is kept as 0.
fn read_members_from_default<'a>(
    e: &mut CdrReader<'a>,
    b: usize,
    st: &mut DecodeState,
    disc: &TypeCode,
    count: usize,
) -> Result<Vec<UnionMember>, CdrError> {
    let label_at = e.position();
    let mut octet = e.clone();
    let octet_label = octet.read_octet();
    let mut typed = e.clone();
    let typed_label = read_label(&mut typed, disc);
    // Where each reading finds the member's name (a string: 4-aligned).
    let name_at = |r: &CdrReader<'_>| {
        let mut r = r.clone();
        r.align(4).ok().map(|()| r.position())
    };
    // One reading: the name is at the same place either way (the bytes do
    // not tell the form), or one form's label cannot even be read (the
    // bytes are in the other form).
    let only = match (octet_label, typed_label) {
        (Ok(_), Ok(_)) if name_at(&octet) != name_at(&typed) => None,
        (Ok(_), Ok(_)) => Some((octet.clone(), None)),
        (Ok(_), Err(_)) => Some((octet.clone(), Some(DefaultLabelForm::ZeroOctet))),
        (Err(_), Ok(_)) => Some((typed.clone(), Some(DefaultLabelForm::DiscriminatorTyped))),
        (Err(err), Err(_)) => return Err(err),
    };
    if let Some((reader, form)) = only {
        if let Some(form) = form {
            st.seen.get_or_insert(form);
        }
        let (members, rest) = read_rest(reader, b, st, disc, count)?;
        *e = rest;
        return Ok(members);
    }
    // Every TypeCode either reading decodes starts after the label: what
    // each added to `done` is split off, and only the winner's kept.
    let split = b + label_at;
    let open = st.open.len();
    let seen = st.seen.take();
    let reading = |reader: CdrReader<'a>, st: &mut DecodeState| {
        let result = read_rest(reader, b, st, disc, count);
        st.open.truncate(open);
        let done = st.done.split_off(&split);
        let seen = st.seen.take();
        result.map(|(members, rest)| Reading {
            members,
            rest,
            done,
            seen,
        })
    };
    let as_octet = reading(octet, st);
    let as_typed = reading(typed, st);
    st.check_budget(label_at)?;
    let (winner, form) = match (as_octet, as_typed) {
        (Ok(o), Err(_)) => (o, Some(DefaultLabelForm::ZeroOctet)),
        (Err(_), Ok(t)) => (t, Some(DefaultLabelForm::DiscriminatorTyped)),
        // The typed reading's error: the form most ORBs write.
        (Err(_), Err(err)) => return Err(err),
        (Ok(o), Ok(t)) => {
            let only = |in_o: bool, in_t: bool| match (in_o, in_t) {
                (true, false) => Some(DefaultLabelForm::ZeroOctet),
                (false, true) => Some(DefaultLabelForm::DiscriminatorTyped),
                _ => None,
            };
            let form = only(o.rest.is_empty(), t.rest.is_empty());
            match form {
                Some(DefaultLabelForm::ZeroOctet) => (o, form),
                Some(DefaultLabelForm::DiscriminatorTyped) => (t, form),
                None if o.members == t.members => (o, None),
                None => {
                    return Err(CdrError::Invalid {
                        offset: label_at,
                        what: "union default label reads both as the zero octet and as a \
                               discriminator value, with different members",
                    })
                }
            }
        }
    };
    st.done.extend(winner.done);
    st.seen = seen.or(form).or(winner.seen);
    *e = winner.rest;
    Ok(winner.members)
}

/// [`read_members_from_default`]'s members, read at `e` (just after the
/// default member's label): that member, then the others with their
/// labels; with the encapsulation that follows.
fn read_rest<'a>(
    mut e: CdrReader<'a>,
    b: usize,
    st: &mut DecodeState,
    disc: &TypeCode,
    count: usize,
) -> Result<(Vec<UnionMember>, CdrReader<'a>), CdrError> {
    let mut members = Vec::with_capacity(e.capacity_hint(count, 8));
    members.push(read_member(&mut e, b, st, 0)?);
    for _ in 1..count {
        let label = read_label(&mut e, disc)?;
        members.push(read_member(&mut e, b, st, label)?);
    }
    Ok((members, e))
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
        st.parsed += 1;
        st.check_budget(offset)?;
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
            let (mut e, _) = open_encaps(r, base, st)?;
            let id = read_name(&mut e)?;
            let name = read_name(&mut e)?;
            TypeCode::interface(kind, &id, &name)
        }
        K::Struct | K::Except => {
            let (mut e, b) = open_encaps(r, base, st)?;
            let id = read_name(&mut e)?;
            let name = read_name(&mut e)?;
            st.open.push((start, id.clone()));
            let members = e.read_seq_with(8, |e| {
                Ok(StructMember {
                    name: read_name(e)?,
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
            let (mut e, b) = open_encaps(r, base, st)?;
            let id = read_name(&mut e)?;
            let name = read_name(&mut e)?;
            st.open.push((start, id.clone()));
            let result = (|| {
                let discriminator = decode_at(&mut e, b, st)?;
                let default_index = e.read_long()?;
                let n = e.read_seq_len(8)?;
                let members = read_union_members(&mut e, b, st, &discriminator, default_index, n)?;
                Ok::<_, CdrError>((discriminator, default_index, members))
            })();
            st.open.pop();
            let (discriminator, default_index, members) = result?;
            TypeCode::union_tc(&id, &name, discriminator, default_index, members)
        }
        K::Enum => {
            let (mut e, _) = open_encaps(r, base, st)?;
            let id = read_name(&mut e)?;
            let name = read_name(&mut e)?;
            let members = e.read_seq_with(5, read_name)?;
            TypeCode::new(Repr::Enum { id, name, members })
        }
        K::Sequence | K::Array => {
            let (mut e, b) = open_encaps(r, base, st)?;
            let element = decode_at(&mut e, b, st)?;
            let n = e.read_ulong()?;
            if kind == K::Sequence {
                TypeCode::sequence(element, n)
            } else {
                TypeCode::array(element, n)
            }
        }
        K::Alias | K::ValueBox => {
            let (mut e, b) = open_encaps(r, base, st)?;
            let id = read_name(&mut e)?;
            let name = read_name(&mut e)?;
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
            let (mut e, b) = open_encaps(r, base, st)?;
            let id = read_name(&mut e)?;
            let name = read_name(&mut e)?;
            let modifier = e.read_short()?;
            st.open.push((start, id.clone()));
            let result = (|| {
                let concrete = decode_at(&mut e, b, st)?;
                let members = e.read_seq_with(10, |e| {
                    Ok(ValueMember {
                        name: read_name(e)?,
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
/// over it and the absolute offset of its first byte. The first one opened
/// (the outermost) sets the decoding's budget.
fn open_encaps<'a>(
    r: &mut CdrReader<'a>,
    base: usize,
    st: &mut DecodeState,
) -> Result<(CdrReader<'a>, usize), CdrError> {
    r.align(4)?;
    let inner_base = base + r.position() + 4;
    let e = r.read_encapsulation()?;
    st.budget
        .get_or_insert_with(|| parse_budget(e.buffer().len()));
    Ok((e, inner_base))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ByteOrder, GiopVersion};

    /// The parse budget, which no input crafted so far reaches since a
    /// reading that takes a length's zero octets for a name fails (see
    /// `union_default_labels.rs`): a decoding that parsed more TypeCodes
    /// than an encapsulation's bytes can hold is refused.
    #[test]
    fn a_decoding_past_its_budget_is_refused() {
        let mut st = DecodeState {
            budget: Some(parse_budget(40)),
            ..DecodeState::default()
        };
        st.parsed = parse_budget(40);
        assert!(st.check_budget(7).is_ok());
        st.parsed += 1;
        assert!(matches!(
            st.check_budget(7),
            Err(CdrError::Invalid { offset: 7, what }) if what.contains("costly")
        ));
        // Only the outermost encapsulation sets one: none, no limit.
        let unset = DecodeState {
            parsed: usize::MAX,
            ..DecodeState::default()
        };
        assert!(unset.check_budget(0).is_ok());
    }

    #[test]
    fn names_holding_a_nul_are_neither_written_nor_read() {
        let tc = TypeCode::struct_tc(
            "IDL:S:1.0",
            "S",
            vec![StructMember {
                name: "a\0b".into(),
                type_code: TypeCode::long(),
            }],
        );
        let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        assert!(matches!(
            tc.encode(&mut w),
            Err(CdrError::Invalid { what, .. }) if what.contains("NUL")
        ));
        // The same bytes made by hand: refused when read.
        let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        w.write_ulong(TCKind::Struct as u32);
        w.write_encapsulation(|e| {
            e.write_string("IDL:S:1.0")?;
            e.write_string("S")?;
            e.write_ulong(1);
            e.write_string("a\0b")?;
            TypeCode::long().encode(e)
        })
        .unwrap();
        let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2);
        assert!(matches!(
            TypeCode::decode(&mut r),
            Err(CdrError::Invalid { what, .. }) if what.contains("NUL")
        ));
        // An empty name (omniORB sends them) is a name.
        let empty = TypeCode::struct_tc("", "", vec![]);
        let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        empty.encode(&mut w).unwrap();
        let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2);
        assert!(TypeCode::decode(&mut r).unwrap().equal(&empty));
    }

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
    /// not as the zero octet; both decode, the form is told, and written
    /// in that form the TypeCode gives omniORB's bytes back (but for the
    /// stale bytes in its alignment gaps). The bytes are omniORB's own
    /// (`create_union_tc` marshalled little-endian, stale bytes in its
    /// alignment gaps included) for
    /// `union U switch (D) { case 0: unsigned short a; default: unsigned short b; }`.
    #[test]
    fn omniorb_default_labels_of_the_discriminator_type_decode() {
        // The `unsigned long` label is 4-aligned, where both forms are the
        // same bytes; the `unsigned long long` one is not 8-aligned.
        for (disc, told, hex) in [
            (
                TypeCode::ulong(),
                None,
                "100000004800000001d422840a00000049444c3a553a312e30000000020000005500398d\
                 0500000001000000020000000000000002000000610000000400000000000000020000006200\
                 000004000000",
            ),
            (
                TypeCode::ulonglong(),
                Some(DefaultLabelForm::DiscriminatorTyped),
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
            assert_eq!(r.default_label_seen(), told);
            let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2)
                .with_default_label(DefaultLabelForm::DiscriminatorTyped);
            tc.encode(&mut w).unwrap();
            assert_eq!(w.len(), bytes.len());
            let stale = w.as_bytes().iter().zip(&bytes).filter(|(a, b)| a != b);
            assert!(stale.clone().all(|(ours, _)| *ours == 0));
            assert!(stale.count() <= 8);
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
