//! Asynchronous method handling (AMH, Deshpande et al.): servants that
//! answer a request later, from any thread, through a typed responder.
//!
//! The paper's implied IDL, for an interface `I` that [`Options::amh`]
//! selects, mapped to Rust:
//!
//! - the AMH skeleton `AMH_I` is the trait `IAmhServant`, whose asynchronous
//!   methods take a responder, then the `in` and `inout` arguments (as
//!   values), and return nothing; and the skeleton `IAmhSkeleton<T>`, an
//!   `armillary::Servant` that decodes the arguments, takes the reply out
//!   of the request (`ServerRequest::respond_later`) and hands it to the
//!   servant inside the responder;
//! - the response handler `AMH_IResponseHandler` is one responder type per
//!   call, `I<Op>Responder` (`I<Get|Set><Attr>Responder` for attributes):
//!   `reply(self, return value, out and inout values in IDL order)` answers
//!   normally, `raise(self, error)` with a user exception the call declares
//!   or a system exception (the op's error enum: the exception holder's
//!   role, typed, so only declared exceptions can be raised), `answer(self,
//!   Result)` either, `answer_when(self, future)` when a future completes.
//!   Each consumes the responder: a second answer, or another call's
//!   values, does not compile. A dropped responder answers NO_RESPONSE
//!   (the runtime's `ResponseHandler`);
//! - `IAsyncServant` is the same servant written with `async fn`: each
//!   asynchronous call is `fn op(self: Arc<Self>, in args…) -> impl
//!   Future<Output = Result<values, OpError>> + Send` (the values as the
//!   AMI future gives them: return value, then inout and out values), and
//!   `IAmhSkeleton::from_async` serves it through the generated adapter
//!   `IAsyncAdapter<T>`, an `IAmhServant` whose methods hand the future to
//!   the responder's `answer_when` (the ORB drives it; no executor).
//!
//! Selection: a path selects an interface (every call of its AMH traits
//! is asynchronous) or one operation or attribute (that call is; the
//! interface's others keep their synchronous signatures in the AMH traits,
//! so one interface may mix both). Oneway operations stay synchronous:
//! they have no reply to defer.
//!
//! Inheritance: the AMH traits have no supertraits. They flatten every
//! call of the interface, inherited ones included, under the names the
//! interface's stub gives them, and the AMH skeleton serves all of them
//! itself (one copy of the code per selected interface); `_is_a` answers
//! the interface's and its bases' repository ids, as the synchronous
//! skeleton does, so clients cannot tell.
//!
//! The argument decoding and the reply encoding are the synchronous
//! skeleton's ([`Generator::decode_args`], [`Generator::reply_writer`]).
//!
//! [`Options::amh`]: super::Options::amh

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::quote;

use super::interface::{Call, CallParam};
use super::names::{camel, ident, Namer};
use super::traits::path_matches;
use super::Generator;
use crate::ir::{DefId, DefKind, Direction, Type};

/// The names of one AMH-selected interface's items.
#[derive(Debug, Clone, Default)]
pub(super) struct AmhNames {
    /// The responder-form servant trait (`QuoterAmhServant`).
    pub(super) servant: String,
    /// The `async fn` servant trait (`QuoterAsyncServant`).
    pub(super) async_servant: String,
    /// The skeleton (`QuoterAmhSkeleton`).
    pub(super) skeleton: String,
    /// The adapter serving an async servant (`QuoterAsyncAdapter`).
    pub(super) adapter: String,
    /// The responder of each asynchronous call, by (operation or
    /// attribute, 0 for an operation or getter and 1 for a setter).
    pub(super) responders: HashMap<(DefId, usize), String>,
}

impl Generator<'_> {
    /// True when an AMH path selects the scoped name `name`.
    fn amh_selects(&self, name: &str) -> bool {
        self.options.amh.iter().any(|path| path_matches(path, name))
    }

    /// True when interface `id` gets AMH items: a path selects it or one
    /// of the operations or attributes it declares.
    pub(super) fn is_amh_interface(&self, id: DefId) -> bool {
        if self.options.amh.is_empty() || !self.is_remote_interface(id) {
            return false;
        }
        self.amh_selects(&self.spec[id].absolute_name())
            || self.spec.contents(id).iter().any(|&member| {
                matches!(
                    self.spec[member].kind,
                    DefKind::Operation(_) | DefKind::Attribute(_)
                ) && self.amh_selects(&self.spec[member].absolute_name())
            })
    }

    /// True when `member` (an operation or attribute of `interface` or of
    /// a base) is asynchronous in `interface`'s AMH traits.
    fn is_amh_member(&self, interface: DefId, member: DefId) -> bool {
        let oneway = matches!(&self.spec[member].kind, DefKind::Operation(op) if op.oneway);
        !oneway
            && (self.amh_selects(&self.spec[interface].absolute_name())
                || self.amh_selects(&self.spec[member].absolute_name()))
    }

    /// The AMH paths that select nothing that has AMH items (a misspelt
    /// name, a local interface, a oneway operation).
    pub(super) fn unused_amh_paths(&self) -> Vec<&str> {
        let interfaces: Vec<DefId> = self
            .spec
            .definitions()
            .map(|(id, _)| id)
            .filter(|&id| self.is_amh_interface(id))
            .collect();
        self.options
            .amh
            .iter()
            .filter(|path| {
                !interfaces.iter().any(|&id| {
                    path_matches(path, &self.spec[id].absolute_name())
                        || self.spec.all_operations(id).iter().any(|&(_, member)| {
                            self.is_amh_member(id, member)
                                && path_matches(path, &self.spec[member].absolute_name())
                        })
                })
            })
            .map(String::as_str)
            .collect()
    }

    /// Names the AMH items of interface `id` (whose stub is `base`) in the
    /// module whose types `types` names: the two servant traits, the
    /// skeleton, the adapter and a responder per asynchronous call
    /// (`<I><Op>Responder`, `<I>Get<Attr>Responder`, `<I>Set<Attr>Responder`).
    pub(super) fn assign_amh_names(&mut self, id: DefId, base: &str, types: &mut Namer) {
        let spec = self.spec;
        let mut names = AmhNames {
            servant: types.claim(&format!("{base}AmhServant")),
            async_servant: types.claim(&format!("{base}AsyncServant")),
            skeleton: types.claim(&format!("{base}AmhSkeleton")),
            adapter: types.claim(&format!("{base}AsyncAdapter")),
            responders: HashMap::new(),
        };
        for (_, member) in spec.all_operations(id) {
            if !self.is_amh_member(id, member) {
                continue;
            }
            let def = &spec[member];
            let stems = match &def.kind {
                DefKind::Operation(_) => vec![camel(&def.name)],
                DefKind::Attribute(attribute) => {
                    let mut stems = vec![format!("Get{}", camel(&def.name))];
                    if !attribute.readonly {
                        stems.push(format!("Set{}", camel(&def.name)));
                    }
                    stems
                }
                _ => continue,
            };
            for (index, stem) in stems.iter().enumerate() {
                let name = types.claim(&format!("{base}{stem}Responder"));
                names.responders.insert((member, index), name);
            }
        }
        self.amh.insert(id, names);
    }

    /// The responder of `call` in interface `id`'s AMH items, when the
    /// call is asynchronous there.
    fn responder_of(&self, id: DefId, call: &Call) -> Option<&str> {
        let index = usize::from(call.wire.starts_with("_set_"));
        self.amh
            .get(&id)?
            .responders
            .get(&(call.member, index))
            .map(String::as_str)
    }

    /// The AMH items of interface `id`: responders, the AMH and async
    /// servant traits, the adapter and the skeleton. `all_calls` are its
    /// calls with the stub's names, `ids` the repository ids `_is_a`
    /// answers true for.
    pub(super) fn amh_items(
        &self,
        module: &[String],
        id: DefId,
        all_calls: &[Call],
        ids: &[String],
    ) -> TokenStream {
        let Some(names) = self.amh.get(&id) else {
            return TokenStream::new();
        };
        let idl_name = self.spec[id].absolute_name();
        let repo = self.spec[id].repository_id.as_str();
        let stub = ident(&self.names(id).base);
        let servant = ident(&names.servant);
        let async_servant = ident(&names.async_servant);
        let skeleton = ident(&names.skeleton);
        let adapter = ident(&names.adapter);

        let mut responders = TokenStream::new();
        let mut amh_methods = Vec::new();
        let mut async_methods = Vec::new();
        let mut adapter_methods = Vec::new();
        let mut upcalls = Vec::new();
        for call in all_calls {
            let method = ident(&call.stub_method);
            let upcall = Self::upcall_fn_named(&call.stub_method);
            let upcall_doc = format!(
                " Serves `{}`: decodes the arguments, then calls the servant.",
                call.wire
            );
            // An asynchronous call without arguments cannot fail in its
            // upcall, but its upcall has the signature of every other.
            let always_ok = (self.responder_of(id, call).is_some()
                && call.inputs().next().is_none())
            .then(|| quote!(#[allow(clippy::unnecessary_wraps)]));
            let body = match self.responder_of(id, call) {
                Some(responder) => {
                    let responder = ident(responder);
                    responders.extend(self.responder(module, call, &responder));
                    amh_methods.push(self.amh_method(module, call, &responder));
                    async_methods.push(self.async_method(module, call));
                    adapter_methods.push(self.adapter_method(
                        module,
                        call,
                        &responder,
                        &async_servant,
                    ));
                    let decode_args = self.decode_args(module, call, false);
                    let args = call.inputs().map(|p| ident(&p.name));
                    quote! {
                        #decode_args
                        let responder = #responder { handler: request.respond_later() };
                        servant.#method(responder, #(#args),*);
                        ::core::result::Result::Ok(())
                    }
                }
                None => {
                    amh_methods.push(self.trait_method_named(module, call, &call.stub_method));
                    async_methods.push(self.trait_method_named(module, call, &call.stub_method));
                    adapter_methods.push(self.adapter_sync_method(module, call, &async_servant));
                    self.upcall_body(module, call, &call.stub_method)
                }
            };
            upcalls.push(quote! {
                #[doc = #upcall_doc]
                #always_ok
                fn #upcall(
                    servant: &T,
                    request: &mut ::armillary::ServerRequest<'_>,
                ) -> ::core::result::Result<(), ::armillary::SystemException> {
                    #body
                }
            });
        }

        let operations: Vec<(&str, TokenStream)> = all_calls
            .iter()
            .map(|call| {
                let upcall = Self::upcall_fn_named(&call.stub_method);
                (
                    call.wire.as_str(),
                    quote!(Self::#upcall(&self.servant, request)),
                )
            })
            .collect();
        let dispatch = super::operation_dispatch(&operations);

        let servant_doc = format!(
            " What a server implements to serve `{idl_name}` with asynchronous method \
             handling (AMH): each asynchronous method gets a responder and answers \
             through it, now or later, from any thread; wrap it in [`{skeleton}`] to \
             activate it."
        );
        let async_doc = format!(
            " What a server implements to serve `{idl_name}` with `async fn`s: the ORB \
             drives each asynchronous method's future and answers the client with its \
             output (the values as the AMI future gives them: the return value, then \
             the inout and out values). Serve it with [`{skeleton}::from_async`]."
        );
        let adapter_doc = format!(
            " A [`{async_servant}`] served as a [`{servant}`]: each asynchronous method \
             hands its future to the responder (`answer_when`), the others call the \
             servant. Made by [`{skeleton}::from_async`]."
        );
        let skeleton_doc = format!(
            " Serves `{idl_name}` by dispatching its requests to a [`{servant}`]: \
             asynchronous calls are answered by their responders, whenever those are \
             used. Clients cannot tell it from [`{stub}`]'s synchronous skeleton."
        );
        let idl_line = self.idl_line(id);
        quote! {
            #responders

            #[doc = #servant_doc]
            #[doc = ""]
            #[doc = #idl_line]
            pub trait #servant: ::core::marker::Send + ::core::marker::Sync + 'static {
                #(#amh_methods)*
            }

            #[doc = #async_doc]
            #[doc = ""]
            #[doc = #idl_line]
            pub trait #async_servant: ::core::marker::Send + ::core::marker::Sync + 'static {
                #(#async_methods)*
            }

            #[doc = #adapter_doc]
            #[derive(Debug)]
            pub struct #adapter<T> {
                servant: ::std::sync::Arc<T>,
            }

            impl<T> #adapter<T> {
                /// The async servant.
                #[must_use]
                pub fn servant(&self) -> &::std::sync::Arc<T> {
                    &self.servant
                }
            }

            impl<T: #async_servant> #servant for #adapter<T> {
                #(#adapter_methods)*
            }

            #[doc = #skeleton_doc]
            #[derive(Debug)]
            pub struct #skeleton<T> {
                servant: ::std::sync::Arc<T>,
            }

            impl<T: #async_servant> #skeleton<#adapter<T>> {
                /// Serves an `async fn` servant.
                pub fn from_async(servant: T) -> Self {
                    Self::from_async_arc(::std::sync::Arc::new(servant))
                }

                /// Serves an `async fn` servant the application keeps a handle to.
                pub fn from_async_arc(servant: ::std::sync::Arc<T>) -> Self {
                    Self::new(#adapter { servant })
                }
            }

            impl<T: #servant> #skeleton<T> {
                /// Wraps `servant`.
                pub fn new(servant: T) -> Self {
                    Self::from_arc(::std::sync::Arc::new(servant))
                }

                /// Wraps a servant the application keeps a handle to.
                pub fn from_arc(servant: ::std::sync::Arc<T>) -> Self {
                    Self { servant }
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
                ) -> ::core::result::Result<#stub, ::armillary::poa::PoaError> {
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
                ) -> ::core::result::Result<#stub, ::armillary::poa::PoaError> {
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

                fn dispatch(
                    &self,
                    request: &mut ::armillary::ServerRequest<'_>,
                ) -> ::core::result::Result<(), ::armillary::SystemException> {
                    #dispatch
                }
            }
        }
    }

    /// The "IDL: …" line of `id`'s documentation.
    fn idl_line(&self, id: DefId) -> String {
        let def = &self.spec[id];
        format!(
            " IDL: `{} {}` ({}), with AMH.",
            def.kind.describe(),
            def.absolute_name(),
            self.location(def.loc)
        )
    }

    /// The name of an AMH skeleton's function serving the call whose
    /// method is `method`.
    fn upcall_fn_named(method: &str) -> proc_macro2::Ident {
        ident(&format!("upcall_{}", method.trim_start_matches("r#")))
    }

    /// `what` for docs: "`::Stock::Quoter::get_quote`" or, for an
    /// attribute's call, "`::Stock::Quoter::name` (_get_name)".
    fn call_what(&self, call: &Call) -> String {
        let name = self.spec[call.member].absolute_name();
        if matches!(self.spec[call.member].kind, DefKind::Attribute(_)) {
            format!("`{name}` ({})", call.wire)
        } else {
            format!("`{name}`")
        }
    }

    /// The reply's values of `call` as a responder's `reply` takes them:
    /// (name, IDL type), the return value first, then out and inout
    /// values in IDL order.
    fn reply_params(call: &Call) -> Vec<(String, &Type)> {
        Self::reply_values(call)
            .into_iter()
            .map(|(name, param)| {
                let ty = match param {
                    Some(i) => &call.params[i].ty,
                    None => call.ret.as_ref().unwrap_or(&Type::Any),
                };
                (name, ty)
            })
            .collect()
    }

    /// The responder of one asynchronous call.
    fn responder(
        &self,
        from: &[String],
        call: &Call,
        responder: &proc_macro2::Ident,
    ) -> TokenStream {
        let what = self.call_what(call);
        let values = Self::reply_params(call);
        let names: Vec<_> = values.iter().map(|(name, _)| ident(name)).collect();
        let params = values.iter().map(|(name, ty)| {
            let name = ident(name);
            let ty = self.rust_type(from, ty);
            quote!(#name: #ty)
        });
        let writer = self.reply_writer(
            &values
                .iter()
                .map(|(name, ty)| {
                    let name = ident(name);
                    (quote!(#name), *ty)
                })
                .collect::<Vec<_>>(),
        );
        let tuple = match names.as_slice() {
            [] => quote!(()),
            [one] => quote!(#one),
            _ => quote!((#(#names),*)),
        };
        let values_type = self.reply_values_type(from, call);
        let error = self.error_type(from, call);
        let raise_body = match &call.error {
            None => quote!(self.handler.raise_system(&error);),
            Some(_) => {
                let variants: Vec<_> = self.error_variants(call).iter().map(|v| ident(v)).collect();
                quote! {
                    match error {
                        #(#error::#variants(e) => self.handler.raise(&e),)*
                        #error::System(e) => self.handler.raise_system(&e),
                    }
                }
            }
        };
        let doc = format!(
            " Answers one {what} request, once: [`reply`](Self::reply) with its values, \
             [`raise`](Self::raise) with an exception, [`answer`](Self::answer) with a \
             `Result`, or [`answer_when`](Self::answer_when) a future completes. Each \
             consumes the responder. It is `Send` and `'static`: keep it, move it to \
             another thread, answer later. Dropped without an answer, it answers \
             NO_RESPONSE (COMPLETED_MAYBE)."
        );
        let reply_doc = if values.is_empty() {
            " Answers normally (the call returns nothing).".to_owned()
        } else {
            " Answers normally with the return value, then the out and inout values in \
             IDL order. A value that cannot be marshalled is answered as MARSHAL."
                .to_owned()
        };
        let large = self.raises_large(&call.raises);
        let result_lint = large.then(|| quote!(#[allow(clippy::result_large_err)]));
        let too_many = (values.len() + 1 > 7).then(|| quote!(clippy::too_many_arguments,));
        quote! {
            #[doc = #doc]
            #[derive(Debug)]
            #[must_use = "a responder dropped without an answer sends the client NO_RESPONSE"]
            pub struct #responder {
                handler: ::armillary::runtime::ResponseHandler,
            }

            impl #responder {
                /// False for a oneway request: an answer goes nowhere.
                #[must_use]
                pub fn response_expected(&self) -> bool {
                    self.handler.response_expected()
                }

                #[doc = #reply_doc]
                #[allow(#too_many clippy::needless_pass_by_value)]
                pub fn reply(self, #(#params),*) {
                    self.handler.reply(#writer);
                }

                /// Answers with an exception: one the operation declares, or a
                /// system exception.
                #[allow(clippy::needless_pass_by_value)]
                pub fn raise(self, error: #error) {
                    #raise_body
                }

                /// Answers with `outcome`: its values, or its exception.
                #result_lint
                pub fn answer(self, outcome: ::core::result::Result<#values_type, #error>) {
                    match outcome {
                        ::core::result::Result::Ok(#tuple) => self.reply(#(#names),*),
                        ::core::result::Result::Err(error) => self.raise(error),
                    }
                }

                /// Answers with the output of `future` when it completes. The
                /// ORB drives it on its own threads (the first poll now, later
                /// ones when it is woken); a panic while polling answers
                /// UNKNOWN.
                pub fn answer_when(
                    self,
                    future: impl ::core::future::Future<Output = ::core::result::Result<#values_type, #error>>
                        + ::core::marker::Send
                        + 'static,
                ) {
                    self.handler.answer_when(future, |handler, outcome| {
                        Self { handler }.answer(outcome);
                    });
                }
            }
        }
    }

    /// The parameters of an asynchronous method: the in and inout
    /// arguments, as values.
    fn value_params(&self, from: &[String], call: &Call) -> Vec<TokenStream> {
        call.inputs()
            .map(|p: &CallParam| {
                let name = ident(&p.name);
                let ty = self.param_rust_type(from, p);
                quote!(#name: #ty)
            })
            .collect()
    }

    /// The documentation of an asynchronous method: the call's, then how
    /// it answers (`how`).
    fn async_doc(call: &Call, how: &str) -> TokenStream {
        let doc = &call.doc;
        let inouts = call
            .params
            .iter()
            .any(|p| p.direction == Direction::InOut)
            .then(|| {
                quote! {
                    #[doc = ""]
                    #[doc = " The inout arguments come in as values; their new values go back with the reply."]
                }
            });
        quote! {
            #doc
            #[doc = ""]
            #[doc = #how]
            #inouts
        }
    }

    /// The AMH servant trait's method for an asynchronous call.
    fn amh_method(
        &self,
        from: &[String],
        call: &Call,
        responder: &proc_macro2::Ident,
    ) -> TokenStream {
        let method = ident(&call.stub_method);
        let params = self.value_params(from, call);
        let how = format!(
            " Asynchronous (AMH): answer through `responder` ([`{responder}`]), now or \
             later, from any thread."
        );
        let doc = Self::async_doc(call, &how);
        let lints = call.allowed_lints_with(false, 1);
        quote! {
            #doc
            #lints
            fn #method(&self, responder: #responder, #(#params),*);
        }
    }

    /// The async servant trait's method for an asynchronous call.
    fn async_method(&self, from: &[String], call: &Call) -> TokenStream {
        let method = ident(&call.stub_method);
        let params = self.value_params(from, call);
        let values = self.reply_values_type(from, call);
        let error = self.error_type(from, call);
        let how = " Asynchronous: write it as `async fn`; the ORB drives the future and \
                   answers the client with its output (the return value, then the inout \
                   and out values).";
        let doc = Self::async_doc(call, how);
        let errors = self.errors_doc(call, true);
        let lints = call.allowed_lints(self.raises_large(&call.raises));
        quote! {
            #doc
            #errors
            #lints
            fn #method(
                self: ::std::sync::Arc<Self>,
                #(#params),*
            ) -> impl ::core::future::Future<Output = ::core::result::Result<#values, #error>>
                   + ::core::marker::Send;
        }
    }

    /// The adapter's method for an asynchronous call: the async servant's
    /// future, answered by the responder.
    fn adapter_method(
        &self,
        from: &[String],
        call: &Call,
        responder: &proc_macro2::Ident,
        async_servant: &proc_macro2::Ident,
    ) -> TokenStream {
        let method = ident(&call.stub_method);
        let params = self.value_params(from, call);
        let args = call.inputs().map(|p| ident(&p.name));
        let lints = call.allowed_lints_with(false, 1);
        quote! {
            #lints
            fn #method(&self, responder: #responder, #(#params),*) {
                responder.answer_when(<T as #async_servant>::#method(
                    ::std::sync::Arc::clone(&self.servant),
                    #(#args),*
                ));
            }
        }
    }

    /// The adapter's method for a synchronous call: the async servant's.
    fn adapter_sync_method(
        &self,
        from: &[String],
        call: &Call,
        async_servant: &proc_macro2::Ident,
    ) -> TokenStream {
        let method = ident(&call.stub_method);
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
        let args = call.inputs().map(|p| ident(&p.name));
        let (result, error) = if call.oneway {
            (quote!(()), quote!(::armillary::SystemException))
        } else {
            (self.result_type(from, call), self.error_type(from, call))
        };
        let lints = call.allowed_lints(self.raises_large(&call.raises));
        quote! {
            #lints
            fn #method(&self, #(#params),*) -> ::core::result::Result<#result, #error> {
                <T as #async_servant>::#method(&self.servant, #(#args),*)
            }
        }
    }
}
