//! The quoter server on its own: serves `Stock::Quoter` until it is
//! stopped, so that any ORB's client can call it.
//!
//! ```text
//! quoter-server [--endpoint iiop://HOST:PORT] [--ior-file FILE] [-ORB<option> VALUE]...
//! ```
//!
//! `-ORBTraceLevel 3` (or `RUST_LOG=armillary=info`) reports connections
//! on standard error, `4` every request too (`docs/tracing.md`).
//!
//! It prints its IOR on standard output (and writes it to `--ior-file`).
//! The object key is `Quoter`, so a client may also use
//! `corbaloc:iiop:HOST:PORT/Quoter`. SIGINT or SIGTERM shuts the ORB down
//! (requests in progress finish, the listener closes) and the server
//! exits with status 0.

use std::process::ExitCode;

use armillary::Orb;
use armillary_quoter::stock::QuoterSkeleton;
use armillary_quoter::{QuoterImpl, ShutdownOnSignals};

const USAGE: &str =
    "usage: quoter-server [--endpoint iiop://HOST:PORT] [--ior-file FILE] [-ORB<option> VALUE]...";

fn main() -> ExitCode {
    match serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve() -> Result<(), String> {
    // Our options become ORB options; the rest go to the ORB as they are.
    let mut orb_args = vec!["quoter-server".to_owned()];
    let mut ior_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--endpoint" => {
                let endpoint = args
                    .next()
                    .ok_or(format!("--endpoint needs a value\n{USAGE}"))?;
                orb_args.extend(["-ORBListenEndpoints".to_owned(), endpoint]);
            }
            "--ior-file" => {
                ior_file = Some(
                    args.next()
                        .ok_or(format!("--ior-file needs a value\n{USAGE}"))?,
                );
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => orb_args.push(arg),
        }
    }
    let mut config = armillary::config::OrbConfig::new();
    let rest = config.apply_args(orb_args).map_err(|e| e.to_string())?;
    armillary_quoter::logging::install_subscriber(config.get_trace_level());
    let orb = Orb::with_config(config).map_err(|e| e.to_string())?;
    if let Some(unknown) = rest.get(1) {
        return Err(format!("unknown argument {unknown:?}\n{USAGE}"));
    }
    // Before the IOR is published: a signal from then on stops us cleanly.
    let signals = ShutdownOnSignals::install(&orb).map_err(|e| format!("signals: {e}"))?;
    let poa = orb.root_poa();
    poa.manager().activate().map_err(|e| e.to_string())?;
    let quoter = QuoterSkeleton::new(QuoterImpl::default())
        .activate(&poa)
        .map_err(|e| e.to_string())?;
    orb.bind_object_key("Quoter", quoter.as_object().clone());
    let ior = orb.object_to_string(quoter.as_object());
    if let Some(path) = &ior_file {
        std::fs::write(path, format!("{ior}\n")).map_err(|e| format!("writing {path}: {e}"))?;
    }
    println!("{ior}");
    orb.run().map_err(|e| e.to_string())?;
    drop(signals);
    orb.destroy();
    Ok(())
}
