//! The quoter client: asks a `Stock::Quoter` for prices.
//!
//! ```text
//! quoter-client REFERENCE SYMBOL... [-ORB<option> VALUE]...
//! ```
//!
//! REFERENCE is an `IOR:…`, `corbaloc:…` or `corbaname:…` string, or a
//! file holding one (as `quoter-server --ior-file` writes). Exit code 1
//! when the quoter cannot be reached or a call fails with a system
//! exception; an unknown symbol is reported and is not a failure.

use std::process::ExitCode;

use armillary::{Orb, WaitForCompletion};
use armillary_quoter::stock::{quoter::GetQuoteError, Quoter};

const USAGE: &str = "usage: quoter-client REFERENCE SYMBOL... [-ORB<option> VALUE]...";

fn main() -> ExitCode {
    match ask() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn ask() -> Result<(), String> {
    let mut config = armillary::config::OrbConfig::new();
    let args = config
        .apply_args(std::env::args())
        .map_err(|e| e.to_string())?;
    // `-ORBTraceLevel 4` (or RUST_LOG) shows each request on standard error.
    armillary_quoter::logging::install_subscriber(config.get_trace_level());
    let orb = Orb::with_config(config).map_err(|e| e.to_string())?;
    let result = ask_with(&orb, &args);
    orb.shutdown(WaitForCompletion::Yes)
        .map_err(|e| e.to_string())?;
    result
}

fn ask_with(orb: &Orb, args: &[String]) -> Result<(), String> {
    let [_, reference, symbols @ ..] = args else {
        return Err(USAGE.to_owned());
    };
    if symbols.is_empty() {
        return Err(USAGE.to_owned());
    }
    let text = match std::fs::read_to_string(reference) {
        Ok(contents) => contents.trim().to_owned(),
        Err(_) => reference.clone(),
    };
    let object = orb
        .string_to_object(&text)
        .map_err(|e| format!("{reference}: {e}"))?;
    let quoter = Quoter::narrow(&object)
        .map_err(|e| format!("{reference}: {e}"))?
        .ok_or(format!("{reference} is not a Stock::Quoter"))?;
    for symbol in symbols {
        match quoter.get_quote(symbol) {
            Ok(cents) => println!("{symbol}: {}.{:02}", cents / 100, cents % 100),
            Err(GetQuoteError::InvalidStockSymbol(_)) => {
                println!("{symbol}: unknown symbol (Stock::Invalid_Stock_Symbol)")
            }
            Err(GetQuoteError::System(e)) => return Err(format!("get_quote({symbol}): {e}")),
        }
    }
    Ok(())
}
