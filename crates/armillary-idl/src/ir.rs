//! The resolved IR: what the front end hands to back ends.
//!
//! A [`Spec`] is an arena of [`Definition`]s indexed by [`DefId`]. Every
//! name in the IDL has been resolved: a type that names a definition is a
//! [`Type::Named`] holding that definition's id, a raised exception is the
//! exception's id, a constant is its evaluated [`ConstValue`]. Reopened
//! modules are merged into one [`Module`] definition; a forward-declared
//! interface, valuetype, struct or union and its full definition are one
//! definition. Back ends walk [`Spec::roots`] (in declaration order) and
//! the `contents` of modules, interfaces and valuetypes; definitions from
//! included files are present (back ends need them to name types) and are
//! marked by [`Definition::from_main_file`] being false.
//!
//! ```
//! # use armillary_idl::{ir::{DefKind, Type, Primitive}, Frontend};
//! let spec = Frontend::new()
//!     .parse_str("m.idl", "module M { struct P { long x; }; };")
//!     .unwrap();
//! let module = spec.lookup("M::P").unwrap();
//! let DefKind::Struct(s) = &spec[module].kind else { unreachable!() };
//! assert_eq!(s.members[0].ty, Type::Primitive(Primitive::Long));
//! assert_eq!(spec[module].repository_id, "IDL:M/P:1.0");
//! ```

use std::fmt;
use std::ops::Index;
use std::path::Path;

pub use crate::source::{FileId, Loc, SourceFile};

/// Identifies a definition in a [`Spec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefId(pub(crate) u32);

impl DefId {
    /// The arena index of this definition.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A resolved IDL specification: every definition of the main files and of
/// the files they include.
#[derive(Debug, Clone)]
pub struct Spec {
    pub(crate) definitions: Vec<Definition>,
    /// The top-level definitions, in the order they are first declared.
    pub roots: Vec<DefId>,
    pub(crate) files: Vec<SourceFile>,
    /// Warnings found on the way (errors make no `Spec`).
    pub warnings: Vec<crate::Diagnostic>,
}

impl Index<DefId> for Spec {
    type Output = Definition;

    fn index(&self, id: DefId) -> &Definition {
        &self.definitions[id.index()]
    }
}

impl Spec {
    /// The definition `id` names.
    pub fn get(&self, id: DefId) -> Option<&Definition> {
        self.definitions.get(id.index())
    }

    /// Every definition with its id, in creation order (enclosing scopes
    /// before what they contain).
    pub fn definitions(&self) -> impl Iterator<Item = (DefId, &Definition)> {
        self.definitions
            .iter()
            .enumerate()
            .map(|(index, def)| (DefId(index as u32), def))
    }

    /// The definition with scoped name `name` (`"M::I"` or `"::M::I"`).
    pub fn lookup(&self, name: &str) -> Option<DefId> {
        let wanted: Vec<&str> = name.trim_start_matches("::").split("::").collect();
        self.definitions()
            .find(|(_, def)| {
                def.scoped_name
                    .iter()
                    .map(String::as_str)
                    .eq(wanted.iter().copied())
            })
            .map(|(id, _)| id)
    }

    /// The file table: every file read, with whether it was a main file.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The file `id`.
    pub fn file(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.index())
    }

    /// The paths of every IDL file read (main files and includes), for
    /// `cargo:rerun-if-changed`.
    pub fn input_files(&self) -> Vec<&Path> {
        self.files
            .iter()
            .filter(|file| {
                !file
                    .identity
                    .as_os_str()
                    .to_string_lossy()
                    .starts_with('\0')
            })
            .map(|file| file.path.as_path())
            .collect()
    }

    /// Follows typedefs: the type a (possibly aliased) type stands for.
    /// Arrays and sequences are returned as they are.
    pub fn unalias<'a>(&'a self, mut ty: &'a Type) -> &'a Type {
        // Typedef chains are acyclic (a typedef can only name what is
        // declared before it), but bound the walk anyway.
        for _ in 0..self.definitions.len() + 1 {
            match ty {
                Type::Named(id) => match self.get(*id).map(|def| &def.kind) {
                    Some(DefKind::Typedef(typedef)) => ty = &typedef.ty,
                    _ => return ty,
                },
                _ => return ty,
            }
        }
        ty
    }

    /// Every interface `interface` inherits from, directly or not, each
    /// once, nearest first.
    pub fn ancestors(&self, interface: DefId) -> Vec<DefId> {
        let mut out: Vec<DefId> = Vec::new();
        let mut queue = std::collections::VecDeque::from(self.direct_bases(interface));
        while let Some(base) = queue.pop_front() {
            if base == interface || out.contains(&base) {
                continue;
            }
            out.push(base);
            queue.extend(self.direct_bases(base));
        }
        out
    }

    /// The direct bases of an interface, or the value bases and supported
    /// interfaces of a valuetype.
    pub fn direct_bases(&self, id: DefId) -> Vec<DefId> {
        match self.get(id).map(|def| &def.kind) {
            Some(DefKind::Interface(interface)) => interface.bases.clone(),
            Some(DefKind::ValueType(value)) => {
                value.bases.iter().chain(&value.supports).copied().collect()
            }
            _ => Vec::new(),
        }
    }

    /// The operations and attributes of an interface or valuetype,
    /// inherited ones included (ancestors first, in declaration order),
    /// as `(declaring definition, operation or attribute)`.
    pub fn all_operations(&self, id: DefId) -> Vec<(DefId, DefId)> {
        let mut owners = self.ancestors(id);
        owners.reverse();
        owners.push(id);
        let mut out = Vec::new();
        for owner in owners {
            for &member in self.contents(owner) {
                if matches!(
                    self[member].kind,
                    DefKind::Operation(_) | DefKind::Attribute(_)
                ) {
                    out.push((owner, member));
                }
            }
        }
        out
    }

    /// The definitions nested in a module, interface or valuetype (and the
    /// types declared inline in a struct, union or exception).
    pub fn contents(&self, id: DefId) -> &[DefId] {
        match self.get(id).map(|def| &def.kind) {
            Some(DefKind::Module(module)) => &module.contents,
            Some(DefKind::Interface(interface)) => &interface.contents,
            Some(DefKind::ValueType(value)) => &value.contents,
            Some(DefKind::Struct(s)) => &s.nested,
            Some(DefKind::Union(u)) => &u.nested,
            Some(DefKind::Exception(e)) => &e.nested,
            _ => &[],
        }
    }
}

/// One named definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The identifier (escape removed).
    pub name: String,
    /// The absolute scoped name, outermost first (`["M", "I", "op"]`).
    pub scoped_name: Vec<String>,
    /// The repository id, such as `IDL:omg.org/CORBA/Object:1.0`.
    pub repository_id: String,
    /// The enclosing definition (`None` at the top level).
    pub parent: Option<DefId>,
    /// Where the definition is (for a forward-declared type, its full
    /// definition; for a reopened module, its first opening).
    pub loc: Loc,
    /// The comment written just above the definition.
    pub doc: Option<String>,
    /// Declared in a file named on the command line (a module: opened in
    /// one). Back ends usually emit only these.
    pub from_main_file: bool,
    /// What the definition is.
    pub kind: DefKind,
}

impl Definition {
    /// `::M::I`.
    pub fn absolute_name(&self) -> String {
        let mut out = String::new();
        for part in &self.scoped_name {
            out.push_str("::");
            out.push_str(part);
        }
        out
    }
}

/// The kinds of definition.
#[derive(Debug, Clone, PartialEq)]
pub enum DefKind {
    /// `module`.
    Module(Module),
    /// `interface`, `abstract interface`, `local interface`.
    Interface(Interface),
    /// `struct`.
    Struct(Struct),
    /// `union`.
    Union(Union),
    /// `enum`.
    Enum(Enum),
    /// `exception`.
    Exception(Exception),
    /// One declarator of a `typedef`.
    Typedef(Typedef),
    /// `const`.
    Const(Const),
    /// `native`.
    Native,
    /// `valuetype`, `abstract valuetype`, `custom valuetype`.
    ValueType(ValueType),
    /// A value box: `valuetype Name Type;`.
    ValueBox(ValueBox),
    /// An operation of an interface or valuetype.
    Operation(Operation),
    /// One declarator of an attribute of an interface or valuetype.
    Attribute(Attribute),
}

impl DefKind {
    /// The kind with its indefinite article (`"an interface"`).
    pub fn describe_with_article(&self) -> String {
        let word = self.describe();
        let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {word}")
    }

    /// A word for the kind, as used in diagnostics (`"interface"`).
    pub fn describe(&self) -> &'static str {
        match self {
            DefKind::Module(_) => "module",
            DefKind::Interface(_) => "interface",
            DefKind::Struct(_) => "struct",
            DefKind::Union(_) => "union",
            DefKind::Enum(_) => "enum",
            DefKind::Exception(_) => "exception",
            DefKind::Typedef(_) => "typedef",
            DefKind::Const(_) => "constant",
            DefKind::Native => "native type",
            DefKind::ValueType(_) => "valuetype",
            DefKind::ValueBox(_) => "value box",
            DefKind::Operation(_) => "operation",
            DefKind::Attribute(_) => "attribute",
        }
    }
}

/// A module; reopenings are merged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Module {
    /// The definitions inside, in declaration order across reopenings.
    pub contents: Vec<DefId>,
}

/// `abstract`, `local`, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterfaceKind {
    /// A plain (remotely callable) interface.
    Unconstrained,
    /// `abstract interface`: an object reference or a value.
    Abstract,
    /// `local interface`: never remote.
    Local,
}

/// An interface.
#[derive(Debug, Clone, PartialEq)]
pub struct Interface {
    /// Abstract, local or unconstrained.
    pub kind: InterfaceKind,
    /// Direct bases, in declaration order.
    pub bases: Vec<DefId>,
    /// Nested types, constants, exceptions, operations and attributes.
    pub contents: Vec<DefId>,
    /// False for an interface that is only forward-declared.
    pub defined: bool,
}

/// A struct or exception member, union case, or valuetype state member.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The member name.
    pub name: String,
    /// Its type (an array type when the declarator has dimensions).
    pub ty: Type,
    /// The comment above the member.
    pub doc: Option<String>,
    /// Where the member's name is.
    pub loc: Loc,
}

/// A struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    /// Members in order.
    pub members: Vec<Member>,
    /// Types declared inline in member declarations.
    pub nested: Vec<DefId>,
}

/// A union label.
#[derive(Debug, Clone, PartialEq)]
pub enum UnionLabel {
    /// `case VALUE:`, evaluated in the discriminator's type.
    Value(ConstValue),
    /// `default:`.
    Default,
}

/// One case (branch) of a union.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionCase {
    /// The labels that select this branch.
    pub labels: Vec<UnionLabel>,
    /// The branch's member.
    pub member: Member,
}

/// A discriminated union.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// The discriminator type as written (possibly a typedef).
    pub discriminator: Type,
    /// The cases in order.
    pub cases: Vec<UnionCase>,
    /// The index in `cases` of the case with the `default` label.
    pub default_case: Option<usize>,
    /// When there is no `default` label and the labels do not cover every
    /// discriminator value: a value that selects no member (the union's
    /// implicit default).
    pub implicit_default: Option<ConstValue>,
    /// Types declared inline in the discriminator or in cases.
    pub nested: Vec<DefId>,
}

/// One enumerator.
#[derive(Debug, Clone, PartialEq)]
pub struct Enumerator {
    /// The enumerator name.
    pub name: String,
    /// The comment above it.
    pub doc: Option<String>,
    /// Where it is.
    pub loc: Loc,
}

/// An enum; enumerator `i` has the value `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Enum {
    /// The enumerators in order.
    pub enumerators: Vec<Enumerator>,
}

/// An exception.
#[derive(Debug, Clone, PartialEq)]
pub struct Exception {
    /// Members in order (possibly none).
    pub members: Vec<Member>,
    /// Types declared inline in member declarations.
    pub nested: Vec<DefId>,
}

/// One typedef declarator.
#[derive(Debug, Clone, PartialEq)]
pub struct Typedef {
    /// The aliased type (an array type when the declarator has dimensions).
    pub ty: Type,
}

/// A constant.
#[derive(Debug, Clone, PartialEq)]
pub struct Const {
    /// The declared type (for a plain `fixed`, the value's digits and scale).
    pub ty: Type,
    /// The evaluated value, already checked against the type.
    pub value: ConstValue,
}

/// `abstract`, `custom`, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A concrete (stateful) valuetype.
    Concrete,
    /// `abstract valuetype`: no state, no factories.
    Abstract,
    /// `custom valuetype`: marshals itself.
    Custom,
}

/// A valuetype state member.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMember {
    /// `public` (or `private`).
    pub public: bool,
    /// Name, type and doc.
    pub member: Member,
}

/// A valuetype factory (initializer).
#[derive(Debug, Clone, PartialEq)]
pub struct Factory {
    /// The factory name.
    pub name: String,
    /// The parameters (all `in`).
    pub params: Vec<Param>,
    /// The exceptions it raises.
    pub raises: Vec<DefId>,
    /// The comment above it.
    pub doc: Option<String>,
    /// Where it is.
    pub loc: Loc,
}

/// A valuetype.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueType {
    /// Concrete, abstract or custom.
    pub kind: ValueKind,
    /// Whether the (first, concrete) base is `truncatable`.
    pub truncatable: bool,
    /// Value bases: the concrete base first, if any, then abstract ones.
    pub bases: Vec<DefId>,
    /// Supported interfaces.
    pub supports: Vec<DefId>,
    /// Nested types, constants, exceptions, operations and attributes.
    pub contents: Vec<DefId>,
    /// State members in order.
    pub state_members: Vec<StateMember>,
    /// Factories in order.
    pub factories: Vec<Factory>,
    /// False for a valuetype that is only forward-declared.
    pub defined: bool,
}

/// A value box.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueBox {
    /// The boxed type.
    pub ty: Type,
}

/// How a parameter is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `in`.
    In,
    /// `out`.
    Out,
    /// `inout`.
    InOut,
}

/// An operation parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The parameter name.
    pub name: String,
    /// In, out or inout.
    pub direction: Direction,
    /// Its type.
    pub ty: Type,
    /// Where its name is.
    pub loc: Loc,
}

/// An operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// `oneway` (then the return type is void, parameters are `in`, and
    /// nothing is raised).
    pub oneway: bool,
    /// `None` for `void`.
    pub return_type: Option<Type>,
    /// The parameters in order.
    pub params: Vec<Param>,
    /// The user exceptions it raises.
    pub raises: Vec<DefId>,
    /// The `context` strings.
    pub context: Vec<String>,
}

/// One attribute declarator.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// `readonly`.
    pub readonly: bool,
    /// The attribute's type.
    pub ty: Type,
    /// Exceptions the getter raises.
    pub get_raises: Vec<DefId>,
    /// Exceptions the setter raises.
    pub set_raises: Vec<DefId>,
}

/// The basic types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `short`.
    Short,
    /// `long`.
    Long,
    /// `long long`.
    LongLong,
    /// `unsigned short`.
    UShort,
    /// `unsigned long`.
    ULong,
    /// `unsigned long long`.
    ULongLong,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `long double`.
    LongDouble,
    /// `char` (one ISO Latin-1 byte).
    Char,
    /// `wchar`.
    WChar,
    /// `boolean`.
    Boolean,
    /// `octet`.
    Octet,
}

impl Primitive {
    /// The IDL spelling.
    pub fn idl_name(self) -> &'static str {
        match self {
            Primitive::Short => "short",
            Primitive::Long => "long",
            Primitive::LongLong => "long long",
            Primitive::UShort => "unsigned short",
            Primitive::ULong => "unsigned long",
            Primitive::ULongLong => "unsigned long long",
            Primitive::Float => "float",
            Primitive::Double => "double",
            Primitive::LongDouble => "long double",
            Primitive::Char => "char",
            Primitive::WChar => "wchar",
            Primitive::Boolean => "boolean",
            Primitive::Octet => "octet",
        }
    }

    /// The inclusive range of an integer type (`octet` included).
    pub fn integer_range(self) -> Option<(i128, i128)> {
        Some(match self {
            Primitive::Short => (i16::MIN.into(), i16::MAX.into()),
            Primitive::Long => (i32::MIN.into(), i32::MAX.into()),
            Primitive::LongLong => (i64::MIN.into(), i64::MAX.into()),
            Primitive::UShort => (0, u16::MAX.into()),
            Primitive::ULong => (0, u32::MAX.into()),
            Primitive::ULongLong => (0, u64::MAX.into()),
            Primitive::Octet => (0, u8::MAX.into()),
            _ => return None,
        })
    }
}

/// A type, with every name resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// A basic type.
    Primitive(Primitive),
    /// `string` or `string<bound>`.
    String {
        /// The maximum length, if bounded.
        bound: Option<u32>,
    },
    /// `wstring` or `wstring<bound>`.
    WString {
        /// The maximum length, if bounded.
        bound: Option<u32>,
    },
    /// `sequence<element>` or `sequence<element, bound>`.
    Sequence {
        /// The element type.
        element: Box<Type>,
        /// The maximum length, if bounded.
        bound: Option<u32>,
    },
    /// An array declarator: `element name[d0][d1]...`.
    Array {
        /// The element type.
        element: Box<Type>,
        /// The dimensions, outermost first.
        dimensions: Vec<u32>,
    },
    /// `fixed<digits, scale>`.
    Fixed {
        /// Total decimal digits (1 to 31).
        digits: u8,
        /// Digits after the decimal point (0 to `digits`).
        scale: u8,
    },
    /// `any`.
    Any,
    /// `Object`.
    Object,
    /// `ValueBase`.
    ValueBase,
    /// `CORBA::TypeCode`.
    TypeCode,
    /// `CORBA::Principal`.
    Principal,
    /// A named type: the typedef, struct, union, enum, interface,
    /// valuetype, value box or native it names.
    Named(DefId),
}

/// A fixed-point decimal: `value × 10^-scale`, at most 31 digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedValue {
    /// The unscaled value.
    pub value: i128,
    /// Digits after the decimal point.
    pub scale: u8,
}

impl FixedValue {
    /// The number of significant digits (at least 1, at least `scale`).
    pub fn digits(&self) -> u8 {
        let mut magnitude = self.value.unsigned_abs();
        let mut count = 0u8;
        while magnitude > 0 {
            magnitude /= 10;
            count += 1;
        }
        count.max(self.scale).max(1)
    }
}

impl fmt::Display for FixedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let magnitude = self.value.unsigned_abs().to_string();
        let scale = usize::from(self.scale);
        let padded = if magnitude.len() <= scale {
            format!("{}{magnitude}", "0".repeat(scale + 1 - magnitude.len()))
        } else {
            magnitude
        };
        let (int_part, frac_part) = padded.split_at(padded.len() - scale);
        if self.value < 0 {
            f.write_str("-")?;
        }
        f.write_str(int_part)?;
        if !frac_part.is_empty() {
            write!(f, ".{frac_part}")?;
        }
        Ok(())
    }
}

/// The value of a constant or union label, in its type.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    /// `short`.
    Short(i16),
    /// `long`.
    Long(i32),
    /// `long long`.
    LongLong(i64),
    /// `unsigned short`.
    UShort(u16),
    /// `unsigned long`.
    ULong(u32),
    /// `unsigned long long`.
    ULongLong(u64),
    /// `octet`.
    Octet(u8),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `long double` (held as a double).
    LongDouble(f64),
    /// `char`: one ISO Latin-1 byte.
    Char(u8),
    /// `wchar`.
    WChar(char),
    /// `boolean`.
    Boolean(bool),
    /// `string`.
    String(String),
    /// `wstring`.
    WString(String),
    /// `fixed`.
    Fixed(FixedValue),
    /// An enumerator: the enum and the enumerator's index.
    Enumerator {
        /// The enum definition.
        enum_def: DefId,
        /// The enumerator's position (its value).
        index: u32,
    },
}

impl ConstValue {
    /// The value of an integer (or octet) constant.
    pub fn as_integer(&self) -> Option<i128> {
        Some(match *self {
            ConstValue::Short(v) => v.into(),
            ConstValue::Long(v) => v.into(),
            ConstValue::LongLong(v) => v.into(),
            ConstValue::UShort(v) => v.into(),
            ConstValue::ULong(v) => v.into(),
            ConstValue::ULongLong(v) => v.into(),
            ConstValue::Octet(v) => v.into(),
            _ => return None,
        })
    }
}

impl fmt::Display for ConstValue {
    /// IDL-like text: `42`, `1.5`, `'a'`, `"text"`, `L"text"`, `12.50d`,
    /// `TRUE`; an enumerator shows as `enumerator#index`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Short(v) => write!(f, "{v}"),
            ConstValue::Long(v) => write!(f, "{v}"),
            ConstValue::LongLong(v) => write!(f, "{v}"),
            ConstValue::UShort(v) => write!(f, "{v}"),
            ConstValue::ULong(v) => write!(f, "{v}"),
            ConstValue::ULongLong(v) => write!(f, "{v}"),
            ConstValue::Octet(v) => write!(f, "{v}"),
            ConstValue::Float(v) => write!(f, "{v:?}"),
            ConstValue::Double(v) | ConstValue::LongDouble(v) => write!(f, "{v:?}"),
            ConstValue::Char(v) => write!(f, "{:?}", char::from(*v)),
            ConstValue::WChar(v) => write!(f, "L{v:?}"),
            ConstValue::Boolean(true) => f.write_str("TRUE"),
            ConstValue::Boolean(false) => f.write_str("FALSE"),
            ConstValue::String(v) => write!(f, "{v:?}"),
            ConstValue::WString(v) => write!(f, "L{v:?}"),
            ConstValue::Fixed(v) => write!(f, "{v}d"),
            ConstValue::Enumerator { index, .. } => write!(f, "enumerator#{index}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_display_and_digits() {
        let cases = [
            (12345, 2, "123.45", 5),
            (5, 2, "0.05", 2),
            (-5, 0, "-5", 1),
            (0, 0, "0", 1),
            (-1234, 3, "-1.234", 4),
        ];
        for (value, scale, text, digits) in cases {
            let fixed = FixedValue { value, scale };
            assert_eq!(fixed.to_string(), text);
            assert_eq!(fixed.digits(), digits, "{text}");
        }
    }
}
