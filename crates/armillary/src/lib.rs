//! Armillary, a CORBA ORB for Rust: it calls and serves CORBA objects over
//! GIOP/IIOP, with omniORB, TAO, JacORB or another Armillary at the other
//! end.
//!
//! An application compiles its IDL from `build.rs` with
//! `armillary_idl::Builder` and brings the generated code in with
//! [`include_idl!`]. A server implements the generated servant trait and
//! activates it in a [`Poa`](poa::Poa); a client turns a stringified
//! reference into an [`ObjectRef`] and narrows it to the generated stub,
//! whose methods return the operation's typed error.
//!
//! The types an application touches:
//! - [`Orb`]: the ORB, its options ([`config::OrbConfig`]), initial
//!   references, stringified references, `run` and `shutdown`;
//! - [`ObjectRef`]: a reference to a CORBA object and the calls made on it;
//! - [`poa::Poa`], [`poa::PoaManager`] and [`poa::PoaCurrent`]: the
//!   Portable Object Adapter, which maps objects to servants;
//! - [`Servant`] and [`ServerRequest`]: the server side of a call (the
//!   generated skeletons implement them);
//! - [`UserException`] and [`SystemException`]: what a call can raise;
//! - [`IdlType`], [`Any`], [`DynValue`], [`TypeCode`], [`Fixed`] and
//!   [`LongDouble`]: the values IDL types map to (a [`DynValue`] is the
//!   value inside an [`Any`], for types known only at run time);
//! - [`Endpoint`]: an address the server listens on (a [`SocketAddr`]
//!   when its host is an IP address).
//!
//! The wire layer lives in [`armillary_giop`], re-exported as [`giop`];
//! its CDR codec, [`giop::cdr`], is how an application encodes a value to
//! bytes or decodes one (below). What generated code needs besides (the
//! invocation hooks) is in [`runtime`], which is not for applications.
//!
//! What the ORB does (requests on each side, connections, refusals,
//! panicking servants) is reported through the `tracing` crate: [`trace`]
//! lists every span and event. Nothing is printed unless the application
//! installs a subscriber (`-ORBTraceLevel` says how much it should show:
//! [`config::TraceLevel`]). With `-ORBMetricsEndpoint` the server's
//! counters and per-operation request metrics are served for Prometheus
//! ([`metrics`]).
//!
//! [`SocketAddr`]: std::net::SocketAddr
//!
//! # Encoding values with CDR
//!
//! Every type the IDL compiler generates, and the Rust type of every basic
//! IDL type, implements [`CdrEncode`](giop::cdr::CdrEncode) and
//! [`CdrDecode`](giop::cdr::CdrDecode): write values with a
//! [`CdrWriter`](giop::cdr::CdrWriter) and read them back with a
//! [`CdrReader`](giop::cdr::CdrReader) of the same byte order and GIOP
//! version, in the same order. (To keep a value apart from any message,
//! in a file say, write it as an encapsulation, which begins with its own
//! byte order: `CdrWriter::write_encapsulation`,
//! `CdrReader::read_encapsulation`.)
//!
//! ```
//! use armillary::giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
//! use armillary::giop::{ByteOrder, GiopVersion};
//!
//! # fn main() -> Result<(), CdrError> {
//! let prices: Vec<i32> = vec![4217, 1999];
//! let mut writer = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
//! writer.write_string("ACME")?;
//! prices.encode(&mut writer)?;
//! let bytes = writer.into_bytes();
//! assert_eq!(bytes.len(), 4 + 5 + 3 + 4 + 2 * 4); // length, text, padding, count, longs
//!
//! let mut reader = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
//! assert_eq!(reader.read_string()?, "ACME");
//! assert_eq!(Vec::<i32>::decode(&mut reader)?, prices);
//! # Ok(())
//! # }
//! ```
//!
//! # Example: a server and a client
//!
//! The IDL, `quoter.idl`:
//!
//! ```idl
//! module Stock {
//!     exception Invalid_Stock_Symbol {};
//!     interface Quoter {
//!         long get_quote (in string stock_name) raises (Invalid_Stock_Symbol);
//!     };
//! };
//! ```
//!
//! compiled from `build.rs`:
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     armillary_idl::Builder::new()
//!         .file("quoter.idl")
//!         .compile()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! and included in the crate:
//!
//! ```ignore
//! // src/lib.rs
//! pub mod generated {
//!     armillary::include_idl!("quoter"); // $OUT_DIR/quoter.rs
//! }
//! ```
//!
//! A server implements the generated servant trait and activates it
//! through the skeleton, which gives the typed reference; a client narrows
//! a reference to the generated stub and matches the operation's typed
//! error. Here both run in one ORB, the way the README shows them:
//!
//! ```
//! # use armillary_quoter::generated;
//! use armillary::Orb;
//! use generated::stock::{quoter::GetQuoteError, InvalidStockSymbol};
//! use generated::stock::{Quoter, QuoterServant, QuoterSkeleton};
//!
//! struct Prices;
//! impl QuoterServant for Prices {
//!     fn get_quote(&self, stock_name: String) -> Result<i32, GetQuoteError> {
//!         // Inside an upcall, the object's own typed reference (C++ `_this()`);
//!         // a PoaError converts into the operation's error with `?`.
//!         let _me: Quoter = armillary::poa::PoaCurrent.this()?;
//!         match stock_name.as_str() {
//!             "ACME" => Ok(4217),
//!             _ => Err(GetQuoteError::InvalidStockSymbol(InvalidStockSymbol {})),
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The server: activate the servant and publish its reference.
//! let (orb, _args) = Orb::init(std::env::args())?;
//! let poa = orb.root_poa();
//! poa.manager().activate()?;
//! let skeleton = QuoterSkeleton::new(Prices);
//! let _prices = skeleton.servant().clone(); // an Arc<Prices>, still usable after activation
//! let quoter: Quoter = skeleton.activate(&poa)?;
//! let ior = orb.object_to_string(quoter.as_object());
//! println!("{ior}");
//!
//! // The client: from the stringified reference to the typed stub.
//! let quoter = Quoter::narrow(&orb.string_to_object(&ior)?)?.expect("a Stock::Quoter");
//! for symbol in ["ACME", "UMBRELLA"] {
//!     match quoter.get_quote(symbol) {
//!         Ok(cents) => println!("{symbol}: {cents}"),
//!         Err(GetQuoteError::InvalidStockSymbol(_)) => println!("{symbol}: unknown"),
//!         Err(GetQuoteError::System(e)) => eprintln!("{symbol}: {e}"),
//!     }
//! }
//! # assert_eq!(quoter.get_quote("ACME")?, 4217);
//! # assert!(matches!(
//! #     quoter.get_quote("UMBRELLA"),
//! #     Err(GetQuoteError::InvalidStockSymbol(_))
//! # ));
//!
//! // Shut down: waits for running requests, then closes the connections.
//! orb.shutdown(armillary::WaitForCompletion::Yes)?;
//! # Ok(())
//! # }
//! ```
//!
//! `examples/quoter` in the repository is the same application as two
//! programs, `quoter-server` and `quoter-client`.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]
// The build.rs example of the crate docs shows its `fn main`, as the file has.
#![allow(clippy::needless_doctest_main)]

pub mod amh;
pub mod ami;
mod collocation;
mod completion;
pub mod config;
pub mod dii;
pub mod dsi;
mod endpoint;
mod error;
mod exception;
mod fast_map;
mod idl_type;
pub mod interceptors;
mod invocation;
mod local_server;
pub mod metrics;
mod net;
mod object;
mod object_id;
mod orb;
mod owed_reply;
mod pacer;
mod pending;
pub mod poa;
mod reactor;
mod request_count;
mod request_filter;
pub mod runtime;
mod servant;
mod slots;
mod task_queue;
mod thread_key;
mod thread_role;
mod timeout;
pub mod tls;
pub mod trace;
mod transport;

pub use armillary_giop as giop;
pub use completion::WaitForCompletion;
pub use dii::{Request, RequestError};
pub use endpoint::Endpoint;
pub use exception::UserException;
pub use idl_type::IdlType;
pub use object::{Interface, Location, ObjectRef};
pub use orb::{Orb, OrbError, ReferenceError};
pub use request_filter::{LaneConfig, RequestFilter, RequestInfo, Route};
pub use servant::{IntoServant, Servant, ServerRequest};
pub use timeout::{CallTimeout, CallTimeoutGuard};
pub use transport::server::ServerStats;

pub use armillary_giop::system_exception::{
    minor, CompletionStatus, SystemException, SystemExceptionKind,
};

pub use armillary_giop::any::Any;
/// The value an [`Any`] holds, as a tree that follows its TypeCode:
///
/// ```
/// use armillary::giop::typecode::TCKind;
/// use armillary::{Any, DynValue, TypeCode};
///
/// let symbol = Any::from("ACME");
/// assert_eq!(symbol.value, DynValue::String("ACME".into()));
///
/// // A sequence<long>, built at run time.
/// let prices = Any::new(
///     TypeCode::sequence(TypeCode::simple(TCKind::Long), 0),
///     DynValue::Sequence(vec![DynValue::Long(4217), DynValue::Long(1999)]),
/// )
/// .unwrap();
/// let DynValue::Sequence(items) = &prices.value else {
///     unreachable!("a sequence<long> holds a sequence")
/// };
/// assert_eq!(items[0], DynValue::Long(4217));
/// ```
pub use armillary_giop::any::DynValue;
pub use armillary_giop::cdr::{Fixed, LongDouble};
pub use armillary_giop::typecode::TypeCode;
/// A `sequence<octet>` in the IDL compiler's `octet_sequences_as_bytes`
/// mapping: a received one of 1 KiB or more is a slice of the message it
/// came in, not a copy (see [`CdrReader::read_octet_seq_shared`](crate::runtime::CdrReader::read_octet_seq_shared)).
pub use bytes::Bytes;
