//! [`Builder`]: compiles IDL to Rust from a build script, in the manner of
//! `prost-build`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::codegen::{self, Options};
use crate::{Diagnostic, Frontend, ParseError};

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The IDL has errors; every diagnostic is in the [`ParseError`]
    /// (`Display` renders them all).
    #[error(transparent)]
    Diagnostics(ParseError),
    /// An attribute given to [`Builder::type_attribute`] or
    /// [`Builder::field_attribute`] is not a Rust outer attribute.
    #[error("the attribute {attribute:?} for {path:?} does not parse: {reason}")]
    InvalidAttribute {
        /// The IDL path it was given for.
        path: String,
        /// The attribute as given.
        attribute: String,
        /// What the Rust parser said.
        reason: String,
    },
    /// No IDL file was given.
    #[error("no IDL files to compile")]
    NoFiles,
    /// No output directory: not run from a build script (`OUT_DIR` unset)
    /// and none given.
    #[error("no output directory: set one with Builder::out_dir or run from a build script")]
    NoOutDir,
    /// The output could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Compiles IDL files to one Rust file.
///
/// In `build.rs`:
///
/// ```no_run
/// armillary_idl::Builder::new()
///     .include_dir("idl")
///     .file("idl/quoter.idl")
///     .compile()
///     .unwrap_or_else(|e| panic!("{e}"));
/// ```
///
/// and in the crate: `armillary::include_idl!("quoter");` (the output is
/// named after the first file unless [`Builder::out_name`] says otherwise).
#[derive(Debug, Default)]
pub struct Builder {
    /// Include directories and macros live in the front end's own
    /// configuration.
    frontend: Frontend,
    files: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    out_name: Option<String>,
    options: Options,
    /// True when `rustfmt(false)` was called (rustfmt runs by default).
    skip_rustfmt: bool,
    quiet: bool,
}

impl Builder {
    /// A builder with no files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an `#include` search directory (`-I`).
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.frontend = std::mem::take(&mut self.frontend).include_dir(dir);
        self
    }

    /// Defines a preprocessor macro (`-D NAME[=VALUE]`).
    pub fn define(mut self, name: impl Into<String>, value: Option<&str>) -> Self {
        self.frontend = std::mem::take(&mut self.frontend).define(name, value);
        self
    }

    /// Accepts anonymous `sequence<...>` parameter, result and attribute
    /// types with a warning instead of rejecting them (see
    /// [`Frontend::lenient`]).
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.frontend = std::mem::take(&mut self.frontend).lenient(lenient);
        self
    }

    /// Adds a main IDL file.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.files.push(path.into());
        self
    }

    /// Adds main IDL files.
    pub fn files<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.files.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Where to write (default: `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The output's name without `.rs` (default: the first file's stem).
    pub fn out_name(mut self, name: impl Into<String>) -> Self {
        self.out_name = Some(name.into());
        self
    }

    /// Whether to run `rustfmt` over the output (default: `true`). The
    /// output is formatted by prettyplease either way; rustfmt, when
    /// installed, makes it exactly rustfmt-clean.
    pub fn rustfmt(mut self, rustfmt: bool) -> Self {
        self.skip_rustfmt = !rustfmt;
        self
    }

    /// Whether to generate asynchronous method invocation (default:
    /// `true`): the reply-handler interface `AMI_<I>Handler` of every
    /// non-local interface and the `sendc_*`, `sendp_*` and `*_async`
    /// methods of its stub (see [`Options::ami`]).
    pub fn ami(mut self, ami: bool) -> Self {
        self.options = std::mem::take(&mut self.options).ami(ami);
        self
    }

    /// Selects an interface (`"Stock::Quoter"`; a module selects every
    /// interface in it, `"."` every interface) or one operation or
    /// attribute (`"Stock::Quoter::get_quote"`) for asynchronous method
    /// handling: an AMH servant trait (`QuoterAmhServant`, each
    /// asynchronous method answering through a typed responder such as
    /// `QuoterGetQuoteResponder`), an `async fn` servant trait
    /// (`QuoterAsyncServant`) and a skeleton serving either
    /// (`QuoterAmhSkeleton`). Call it once per path; a path that selects
    /// nothing is a warning. See [`Options::amh`].
    ///
    /// ```no_run
    /// armillary_idl::Builder::new()
    ///     .file("quoter.idl")
    ///     .amh("Stock::Quoter")
    ///     .compile()
    ///     .unwrap_or_else(|e| panic!("{e}"));
    /// ```
    pub fn amh(mut self, path: impl Into<String>) -> Self {
        self.options = std::mem::take(&mut self.options).amh(path);
        self
    }

    /// Whether every `sequence<octet>` maps to `armillary::Bytes` instead
    /// of `Vec<u8>` (default: `false`), as `prost-build`'s `bytes` does: a
    /// received sequence of 1 KiB or more is then a slice of the message
    /// it came in rather than a copy. See
    /// [`Options::octet_sequences_as_bytes`].
    ///
    /// ```no_run
    /// armillary_idl::Builder::new()
    ///     .file("storage.idl")
    ///     .octet_sequences_as_bytes(true)
    ///     .compile()
    ///     .unwrap_or_else(|e| panic!("{e}"));
    /// ```
    pub fn octet_sequences_as_bytes(mut self, on: bool) -> Self {
        self.options = std::mem::take(&mut self.options).octet_sequences_as_bytes(on);
        self
    }

    /// Whether [`Builder::compile`] keeps its warnings to itself (default:
    /// `false`, it prints them). [`Builder::generate`] returns them either
    /// way.
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// Adds `attribute` to the generated types that the IDL scoped name
    /// `path` selects, as `prost-build` does: `"Stock::Quote"` selects that
    /// type, `"Stock"` every type in module `Stock`, `"."` every type.
    /// Structs, exceptions, unions and enums take type attributes.
    ///
    /// ```no_run
    /// armillary_idl::Builder::new()
    ///     .file("quoter.idl")
    ///     .type_attribute("Stock::Quote", "#[derive(PartialOrd)]")
    ///     .field_attribute("Stock::Quote::price", "#[doc = \"In cents.\"]")
    ///     .compile()
    ///     .unwrap_or_else(|e| panic!("{e}"));
    /// ```
    pub fn type_attribute(mut self, path: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.options = std::mem::take(&mut self.options).type_attribute(path, attribute);
        self
    }

    /// Adds `attribute` to the members that `path` selects:
    /// `"Stock::Quote::price"` one field, `"Stock::Quote"` every field of
    /// `Quote`, `"."` every member. Members are struct and exception fields,
    /// union members (the enum's variants) and enumerators.
    pub fn field_attribute(
        mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> Self {
        self.options = std::mem::take(&mut self.options).field_attribute(path, attribute);
        self
    }

    /// Parses, checks and generates, returning the Rust source and the
    /// warnings, without writing or printing anything (so it may be called
    /// from anywhere, a test or a tool, with `OUT_DIR` set or not).
    pub fn generate(&self) -> Result<(String, Vec<Diagnostic>), BuildError> {
        self.build().map(|built| (built.code, built.warnings))
    }

    /// Parses, checks and generates: the code, the warnings and every IDL
    /// file read (main files and what they include).
    fn build(&self) -> Result<Built, BuildError> {
        if self.files.is_empty() {
            return Err(BuildError::NoFiles);
        }
        if let Some((path, attribute, reason)) = self.options.invalid_attribute() {
            return Err(BuildError::InvalidAttribute {
                path: path.to_owned(),
                attribute: attribute.to_owned(),
                reason,
            });
        }
        let spec = self
            .frontend
            .parse_files(&self.files)
            .map_err(BuildError::Diagnostics)?;
        let generated = codegen::generate(&spec, &self.options);
        let mut warnings = spec.warnings.clone();
        warnings.extend(generated.warnings);
        let code = if self.skip_rustfmt {
            generated.code
        } else {
            rustfmt(&generated.code).unwrap_or(generated.code)
        };
        Ok(Built {
            code,
            warnings,
            inputs: spec
                .input_files()
                .into_iter()
                .map(Path::to_path_buf)
                .collect(),
        })
    }

    /// Generates and writes `<out_dir>/<out_name>.rs`; returns its path.
    /// This is the build-script entry point: when `OUT_DIR` is set it
    /// prints `cargo:rerun-if-changed=` for every IDL file read (included
    /// ones too) and the warnings as `cargo:warning=` lines (to stderr
    /// otherwise).
    pub fn compile(&self) -> Result<PathBuf, BuildError> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(BuildError::NoOutDir)?,
        };
        let in_build_script = std::env::var_os("OUT_DIR").is_some();
        let built = self.build()?;
        if in_build_script {
            for input in &built.inputs {
                println!("cargo:rerun-if-changed={}", input.display());
            }
        }
        let Built { code, warnings, .. } = built;
        for warning in warnings.iter().filter(|_| !self.quiet) {
            if in_build_script {
                println!("cargo:warning={}", warning.one_line());
            } else {
                eprintln!("{warning}");
            }
        }
        let name = self.out_name.clone().unwrap_or_else(|| {
            self.files[0]
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "idl".to_owned())
        });
        let path = out_dir.join(format!("{name}.rs"));
        write_if_changed(&path, &code).map_err(|source| BuildError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }
}

/// What one run of the front and back ends made.
struct Built {
    code: String,
    warnings: Vec<Diagnostic>,
    inputs: Vec<PathBuf>,
}

/// Writes `code` unless the file already holds it (so that cargo does not
/// rebuild what depends on it).
fn write_if_changed(path: &Path, code: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == code) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, code)
}

/// Runs `rustfmt` over `code`; `None` when it is not installed or fails.
pub(crate) fn rustfmt(code: &str) -> Option<String> {
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    let mut child = Command::new(rustfmt)
        .args(["--edition", "2021", "--emit", "stdout", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = code.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}

/// Every `.idl` file under `dir`, in its subdirectories too, sorted (an
/// unreadable directory contributes nothing): how a corpus of IDL files,
/// such as omniORB's, is gathered for compiling each on its own.
pub fn idl_files_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "idl") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
}
