//! The quoter server on its own: serves `Stock::Quoter` until it is
//! stopped, so that any ORB's client can call it.
//!
//! ```text
//! quoter-server [--endpoint iiop://HOST:PORT] [--ior-file FILE] [-ORB<option> VALUE]...
//! ```
//!
//! It prints its IOR on standard output (and writes it to `--ior-file`).
//! The object key is `Quoter`, so a client may also use
//! `corbaloc:iiop:HOST:PORT/Quoter`.

use std::process::ExitCode;

use armillary::Orb;
use armillary_quoter::stock::QuoterSkeleton;
use armillary_quoter::QuoterImpl;

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
    let (orb, rest) = Orb::init(orb_args).map_err(|e| e.to_string())?;
    if let Some(unknown) = rest.get(1) {
        return Err(format!("unknown argument {unknown:?}\n{USAGE}"));
    }
    let poa = orb.root_poa();
    poa.the_poa_manager()
        .activate()
        .map_err(|e| e.to_string())?;
    let servant = QuoterSkeleton::new(QuoterImpl::default()).into_servant();
    let quoter = poa
        .servant_to_reference(&servant)
        .map_err(|e| e.to_string())?;
    orb.bind_object_key("Quoter", quoter.clone());
    let ior = orb.object_to_string(&quoter);
    if let Some(path) = &ior_file {
        std::fs::write(path, format!("{ior}\n")).map_err(|e| format!("writing {path}: {e}"))?;
    }
    println!("{ior}");
    orb.run();
    Ok(())
}
