//! The sans-IO wire layer of Armillary: everything about CORBA's bytes and
//! nothing about sockets, threads or clocks.
//!
//! - [`cdr`]: the Common Data Representation, code sets, `fixed`, `long double`.
//! - [`giop`]: GIOP 1.0–1.2 messages and the incremental [`giop::FrameDecoder`].
//! - [`ior`]: interoperable object references, `corbaloc:` and `corbaname:`.
//! - [`typecode`] and [`any`]: self-describing values.
//! - [`system_exception`]: the standard system exceptions and minor codes.
//!
//! Every decoder here takes untrusted bytes and answers with a typed error,
//! never a panic, and bounds what it allocates by the input's size.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

pub mod any;
pub mod cdr;
#[doc(hidden)]
pub mod fuzzing;
pub mod giop;
pub mod ior;
pub mod system_exception;
pub mod typecode;
mod version;

pub use cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, CodeSets, Fixed, LongDouble};
pub use version::{ByteOrder, GiopVersion};
