//! [`NamingContextImpl`]: the naming contexts of one naming service,
//! whose bindings live in the service's [`Store`] (an SQLite database, in
//! a file or in memory) and are shared by every context of the service.
//!
//! Each operation is one transaction of the store, taken under one lock,
//! so a compound name whose contexts are all local is resolved
//! atomically, and a write is committed before its reply is sent. When a
//! name leads to a context that is not one of this service's (one bound
//! with `bind_context` from another server), the rest of the name is
//! handed to that context with a remote call, made without the lock held
//! and outside any transaction.
//!
//! Contexts are activated on the service's POA under the object ids
//! `ctx/<n>` (the root is `ctx/0`, `n` the context's id in the store);
//! binding iterators under `iter/<n>`. A persistent service's POA also
//! has a servant activator ([`crate::activator`]) for the contexts of
//! the store that this run has not activated yet.

use std::collections::VecDeque;
use std::sync::Arc;

use armillary::giop::system_exception::minor as orb_minor;
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
    NamingContextExt, NamingContextExtServant, NamingContextExtSkeleton, NamingContextServant,
};
use crate::fault::Fault;
use crate::iterator::BindingIteratorImpl;
use crate::minor;
use crate::name::{self, UrlError};
use crate::store::{Bound, Store, Tx, ROOT};

/// The most binding iterators alive at once; making one more destroys the
/// oldest (clients that never call `destroy` cannot exhaust memory).
pub const MAX_ITERATORS: usize = 1024;

/// The live iterators of one service.
struct Iterators {
    /// Oldest first.
    live: VecDeque<u64>,
    next: u64,
}

impl Iterators {
    /// None yet. Numbers start at the time of day in nanoseconds, so that
    /// a persistent service's later run never hands out the number of an
    /// iterator of an earlier one (whose clients would reach the new
    /// iterator): a run makes fewer iterators than nanoseconds go by.
    fn new() -> Iterators {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2));
        Iterators {
            live: VecDeque::new(),
            next: now,
        }
    }
}

/// What one naming service shares between its servants.
pub(crate) struct Shared {
    poa: Poa,
    store: Mutex<Store>,
    /// Where this service's references point (the host and port of their
    /// first IIOP profile): with a persistent POA, a reference's object
    /// key alone does not tell this service from another one of the same
    /// name elsewhere.
    address: Option<(String, u16)>,
    iterators: Mutex<Iterators>,
}

pub(crate) fn context_id(n: u64) -> ObjectId {
    ObjectId::from(format!("ctx/{n}"))
}

pub(crate) fn iterator_id(n: u64) -> ObjectId {
    ObjectId::from(format!("iter/{n}"))
}

/// The context number an object id of the service's POA names, if any.
pub(crate) fn context_number(id: &ObjectId) -> Option<u64> {
    id.as_str()?.strip_prefix("ctx/")?.parse().ok()
}

/// The host and port of `object`'s first IIOP profile.
fn address(object: &ObjectRef) -> Option<(String, u16)> {
    let profile = object.ior().iiop_profiles().into_iter().next()?;
    Some((profile.host, profile.port))
}

/// A context that has been destroyed while a request for it was on its
/// way.
fn gone() -> SystemException {
    SystemException::object_not_exist(orb_minor::UNREGISTERED_OBJECT, CompletionStatus::No)
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

/// Whether an operation only reads the store.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

impl Shared {
    /// Starts a service on `poa` with the contexts in `store`: activates
    /// its root context.
    pub(crate) fn start(
        poa: &Poa,
        store: Store,
    ) -> Result<(Arc<Shared>, NamingContextExt), PoaError> {
        let reference =
            poa.create_reference_with_id(context_id(ROOT), NamingContextExt::REPOSITORY_ID)?;
        let shared = Arc::new(Shared {
            poa: poa.clone(),
            store: Mutex::new(store),
            address: address(&reference),
            iterators: Mutex::new(Iterators::new()),
        });
        let root = shared.activate_context(ROOT)?;
        Ok((shared, root))
    }

    pub(crate) fn poa(&self) -> &Poa {
        &self.poa
    }

    /// The servant of context `n`, not activated.
    pub(crate) fn servant(self: &Arc<Self>, n: u64) -> NamingContextExtSkeleton<NamingContextImpl> {
        NamingContextExtSkeleton::new(NamingContextImpl {
            shared: self.clone(),
            id: n,
        })
    }

    /// Activates the servant of context `n`.
    fn activate_context(self: &Arc<Self>, n: u64) -> Result<NamingContextExt, PoaError> {
        self.servant(n).activate_with_id(&self.poa, context_id(n))
    }

    /// Whether context `n` is in the store (for the servant activator).
    pub(crate) fn context_exists(&self, n: u64) -> Result<bool, SystemException> {
        let mut store = self.store.lock();
        let tx = store.read()?;
        tx.context_exists(n)
    }

    /// Makes an empty context in `tx` and activates it (to be
    /// [deactivated](Self::deactivate) if `tx` does not commit).
    fn new_context(self: &Arc<Self>, tx: &Tx<'_>) -> Result<(u64, NamingContext), SystemException> {
        let n = tx.new_context()?;
        let context = self.activate_context(n)?;
        Ok((n, context.into()))
    }

    /// The number of the context of this service `object` is, if it is
    /// one (live or not).
    fn local_context(&self, object: &ObjectRef) -> Option<u64> {
        let id = self.poa.reference_to_id(object).ok()?;
        if address(object) != self.address {
            return None;
        }
        context_number(&id)
    }

    /// Follows `name` from the context `start` to the context that holds
    /// its last component.
    fn walk<'n>(
        &self,
        tx: &Tx<'_>,
        start: u64,
        name: &'n [NameComponent],
    ) -> Result<Target<'n>, Fault> {
        name::check(name)?;
        let Some((last, parents)) = name.split_last() else {
            return Err(Fault::InvalidName);
        };
        if !tx.context_exists(start)? {
            return Err(gone().into());
        }
        let mut current = start;
        for (i, component) in parents.iter().enumerate() {
            let not_found = |why| {
                Fault::NotFound(NotFound {
                    why,
                    rest_of_name: name[i..].to_vec(),
                })
            };
            let bound = match tx.binding(current, component)? {
                None => return Err(not_found(NotFoundReason::MissingNode)),
                Some(bound) if bound.binding_type == BindingType::Nobject => {
                    return Err(not_found(NotFoundReason::NotContext))
                }
                Some(bound) => bound,
            };
            let rest = &name[i + 1..];
            match bound.local_context {
                Some(n) if tx.context_exists(n)? => current = n,
                // A context of this service destroyed while still bound.
                Some(_) => {
                    return Err(Fault::CannotProceed(CannotProceed {
                        cxt: NamingContext::from_object(bound.object),
                        rest_of_name: rest.to_vec(),
                    }))
                }
                None => {
                    return Ok(Target::Remote {
                        context: NamingContext::from_object(bound.object),
                        rest,
                    })
                }
            }
        }
        Ok(Target::Local {
            context: current,
            last,
        })
    }
}

/// One naming context of a naming service: the servant behind every
/// context that [`start`](crate::start),
/// [`start_persistent`](crate::start_persistent) and
/// [`activate_root`](crate::activate_root) make and that `new_context`
/// and `bind_new_context` create. It serves `CosNaming::NamingContextExt`.
///
/// It follows the Naming Service specification (formal/04-10-03):
/// - a compound name is resolved context by context; a missing component
///   raises `NotFound` with `missing_node`, a component bound to an object
///   where a context is needed `NotFound` with `not_context`, each with
///   `rest_of_name` starting at that component;
/// - `bind` and `bind_context` of a name already bound raise
///   `AlreadyBound`, `unbind` of a name not bound `NotFound`
///   (`missing_node`); each is one transaction, so of several clients
///   binding one name at once exactly one succeeds;
/// - `rebind` over a context binding raises `NotFound` with `not_object`,
///   `rebind_context` over an object binding `NotFound` with
///   `not_context`;
/// - a name leading into a context of another server is handed to that
///   context; when it cannot be asked (or when it is a destroyed context
///   of this service), `CannotProceed` names it and the rest of the name;
/// - a name with no component, or with a component whose id and kind are
///   both empty, is `InvalidName`;
/// - binding a nil reference is BAD_PARAM ([`minor::NIL_REFERENCE`]);
///   destroying the root context is NO_PERMISSION
///   ([`minor::ROOT_NOT_DESTROYABLE`]); a failing store is
///   PERSIST_STORE ([`minor::STORE_FAILED`]).
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
    /// component when that context is local (in one transaction of the
    /// store, committed when `local` succeeds), else `remote` on the other
    /// server's context with the rest of the name.
    fn operate<T, E: Into<Fault>>(
        &self,
        access: Access,
        name: &[NameComponent],
        local: impl FnOnce(&Tx<'_>, u64, &NameComponent) -> Result<T, Fault>,
        remote: impl FnOnce(&NamingContext, &[NameComponent]) -> Result<T, E>,
    ) -> Result<T, Fault> {
        let (context, rest) = {
            let mut store = self.shared.store.lock();
            let tx = match access {
                Access::Read => store.read()?,
                Access::Write => store.write()?,
            };
            match self.shared.walk(&tx, self.id, name)? {
                Target::Local { context, last } => {
                    let outcome = local(&tx, context, last)?;
                    tx.commit()?;
                    return Ok(outcome);
                }
                // The transaction ends (rolls back) before the remote call.
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

    /// Binds `last` in `context` as `bound` says; over an existing
    /// binding (of the same type) only when `rebind`.
    fn put(
        tx: &Tx<'_>,
        context: u64,
        last: &NameComponent,
        bound: &Bound,
        rebind: bool,
    ) -> Result<(), Fault> {
        if let Some(old) = tx.binding(context, last)? {
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
        tx.put(context, last, bound)?;
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
            return Err(
                SystemException::bad_param(minor::NIL_REFERENCE, CompletionStatus::No).into(),
            );
        }
        let bound = Bound {
            local_context: match binding_type {
                BindingType::Ncontext => self.shared.local_context(&object),
                BindingType::Nobject => None,
            },
            object: object.clone(),
            binding_type,
        };
        self.operate(
            Access::Write,
            n,
            |tx, context, last| Self::put(tx, context, last, &bound, rebind),
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
            Access::Read,
            n,
            |tx, context, last| match tx.binding(context, last)? {
                Some(bound) => Ok(bound.object),
                None => Err(Fault::NotFound(NotFound {
                    why: NotFoundReason::MissingNode,
                    rest_of_name: vec![last.clone()],
                })),
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
            Access::Write,
            &n,
            |tx, context, last| match tx.remove(context, last)? {
                true => Ok(()),
                false => Err(Fault::NotFound(NotFound {
                    why: NotFoundReason::MissingNode,
                    rest_of_name: vec![last.clone()],
                })),
            },
            |remote, rest| remote.unbind(rest),
        )?)
    }

    fn new_context(&self) -> Result<NamingContext, SystemException> {
        let mut store = self.shared.store.lock();
        let tx = store.write()?;
        if !tx.context_exists(self.id)? {
            return Err(gone());
        }
        let (n, context) = self.shared.new_context(&tx)?;
        if let Err(e) = tx.commit() {
            self.shared.deactivate(n);
            return Err(e);
        }
        Ok(context)
    }

    fn bind_new_context(&self, n: Name) -> Result<NamingContext, BindNewContextError> {
        // The context made, to deactivate if the transaction fails.
        let mut made = None;
        let outcome = self.operate(
            Access::Write,
            &n,
            |tx, context, last| {
                if tx.binding(context, last)?.is_some() {
                    return Err(Fault::AlreadyBound);
                }
                let (number, new) = self.shared.new_context(tx)?;
                made = Some(number);
                let bound = Bound {
                    object: new.as_object().clone(),
                    binding_type: BindingType::Ncontext,
                    local_context: Some(number),
                };
                Self::put(tx, context, last, &bound, false)?;
                Ok(new)
            },
            |remote, rest| remote.bind_new_context(rest),
        );
        if let (Err(_), Some(number)) = (&outcome, made) {
            self.shared.deactivate(number);
        }
        Ok(outcome?)
    }

    fn destroy(&self) -> Result<(), DestroyError> {
        if self.id == ROOT {
            return Err(SystemException::no_permission(
                minor::ROOT_NOT_DESTROYABLE,
                CompletionStatus::No,
            )
            .into());
        }
        {
            let mut store = self.shared.store.lock();
            let tx = store.write()?;
            if !tx.context_exists(self.id)? {
                return Err(gone().into());
            }
            if !tx.is_empty(self.id)? {
                return Err(NotEmpty {}.into());
            }
            tx.remove_context(self.id)?;
            tx.commit()?;
        }
        match self.shared.poa.deactivate_object(context_id(self.id)) {
            Ok(()) | Err(PoaError::ObjectNotActive) => Ok(()),
            Err(e) => Err(SystemException::from(e).into()),
        }
    }

    fn list(&self, how_many: u32) -> Result<(BindingList, BindingIterator), SystemException> {
        let all = {
            let mut store = self.shared.store.lock();
            let tx = store.read()?;
            if !tx.context_exists(self.id)? {
                return Err(gone());
            }
            tx.list(self.id)?
        };
        let first = usize::try_from(how_many).unwrap_or(usize::MAX);
        let mut all = all.into_iter();
        let list: BindingList = all.by_ref().take(first).collect();
        let rest: VecDeque<Binding> = all.collect();
        if rest.is_empty() {
            return Ok((list, BindingIterator::from_object(ObjectRef::nil())));
        }
        let iterator = self.new_iterator(rest)?;
        Ok((list, iterator))
    }
}

impl NamingContextImpl {
    /// Activates an iterator over `rest`, destroying the oldest when there
    /// are [`MAX_ITERATORS`] already.
    fn new_iterator(&self, rest: VecDeque<Binding>) -> Result<BindingIterator, SystemException> {
        let mut iterators = self.shared.iterators.lock();
        while iterators.live.len() >= MAX_ITERATORS {
            let Some(oldest) = iterators.live.pop_front() else {
                break;
            };
            // Already gone if its client destroyed it meanwhile.
            let _ = self.shared.poa.deactivate_object(iterator_id(oldest));
        }
        let n = iterators.next;
        let iterator = BindingIteratorImpl::skeleton(self.shared.clone(), n, rest)
            .activate_with_id(&self.shared.poa, iterator_id(n))?;
        iterators.next = iterators.next.wrapping_add(1);
        iterators.live.push_back(n);
        Ok(iterator)
    }
}

impl Shared {
    /// Forgets the iterator `n` (its servant deactivates itself).
    pub(crate) fn forget_iterator(&self, n: u64) {
        self.iterators.lock().live.retain(|&i| i != n);
    }

    /// Deactivates context `n`, made by a transaction that did not commit.
    fn deactivate(&self, n: u64) {
        // Not active (or the POA is gone): nothing to undo.
        let _ = self.poa.deactivate_object(context_id(n));
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
