//! `armillary`: one command for everything Armillary does from a shell:
//! the end-to-end demo (`armillary demo`), decoding and building IORs
//! (`armillary ior`), checking and compiling IDL (`armillary idl`), the
//! naming service and its client (`armillary naming`), the
//! load-balancing locator (`armillary lb`) and the benchmarks
//! (`armillary bench`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_cmd;
mod bench_collocation;
mod bench_idl;
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
#[command(name = "armillary", version, about)]
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
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => demo_cmd::run(),
        Command::Ior(args) => ior_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Idl(args) => idl_cmd::run(args),
        Command::Naming(args) => naming_cmd::run(args),
        Command::Lb(args) => lb_cmd::run(args),
    }
}

// The IDL compiler builds and drops large token trees; mimalloc keeps that
// from being dominated by the system allocator (see `bench idl`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
