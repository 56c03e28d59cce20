//! The error an ORB's setup can fail with ([`OrbError`]), in a module of
//! its own so that the transport can report it without depending on the
//! ORB.

use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use crate::config::OrbOptionError;

/// Why an ORB could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OrbError {
    /// A bad `-ORB…` option.
    #[error(transparent)]
    Option(#[from] OrbOptionError),
    /// A listening endpoint could not be opened.
    #[error("cannot listen on {endpoint}: {source}")]
    Listen {
        /// The endpoint as configured.
        endpoint: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The TLS configuration cannot be used (files, certificates, keys).
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// The ORB has been shut down or destroyed: it starts no server and
    /// publishes no endpoints any more.
    #[error("the ORB has been shut down")]
    Destroyed,
}

/// The system exception an ORB error becomes when it crosses an operation
/// (`?` in a servant method or in code that returns `SystemException`).
/// Every mapping is COMPLETED_NO: nothing was done.
///
/// | `OrbError` | system exception |
/// |---|---|
/// | `Option`, `Listen`, `Tls` | INITIALIZE, minor 0 (the ORB cannot be set up as configured) |
/// | `Destroyed` | BAD_INV_ORDER, minor 4 (`minor::ORB_SHUT_DOWN`) |
///
/// ```
/// use armillary::{minor, OrbError, SystemException, SystemExceptionKind};
///
/// let e = SystemException::from(OrbError::Destroyed);
/// assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
/// assert_eq!(e.minor(), minor::ORB_SHUT_DOWN);
/// ```
impl From<OrbError> for SystemException {
    fn from(error: OrbError) -> SystemException {
        match error {
            OrbError::Option(_) | OrbError::Listen { .. } | OrbError::Tls(_) => {
                SystemException::initialize(0, CompletionStatus::No)
            }
            OrbError::Destroyed => {
                SystemException::bad_inv_order(minor::ORB_SHUT_DOWN, CompletionStatus::No)
            }
        }
    }
}
