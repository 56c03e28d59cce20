//! The OMG IDL compiler of Armillary: CORBA 3 core IDL in, Rust out (the
//! types with their CDR encoding and TypeCodes, a typed stub per
//! interface, and the servant trait and skeleton a server implements).
//!
//! # In `build.rs`
//!
//! [`Builder`] is the entry point, in the manner of `prost-build`. The
//! crate that uses the IDL lists `armillary-idl` under
//! `[build-dependencies]` and compiles its IDL from `build.rs`:
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     armillary_idl::Builder::new()
//!         .include_dir("idl")
//!         .file("idl/quoter.idl")
//!         .compile() // $OUT_DIR/quoter.rs, and cargo:rerun-if-changed for each IDL file read
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! and includes the result where it wants the generated module:
//!
//! ```ignore
//! // src/lib.rs
//! pub mod generated {
//!     armillary::include_idl!("quoter");
//! }
//! ```
//!
//! An IDL error fails the build with [`BuildError::Diagnostics`], whose
//! message shows each [`Diagnostic`] the way rustc does, pointing at the
//! file, line and column. [`Builder::generate`] returns the code without
//! writing it, for tests and tools:
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("armillary-idl-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let idl = dir.join("hello.idl");
//! std::fs::write(
//!     &idl,
//!     "module Demo { interface Hello { string greet(in string name); }; };",
//! )?;
//!
//! let (code, warnings) = armillary_idl::Builder::new().file(&idl).generate()?;
//! assert!(warnings.is_empty());
//! assert!(code.contains("pub struct Hello")); // the stub
//! assert!(code.contains("pub trait HelloServant")); // what a server implements
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The front end
//!
//! Below the builder, [`Frontend`] is the front end on its own: a
//! preprocessor, a lexer and parser, and the semantic checks that turn
//! the parse tree into a resolved [`ir::Spec`] — or into [`Diagnostic`]s
//! that point at the original file, line and column. Tools that read IDL
//! without generating Rust (`armillary idl check`) use it directly:
//!
//! ```no_run
//! let spec = armillary_idl::Frontend::new()
//!     .include_dir("/usr/share/idl/omniORB")
//!     .define("__OMNIIDL__", None)
//!     .parse_files(&["idl/echo.idl"])
//!     .unwrap_or_else(|error| {
//!         // Every diagnostic, rustc-style.
//!         eprintln!("{error}");
//!         std::process::exit(1);
//!     });
//! for &id in &spec.roots {
//!     println!("{} {}", spec[id].absolute_name(), spec[id].repository_id);
//! }
//! ```
//!
//! Pipeline: `preprocess` (tokens with original positions, pragmas and
//! file boundaries as tokens) → `parser` (parse tree) → `resolve`
//! (names resolved, rules checked, constants evaluated, repository ids
//! computed) → [`ir::Spec`]. Back ends consume only the IR; [`codegen`] is
//! the Rust one.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]
// The build.rs example of the crate docs shows its `fn main`, as the file has.
#![allow(clippy::needless_doctest_main)]

mod ast;
mod builder;
pub mod codegen;
mod diagnostic;
pub mod fuzzing;
pub mod ir;
mod lexer;
mod parser;
mod preprocess;
mod resolve;
mod source;

use std::io;
use std::path::{Path, PathBuf};

pub use builder::{idl_files_under, BuildError, Builder};
pub use diagnostic::{Diagnostic, Note, ParseError, Severity};
pub use source::{FileId, FileLoader, FsLoader, Loc, MemoryLoader, SourceFile};

use diagnostic::Diag;
use source::SourceMap;

/// A malformed `-D` definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefineError {
    /// The text before `=` was empty (`-D =1`).
    #[error("macro definition '{0}' has no name")]
    EmptyName(String),
    /// The name is not an identifier (`-D 1X`).
    #[error("macro name '{0}' is not an identifier")]
    InvalidName(String),
}

/// Parses a command-line definition `NAME` or `NAME=VALUE`.
///
/// ```
/// assert_eq!(
///     armillary_idl::parse_define("DEBUG=2"),
///     Ok(("DEBUG".to_owned(), Some("2".to_owned())))
/// );
/// assert_eq!(armillary_idl::parse_define("X"), Ok(("X".to_owned(), None)));
/// assert!(armillary_idl::parse_define("=1").is_err());
/// ```
pub fn parse_define(text: &str) -> Result<(String, Option<String>), DefineError> {
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (text, None),
    };
    if name.is_empty() {
        return Err(DefineError::EmptyName(text.to_owned()));
    }
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(DefineError::InvalidName(name.to_owned()));
    }
    Ok((name.to_owned(), value))
}

/// The configuration of the front end: include directories, predefined
/// macros, and where files come from.
pub struct Frontend {
    include_dirs: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    loader: Box<dyn FileLoader>,
    lenient: bool,
}

impl Default for Frontend {
    fn default() -> Self {
        Frontend::new()
    }
}

impl std::fmt::Debug for Frontend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frontend")
            .field("include_dirs", &self.include_dirs)
            .field("defines", &self.defines)
            .field("lenient", &self.lenient)
            .finish_non_exhaustive()
    }
}

impl Frontend {
    /// A front end that reads the file system, with no include
    /// directories and no definitions (`__ARMILLARY_IDL__` is always
    /// defined).
    pub fn new() -> Self {
        Frontend {
            include_dirs: Vec::new(),
            defines: Vec::new(),
            loader: Box::new(FsLoader),
            lenient: false,
        }
    }

    /// Accepts, with a warning, what CORBA IDL forbids but some IDL
    /// written for other tools uses: an anonymous `sequence<...>` as a
    /// parameter, result or attribute type. Off by default, so that IDL
    /// written against Armillary stays portable to omniidl and JacORB.
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.lenient = lenient;
        self
    }

    /// Adds a directory to search for `#include` files (`-I`).
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    /// Defines a macro (`-D NAME` when `value` is `None`, which defines it
    /// as `1`; `-D NAME=VALUE` otherwise).
    pub fn define(mut self, name: impl Into<String>, value: Option<&str>) -> Self {
        self.defines.push((name.into(), value.map(str::to_owned)));
        self
    }

    /// Reads files through `loader` instead of the file system.
    pub fn loader(mut self, loader: impl FileLoader + 'static) -> Self {
        self.loader = Box::new(loader);
        self
    }

    /// Parses and checks the main files `paths` (and what they include)
    /// into one resolved specification.
    ///
    /// # Errors
    ///
    /// When the IDL has an error: a [`ParseError`] with every diagnostic
    /// (errors and warnings).
    pub fn parse_files<P: AsRef<Path>>(&self, paths: &[P]) -> Result<ir::Spec, ParseError> {
        let paths: Vec<&Path> = paths.iter().map(AsRef::as_ref).collect();
        run(
            self.loader.as_ref(),
            &paths,
            &self.include_dirs,
            &self.defines,
            self.lenient,
        )
        .map_err(ParseError::new)
    }

    /// Like [`Frontend::parse_files`] but only reports: every diagnostic,
    /// errors and warnings, in the order found (empty for a clean input).
    pub fn check<P: AsRef<Path>>(&self, paths: &[P]) -> Vec<Diagnostic> {
        match self.parse_files(paths) {
            Ok(spec) => spec.warnings,
            Err(error) => error.into_diagnostics(),
        }
    }

    /// Parses IDL text as if it were the file `name` (its `#include`s are
    /// read through the configured loader).
    ///
    /// # Errors
    ///
    /// As [`Frontend::parse_files`].
    pub fn parse_str(&self, name: &str, text: &str) -> Result<ir::Spec, ParseError> {
        let mut memory = MemoryLoader::new();
        memory.insert(name, text);
        let overlay = Overlay {
            first: &memory,
            second: self.loader.as_ref(),
        };
        run(
            &overlay,
            &[Path::new(name)],
            &self.include_dirs,
            &self.defines,
            self.lenient,
        )
        .map_err(ParseError::new)
    }
}

/// Parses and checks IDL files: `paths` are the main files, `include_dirs`
/// the `-I` directories, `defines` the `-D` macros (`(name, None)` means
/// `name=1`). See [`Frontend`] for a builder.
///
/// # Errors
///
/// As [`Frontend::parse_files`].
pub fn parse_files<P: AsRef<Path>>(
    paths: &[P],
    include_dirs: &[PathBuf],
    defines: &[(String, Option<String>)],
) -> Result<ir::Spec, ParseError> {
    let paths: Vec<&Path> = paths.iter().map(AsRef::as_ref).collect();
    run(&FsLoader, &paths, include_dirs, defines, false).map_err(ParseError::new)
}

/// Checks IDL files and returns every diagnostic (empty when clean).
pub fn check<P: AsRef<Path>>(
    paths: &[P],
    include_dirs: &[PathBuf],
    defines: &[(String, Option<String>)],
) -> Vec<Diagnostic> {
    match parse_files(paths, include_dirs, defines) {
        Ok(spec) => spec.warnings,
        Err(error) => error.into_diagnostics(),
    }
}

/// Reads from `first`, then from `second`.
struct Overlay<'a> {
    first: &'a MemoryLoader,
    second: &'a dyn FileLoader,
}

impl FileLoader for Overlay<'_> {
    fn read(&self, path: &Path) -> io::Result<String> {
        match self.first.identity(path) {
            Some(_) => self.first.read(path),
            None => self.second.read(path),
        }
    }

    fn identity(&self, path: &Path) -> Option<PathBuf> {
        self.first
            .identity(path)
            .or_else(|| self.second.identity(path))
    }
}

fn run(
    loader: &dyn FileLoader,
    paths: &[&Path],
    include_dirs: &[PathBuf],
    defines: &[(String, Option<String>)],
    lenient: bool,
) -> Result<ir::Spec, Vec<Diagnostic>> {
    let mut sources = SourceMap::default();
    let mut diags: Vec<Diag> = Vec::new();
    let mut units = Vec::new();
    {
        let mut preprocessor =
            preprocess::Preprocessor::new(loader, &mut sources, include_dirs, defines, &mut diags);
        for path in paths {
            if let Some(unit) = preprocessor.run(path) {
                units.push(unit);
            }
        }
    }
    if paths.is_empty() {
        return Err(vec![Diagnostic {
            severity: Severity::Error,
            message: "no IDL files given".into(),
            file: PathBuf::new(),
            line: 0,
            col: 0,
            source_line: None,
            notes: Vec::new(),
        }]);
    }
    let has_errors = |diags: &[Diag]| diags.iter().any(|d| d.severity == Severity::Error);
    if has_errors(&diags) {
        return Err(finish_diags(diags, &sources));
    }
    let mut parsed = Vec::new();
    for unit in units {
        let (result, warnings) = parser::parse(unit.tokens);
        diags.extend(warnings);
        match result {
            Ok(items) => parsed.push(items),
            Err(diag) => diags.push(diag),
        }
    }
    if has_errors(&diags) {
        return Err(finish_diags(diags, &sources));
    }
    let mut resolver = resolve::Resolver::new(&sources, lenient);
    for items in &parsed {
        resolver.add_unit(items);
    }
    let (mut spec, resolve_diags) = resolver.finish();
    diags.extend(resolve_diags);
    if has_errors(&diags) {
        return Err(finish_diags(diags, &sources));
    }
    spec.warnings = finish_diags(diags, &sources);
    Ok(spec)
}

fn finish_diags(diags: Vec<Diag>, sources: &SourceMap) -> Vec<Diagnostic> {
    let mut seen = std::collections::HashSet::new();
    diags
        .into_iter()
        // The same file read by two translation units reports once.
        .filter(|d| seen.insert((d.loc, d.message.clone())))
        .map(|d| d.into_diagnostic(sources))
        .collect()
}
