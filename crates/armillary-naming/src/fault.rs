//! [`Fault`]: what a naming operation can fail with, one type for the
//! code shared by every operation, converted to and from the error enum
//! that the generated code has for each operation.

use armillary::{CompletionStatus, SystemException};

use crate::cos_naming::naming_context::{
    AlreadyBound, BindContextError, BindError, BindNewContextError, CannotProceed, InvalidName,
    NotFound, RebindContextError, RebindError, ResolveError, UnbindError,
};
use crate::cos_naming::naming_context_ext::ResolveStrError;
use crate::minor;
use crate::name::NameError;

/// The user exceptions of `CosNaming::NamingContext`'s name operations,
/// or a system exception.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fault {
    NotFound(NotFound),
    CannotProceed(CannotProceed),
    InvalidName,
    AlreadyBound,
    System(SystemException),
}

impl From<NameError> for Fault {
    fn from(_: NameError) -> Self {
        Fault::InvalidName
    }
}

impl From<SystemException> for Fault {
    fn from(e: SystemException) -> Self {
        Fault::System(e)
    }
}

/// AlreadyBound from an operation that cannot raise it: a bug here, which
/// the client sees as INTERNAL rather than as a wrong exception.
fn impossible() -> SystemException {
    SystemException::internal(minor::UNEXPECTED_ALREADY_BOUND, CompletionStatus::Maybe)
}

/// `From<Fault>` for an operation's error enum and `From` it for `Fault`.
macro_rules! convert {
    ($error:ident, with AlreadyBound) => {
        impl From<Fault> for $error {
            fn from(fault: Fault) -> Self {
                match fault {
                    Fault::NotFound(e) => $error::NotFound(e),
                    Fault::CannotProceed(e) => $error::CannotProceed(e),
                    Fault::InvalidName => $error::InvalidName(InvalidName {}),
                    Fault::AlreadyBound => $error::AlreadyBound(AlreadyBound {}),
                    Fault::System(e) => $error::System(e),
                }
            }
        }

        impl From<$error> for Fault {
            fn from(error: $error) -> Self {
                match error {
                    $error::NotFound(e) => Fault::NotFound(e),
                    $error::CannotProceed(e) => Fault::CannotProceed(e),
                    $error::InvalidName(_) => Fault::InvalidName,
                    $error::AlreadyBound(_) => Fault::AlreadyBound,
                    $error::System(e) => Fault::System(e),
                }
            }
        }
    };
    ($error:ident) => {
        impl From<Fault> for $error {
            fn from(fault: Fault) -> Self {
                match fault {
                    Fault::NotFound(e) => $error::NotFound(e),
                    Fault::CannotProceed(e) => $error::CannotProceed(e),
                    Fault::InvalidName => $error::InvalidName(InvalidName {}),
                    Fault::AlreadyBound => $error::System(impossible()),
                    Fault::System(e) => $error::System(e),
                }
            }
        }

        impl From<$error> for Fault {
            fn from(error: $error) -> Self {
                match error {
                    $error::NotFound(e) => Fault::NotFound(e),
                    $error::CannotProceed(e) => Fault::CannotProceed(e),
                    $error::InvalidName(_) => Fault::InvalidName,
                    $error::System(e) => Fault::System(e),
                }
            }
        }
    };
}

convert!(BindError, with AlreadyBound);
convert!(BindContextError, with AlreadyBound);
convert!(BindNewContextError, with AlreadyBound);
convert!(ResolveStrError, with AlreadyBound);
convert!(RebindError);
convert!(RebindContextError);
convert!(ResolveError);
convert!(UnbindError);
