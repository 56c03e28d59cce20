//! Collocation: what a stub hands the runtime so that a call to an object
//! served in this process can reach its servant as a Rust call, with no
//! CDR, and what a skeleton offers for it.
//!
//! A stub's synchronous method (an operation, an attribute's getter or
//! setter, a reply handler's operation) calls
//! `ObjectRef::invoke_typed::<dyn IServant, …>` (oneways
//! `invoke_oneway_typed`), where `IServant` is the servant trait of the
//! interface that declares the call. Besides the request's usual `args`
//! and `result` (the remote path, and the fallback), it passes `local`: a
//! closure the runtime calls only when the call goes in-process typed.
//! `local` makes owned copies of the in and inout arguments, once (a
//! `Copy` value is taken as is, a string or a sequence with `to_owned` /
//! `to_vec`, anything else with `clone`), and returns a `Send + 'static`
//! closure that calls the servant trait's method with them and gives what
//! `result` would have decoded from a reply: the return value, then the
//! out and inout values in IDL order; the error type is the stub's. A
//! oneway's closure drops what the servant returns, as the server does.
//! A derived stub's inherited methods delegate to the declaring
//! interface's stub, so they pass that interface's servant trait.
//!
//! So every skeleton `ISkeleton<T>` answers `Servant::local_interface`
//! for `TypeId::of::<Arc<dyn XServant>>()` with an `Arc<dyn XServant>`,
//! for `I` and each of its ancestors `X` (a reply handler's skeleton for
//! its own and its ancestors' handlers). The views are coerced from the
//! skeleton's `Arc<T>` when it is made, so answering is a few `TypeId`
//! comparisons and no allocation. AMH skeletons answer `None`: a
//! collocated call reaches them through `dispatch` and their responders.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::quote;

use super::interface::Call;
use super::names::{ident, snake, Namer};
use super::Generator;
use crate::ir::{DefId, DefKind, Direction, Type};

/// The servant-trait views a skeleton keeps for `local_interface`.
pub(super) struct SkeletonViews {
    /// The struct's fields (`as_quoter_servant: Arc<dyn QuoterServant>`).
    pub(super) fields: TokenStream,
    /// Their initialisers in `from_arc`, from its `servant: Arc<T>`.
    pub(super) inits: TokenStream,
    /// The `local_interface` method of the skeleton's `Servant` impl.
    pub(super) local_interface: TokenStream,
}

impl Generator<'_> {
    /// Whether a call's values may go to a collocated servant as Rust
    /// values: none of its types holds an `any` (whose references belong
    /// to the ORB that decodes it) or a bounded string or sequence (whose
    /// bound only encoding checks: BAD_PARAM before the call leaves). A
    /// call that does goes encoded, collocated too.
    pub(super) fn typed_collocation(&self, call: &Call) -> bool {
        let mut seen = HashSet::new();
        !call
            .params
            .iter()
            .any(|p| p.holder.is_none() && self.checked_by_cdr(&p.ty, &mut seen))
            && !call.ret.iter().any(|t| self.checked_by_cdr(t, &mut seen))
            && !call
                .raises
                .iter()
                .any(|id| self.def_checked_by_cdr(*id, &mut seen))
    }

    /// Whether `ty` holds an `any` or a bounded string or sequence.
    fn checked_by_cdr(&self, ty: &Type, seen: &mut HashSet<DefId>) -> bool {
        match ty {
            Type::Any => true,
            Type::String { bound } | Type::WString { bound } => bound.is_some(),
            Type::Sequence { element, bound } => {
                bound.is_some() || self.checked_by_cdr(element, seen)
            }
            Type::Array { element, .. } => self.checked_by_cdr(element, seen),
            Type::Named(id) => self.def_checked_by_cdr(*id, seen),
            _ => false,
        }
    }

    /// [`Self::checked_by_cdr`] for a named type (each looked at once).
    fn def_checked_by_cdr(&self, id: DefId, seen: &mut HashSet<DefId>) -> bool {
        if !seen.insert(id) {
            return false;
        }
        match &self.spec[id].kind {
            DefKind::Typedef(t) => self.checked_by_cdr(&t.ty, seen),
            DefKind::Struct(s) => s.members.iter().any(|m| self.checked_by_cdr(&m.ty, seen)),
            DefKind::Exception(e) => e.members.iter().any(|m| self.checked_by_cdr(&m.ty, seen)),
            DefKind::Union(u) => u
                .cases
                .iter()
                .any(|c| self.checked_by_cdr(&c.member.ty, seen)),
            _ => false,
        }
    }

    /// The `local` argument of the `invoke_typed` (or, for a oneway,
    /// `invoke_oneway_typed`) call of `call`'s stub method, on the servant
    /// trait `servant_trait` (see the module docs).
    pub(super) fn local_call(&self, call: &Call, servant_trait: &TokenStream) -> TokenStream {
        let mut owned = Vec::new();
        let mut args = Vec::new();
        for p in call.inputs() {
            let name = ident(&p.name);
            if p.direction == Direction::InOut {
                let copy = if self.is_rust_copy(&p.ty) {
                    quote!(*#name)
                } else {
                    quote!(#name.clone())
                };
                owned.push(quote!(let mut #name = #copy;));
                args.push(quote!(&mut #name));
            } else {
                if let Some(copy) = self.owned_copy(p) {
                    owned.push(quote!(let #name = #copy;));
                }
                args.push(quote!(#name));
            }
        }
        let method = ident(&call.method);
        let upcall = quote!(servant.#method(#(#args),*));
        let body = if call.oneway {
            quote!({
                let _ = #upcall;
            })
        } else {
            self.local_reply(call, upcall)
        };
        let callee = quote!(move |servant: &dyn #servant_trait| #body);
        if owned.is_empty() {
            quote!(|| #callee)
        } else {
            quote!(|| {
                #(#owned)*
                #callee
            })
        }
    }

    /// `upcall` (the servant's `Result` of the return value and the out
    /// values) as the stub's reply values: the inout values are added in
    /// their IDL places.
    fn local_reply(&self, call: &Call, upcall: TokenStream) -> TokenStream {
        if !call.params.iter().any(|p| p.direction == Direction::InOut) {
            return upcall;
        }
        let returned: Vec<TokenStream> = call
            .ret
            .iter()
            .map(|_| quote!(result))
            .chain(
                call.params
                    .iter()
                    .filter(|p| p.direction == Direction::Out)
                    .map(|p| {
                        let name = ident(&p.name);
                        quote!(#name)
                    }),
            )
            .collect();
        let values: Vec<TokenStream> = Self::reply_values(call)
            .iter()
            .map(|(_, param)| match param {
                Some(i) => {
                    let name = ident(&call.params[*i].name);
                    quote!(#name)
                }
                None => quote!(result),
            })
            .collect();
        let tuple = |names: &[TokenStream]| match names {
            [] => quote!(()),
            [only] => only.clone(),
            _ => quote!((#(#names),*)),
        };
        let (returned, values) = (tuple(&returned), tuple(&values));
        quote!(#upcall.map(|#returned| #values))
    }

    /// The views of a skeleton whose servant trait is `own` (an ident in
    /// scope) and whose ancestors' servant traits are `ancestors` (each
    /// its Rust name and a path to it).
    pub(super) fn skeleton_views(
        own: &proc_macro2::Ident,
        ancestors: &[(String, TokenStream)],
    ) -> SkeletonViews {
        let mut namer = Namer::with_reserved(&["servant"]);
        let own_name = own.to_string();
        let views: Vec<(proc_macro2::Ident, TokenStream)> =
            std::iter::once((own_name.as_str(), quote!(#own)))
                .chain(
                    ancestors
                        .iter()
                        .map(|(name, path)| (name.as_str(), path.clone())),
                )
                .map(|(name, path)| {
                    let field = ident(&namer.claim(&format!("as_{}", snake(name))));
                    (field, path)
                })
                .collect();
        let fields = views.iter().map(|(field, path)| {
            let doc = format!(
                " The servant as `dyn {}`, for collocated calls.",
                path.to_string().replace(' ', "")
            );
            quote! {
                #[doc = #doc]
                #field: ::std::sync::Arc<dyn #path>,
            }
        });
        let inits = views
            .iter()
            .map(|(field, _)| quote!(#field: ::std::sync::Arc::<T>::clone(&servant),));
        let answers = views.iter().map(|(field, path)| {
            quote! {
                if interface == ::core::any::TypeId::of::<::std::sync::Arc<dyn #path>>() {
                    return ::core::option::Option::Some(&self.#field);
                }
            }
        });
        SkeletonViews {
            fields: quote!(#(#fields)*),
            inits: quote!(#(#inits)*),
            local_interface: quote! {
                fn local_interface(
                    &self,
                    interface: ::core::any::TypeId,
                ) -> ::core::option::Option<&dyn ::core::any::Any> {
                    #(#answers)*
                    ::core::option::Option::None
                }
            },
        }
    }
}
