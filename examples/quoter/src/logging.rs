//! How an application shows what the ORB reports: a `tracing` subscriber
//! writing to standard error, filtered by `RUST_LOG` when it is set, else
//! by the ORB's `-ORBTraceLevel` ([`TraceLevel`]). The ORB, a library,
//! installs no subscriber of its own; the example programs and the
//! `armillary` command install this one.
//!
//! Each request's span is printed when it closes, with its fields
//! (operation, request id, peer address, outcome) and its time, so that
//! level 4 shows a line per request on each side (see `docs/tracing.md`).

use std::io::IsTerminal;

use armillary::config::TraceLevel;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::EnvFilter;

/// Installs the subscriber for `level`, or for `RUST_LOG` when that is set
/// (it wins). Without either (level 0, no `RUST_LOG`) it installs nothing,
/// so the ORB's reports cost nothing at all. Returns whether a subscriber
/// was installed (false too when the process has one already).
///
/// ```
/// use armillary::config::TraceLevel;
/// // Level 0 and no RUST_LOG: nothing is installed.
/// # std::env::remove_var("RUST_LOG");
/// assert!(!armillary_quoter::logging::install_subscriber(TraceLevel::Off));
/// ```
pub fn install_subscriber(level: TraceLevel) -> bool {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::new(spec),
        _ if level == TraceLevel::Off => return false,
        _ => EnvFilter::new(level.directive()),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_span_events(FmtSpan::CLOSE)
        .try_init()
        .is_ok()
}
