//! IDL types as Rust: the type a value has, the statements that write it
//! to CDR, the expression that reads it back, its TypeCode, and constant
//! values as literals.
//!
//! Rust `char` carries both IDL `char` and `wchar`, and `String` both
//! `string` and `wstring`, so encoding follows the IDL type, not the Rust
//! one: a `wstring` member is written with `write_wstring`, a bounded
//! string with its bound checked. A type whose Rust `CdrEncode` impl
//! already encodes it exactly ("exact" below) is handed to that impl, which
//! copies primitive sequences in bulk.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::names::{camel, Namer};
use super::Generator;
use crate::ir::{ConstValue, DefId, DefKind, InterfaceKind, Primitive, Type};

/// A value to encode, as the generated code can name it.
#[derive(Clone)]
pub(super) enum Val {
    /// A place of type `T` (`self.x`, a by-value parameter).
    Place(TokenStream),
    /// An expression of type `&T`.
    Ref(TokenStream),
    /// An expression of type `&mut T` (an inout parameter).
    MutRef(TokenStream),
}

impl Val {
    /// An expression of type `&T`.
    pub(super) fn by_ref(&self) -> TokenStream {
        match self {
            Val::Place(p) => quote!(&#p),
            Val::Ref(r) => r.clone(),
            Val::MutRef(m) => quote!(&*#m),
        }
    }

    /// An expression of type `T`, for `Copy` types.
    fn by_copy(&self) -> TokenStream {
        match self {
            Val::Place(p) => p.clone(),
            Val::Ref(r) | Val::MutRef(r) => quote!(*#r),
        }
    }

    /// An expression to call `&self` methods on.
    fn receiver(&self) -> TokenStream {
        match self {
            Val::Place(p) => p.clone(),
            Val::Ref(r) | Val::MutRef(r) => r.clone(),
        }
    }
}

pub(super) fn cdr_encode() -> TokenStream {
    quote!(::armillary::runtime::CdrEncode)
}

pub(super) fn cdr_decode() -> TokenStream {
    quote!(::armillary::runtime::CdrDecode)
}

pub(super) fn cdr_error() -> TokenStream {
    quote!(::armillary::runtime::CdrError)
}

fn type_code() -> TokenStream {
    quote!(::armillary::TypeCode)
}

/// A decoded sequence, `read`, checked against its IDL bound when it has
/// one (BoundExceeded when longer).
fn within_bound(read: TokenStream, bound: Option<u32>) -> TokenStream {
    let Some(b) = bound else {
        return read;
    };
    let error = cdr_error();
    let limit = Literal::usize_suffixed(b as usize);
    let b = Literal::u32_unsuffixed(b);
    quote! {{
        let items = #read;
        if items.len() > #limit {
            return ::core::result::Result::Err(#error::BoundExceeded {
                bound: #b,
                length: items.len() as u64,
            });
        }
        items
    }}
}

/// A `usize` or `u32` literal.
fn number(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

impl Generator<'_> {
    /// The Rust type of an IDL type, named from module `from`.
    pub(super) fn rust_type(&self, from: &[String], ty: &Type) -> TokenStream {
        match ty {
            Type::Primitive(p) => primitive_type(*p),
            Type::String { .. } | Type::WString { .. } => quote!(::std::string::String),
            Type::Sequence { element, .. } if self.is_bytes_element(element) => {
                quote!(::armillary::Bytes)
            }
            Type::Sequence { element, .. } => {
                let element = self.rust_type(from, element);
                quote!(::std::vec::Vec<#element>)
            }
            Type::Array {
                element,
                dimensions,
            } => {
                let mut out = self.rust_type(from, element);
                for &dimension in dimensions.iter().rev() {
                    let n = number(dimension as usize);
                    out = quote!([#out; #n]);
                }
                out
            }
            Type::Fixed { .. } => quote!(::armillary::Fixed),
            Type::Any => quote!(::armillary::Any),
            Type::Object => quote!(::armillary::ObjectRef),
            Type::TypeCode => type_code(),
            Type::Principal => quote!(::std::vec::Vec<u8>),
            Type::ValueBase => quote!(()),
            Type::Named(id) => {
                let path = self.path_to(from, *id);
                if self.is_local_interface(*id) {
                    quote!(::std::sync::Arc<dyn #path>)
                } else {
                    path
                }
            }
        }
    }

    /// The type an `in` parameter has in a stub: small `Copy` values by
    /// value, strings as `&str`, sequences as slices (but an octet
    /// sequence mapped to `Bytes` as `&Bytes`, which the request shares
    /// rather than copies), the rest by reference.
    pub(super) fn in_param_type(&self, from: &[String], ty: &Type) -> TokenStream {
        match self.spec.unalias(ty) {
            Type::String { .. } | Type::WString { .. } => quote!(&str),
            Type::Sequence { element, .. } if self.is_bytes_element(element) => {
                quote!(&::armillary::Bytes)
            }
            Type::Sequence { element, .. } => {
                let element = self.rust_type(from, element);
                quote!(&[#element])
            }
            unaliased if self.is_copy(unaliased) => self.rust_type(from, ty),
            _ => {
                let ty = self.rust_type(from, ty);
                quote!(&#ty)
            }
        }
    }

    /// True for types whose Rust form is `Copy`.
    pub(super) fn is_copy(&self, ty: &Type) -> bool {
        match self.spec.unalias(ty) {
            Type::Primitive(_) | Type::Fixed { .. } => true,
            Type::Named(id) => matches!(self.spec[*id].kind, DefKind::Enum(_)),
            _ => false,
        }
    }

    /// True when a sequence of `element` maps to `armillary::Bytes`: an
    /// octet sequence, with [`Options::octet_sequences_as_bytes`](super::Options::octet_sequences_as_bytes).
    pub(super) fn is_bytes_element(&self, element: &Type) -> bool {
        self.options.octets_as_bytes
            && matches!(
                self.spec.unalias(element),
                Type::Primitive(Primitive::Octet)
            )
    }

    /// True if the Rust type's own `CdrEncode`/`CdrDecode` impls encode
    /// the IDL type exactly.
    fn is_exact(&self, ty: &Type) -> bool {
        match ty {
            Type::Primitive(p) => *p != Primitive::WChar,
            Type::String { bound } => bound.is_none(),
            Type::WString { .. } | Type::Fixed { .. } | Type::ValueBase => false,
            Type::Any | Type::Object | Type::TypeCode | Type::Principal => true,
            Type::Sequence { element, bound } => bound.is_none() && self.is_exact(element),
            Type::Array { element, .. } => self.is_exact(element),
            Type::Named(id) => match &self.spec[*id].kind {
                DefKind::Typedef(t) => self.is_exact(&t.ty),
                DefKind::Interface(i) => i.kind != InterfaceKind::Local,
                DefKind::Struct(_) | DefKind::Union(_) | DefKind::Enum(_) => true,
                DefKind::Exception(_) => true,
                _ => false,
            },
        }
    }

    /// Statements that write `val` (of IDL type `ty`) to the writer `w`,
    /// inside a function returning `Result<_, CdrError>`.
    pub(super) fn encode(&self, ty: &Type, val: &Val) -> TokenStream {
        let encode = cdr_encode();
        let error = cdr_error();
        match ty {
            Type::Primitive(p) => {
                let v = val.by_copy();
                match p {
                    Primitive::Short => quote!(w.write_short(#v);),
                    Primitive::Long => quote!(w.write_long(#v);),
                    Primitive::LongLong => quote!(w.write_longlong(#v);),
                    Primitive::UShort => quote!(w.write_ushort(#v);),
                    Primitive::ULong => quote!(w.write_ulong(#v);),
                    Primitive::ULongLong => quote!(w.write_ulonglong(#v);),
                    Primitive::Float => quote!(w.write_float(#v);),
                    Primitive::Double => quote!(w.write_double(#v);),
                    Primitive::LongDouble => quote!(w.write_long_double(#v);),
                    Primitive::Char => quote!(w.write_char(#v)?;),
                    Primitive::WChar => quote!(w.write_wchar(#v)?;),
                    Primitive::Boolean => quote!(w.write_bool(#v);),
                    Primitive::Octet => quote!(w.write_octet(#v);),
                }
            }
            Type::String { bound } => {
                let v = val.by_ref();
                match bound {
                    None => quote!(w.write_string(#v)?;),
                    Some(b) => {
                        let b = Literal::u32_unsuffixed(*b);
                        quote!(w.write_bounded_string(#v, #b)?;)
                    }
                }
            }
            Type::WString { bound } => {
                let v = val.by_ref();
                match bound {
                    None => quote!(w.write_wstring(#v)?;),
                    Some(b) => {
                        let b = Literal::u32_unsuffixed(*b);
                        quote!(w.write_bounded_wstring(#v, #b)?;)
                    }
                }
            }
            Type::Fixed { digits, scale } => {
                let v = val.by_ref();
                let digits = Literal::u16_unsuffixed(u16::from(*digits));
                let scale = Literal::u16_unsuffixed(u16::from(*scale));
                quote!(w.write_fixed(#v, #digits, #scale)?;)
            }
            Type::Named(id) => match &self.spec[*id].kind {
                DefKind::Typedef(t) => self.encode(&t.ty, val),
                _ if self.is_exact(ty) => {
                    let v = val.by_ref();
                    quote!(#encode::encode(#v, w)?;)
                }
                _ => not_marshallable(w_offset()),
            },
            Type::Sequence { element, bound } => {
                if self.is_bytes_element(element) {
                    // Shared with the message (spliced in, not copied,
                    // when large).
                    let v = val.by_ref();
                    return match bound {
                        None => quote!(w.write_octet_seq_shared(#v)?;),
                        Some(b) => {
                            let b = Literal::u32_unsuffixed(*b);
                            quote!(w.write_bounded_octet_seq_shared(#v, #b)?;)
                        }
                    };
                }
                if self.is_exact(element) {
                    let v = val.by_ref();
                    return match bound {
                        None => quote!(#encode::encode(#v, w)?;),
                        Some(b) => {
                            let b = Literal::u32_unsuffixed(*b);
                            quote!(w.write_bounded_seq(#v, #b)?;)
                        }
                    };
                }
                let recv = val.receiver();
                let items = val.by_ref();
                let item = self.encode(element, &Val::Ref(quote!(item)));
                let check = bound.map(|b| {
                    let limit = Literal::usize_suffixed(b as usize);
                    let b = Literal::u32_unsuffixed(b);
                    quote! {
                        if #recv.len() > #limit {
                            return ::core::result::Result::Err(#error::BoundExceeded {
                                bound: #b,
                                length: #recv.len() as u64,
                            });
                        }
                    }
                });
                quote! {
                    #check
                    w.write_len(#recv.len())?;
                    for item in #items {
                        #item
                    }
                }
            }
            Type::Array {
                element,
                dimensions,
            } => {
                if self.is_exact(element) {
                    let v = val.by_ref();
                    return quote!(#encode::encode(#v, w)?;);
                }
                let inner = match dimensions.len() {
                    0 | 1 => (**element).clone(),
                    _ => Type::Array {
                        element: element.clone(),
                        dimensions: dimensions[1..].to_vec(),
                    },
                };
                let items = val.by_ref();
                let item = self.encode(&inner, &Val::Ref(quote!(item)));
                quote! {
                    for item in #items {
                        #item
                    }
                }
            }
            Type::Any | Type::Object | Type::TypeCode | Type::Principal => {
                let v = val.by_ref();
                quote!(#encode::encode(#v, w)?;)
            }
            Type::ValueBase => not_marshallable(w_offset()),
        }
    }

    /// An expression that reads a value of IDL type `ty` from the reader
    /// `r`, inside a function returning `Result<_, CdrError>`.
    /// Like [`decode`](Self::decode), but an expression of type
    /// `Result<T, CdrError>` (a read ending in `?` loses it, rather than
    /// being wrapped as `Ok(read?)`).
    pub(super) fn decode_result(&self, from: &[String], ty: &Type) -> TokenStream {
        let read = self.decode(from, ty);
        let mut tokens: Vec<proc_macro2::TokenTree> = read.clone().into_iter().collect();
        match tokens.last() {
            Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '?' => {
                tokens.pop();
                tokens.into_iter().collect()
            }
            _ => quote!(::core::result::Result::Ok(#read)),
        }
    }

    pub(super) fn decode(&self, from: &[String], ty: &Type) -> TokenStream {
        let decode = cdr_decode();
        let error = cdr_error();
        match ty {
            Type::Primitive(p) => match p {
                Primitive::Short => quote!(r.read_short()?),
                Primitive::Long => quote!(r.read_long()?),
                Primitive::LongLong => quote!(r.read_longlong()?),
                Primitive::UShort => quote!(r.read_ushort()?),
                Primitive::ULong => quote!(r.read_ulong()?),
                Primitive::ULongLong => quote!(r.read_ulonglong()?),
                Primitive::Float => quote!(r.read_float()?),
                Primitive::Double => quote!(r.read_double()?),
                Primitive::LongDouble => quote!(r.read_long_double()?),
                Primitive::Char => quote!(r.read_char()?),
                Primitive::WChar => quote!(r.read_wchar()?),
                Primitive::Boolean => quote!(r.read_bool()?),
                Primitive::Octet => quote!(r.read_octet()?),
            },
            Type::String { bound: None } => quote!(r.read_string()?),
            Type::String { bound: Some(b) } => {
                let b = Literal::u32_unsuffixed(*b);
                quote!(r.read_bounded_string(#b)?)
            }
            Type::WString { bound: None } => quote!(r.read_wstring()?),
            Type::WString { bound: Some(b) } => {
                let b = Literal::u32_unsuffixed(*b);
                quote!(r.read_bounded_wstring(#b)?)
            }
            Type::Fixed { digits, scale } => {
                let digits = Literal::u16_unsuffixed(u16::from(*digits));
                let scale = Literal::u16_unsuffixed(u16::from(*scale));
                quote!(r.read_fixed(#digits, #scale)?)
            }
            Type::Named(id) => match &self.spec[*id].kind {
                DefKind::Typedef(t) => self.decode(from, &t.ty),
                _ if self.is_exact(ty) => {
                    let rust = self.rust_type(from, ty);
                    quote!(<#rust as #decode>::decode(r)?)
                }
                _ => {
                    quote!(return ::core::result::Result::Err(#error::Invalid {
                        offset: r.position(),
                        what: "this type cannot be unmarshalled",
                    }))
                }
            },
            Type::Sequence { element, bound } if self.is_bytes_element(element) => {
                within_bound(quote!(r.read_octet_seq_shared()?), *bound)
            }
            Type::Sequence { element, bound } => {
                if self.is_exact(element) {
                    let rust = self.rust_type(from, element);
                    return match bound {
                        None => quote!(<::std::vec::Vec<#rust> as #decode>::decode(r)?),
                        Some(b) => {
                            let b = Literal::u32_unsuffixed(*b);
                            quote!(r.read_bounded_seq::<#rust>(#b)?)
                        }
                    };
                }
                let min = number(self.min_size(element, 0).max(1));
                let item = super::interface::reader_fn(self.decode_result(from, element));
                within_bound(quote!(r.read_seq_with(#min, #item)?), *bound)
            }
            Type::Array {
                element,
                dimensions,
            } => {
                if self.is_exact(element) {
                    let rust = self.rust_type(from, ty);
                    return quote!(<#rust as #decode>::decode(r)?);
                }
                let inner = match dimensions.len() {
                    0 | 1 => (**element).clone(),
                    _ => Type::Array {
                        element: element.clone(),
                        dimensions: dimensions[1..].to_vec(),
                    },
                };
                let n = number(dimensions.first().copied().unwrap_or(0) as usize);
                let item = self.decode(from, &inner);
                let item_type = self.rust_type(from, &inner);
                quote! {{
                    let mut items: ::std::vec::Vec<#item_type> = ::std::vec::Vec::with_capacity(#n);
                    for _ in 0..#n {
                        items.push(#item);
                    }
                    match <[#item_type; #n]>::try_from(items) {
                        ::core::result::Result::Ok(array) => array,
                        ::core::result::Result::Err(_) => {
                            return ::core::result::Result::Err(#error::Invalid {
                                offset: r.position(),
                                what: "array of the wrong length",
                            })
                        }
                    }
                }}
            }
            Type::Any | Type::Object | Type::TypeCode | Type::Principal => {
                let rust = self.rust_type(from, ty);
                quote!(<#rust as #decode>::decode(r)?)
            }
            Type::ValueBase => quote!(return ::core::result::Result::Err(#error::Invalid {
                offset: r.position(),
                what: "ValueBase cannot be unmarshalled",
            })),
        }
    }

    /// The fewest bytes a value of `ty` takes on the wire (at least a lower
    /// bound): what a sequence length is checked against before reading.
    pub(super) fn min_size(&self, ty: &Type, depth: u32) -> usize {
        if depth > 32 {
            return 1;
        }
        match ty {
            Type::Primitive(p) => match p {
                Primitive::Short | Primitive::UShort => 2,
                Primitive::Long | Primitive::ULong | Primitive::Float => 4,
                Primitive::LongLong | Primitive::ULongLong | Primitive::Double => 8,
                Primitive::LongDouble => 16,
                Primitive::Char | Primitive::WChar | Primitive::Boolean | Primitive::Octet => 1,
            },
            Type::String { .. } => 5,
            Type::WString { .. } | Type::Sequence { .. } | Type::Any | Type::TypeCode => 4,
            Type::Object | Type::Principal => 4,
            Type::Array {
                element,
                dimensions,
            } => dimensions
                .iter()
                .fold(self.min_size(element, depth + 1), |size, &d| {
                    size.saturating_mul(d as usize)
                }),
            Type::Fixed { digits, .. } => usize::from(*digits) / 2 + 1,
            Type::ValueBase => 4,
            Type::Named(id) => match &self.spec[*id].kind {
                DefKind::Typedef(t) => self.min_size(&t.ty, depth + 1),
                DefKind::Struct(s) => s
                    .members
                    .iter()
                    .map(|m| self.min_size(&m.ty, depth + 1))
                    .sum(),
                DefKind::Exception(e) => e
                    .members
                    .iter()
                    .map(|m| self.min_size(&m.ty, depth + 1))
                    .sum(),
                DefKind::Union(u) => self.min_size(&u.discriminator, depth + 1),
                DefKind::Enum(_) | DefKind::Interface(_) => 4,
                _ => 1,
            },
        }
    }

    /// An expression for the TypeCode of `ty`. Named types refer to their
    /// `TC_` statics, except recursive ones, which are built inline so that
    /// no static's initializer needs itself; `stack` holds the structs and
    /// unions being built, for recursive references.
    pub(super) fn tc_expr(
        &self,
        from: &[String],
        ty: &Type,
        stack: &mut Vec<DefId>,
    ) -> TokenStream {
        let tc = type_code();
        match ty {
            Type::Primitive(p) => {
                let ctor = proc_macro2::Ident::new(
                    match p {
                        Primitive::Short => "short",
                        Primitive::Long => "long",
                        Primitive::LongLong => "longlong",
                        Primitive::UShort => "ushort",
                        Primitive::ULong => "ulong",
                        Primitive::ULongLong => "ulonglong",
                        Primitive::Float => "float",
                        Primitive::Double => "double",
                        Primitive::LongDouble => "longdouble",
                        Primitive::Char => "char",
                        Primitive::WChar => "wchar",
                        Primitive::Boolean => "boolean",
                        Primitive::Octet => "octet",
                    },
                    proc_macro2::Span::call_site(),
                );
                quote!(#tc::#ctor())
            }
            Type::String { bound } => {
                let b = Literal::u32_unsuffixed(bound.unwrap_or(0));
                quote!(#tc::string(#b))
            }
            Type::WString { bound } => {
                let b = Literal::u32_unsuffixed(bound.unwrap_or(0));
                quote!(#tc::wstring(#b))
            }
            Type::Sequence { element, bound } => {
                let element = self.tc_expr(from, element, stack);
                let b = Literal::u32_unsuffixed(bound.unwrap_or(0));
                quote!(#tc::sequence(#element, #b))
            }
            Type::Array {
                element,
                dimensions,
            } => {
                let mut out = self.tc_expr(from, element, stack);
                for &d in dimensions.iter().rev() {
                    let d = Literal::u32_unsuffixed(d);
                    out = quote!(#tc::array(#out, #d));
                }
                out
            }
            Type::Fixed { digits, scale } => {
                let digits = Literal::u16_unsuffixed(u16::from(*digits));
                let scale = Literal::i16_unsuffixed(i16::from(*scale));
                quote!(#tc::fixed(#digits, #scale))
            }
            Type::Any => quote!(#tc::any()),
            Type::Object => quote!(#tc::objref("IDL:omg.org/CORBA/Object:1.0", "Object")),
            Type::TypeCode => quote!(#tc::tc_typecode()),
            Type::Principal => quote!(#tc::principal()),
            Type::ValueBase => quote!(#tc::null()),
            Type::Named(id) => {
                if self.recursive.contains(id) {
                    self.definition_tc(from, *id, stack)
                } else {
                    let path = self.tc_path(from, *id);
                    quote!(#path.clone())
                }
            }
        }
    }

    /// The full TypeCode of a definition.
    pub(super) fn definition_tc(
        &self,
        from: &[String],
        id: DefId,
        stack: &mut Vec<DefId>,
    ) -> TokenStream {
        let tc = type_code();
        let def = &self.spec[id];
        let repo = def.repository_id.as_str();
        let name = def.name.as_str();
        if stack.contains(&id) {
            return quote!(#tc::recursive(#repo));
        }
        stack.push(id);
        let out = match &def.kind {
            DefKind::Struct(s) => {
                let members = self.struct_members_tc(from, &s.members, stack);
                quote!(#tc::struct_tc(#repo, #name, ::std::vec![#(#members),*]))
            }
            DefKind::Exception(e) => {
                let members = self.struct_members_tc(from, &e.members, stack);
                quote!(#tc::exception_tc(#repo, #name, ::std::vec![#(#members),*]))
            }
            DefKind::Union(u) => {
                let discriminator = self.tc_expr(from, &u.discriminator, stack);
                let mut members = Vec::new();
                let mut default_index: i32 = -1;
                for case in &u.cases {
                    let member_tc = self.tc_expr(from, &case.member.ty, stack);
                    let member_name = case.member.name.as_str();
                    for label in &case.labels {
                        let value = match label {
                            crate::ir::UnionLabel::Value(v) => label_value(v),
                            crate::ir::UnionLabel::Default => {
                                default_index = members.len() as i32;
                                0
                            }
                        };
                        let value = Literal::i128_unsuffixed(value);
                        members.push(quote! {
                            ::armillary::runtime::UnionMember {
                                label: #value,
                                name: #member_name.into(),
                                type_code: #member_tc,
                            }
                        });
                    }
                }
                let default_index = signed(i128::from(default_index));
                quote!(#tc::union_tc(#repo, #name, #discriminator, #default_index, ::std::vec![#(#members),*]))
            }
            DefKind::Enum(e) => {
                let names = e.enumerators.iter().map(|e| e.name.as_str());
                quote!(#tc::enum_tc(#repo, #name, &[#(#names),*]))
            }
            DefKind::Typedef(t) => {
                let content = self.tc_expr(from, &t.ty, stack);
                quote!(#tc::alias(#repo, #name, #content))
            }
            DefKind::Interface(i) => match i.kind {
                InterfaceKind::Unconstrained => quote!(#tc::objref(#repo, #name)),
                InterfaceKind::Abstract => quote!(#tc::interface(
                    ::armillary::runtime::TCKind::AbstractInterface, #repo, #name)),
                InterfaceKind::Local => quote!(#tc::interface(
                    ::armillary::runtime::TCKind::LocalInterface, #repo, #name)),
            },
            DefKind::Native => quote!(#tc::interface(
                ::armillary::runtime::TCKind::Native, #repo, #name)),
            _ => quote!(#tc::null()),
        };
        stack.pop();
        out
    }

    fn struct_members_tc(
        &self,
        from: &[String],
        members: &[crate::ir::Member],
        stack: &mut Vec<DefId>,
    ) -> Vec<TokenStream> {
        members
            .iter()
            .map(|m| {
                let name = m.name.as_str();
                let member_tc = self.tc_expr(from, &m.ty, stack);
                quote! {
                    ::armillary::runtime::StructMember {
                        name: #name.into(),
                        type_code: #member_tc,
                    }
                }
            })
            .collect()
    }

    /// The Rust variant names of an enum, in order.
    pub(super) fn enum_variants(&self, id: DefId) -> Vec<String> {
        let DefKind::Enum(e) = &self.spec[id].kind else {
            return Vec::new();
        };
        let mut namer = Namer::default();
        e.enumerators
            .iter()
            .map(|enumerator| namer.claim(&camel(&enumerator.name)))
            .collect()
    }

    /// A constant value as a Rust expression (or pattern, for the kinds a
    /// union label can have).
    pub(super) fn const_value(&self, from: &[String], value: &ConstValue) -> TokenStream {
        match value {
            ConstValue::Short(v) => signed(i128::from(*v)),
            ConstValue::Long(v) => signed(i128::from(*v)),
            ConstValue::LongLong(v) => signed(i128::from(*v)),
            ConstValue::UShort(v) => signed(i128::from(*v)),
            ConstValue::ULong(v) => signed(i128::from(*v)),
            ConstValue::ULongLong(v) => signed(i128::from(*v)),
            ConstValue::Octet(v) => signed(i128::from(*v)),
            ConstValue::Float(v) => float(f64::from(*v), quote!(f32), true),
            ConstValue::Double(v) => float(*v, quote!(f64), false),
            ConstValue::LongDouble(v) => {
                let bits = armillary_giop::LongDouble::from_f64(*v).to_bits();
                let bits = Literal::u128_unsuffixed(bits);
                quote!(::armillary::LongDouble::from_bits(#bits))
            }
            ConstValue::Char(c) => {
                let c = Literal::character(char::from(*c));
                quote!(#c)
            }
            ConstValue::WChar(c) => {
                let c = Literal::character(*c);
                quote!(#c)
            }
            ConstValue::Boolean(true) => quote!(true),
            ConstValue::Boolean(false) => quote!(false),
            ConstValue::String(s) | ConstValue::WString(s) => {
                let s = Literal::string(s);
                quote!(#s)
            }
            ConstValue::Fixed(f) => {
                let unscaled = signed(f.value);
                let scale = Literal::u16_unsuffixed(u16::from(f.scale));
                quote!(::armillary::Fixed::new(#unscaled, #scale))
            }
            ConstValue::Enumerator { enum_def, index } => {
                let path = self.path_to(from, *enum_def);
                let variants = self.enum_variants(*enum_def);
                let variant = super::names::ident(
                    variants
                        .get(*index as usize)
                        .map(String::as_str)
                        .unwrap_or("Missing"),
                );
                quote!(#path::#variant)
            }
        }
    }
}

/// A union label as the TypeCode's `i128`.
pub(super) fn label_value(value: &ConstValue) -> i128 {
    match value {
        ConstValue::Char(c) => i128::from(*c),
        ConstValue::WChar(c) => i128::from(u32::from(*c)),
        ConstValue::Boolean(b) => i128::from(*b),
        ConstValue::Enumerator { index, .. } => i128::from(*index),
        other => other.as_integer().unwrap_or(0),
    }
}

fn signed(v: i128) -> TokenStream {
    let magnitude = Literal::u128_unsuffixed(v.unsigned_abs());
    if v < 0 {
        quote!(-#magnitude)
    } else {
        quote!(#magnitude)
    }
}

fn float(v: f64, ty: TokenStream, single: bool) -> TokenStream {
    if v.is_nan() {
        quote!(#ty::NAN)
    } else if v.is_infinite() && v > 0.0 {
        quote!(#ty::INFINITY)
    } else if v.is_infinite() {
        quote!(#ty::NEG_INFINITY)
    } else {
        let magnitude = if single {
            Literal::f32_unsuffixed(v.abs() as f32)
        } else {
            Literal::f64_unsuffixed(v.abs())
        };
        if v.is_sign_negative() {
            quote!(-#magnitude)
        } else {
            quote!(#magnitude)
        }
    }
}

fn w_offset() -> TokenStream {
    quote!(w.position())
}

/// A statement that fails: the type cannot travel in CDR.
fn not_marshallable(offset: TokenStream) -> TokenStream {
    let error = cdr_error();
    quote! {
        return ::core::result::Result::Err(#error::Invalid {
            offset: #offset,
            what: "this type cannot be marshalled",
        });
    }
}

fn primitive_type(p: Primitive) -> TokenStream {
    match p {
        Primitive::Short => quote!(i16),
        Primitive::Long => quote!(i32),
        Primitive::LongLong => quote!(i64),
        Primitive::UShort => quote!(u16),
        Primitive::ULong => quote!(u32),
        Primitive::ULongLong => quote!(u64),
        Primitive::Float => quote!(f32),
        Primitive::Double => quote!(f64),
        Primitive::LongDouble => quote!(::armillary::LongDouble),
        Primitive::Char | Primitive::WChar => quote!(char),
        Primitive::Boolean => quote!(bool),
        Primitive::Octet => quote!(u8),
    }
}
