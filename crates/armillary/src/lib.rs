//! Armillary, a CORBA ORB for Rust.
//!
//! This crate is what applications and generated code link against:
//! - [`ObjectRef`]: a reference to a CORBA object and the calls made on it;
//! - [`Servant`] and [`ServerRequest`]: the server side of a call;
//! - [`UserException`] and [`SystemException`]: what a call can raise.
//!
//! The wire layer lives in [`armillary_giop`], re-exported as [`giop`]; the
//! CDR types that generated code touches are re-exported as [`cdr`].

#![forbid(unsafe_code)]

pub mod collocated;
mod completion;
pub mod config;
mod endpoint;
mod exception;
mod idl_type;
pub mod net;
mod object;
mod orb;
pub mod poa;
mod reactor;
mod servant;
pub mod slots;
pub mod tls;
mod transport;

pub use armillary_giop as giop;
pub use completion::WaitForCompletion;
pub use endpoint::Endpoint;
pub use exception::UserException;
pub use idl_type::IdlType;
pub use object::{
    Interface, Invoker, Location, ObjectRef, OutgoingRequest, ReplyBody, ReplyMessage, ReplyOutcome,
};
pub use orb::{Orb, OrbError, ReferenceError};
pub use servant::{IntoServant, Servant, ServerRequest};
pub use transport::server::ServerStats;

pub use armillary_giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};

/// The CDR types that generated code uses, under one short path.
pub mod cdr {
    pub use armillary_giop::any::Any;
    pub use armillary_giop::cdr::{
        CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, CodeSets, Fixed, LongDouble,
    };
    pub use armillary_giop::typecode::TypeCode;
    pub use armillary_giop::{ByteOrder, GiopVersion};
}
