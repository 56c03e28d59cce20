//! The parse tree: IDL as written, before names are resolved.
//!
//! This is the parser's output and the resolver's input, and nothing else
//! sees it: back ends consume the resolved [`crate::ir`]. Every node keeps
//! its [`Loc`] and the doc comment written above it.

use std::fmt;

use crate::lexer::Pragma;
use crate::source::Loc;

/// An identifier with its escape (a leading `_`) removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ident {
    pub(crate) name: String,
    pub(crate) loc: Loc,
}

/// `A::B::C` or `::A::B`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopedName {
    pub(crate) absolute: bool,
    pub(crate) parts: Vec<Ident>,
    pub(crate) loc: Loc,
}

impl fmt::Display for ScopedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.absolute {
            f.write_str("::")?;
        }
        for (index, part) in self.parts.iter().enumerate() {
            if index > 0 {
                f.write_str("::")?;
            }
            f.write_str(&part.name)?;
        }
        Ok(())
    }
}

/// One declaration in a module, interface or valuetype body (or at the top
/// level), including the pragmas and file boundaries between them.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Module(Module),
    Interface(Interface),
    InterfaceForward(InterfaceForward),
    Value(Value),
    ValueForward(ValueForward),
    ValueBox(ValueBox),
    Const(Const),
    Typedef(Typedef),
    Struct(Struct),
    StructForward(Forward),
    Union(Union),
    UnionForward(Forward),
    Enum(Enum),
    Native(Native),
    Exception(Exception),
    Operation(Operation),
    Attribute(Attribute),
    StateMember(StateMember),
    Factory(Factory),
    TypeId(TypeId),
    TypePrefix(TypePrefix),
    Import(Import),
    Pragma(Pragma, Loc),
    FileEnter,
    FileExit,
}

#[derive(Debug, Clone)]
pub(crate) struct Module {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) items: Vec<Item>,
}

/// `abstract`, `local`, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InterfaceKind {
    Unconstrained,
    Abstract,
    Local,
}

#[derive(Debug, Clone)]
pub(crate) struct Interface {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) kind: InterfaceKind,
    pub(crate) bases: Vec<ScopedName>,
    pub(crate) items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub(crate) struct InterfaceForward {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) kind: InterfaceKind,
}

/// `abstract`, `custom`, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    Concrete,
    Abstract,
    Custom,
}

#[derive(Debug, Clone)]
pub(crate) struct Value {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) kind: ValueKind,
    /// `truncatable` was written before the first base.
    pub(crate) truncatable: Option<Loc>,
    pub(crate) bases: Vec<ScopedName>,
    pub(crate) supports: Vec<ScopedName>,
    pub(crate) items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub(crate) struct ValueForward {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) is_abstract: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct ValueBox {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) ty: TypeSpec,
}

#[derive(Debug, Clone)]
pub(crate) struct Const {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) ty: TypeSpec,
    pub(crate) value: Expr,
}

/// A declarator: a name and array dimensions.
#[derive(Debug, Clone)]
pub(crate) struct Declarator {
    pub(crate) name: Ident,
    pub(crate) dims: Vec<Expr>,
}

#[derive(Debug, Clone)]
pub(crate) struct Typedef {
    pub(crate) doc: Option<String>,
    pub(crate) ty: TypeSpec,
    pub(crate) declarators: Vec<Declarator>,
}

/// A struct or exception member line: one type, several declarators.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) doc: Option<String>,
    pub(crate) ty: TypeSpec,
    pub(crate) declarators: Vec<Declarator>,
}

#[derive(Debug, Clone)]
pub(crate) struct Struct {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) members: Vec<Member>,
}

/// `struct X;` or `union X;`.
#[derive(Debug, Clone)]
pub(crate) struct Forward {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) enum CaseLabel {
    Value(Expr),
    Default(Loc),
}

#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) doc: Option<String>,
    pub(crate) labels: Vec<CaseLabel>,
    pub(crate) ty: TypeSpec,
    pub(crate) declarator: Declarator,
}

#[derive(Debug, Clone)]
pub(crate) struct Union {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) discriminator: TypeSpec,
    pub(crate) cases: Vec<Case>,
}

#[derive(Debug, Clone)]
pub(crate) struct Enumerator {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Enum {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) enumerators: Vec<Enumerator>,
}

#[derive(Debug, Clone)]
pub(crate) struct Native {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Exception {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) members: Vec<Member>,
}

/// `in`, `out` or `inout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    In,
    Out,
    InOut,
}

#[derive(Debug, Clone)]
pub(crate) struct Param {
    pub(crate) direction: Direction,
    pub(crate) ty: TypeSpec,
    pub(crate) name: Ident,
}

#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    /// Where `oneway` is written, if it is.
    pub(crate) oneway: Option<Loc>,
    /// `None` for `void`.
    pub(crate) return_type: Option<TypeSpec>,
    pub(crate) params: Vec<Param>,
    pub(crate) raises: Vec<ScopedName>,
    pub(crate) raises_loc: Option<Loc>,
    pub(crate) context: Vec<(String, Loc)>,
}

#[derive(Debug, Clone)]
pub(crate) struct Attribute {
    pub(crate) doc: Option<String>,
    pub(crate) readonly: bool,
    pub(crate) ty: TypeSpec,
    pub(crate) names: Vec<Ident>,
    pub(crate) get_raises: Vec<ScopedName>,
    pub(crate) set_raises: Vec<ScopedName>,
}

#[derive(Debug, Clone)]
pub(crate) struct StateMember {
    pub(crate) doc: Option<String>,
    pub(crate) public: bool,
    pub(crate) ty: TypeSpec,
    pub(crate) declarators: Vec<Declarator>,
}

#[derive(Debug, Clone)]
pub(crate) struct Factory {
    pub(crate) name: Ident,
    pub(crate) doc: Option<String>,
    pub(crate) params: Vec<Param>,
    pub(crate) raises: Vec<ScopedName>,
}

#[derive(Debug, Clone)]
pub(crate) struct TypeId {
    pub(crate) name: ScopedName,
    pub(crate) id: String,
    pub(crate) loc: Loc,
}

#[derive(Debug, Clone)]
pub(crate) struct TypePrefix {
    pub(crate) name: ScopedName,
    pub(crate) prefix: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Import {
    pub(crate) what: String,
    pub(crate) loc: Loc,
}

/// The built-in types with no parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BaseType {
    Short,
    Long,
    LongLong,
    UShort,
    ULong,
    ULongLong,
    Float,
    Double,
    LongDouble,
    Char,
    WChar,
    Boolean,
    Octet,
    Any,
    Object,
    ValueBase,
}

/// A type as written.
#[derive(Debug, Clone)]
pub(crate) enum TypeSpec {
    Base(BaseType, Loc),
    String {
        wide: bool,
        bound: Option<Box<Expr>>,
        loc: Loc,
    },
    Sequence {
        element: Box<TypeSpec>,
        bound: Option<Box<Expr>>,
        loc: Loc,
    },
    /// `fixed<d, s>`, or plain `fixed` (only in a constant declaration).
    Fixed {
        digits_scale: Option<(Box<Expr>, Box<Expr>)>,
        loc: Loc,
    },
    Named(ScopedName),
    Struct(Box<Struct>),
    Union(Box<Union>),
    Enum(Box<Enum>),
}

impl TypeSpec {
    pub(crate) fn loc(&self) -> Loc {
        match self {
            TypeSpec::Base(_, loc)
            | TypeSpec::String { loc, .. }
            | TypeSpec::Sequence { loc, .. }
            | TypeSpec::Fixed { loc, .. } => *loc,
            TypeSpec::Named(name) => name.loc,
            TypeSpec::Struct(s) => s.name.loc,
            TypeSpec::Union(u) => u.name.loc,
            TypeSpec::Enum(e) => e.name.loc,
        }
    }
}

/// Binary operators of constant expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Or,
    Xor,
    And,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl BinaryOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "|",
            BinaryOp::Xor => "^",
            BinaryOp::And => "&",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
        }
    }
}

/// Unary operators of constant expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    Neg,
    Plus,
    Not,
}

/// A literal in a constant expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    Int(u64),
    Float(String),
    Fixed(String),
    Char(u8),
    WChar(char),
    Str(String),
    WStr(String),
    Bool(bool),
}

/// A constant expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        /// Where the operator is.
        loc: Loc,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
        loc: Loc,
    },
    Literal(Literal, Loc),
    Name(ScopedName),
}

impl Expr {
    /// Where the expression starts.
    pub(crate) fn start(&self) -> Loc {
        match self {
            Expr::Binary { lhs, .. } => lhs.start(),
            other => other.loc(),
        }
    }

    /// Where the expression's operator (or the whole of a primary
    /// expression) is.
    pub(crate) fn loc(&self) -> Loc {
        match self {
            Expr::Binary { loc, .. } | Expr::Unary { loc, .. } | Expr::Literal(_, loc) => *loc,
            Expr::Name(name) => name.loc,
        }
    }
}
