//! `armillary`: one command for everything Armillary does from a shell.
//! For now: decoding and building IORs (`armillary ior`), checking IDL
//! (`armillary idl check`) and the latency benchmark (`armillary bench
//! latency`); the demo joins with its issue.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_cmd;
mod idl_cmd;
mod ior_cmd;

/// Armillary, a CORBA ORB for Rust.
#[derive(Debug, Parser)]
#[command(name = "armillary", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode, print and build interoperable object references.
    Ior(ior_cmd::IorArgs),
    /// Check OMG IDL (the Rust back end comes with the rest of issue 3).
    Idl(idl_cmd::IdlArgs),
    /// Measure Armillary against baselines (raw TCP, omniORB).
    Bench(bench_cmd::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ior(args) => ior_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Idl(args) => idl_cmd::run(args),
    }
}
