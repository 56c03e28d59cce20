//! `armillary`: one command for everything Armillary does from a shell.
//! For now: decoding and building IORs (`armillary ior`); the IDL compiler,
//! the demo and the benchmarks join as their issues land.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ior(args) => ior_cmd::run(args),
    }
}
