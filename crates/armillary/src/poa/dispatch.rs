//! The request path through the POA: an object key resolved to what the
//! request comes to (`PoaRegistry::resolve`: the POA found, its manager's
//! decision, the servant located by `Poa::locate` through the active
//! object map, a default servant or a servant manager), and the
//! [`Upcall`] that runs the servant with everything around it (POA
//! Current, `SINGLE_THREAD_MODEL`, `postinvoke`, the request counts).

// The POA's parts, split out of `poa/mod.rs`, with the rest of it in
// scope (its private items included).
use super::*;

/// What an object key leads to.
pub(crate) enum Resolution {
    /// A servant is ready: run the upcall.
    Upcall(Upcall),
    /// The POA manager holds requests: park the request with
    /// `PoaManager::hold` and resolve it again when released.
    Held(PoaManager),
    /// A servant manager forwarded the request (LOCATION_FORWARD).
    Forward(ObjectRef),
    /// The request fails with this exception.
    Failed(SystemException),
    /// The key is not an Armillary POA key.
    NotAPoaKey,
}

impl std::fmt::Debug for Resolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resolution::Upcall(upcall) => f.debug_tuple("Upcall").field(upcall).finish(),
            Resolution::Held(manager) => f.debug_tuple("Held").field(manager).finish(),
            Resolution::Forward(target) => f.debug_tuple("Forward").field(target).finish(),
            Resolution::Failed(exception) => f.debug_tuple("Failed").field(exception).finish(),
            Resolution::NotAPoaKey => f.write_str("NotAPoaKey"),
        }
    }
}

/// A servant located for one request, with everything that must happen
/// around the call (POA Current, the single-thread lock, the locator's
/// `postinvoke`, the in-flight counts).
pub(crate) struct Upcall {
    poa: Poa,
    object_id: ObjectId,
    servant: Arc<dyn Servant>,
    cookie: Option<(Arc<dyn ServantLocator>, Cookie)>,
    // The counts drop in this order (declaration order): the object's
    // first, so that a deactivation it completes (and the etherealization)
    // happens while the request still counts for its POA, whose waits for
    // completion (and its manager's) therefore include it.
    _in_object: Option<ObjectRequest>,
    _in_poa: PoaActivity,
}

/// Counts a request as in progress in its POA until dropped.
struct PoaActivity(Poa);

impl PoaActivity {
    /// Counts a request in, before checking that the POA is not destroyed
    /// and that its manager lets requests through (see `RequestCount`).
    fn enter(poa: &Poa) -> PoaActivity {
        poa.inner.requests.enter();
        PoaActivity(poa.clone())
    }
}

impl Drop for PoaActivity {
    fn drop(&mut self) {
        self.0.inner.requests.leave();
    }
}

impl std::fmt::Debug for Upcall {
    /// The target of the upcall: its POA, object id and servant type, and
    /// whether a servant locator waits for `postinvoke`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upcall")
            .field("poa", &self.poa)
            .field("object_id", &self.object_id)
            .field("servant", &self.servant.repository_id())
            .field("located", &self.cookie.is_some())
            .finish_non_exhaustive()
    }
}

impl Upcall {
    /// The POA the target object lives in.
    pub(crate) fn poa(&self) -> &Poa {
        &self.poa
    }

    /// The object id the request addresses, within its POA.
    pub(crate) fn object_id(&self) -> &ObjectId {
        &self.object_id
    }

    /// The servant the request goes to.
    pub(crate) fn servant(&self) -> &Arc<dyn Servant> {
        &self.servant
    }

    /// The request's count on its active object, when it has one.
    pub(super) fn activity(&self) -> Option<&Arc<ObjectActivity>> {
        self._in_object.as_ref().map(ObjectRequest::activity)
    }

    /// Whether the servant was found in the POA's active object map (not
    /// given by a servant locator or a default servant for this request
    /// alone).
    pub(crate) fn found_in_active_object_map(&self) -> bool {
        self._in_object.is_some() && self.cookie.is_none()
    }

    /// Runs the servant on `request`.
    pub(crate) fn run(self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let operation = request.operation();
        self.run_with(operation, |servant| {
            crate::servant::dispatch_contained(servant, request)
        })
    }

    /// Runs `call` on the servant (a collocated call's, typed or not) with
    /// everything around it that a request read from a connection gets:
    /// the SINGLE_THREAD_MODEL serialisation, POA Current, the servant
    /// locator's `postinvoke`, the in-flight counts. `call` contains the
    /// servant's panics itself.
    pub(crate) fn run_with<T>(
        self,
        operation: &str,
        call: impl FnOnce(&dyn Servant) -> Result<T, SystemException>,
    ) -> Result<T, SystemException> {
        let Upcall {
            poa,
            object_id,
            servant,
            cookie,
            _in_object,
            _in_poa,
        } = self;
        let serial = poa.inner.single_thread.as_ref().map(|s| s.enter());
        // The frame owns the upcall's POA, id and servant while it runs
        // (POA Current answers from it), and gives them back after.
        let running = servant.clone();
        let frame = current::enter(poa, object_id, servant);
        let outcome = call(&*running);
        let left = frame.leave();
        let outcome = match (cookie, left) {
            (Some((locator, cookie)), Some((poa, object_id, _))) => {
                // The operation ran: a panic here is COMPLETED_YES.
                let postinvoke = contain(CompletionStatus::Yes, || {
                    locator.postinvoke(&object_id, &poa, operation, cookie, running);
                    Ok::<(), SystemException>(())
                });
                postinvoke.and(outcome)
            }
            _ => outcome,
        };
        // As the upcall's fields would: the POA left, then the object's
        // count and the POA's (see `Upcall`).
        drop(serial);
        drop(_in_object);
        drop(_in_poa);
        outcome
    }
}

impl PoaRegistry {
    /// The full name of the POA `object_key` names and the object id it
    /// carries, without activating anything (what a request filter sees).
    pub(crate) fn describe(&self, object_key: &[u8]) -> Option<(Vec<String>, ObjectId)> {
        let key = ObjectKey::decode(object_key)?;
        let path = match &key.poa {
            PoaName::Transient { orb_token } => {
                if *orb_token != self.orb_token {
                    return None;
                }
                self.poa_at(key.poa_slot)?.inner.path.clone()
            }
            PoaName::Persistent { path } => path.clone(),
        };
        Some((path, key.object_id))
    }

    /// Finds the servant for a request to `object_key` (the POA half of
    /// request dispatch; the ORB turns the outcome into a reply).
    pub(crate) fn resolve(&self, object_key: &[u8], operation: &str) -> Resolution {
        let Some(key) = ObjectKey::decode(object_key) else {
            return Resolution::NotAPoaKey;
        };
        let Some(poa) = self.find_poa_for(&key) else {
            return Resolution::Failed(not_exist());
        };
        // Counted in before the manager's decision (see `RequestCount`).
        let in_poa = PoaActivity::enter(&poa);
        match poa.inner.manager.admit() {
            Ok(()) => {}
            Err(Admission::Run) => return Resolution::Held(poa.inner.manager.clone()),
            Err(Admission::Discard) => {
                return Resolution::Failed(SystemException::transient(1, CompletionStatus::No))
            }
            Err(Admission::Reject) => return Resolution::Failed(obj_adapter()),
        }
        match poa.locate(&key, operation, in_poa) {
            Ok(Located {
                servant,
                cookie,
                in_object,
                in_poa,
            }) => Resolution::Upcall(Upcall {
                poa,
                object_id: key.object_id,
                servant,
                cookie,
                _in_object: in_object,
                _in_poa: in_poa,
            }),
            Err(ServantManagerError::Forward(to)) => Resolution::Forward(to),
            Err(ServantManagerError::System(e)) => Resolution::Failed(e),
        }
    }
}

/// The servant `Poa::locate` found for a request, with what must last as
/// long as the request.
struct Located {
    servant: Arc<dyn Servant>,
    /// A servant locator's, for `postinvoke`.
    cookie: Option<(Arc<dyn ServantLocator>, Cookie)>,
    /// The request counted in on its active object (found in the active
    /// object map).
    in_object: Option<ObjectRequest>,
    /// The request counted in on its POA.
    in_poa: PoaActivity,
}

impl Poa {
    /// The servant for a request counted in (`in_poa`) and admitted by the
    /// POA manager.
    fn locate(
        &self,
        key: &ObjectKey,
        operation: &str,
        in_poa: PoaActivity,
    ) -> Result<Located, ServantManagerError> {
        let p = self.inner.policies;
        let oid = &key.object_id;
        let (default, manager, in_poa) = {
            let state = self.inner.state.read();
            if state.destroyed {
                return Err(not_exist().into());
            }
            if p.retains() {
                let found = state
                    .aom
                    .get_by_slot(key.object_slot, oid.as_bytes())
                    .or_else(|| state.aom.get(oid.as_bytes()).map(|(_, e)| e));
                match found {
                    Some(entry) if entry.is_active() => {
                        return Ok(Located {
                            servant: entry.servant.clone(),
                            cookie: None,
                            in_object: Some(entry.activity.enter(self)),
                            in_poa,
                        });
                    }
                    // Deactivating: the servant activator may incarnate it
                    // only once it has been etherealized.
                    Some(_)
                        if matches!(state.servant_manager, Some(ServantManager::Activator(_))) =>
                    {
                        return Err(deactivating().into());
                    }
                    _ => {}
                }
            }
            (
                state.default_servant.clone(),
                state.servant_manager.clone(),
                in_poa,
            )
        };
        let found = |servant, cookie, in_object| Located {
            servant,
            cookie,
            in_object,
            in_poa,
        };
        match p.request_processing {
            RequestProcessingPolicy::UseActiveObjectMapOnly => Err(not_exist().into()),
            RequestProcessingPolicy::UseDefaultServant => default
                .map(|s| found(s, None, None))
                .ok_or_else(|| obj_adapter().into()),
            RequestProcessingPolicy::UseServantManager => match manager {
                None => Err(obj_adapter().into()),
                Some(ServantManager::Locator(locator)) => {
                    let (servant, cookie) = contain(CompletionStatus::No, || {
                        locator.preinvoke(oid, self, operation)
                    })?;
                    Ok(found(servant, Some((locator, cookie)), None))
                }
                Some(ServantManager::Activator(activator)) => self
                    .incarnate(oid, &activator)
                    .map(|(servant, in_object)| found(servant, None, Some(in_object))),
            },
        }
    }

    /// Incarnates `oid` once, even when several requests for it arrive
    /// together: the others wait and then find it in the map. Returns the
    /// servant with the request counted in on the object.
    fn incarnate(
        &self,
        oid: &ObjectId,
        activator: &Arc<dyn ServantActivator>,
    ) -> Result<(Arc<dyn Servant>, ObjectRequest), ServantManagerError> {
        {
            let mut busy = self.inner.incarnating.lock();
            while busy.contains(oid) {
                self.inner.incarnated.wait(&mut busy);
            }
            if let Some((_, entry)) = self.inner.state.read().aom.get(oid.as_bytes()) {
                if !entry.is_active() {
                    return Err(deactivating().into());
                }
                return Ok((entry.servant.clone(), entry.activity.enter(self)));
            }
            busy.insert(oid.clone());
        }
        let incarnated = contain(CompletionStatus::No, || activator.incarnate(oid, self));
        let result = incarnated.and_then(|servant| {
            let mut state = self.inner.state.write();
            let unique = self.inner.policies.id_uniqueness == IdUniquenessPolicy::UniqueId;
            if unique && state.aom.has_servant(&servant) {
                return Err(obj_adapter().into());
            }
            let slot = state.aom.insert(oid.clone(), servant.clone());
            let in_object = state
                .aom
                .get_by_slot(slot, oid.as_bytes())
                .map(|entry| entry.activity.enter(self))
                .ok_or_else(|| ServantManagerError::from(obj_adapter()))?;
            Ok((servant, in_object))
        });
        self.finish_incarnation(oid);
        result
    }

    fn finish_incarnation(&self, oid: &ObjectId) {
        self.inner.incarnating.lock().remove(oid);
        self.inner.incarnated.notify_all();
    }
}
