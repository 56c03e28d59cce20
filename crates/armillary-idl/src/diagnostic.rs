//! Diagnostics: what the front end says about an IDL file, as values.
//!
//! Inside the front end a diagnostic is a [`Diag`] that points at a [`Loc`];
//! at the API boundary it becomes a [`Diagnostic`] that names the file by
//! path and carries the offending source line, so it can be printed
//! without the file table. [`Diagnostic`]'s `Display` is rustc's layout:
//!
//! ```text
//! error: redefinition of 'Foo'
//!  --> a.idl:3:12
//!   |
//! 3 |     struct Foo {};
//!   |            ^
//!   = note: previous definition of 'Foo' is at a.idl:1:8
//! ```

use std::fmt;
use std::path::PathBuf;

use crate::source::{Loc, SourceMap};

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The input is accepted; something in it is suspicious.
    Warning,
    /// The input is not valid IDL; no IR is produced.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// A secondary message attached to a diagnostic, such as where a clashing
/// name was first declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The note's text.
    pub message: String,
    /// Where the note points, as `file:line:col`, if it points anywhere.
    pub location: Option<String>,
}

/// One message about the input, with the position it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// One line saying what is wrong.
    pub message: String,
    /// The file the message is about, as the front end found it.
    pub file: PathBuf,
    /// 1-based line; 0 when the message is about the whole file.
    pub line: u32,
    /// 1-based column (in characters); 0 when the message is about the
    /// whole file.
    pub col: u32,
    /// The text of `line`, when the file could be read.
    pub source_line: Option<String>,
    /// Further information, such as the location of a previous definition.
    pub notes: Vec<Note>,
}

impl Diagnostic {
    /// Whether this is an error (as opposed to a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The compact one-line form `file:line:col: severity: message`.
    ///
    /// ```
    /// # use armillary_idl::{Diagnostic, Severity};
    /// let diagnostic = Diagnostic {
    ///     severity: Severity::Error,
    ///     message: "redefinition of 'Foo'".into(),
    ///     file: "a.idl".into(),
    ///     line: 3,
    ///     col: 12,
    ///     source_line: None,
    ///     notes: vec![],
    /// };
    /// assert_eq!(diagnostic.one_line(), "a.idl:3:12: error: redefinition of 'Foo'");
    /// ```
    pub fn one_line(&self) -> String {
        if self.file.as_os_str().is_empty() {
            format!("{}: {}", self.severity, self.message)
        } else if self.line == 0 {
            format!(
                "{}: {}: {}",
                self.file.display(),
                self.severity,
                self.message
            )
        } else {
            format!(
                "{}:{}:{}: {}: {}",
                self.file.display(),
                self.line,
                self.col,
                self.severity,
                self.message
            )
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)?;
        let line_number = self.line.to_string();
        let gutter = " ".repeat(line_number.len());
        if self.file.as_os_str().is_empty() {
            // Not about any file: the message alone.
        } else if self.line == 0 {
            write!(f, "\n{gutter}--> {}", self.file.display())?;
        } else {
            write!(
                f,
                "\n{gutter}--> {}:{}:{}",
                self.file.display(),
                self.line,
                self.col
            )?;
            if let Some(source_line) = &self.source_line {
                let shown = source_line.replace('\t', "    ");
                // The caret sits under column `col`: pad with the width of
                // the characters before it, tabs shown as four spaces.
                let width: usize = source_line
                    .chars()
                    .take(self.col.saturating_sub(1) as usize)
                    .map(|c| if c == '\t' { 4 } else { 1 })
                    .sum();
                write!(
                    f,
                    "\n{gutter} |\n{line_number} | {shown}\n{gutter} | {}^",
                    " ".repeat(width)
                )?;
            }
        }
        for note in &self.notes {
            match &note.location {
                Some(location) => write!(f, "\n{gutter} = note: {} ({location})", note.message)?,
                None => write!(f, "\n{gutter} = note: {}", note.message)?,
            }
        }
        Ok(())
    }
}

/// The IDL has errors: what [`Frontend::parse_files`](crate::Frontend::parse_files)
/// returns instead of a specification. It holds every diagnostic, errors
/// and warnings, in the order found; `Display` renders them all, rustc-style.
///
/// ```
/// let error = armillary_idl::Frontend::new()
///     .parse_str("bad.idl", "struct S { long x; }")
///     .unwrap_err();
/// assert!(error.errors().count() >= 1);
/// assert!(error.to_string().contains("bad.idl"));
/// let _: &dyn std::error::Error = &error;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    diagnostics: Vec<Diagnostic>,
}

impl ParseError {
    /// An error made of `diagnostics` (at least one of which should be an
    /// error).
    pub fn new(diagnostics: Vec<Diagnostic>) -> Self {
        ParseError { diagnostics }
    }

    /// Every diagnostic, errors and warnings, in the order found.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The errors alone.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// Every diagnostic, by value.
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        self.diagnostics
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, diagnostic) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{diagnostic}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

impl From<ParseError> for Vec<Diagnostic> {
    fn from(error: ParseError) -> Self {
        error.diagnostics
    }
}

/// A diagnostic inside the front end, before it is resolved against the
/// file table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diag {
    pub(crate) severity: Severity,
    pub(crate) loc: Loc,
    pub(crate) message: String,
    pub(crate) notes: Vec<(Option<Loc>, String)>,
}

impl Diag {
    pub(crate) fn error(loc: Loc, message: impl Into<String>) -> Diag {
        Diag {
            severity: Severity::Error,
            loc,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn warning(loc: Loc, message: impl Into<String>) -> Diag {
        Diag {
            severity: Severity::Warning,
            loc,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    /// Adds a note that points at `loc`.
    pub(crate) fn note_at(mut self, loc: Loc, message: impl Into<String>) -> Diag {
        self.notes.push((Some(loc), message.into()));
        self
    }

    /// Adds a note that points nowhere.
    pub(crate) fn note(mut self, message: impl Into<String>) -> Diag {
        self.notes.push((None, message.into()));
        self
    }

    /// Resolves the location against the file table; a diagnostic in an
    /// included file gets notes that say where it was included from.
    pub(crate) fn into_diagnostic(self, sources: &SourceMap) -> Diagnostic {
        let file = sources.get(self.loc.file);
        let mut notes: Vec<Note> = self
            .notes
            .into_iter()
            .map(|(loc, message)| Note {
                message,
                location: loc.map(|loc| location_string(sources, loc)),
            })
            .collect();
        let mut including = file.and_then(|f| f.included_at);
        // The include chain is at most as long as the file table.
        for _ in 0..sources.files().len() {
            let Some(loc) = including else {
                break;
            };
            notes.push(Note {
                message: "in the file included from here".into(),
                location: Some(location_string(sources, loc)),
            });
            including = sources.get(loc.file).and_then(|f| f.included_at);
        }
        Diagnostic {
            severity: self.severity,
            message: self.message,
            file: file.map(|file| file.path.clone()).unwrap_or_default(),
            line: self.loc.line,
            col: self.loc.col,
            source_line: file
                .and_then(|file| file.line_text(self.loc.line))
                .map(str::to_owned),
            notes,
        }
    }
}

/// `file:line:col` for a location.
pub(crate) fn location_string(sources: &SourceMap, loc: Loc) -> String {
    let path = sources
        .get(loc.file)
        .map(|file| file.path.display().to_string())
        .unwrap_or_default();
    if loc.line == 0 {
        path
    } else {
        format!("{path}:{}:{}", loc.line, loc.col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: "redefinition of 'Foo'".into(),
            file: "a.idl".into(),
            line: 3,
            col: 12,
            source_line: Some("    struct Foo {};".into()),
            notes: vec![Note {
                message: "previous definition of 'Foo'".into(),
                location: Some("a.idl:1:8".into()),
            }],
        }
    }

    #[test]
    fn display_is_rustc_style() {
        let expected = "error: redefinition of 'Foo'\n --> a.idl:3:12\n  |\n3 |     struct Foo {};\n  |            ^\n  = note: previous definition of 'Foo' (a.idl:1:8)";
        assert_eq!(sample().to_string(), expected);
    }

    #[test]
    fn caret_accounts_for_tabs() {
        let mut diagnostic = sample();
        diagnostic.source_line = Some("\tstruct Foo {};".into());
        diagnostic.col = 9;
        diagnostic.notes.clear();
        let text = diagnostic.to_string();
        assert!(
            text.ends_with("3 |     struct Foo {};\n  |            ^"),
            "{text}"
        );
    }

    #[test]
    fn whole_file_diagnostics_have_no_source_line() {
        let mut diagnostic = sample();
        diagnostic.line = 0;
        diagnostic.col = 0;
        diagnostic.notes.clear();
        assert_eq!(
            diagnostic.to_string(),
            "error: redefinition of 'Foo'\n --> a.idl"
        );
        assert_eq!(diagnostic.one_line(), "a.idl: error: redefinition of 'Foo'");
    }
}
