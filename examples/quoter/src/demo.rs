//! `armillary demo`: the Stock::Quoter story end to end in one process.
//!
//! 1. A server ORB starts an in-process naming service and a quoter, and
//!    binds the quoter as `Stock/Quoter`.
//! 2. A client ORB — a second ORB, so every call crosses IIOP on loopback
//!    exactly as between two processes — finds the naming service by its
//!    `corbaloc:` URL, resolves `Stock/Quoter`, narrows it to
//!    `Stock::Quoter` and asks for prices, one of them for a symbol the
//!    quoter does not know (a typed user exception).
//! 3. Both ORBs shut down.
//!
//! Every step is printed; any failure is a [`DemoError`] naming the step.

use std::io::Write;

use armillary::config::OrbConfig;
use armillary::{Orb, OrbError, WaitForCompletion};
use armillary_naming::cos_naming::{NameComponent, NamingContextExt};

use crate::stock::{quoter::GetQuoteError, Quoter, QuoterSkeleton};
use crate::QuoterImpl;

/// A step of the demo that failed, and why.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// An ORB could not start.
    #[error("starting the {which} ORB: {source}")]
    Orb {
        /// `server` or `client`.
        which: &'static str,
        /// What went wrong.
        source: OrbError,
    },
    /// A CORBA call or ORB operation failed.
    #[error("{step}: {reason}")]
    Step {
        /// What the demo was doing.
        step: &'static str,
        /// The exception or error, as text.
        reason: String,
    },
    /// The demo's output could not be written.
    #[error("writing the demo's output: {0}")]
    Output(#[from] std::io::Error),
}

/// The failure of a step, with the chain of its causes (`source`) in the
/// reason: "cannot create the NameService POA: a child POA with this name
/// already exists".
fn step<E: std::error::Error>(step: &'static str) -> impl FnOnce(E) -> DemoError {
    move |e| {
        let mut reason = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            reason.push_str(": ");
            reason.push_str(&c.to_string());
            cause = c.source();
        }
        DemoError::Step { step, reason }
    }
}

/// The symbols the client asks for; the last is unknown to the quoter.
pub const SYMBOLS: [&str; 4] = ["ACME", "GLOBEX", "INITECH", "UMBRELLA"];

/// Runs the demo, printing what it does to `out`.
pub fn run(out: &mut dyn Write) -> Result<(), DemoError> {
    writeln!(out, "Armillary demo: the Stock::Quoter example, end to end")?;

    // --- The server side: naming service and quoter. -------------------
    let server = Orb::with_config(OrbConfig::default()).map_err(|source| DemoError::Orb {
        which: "server",
        source,
    })?;
    let result = serve_and_call(&server, out);
    server
        .shutdown(WaitForCompletion::Yes)
        .map_err(step("shutting down the server ORB"))?;
    writeln!(out, "server ORB shut down")?;
    result?;
    writeln!(out, "done: every step succeeded")?;
    Ok(())
}

fn serve_and_call(server: &Orb, out: &mut dyn Write) -> Result<(), DemoError> {
    let naming = armillary_naming::start(server).map_err(step("starting the naming service"))?;
    let endpoint = server
        .endpoints()
        .into_iter()
        .next()
        .ok_or_else(|| DemoError::Step {
            step: "reading the server's endpoint",
            reason: "the server listens nowhere".into(),
        })?;
    let (host, port) = (endpoint.host(), endpoint.port());
    let naming_url = format!("corbaloc:iiop:{host}:{port}/NameService");
    writeln!(out, "[server] naming service at {naming_url}")?;

    let poa = server.root_poa();
    poa.manager()
        .activate()
        .map_err(step("activating the root POA manager"))?;
    let quoter = QuoterSkeleton::new(QuoterImpl::default())
        .activate(&poa)
        .map_err(step("activating the quoter"))?;
    writeln!(
        out,
        "[server] quoter activated: {}",
        abbreviate(&server.object_to_string(quoter.as_object()))
    )?;
    let stock = [NameComponent {
        id: "Stock".into(),
        kind: String::new(),
    }];
    naming
        .bind_new_context(&stock)
        .map_err(step("binding the context Stock"))?;
    let name = naming
        .to_name("Stock/Quoter")
        .map_err(step("parsing the name Stock/Quoter"))?;
    naming
        .bind(&name, quoter.as_object())
        .map_err(step("binding Stock/Quoter"))?;
    writeln!(out, "[server] bound Stock/Quoter in the naming service")?;

    // --- The client side: a second ORB, over IIOP. ----------------------
    // (Without `Collocation::None` the two ORBs of one process would call
    // each other through the POA, not over the wire: see
    // `armillary::config::Collocation`.)
    let client =
        Orb::with_config(OrbConfig::default().collocation(armillary::config::Collocation::None))
            .map_err(|source| DemoError::Orb {
                which: "client",
                source,
            })?;
    let result = call(&client, &naming_url, out);
    client
        .shutdown(WaitForCompletion::Yes)
        .map_err(step("shutting down the client ORB"))?;
    writeln!(out, "client ORB shut down")?;
    result
}

fn call(client: &Orb, naming_url: &str, out: &mut dyn Write) -> Result<(), DemoError> {
    let object = client
        .string_to_object(naming_url)
        .map_err(step("resolving the naming service's URL"))?;
    let naming = NamingContextExt::narrow(&object)
        .map_err(step("narrowing the naming service"))?
        .ok_or_else(|| DemoError::Step {
            step: "narrowing the naming service",
            reason: "the object is not a CosNaming::NamingContextExt".into(),
        })?;
    let object = naming
        .resolve_str("Stock/Quoter")
        .map_err(step("resolving Stock/Quoter"))?;
    let quoter = Quoter::narrow(&object)
        .map_err(step("narrowing Stock/Quoter"))?
        .ok_or_else(|| DemoError::Step {
            step: "narrowing Stock/Quoter",
            reason: "the object is not a Stock::Quoter".into(),
        })?;
    writeln!(
        out,
        "[client] resolved Stock/Quoter through {naming_url} and narrowed it to Stock::Quoter"
    )?;
    for symbol in SYMBOLS {
        match quoter.get_quote(symbol) {
            Ok(cents) => writeln!(
                out,
                "[client] get_quote(\"{symbol}\") = {cents} ({}.{:02})",
                cents / 100,
                cents % 100
            )?,
            Err(GetQuoteError::InvalidStockSymbol(_)) => writeln!(
                out,
                "[client] get_quote(\"{symbol}\") raised Stock::Invalid_Stock_Symbol, as it should"
            )?,
            Err(e) => return Err(step("calling get_quote")(e)),
        }
    }
    Ok(())
}

/// The start and end of a long IOR string.
fn abbreviate(ior: &str) -> String {
    if ior.len() <= 48 {
        return ior.to_owned();
    }
    format!(
        "{}…{} ({} characters)",
        &ior[..32],
        &ior[ior.len() - 8..],
        ior.len()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_demo_runs_end_to_end() {
        let mut out = Vec::new();
        let result = super::run(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(result.is_ok(), "{result:?}\n{text}");
        assert!(text.contains("get_quote(\"ACME\") = 4217"), "{text}");
        assert!(text.contains("Invalid_Stock_Symbol"), "{text}");
        assert!(text.ends_with("done: every step succeeded\n"), "{text}");
    }
}
