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
//!
//! The `armillary` ORB is built on this crate and re-exports it as
//! `armillary::giop`; use it directly for tools that read or write CORBA's
//! bytes without an ORB (an IOR decoder, a protocol analyzer, a fuzzer).
//!
//! # Example
//!
//! From a `corbaloc:` URL to the object key, a GIOP 1.2 Request for it, and
//! back through the frame decoder as a server would receive it, in pieces:
//!
//! ```
//! use armillary_giop::giop::{FrameDecoder, MessageBody, MessageBuilder, RequestHeader, TargetAddress};
//! use armillary_giop::ior::ObjectUrl;
//! use armillary_giop::{ByteOrder, GiopVersion};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let url: ObjectUrl = "corbaloc:iiop:1.2@127.0.0.1:2809/Quoter".parse()?;
//! let ior = url.to_ior().expect("an IIOP address");
//! let profile = &ior.iiop_profiles()[0];
//! assert_eq!((profile.host.as_str(), profile.port), ("127.0.0.1", 2809));
//!
//! // The client writes `get_quote("ACME")`.
//! let header = RequestHeader {
//!     request_id: 1,
//!     response_flags: 3, // a reply is expected, after the upcall
//!     reserved: [0; 3],
//!     target: TargetAddress::Key(profile.object_key.as_slice().into()),
//!     operation: "get_quote".into(),
//!     service_contexts: Vec::new(),
//!     requesting_principal: Vec::new(),
//! };
//! let mut request = MessageBuilder::new(
//!     GiopVersion::V1_2,
//!     ByteOrder::Little,
//!     &MessageBody::Request(header),
//! )?;
//! request.body().write_string("ACME")?;
//! let bytes = request.finish(false);
//!
//! // The server reads a byte stream that arrives in arbitrary pieces.
//! let mut decoder = FrameDecoder::default();
//! let (first, rest) = bytes.split_at(7);
//! decoder.handle_bytes(first)?;
//! assert!(decoder.poll_frame().is_none());
//! decoder.handle_bytes(rest)?;
//! let frame = decoder.poll_frame().expect("one whole message");
//! let (message, mut args) = frame.decode()?;
//! match message.body {
//!     MessageBody::Request(request) => {
//!         assert_eq!(request.operation, "get_quote");
//!         assert_eq!(request.target.object_key(), Some(&b"Quoter"[..]));
//!         assert_eq!(args.read_string()?, "ACME");
//!     }
//!     other => panic!("not a request: {other:?}"),
//! }
//! # Ok(())
//! # }
//! ```

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
