//! `armillary demo`: runs the Stock::Quoter example end to end (see
//! `examples/quoter`, whose `demo` module does the work) and exits 0 when
//! every step succeeded.

use std::process::ExitCode;

/// Runs the demo on standard output.
pub fn run() -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match armillary_quoter::demo::run(&mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
