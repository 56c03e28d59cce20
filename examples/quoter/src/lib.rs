//! The `Stock::Quoter` example of the AMH paper, written the way an
//! Armillary application is written:
//!
//! - `build.rs` compiles `quoter.idl` with [`armillary_idl::Builder`]; the
//!   generated types, stub and skeleton are in [`stock`];
//! - [`QuoterImpl`] implements the generated `QuoterServant` trait;
//! - `src/bin/quoter-server.rs` serves it and writes its IOR until SIGINT
//!   or SIGTERM ([`ShutdownOnSignals`]), `src/bin/quoter-client.rs` asks
//!   it for prices;
//! - [`demo`] runs the whole story in one process: a naming service, a
//!   quoter server, and a client that finds the quoter by name and calls
//!   it over IIOP (`armillary demo`);
//! - [`logging`] installs the `tracing` subscriber that shows what the ORB
//!   reports (`-ORBTraceLevel`, `RUST_LOG`).
//!
//! [`armillary_idl::Builder`]: https://docs.rs/armillary-idl

pub mod demo;
pub mod logging;
mod servant;
mod signals;

pub use servant::QuoterImpl;
pub use signals::ShutdownOnSignals;

/// The Rust generated from `quoter.idl`: `stock::Quoter` (the stub),
/// `stock::QuoterServant` (the trait a server implements),
/// `stock::QuoterSkeleton` (the dispatcher), `stock::InvalidStockSymbol`.
///
/// Generated code is clean under `clippy::pedantic` (warned here, so
/// `cargo clippy -- -D warnings` keeps it so).
#[warn(clippy::pedantic)]
pub mod generated {
    armillary::include_idl!("quoter");
}

pub use generated::stock;
