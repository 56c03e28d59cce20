//! Armillary, a CORBA ORB for Rust.
//!
//! This crate is what applications and generated code link against:
//! - [`ObjectRef`]: a reference to a CORBA object and the calls made on it;
//! - [`Servant`] and [`ServerRequest`]: the server side of a call;
//! - [`UserException`] and [`SystemException`]: what a call can raise;
//! - [`IdlType`], [`Any`], [`TypeCode`], [`Fixed`] and [`LongDouble`]: the
//!   values IDL types map to.
//!
//! The wire layer lives in [`armillary_giop`], re-exported as [`giop`].
//! What generated code needs besides (the CDR codec, the invocation hooks)
//! is in [`runtime`], which is not for applications.

#![forbid(unsafe_code)]

pub mod collocated;
mod completion;
pub mod config;
mod exception;
mod idl_type;
pub mod net;
mod object;
mod orb;
pub mod poa;
mod reactor;
pub mod runtime;
mod servant;
pub mod slots;
pub mod tls;
mod transport;

pub use armillary_giop as giop;
pub use completion::WaitForCompletion;
pub use exception::UserException;
pub use idl_type::IdlType;
pub use object::{Interface, Location, ObjectRef};
pub use orb::{Orb, OrbError, ReferenceError};
pub use servant::{IntoServant, Servant, ServerRequest};
pub use transport::server::ServerStats;

pub use armillary_giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};

pub use armillary_giop::any::Any;
pub use armillary_giop::cdr::{Fixed, LongDouble};
pub use armillary_giop::typecode::TypeCode;
