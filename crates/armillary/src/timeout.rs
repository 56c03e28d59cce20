//! The relative round-trip timeout of client calls (CORBA Messaging's
//! `RelativeRoundtripTimeoutPolicy`) at its three levels, and the one
//! function that says which applies to a call.
//!
//! The levels and their precedence are documented on [`CallTimeout`],
//! the public face of this module.

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

thread_local! {
    /// The current thread's call timeout, if one is set.
    static THREAD_TIMEOUT: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// The relative round-trip timeout of client calls (CORBA Messaging's
/// `RelativeRoundtripTimeoutPolicy`) and its thread level (CORBA's
/// `PolicyCurrent`). It is set at three levels:
///
/// - **ORB**: [`OrbConfig::call_timeout`](crate::config::OrbConfig::call_timeout)
///   (`-ORBClientCallTimeout DURATION`), for every call the ORB makes.
/// - **Thread**: [`CallTimeout::set_for_thread`], for the calls the current
///   thread makes while the guard it returns lives (CORBA's `PolicyCurrent`).
/// - **Object reference**: [`ObjectRef::with_call_timeout`], for the calls
///   made through that reference (CORBA's `_set_policy_overrides`).
///
/// The innermost level that is set wins, as in CORBA Messaging: the
/// reference's, else the thread's, else the ORB's. A level set to
/// [`Duration::ZERO`] or [`Duration::MAX`] means "no limit" and still
/// overrides the outer levels. The time counts from the call's start
/// (connecting, waiting for a free slot on the connection, sending and
/// waiting for the reply included); a deferred request's counts from its
/// send. A call out of time fails with TIMEOUT, minor code
/// [`minor::CALL_TIMEOUT`](crate::minor::CALL_TIMEOUT), COMPLETED_MAYBE if
/// the request had left whole and COMPLETED_NO if it had not; its reply,
/// should it come later, is discarded. Calls to objects this ORB serves
/// itself run on the calling thread (collocated), and no timeout bounds
/// them, as in the example below.
///
/// ```
/// use std::time::Duration;
/// use armillary::config::OrbConfig;
/// use armillary::{CallTimeout, Interface, Orb};
/// # use armillary_quoter::{generated, QuoterImpl};
/// use generated::stock::{Quoter, QuoterSkeleton};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // The ORB level: every call this ORB makes.
/// let orb = Orb::with_config(OrbConfig::new().call_timeout(Duration::from_secs(5)))?;
/// # let poa = orb.root_poa();
/// # poa.manager().activate()?;
/// # let quoter: Quoter = QuoterSkeleton::new(QuoterImpl::default()).activate(&poa)?;
/// // The thread level: this thread's calls while `_thread` lives.
/// let _thread = CallTimeout::set_for_thread(Duration::from_secs(2));
/// assert_eq!(quoter.get_quote("ACME")?, 4217); // 2 s were it remote
/// // The reference level: a new typed reference to the same object.
/// let hasty: Quoter = quoter.with_call_timeout(Duration::from_millis(200));
/// assert_eq!(hasty.get_quote("ACME")?, 4217); // 200 ms were it remote
/// assert_eq!(hasty.as_object().call_timeout(), Some(Duration::from_millis(200)));
/// # orb.shutdown(armillary::WaitForCompletion::Yes)?;
/// # Ok(())
/// # }
/// ```
///
/// A thread's guards nest:
///
/// ```
/// use std::time::Duration;
/// use armillary::CallTimeout;
///
/// assert_eq!(CallTimeout::for_thread(), None);
/// {
///     let _outer = CallTimeout::set_for_thread(Duration::from_secs(2));
///     {
///         let _inner = CallTimeout::set_for_thread(Duration::from_millis(50));
///         assert_eq!(CallTimeout::for_thread(), Some(Duration::from_millis(50)));
///     }
///     // Dropping a guard restores what was set before it.
///     assert_eq!(CallTimeout::for_thread(), Some(Duration::from_secs(2)));
/// }
/// assert_eq!(CallTimeout::for_thread(), None);
/// ```
///
/// [`ObjectRef::with_call_timeout`]: crate::ObjectRef::with_call_timeout
#[derive(Debug)]
#[non_exhaustive]
pub struct CallTimeout;

impl CallTimeout {
    /// Sets the call timeout of the calls this thread makes until the
    /// returned guard is dropped, overriding the ORB's (a reference's own
    /// overrides it in turn). `Duration::ZERO` or `Duration::MAX`: no
    /// limit for this thread's calls, whatever the ORB says.
    #[must_use = "the timeout is unset again when the guard is dropped"]
    pub fn set_for_thread(timeout: Duration) -> CallTimeoutGuard {
        let previous = THREAD_TIMEOUT.with(|t| t.replace(Some(timeout)));
        CallTimeoutGuard {
            previous,
            _this_thread: PhantomData,
        }
    }

    /// The call timeout set for the current thread, if any.
    pub fn for_thread() -> Option<Duration> {
        THREAD_TIMEOUT.with(Cell::get)
    }
}

/// Restores the thread's previous call timeout when dropped (see
/// [`CallTimeout::set_for_thread`]). It belongs to the thread that made it.
#[derive(Debug)]
pub struct CallTimeoutGuard {
    previous: Option<Duration>,
    /// Not `Send`: the guard restores the state of its own thread.
    _this_thread: PhantomData<*const ()>,
}

impl Drop for CallTimeoutGuard {
    fn drop(&mut self) {
        THREAD_TIMEOUT.with(|t| t.set(self.previous));
    }
}

/// The timeout that applies to a call made now through a reference with
/// the override `reference`, on an ORB whose own timeout is `orb`: the
/// innermost level set wins (reference, thread, ORB). `None`: no limit.
pub(crate) fn effective(reference: Option<Duration>, orb: Option<Duration>) -> Option<Duration> {
    reference
        .or_else(CallTimeout::for_thread)
        .or(orb)
        .filter(|t| !t.is_zero() && *t != Duration::MAX)
}

/// When a call that starts now with `timeout` must end (`None`: never; a
/// timeout too long to represent is none).
pub(crate) fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_innermost_level_set_wins() {
        assert_eq!(effective(None, None), None);
        assert_eq!(effective(None, Some(S)), Some(S));
        assert_eq!(effective(Some(2 * S), Some(S)), Some(2 * S));
        let _thread = CallTimeout::set_for_thread(3 * S);
        assert_eq!(effective(None, Some(S)), Some(3 * S));
        assert_eq!(effective(None, None), Some(3 * S));
        assert_eq!(effective(Some(2 * S), Some(S)), Some(2 * S));
    }

    #[test]
    fn zero_and_max_mean_no_limit_yet_override() {
        assert_eq!(effective(Some(Duration::ZERO), Some(S)), None);
        assert_eq!(effective(Some(Duration::MAX), Some(S)), None);
        let _thread = CallTimeout::set_for_thread(Duration::ZERO);
        assert_eq!(effective(None, Some(S)), None);
        assert_eq!(effective(Some(S), None), Some(S));
        assert_eq!(deadline(Some(Duration::MAX)), None);
        assert!(deadline(Some(S)).is_some());
    }

    #[test]
    fn guards_restore_in_any_nesting_and_stay_on_their_thread() {
        let outer = CallTimeout::set_for_thread(S);
        let inner = CallTimeout::set_for_thread(2 * S);
        std::thread::spawn(|| assert_eq!(CallTimeout::for_thread(), None))
            .join()
            .unwrap();
        assert_eq!(CallTimeout::for_thread(), Some(2 * S));
        drop(inner);
        assert_eq!(CallTimeout::for_thread(), Some(S));
        drop(outer);
        assert_eq!(CallTimeout::for_thread(), None);
    }
}
