//! [`WaitForCompletion`]: the argument of every call that ends activity
//! (CORBA's `wait_for_completion` parameter), as a type instead of a
//! `bool`.

/// Whether a call that ends activity waits for the requests already
/// running to finish before it returns: [`Orb::shutdown`](crate::Orb::shutdown),
/// destroying a POA, and a POA manager's `hold_requests`,
/// `discard_requests` and `deactivate`.
///
/// Waiting from inside an upcall of the same ORB would wait for itself, so
/// such calls raise BAD_INV_ORDER there, as CORBA requires.
///
/// There is deliberately no conversion from `bool` (`true.into()` would
/// bring back the bare flag this type replaces); a `bool` from elsewhere
/// (a message, a setting) is matched:
///
/// ```
/// use armillary::WaitForCompletion;
///
/// let from_the_wire = true;
/// let wait = if from_the_wire { WaitForCompletion::Yes } else { WaitForCompletion::No };
/// assert!(wait.is_yes());
/// ```
///
/// ```compile_fail
/// let wait: armillary::WaitForCompletion = true.into();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "wait_for_completion")]
pub enum WaitForCompletion {
    /// Return only once the requests in progress have finished.
    Yes,
    /// Return at once; the requests in progress finish on their own.
    No,
}

impl WaitForCompletion {
    /// True for [`WaitForCompletion::Yes`].
    pub fn is_yes(self) -> bool {
        self == WaitForCompletion::Yes
    }
}
