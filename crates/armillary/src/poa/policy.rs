//! The seven standard POA policies and the checked combination a POA is
//! created with.

/// Which threads may run requests for a POA's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThreadPolicy {
    /// The ORB's concurrency model decides (default).
    #[default]
    OrbControlled,
    /// At most one request at a time for the whole POA (re-entrant for
    /// nested upcalls on the same thread). A request for the POA that
    /// another thread takes while an upcall of the POA waits for a reply
    /// (a callback: A's servant calls B, which calls A back) runs on the
    /// waiting thread, inside its wait, in every concurrency model: never
    /// two upcalls of the POA at once, and no deadlock.
    SingleThread,
    /// Requests run only on the thread that runs the ORB's main loop; in
    /// Armillary they are serialised like `SingleThread`.
    MainThread,
}

/// Whether references outlive the POA instance that made them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LifespanPolicy {
    /// References die with the POA (default).
    #[default]
    Transient,
    /// References stay valid across server restarts (with a fixed endpoint).
    Persistent,
}

/// Whether a servant may incarnate more than one object id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdUniquenessPolicy {
    /// One id per servant (default).
    #[default]
    UniqueId,
    /// A servant may serve many ids.
    MultipleId,
}

/// Who chooses object ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdAssignmentPolicy {
    /// The application.
    UserId,
    /// The POA (default).
    #[default]
    SystemId,
}

/// Whether the POA remembers which servant serves which id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServantRetentionPolicy {
    /// An active object map (default).
    #[default]
    Retain,
    /// No map: a default servant or servant locator serves every request.
    NonRetain,
}

/// How the POA finds a servant for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestProcessingPolicy {
    /// Only the active object map (default).
    #[default]
    UseActiveObjectMapOnly,
    /// The map, then the default servant.
    UseDefaultServant,
    /// The map, then the servant activator (RETAIN) or locator (NON_RETAIN).
    UseServantManager,
}

/// Whether `servant_to_reference` may activate a servant on the fly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImplicitActivationPolicy {
    /// Yes (only with SYSTEM_ID and RETAIN).
    ImplicitActivation,
    /// No (default).
    #[default]
    NoImplicitActivation,
}

/// One policy, as passed to [`Poa::create_poa`](super::Poa::create_poa).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Policy {
    /// `ThreadPolicy` (`create_thread_policy`).
    Thread(ThreadPolicy),
    /// `LifespanPolicy`.
    Lifespan(LifespanPolicy),
    /// `IdUniquenessPolicy`.
    IdUniqueness(IdUniquenessPolicy),
    /// `IdAssignmentPolicy`.
    IdAssignment(IdAssignmentPolicy),
    /// `ServantRetentionPolicy`.
    ServantRetention(ServantRetentionPolicy),
    /// `RequestProcessingPolicy`.
    RequestProcessing(RequestProcessingPolicy),
    /// `ImplicitActivationPolicy`.
    ImplicitActivation(ImplicitActivationPolicy),
    /// Armillary's own: the server concurrency model that runs this POA's
    /// requests, instead of the ORB's (see
    /// [`Policies::concurrency`]).
    Concurrency(crate::config::ConcurrencyModel),
}

/// The complete set of policies of one POA, every one given or defaulted
/// ([`Poa::policies`](super::Poa::policies)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Policies {
    /// Which threads run the POA's requests.
    pub thread: ThreadPolicy,
    /// Whether references outlive the POA instance.
    pub lifespan: LifespanPolicy,
    /// Whether a servant may serve several ids.
    pub id_uniqueness: IdUniquenessPolicy,
    /// Who chooses object ids.
    pub id_assignment: IdAssignmentPolicy,
    /// Whether the POA keeps an active object map.
    pub servant_retention: ServantRetentionPolicy,
    /// How the POA finds a servant for a request.
    pub request_processing: RequestProcessingPolicy,
    /// Whether servants may be activated implicitly.
    pub implicit_activation: ImplicitActivationPolicy,
    /// The concurrency model that runs this POA's requests (`None`: the
    /// ORB's, the default). The ORB's model still decides which threads
    /// read the connections; the POA's decides where its requests run
    /// once read. A model that runs requests on the thread that read them
    /// (`SingleThreadedReactive`, `ThreadPool`, `ThreadPerConnection[UpTo]`,
    /// `ApplicationThreads`) runs them there; `ThreadPerRequest`,
    /// `WorkerPool` and `ThreadPerObject` hand them to their own threads,
    /// started on the POA's first request and shared by every POA that
    /// chose the same model. A child POA does not inherit its parent's.
    /// A request filter's route comes first: the POA's model runs the
    /// requests the filter leaves to it (`Route::Default`, see
    /// [`RequestFilter`](crate::RequestFilter)).
    ///
    /// ```
    /// use armillary::config::ConcurrencyModel;
    /// use armillary::poa::Policy;
    /// let orb = armillary::Orb::with_config(armillary::config::OrbConfig::default()).unwrap();
    /// let root = orb.root_poa();
    /// let slow = root
    ///     .create_poa(
    ///         "slow",
    ///         None,
    ///         &[Policy::Concurrency(ConcurrencyModel::WorkerPool { workers: 4, queue: 64 })],
    ///     )
    ///     .unwrap();
    /// assert_eq!(
    ///     slow.policies().concurrency,
    ///     Some(ConcurrencyModel::WorkerPool { workers: 4, queue: 64 })
    /// );
    /// ```
    pub concurrency: Option<crate::config::ConcurrencyModel>,
}

impl Policies {
    /// The root POA's policies: the defaults, with implicit activation.
    pub(crate) fn root() -> Self {
        Policies {
            implicit_activation: ImplicitActivationPolicy::ImplicitActivation,
            ..Policies::default()
        }
    }

    /// Applies `list` over the defaults and checks the combination (CORBA
    /// 3.0 §11.3.8.2). The error holds the index of the offending policy.
    pub(crate) fn from_list(list: &[Policy]) -> Result<Self, usize> {
        let mut p = Policies::default();
        for policy in list {
            match *policy {
                Policy::Thread(v) => p.thread = v,
                Policy::Lifespan(v) => p.lifespan = v,
                Policy::IdUniqueness(v) => p.id_uniqueness = v,
                Policy::IdAssignment(v) => p.id_assignment = v,
                Policy::ServantRetention(v) => p.servant_retention = v,
                Policy::RequestProcessing(v) => p.request_processing = v,
                Policy::ImplicitActivation(v) => p.implicit_activation = v,
                Policy::Concurrency(v) => p.concurrency = Some(v),
            }
        }
        let position = |pred: &dyn Fn(&Policy) -> bool| list.iter().position(pred).unwrap_or(0);
        if p.servant_retention == ServantRetentionPolicy::NonRetain
            && p.request_processing == RequestProcessingPolicy::UseActiveObjectMapOnly
        {
            return Err(position(&|x| matches!(x, Policy::ServantRetention(_))));
        }
        if p.request_processing == RequestProcessingPolicy::UseDefaultServant
            && p.id_uniqueness != IdUniquenessPolicy::MultipleId
        {
            return Err(position(&|x| matches!(x, Policy::RequestProcessing(_))));
        }
        if p.implicit_activation == ImplicitActivationPolicy::ImplicitActivation
            && (p.id_assignment != IdAssignmentPolicy::SystemId
                || p.servant_retention != ServantRetentionPolicy::Retain)
        {
            return Err(position(&|x| matches!(x, Policy::ImplicitActivation(_))));
        }
        Ok(p)
    }

    /// True when the POA keeps an active object map.
    pub fn retains(&self) -> bool {
        self.servant_retention == ServantRetentionPolicy::Retain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_combinations_name_the_policy() {
        assert!(Policies::from_list(&[]).is_ok());
        assert_eq!(
            Policies::from_list(&[
                Policy::Lifespan(LifespanPolicy::Persistent),
                Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
            ]),
            Err(1)
        );
        assert_eq!(
            Policies::from_list(&[Policy::RequestProcessing(
                RequestProcessingPolicy::UseDefaultServant
            )]),
            Err(0)
        );
        assert_eq!(
            Policies::from_list(&[
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
                Policy::ImplicitActivation(ImplicitActivationPolicy::ImplicitActivation),
            ]),
            Err(1)
        );
    }
}
