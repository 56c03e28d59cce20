//! The threading framework (MT-Orbix's "thread filter", in the Visibroker
//! survey of threading architectures): the public [`RequestFilter`], what
//! it sees ([`RequestInfo`]) and decides ([`Route`]), and the lanes it may
//! send requests to ([`LaneConfig`]). The server carries the decisions out
//! (`transport/server/lanes.rs`).
//!
//! **Precedence: the filter first, then the POA's model, then the ORB's.**
//! The filter is the application's decision about one request, made with
//! its target POA in view ([`RequestInfo::poa_path`]); a POA's
//! `Policy::Concurrency` is a standing choice for all its requests. So a
//! route the filter chooses (a lane, a new thread, the I/O thread, a
//! rejection) is where the request runs, whatever model its POA chose, and
//! [`Route::Default`] leaves it to the POA's model (or the ORB's, when the
//! POA chose none). A filter that wants a POA's requests to run as the POA
//! says answers `Default` for them. The route holds for the request's
//! whole life: a request a holding POA manager parks runs where its route
//! says once released (the filter is not asked again). A POA's
//! SINGLE_THREAD_MODEL is no model but a serialisation: it holds wherever
//! the request runs.

use std::net::SocketAddr;
use std::sync::Arc;

use armillary_giop::giop::ServiceContext;
use armillary_giop::system_exception::SystemException;

use crate::object_id::ObjectId;

/// Decides where each request runs: the threading framework (MT-Orbix's
/// "thread filter", in the Visibroker
/// survey of threading architectures): a [`RequestFilter`] the application
/// installs with [`OrbConfig::request_filter`](crate::config::OrbConfig::request_filter)
/// sees each request the server reads — its target, operation, client and
/// service contexts — and decides where it runs ([`Route`]): where the
/// ORB's concurrency model would run it, on a named *lane* (a pool of
/// threads configured with [`OrbConfig::lane`](crate::config::OrbConfig::lane)),
/// on a thread of its own, on the thread that read it, or nowhere (the
/// client gets the exception the filter chose, TRANSIENT when overloaded
/// for example).
///
/// ```
/// use armillary::config::OrbConfig;
/// use armillary::giop::system_exception::{CompletionStatus, SystemException};
/// use armillary::{RequestInfo, Route};
///
/// let config = OrbConfig::new()
///     .lane("slow", 4)
///     .request_filter(|request: &RequestInfo<'_>| match request.operation() {
///         "report" => Route::Lane("slow".into()),
///         "ping" => Route::IoThread,
///         "forbidden" => Route::Reject(SystemException::no_permission(0, CompletionStatus::No)),
///         _ => Route::Default,
///     });
/// assert_eq!(config.get_lanes().len(), 1);
/// ```
///
/// The filter runs on the thread that read the request, before the POA
/// looks for the servant: it should decide quickly and never block. What
/// it decides holds for that one request, before the target POA's own
/// model (`Policy::Concurrency`), which only `Route::Default` defers to
/// (see the module docs); the POA's SINGLE_THREAD_MODEL still serializes
/// a POA's upcalls wherever they run.
///
/// A closure `Fn(&RequestInfo<'_>) -> Route` is a filter.
pub trait RequestFilter: Send + Sync + 'static {
    /// Where `request` runs. Called on the thread that read it, before
    /// the POA looks for its servant; it should not block.
    fn route(&self, request: &RequestInfo<'_>) -> Route;
}

impl<F> RequestFilter for F
where
    F: Fn(&RequestInfo<'_>) -> Route + Send + Sync + 'static,
{
    fn route(&self, request: &RequestInfo<'_>) -> Route {
        self(request)
    }
}

/// Where a request runs, as a [`RequestFilter`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Route {
    /// Where the target POA's concurrency model (`Policy::Concurrency`)
    /// runs it, or the ORB's when the POA chose none. Every other route
    /// comes before the POA's model.
    Default,
    /// On the lane (a pool of threads) of this name, in the order the
    /// lane received its requests. A lane the configuration does not name
    /// answers OBJ_ADAPTER ([`minor::UNKNOWN_LANE`](armillary_giop::system_exception::minor::UNKNOWN_LANE)).
    Lane(String),
    /// On a new thread, which ends with the request. If the system
    /// refuses a thread the client gets TRANSIENT
    /// ([`minor::NO_THREAD`](armillary_giop::system_exception::minor::NO_THREAD)).
    NewThread,
    /// On the thread that read it, before that thread reads anything
    /// more: for short operations that must not wait for a worker.
    IoThread,
    /// Not at all: a two-way request is answered with this exception
    /// (completion status NO is right: nothing ran); a oneway is dropped.
    Reject(SystemException),
}

/// What a [`RequestFilter`] sees of a request.
#[derive(Debug)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    pub(crate) operation: &'a str,
    pub(crate) object_key: &'a [u8],
    pub(crate) target: Option<(Vec<String>, ObjectId)>,
    pub(crate) client: Option<SocketAddr>,
    pub(crate) service_contexts: &'a [ServiceContext],
    pub(crate) request_id: u32,
    pub(crate) response_expected: bool,
}

impl<'a> RequestInfo<'a> {
    /// The operation's name.
    pub fn operation(&self) -> &'a str {
        self.operation
    }

    /// The object key, as the request carried it.
    pub fn object_key(&self) -> &'a [u8] {
        self.object_key
    }

    /// The target object's id within its POA, when the key is a POA key.
    pub fn object_id(&self) -> Option<&ObjectId> {
        self.target.as_ref().map(|(_, id)| id)
    }

    /// The target POA's full name (its ancestors' names from below the
    /// root down, then its own; empty for the root POA), when the key is a
    /// POA key.
    pub fn poa_path(&self) -> Option<&[String]> {
        self.target.as_ref().map(|(path, _)| path.as_slice())
    }

    /// The client's address (the connection's peer), when known.
    pub fn client(&self) -> Option<SocketAddr> {
        self.client
    }

    /// The request's service contexts, as they travelled.
    pub fn service_contexts(&self) -> &'a [ServiceContext] {
        self.service_contexts
    }

    /// The data of the service context `id`, if the request carried one.
    pub fn service_context(&self, id: u32) -> Option<&'a [u8]> {
        self.service_contexts
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.data.as_slice())
    }

    /// The GIOP request id (unique per connection).
    pub fn request_id(&self) -> u32 {
        self.request_id
    }

    /// Whether the client waits for a reply (false for a oneway).
    pub fn response_expected(&self) -> bool {
        self.response_expected
    }
}

/// A lane: a named pool of threads that [`Route::Lane`] sends requests to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LaneConfig {
    /// The lane's name.
    pub name: String,
    /// Its threads (at least one).
    pub threads: usize,
}

/// The request filter an [`OrbConfig`](crate::config::OrbConfig) holds:
/// two are equal when they are the same filter.
#[derive(Clone, Default)]
pub(crate) struct FilterSlot(pub(crate) Option<Arc<dyn RequestFilter>>);

impl std::fmt::Debug for FilterSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(RequestFilter)"
        } else {
            "None"
        })
    }
}

impl PartialEq for FilterSlot {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for FilterSlot {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closures_are_filters_and_info_finds_service_contexts() {
        let filter: Arc<dyn RequestFilter> = Arc::new(|r: &RequestInfo<'_>| {
            if r.service_context(7).is_some() {
                Route::IoThread
            } else {
                Route::Lane(r.operation().to_owned())
            }
        });
        let contexts = [ServiceContext {
            id: 7,
            data: vec![1],
        }];
        let mut info = RequestInfo {
            operation: "op",
            object_key: b"key",
            target: None,
            client: None,
            service_contexts: &contexts,
            request_id: 1,
            response_expected: true,
        };
        assert_eq!(filter.route(&info), Route::IoThread);
        info.service_contexts = &[];
        assert_eq!(filter.route(&info), Route::Lane("op".into()));
        assert_eq!(info.object_id(), None);
        assert_eq!(FilterSlot(Some(filter.clone())), FilterSlot(Some(filter)));
    }
}
