//! Structs, exceptions, enums, unions, typedefs, constants and natives.

use proc_macro2::TokenStream;
use quote::quote;

use super::interface::reader_fn;
use super::names::{camel, ident, snake, Namer};
use super::types::{cdr_decode, cdr_encode, cdr_error, Val};
use super::Generator;
use crate::ir::{DefId, DefKind, Member, Type, UnionLabel};

impl Generator<'_> {
    /// `pub static TC_X: LazyLock<TypeCode>` for definition `id`.
    pub(super) fn tc_static(&self, module: &[String], id: DefId) -> TokenStream {
        let name = ident(self.names(id).tc.as_deref().unwrap_or("TC_MISSING"));
        let expr = self.definition_tc(module, id, &mut Vec::new());
        let doc = format!(" The TypeCode of `{}`.", self.spec[id].absolute_name());
        quote! {
            #[doc = #doc]
            pub static #name: ::std::sync::LazyLock<::armillary::TypeCode> =
                ::std::sync::LazyLock::new(|| #expr);
        }
    }

    /// `impl IdlType`, which names the TypeCode static.
    pub(super) fn idl_type_impl(&self, id: DefId) -> TokenStream {
        let name = ident(&self.names(id).base);
        let tc = ident(self.names(id).tc.as_deref().unwrap_or("TC_MISSING"));
        quote! {
            impl ::armillary::IdlType for #name {
                fn type_code() -> ::armillary::TypeCode {
                    #tc.clone()
                }
            }
        }
    }

    /// False for types that never travel: natives, local interfaces,
    /// valuetypes (not mapped yet), and sequences or arrays of them.
    fn has_cdr_form(&self, ty: &Type) -> bool {
        match ty {
            Type::ValueBase => false,
            Type::Sequence { element, .. } | Type::Array { element, .. } => {
                self.has_cdr_form(element)
            }
            Type::Named(id) => match &self.spec[*id].kind {
                DefKind::Typedef(t) => self.has_cdr_form(&t.ty),
                DefKind::Interface(i) => i.kind != crate::ir::InterfaceKind::Local,
                DefKind::Native | DefKind::ValueType(_) | DefKind::ValueBox(_) => false,
                _ => true,
            },
            _ => true,
        }
    }

    /// Field names for struct or exception members.
    fn field_names(members: &[Member]) -> Vec<String> {
        let mut namer = Namer::default();
        members
            .iter()
            .map(|m| namer.claim(&snake(&m.name)))
            .collect()
    }

    fn member_doc(member: &Member) -> TokenStream {
        match &member.doc {
            Some(doc) => {
                let lines = super::comment_doc_lines(doc);
                quote!(#(#[doc = #lines])*)
            }
            None => {
                let line = format!(" IDL member `{}`.", member.name);
                quote!(#[doc = #line])
            }
        }
    }

    /// The struct declaration and CDR impls shared by structs and
    /// exceptions.
    fn record(&self, module: &[String], id: DefId, members: &[Member]) -> TokenStream {
        let name = ident(&self.names(id).base);
        let doc = self.doc(id);
        let fields: Vec<_> = Self::field_names(members)
            .iter()
            .map(|f| ident(f))
            .collect();
        let types: Vec<_> = members
            .iter()
            .map(|m| self.rust_type(module, &m.ty))
            .collect();
        let docs: Vec<_> = members
            .iter()
            .map(|m| {
                let doc = Self::member_doc(m);
                let extra = self.field_attributes(id, &m.name);
                quote!(#doc #extra)
            })
            .collect();
        let encodes: Vec<_> = members
            .iter()
            .zip(&fields)
            .map(|(m, f)| self.encode(&m.ty, &Val::Place(quote!(self.#f))))
            .collect();
        let decodes: Vec<_> = members.iter().map(|m| self.decode(module, &m.ty)).collect();
        let min_size = members
            .iter()
            .map(|m| self.min_size(&m.ty, 0))
            .sum::<usize>()
            .max(1);
        let min_size = proc_macro2::Literal::usize_unsuffixed(min_size);
        let (encode, decode, error) = (cdr_encode(), cdr_decode(), cdr_error());
        let unused_w = members.is_empty().then(|| quote!(let _ = w;));
        let unused_r = members.is_empty().then(|| quote!(let _ = r;));
        let body = quote!(::core::result::Result::Ok(Self { #(#fields: #decodes,)* }));
        let body = if self.recursive.contains(&id) {
            quote!(r.nested(|r| #body))
        } else {
            body
        };
        let eq_hash = self.members_eq_hash(id).then(|| quote!(Eq, Hash,));
        let derive_default = members.iter().all(|m| self.derives_default(&m.ty));
        let (default_derive, default_impl) = if derive_default {
            (quote!(Default,), TokenStream::new())
        } else {
            let values = members.iter().map(|m| self.default_expr(module, &m.ty));
            (
                TokenStream::new(),
                quote! {
                    impl ::core::default::Default for #name {
                        fn default() -> Self {
                            Self { #(#fields: #values,)* }
                        }
                    }
                },
            )
        };
        let attributes = self.type_attributes(id);
        quote! {
            #doc
            #[derive(Debug, Clone, PartialEq, #eq_hash #default_derive)]
            #attributes
            pub struct #name {
                #(#docs pub #fields: #types,)*
            }

            #default_impl

            impl #encode for #name {
                fn encode(&self, w: &mut ::armillary::runtime::CdrWriter) -> ::core::result::Result<(), #error> {
                    #unused_w
                    #(#encodes)*
                    ::core::result::Result::Ok(())
                }
            }

            impl #decode for #name {
                const MIN_SIZE: usize = #min_size;

                fn decode(r: &mut ::armillary::runtime::CdrReader<'_>) -> ::core::result::Result<Self, #error> {
                    #unused_r
                    #body
                }
            }
        }
    }

    pub(super) fn struct_item(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Struct(s) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let record = self.record(module, id, &s.members);
        let idl_type = self.idl_type_impl(id);
        let tc = self.tc_static(module, id);
        let nested = self.nested_module(id, TokenStream::new());
        quote!(#record #idl_type #tc #nested)
    }

    pub(super) fn exception_item(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Exception(e) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let record = self.record(module, id, &e.members);
        let name = ident(&self.names(id).base);
        let repo = self.spec[id].repository_id.as_str();
        let display = format!("user exception {}", self.spec[id].absolute_name());
        let idl_type = self.idl_type_impl(id);
        let tc = self.tc_static(module, id);
        let nested = self.nested_module(id, TokenStream::new());
        quote! {
            #record

            impl ::armillary::UserException for #name {
                const REPOSITORY_ID: &'static str = #repo;
            }

            impl ::core::fmt::Display for #name {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(#display)
                }
            }

            impl ::std::error::Error for #name {}

            #idl_type
            #tc
            #nested
        }
    }

    pub(super) fn enum_item(&mut self, id: DefId) -> TokenStream {
        let DefKind::Enum(e) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let module = self.names(id).module.clone();
        let name = ident(&self.names(id).base);
        let doc = self.doc(id);
        let variants: Vec<_> = self.enum_variants(id).iter().map(|v| ident(v)).collect();
        let docs: Vec<TokenStream> = e
            .enumerators
            .iter()
            .map(|enumerator| {
                let lines: Vec<String> = match &enumerator.doc {
                    Some(doc) => super::comment_doc_lines(doc),
                    None => vec![format!(" IDL enumerator `{}`.", enumerator.name)],
                };
                let extra = self.field_attributes(id, &enumerator.name);
                quote!(#(#[doc = #lines])* #extra)
            })
            .collect();
        let count = proc_macro2::Literal::u32_unsuffixed(variants.len() as u32);
        let len = proc_macro2::Literal::usize_unsuffixed(variants.len());
        let indices = (0..variants.len() as u32).map(proc_macro2::Literal::u32_unsuffixed);
        let first = variants.first().cloned();
        let rest = variants.iter().skip(1);
        let rest_docs = docs.iter().skip(1);
        let first_doc = docs.first();
        let (encode, decode, error) = (cdr_encode(), cdr_decode(), cdr_error());
        let idl_type = self.idl_type_impl(id);
        let tc = self.tc_static(&module, id);
        let attributes = self.type_attributes(id);
        quote! {
            #doc
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
            #attributes
            pub enum #name {
                #first_doc
                #[default]
                #first,
                #(#rest_docs #rest,)*
            }

            impl #name {
                /// Every enumerator, in IDL order (the value of each is its index).
                pub const ALL: [#name; #len] = [#(#name::#variants),*];

                /// The enumerator with CDR value `value`.
                #[must_use]
                pub fn from_u32(value: u32) -> ::core::option::Option<Self> {
                    match value {
                        #(#indices => ::core::option::Option::Some(#name::#variants),)*
                        _ => ::core::option::Option::None,
                    }
                }
            }

            impl #encode for #name {
                fn encode(&self, w: &mut ::armillary::runtime::CdrWriter) -> ::core::result::Result<(), #error> {
                    w.write_ulong(*self as u32);
                    ::core::result::Result::Ok(())
                }
            }

            impl #decode for #name {
                const MIN_SIZE: usize = 4;

                fn decode(r: &mut ::armillary::runtime::CdrReader<'_>) -> ::core::result::Result<Self, #error> {
                    let offset = r.position();
                    let value = r.read_ulong()?;
                    Self::from_u32(value).ok_or(#error::InvalidEnum { offset, value, count: #count })
                }
            }

            #idl_type
            #tc
        }
    }

    pub(super) fn union_item(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Union(u) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let name = ident(&self.names(id).base);
        let doc = self.doc(id);
        let disc_type = self.rust_type(module, &u.discriminator);
        let (encode, decode, error) = (cdr_encode(), cdr_decode(), cdr_error());
        let mut namer = Namer::default();
        let mut variants = Vec::new();
        let mut encode_arms = Vec::new();
        let mut decode_arms = Vec::new();
        let mut default_arm = None;
        // The value of `Default`: the first member an explicit label
        // selects, or the default member when there are no labels.
        let mut default_value: Option<TokenStream> = None;
        let mut only_default: Option<TokenStream> = None;
        // Every explicit label, for the default branch's check.
        let all_labels: Vec<TokenStream> = u
            .cases
            .iter()
            .flat_map(|c| c.labels.iter())
            .filter_map(|l| match l {
                UnionLabel::Value(v) => Some(self.const_value(module, v)),
                UnionLabel::Default => None,
            })
            .collect();
        let wrong_branch = quote! {
            return ::core::result::Result::Err(#error::Invalid {
                offset: w.position(),
                what: "the union's discriminator does not select this member",
            });
        };
        for case in &u.cases {
            let variant = ident(&namer.claim(&camel(&case.member.name)));
            let ty = self.rust_type(module, &case.member.ty);
            let labels: Vec<TokenStream> = case
                .labels
                .iter()
                .filter_map(|l| match l {
                    UnionLabel::Value(v) => Some(self.const_value(module, v)),
                    UnionLabel::Default => None,
                })
                .collect();
            let is_default = case.labels.contains(&UnionLabel::Default);
            let label_text = case
                .labels
                .iter()
                .map(|l| match l {
                    UnionLabel::Value(v) => format!("`case {v}`"),
                    UnionLabel::Default => "`default`".to_owned(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            let member_doc = Self::member_doc(&case.member);
            let member_attributes = self.field_attributes(id, &case.member.name);
            let member_doc = quote!(#member_doc #member_attributes);
            let value_default = self.default_expr(module, &case.member.ty);
            let value_encode = self.encode(&case.member.ty, &Val::Ref(quote!(value)));
            let value_decode = self.decode(module, &case.member.ty);
            if labels.len() == 1 && !is_default {
                let label = &labels[0];
                let disc_encode = self.encode(&u.discriminator, &Val::Place(label.clone()));
                let variant_doc = format!(" Selected by {label_text}.");
                variants.push(quote! {
                    #member_doc
                    #[doc = ""]
                    #[doc = #variant_doc]
                    #variant(#ty)
                });
                encode_arms.push(quote! {
                    Self::#variant(value) => {
                        #disc_encode
                        #value_encode
                    }
                });
                decode_arms.push((vec![label.clone()], quote!(Self::#variant(#value_decode))));
                if default_value.is_none() {
                    default_value = Some(quote!(Self::#variant(#value_default)));
                }
            } else {
                let disc_encode = self.encode(&u.discriminator, &Val::Ref(quote!(discriminator)));
                let all_test = label_test(&all_labels, false);
                let not_test = label_test(&labels, true);
                let check = if is_default {
                    (!all_labels.is_empty()).then(|| {
                        quote! {
                            if #all_test {
                                #wrong_branch
                            }
                        }
                    })
                } else {
                    Some(quote! {
                        if #not_test {
                            #wrong_branch
                        }
                    })
                };
                let variant_doc = format!(" Selected by {label_text}; `discriminator` says which.");
                variants.push(quote! {
                    #member_doc
                    #[doc = ""]
                    #[doc = #variant_doc]
                    #variant {
                        /// The discriminator value.
                        discriminator: #disc_type,
                        /// The member.
                        value: #ty,
                    }
                });
                encode_arms.push(quote! {
                    Self::#variant { discriminator, value } => {
                        #check
                        #disc_encode
                        #value_encode
                    }
                });
                let pattern = if is_default {
                    Vec::new()
                } else {
                    labels.clone()
                };
                let arm = (
                    pattern,
                    quote!(Self::#variant { discriminator, value: #value_decode }),
                );
                if is_default {
                    default_arm = Some(arm);
                } else {
                    decode_arms.push(arm);
                }
                if default_value.is_none() && !labels.is_empty() {
                    let label = &labels[0];
                    default_value = Some(
                        quote!(Self::#variant { discriminator: #label, value: #value_default }),
                    );
                }
                if is_default {
                    only_default = Some(quote!(Self::#variant {
                        discriminator: <#disc_type as ::core::default::Default>::default(),
                        value: #value_default,
                    }));
                }
            }
        }
        let covered = self.labels_cover_discriminator(&u.discriminator, all_labels.len());
        if u.default_case.is_none() {
            if let Some(implicit) = &u.implicit_default {
                let variant = ident(&namer.claim("Unselected"));
                let example =
                    format!(" The discriminator selects no member (for example {implicit}).");
                let disc_encode = self.encode(&u.discriminator, &Val::Ref(quote!(discriminator)));
                variants.push(quote! {
                    #[doc = #example]
                    #variant(#disc_type)
                });
                let all_test = label_test(&all_labels, false);
                let check = (!all_labels.is_empty()).then(|| {
                    quote! {
                        if #all_test {
                            #wrong_branch
                        }
                    }
                });
                encode_arms.push(quote! {
                    Self::#variant(discriminator) => {
                        #check
                        #disc_encode
                    }
                });
                decode_arms.push((Vec::new(), quote!(Self::#variant(discriminator))));
            } else if !covered {
                decode_arms.push((
                    Vec::new(),
                    quote! {
                        return ::core::result::Result::Err(#error::Invalid {
                            offset: r.position(),
                            what: "union discriminator selects no member",
                        })
                    },
                ));
            }
        } else if !covered {
            // The default arm comes last. (When every value has an explicit
            // label, the default branch is never decoded.)
            decode_arms.extend(default_arm);
        }
        let disc_decode = self.decode(module, &u.discriminator);
        let select = self.union_select(module, u, &decode_arms);
        let body = quote! {
            let discriminator: #disc_type = #disc_decode;
            ::core::result::Result::Ok(#select)
        };
        let body = if self.recursive.contains(&id) {
            quote!(r.nested(|r| { #body }))
        } else {
            body
        };
        let min_size =
            proc_macro2::Literal::usize_unsuffixed(self.min_size(&u.discriminator, 0).max(1));
        let idl_type = self.idl_type_impl(id);
        let tc = self.tc_static(module, id);
        let nested = self.nested_module(id, TokenStream::new());
        let eq_hash = self.members_eq_hash(id).then(|| quote!(Eq, Hash,));
        let attributes = self.type_attributes(id);
        let default_impl = default_value.or(only_default).map(|value| {
            quote! {
                /// The first member that a case label selects.
                impl ::core::default::Default for #name {
                    fn default() -> Self {
                        #value
                    }
                }
            }
        });
        quote! {
            #doc
            #[derive(Debug, Clone, PartialEq, #eq_hash)]
            #attributes
            pub enum #name {
                #(#variants,)*
            }

            #default_impl

            impl #encode for #name {
                fn encode(&self, w: &mut ::armillary::runtime::CdrWriter) -> ::core::result::Result<(), #error> {
                    match self {
                        #(#encode_arms)*
                    }
                    ::core::result::Result::Ok(())
                }
            }

            impl #decode for #name {
                const MIN_SIZE: usize = #min_size;

                fn decode(r: &mut ::armillary::runtime::CdrReader<'_>) -> ::core::result::Result<Self, #error> {
                    #body
                }
            }

            #idl_type
            #tc
            #nested
        }
    }

    /// The expression that picks a union's member from `discriminator`:
    /// `arms` are (labels, value) in order, no labels meaning "any other
    /// value". A boolean discriminator is tested with `if`; a wildcard that
    /// stands for one enumerator names it.
    fn union_select(
        &self,
        module: &[String],
        union: &crate::ir::Union,
        arms: &[(Vec<TokenStream>, TokenStream)],
    ) -> TokenStream {
        if matches!(
            self.spec.unalias(&union.discriminator),
            Type::Primitive(crate::ir::Primitive::Boolean)
        ) {
            let pick = |value: &str| {
                arms.iter()
                    .find(|(labels, _)| {
                        labels.is_empty() || labels.iter().any(|l| l.to_string() == value)
                    })
                    .map(|(_, expr)| expr.clone())
            };
            if let (Some(yes), Some(no)) = (pick("true"), pick("false")) {
                return quote!(if discriminator { #yes } else { #no });
            }
        }
        if let [(labels, expr)] = arms {
            if labels.is_empty() {
                // Only a default member: every value selects it.
                return expr.clone();
            }
        }
        let unlabelled = self.unlabelled_enumerator(module, union);
        let arms = arms.iter().map(|(labels, expr)| {
            let pattern = if labels.is_empty() {
                unlabelled.clone().unwrap_or_else(|| quote!(_))
            } else {
                label_pattern(labels)
            };
            quote!(#pattern => #expr,)
        });
        quote!(match discriminator { #(#arms)* })
    }

    /// For an enum discriminator whose labels leave exactly one enumerator
    /// out: that enumerator, named from `module` (a `_` arm would stand
    /// for it alone).
    fn unlabelled_enumerator(
        &self,
        module: &[String],
        union: &crate::ir::Union,
    ) -> Option<TokenStream> {
        let Type::Named(enum_def) = self.spec.unalias(&union.discriminator) else {
            return None;
        };
        let DefKind::Enum(e) = &self.spec[*enum_def].kind else {
            return None;
        };
        let labelled: Vec<u32> = union
            .cases
            .iter()
            .flat_map(|c| &c.labels)
            .filter_map(|l| match l {
                UnionLabel::Value(crate::ir::ConstValue::Enumerator { index, .. }) => Some(*index),
                _ => None,
            })
            .collect();
        let mut left = (0..e.enumerators.len() as u32).filter(|i| !labelled.contains(i));
        match (left.next(), left.next()) {
            (Some(index), None) => Some(self.const_value(
                module,
                &crate::ir::ConstValue::Enumerator {
                    enum_def: *enum_def,
                    index,
                },
            )),
            _ => None,
        }
    }

    /// True when `labels` distinct labels name every value of a boolean or
    /// enum discriminator (then a `match` on it is exhaustive).
    fn labels_cover_discriminator(&self, discriminator: &Type, labels: usize) -> bool {
        match self.spec.unalias(discriminator) {
            Type::Primitive(crate::ir::Primitive::Boolean) => labels >= 2,
            Type::Named(id) => match &self.spec[*id].kind {
                DefKind::Enum(e) => labels >= e.enumerators.len(),
                _ => false,
            },
            _ => false,
        }
    }

    pub(super) fn typedef_item(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Typedef(t) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let names = self.names(id).clone();
        let name = ident(&names.base);
        let doc = self.doc(id);
        let ty = self.rust_type(module, &t.ty);
        let tc = self.tc_static(module, id);
        let any_fns = self.typedef_any_fns(module, id, &names.base, &t.ty);
        quote! {
            #doc
            pub type #name = #ty;
            #tc
            #any_fns
        }
    }

    /// `<typedef>_to_any` and `<typedef>_from_any`: a typedef is a Rust
    /// alias and cannot implement `IdlType`, so these put its values into
    /// an `any` under the typedef's own TypeCode (the only way for
    /// typedefs involving `wstring` or `wchar`, whose Rust types are
    /// shared with `string` and `char`). Typedefs of what has no CDR form
    /// (natives, local interfaces) get none.
    fn typedef_any_fns(&self, module: &[String], id: DefId, base: &str, ty: &Type) -> TokenStream {
        if !self.has_cdr_form(ty) {
            return TokenStream::new();
        }
        let name = ident(base);
        let tc = ident(self.names(id).tc.as_deref().unwrap_or("TC_MISSING"));
        let snake_name = snake(base);
        let to_any = ident(&format!("{snake_name}_to_any"));
        let from_any = ident(&format!("{snake_name}_from_any"));
        let encode = self.encode(ty, &Val::Ref(quote!(value)));
        let read = reader_fn(self.decode_result(module, ty));
        let to_doc = format!(
            " Puts a [`{base}`] into an `any` whose TypeCode is [`{}`]; fails only when the value breaks a bound.",
            tc
        );
        let from_doc = format!(
            " Takes a [`{base}`] out of an `any` whose TypeCode is equivalent to [`{}`]; `None` for any other `any`.",
            tc
        );
        quote! {
            #[doc = #to_doc]
            #[doc = ""]
            #[doc = " # Errors"]
            #[doc = ""]
            #[doc = " The CDR error of a value that breaks a bound of the type."]
            pub fn #to_any(
                value: &#name,
            ) -> ::core::result::Result<::armillary::Any, ::armillary::runtime::CdrError> {
                ::armillary::Any::from_writer(#tc.clone(), |w| {
                    #encode
                    ::core::result::Result::Ok(())
                })
            }

            #[doc = #from_doc]
            #[must_use]
            pub fn #from_any(any: &::armillary::Any) -> ::core::option::Option<#name> {
                any.read_with(&#tc, #read)
            }
        }
    }

    pub(super) fn const_item(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Const(c) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let name = ident(&self.names(id).base);
        let doc = self.doc(id);
        let value = self.const_value(module, &c.value);
        match self.spec.unalias(&c.ty) {
            Type::Fixed { .. } => quote! {
                #doc
                pub static #name: ::std::sync::LazyLock<::armillary::Fixed> =
                    ::std::sync::LazyLock::new(|| #value.unwrap_or_default());
            },
            Type::String { .. } | Type::WString { .. } => quote! {
                #doc
                pub const #name: &str = #value;
            },
            _ => {
                let ty = self.rust_type(module, &c.ty);
                quote! {
                    #doc
                    pub const #name: #ty = #value;
                }
            }
        }
    }

    pub(super) fn native_item(&mut self, id: DefId) -> TokenStream {
        let module = self.names(id).module.clone();
        let name = ident(&self.names(id).base);
        let doc = self.doc(id);
        let tc = self.tc_static(&module, id);
        quote! {
            #doc
            #[doc = ""]
            #[doc = " A native type: an opaque value that only local interfaces pass."]
            pub type #name = ::std::sync::Arc<dyn ::std::any::Any + ::core::marker::Send + ::core::marker::Sync>;
            #tc
        }
    }
}

/// A pattern matching any of a union's `labels`: runs of consecutive
/// integers become ranges (`1..=4`, not `1 | 2 | 3 | 4`).
fn label_pattern(labels: &[TokenStream]) -> TokenStream {
    let ints: Option<Vec<i128>> = labels
        .iter()
        .map(|l| l.to_string().replace(' ', "").parse::<i128>().ok())
        .collect();
    let Some(mut ints) = ints.filter(|v| v.len() > 1) else {
        return quote!(#(#labels)|*);
    };
    ints.sort_unstable();
    ints.dedup();
    let literal = |v: i128| {
        let magnitude = proc_macro2::Literal::u128_unsuffixed(v.unsigned_abs());
        if v < 0 {
            quote!(-#magnitude)
        } else {
            quote!(#magnitude)
        }
    };
    let mut alternatives = Vec::new();
    let mut i = 0;
    while i < ints.len() {
        let start = i;
        while i + 1 < ints.len() && ints[i + 1] == ints[i] + 1 {
            i += 1;
        }
        let (lo, hi) = (literal(ints[start]), literal(ints[i]));
        alternatives.push(if start == i { lo } else { quote!(#lo..=#hi) });
        i += 1;
    }
    quote!(#(#alternatives)|*)
}

/// A condition on `*discriminator`: true when it is one of `labels` (or,
/// `negated`, when it is none of them). A boolean discriminator is tested
/// as itself.
fn label_test(labels: &[TokenStream], negated: bool) -> TokenStream {
    if let [only] = labels {
        match (only.to_string().as_str(), negated) {
            ("true", false) | ("false", true) => return quote!(*discriminator),
            ("false", false) | ("true", true) => return quote!(!*discriminator),
            _ => {}
        }
    }
    let pattern = label_pattern(labels);
    if negated {
        quote!(!matches!(*discriminator, #pattern))
    } else {
        quote!(matches!(*discriminator, #pattern))
    }
}
