//! Which standard traits a generated type implements, and the attributes
//! the user asked for ([`Options::type_attribute`] and
//! [`Options::field_attribute`]).
//!
//! Every struct, exception, union and enum implements `Default` (structs
//! and exceptions: every member's default, a `fixed<d,s>` being zero at
//! scale `s`; enums: the first enumerator; unions: the first member that a
//! label selects). It is derived where Rust can derive it and written out
//! where it cannot (arrays longer than 32, fixed-point members with a
//! scale, and unions, which `derive(Default)` does not cover).
//!
//! `Eq` and `Hash` are derived where every member allows them: not for
//! `float`, `double` or `any` (which compares its value's floats), nor
//! for anything that contains one. Recursive types are judged
//! co-inductively: a type that reaches itself only through members that
//! allow `Eq` allows it.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Generator, Options};
use crate::ir::{DefId, DefKind, Primitive, Type};

/// The longest array for which the standard library implements `Default`.
const MAX_DEFAULT_ARRAY: u32 = 32;

impl Generator<'_> {
    /// True when every member of definition `id` (a struct, exception or
    /// union) implements `Eq` and `Hash`.
    pub(super) fn members_eq_hash(&self, id: DefId) -> bool {
        self.eq_hash_walk(&Type::Named(id), &mut Vec::new())
    }

    fn eq_hash_walk(&self, ty: &Type, visiting: &mut Vec<DefId>) -> bool {
        match ty {
            Type::Primitive(p) => !matches!(p, Primitive::Float | Primitive::Double),
            Type::String { .. }
            | Type::WString { .. }
            | Type::Fixed { .. }
            | Type::Object
            | Type::TypeCode
            | Type::Principal => true,
            Type::Any | Type::ValueBase => false,
            Type::Sequence { element, .. } | Type::Array { element, .. } => {
                self.eq_hash_walk(element, visiting)
            }
            Type::Named(id) => {
                if visiting.contains(id) {
                    return true;
                }
                visiting.push(*id);
                let answer = match &self.spec[*id].kind {
                    DefKind::Typedef(t) => self.eq_hash_walk(&t.ty, visiting),
                    DefKind::Struct(s) => {
                        s.members.iter().all(|m| self.eq_hash_walk(&m.ty, visiting))
                    }
                    DefKind::Exception(e) => {
                        e.members.iter().all(|m| self.eq_hash_walk(&m.ty, visiting))
                    }
                    DefKind::Union(u) => {
                        self.eq_hash_walk(&u.discriminator, visiting)
                            && u.cases
                                .iter()
                                .all(|c| self.eq_hash_walk(&c.member.ty, visiting))
                    }
                    DefKind::Enum(_) => true,
                    DefKind::Interface(i) => i.kind != crate::ir::InterfaceKind::Local,
                    _ => false,
                };
                visiting.pop();
                answer
            }
        }
    }

    /// True when a `Result` whose error is an enum over the exceptions
    /// `raises` may be large enough for `clippy::result_large_err` (128
    /// bytes): the estimate errs on the large side, so the lint is allowed
    /// only on the methods of operations that raise a large exception.
    pub(super) fn raises_large(&self, raises: &[DefId]) -> bool {
        raises
            .iter()
            .any(|&e| self.approx_size(&Type::Named(e), &mut Vec::new()) >= 112)
    }

    /// An over-estimate of the size of `ty`'s Rust form, in bytes.
    fn approx_size(&self, ty: &Type, visiting: &mut Vec<DefId>) -> usize {
        const PAD: usize = 8;
        match ty {
            Type::Primitive(p) => match p {
                Primitive::Boolean | Primitive::Octet => 1,
                Primitive::Short | Primitive::UShort => 2,
                Primitive::Long
                | Primitive::ULong
                | Primitive::Float
                | Primitive::Char
                | Primitive::WChar => 4,
                Primitive::LongLong | Primitive::ULongLong | Primitive::Double => 8,
                Primitive::LongDouble => 16,
            },
            Type::String { .. }
            | Type::WString { .. }
            | Type::Sequence { .. }
            | Type::Principal => 24,
            Type::Fixed { .. } => 32,
            Type::Object | Type::TypeCode => 8,
            Type::Any => 128,
            Type::ValueBase => 0,
            Type::Array {
                element,
                dimensions,
            } => dimensions
                .iter()
                .fold(self.approx_size(element, visiting), |size, &d| {
                    size.saturating_mul(d as usize)
                }),
            Type::Named(id) => {
                if visiting.contains(id) {
                    return 24;
                }
                visiting.push(*id);
                let size = match &self.spec[*id].kind {
                    DefKind::Typedef(t) => self.approx_size(&t.ty, visiting),
                    DefKind::Struct(s) => s
                        .members
                        .iter()
                        .map(|m| self.approx_size(&m.ty, visiting) + PAD)
                        .sum(),
                    DefKind::Exception(e) => e
                        .members
                        .iter()
                        .map(|m| self.approx_size(&m.ty, visiting) + PAD)
                        .sum(),
                    DefKind::Union(u) => {
                        self.approx_size(&u.discriminator, visiting)
                            + 2 * PAD
                            + u.cases
                                .iter()
                                .map(|c| self.approx_size(&c.member.ty, visiting))
                                .max()
                                .unwrap_or(0)
                    }
                    DefKind::Enum(_) => 4,
                    _ => 16,
                };
                visiting.pop();
                size
            }
        }
    }

    /// True when `derive(Default)` works for a member of type `ty`: every
    /// generated type implements `Default`, so only arrays longer than 32
    /// stand in the way.
    pub(super) fn derives_default(&self, ty: &Type) -> bool {
        match self.spec.unalias(ty) {
            // `Fixed::default()` is zero with scale 0; a `fixed<d,s>` member
            // starts at zero with its own scale.
            Type::Fixed { scale, .. } => *scale == 0,
            Type::Array {
                element,
                dimensions,
            } => {
                dimensions.iter().all(|&d| d <= MAX_DEFAULT_ARRAY) && self.derives_default(element)
            }
            _ => true,
        }
    }

    /// An expression for the default value of `ty`, as a hand-written
    /// `Default` impl needs it.
    pub(super) fn default_expr(&self, from: &[String], ty: &Type) -> TokenStream {
        if self.derives_default(ty) {
            let rust = self.rust_type(from, ty);
            return quote!(<#rust as ::core::default::Default>::default());
        }
        match self.spec.unalias(ty) {
            Type::Fixed { scale, .. } => {
                let scale = proc_macro2::Literal::u16_unsuffixed(u16::from(*scale));
                quote!(::armillary::Fixed::new(0, #scale).unwrap_or_default())
            }
            Type::Array {
                element,
                dimensions,
            } => {
                let inner = match dimensions.len() {
                    0 | 1 => (**element).clone(),
                    _ => Type::Array {
                        element: element.clone(),
                        dimensions: dimensions[1..].to_vec(),
                    },
                };
                let inner = self.default_expr(from, &inner);
                quote!(::core::array::from_fn(|_| #inner))
            }
            other => {
                let rust = self.rust_type(from, other);
                quote!(<#rust as ::core::default::Default>::default())
            }
        }
    }

    /// The attributes the options add to definition `id`'s type.
    pub(super) fn type_attributes(&self, id: DefId) -> TokenStream {
        let name = self.spec[id].absolute_name();
        attributes(&self.options.type_attributes, &name)
    }

    /// The attributes the options add to member `member` (an IDL name) of
    /// definition `id`: a struct or exception field, a union member or an
    /// enumerator.
    pub(super) fn field_attributes(&self, id: DefId, member: &str) -> TokenStream {
        let name = format!("{}::{member}", self.spec[id].absolute_name());
        attributes(&self.options.field_attributes, &name)
    }
}

/// The attributes of `rules` whose path matches the scoped name `name`
/// (`::Stock::Quote`), in the order they were added. Attributes that do
/// not parse are skipped (`Builder` rejects them before generating).
fn attributes(rules: &[(String, String)], name: &str) -> TokenStream {
    let mut out = TokenStream::new();
    for (path, attribute) in rules {
        if path_matches(path, name) {
            if let Ok(attrs) = parse_attribute(attribute) {
                out.extend(attrs);
            }
        }
    }
    out
}

/// True when `path` selects the scoped name `name`: `"."` (or an empty
/// path, or `"::"`) selects everything; otherwise the path, with or
/// without a leading `::`, selects the definition of that name and
/// everything inside it (`"Stock"` selects `::Stock::Quote`).
pub(super) fn path_matches(path: &str, name: &str) -> bool {
    let path = path.trim().trim_start_matches("::");
    if path.is_empty() || path == "." {
        return true;
    }
    let name = name.trim_start_matches("::");
    name.strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// Parses outer attributes (`#[derive(PartialOrd)]`, possibly several).
pub(super) fn parse_attribute(attribute: &str) -> Result<TokenStream, String> {
    use syn::parse::Parser;
    let tokens: TokenStream = attribute.parse().map_err(|e| format!("{e}"))?;
    let attrs = syn::Attribute::parse_outer
        .parse2(tokens)
        .map_err(|e| e.to_string())?;
    if attrs.is_empty() {
        return Err("expected an attribute such as #[derive(Hash)]".to_owned());
    }
    Ok(quote!(#(#attrs)*))
}

impl Options {
    /// Adds `attribute` (for example `#[derive(PartialOrd)]`) to the
    /// generated types whose IDL scoped name `path` selects: `"Stock::Quote"`
    /// selects that struct, `"Stock"` everything in module `Stock`, and
    /// `"."` every type. It applies to structs, exceptions, unions and enums.
    #[must_use]
    pub fn type_attribute(mut self, path: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.type_attributes.push((path.into(), attribute.into()));
        self
    }

    /// Adds `attribute` (for example `#[doc = "In cents."]`) to the members
    /// that `path` selects: `"Stock::Quote::price"` selects one struct
    /// field, `"Stock::Quote"` all its fields, `"."` every field. Members
    /// are struct and exception fields, union members (the variants) and
    /// enumerators.
    #[must_use]
    pub fn field_attribute(
        mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> Self {
        self.field_attributes.push((path.into(), attribute.into()));
        self
    }

    /// The first attribute that does not parse as Rust outer attributes,
    /// with the path it was given for and why.
    pub fn invalid_attribute(&self) -> Option<(&str, &str, String)> {
        self.type_attributes
            .iter()
            .chain(&self.field_attributes)
            .find_map(|(path, attribute)| {
                parse_attribute(attribute)
                    .err()
                    .map(|why| (path.as_str(), attribute.as_str(), why))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::path_matches;

    #[test]
    fn paths() {
        for (path, name, expected) in [
            (".", "::A::B", true),
            ("", "::A", true),
            ("::", "::A", true),
            ("A", "::A::B", true),
            ("::A::B", "::A::B", true),
            ("A::B", "::A::B::c", true),
            ("A::B", "::A::BC", false),
            ("B", "::A::B", false),
            ("A::B::c", "::A::B", false),
        ] {
            assert_eq!(path_matches(path, name), expected, "{path} vs {name}");
        }
    }
}
