//! Interfaces: the client stub (a typed reference), the servant trait, the
//! skeleton that demultiplexes requests to it, and the per-operation error
//! enums.
//!
//! The skeleton finds an operation with a `match` on the name's length
//! and the name (`operation_dispatch`): a switch on the length, then
//! inline comparisons of the few names of that length, each a load or two
//! that stops at the first difference. That avoids the Visibroker
//! demultiplexing paper's linear scan of every name, and the calls to
//! `memcmp` of a binary search over sorted names (which it replaced:
//! 100 instructions a request less for a four-operation interface).
//! What stubs and skeletons
//! generate for calls to objects served in this process is in
//! `collocated`.

use proc_macro2::TokenStream;
use quote::quote;

use super::ami::AmiCall;
use super::collocated::SkeletonViews;
use super::names::{camel, ident, Namer};
use super::types::{cdr_decode, cdr_encode, cdr_error, Val};
use super::{relative_module, Generator};
use crate::ir::{DefId, DefKind, Direction, InterfaceKind, Type};

/// One callable thing on the wire: an operation, or an attribute's getter
/// or setter.
pub(super) struct Call {
    /// The operation name in GIOP (`get_quote`, `_get_name`).
    pub(super) wire: String,
    /// The Rust method name in the interface that declares the call (its
    /// stub, servant trait and skeleton).
    pub(super) method: String,
    /// The method's name on the stub being generated: `method`, unless
    /// the call is inherited and another base has that name (`inherited`).
    pub(super) stub_method: String,
    pub(super) doc: TokenStream,
    pub(super) params: Vec<CallParam>,
    pub(super) ret: Option<Type>,
    pub(super) raises: Vec<DefId>,
    /// The error enum's name, in the declaring interface's module, when
    /// the call raises user exceptions.
    pub(super) error: Option<String>,
    /// The interface that declares the call.
    pub(super) owner: DefId,
    /// The operation or attribute the call belongs to (for a reply
    /// handler's call, the one it answers).
    pub(super) member: DefId,
    /// True for a call of `owner`'s implied reply-handler interface.
    pub(super) handler: bool,
    pub(super) oneway: bool,
    /// The AMI method names, for a two-way call of an interface's stub
    /// when AMI is on.
    pub(super) ami: Option<AmiCall>,
    /// The body of the servant trait's method when it has a default (a
    /// reply handler's, see `armillary::ami::unhandled_exception`).
    pub(super) default_body: Option<TokenStream>,
}

/// What [`Generator::interface_items`] generates an interface from.
pub(super) struct InterfaceModel {
    /// The interface (for a reply handler, the interface it serves).
    pub(super) id: DefId,
    /// The stub's name; the trait and skeleton add `Servant`, `Skeleton`.
    pub(super) base: String,
    /// The IDL scoped name, for docs.
    pub(super) idl_name: String,
    pub(super) doc: TokenStream,
    pub(super) repo: String,
    pub(super) abstract_: bool,
    /// Every call, inherited ones first.
    pub(super) all_calls: Vec<Call>,
    /// The calls the interface declares (its skeleton serves them).
    pub(super) own_calls: Vec<Call>,
    /// The stub's methods.
    pub(super) methods: Vec<TokenStream>,
    /// Paths to the stubs of the bases the stub converts into.
    pub(super) upcast_to: Vec<TokenStream>,
    /// The servant traits of the same bases (each its Rust name and a
    /// path to it): the skeleton answers `local_interface` for them.
    pub(super) ancestor_servants: Vec<(String, TokenStream)>,
    pub(super) supertraits: Vec<TokenStream>,
    pub(super) trait_methods: Vec<TokenStream>,
    /// The repository ids `_is_a` answers true for.
    pub(super) ids: Vec<String>,
    /// Items after the stub's (its `IdlType` and TypeCode).
    pub(super) after_stub: TokenStream,
    /// Items after the skeleton's (the nested module).
    pub(super) after_skeleton: TokenStream,
}

pub(super) struct CallParam {
    pub(super) name: String,
    pub(super) direction: Direction,
    pub(super) ty: Type,
    /// For a reply handler's `excep_holder`: the interface and error enum
    /// of the call whose exception it holds (`ty` is then unused).
    pub(super) holder: Option<(DefId, Option<String>)>,
}

impl Call {
    /// The parameters the caller sends: in and inout.
    pub(super) fn inputs(&self) -> impl Iterator<Item = &CallParam> {
        self.params.iter().filter(|p| p.direction != Direction::Out)
    }

    /// The clippy lints a method for this call may meet by mirroring its
    /// IDL, allowed on that method: IDL operations take as many
    /// parameters as they like, may raise large exceptions (`large` says
    /// whether one may be over clippy's limit) and may be named `from_*` or
    /// `into_*`.
    pub(super) fn allowed_lints(&self, large: bool) -> TokenStream {
        self.allowed_lints_with(large, 0)
    }

    /// [`allowed_lints`](Self::allowed_lints) for a method that takes
    /// `extra` parameters besides the IDL's (an AMI reply handler).
    pub(super) fn allowed_lints_with(&self, large: bool, extra: usize) -> TokenStream {
        let mut lints = Vec::new();
        if large {
            lints.push(quote!(clippy::result_large_err));
        }
        let inputs = self.inputs().count() + extra;
        // Clippy counts `&self` too.
        if inputs + 1 > 7 {
            lints.push(quote!(clippy::too_many_arguments));
        }
        let m = self.method.trim_start_matches("r#");
        if m.starts_with("from_") || m.starts_with("into_") || m.ends_with("_mut") {
            lints.push(quote!(clippy::wrong_self_convention));
        }
        if lints.is_empty() {
            TokenStream::new()
        } else {
            quote!(#[allow(#(#lints),*)])
        }
    }
}

impl Generator<'_> {
    /// The calls of an operation or attribute declared by `owner`.
    pub(super) fn calls_of(&mut self, owner: DefId, member: DefId) -> Vec<Call> {
        let names = self.op_names(member);
        let doc = self.doc(member);
        let def = &self.spec[member];
        match &def.kind {
            DefKind::Operation(op) => vec![Call {
                wire: def.name.clone(),
                stub_method: names.method.clone(),
                method: names.method,
                doc,
                params: op
                    .params
                    .iter()
                    .zip(names.params)
                    .map(|(p, name)| CallParam {
                        name,
                        direction: p.direction,
                        ty: p.ty.clone(),
                        holder: None,
                    })
                    .collect(),
                ret: op.return_type.clone(),
                raises: op.raises.clone(),
                error: names.error,
                owner,
                member,
                handler: false,
                oneway: op.oneway,
                ami: self.ami_call(member, 0),
                default_body: None,
            }],
            DefKind::Attribute(attribute) => {
                let mut calls = vec![Call {
                    wire: format!("_get_{}", def.name),
                    stub_method: names.method.clone(),
                    method: names.method,
                    doc: doc.clone(),
                    params: Vec::new(),
                    ret: Some(attribute.ty.clone()),
                    raises: attribute.get_raises.clone(),
                    error: names.error,
                    owner,
                    member,
                    handler: false,
                    oneway: false,
                    ami: self.ami_call(member, 0),
                    default_body: None,
                }];
                if let Some(setter) = names.setter {
                    calls.push(Call {
                        wire: format!("_set_{}", def.name),
                        stub_method: setter.clone(),
                        method: setter,
                        doc,
                        params: vec![CallParam {
                            name: "value".into(),
                            direction: Direction::In,
                            ty: attribute.ty.clone(),
                            holder: None,
                        }],
                        ret: None,
                        raises: attribute.set_raises.clone(),
                        error: names.set_error,
                        owner,
                        member,
                        handler: false,
                        oneway: false,
                        ami: self.ami_call(member, 1),
                        default_body: None,
                    });
                }
                calls
            }
            _ => Vec::new(),
        }
    }

    /// Every call of an interface, inherited ones first, leaving out what
    /// the back end cannot map, with the names the interface's stub gives
    /// them.
    fn all_calls(&mut self, interface: DefId) -> Vec<Call> {
        let here = self.interface_names(interface);
        let mut calls = Vec::new();
        for (owner, member) in self.spec.all_operations(interface) {
            if self.left_out.contains_key(&member) {
                continue;
            }
            let mut member_calls = self.calls_of(owner, member);
            if let Some(names) = here.get(member) {
                let sync = std::iter::once(&names.method).chain(&names.setter);
                for (call, method) in member_calls.iter_mut().zip(sync) {
                    call.stub_method.clone_from(method);
                }
                for (call, ami) in member_calls.iter_mut().zip(&names.ami) {
                    if let Some(call_ami) = &mut call.ami {
                        call_ami.stub = ami.clone();
                    }
                }
            }
            calls.extend(member_calls);
        }
        calls
    }

    /// The calls `interface` itself declares.
    pub(super) fn own_calls(&mut self, interface: DefId) -> Vec<Call> {
        let mut calls = Vec::new();
        let members: Vec<DefId> = self.spec.contents(interface).to_vec();
        for member in members {
            if self.left_out.contains_key(&member) {
                continue;
            }
            calls.extend(self.calls_of(interface, member));
        }
        calls
    }

    /// A path to `id`'s item with `suffix` appended to its name
    /// (`QuoterServant`).
    fn suffixed_path(&self, from: &[String], id: DefId, suffix: &str) -> TokenStream {
        let names = self.names(id);
        let prefix = relative_module(from, &names.module);
        let item = ident(&format!("{}{suffix}", names.base));
        quote!(#prefix #item)
    }

    /// The error type of a call, from module `from`.
    pub(super) fn error_type(&self, from: &[String], call: &Call) -> TokenStream {
        match &call.error {
            Some(name) => self.inner_path(from, call.owner, name),
            None => quote!(::armillary::SystemException),
        }
    }

    /// The success type of a call: the return value and the out
    /// parameters (inout parameters are updated in place).
    pub(super) fn result_type(&self, from: &[String], call: &Call) -> TokenStream {
        let mut parts: Vec<TokenStream> = Vec::new();
        if let Some(ret) = &call.ret {
            parts.push(self.rust_type(from, ret));
        }
        for p in &call.params {
            if p.direction == Direction::Out {
                parts.push(self.rust_type(from, &p.ty));
            }
        }
        match parts.len() {
            0 => quote!(()),
            1 => parts.remove(0),
            _ => quote!((#(#parts),*)),
        }
    }

    /// Names for the values a reply carries: `result`, the out parameters,
    /// and fresh names for the new values of inout parameters.
    pub(super) fn reply_values(call: &Call) -> Vec<(String, Option<usize>)> {
        let mut namer = Namer::with_reserved(&["result", "w", "r", "reply", "id", "members"]);
        for p in &call.params {
            namer.insert(p.name.clone());
        }
        let mut out = Vec::new();
        if call.ret.is_some() {
            out.push(("result".to_owned(), None));
        }
        for (i, p) in call.params.iter().enumerate() {
            match p.direction {
                Direction::Out => out.push((p.name.clone(), Some(i))),
                Direction::InOut => out.push((namer.claim(&format!("{}_new", p.name)), Some(i))),
                Direction::In => {}
            }
        }
        out
    }

    /// The `# Errors` section of a call's stub method (`servant` false) or
    /// servant trait method (`servant` true).
    pub(super) fn errors_doc(&self, call: &Call, servant: bool) -> TokenStream {
        let exceptions: Vec<String> = call
            .raises
            .iter()
            .map(|&e| format!("`{}`", self.spec[e].absolute_name()))
            .collect();
        let text = match (servant, call.oneway, exceptions.is_empty()) {
            (false, true, _) => " A system exception when the request cannot be sent.".to_owned(),
            (false, false, true) => " A system exception: the request could not be delivered, \
                the server raised one, or the reply could not be decoded."
                .to_owned(),
            (false, false, false) => format!(
                " A user exception the operation declares ({}), or `System` with a \
                 system exception.",
                exceptions.join(", ")
            ),
            (true, _, true) => " A system exception to raise in the client.".to_owned(),
            (true, _, false) => format!(
                " A user exception the operation declares ({}), or `System` with a \
                 system exception, to raise in the client.",
                exceptions.join(", ")
            ),
        };
        quote! {
            #[doc = ""]
            #[doc = " # Errors"]
            #[doc = ""]
            #[doc = #text]
        }
    }

    /// For an inherited method the stub names `here` where the declaring
    /// interface `owner` names it `declared` (see `inherited`), a doc
    /// paragraph saying why; nothing when the names are the same.
    pub(super) fn renamed_doc(&self, owner: DefId, here: &str, declared: &str) -> TokenStream {
        if here == declared {
            return TokenStream::new();
        }
        let declaring = self.spec[owner].absolute_name();
        let text = format!(
            " Named `{here}` here because another base interface has a `{declared}`: it is \
             `{declared}` where `{declaring}` declares it (its stub and servant trait)."
        );
        quote! {
            #[doc = ""]
            #[doc = #text]
        }
    }

    /// For a servant trait whose supertraits have methods of the same name
    /// (see `inherited`), doc paragraphs naming them and saying how to
    /// implement and call them; nothing otherwise.
    fn shared_methods_doc(&self, interface: DefId, all_calls: &[Call]) -> TokenStream {
        let mut by_name: std::collections::BTreeMap<&str, Vec<&Call>> =
            std::collections::BTreeMap::new();
        for call in all_calls.iter().filter(|c| c.owner != interface) {
            by_name.entry(&call.method).or_default().push(call);
        }
        let mut lines = Vec::new();
        for (name, calls) in by_name.iter().filter(|(_, calls)| calls.len() > 1) {
            let traits: Vec<String> = calls
                .iter()
                .map(|call| {
                    let owner = if call.handler {
                        self.handlers.get(&call.owner).map_or("", String::as_str)
                    } else {
                        self.names(call.owner).base.as_str()
                    };
                    format!(
                        "`{owner}Servant::{name}` (the stub's `{}`)",
                        call.stub_method
                    )
                })
                .collect();
            lines.push(format!(" - `{name}`: {}.", traits.join(", ")));
        }
        if lines.is_empty() {
            return TokenStream::new();
        }
        let intro = " Supertraits that have methods of the same name: implement each in its own \
             trait's `impl` block, and call it by its trait (`Trait::method(&servant)`), since \
             `servant.method()` cannot tell them apart. The stub gives the later ones a suffix.";
        quote! {
            #[doc = ""]
            #[doc = #intro]
            #[doc = ""]
            #(#[doc = #lines])*
        }
    }

    /// The client stub's method for one call.
    pub(super) fn stub_method(
        &self,
        from: &[String],
        interface: DefId,
        call: &Call,
    ) -> TokenStream {
        let method = ident(&call.method);
        let errors = self.errors_doc(call, false);
        let call_doc = &call.doc;
        let doc = &quote!(#call_doc #errors);
        let wire = call.wire.as_str();
        let params: Vec<TokenStream> = call
            .inputs()
            .map(|p| {
                let name = ident(&p.name);
                let ty = match p.direction {
                    Direction::InOut => {
                        let ty = self.rust_type(from, &p.ty);
                        quote!(&mut #ty)
                    }
                    _ => self.param_in_type(from, p),
                };
                quote!(#name: #ty)
            })
            .collect();
        let lints = call.allowed_lints(self.raises_large(&call.raises));
        if call.owner != interface {
            // Inherited: the declaring interface's stub has the code; one
            // copy of it keeps deep hierarchies small.
            let owner = self.owner_path(from, call, "");
            let args = call.inputs().map(|p| ident(&p.name));
            let result_type = if call.oneway {
                quote!(())
            } else {
                self.result_type(from, call)
            };
            let error = if call.oneway {
                quote!(::armillary::SystemException)
            } else {
                self.error_type(from, call)
            };
            let renamed = self.renamed_doc(call.owner, &call.stub_method, &call.method);
            let here = ident(&call.stub_method);
            return quote! {
                #call_doc
                #renamed
                #errors
                #lints
                pub fn #here(&self, #(#params),*) -> ::core::result::Result<#result_type, #error> {
                    #owner::from_object(self.object.clone()).#method(#(#args),*)
                }
            };
        }
        let writes: Vec<TokenStream> = call
            .inputs()
            .map(|p| {
                let name = ident(&p.name);
                let val = match p.direction {
                    Direction::InOut => Val::MutRef(quote!(#name)),
                    _ if self.is_copy(&p.ty) => Val::Place(quote!(#name)),
                    _ => Val::Ref(quote!(#name)),
                };
                self.param_encode(p, &val)
            })
            .collect();
        let args = if writes.is_empty() {
            quote!(&|_| ::core::result::Result::Ok(()))
        } else {
            quote!(&|w| {
                #(#writes)*
                ::core::result::Result::Ok(())
            })
        };
        let error = self.error_type(from, call);
        let servant_trait = self.owner_path(from, call, "Servant");
        let typed = self.typed_collocation(call);
        let local = self.local_call(call, &servant_trait);
        if call.oneway {
            let invoke = match typed {
                true => quote! {
                    self.object.invoke_oneway_typed::<dyn #servant_trait, _>(#wire, #local, #args)
                },
                false => quote!(self.object.invoke_oneway(#wire, #args)),
            };
            return quote! {
                #doc
                #lints
                pub fn #method(&self, #(#params),*) -> ::core::result::Result<(), ::armillary::SystemException> {
                    #invoke
                }
            };
        }
        let result_type = self.result_type(from, call);
        let values = Self::reply_values(call);
        let (tuple, _, decoder) = self.reply_readers(from, call, &values);
        let invoke = match typed {
            true => quote! {
                self.object.invoke_typed::<dyn #servant_trait, _, _, _>(#wire, #local, #args, #decoder)
            },
            false => quote!(self.object.invoke(#wire, #args, #decoder)),
        };
        let inouts: Vec<(TokenStream, TokenStream)> = values
            .iter()
            .filter_map(|(name, param)| {
                let i = (*param)?;
                (call.params[i].direction == Direction::InOut).then(|| {
                    let target = ident(&call.params[i].name);
                    let value = ident(name);
                    (quote!(#target), quote!(#value))
                })
            })
            .collect();
        let body = if inouts.is_empty() {
            invoke
        } else {
            let assigns = inouts.iter().map(|(t, v)| quote!(*#t = #v;));
            let returned: Vec<_> = values
                .iter()
                .filter(|(_, param)| {
                    param.is_none_or(|i| call.params[i].direction == Direction::Out)
                })
                .map(|(name, _)| ident(name))
                .collect();
            let returned = match returned.len() {
                0 => quote!(()),
                1 => {
                    let only = &returned[0];
                    quote!(#only)
                }
                _ => quote!((#(#returned),*)),
            };
            quote! {
                let #tuple = #invoke?;
                #(#assigns)*
                ::core::result::Result::Ok(#returned)
            }
        };
        quote! {
            #doc
            #lints
            pub fn #method(&self, #(#params),*) -> ::core::result::Result<#result_type, #error> {
                #body
            }
        }
    }

    /// How a call's reply is read, given its [`reply_values`](Self::reply_values):
    /// the pattern (or expression) of those values, a function reading
    /// them from a `Result` body, and a closure decoding a whole
    /// `ReplyBody` into `Result<Result<values, Error>, CdrError>`. The
    /// synchronous and asynchronous stub methods share them.
    pub(super) fn reply_readers(
        &self,
        from: &[String],
        call: &Call,
        values: &[(String, Option<usize>)],
    ) -> (TokenStream, TokenStream, TokenStream) {
        let reads: Vec<TokenStream> = values
            .iter()
            .map(|(name, param)| {
                let ty = match param {
                    Some(i) => &call.params[*i].ty,
                    None => call.ret.as_ref().unwrap_or(&Type::Any),
                };
                let name = ident(name);
                let read = self.decode(from, ty);
                quote!(let #name = #read;)
            })
            .collect();
        let value_names: Vec<_> = values.iter().map(|(name, _)| ident(name)).collect();
        let tuple = match value_names.len() {
            0 => quote!(()),
            1 => {
                let only = &value_names[0];
                quote!(#only)
            }
            _ => quote!((#(#value_names),*)),
        };
        let user_exception = self.user_exception_arm(from, call);
        let plain_read = match values {
            [] => quote!(|_| ::core::result::Result::Ok(())),
            [(_, param)] => {
                let ty = match param {
                    Some(i) => &call.params[*i].ty,
                    None => call.ret.as_ref().unwrap_or(&Type::Any),
                };
                reader_fn(self.decode_result(from, ty))
            }
            _ => quote! {
                |r| {
                    #(#reads)*
                    ::core::result::Result::Ok(#tuple)
                }
            },
        };
        let reply_result = if reads.is_empty() {
            quote!(::armillary::runtime::ReplyBody::Result(_) => ::core::result::Result::Ok(::core::result::Result::Ok(())),)
        } else {
            quote! {
                ::armillary::runtime::ReplyBody::Result(r) => {
                    #(#reads)*
                    ::core::result::Result::Ok(::core::result::Result::Ok(#tuple))
                }
            }
        };
        let decoder = quote! {
            |reply| match reply {
                #reply_result
                #user_exception
            }
        };
        (tuple, plain_read, decoder)
    }

    /// The reply-decoding arm for a USER_EXCEPTION reply.
    fn user_exception_arm(&self, from: &[String], call: &Call) -> TokenStream {
        let unknown = quote! {
            ::armillary::SystemException::unknown(
                ::armillary::minor::UNLISTED_USER_EXCEPTION,
                ::armillary::CompletionStatus::Yes,
            )
        };
        let Some(error_name) = &call.error else {
            return quote! {
                ::armillary::runtime::ReplyBody::UserException { .. } => {
                    ::core::result::Result::Ok(::core::result::Result::Err(#unknown))
                }
            };
        };
        let error = self.inner_path(from, call.owner, error_name);
        quote! {
            ::armillary::runtime::ReplyBody::UserException { id, members } => {
                ::core::result::Result::Ok(::core::result::Result::Err(
                    match <#error as ::armillary::runtime::UserExceptionSet>::decode_user_exception(&id, members)? {
                        ::core::option::Option::Some(e) => e,
                        ::core::option::Option::None => #error::System(#unknown),
                    },
                ))
            }
        }
    }

    /// Variant names of a call's error enum, one per raised exception.
    pub(super) fn error_variants(&self, call: &Call) -> Vec<String> {
        let mut namer = Namer::with_reserved(&["System"]);
        call.raises
            .iter()
            .map(|&e| namer.claim(&camel(&self.spec[e].name)))
            .collect()
    }

    /// The error enum of a call that raises user exceptions.
    fn error_enum(&self, call: &Call) -> TokenStream {
        let Some(name) = &call.error else {
            return TokenStream::new();
        };
        let inner = self.names(call.owner).inner.clone();
        let name = ident(name);
        let variants: Vec<_> = self.error_variants(call).iter().map(|v| ident(v)).collect();
        let types: Vec<_> = call
            .raises
            .iter()
            .map(|&e| self.path_to(&inner, e))
            .collect();
        let docs: Vec<String> = call
            .raises
            .iter()
            .map(|&e| format!(" The user exception `{}`.", self.spec[e].absolute_name()))
            .collect();
        let doc = format!(
            " What `{}::{}` can fail with: its user exceptions or a system exception.",
            self.spec[call.owner].absolute_name(),
            call.wire
        );
        let repos: Vec<&str> = call
            .raises
            .iter()
            .map(|&e| self.spec[e].repository_id.as_str())
            .collect();
        let (cdr_decode, cdr_encode, cdr_error) = (cdr_decode(), cdr_encode(), cdr_error());
        let eq_hash = call
            .raises
            .iter()
            .all(|&e| self.members_eq_hash(e))
            .then(|| quote!(Eq, Hash,));
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, PartialEq, #eq_hash)]
            pub enum #name {
                #(#[doc = #docs] #variants(#types),)*
                /// A system exception.
                System(::armillary::SystemException),
            }

            impl ::core::convert::From<::armillary::SystemException> for #name {
                fn from(e: ::armillary::SystemException) -> Self {
                    Self::System(e)
                }
            }

            impl ::armillary::runtime::UserExceptionSet for #name {
                fn decode_user_exception(
                    id: &str,
                    members: &mut ::armillary::runtime::CdrReader<'_>,
                ) -> ::core::result::Result<::core::option::Option<Self>, #cdr_error> {
                    ::core::result::Result::Ok(::core::option::Option::Some(match id {
                        #(#repos => Self::#variants(<#types as #cdr_decode>::decode(members)?),)*
                        _ => return ::core::result::Result::Ok(::core::option::Option::None),
                    }))
                }

                fn encode_user_exception(
                    &self,
                    w: &mut ::armillary::runtime::CdrWriter,
                ) -> ::core::option::Option<::core::result::Result<(), #cdr_error>> {
                    match self {
                        #(Self::#variants(e) => ::core::option::Option::Some(
                            w.write_string(#repos)
                                .and_then(|()| <#types as #cdr_encode>::encode(e, w)),
                        ),)*
                        Self::System(_) => ::core::option::Option::None,
                    }
                }
            }

            impl ::core::convert::From<::armillary::poa::PoaError> for #name {
                fn from(e: ::armillary::poa::PoaError) -> Self {
                    Self::System(e.into())
                }
            }

            impl ::core::convert::From<::armillary::OrbError> for #name {
                fn from(e: ::armillary::OrbError) -> Self {
                    Self::System(e.into())
                }
            }

            #(
                impl ::core::convert::From<#types> for #name {
                    fn from(e: #types) -> Self {
                        Self::#variants(e)
                    }
                }
            )*

            impl ::core::fmt::Display for #name {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    match self {
                        #(Self::#variants(e) => ::core::fmt::Display::fmt(e, f),)*
                        Self::System(e) => ::core::fmt::Display::fmt(e, f),
                    }
                }
            }

            /// The source is the exception itself, user or system (the
            /// message is the exception's own).
            impl ::std::error::Error for #name {
                fn source(&self) -> ::core::option::Option<&(dyn ::std::error::Error + 'static)> {
                    match self {
                        #(Self::#variants(e) => ::core::option::Option::Some(e),)*
                        Self::System(e) => ::core::option::Option::Some(e),
                    }
                }
            }
        }
    }

    /// The servant trait's method for one call.
    pub(super) fn trait_method(&self, from: &[String], call: &Call) -> TokenStream {
        self.trait_method_named(from, call, &call.method)
    }

    /// The servant trait's method for one call, named `method` (an AMH
    /// servant trait, which flattens inherited calls, names them as the
    /// stub does).
    pub(super) fn trait_method_named(
        &self,
        from: &[String],
        call: &Call,
        method: &str,
    ) -> TokenStream {
        let method = ident(method);
        let call_doc = &call.doc;
        let errors = self.errors_doc(call, true);
        let doc = quote!(#call_doc #errors);
        let params: Vec<TokenStream> = call
            .inputs()
            .map(|p| {
                let name = ident(&p.name);
                let ty = self.param_rust_type(from, p);
                match p.direction {
                    Direction::InOut => quote!(#name: &mut #ty),
                    _ => quote!(#name: #ty),
                }
            })
            .collect();
        let (result, error) = if call.oneway {
            (quote!(()), quote!(::armillary::SystemException))
        } else {
            (self.result_type(from, call), self.error_type(from, call))
        };
        let lints = call.allowed_lints(self.raises_large(&call.raises));
        match &call.default_body {
            Some(body) => quote! {
                #doc
                #lints
                fn #method(&self, #(#params),*) -> ::core::result::Result<#result, #error> {
                    #body
                }
            },
            None => quote! {
                #doc
                #lints
                fn #method(&self, #(#params),*) -> ::core::result::Result<#result, #error>;
            },
        }
    }

    /// The skeleton's code for one call: decode, upcall, encode.
    /// The supertraits (the bases' traits) and the methods of the trait a
    /// server implements for an interface (its servant trait or, for a
    /// local interface, the interface's own trait).
    fn trait_parts(
        &self,
        module: &[String],
        bases: &[DefId],
        own_calls: &[Call],
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let supertraits = bases
            .iter()
            .map(|&base| {
                if self.is_local_interface(base) {
                    self.path_to(module, base)
                } else {
                    self.suffixed_path(module, base, "Servant")
                }
            })
            .collect();
        let methods = own_calls
            .iter()
            .map(|call| self.trait_method(module, call))
            .collect();
        (supertraits, methods)
    }

    /// The name of the skeleton's associated function that serves `call`.
    pub(super) fn upcall_fn(call: &Call) -> proc_macro2::Ident {
        ident(&format!("upcall_{}", call.method.trim_start_matches("r#")))
    }

    /// The statements of an upcall that read a call's in and inout
    /// arguments from `request` into locals named as the parameters
    /// (`mut` for inout ones when `mut_inouts`: the synchronous servant
    /// updates them in place).
    pub(super) fn decode_args(
        &self,
        from: &[String],
        call: &Call,
        mut_inouts: bool,
    ) -> TokenStream {
        let inputs: Vec<&CallParam> = call.inputs().collect();
        let mutability =
            |p: &CallParam| (mut_inouts && p.direction == Direction::InOut).then(|| quote!(mut));
        match inputs.len() {
            0 => TokenStream::new(),
            1 => {
                let p = inputs[0];
                let name = ident(&p.name);
                let mutability = mutability(p);
                let read = reader_fn(self.param_decode_result(from, p));
                quote! {
                    let #mutability #name = request.decode_args(#read)?;
                }
            }
            _ => {
                let names: Vec<_> = inputs.iter().map(|p| ident(&p.name)).collect();
                let bindings = inputs.iter().map(|p| {
                    let name = ident(&p.name);
                    let mutability = mutability(p);
                    quote!(#mutability #name)
                });
                let reads = inputs.iter().map(|p| {
                    let name = ident(&p.name);
                    let read = self.param_decode(from, p);
                    quote!(let #name = #read;)
                });
                quote! {
                    let (#(#bindings),*) = request.decode_args(|r| {
                        #(#reads)*
                        ::core::result::Result::Ok((#(#names),*))
                    })?;
                }
            }
        }
    }

    /// A closure writing a normal reply's body — the return value, then
    /// the out and inout values in IDL order — from the locals `values`
    /// (name, IDL type): what `ServerRequest::encode_results` and an AMH
    /// responder's `ResponseHandler::reply` take.
    pub(super) fn reply_writer(&self, values: &[(TokenStream, &Type)]) -> TokenStream {
        if values.is_empty() {
            return quote!(|_| ::core::result::Result::Ok(()));
        }
        let writes = values
            .iter()
            .map(|(name, ty)| self.encode(ty, &Val::Place(name.clone())));
        quote! {
            |w| {
                #(#writes)*
                ::core::result::Result::Ok(())
            }
        }
    }

    /// The body of a skeleton's `upcall_*` function: decode the
    /// arguments, call `servant.method`, encode the reply.
    pub(super) fn upcall_body(&self, from: &[String], call: &Call, method: &str) -> TokenStream {
        let method = ident(method);
        let inputs: Vec<&CallParam> = call.inputs().collect();
        let decode_args = self.decode_args(from, call, true);
        let args = inputs.iter().map(|p| {
            let name = ident(&p.name);
            if p.direction == Direction::InOut {
                quote!(&mut #name)
            } else {
                quote!(#name)
            }
        });
        let upcall = quote!(servant.#method(#(#args),*));
        if call.oneway {
            return quote! {
                #decode_args
                #upcall?;
                ::core::result::Result::Ok(())
            };
        }
        // What the reply carries: the result, out and inout values.
        let mut reply: Vec<(TokenStream, &Type)> = Vec::new();
        let mut pattern_names: Vec<TokenStream> = Vec::new();
        if let Some(ret) = &call.ret {
            reply.push((quote!(result), ret));
            pattern_names.push(quote!(result));
        }
        for p in &call.params {
            let name = ident(&p.name);
            match p.direction {
                Direction::Out => {
                    reply.push((quote!(#name), &p.ty));
                    pattern_names.push(quote!(#name));
                }
                Direction::InOut => reply.push((quote!(#name), &p.ty)),
                Direction::In => {}
            }
        }
        let pattern = match pattern_names.len() {
            0 => quote!(()),
            1 => pattern_names.remove(0),
            _ => quote!((#(#pattern_names),*)),
        };
        let writer = self.reply_writer(&reply);
        let encode = quote!(request.encode_results(#writer));
        match &call.error {
            None => {
                let binding = if pattern_names_is_unit(&pattern) {
                    quote!(#upcall?;)
                } else {
                    quote!(let #pattern = #upcall?;)
                };
                quote! {
                    #decode_args
                    #binding
                    #encode
                }
            }
            Some(error_name) => {
                let error = self.inner_path(from, call.owner, error_name);
                let variants: Vec<_> = self.error_variants(call).iter().map(|v| ident(v)).collect();
                quote! {
                    #decode_args
                    match #upcall {
                        ::core::result::Result::Ok(#pattern) => #encode,
                        #(::core::result::Result::Err(#error::#variants(e)) => request.raise(&e),)*
                        ::core::result::Result::Err(#error::System(e)) => ::core::result::Result::Err(e),
                    }
                }
            }
        }
    }

    /// An unconstrained or abstract interface: its stub, servant trait,
    /// skeleton and error enums and, when AMI is on, its reply handler.
    pub(super) fn interface(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Interface(interface) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let abstract_ = interface.kind == InterfaceKind::Abstract;
        let bases = interface.bases.clone();
        let all_calls = self.all_calls(id);
        let own_calls = self.own_calls(id);
        let ami = self.options.ami;
        let mut methods: Vec<TokenStream> = all_calls
            .iter()
            .map(|call| self.stub_method(module, id, call))
            .collect();
        if ami {
            methods.extend(
                all_calls
                    .iter()
                    .filter(|call| !call.oneway)
                    .map(|call| self.ami_methods(module, id, call)),
            );
        }
        let remote_ancestors: Vec<DefId> = self
            .spec
            .ancestors(id)
            .into_iter()
            .filter(|&base| !self.is_local_interface(base))
            .collect();
        let mut ids = vec![self.spec[id].repository_id.clone()];
        ids.extend(
            self.spec
                .ancestors(id)
                .into_iter()
                .map(|base| self.spec[base].repository_id.clone()),
        );
        let (supertraits, trait_methods) = self.trait_parts(module, &bases, &own_calls);
        let error_enums: TokenStream = own_calls.iter().map(|call| self.error_enum(call)).collect();
        let idl_type = self.idl_type_impl(id);
        let tc = self.tc_static(module, id);
        let nested = self.nested_module(id, error_enums);
        let amh = self.amh_items(module, id, &all_calls, &ids);
        let model = InterfaceModel {
            id,
            base: self.names(id).base.clone(),
            idl_name: self.spec[id].absolute_name(),
            doc: self.doc(id),
            repo: self.spec[id].repository_id.clone(),
            abstract_,
            all_calls,
            own_calls,
            methods,
            upcast_to: remote_ancestors
                .iter()
                .map(|&base| self.path_to(module, base))
                .collect(),
            ancestor_servants: remote_ancestors
                .iter()
                .map(|&base| {
                    let name = format!("{}Servant", self.names(base).base);
                    (name, self.suffixed_path(module, base, "Servant"))
                })
                .collect(),
            supertraits,
            trait_methods,
            ids,
            after_stub: quote!(#idl_type #tc),
            after_skeleton: nested,
        };
        let mut out = self.interface_items(module, model);
        out.extend(amh);
        if ami {
            out.extend(self.handler_interface(module, id));
        }
        out
    }

    /// The stub, servant trait and skeleton of an interface (an IDL one
    /// or an implied reply handler) described by `m`.
    pub(super) fn interface_items(&mut self, module: &[String], m: InterfaceModel) -> TokenStream {
        let InterfaceModel {
            id,
            base,
            idl_name,
            doc,
            repo,
            abstract_,
            all_calls,
            own_calls,
            methods,
            upcast_to,
            ancestor_servants,
            supertraits,
            trait_methods,
            ids,
            after_stub,
            after_skeleton,
        } = m;
        let name = ident(&base);
        let servant = ident(&format!("{base}Servant"));
        let skeleton = ident(&format!("{base}Skeleton"));
        let (encode, decode, error) = (cdr_encode(), cdr_decode(), cdr_error());

        let upcasts: Vec<TokenStream> = upcast_to
            .iter()
            .map(|base_path| {
                quote! {
                    impl ::core::convert::From<#name> for #base_path {
                        fn from(derived: #name) -> Self {
                            #base_path::from_object(derived.object)
                        }
                    }
                }
            })
            .collect();
        let (cdr_write, cdr_read) = if abstract_ {
            (
                quote! {
                    // An abstract interface travels as a union: TRUE and a reference.
                    w.write_bool(true);
                    #encode::encode(&self.object, w)
                },
                quote! {
                    let offset = r.position();
                    if r.read_bool()? {
                        return ::core::result::Result::Ok(Self { object: <::armillary::ObjectRef as #decode>::decode(r)? });
                    }
                    if r.read_ulong()? == 0 {
                        return ::core::result::Result::Ok(Self { object: ::armillary::ObjectRef::nil() });
                    }
                    ::core::result::Result::Err(#error::Invalid {
                        offset,
                        what: "a valuetype in an abstract interface is not supported",
                    })
                },
            )
        } else {
            (
                quote!(#encode::encode(&self.object, w)),
                quote! {
                    ::core::result::Result::Ok(Self { object: <::armillary::ObjectRef as #decode>::decode(r)? })
                },
            )
        };

        // Each operation is served by an `upcall_*` function of the
        // skeleton of the interface that declares it; derived skeletons
        // call their bases' (one copy of the code per operation).
        let operations: Vec<(&str, TokenStream)> = all_calls
            .iter()
            .map(|call| {
                let upcall = Self::upcall_fn(call);
                let serve = if call.owner == id {
                    quote!(Self::#upcall(&self.servant, request))
                } else {
                    let owner = self.owner_path(module, call, "Skeleton");
                    quote!(#owner::<T>::#upcall(&self.servant, request))
                };
                (call.wire.as_str(), serve)
            })
            .collect();
        let upcalls: Vec<TokenStream> = own_calls
            .iter()
            .map(|call| {
                let upcall = Self::upcall_fn(call);
                let body = self.upcall_body(module, call, &call.method);
                let doc = format!(
                    " Serves `{}`: decodes the arguments, calls the servant, encodes the reply.",
                    call.wire
                );
                quote! {
                    #[doc = #doc]
                    #[doc(hidden)]
                    pub fn #upcall(
                        servant: &T,
                        request: &mut ::armillary::ServerRequest<'_>,
                    ) -> ::core::result::Result<(), ::armillary::SystemException> {
                        #body
                    }
                }
            })
            .collect();
        let skeleton_doc =
            format!(" Serves `{idl_name}` by dispatching its requests to a [`{servant}`].");
        let skeleton_name = skeleton.to_string();
        let SkeletonViews {
            fields: view_fields,
            inits: view_inits,
            local_interface,
        } = Self::skeleton_views(&servant, &ancestor_servants);
        let shared = self.shared_methods_doc(id, &all_calls);
        let servant_doc = format!(
            " What a server implements to serve `{idl_name}`; wrap it in [`{skeleton}`] to activate it."
        );
        let dispatch = super::operation_dispatch(&operations);

        quote! {
            #doc
            #[doc = ""]
            #[doc = " Equal (and hashed alike) when the IORs are identical; the default is the nil reference."]
            #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
            pub struct #name {
                object: ::armillary::ObjectRef,
            }

            impl #name {
                /// The interface's repository id.
                pub const REPOSITORY_ID: &'static str = #repo;

                /// Wraps a reference without checking its type (see [`Self::narrow`]).
                #[must_use]
                pub fn from_object(object: ::armillary::ObjectRef) -> Self {
                    Self { object }
                }

                /// The reference as this interface, if the object is one (asking it
                /// with `_is_a` unless its IOR already says so); `None` for nil or
                /// another type.
                ///
                /// # Errors
                ///
                /// The system exception of a failed `_is_a` call.
                pub fn narrow(
                    object: &::armillary::ObjectRef,
                ) -> ::core::result::Result<::core::option::Option<Self>, ::armillary::SystemException> {
                    if object.is_nil() || !object.is_a(Self::REPOSITORY_ID)? {
                        return ::core::result::Result::Ok(::core::option::Option::None);
                    }
                    ::core::result::Result::Ok(::core::option::Option::Some(Self::from_object(object.clone())))
                }

                /// The untyped reference.
                #[must_use]
                pub fn as_object(&self) -> &::armillary::ObjectRef {
                    &self.object
                }

                /// The untyped reference.
                #[must_use]
                pub fn into_object(self) -> ::armillary::ObjectRef {
                    self.object
                }

                /// True for the nil reference.
                #[must_use]
                pub fn is_nil(&self) -> bool {
                    self.object.is_nil()
                }

                #(#methods)*
            }

            impl ::core::convert::From<#name> for ::armillary::ObjectRef {
                fn from(reference: #name) -> Self {
                    reference.object
                }
            }

            impl ::armillary::Interface for #name {
                const REPOSITORY_ID: &'static str = #repo;

                fn from_object(object: ::armillary::ObjectRef) -> Self {
                    Self { object }
                }

                fn as_object(&self) -> &::armillary::ObjectRef {
                    &self.object
                }
            }

            #(#upcasts)*

            impl #encode for #name {
                fn encode(&self, w: &mut ::armillary::runtime::CdrWriter) -> ::core::result::Result<(), #error> {
                    #cdr_write
                }
            }

            impl #decode for #name {
                const MIN_SIZE: usize = 4;

                fn decode(r: &mut ::armillary::runtime::CdrReader<'_>) -> ::core::result::Result<Self, #error> {
                    #cdr_read
                }
            }

            #after_stub

            #[doc = #servant_doc]
            #shared
            pub trait #servant: ::core::marker::Send + ::core::marker::Sync + 'static #(+ #supertraits)* {
                #(#trait_methods)*
            }

            #[doc = #skeleton_doc]
            pub struct #skeleton<T> {
                servant: ::std::sync::Arc<T>,
                #view_fields
            }

            impl<T: ::core::fmt::Debug> ::core::fmt::Debug for #skeleton<T> {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(#skeleton_name)
                        .field("servant", &self.servant)
                        .finish_non_exhaustive()
                }
            }

            impl<T: #servant> #skeleton<T> {
                /// Wraps `servant`.
                pub fn new(servant: T) -> Self {
                    Self::from_arc(::std::sync::Arc::new(servant))
                }

                /// Wraps a servant the application keeps a handle to.
                pub fn from_arc(servant: ::std::sync::Arc<T>) -> Self {
                    Self {
                        #view_inits
                        servant,
                    }
                }

                /// The typed servant: clone it before activation to keep a
                /// handle that stays usable while the POA serves it.
                #[must_use]
                pub fn servant(&self) -> &::std::sync::Arc<T> {
                    &self.servant
                }

                /// Activates the servant in `poa` under a new system-assigned
                /// id and returns the typed reference.
                ///
                /// # Errors
                ///
                /// The POA's error when it cannot activate the servant (it is
                /// destroyed, or its policies do not allow it).
                pub fn activate(
                    self,
                    poa: &::armillary::poa::Poa,
                ) -> ::core::result::Result<#name, ::armillary::poa::PoaError> {
                    poa.activate_as(self)
                }

                /// Activates the servant in `poa` under `object_id` and returns
                /// the typed reference.
                ///
                /// # Errors
                ///
                /// The POA's error when it cannot activate the servant (the id
                /// is in use, the POA is destroyed, or its policies do not
                /// allow it).
                pub fn activate_with_id(
                    self,
                    poa: &::armillary::poa::Poa,
                    object_id: impl ::core::convert::Into<::armillary::poa::ObjectId>,
                ) -> ::core::result::Result<#name, ::armillary::poa::PoaError> {
                    poa.activate_with_id_as(object_id, self)
                }

                /// The servant as the POA holds it, for the untyped POA
                /// operations (`servant_to_reference`, `set_servant`, servant
                /// managers).
                #[must_use]
                pub fn into_servant(self) -> ::std::sync::Arc<dyn ::armillary::Servant> {
                    ::std::sync::Arc::new(self)
                }

                #(#upcalls)*
            }

            impl<T: #servant> ::armillary::Servant for #skeleton<T> {
                fn repository_id(&self) -> &'static str {
                    #repo
                }

                fn is_a(&self, repository_id: &str) -> bool {
                    matches!(repository_id, #(#ids)|*)
                }

                #local_interface

                fn dispatch(
                    &self,
                    request: &mut ::armillary::ServerRequest<'_>,
                ) -> ::core::result::Result<(), ::armillary::SystemException> {
                    #dispatch
                }
            }

            #after_skeleton
        }
    }

    /// A local interface: a trait, implemented by Rust objects in this
    /// process and never marshalled.
    pub(super) fn local_interface(&mut self, module: &[String], id: DefId) -> TokenStream {
        let DefKind::Interface(interface) = &self.spec[id].kind else {
            return TokenStream::new();
        };
        let bases = interface.bases.clone();
        let names = self.names(id).clone();
        let name = ident(&names.base);
        let doc = self.doc(id);
        let own_calls = self.own_calls(id);
        let (supertraits, trait_methods) = self.trait_parts(module, &bases, &own_calls);
        let error_enums: TokenStream = own_calls.iter().map(|call| self.error_enum(call)).collect();
        let tc = self.tc_static(module, id);
        let nested = self.nested_module(id, error_enums);
        quote! {
            #doc
            #[doc = ""]
            #[doc = " A local interface: implemented in this process, never called remotely."]
            pub trait #name: ::core::marker::Send + ::core::marker::Sync #(+ #supertraits)* {
                #(#trait_methods)*
            }

            #tc
            #nested
        }
    }
}

fn pattern_names_is_unit(pattern: &TokenStream) -> bool {
    pattern.to_string() == "()"
}

/// A function reading one value from `r`, given the expression `read`
/// (of type `Result<T, CdrError>`): `<T as CdrDecode>::decode` itself when
/// that is all it calls, else a closure.
pub(super) fn reader_fn(read: TokenStream) -> TokenStream {
    let mut tokens: Vec<proc_macro2::TokenTree> = read.clone().into_iter().collect();
    let calls_decode_on_r = match tokens.as_slice() {
        [.., proc_macro2::TokenTree::Ident(f), proc_macro2::TokenTree::Group(args)] => {
            f == "decode"
                && args.delimiter() == proc_macro2::Delimiter::Parenthesis
                && args.stream().to_string() == "r"
        }
        _ => false,
    };
    if calls_decode_on_r {
        tokens.pop();
        return tokens.into_iter().collect();
    }
    // `r.read_long()` is `<i32 as CdrDecode>::decode`. (The reader's own
    // methods cannot be named instead: a path to them is not generic over
    // the reader's lifetime, which `Any::read_with` and
    // `ObjectRef::invoke_plain` require.)
    if let [proc_macro2::TokenTree::Ident(r), proc_macro2::TokenTree::Punct(dot), proc_macro2::TokenTree::Ident(method), proc_macro2::TokenTree::Group(args)] =
        tokens.as_slice()
    {
        let rust = match method.to_string().as_str() {
            "read_short" => Some(quote!(i16)),
            "read_ushort" => Some(quote!(u16)),
            "read_long" => Some(quote!(i32)),
            "read_ulong" => Some(quote!(u32)),
            "read_longlong" => Some(quote!(i64)),
            "read_ulonglong" => Some(quote!(u64)),
            "read_float" => Some(quote!(f32)),
            "read_double" => Some(quote!(f64)),
            "read_long_double" => Some(quote!(::armillary::LongDouble)),
            "read_octet" => Some(quote!(u8)),
            "read_bool" => Some(quote!(bool)),
            "read_char" => Some(quote!(char)),
            "read_string" => Some(quote!(::std::string::String)),
            _ => None,
        };
        if let Some(rust) =
            rust.filter(|_| r == "r" && dot.as_char() == '.' && args.stream().is_empty())
        {
            return quote!(<#rust as ::armillary::runtime::CdrDecode>::decode);
        }
    }
    quote!(|r| #read)
}
