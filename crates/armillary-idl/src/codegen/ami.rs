//! Asynchronous method invocation (CORBA Messaging's AMI): the implied
//! reply-handler interface of each non-local interface and the callback,
//! polling and future methods of its stub.
//!
//! For an interface `I`, the implied IDL is the reply handler
//! `AMI_IHandler` (deriving from `Messaging::ReplyHandler` and from the
//! handlers of `I`'s bases) with, per two-way operation `op`,
//! `void op(in R ami_return_val, in <inout and out params>)` and
//! `void op_excep(in Messaging::ExceptionHolder excep_holder)`, and per
//! attribute `get_<a>`, `get_<a>_excep` and, unless readonly, `set_<a>`,
//! `set_<a>_excep` — names, repository ids and parameters as omniORB's
//! `omniidl -Wbami` makes them, so that either ORB's handlers serve the
//! other's replies. The handler goes through the same stub, servant trait
//! and skeleton generator as any interface ([`InterfaceModel`]); only its
//! `excep_holder` parameter is special: an
//! `armillary::ami::ExceptionHolder<E>` typed by the operation's error
//! enum, so that `raise()` gives the typed error.
//!
//! The stub of `I` gets `sendc_<op>` (callback), `sendp_<op>` (a
//! `Poller`) and `<op>_async` (a `ReplyFuture`), and for an attribute
//! `sendc_get_<a>`, `sendp_get_<a>`, `get_<a>_async` and the same with
//! `set_`: one stem per call, the AMI mapping's. They send exactly the
//! request the synchronous method sends: the same argument encoding, on
//! owned copies of the arguments, and the same reply decoding.
//!
//! The handler's servant trait gives every method a default body, so that
//! a handler implements only the replies it wants: a reply's method
//! ignores the values, an `_excep` method hands the holder to
//! `armillary::ami::unhandled_exception` (a warning through `tracing`).

use proc_macro2::TokenStream;
use quote::quote;

use super::interface::{Call, CallParam, InterfaceModel};
use super::names::{ident, snake, Namer};
use super::types::{cdr_decode, cdr_encode, Val};
use super::{relative_module, AmiNames, Generator, RESERVED_PARAMS};
use crate::ir::{DefId, DefKind, Direction, Type};

/// The repository id every reply handler is-a.
const REPLY_HANDLER_ID: &str = "IDL:omg.org/Messaging/ReplyHandler:1.0";

/// The names a two-way call's AMI methods use, on the stub and on the
/// reply handler.
#[derive(Debug, Clone, Default)]
pub(super) struct AmiCall {
    /// The stub's AMI methods in the interface that declares the call.
    pub(super) declared: AmiNames,
    /// Their names on the stub being generated: `declared`, unless the
    /// call is inherited and another base has those names (`inherited`).
    pub(super) stub: AmiNames,
    /// The `Poller` alias, in the declaring interface's module.
    pub(super) poller: String,
    /// The reply handler's method for the reply, and for an exception.
    pub(super) reply: String,
    pub(super) excep: String,
}

/// The IDL names of a member's reply-handler operations, in order (reply,
/// exception; for a writable attribute, then the setter's two).
fn handler_wire_names(kind: &DefKind, name: &str) -> Vec<String> {
    let stems = match kind {
        DefKind::Operation(op) if !op.oneway => vec![name.to_owned()],
        DefKind::Attribute(attribute) => {
            let mut stems = vec![format!("get_{name}")];
            if !attribute.readonly {
                stems.push(format!("set_{name}"));
            }
            stems
        }
        _ => Vec::new(),
    };
    stems
        .into_iter()
        .flat_map(|stem| [stem.clone(), format!("{stem}_excep")])
        .collect()
}

/// The repository id of `I`'s reply handler, `AMI_<I>Handler` in place of
/// `I` (`IDL:Stock/Quoter:1.0` gives `IDL:Stock/AMI_QuoterHandler:1.0`).
pub(super) fn handler_repository_id(repository_id: &str, name: &str, scoped: &str) -> String {
    let handler = format!("AMI_{name}Handler");
    if let Some(body) = repository_id.strip_prefix("IDL:") {
        if let Some((path, version)) = body.rsplit_once(':') {
            let (prefix, last) = match path.rsplit_once('/') {
                Some((prefix, last)) => (format!("{prefix}/"), last),
                None => (String::new(), path),
            };
            if last == name {
                return format!("IDL:{prefix}{handler}:{version}");
            }
        }
    }
    // A `#pragma ID` the derivation cannot follow: the scoped name.
    let mut parts: Vec<&str> = scoped.trim_start_matches("::").split("::").collect();
    parts.pop();
    parts.push(&handler);
    format!("IDL:{}:1.0", parts.join("/"))
}

impl Generator<'_> {
    /// The path to `id`'s reply handler item with `suffix`.
    fn handler_path(&self, from: &[String], id: DefId, suffix: &str) -> TokenStream {
        let names = self.names(id);
        let prefix = relative_module(from, &names.module);
        let base = self
            .handlers
            .get(&id)
            .map_or("AmiMissingHandler", String::as_str);
        let item = ident(&format!("{base}{suffix}"));
        quote!(#prefix #item)
    }

    /// The path to the item (stub, `Servant`, `Skeleton`) of the interface
    /// that declares `call`: the IDL interface's or its reply handler's.
    pub(super) fn owner_path(&self, from: &[String], call: &Call, suffix: &str) -> TokenStream {
        if call.handler {
            self.handler_path(from, call.owner, suffix)
        } else {
            let names = self.names(call.owner);
            let prefix = relative_module(from, &names.module);
            let item = ident(&format!("{}{suffix}", names.base));
            quote!(#prefix #item)
        }
    }

    /// `armillary::ami::ExceptionHolder<E>` for a holder parameter.
    fn holder_type(&self, from: &[String], holder: &(DefId, Option<String>)) -> TokenStream {
        let error = match &holder.1 {
            Some(name) => self.inner_path(from, holder.0, name),
            None => quote!(::armillary::SystemException),
        };
        quote!(::armillary::ami::ExceptionHolder<#error>)
    }

    /// A parameter's Rust type as the servant trait receives it.
    pub(super) fn param_rust_type(&self, from: &[String], p: &CallParam) -> TokenStream {
        match &p.holder {
            Some(holder) => self.holder_type(from, holder),
            None => self.rust_type(from, &p.ty),
        }
    }

    /// A parameter's Rust type as a stub method takes it.
    pub(super) fn param_in_type(&self, from: &[String], p: &CallParam) -> TokenStream {
        match &p.holder {
            Some(holder) => {
                let ty = self.holder_type(from, holder);
                quote!(&#ty)
            }
            None => self.in_param_type(from, &p.ty),
        }
    }

    /// The statements writing a parameter.
    pub(super) fn param_encode(&self, p: &CallParam, val: &Val) -> TokenStream {
        if p.holder.is_some() {
            let encode = cdr_encode();
            let v = val.by_ref();
            return quote!(#encode::encode(#v, w)?;);
        }
        self.encode(&p.ty, val)
    }

    /// An expression of type `Result<T, CdrError>` reading a parameter.
    pub(super) fn param_decode_result(&self, from: &[String], p: &CallParam) -> TokenStream {
        match &p.holder {
            Some(holder) => {
                let ty = self.holder_type(from, holder);
                let decode = cdr_decode();
                quote!(<#ty as #decode>::decode(r))
            }
            None => self.decode_result(from, &p.ty),
        }
    }

    /// An expression reading a parameter (`?` applied).
    pub(super) fn param_decode(&self, from: &[String], p: &CallParam) -> TokenStream {
        if p.holder.is_some() {
            let read = self.param_decode_result(from, p);
            return quote!(#read?);
        }
        self.decode(from, &p.ty)
    }

    /// The reply handler's method names for `member`'s handler operations,
    /// named in the context of the declaring interface's handler (its
    /// bases' handler methods keep their names).
    fn handler_method_names(&mut self, member: DefId) -> Vec<String> {
        if let Some(names) = self.handler_methods.get(&member) {
            return names.clone();
        }
        let Some(owner) = self.spec[member].parent else {
            return Vec::new();
        };
        self.interface_names(owner);
        self.handler_methods
            .get(&member)
            .cloned()
            .unwrap_or_default()
    }

    /// Names the reply handler's methods for the operations and attributes
    /// `interface` declares, with `methods` holding the names its handler
    /// inherits (see `inherited`).
    pub(super) fn assign_handler_method_names(&mut self, interface: DefId, mut methods: Namer) {
        let spec = self.spec;
        for &own in spec.contents(interface) {
            let def = &spec[own];
            let names: Vec<String> = handler_wire_names(&def.kind, &def.name)
                .iter()
                .map(|wire| methods.claim(&snake(wire)))
                .collect();
            self.handler_methods.insert(own, names);
        }
    }

    /// The AMI names of `member`'s `index`th call (getter 0, setter 1),
    /// when AMI is on and the call is two-way.
    pub(super) fn ami_call(&mut self, member: DefId, index: usize) -> Option<AmiCall> {
        if !self.options.ami {
            return None;
        }
        let ami = self.op_names(member).ami.get(index)?.clone();
        let poller = self.pollers.get(&member)?.get(index)?.clone();
        let handler = self.handler_method_names(member);
        Some(AmiCall {
            stub: ami.clone(),
            declared: ami,
            poller,
            reply: handler.get(2 * index)?.clone(),
            excep: handler.get(2 * index + 1)?.clone(),
        })
    }

    /// The reply handler's calls for `member` (declared by `owner`).
    fn handler_calls_of(&mut self, owner: DefId, member: DefId) -> Vec<Call> {
        let spec = self.spec;
        let def = &spec[member];
        let wires = handler_wire_names(&def.kind, &def.name);
        let methods = self.handler_method_names(member);
        let idl_params: Vec<String> = match &def.kind {
            DefKind::Operation(op) => op.params.iter().map(|p| p.name.clone()).collect(),
            _ => Vec::new(),
        };
        let calls = self.calls_of(owner, member);
        let mut out = Vec::new();
        for (k, call) in calls.iter().filter(|c| !c.oneway).enumerate() {
            let (Some(reply_wire), Some(excep_wire), Some(reply), Some(excep)) = (
                wires.get(2 * k),
                wires.get(2 * k + 1),
                methods.get(2 * k),
                methods.get(2 * k + 1),
            ) else {
                continue;
            };
            let mut names = Namer::with_reserved(RESERVED_PARAMS);
            let mut params = Vec::new();
            if let Some(ret) = &call.ret {
                params.push(CallParam {
                    name: names.claim("ami_return_val"),
                    direction: Direction::In,
                    ty: ret.clone(),
                    holder: None,
                });
            }
            for (i, p) in call.params.iter().enumerate() {
                if p.direction != Direction::In {
                    let idl = idl_params.get(i).map_or(p.name.as_str(), String::as_str);
                    params.push(CallParam {
                        name: names.claim(&snake(idl)),
                        direction: Direction::In,
                        ty: p.ty.clone(),
                        holder: None,
                    });
                }
            }
            let what = format!("`{}` ({})", def.absolute_name(), call.wire);
            let reply_doc = format!(
                " Receives the reply of {what}: its return value, then its inout and out \
                 parameters. Unless implemented, ignores it."
            );
            let excep_doc = format!(
                " Receives the exception that {what} raised; `excep_holder.raise()` gives it \
                 typed. Unless implemented, reports it as a warning through `tracing` \
                 (`armillary::ami::unhandled_exception`)."
            );
            let ignored: Vec<_> = params.iter().map(|p| ident(&p.name)).collect();
            let reply_body = match ignored.as_slice() {
                [] => quote!(::core::result::Result::Ok(())),
                [one] => quote! {
                    let _ = #one;
                    ::core::result::Result::Ok(())
                },
                _ => quote! {
                    let _ = (#(#ignored),*);
                    ::core::result::Result::Ok(())
                },
            };
            let call_name = if call.wire.starts_with("_get_") || call.wire.starts_with("_set_") {
                format!("{} ({})", def.absolute_name(), call.wire)
            } else {
                def.absolute_name()
            };
            let call_name = call_name.trim_start_matches("::").to_owned();
            let excep_body = quote! {
                ::armillary::ami::unhandled_exception(#call_name, #excep, &excep_holder);
                ::core::result::Result::Ok(())
            };
            out.push(Call {
                wire: reply_wire.clone(),
                method: reply.clone(),
                stub_method: reply.clone(),
                doc: quote!(#[doc = #reply_doc]),
                params,
                ret: None,
                raises: Vec::new(),
                error: None,
                owner,
                member,
                handler: true,
                oneway: false,
                ami: None,
                default_body: Some(reply_body),
            });
            out.push(Call {
                wire: excep_wire.clone(),
                method: excep.clone(),
                stub_method: excep.clone(),
                doc: quote!(#[doc = #excep_doc]),
                params: vec![CallParam {
                    name: "excep_holder".into(),
                    direction: Direction::In,
                    ty: Type::Any,
                    holder: Some((call.owner, call.error.clone())),
                }],
                ret: None,
                raises: Vec::new(),
                error: None,
                owner,
                member,
                handler: true,
                oneway: false,
                ami: None,
                default_body: Some(excep_body),
            });
        }
        out
    }

    /// The implied reply-handler interface of interface `id`, and the
    /// poller aliases of the calls `id` declares.
    pub(super) fn handler_interface(&mut self, module: &[String], id: DefId) -> TokenStream {
        let spec = self.spec;
        let Some(base) = self.handlers.get(&id).cloned() else {
            return TokenStream::new();
        };
        let here = self.interface_names(id);
        let mut all_calls = Vec::new();
        for (owner, member) in spec.all_operations(id) {
            if self.left_out.contains_key(&member) {
                continue;
            }
            let mut calls = self.handler_calls_of(owner, member);
            if let Some(names) = here.get(member) {
                for (call, method) in calls.iter_mut().zip(&names.handler) {
                    call.stub_method.clone_from(method);
                }
            }
            all_calls.extend(calls);
        }
        let mut own_calls = Vec::new();
        for &member in spec.contents(id) {
            if !self.left_out.contains_key(&member) {
                own_calls.extend(self.handler_calls_of(id, member));
            }
        }
        let methods = all_calls
            .iter()
            .map(|call| self.stub_method(module, id, call))
            .collect();
        let remote_ancestors: Vec<DefId> = spec
            .ancestors(id)
            .into_iter()
            .filter(|&a| self.is_remote_interface(a))
            .collect();
        let direct: Vec<DefId> = spec
            .direct_bases(id)
            .into_iter()
            .filter(|&a| self.is_remote_interface(a))
            .collect();
        let handler_id = |i: DefId| {
            handler_repository_id(
                &spec[i].repository_id,
                &spec[i].name,
                &spec[i].absolute_name(),
            )
        };
        let mut ids = vec![handler_id(id)];
        ids.extend(remote_ancestors.iter().map(|&a| handler_id(a)));
        ids.push(REPLY_HANDLER_ID.to_owned());
        let trait_methods = own_calls
            .iter()
            .map(|call| self.trait_method(module, call))
            .collect();
        let idl_name = {
            let scoped = spec[id].absolute_name();
            match scoped.rsplit_once("::") {
                Some((scope, name)) => format!("{scope}::AMI_{name}Handler"),
                None => format!("AMI_{scoped}Handler"),
            }
        };
        let doc_line = format!(
            " The reply handler of `{}`'s asynchronous calls (the implied IDL interface `{idl_name}`): \
             an object that receives their replies, in this process or in another.",
            spec[id].absolute_name()
        );
        let pollers = self.poller_aliases(module, id);
        let model = InterfaceModel {
            id,
            base,
            doc: quote!(#[doc = #doc_line]),
            idl_name,
            repo: ids[0].clone(),
            abstract_: false,
            all_calls,
            own_calls,
            methods,
            upcast_to: remote_ancestors
                .iter()
                .map(|&a| self.handler_path(module, a, ""))
                .collect(),
            ancestor_servants: remote_ancestors
                .iter()
                .map(|&a| {
                    let name = self.handlers.get(&a).map_or("", String::as_str);
                    (
                        format!("{name}Servant"),
                        self.handler_path(module, a, "Servant"),
                    )
                })
                .collect(),
            supertraits: direct
                .iter()
                .map(|&b| self.handler_path(module, b, "Servant"))
                .collect(),
            trait_methods,
            ids,
            after_stub: TokenStream::new(),
            after_skeleton: TokenStream::new(),
        };
        let items = self.interface_items(module, model);
        quote!(#items #pollers)
    }

    /// `pub type <I><Op>Poller = Poller<R, E>;` for each two-way call `id`
    /// declares.
    fn poller_aliases(&mut self, module: &[String], id: DefId) -> TokenStream {
        let calls = self.own_calls(id);
        let mut out = TokenStream::new();
        for call in calls.iter().filter(|c| !c.oneway) {
            let Some(ami) = &call.ami else { continue };
            let name = ident(&ami.poller);
            let values = self.reply_values_type(module, call);
            let error = self.error_type(module, call);
            let doc = format!(
                " What `{}` returns: polls for the reply of `{}` ({}).",
                ami.declared.sendp,
                self.spec[id].absolute_name(),
                call.wire
            );
            out.extend(quote! {
                #[doc = #doc]
                pub type #name = ::armillary::ami::Poller<#values, #error>;
            });
        }
        out
    }

    /// The type of a reply's values: the return value, then the inout and
    /// out parameters in order (one value bare, several as a tuple).
    pub(super) fn reply_values_type(&self, from: &[String], call: &Call) -> TokenStream {
        let mut parts: Vec<TokenStream> = Vec::new();
        if let Some(ret) = &call.ret {
            parts.push(self.rust_type(from, ret));
        }
        for p in &call.params {
            if p.direction != Direction::In {
                parts.push(self.rust_type(from, &p.ty));
            }
        }
        match parts.len() {
            0 => quote!(()),
            1 => parts.remove(0),
            _ => quote!((#(#parts),*)),
        }
    }

    /// The callback, polling and future methods of a two-way call on the
    /// stub of `interface`.
    pub(super) fn ami_methods(
        &self,
        from: &[String],
        interface: DefId,
        call: &Call,
    ) -> TokenStream {
        let Some(ami) = &call.ami else {
            return TokenStream::new();
        };
        let (sendc, sendp, future) = (
            ident(&ami.stub.sendc),
            ident(&ami.stub.sendp),
            ident(&ami.stub.future),
        );
        let handler = self.handler_path(from, interface, "");
        let inputs: Vec<&CallParam> = call.inputs().collect();
        let params: Vec<TokenStream> = inputs
            .iter()
            .map(|p| {
                let name = ident(&p.name);
                let ty = self.param_in_type(from, p);
                quote!(#name: #ty)
            })
            .collect();
        let arg_names: Vec<_> = inputs.iter().map(|p| ident(&p.name)).collect();
        let values = self.reply_values_type(from, call);
        let error = self.error_type(from, call);
        let poller = {
            let names = self.names(call.owner);
            let prefix = relative_module(from, &names.module);
            let alias = ident(&ami.poller);
            quote!(#prefix #alias)
        };
        let lints = call.allowed_lints(self.raises_large(&call.raises));
        let sendc_lints = call.allowed_lints_with(self.raises_large(&call.raises), 1);
        let what = format!(
            "`{}` ({})",
            self.spec[call.owner].absolute_name(),
            call.wire
        );
        let sendc_doc = format!(
            " Sends {what} and returns at once; `ami_handler` receives the reply (or \
             the exception) when it comes. The request is the one the synchronous \
             method sends."
        );
        let sendp_doc = format!(
            " Sends {what} and returns at once a poller for its reply (the return \
             value, then the inout and out parameters)."
        );
        let future_doc = format!(
            " Sends {what} and returns a future of its reply (the return value, then \
             the inout and out parameters), usable from any executor."
        );
        let errors = quote! {
            #[doc = ""]
            #[doc = " # Errors"]
            #[doc = ""]
            #[doc = " A system exception when the request cannot be sent."]
        };
        if call.owner != interface {
            let owner = self.owner_path(from, call, "");
            let owner_handler = self.handler_path(from, call.owner, "");
            let (owner_sendc, owner_sendp, owner_future) = (
                ident(&ami.declared.sendc),
                ident(&ami.declared.sendp),
                ident(&ami.declared.future),
            );
            let renamed = |here: &str, declared: &str| self.renamed_doc(call.owner, here, declared);
            let sendc_renamed = renamed(&ami.stub.sendc, &ami.declared.sendc);
            let sendp_renamed = renamed(&ami.stub.sendp, &ami.declared.sendp);
            let future_renamed = renamed(&ami.stub.future, &ami.declared.future);
            return quote! {
                #[doc = #sendc_doc] #sendc_renamed #errors #sendc_lints
                pub fn #sendc(&self, ami_handler: &#handler, #(#params),*) -> ::core::result::Result<(), ::armillary::SystemException> {
                    #owner::from_object(self.object.clone()).#owner_sendc(
                        &#owner_handler::from_object(ami_handler.as_object().clone()),
                        #(#arg_names),*
                    )
                }

                #[doc = #sendp_doc] #sendp_renamed #lints
                #[must_use]
                pub fn #sendp(&self, #(#params),*) -> #poller {
                    #owner::from_object(self.object.clone()).#owner_sendp(#(#arg_names),*)
                }

                #[doc = #future_doc] #future_renamed #lints
                pub fn #future(&self, #(#params),*) -> ::armillary::ami::ReplyFuture<#values, #error> {
                    #owner::from_object(self.object.clone()).#owner_future(#(#arg_names),*)
                }
            };
        }
        let wire = call.wire.as_str();
        let args = self.owned_args(call);
        let reply_values = Self::reply_values(call);
        let (tuple, plain_read, decoder) = self.reply_readers(from, call, &reply_values);
        let pass: Vec<TokenStream> = reply_values
            .iter()
            .map(|(name, param)| {
                let ty = match param {
                    Some(i) => &call.params[*i].ty,
                    None => call.ret.as_ref().unwrap_or(&Type::Any),
                };
                let name = ident(name);
                if self.is_copy(self.spec.unalias(ty)) {
                    quote!(#name)
                } else {
                    quote!(&#name)
                }
            })
            .collect();
        let (reply, excep) = (ident(&ami.reply), ident(&ami.excep));
        quote! {
            #[doc = #sendc_doc] #errors #sendc_lints
            pub fn #sendc(&self, ami_handler: &#handler, #(#params),*) -> ::core::result::Result<(), ::armillary::SystemException> {
                let ami_handler = ami_handler.clone();
                self.object.send_callback(
                    #wire,
                    #args,
                    #plain_read,
                    move |outcome| {
                        // What the handler's own call returns (a remote
                        // handler may be gone) has no one left to go to.
                        let _ = match outcome {
                            ::core::result::Result::Ok(#tuple) => ami_handler.#reply(#(#pass),*),
                            ::core::result::Result::Err(holder) => ami_handler.#excep(&holder),
                        };
                    },
                )
            }

            #[doc = #sendp_doc] #lints
            #[must_use]
            pub fn #sendp(&self, #(#params),*) -> #poller {
                self.object.send_poller(#wire, #args, #decoder)
            }

            #[doc = #future_doc] #lints
            pub fn #future(&self, #(#params),*) -> ::armillary::ami::ReplyFuture<#values, #error> {
                self.object.send_future(#wire, #args, #decoder)
            }
        }
    }

    /// Whether the Rust type of `ty` is `Copy`: what [`is_copy`] says
    /// (passed by value), and arrays of such elements.
    ///
    /// [`is_copy`]: Self::is_copy
    pub(super) fn is_rust_copy(&self, ty: &Type) -> bool {
        match self.spec.unalias(ty) {
            Type::Array { element, .. } => self.is_rust_copy(element),
            other => self.is_copy(other),
        }
    }

    /// An owned copy of an in parameter as a stub method takes it (see
    /// [`param_in_type`](Self::param_in_type)): `None` for a `Copy` type,
    /// which the method already takes by value.
    pub(super) fn owned_copy(&self, p: &CallParam) -> Option<TokenStream> {
        let name = ident(&p.name);
        if p.holder.is_none() && self.is_copy(&p.ty) {
            return None;
        }
        Some(match self.spec.unalias(&p.ty) {
            // An array of `Copy` elements: the value behind the reference.
            _ if self.is_rust_copy(&p.ty) => quote!(*#name),
            Type::String { .. } | Type::WString { .. } if p.holder.is_none() => {
                quote!(::std::borrow::ToOwned::to_owned(#name))
            }
            // (`&Bytes`, shared: `clone` below.)
            Type::Sequence { element, .. }
                if p.holder.is_none() && !self.is_bytes_element(element) =>
            {
                quote!(#name.to_vec())
            }
            _ => quote!(#name.clone()),
        })
    }

    /// The arguments of an asynchronous call: owned copies of the in and
    /// inout parameters moved into a closure that writes them as the
    /// synchronous method does (it may run again on a forward).
    fn owned_args(&self, call: &Call) -> TokenStream {
        let inputs: Vec<&CallParam> = call.inputs().collect();
        if inputs.is_empty() {
            return quote!(|_| ::core::result::Result::Ok(()));
        }
        let mut owned = Vec::new();
        let mut borrows = Vec::new();
        let mut writes = Vec::new();
        for p in inputs {
            let name = ident(&p.name);
            let Some(to_owned) = self.owned_copy(p) else {
                writes.push(self.param_encode(p, &Val::Place(quote!(#name))));
                continue;
            };
            owned.push(quote!(let #name = #to_owned;));
            borrows.push(quote!(let #name = &#name;));
            writes.push(self.param_encode(p, &Val::Ref(quote!(#name))));
        }
        quote! {
            {
                #(#owned)*
                move |w: &mut ::armillary::runtime::CdrWriter| {
                    #(#borrows)*
                    #(#writes)*
                    ::core::result::Result::Ok(())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_repository_ids() {
        let check = |id: &str, name: &str, scoped: &str, expected: &str| {
            assert_eq!(handler_repository_id(id, name, scoped), expected);
        };
        check(
            "IDL:Interop/Everything:1.0",
            "Everything",
            "::Interop::Everything",
            "IDL:Interop/AMI_EverythingHandler:1.0",
        );
        check("IDL:Top:1.0", "Top", "::Top", "IDL:AMI_TopHandler:1.0");
        check(
            "IDL:acme.com/Stock/Quoter:2.1",
            "Quoter",
            "::Stock::Quoter",
            "IDL:acme.com/Stock/AMI_QuoterHandler:2.1",
        );
        check(
            "LOCAL:whatever",
            "Quoter",
            "::Stock::Quoter",
            "IDL:Stock/AMI_QuoterHandler:1.0",
        );
    }

    #[test]
    fn handler_operation_names() {
        let op = DefKind::Operation(crate::ir::Operation {
            oneway: false,
            return_type: None,
            params: Vec::new(),
            raises: Vec::new(),
            context: Vec::new(),
        });
        assert_eq!(
            handler_wire_names(&op, "get_quote"),
            ["get_quote", "get_quote_excep"]
        );
    }
}
