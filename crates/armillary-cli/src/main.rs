//! `armillary`: one command for everything Armillary does from a shell:
//! the end-to-end demo (`armillary demo`), decoding and building IORs
//! (`armillary ior`), checking and compiling IDL (`armillary idl`), the
//! naming service and its client (`armillary naming`), the
//! load-balancing locator (`armillary lb`) and the benchmarks
//! (`armillary bench`).
//!
//! `-ORBTraceLevel 0..5`, anywhere on the command line, shows what the
//! ORB reports on standard error (`RUST_LOG` wins where it is set): see
//! `docs/tracing.md`.

use std::process::ExitCode;

use armillary::config::{OrbConfig, OrbOptionError, TraceLevel};
use clap::{Parser, Subcommand};

mod bench_cmd;
mod bench_collocation;
mod bench_idl;
mod bench_instructions;
mod bench_invocation;
mod bench_lb;
mod bench_middle_tier;
mod bench_process;
mod bench_report;
mod bench_soak;
mod bench_sync;
mod bench_threading;
mod demo_cmd;
mod echo_peer;
mod idl_cmd;
mod ior_cmd;
mod lb_cmd;
mod lb_worker;
mod middle_tier_clients;
mod middle_tier_model;
mod middle_tier_peers;
mod naming_cmd;
mod omniorb_peers;
mod sync_rig;
mod sync_throughput;

/// Armillary, a CORBA ORB for Rust.
#[derive(Debug, Parser)]
#[command(
    name = "armillary",
    version,
    about,
    after_help = "-ORBTraceLevel 0..5, anywhere on the command line, shows what the ORB \
                  reports on standard error: 1 errors, 2 warnings, 3 connections, 4 requests, \
                  5 everything (0, the default: nothing). RUST_LOG (armillary=debug, ...) wins \
                  where it is set."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the Stock::Quoter example end to end: an in-process naming
    /// service, a quoter server and a client calling it over IIOP.
    Demo,
    /// Decode, print and build interoperable object references.
    Ior(ior_cmd::IorArgs),
    /// Check OMG IDL, or compile it to Rust.
    Idl(idl_cmd::IdlArgs),
    /// Measure Armillary against baselines (raw TCP, omniORB).
    Bench(bench_cmd::BenchArgs),
    /// Run a CORBA naming service, or list and change the bindings of one.
    Naming(naming_cmd::NamingArgs),
    /// Load balancing: an object-group locator, its groups, a demo
    /// replica.
    Lb(lb_cmd::LbArgs),
}

fn main() -> ExitCode {
    let args = match trace_level(std::env::args()) {
        Ok((level, args)) => {
            armillary_quoter::logging::install_subscriber(level);
            args
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Demo => demo_cmd::run(),
        Command::Ior(args) => ior_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Idl(args) => idl_cmd::run(args),
        Command::Naming(args) => naming_cmd::run(args),
        Command::Lb(args) => lb_cmd::run(args),
    }
}

/// Takes `-ORBTraceLevel N` (or `-ORBTraceLevel=N`) out of `args`, read
/// as the ORB reads it, and returns the level with the other arguments.
fn trace_level(
    args: impl IntoIterator<Item = String>,
) -> Result<(TraceLevel, Vec<String>), OrbOptionError> {
    let mut config = OrbConfig::new();
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let option = arg.split('=').next().unwrap_or_default();
        if option == "-ORBTraceLevel" || option == "-ORBtraceLevel" {
            let value = if arg.contains('=') { None } else { args.next() };
            config.apply_args(std::iter::once(arg).chain(value))?;
        } else {
            rest.push(arg);
        }
    }
    Ok((config.get_trace_level(), rest))
}

// The IDL compiler builds and drops large token trees; mimalloc keeps that
// from being dominated by the system allocator (see `bench idl`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
