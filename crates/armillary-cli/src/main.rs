//! `armillary`: one command for everything Armillary does from a shell.
//! For now: decoding and building IORs (`armillary ior`) and the latency
//! benchmark (`armillary bench latency`); the IDL compiler and the demo join
//! as their issues land.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_cmd;
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
    /// Measure Armillary against baselines (raw TCP, omniORB).
    Bench(bench_cmd::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ior(args) => ior_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
    }
}
