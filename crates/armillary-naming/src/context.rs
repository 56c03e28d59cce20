//! [`NamingContextImpl`]: the naming contexts of one naming service, kept
//! in memory and shared by every context of the service.
//!
//! All the contexts of a service live in one [`Store`] behind one lock, so
//! a compound name whose contexts are all local is resolved atomically.
//! When a name leads to a context that is not one of this service's (one
//! bound with `bind_context` from another server), the rest of the name is
//! handed to that context with a remote call, made without the lock held.
//!
//! Contexts are activated on the service's POA under the object ids
//! `ctx/<n>` (the root is `ctx/0`); binding iterators under `iter/<n>`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use armillary::giop::system_exception::minor;
use armillary::poa::{ObjectId, Poa, PoaError};
use armillary::{CompletionStatus, ObjectRef, SystemException};
use parking_lot::Mutex;

use crate::cos_naming::naming_context::{
    BindContextError, BindError, BindNewContextError, CannotProceed, DestroyError, InvalidName,
    NotEmpty, NotFound, NotFoundReason, RebindContextError, RebindError, ResolveError, UnbindError,
};
use crate::cos_naming::naming_context_ext::{
    Address, InvalidAddress, ResolveStrError, StringName, ToNameError, ToStringError, ToUrlError,
    UrlString,
};
use crate::cos_naming::{
    Binding, BindingIterator, BindingList, BindingType, Name, NameComponent, NamingContext,
    NamingContextExtServant, NamingContextExtSkeleton, NamingContextServant,
};
use crate::fault::Fault;
use crate::iterator::BindingIteratorImpl;
use crate::name::{self, UrlError};

/// The most binding iterators alive at once; making one more destroys the
/// oldest (clients that never call `destroy` cannot exhaust memory).
pub const MAX_ITERATORS: usize = 1024;

/// The object id of the root context.
pub(crate) const ROOT: u64 = 0;

/// A binding's name within its context: `(id, kind)`.
type Key = (String, String);

#[derive(Clone)]
struct Bound {
    object: ObjectRef,
    binding_type: BindingType,
}

type Bindings = BTreeMap<Key, Bound>;

/// Every context of one service, and its live iterators.
#[derive(Default)]
struct Store {
    contexts: HashMap<u64, Bindings>,
    next_context: u64,
    /// Live iterators, oldest first.
    iterators: VecDeque<u64>,
    next_iterator: u64,
}

/// What one naming service shares between its servants.
pub(crate) struct Shared {
    poa: Poa,
    store: Mutex<Store>,
}

fn context_id(n: u64) -> ObjectId {
    ObjectId::from(format!("ctx/{n}"))
}

pub(crate) fn iterator_id(n: u64) -> ObjectId {
    ObjectId::from(format!("iter/{n}"))
}

fn key(component: &NameComponent) -> Key {
    (component.id.clone(), component.kind.clone())
}

/// A context that has been destroyed while a request for it was on its
/// way.
fn gone() -> SystemException {
    SystemException::object_not_exist(minor::UNREGISTERED_OBJECT, CompletionStatus::No)
}

/// Where a name leads.
enum Target<'n> {
    /// To its last component, in the local context `context`.
    Local {
        context: u64,
        last: &'n NameComponent,
    },
    /// To a context of another service, which is to handle `rest`.
    Remote {
        context: NamingContext,
        rest: &'n [NameComponent],
    },
}

impl Shared {
    /// Starts a service on `poa`: activates its root context.
    pub(crate) fn start(poa: &Poa) -> Result<NamingContext, PoaError> {
        let shared = Arc::new(Shared {
            poa: poa.clone(),
            store: Mutex::new(Store::default()),
        });
        let mut store = shared.store.lock();
        shared.new_context(&mut store)
    }

    pub(crate) fn poa(&self) -> &Poa {
        &self.poa
    }

    /// Makes and activates an empty context.
    fn new_context(self: &Arc<Self>, store: &mut Store) -> Result<NamingContext, PoaError> {
        let n = store.next_context;
        let context = NamingContextExtSkeleton::new(NamingContextImpl {
            shared: self.clone(),
            id: n,
        })
        .activate_with_id(&self.poa, context_id(n))?;
        store.next_context += 1;
        store.contexts.insert(n, Bindings::new());
        Ok(context.into())
    }

    /// The number of the local, live context `object` is, if it is one.
    fn local_context(&self, object: &ObjectRef) -> Option<u64> {
        let id = self.poa.reference_to_id(object).ok()?;
        id.as_str()?.strip_prefix("ctx/")?.parse().ok()
    }

    /// Follows `name` from the context `start` to the context that holds
    /// its last component.
    fn walk<'n>(
        &self,
        store: &Store,
        start: u64,
        name: &'n [NameComponent],
    ) -> Result<Target<'n>, Fault> {
        name::check(name)?;
        let Some((last, parents)) = name.split_last() else {
            return Err(Fault::InvalidName);
        };
        let mut current = start;
        for (i, component) in parents.iter().enumerate() {
            let bindings = store.contexts.get(&current).ok_or_else(gone)?;
            let not_found = |why| {
                Fault::NotFound(NotFound {
                    why,
                    rest_of_name: name[i..].to_vec(),
                })
            };
            let bound = match bindings.get(&key(component)) {
                None => return Err(not_found(NotFoundReason::MissingNode)),
                Some(bound) if bound.binding_type == BindingType::Nobject => {
                    return Err(not_found(NotFoundReason::NotContext))
                }
                Some(bound) => bound,
            };
            let context = NamingContext::from_object(bound.object.clone());
            let rest = &name[i + 1..];
            match self.local_context(&bound.object) {
                Some(n) if store.contexts.contains_key(&n) => current = n,
                // A context of this service destroyed while still bound.
                Some(_) => {
                    return Err(Fault::CannotProceed(CannotProceed {
                        cxt: context,
                        rest_of_name: rest.to_vec(),
                    }))
                }
                None => return Ok(Target::Remote { context, rest }),
            }
        }
        Ok(Target::Local {
            context: current,
            last,
        })
    }
}

/// One naming context of an in-memory naming service: the servant behind
/// every context that [`start`](crate::start) and
/// [`activate_root`](crate::activate_root) make and that `new_context` and
/// `bind_new_context` create. It serves `CosNaming::NamingContextExt`.
///
/// It follows the Naming Service specification (formal/04-10-03):
/// - a compound name is resolved context by context; a missing component
///   raises `NotFound` with `missing_node`, a component bound to an object
///   where a context is needed `NotFound` with `not_context`, each with
///   `rest_of_name` starting at that component;
/// - `rebind` over a context binding raises `NotFound` with `not_object`,
///   `rebind_context` over an object binding `NotFound` with
///   `not_context`;
/// - a name leading into a context of another server is handed to that
///   context; when it cannot be asked (or when it is a destroyed context
///   of this service), `CannotProceed` names it and the rest of the name;
/// - a name with no component, or with a component whose id and kind are
///   both empty, is `InvalidName`;
/// - binding a nil reference is `BAD_PARAM`; destroying the root context
///   is `NO_PERMISSION`.
pub struct NamingContextImpl {
    shared: Arc<Shared>,
    id: u64,
}

impl std::fmt::Debug for NamingContextImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamingContextImpl")
            .field("id", &self.id)
            .finish()
    }
}

impl NamingContextImpl {
    /// Runs a name operation: `local` on the context holding the last
    /// component when that context is local (with the store locked), else
    /// `remote` on the other server's context with the rest of the name.
    fn operate<T, E: Into<Fault>>(
        &self,
        name: &[NameComponent],
        local: impl FnOnce(&mut Store, u64, &NameComponent) -> Result<T, Fault>,
        remote: impl FnOnce(&NamingContext, &[NameComponent]) -> Result<T, E>,
    ) -> Result<T, Fault> {
        let (context, rest) = {
            let mut store = self.shared.store.lock();
            match self.shared.walk(&store, self.id, name)? {
                Target::Local { context, last } => return local(&mut store, context, last),
                Target::Remote { context, rest } => (context, rest),
            }
        };
        remote(&context, rest).map_err(|e| match e.into() {
            Fault::System(_) => Fault::CannotProceed(CannotProceed {
                cxt: context.clone(),
                rest_of_name: rest.to_vec(),
            }),
            fault => fault,
        })
    }

    /// Binds `last` in `context` to `object`, as `binding_type`; over an
    /// existing binding (of the same type) only when `rebind`.
    fn put(
        store: &mut Store,
        context: u64,
        last: &NameComponent,
        bound: Bound,
        rebind: bool,
    ) -> Result<(), Fault> {
        let bindings = store.contexts.get_mut(&context).ok_or_else(gone)?;
        if let Some(old) = bindings.get(&key(last)) {
            if !rebind {
                return Err(Fault::AlreadyBound);
            }
            if old.binding_type != bound.binding_type {
                let why = match old.binding_type {
                    BindingType::Ncontext => NotFoundReason::NotObject,
                    BindingType::Nobject => NotFoundReason::NotContext,
                };
                return Err(Fault::NotFound(NotFound {
                    why,
                    rest_of_name: vec![last.clone()],
                }));
            }
        }
        bindings.insert(key(last), bound);
        Ok(())
    }

    fn bind_any(
        &self,
        n: &[NameComponent],
        object: ObjectRef,
        binding_type: BindingType,
        rebind: bool,
    ) -> Result<(), Fault> {
        if object.is_nil() {
            return Err(SystemException::bad_param(0, CompletionStatus::No).into());
        }
        let bound = Bound {
            object: object.clone(),
            binding_type,
        };
        self.operate(
            n,
            |store, context, last| Self::put(store, context, last, bound, rebind),
            |remote, rest| -> Result<(), Fault> {
                let context = NamingContext::from_object(object.clone());
                match (binding_type, rebind) {
                    (BindingType::Nobject, false) => {
                        remote.bind(rest, &object).map_err(Fault::from)
                    }
                    (BindingType::Nobject, true) => {
                        remote.rebind(rest, &object).map_err(Fault::from)
                    }
                    (BindingType::Ncontext, false) => {
                        remote.bind_context(rest, &context).map_err(Fault::from)
                    }
                    (BindingType::Ncontext, true) => {
                        remote.rebind_context(rest, &context).map_err(Fault::from)
                    }
                }
            },
        )
    }

    fn resolve_name(&self, n: &[NameComponent]) -> Result<ObjectRef, Fault> {
        self.operate(
            n,
            |store, context, last| {
                let bindings = store.contexts.get(&context).ok_or_else(gone)?;
                match bindings.get(&key(last)) {
                    Some(bound) => Ok(bound.object.clone()),
                    None => Err(Fault::NotFound(NotFound {
                        why: NotFoundReason::MissingNode,
                        rest_of_name: vec![last.clone()],
                    })),
                }
            },
            |remote, rest| remote.resolve(rest),
        )
    }
}

impl NamingContextServant for NamingContextImpl {
    fn bind(&self, n: Name, obj: ObjectRef) -> Result<(), BindError> {
        Ok(self.bind_any(&n, obj, BindingType::Nobject, false)?)
    }

    fn rebind(&self, n: Name, obj: ObjectRef) -> Result<(), RebindError> {
        Ok(self.bind_any(&n, obj, BindingType::Nobject, true)?)
    }

    fn bind_context(&self, n: Name, nc: NamingContext) -> Result<(), BindContextError> {
        Ok(self.bind_any(&n, nc.into_object(), BindingType::Ncontext, false)?)
    }

    fn rebind_context(&self, n: Name, nc: NamingContext) -> Result<(), RebindContextError> {
        Ok(self.bind_any(&n, nc.into_object(), BindingType::Ncontext, true)?)
    }

    fn resolve(&self, n: Name) -> Result<ObjectRef, ResolveError> {
        Ok(self.resolve_name(&n)?)
    }

    fn unbind(&self, n: Name) -> Result<(), UnbindError> {
        Ok(self.operate(
            &n,
            |store, context, last| {
                let bindings = store.contexts.get_mut(&context).ok_or_else(gone)?;
                match bindings.remove(&key(last)) {
                    Some(_) => Ok(()),
                    None => Err(Fault::NotFound(NotFound {
                        why: NotFoundReason::MissingNode,
                        rest_of_name: vec![last.clone()],
                    })),
                }
            },
            |remote, rest| remote.unbind(rest),
        )?)
    }

    fn new_context(&self) -> Result<NamingContext, SystemException> {
        let mut store = self.shared.store.lock();
        if !store.contexts.contains_key(&self.id) {
            return Err(gone());
        }
        self.shared
            .new_context(&mut store)
            .map_err(SystemException::from)
    }

    fn bind_new_context(&self, n: Name) -> Result<NamingContext, BindNewContextError> {
        Ok(self.operate(
            &n,
            |store, context, last| {
                let bindings = store.contexts.get(&context).ok_or_else(gone)?;
                if bindings.contains_key(&key(last)) {
                    return Err(Fault::AlreadyBound);
                }
                let new = self
                    .shared
                    .new_context(store)
                    .map_err(SystemException::from)?;
                let bound = Bound {
                    object: new.as_object().clone(),
                    binding_type: BindingType::Ncontext,
                };
                Self::put(store, context, last, bound, false)?;
                Ok(new)
            },
            |remote, rest| remote.bind_new_context(rest),
        )?)
    }

    fn destroy(&self) -> Result<(), DestroyError> {
        if self.id == ROOT {
            return Err(SystemException::no_permission(0, CompletionStatus::No).into());
        }
        let mut store = self.shared.store.lock();
        let bindings = store.contexts.get(&self.id).ok_or_else(gone)?;
        if !bindings.is_empty() {
            return Err(NotEmpty {}.into());
        }
        store.contexts.remove(&self.id);
        match self.shared.poa.deactivate_object(context_id(self.id)) {
            Ok(()) | Err(PoaError::ObjectNotActive) => Ok(()),
            Err(e) => Err(SystemException::from(e).into()),
        }
    }

    fn list(&self, how_many: u32) -> Result<(BindingList, BindingIterator), SystemException> {
        let mut store = self.shared.store.lock();
        let bindings = store.contexts.get(&self.id).ok_or_else(gone)?;
        let first = usize::try_from(how_many).unwrap_or(usize::MAX);
        let mut all = bindings.iter().map(|((id, kind), bound)| Binding {
            binding_name: vec![NameComponent {
                id: id.clone(),
                kind: kind.clone(),
            }],
            binding_type: bound.binding_type,
        });
        let list: BindingList = all.by_ref().take(first).collect();
        let rest: VecDeque<Binding> = all.collect();
        if rest.is_empty() {
            return Ok((list, BindingIterator::from_object(ObjectRef::nil())));
        }
        let iterator = self.new_iterator(&mut store, rest)?;
        Ok((list, iterator))
    }
}

impl NamingContextImpl {
    /// Activates an iterator over `rest`, destroying the oldest when there
    /// are [`MAX_ITERATORS`] already.
    fn new_iterator(
        &self,
        store: &mut Store,
        rest: VecDeque<Binding>,
    ) -> Result<BindingIterator, SystemException> {
        while store.iterators.len() >= MAX_ITERATORS {
            let Some(oldest) = store.iterators.pop_front() else {
                break;
            };
            // Already gone if its client destroyed it meanwhile.
            let _ = self.shared.poa.deactivate_object(iterator_id(oldest));
        }
        let n = store.next_iterator;
        let iterator = BindingIteratorImpl::skeleton(self.shared.clone(), n, rest)
            .activate_with_id(&self.shared.poa, iterator_id(n))?;
        store.next_iterator += 1;
        store.iterators.push_back(n);
        Ok(iterator)
    }
}

impl Shared {
    /// Forgets the iterator `n` (its servant deactivates itself).
    pub(crate) fn forget_iterator(&self, n: u64) {
        self.store.lock().iterators.retain(|&i| i != n);
    }
}

impl NamingContextExtServant for NamingContextImpl {
    fn to_string(&self, n: Name) -> Result<StringName, ToStringError> {
        name::to_string(&n).map_err(|_| ToStringError::InvalidName(InvalidName {}))
    }

    fn to_name(&self, sn: StringName) -> Result<Name, ToNameError> {
        name::to_name(&sn).map_err(|_| ToNameError::InvalidName(InvalidName {}))
    }

    fn to_url(&self, addr: Address, sn: StringName) -> Result<UrlString, ToUrlError> {
        name::to_url(&addr, &sn).map_err(|e| match e {
            UrlError::InvalidName(_) => ToUrlError::InvalidName(InvalidName {}),
            _ => ToUrlError::InvalidAddress(InvalidAddress {}),
        })
    }

    fn resolve_str(&self, sn: StringName) -> Result<ObjectRef, ResolveStrError> {
        let name = name::to_name(&sn).map_err(Fault::from)?;
        Ok(self.resolve_name(&name)?)
    }
}
