//! `armillary idl`: check and compile OMG IDL from the command line.
//!
//! `check` runs the front end and prints its diagnostics (rustc style) to
//! stderr; `compile` also runs the Rust back end and writes one `.rs` file.
//! The compiler itself is `armillary_idl::Frontend` and
//! `armillary_idl::Builder`; this module only turns arguments into a call
//! and results into output and an exit code.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use armillary_idl::{parse_define, BuildError, Builder, DefineError, Diagnostic, Frontend};
use clap::{Args, Subcommand};

/// Arguments of `armillary idl`.
#[derive(Debug, Args)]
pub struct IdlArgs {
    #[command(subcommand)]
    command: IdlCommand,
}

#[derive(Debug, Subcommand)]
enum IdlCommand {
    /// Check IDL files: print diagnostics, exit with 1 on any error.
    Check(CheckArgs),
    /// Compile IDL files to Rust.
    Compile(CompileArgs),
}

/// What the front end needs: the files, include directories and macros.
#[derive(Debug, Args)]
struct FrontendArgs {
    /// Search DIR for #include files (repeatable; "..." includes look
    /// beside the including file first).
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Define a preprocessor macro, as NAME (=1) or NAME=VALUE
    /// (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]", value_parser = define_arg)]
    define: Vec<(String, Option<String>)>,
    /// Accept, with a warning, anonymous sequence<...> parameter, result
    /// and attribute types, which CORBA IDL (and omniidl, JacORB) reject.
    #[arg(long)]
    lenient: bool,
    /// The IDL files to read.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct CheckArgs {
    #[command(flatten)]
    frontend: FrontendArgs,
    /// Print nothing on success (by default one line: "ok: N definitions").
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct CompileArgs {
    #[command(flatten)]
    frontend: FrontendArgs,
    /// Write the generated Rust file to DIR.
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
    /// Name the output NAME.rs (default: the first file's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Do not run rustfmt over the output (it is formatted by prettyplease
    /// either way).
    #[arg(long)]
    no_rustfmt: bool,
    /// Leave out asynchronous method invocation: the AMI_<I>Handler
    /// reply handlers and the sendc_/sendp_/_async stub methods.
    #[arg(long)]
    no_ami: bool,
    /// Generate asynchronous method handling (AMH) for PATH: an interface
    /// (`Stock::Quoter`; a module selects every interface in it, `.` every
    /// interface) gets an AMH servant trait whose methods answer through
    /// typed responders (`QuoterGetQuoteResponder`: reply, raise, answer),
    /// an `async fn` servant trait and a skeleton serving either
    /// (`QuoterAmhSkeleton`); an operation or attribute
    /// (`Stock::Quoter::get_quote`) makes only that call asynchronous, the
    /// interface's others staying synchronous. Repeat for more paths.
    #[arg(long, value_name = "PATH")]
    amh: Vec<String>,
    /// Map every `sequence<octet>` to `armillary::Bytes` instead of
    /// `Vec<u8>`: a received one of 1 KiB or more is a slice of the
    /// message it came in, not a copy.
    #[arg(long)]
    bytes: bool,
}

fn define_arg(text: &str) -> Result<(String, Option<String>), DefineError> {
    parse_define(text)
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The input is valid (and, for `compile`, the output was written).
    Success,
    /// The input has errors.
    InvalidInput,
    /// The output could not be written.
    OutputFailed,
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> ExitCode {
        match outcome {
            Outcome::Success => ExitCode::SUCCESS,
            Outcome::InvalidInput => ExitCode::from(1),
            Outcome::OutputFailed => ExitCode::from(2),
        }
    }
}

/// Runs `armillary idl ...`.
pub fn run(args: IdlArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    execute(args, &mut stdout.lock(), &mut stderr.lock()).into()
}

fn execute(args: IdlArgs, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    match args.command {
        IdlCommand::Check(check) => {
            let Some(count) = front_end(&check.frontend, err) else {
                return Outcome::InvalidInput;
            };
            if !check.quiet {
                let _ = writeln!(out, "ok: {count} definitions");
            }
            Outcome::Success
        }
        IdlCommand::Compile(compile) => compile_files(&compile, out, err),
    }
}

/// Compiles the files to one Rust file with [`Builder`].
fn compile_files(args: &CompileArgs, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    let mut builder = Builder::new()
        .files(args.frontend.files.iter().cloned())
        .lenient(args.frontend.lenient)
        .ami(!args.no_ami)
        .octet_sequences_as_bytes(args.bytes)
        .out_dir(&args.out);
    for path in &args.amh {
        builder = builder.amh(path);
    }
    for dir in &args.frontend.include {
        builder = builder.include_dir(dir);
    }
    for (name, value) in &args.frontend.define {
        builder = builder.define(name, value.as_deref());
    }
    if let Some(name) = &args.name {
        builder = builder.out_name(name);
    }
    builder = builder.rustfmt(!args.no_rustfmt);
    match builder.compile() {
        Ok(path) => {
            let _ = writeln!(out, "wrote {}", path.display());
            Outcome::Success
        }
        Err(BuildError::Diagnostics(error)) => {
            let diagnostics = error.diagnostics();
            for diagnostic in diagnostics {
                let _ = writeln!(err, "{diagnostic}\n");
            }
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let _ = writeln!(
                err,
                "error: {errors} error{} in IDL",
                if errors == 1 { "" } else { "s" }
            );
            Outcome::InvalidInput
        }
        Err(other) => {
            let _ = writeln!(err, "error: {other}");
            Outcome::OutputFailed
        }
    }
}

/// Runs the front end, printing every diagnostic to `err`; returns the
/// number of definitions in the main files, or `None` on errors.
fn front_end(args: &FrontendArgs, err: &mut dyn Write) -> Option<usize> {
    let mut frontend = Frontend::new().lenient(args.lenient);
    for dir in &args.include {
        frontend = frontend.include_dir(dir);
    }
    for (name, value) in &args.define {
        frontend = frontend.define(name, value.as_deref());
    }
    let print = |err: &mut dyn Write, diagnostics: &[Diagnostic]| {
        for diagnostic in diagnostics {
            let _ = writeln!(err, "{diagnostic}\n");
        }
    };
    match frontend.parse_files(&args.files) {
        Ok(spec) => {
            print(err, &spec.warnings);
            Some(
                spec.definitions()
                    .filter(|(_, def)| def.from_main_file)
                    .count(),
            )
        }
        Err(error) => {
            let diagnostics = error.diagnostics();
            print(err, diagnostics);
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let _ = writeln!(
                err,
                "error: {errors} error{} in IDL",
                if errors == 1 { "" } else { "s" }
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        idl: IdlArgs,
    }

    fn scratch_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("armillary-idl-cmd-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Compiles `main` into `dir` with the options `extra`, which must
    /// succeed, and returns the Rust written (named after `main`).
    fn compile_to_text(dir: &Path, main: &Path, extra: &[&str]) -> String {
        let mut args = vec!["compile", "--out", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(main.to_str().unwrap());
        let (outcome, _, err) = execute_args(&args);
        assert_eq!(outcome, Outcome::Success, "{err}");
        let stem = main.file_stem().unwrap().to_str().unwrap();
        std::fs::read_to_string(dir.join(format!("{stem}.rs"))).unwrap()
    }

    fn execute_args(args: &[&str]) -> (Outcome, String, String) {
        let cli = Cli::try_parse_from(std::iter::once("idl").chain(args.iter().copied()))
            .unwrap_or_else(|err| panic!("{err}"));
        let mut out = Vec::new();
        let mut err = Vec::new();
        let outcome = execute(cli.idl, &mut out, &mut err);
        (
            outcome,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn check_reports_ok_with_a_count() {
        let dir = scratch_dir("ok");
        std::fs::write(dir.join("inc.idl"), "module Inc { typedef long T; };\n").unwrap();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/lib.idl"), "module Lib { typedef long L; };\n").unwrap();
        let main = dir.join("main.idl");
        std::fs::write(
            &main,
            "#include \"inc.idl\"\n#include <lib.idl>\n#if LEVEL == 2\nmodule M { typedef Inc::T U; };\n#endif\n",
        )
        .unwrap();
        let lib = dir.join("lib");
        let (outcome, out, err) = execute_args(&[
            "check",
            "-I",
            lib.to_str().unwrap(),
            "-D",
            "LEVEL=2",
            main.to_str().unwrap(),
        ]);
        assert_eq!(outcome, Outcome::Success, "{err}");
        assert_eq!(out, "ok: 2 definitions\n");
        assert_eq!(err, "");
    }

    #[test]
    fn check_prints_errors_and_fails() {
        let dir = scratch_dir("bad");
        let main = dir.join("bad.idl");
        std::fs::write(&main, "const octet x = 256;\n").unwrap();
        let (outcome, out, err) = execute_args(&["check", "--quiet", main.to_str().unwrap()]);
        assert_eq!(outcome, Outcome::InvalidInput);
        assert_eq!(out, "");
        assert!(
            err.starts_with("error: value 256 is out of range for type 'octet'\n --> "),
            "{err}"
        );
        assert!(err.ends_with("error: 1 error in IDL\n"), "{err}");
        assert_eq!(ExitCode::from(outcome), ExitCode::from(1));
    }

    #[test]
    fn compile_writes_rust() {
        let dir = scratch_dir("compile");
        let main = dir.join("ok.idl");
        std::fs::write(&main, "module M { struct P { long x; }; };\n").unwrap();
        let (outcome, out, err) = execute_args(&[
            "compile",
            "--out",
            dir.to_str().unwrap(),
            main.to_str().unwrap(),
        ]);
        assert_eq!(outcome, Outcome::Success, "{err}");
        let path = dir.join("ok.rs");
        assert_eq!(out, format!("wrote {}\n", path.display()));
        let code = std::fs::read_to_string(&path).unwrap();
        assert!(code.contains("pub mod m {"), "{code}");
        assert!(code.contains("pub struct P {"), "{code}");
    }

    #[test]
    fn no_ami_leaves_out_handlers_and_async_methods() {
        let dir = scratch_dir("no_ami");
        let main = dir.join("q.idl");
        std::fs::write(
            &main,
            "module S { exception Bad {}; interface Q { long get(in string s, inout long n) raises (Bad); attribute long a; }; };\n",
        )
        .unwrap();
        let compile = |extra: &[&str]| compile_to_text(&dir, &main, extra);
        let with = compile(&[]);
        for item in [
            "pub struct AmiQHandler",
            "pub trait AmiQHandlerServant",
            "pub fn sendc_get(",
            "pub fn sendp_get(",
            "pub fn get_async(",
            "pub fn sendc_set_a(",
            "pub type QGetPoller",
            "IDL:S/AMI_QHandler:1.0",
            "IDL:omg.org/Messaging/ReplyHandler:1.0",
        ] {
            assert!(with.contains(item), "{item} missing:\n{with}");
        }
        let without = compile(&["--no-ami"]);
        for item in [
            "Ami",
            "AMI",
            "sendc_",
            "sendp_",
            "_async",
            "Poller",
            "ReplyHandler",
        ] {
            assert!(
                !without.contains(item),
                "{item} in --no-ami output:\n{without}"
            );
        }
        assert!(without.contains("pub fn get("), "{without}");
    }

    #[test]
    fn bytes_maps_octet_sequences_to_bytes() {
        let dir = scratch_dir("bytes");
        let main = dir.join("b.idl");
        std::fs::write(
            &main,
            "module B { typedef sequence<octet> Blob; typedef sequence<octet, 8> Tag; \
             typedef sequence<long> Longs; struct S { Blob b; sequence<octet> anon; }; \
             interface I { Blob swap(in Blob b, out Tag t, inout Blob io); }; };\n",
        )
        .unwrap();
        let compile = |extra: &[&str]| compile_to_text(&dir, &main, extra);
        let plain = compile(&[]);
        assert!(
            plain.contains("pub type Blob = ::std::vec::Vec<u8>;"),
            "{plain}"
        );
        assert!(!plain.contains("armillary::Bytes"), "{plain}");
        let bytes = compile(&["--bytes"]);
        for item in [
            "pub type Blob = ::armillary::Bytes;",
            "pub type Tag = ::armillary::Bytes;",
            "pub anon: ::armillary::Bytes,",
            "pub type Longs = ::std::vec::Vec<i32>;",
            "r.read_octet_seq_shared()?",
            "w.write_octet_seq_shared(",
            "bound: 8",
        ] {
            assert!(bytes.contains(item), "{item} missing:\n{bytes}");
        }
        // Stubs take the shared buffer, for the request to share.
        assert!(bytes.contains("b: &::armillary::Bytes"), "{bytes}");
    }

    #[test]
    fn amh_paths_select_interfaces_and_operations() {
        let dir = scratch_dir("amh");
        let main = dir.join("q.idl");
        std::fs::write(
            &main,
            "module S { exception Bad {}; interface Q { long get(in string s) raises (Bad); long put(in long n); }; };\n",
        )
        .unwrap();
        let compile = |extra: &[&str]| compile_to_text(&dir, &main, extra);
        let plain = compile(&[]);
        assert!(!plain.contains("Amh"), "{plain}");
        let whole = compile(&["--amh", "S::Q"]);
        for item in [
            "pub trait QAmhServant",
            "pub trait QAsyncServant",
            "pub struct QAmhSkeleton<T>",
            "pub struct QGetResponder",
            "pub struct QPutResponder",
        ] {
            assert!(whole.contains(item), "{item} missing:\n{whole}");
        }
        let one = compile(&["--amh", "S::Q::get"]);
        assert!(one.contains("pub struct QGetResponder"), "{one}");
        assert!(!one.contains("QPutResponder"), "{one}");
    }

    #[test]
    fn compile_reports_errors_and_writes_nothing() {
        let dir = scratch_dir("compile-bad");
        let main = dir.join("bad.idl");
        std::fs::write(&main, "struct S { Missing m; };\n").unwrap();
        let (outcome, _, err) = execute_args(&[
            "compile",
            "--out",
            dir.to_str().unwrap(),
            main.to_str().unwrap(),
        ]);
        assert_eq!(outcome, Outcome::InvalidInput);
        assert!(err.contains("bad.idl:1:12"), "{err}");
        assert!(!dir.join("bad.rs").exists());
    }

    #[test]
    fn anonymous_sequence_parameters_need_lenient() {
        let dir = scratch_dir("lenient");
        let main = dir.join("anon.idl");
        std::fs::write(&main, "interface I { void put(in sequence<long> v); };\n").unwrap();
        let (outcome, _, err) = execute_args(&["check", main.to_str().unwrap()]);
        assert_eq!(outcome, Outcome::InvalidInput);
        assert!(
            err.starts_with("error: parameter 'v' has an anonymous sequence type"),
            "{err}"
        );
        assert!(err.contains("anon.idl:1:27"), "{err}");
        assert!(err.contains("typedef sequence<...> NameSeq;"), "{err}");

        let (outcome, out, err) = execute_args(&["check", "--lenient", main.to_str().unwrap()]);
        assert_eq!(outcome, Outcome::Success, "{err}");
        assert_eq!(out, "ok: 2 definitions\n");
        assert!(
            err.starts_with("warning: parameter 'v' has an anonymous sequence type"),
            "{err}"
        );

        let (outcome, _, err) = execute_args(&[
            "compile",
            "--lenient",
            "--out",
            dir.to_str().unwrap(),
            main.to_str().unwrap(),
        ]);
        assert_eq!(outcome, Outcome::Success, "{err}");
        let code = std::fs::read_to_string(dir.join("anon.rs")).unwrap();
        assert!(code.contains("fn put(&self, v: &[i32])"), "{code}");
    }

    #[test]
    fn bad_definitions_and_missing_files_are_argument_errors() {
        assert!(Cli::try_parse_from(["idl", "check", "-D", "=1", "x.idl"]).is_err());
        assert!(Cli::try_parse_from(["idl", "check"]).is_err());
    }
}
