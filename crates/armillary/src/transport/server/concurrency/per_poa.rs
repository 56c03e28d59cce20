//! The POA-level choice of model (`Policy::Concurrency`): each request
//! runs as its POA's model says, or as the ORB's when its POA chose none.
//! The ORB's model alone decides who reads; a POA's model decides where
//! its requests run. A POA that chooses a model that runs requests on the
//! reading thread (`reactive`, `thread-pool`, `thread-per-connection`,
//! `application`) has them run there, whichever thread read them. The
//! models POAs choose are started on their first request and shared by
//! every POA that chose the same one. A request filter's route comes
//! first: only the requests it leaves to the model (`Route::Default`, or
//! no filter) come here (see `request_filter`).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{busy, for_model, ConnectionThreads, ResolvedRequest, ServerConcurrency};
use crate::completion::WaitForCompletion;
use crate::config::ConcurrencyModel;
use crate::poa::Poa;

/// The ORB's model, and those its POAs chose.
#[derive(Debug)]
pub(crate) struct PerPoa {
    orb_model: ConcurrencyModel,
    orb: Arc<dyn ServerConcurrency>,
    /// The models POAs chose, started on first use; `None` once stopped.
    chosen: Mutex<Option<HashMap<ConcurrencyModel, Arc<dyn ServerConcurrency>>>>,
}

impl PerPoa {
    /// Routes to `orb` (which implements `orb_model`) unless a POA chose
    /// another model.
    pub(crate) fn new(orb_model: ConcurrencyModel, orb: Arc<dyn ServerConcurrency>) -> PerPoa {
        PerPoa {
            orb_model,
            orb,
            chosen: Mutex::new(Some(HashMap::new())),
        }
    }

    /// The model `model` names, started if it is not yet; `None` when the
    /// server is stopping or its threads cannot start.
    fn chosen(&self, model: ConcurrencyModel) -> Option<Arc<dyn ServerConcurrency>> {
        let mut chosen = self.chosen.lock();
        let chosen = chosen.as_mut()?;
        if let Some(m) = chosen.get(&model) {
            return Some(m.clone());
        }
        let started = for_model(model).ok()?;
        chosen.insert(model, started.clone());
        Some(started)
    }
}

impl ServerConcurrency for PerPoa {
    fn reactor_threads(&self) -> usize {
        self.orb.reactor_threads()
    }

    fn driven_by_application(&self) -> bool {
        self.orb.driven_by_application()
    }

    fn connection_threads(&self) -> ConnectionThreads {
        self.orb.connection_threads()
    }

    /// The ORB's model decides: it reads, and a held reply is only ever
    /// one the reading thread wrote.
    fn coalesces_replies(&self) -> bool {
        self.orb.coalesces_replies()
    }

    /// The ORB's model decides: its threads read, before the POA is known.
    fn paces_oneways(&self) -> bool {
        self.orb.paces_oneways()
    }

    /// The ORB's model decides: its threads read, before the POA is known.
    fn promotes_followers(&self) -> bool {
        self.orb.promotes_followers()
    }

    fn runs_here(&self, poa: &Poa) -> bool {
        match poa.policies().concurrency {
            Some(model) if model != self.orb_model => self
                .chosen(model)
                .is_some_and(|chosen| chosen.runs_here(poa)),
            _ => self.orb.runs_here(poa),
        }
    }

    fn schedule(&self, request: ResolvedRequest) {
        match request.poa().policies().concurrency {
            Some(model) if model != self.orb_model => match self.chosen(model) {
                Some(chosen) => chosen.schedule(request),
                None => request.reject(busy()),
            },
            _ => self.orb.schedule(request),
        }
    }

    fn stop(&self, wait: WaitForCompletion) {
        self.orb.stop(wait);
        let chosen = self.chosen.lock().take().unwrap_or_default();
        for model in chosen.into_values() {
            model.stop(wait);
        }
    }
}
