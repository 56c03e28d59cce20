//! The files a compilation reads: where they live, their text, and positions
//! inside them.
//!
//! Every token and every diagnostic carries a [`Loc`] that points into the
//! ORIGINAL file it came from (the preprocessor never renumbers lines), so a
//! message about an included file names that file, not the includer.
//! Files are read through a [`FileLoader`], so tests and fuzzers can run the
//! whole front end on in-memory files.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// Identifies one source file of a compilation; an index into its file table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub(crate) u32);

impl FileId {
    /// The file table index of this file.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A position in a source file: 1-based line and column (columns count
/// characters, a tab counts as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    /// The file the position is in.
    pub file: FileId,
    /// Line, starting at 1; 0 when the position is a whole file.
    pub line: u32,
    /// Column, starting at 1; 0 when the position is a whole file.
    pub col: u32,
}

impl Loc {
    /// The start of `file`.
    pub(crate) fn file_start(file: FileId) -> Loc {
        Loc {
            file,
            line: 1,
            col: 1,
        }
    }
}

/// How the front end reads files: the real file system, or a map of
/// in-memory files for tests.
pub trait FileLoader: Send + Sync {
    /// Reads the whole file at `path` as UTF-8 text.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// Returns a key that is equal for two paths naming the same file, or
    /// `None` when the file does not exist.
    fn identity(&self, path: &Path) -> Option<PathBuf>;
}

/// Reads files from the file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsLoader;

impl FileLoader for FsLoader {
    fn read(&self, path: &Path) -> io::Result<String> {
        let bytes = std::fs::read(path)?;
        // IDL files are ASCII or Latin-1 in practice; accept any byte by
        // mapping invalid UTF-8 sequences to U+FFFD rather than failing.
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        })
    }

    fn identity(&self, path: &Path) -> Option<PathBuf> {
        if path.is_file() {
            std::fs::canonicalize(path).ok()
        } else {
            None
        }
    }
}

/// Serves files from memory; paths are compared after lexical
/// normalisation (`a/./b/../c` is `a/c`).
#[derive(Debug, Clone, Default)]
pub struct MemoryLoader {
    files: HashMap<PathBuf, String>,
}

impl MemoryLoader {
    /// An empty set of files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the file at `path`.
    pub fn insert(&mut self, path: impl AsRef<Path>, text: impl Into<String>) -> &mut Self {
        self.files.insert(normalize(path.as_ref()), text.into());
        self
    }
}

impl FileLoader for MemoryLoader {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.files
            .get(&normalize(path))
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "No such file or directory"))
    }

    fn identity(&self, path: &Path) -> Option<PathBuf> {
        let key = normalize(path);
        self.files.contains_key(&key).then_some(key)
    }
}

/// Removes `.` components and folds `x/..` pairs, without touching the file
/// system.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let can_pop = matches!(out.components().next_back(), Some(Component::Normal(_)));
                if can_pop {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// One file of a compilation.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as it was found (the include directory joined with the
    /// name), used in diagnostics.
    pub path: PathBuf,
    /// Whether the file was named on the command line (as opposed to only
    /// being included).
    pub is_main: bool,
    /// Where the file was first included from (`None` for main files).
    pub included_at: Option<Loc>,
    pub(crate) identity: PathBuf,
    pub(crate) text: String,
}

impl SourceFile {
    /// The text of 1-based `line`, without its line terminator.
    pub fn line_text(&self, line: u32) -> Option<&str> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        self.text
            .split('\n')
            .nth(index)
            .map(|text| text.strip_suffix('\r').unwrap_or(text))
    }
}

/// The file table of one compilation.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
    by_identity: HashMap<PathBuf, FileId>,
}

impl SourceMap {
    /// Adds a file, or returns the existing entry for the same identity.
    pub(crate) fn add(&mut self, path: PathBuf, identity: PathBuf, text: String) -> FileId {
        if let Some(&id) = self.by_identity.get(&identity) {
            return id;
        }
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.by_identity.insert(identity.clone(), id);
        self.files.push(SourceFile {
            path,
            is_main: false,
            included_at: None,
            identity,
            text,
        });
        id
    }

    /// The file already loaded under `identity`, if any.
    pub(crate) fn lookup(&self, identity: &Path) -> Option<FileId> {
        self.by_identity.get(identity).copied()
    }

    /// Marks `id` as a main file (named on the command line).
    pub(crate) fn set_main(&mut self, id: FileId) {
        if let Some(file) = self.files.get_mut(id.index()) {
            file.is_main = true;
            file.included_at = None;
        }
    }

    /// Records where `id` was first included from.
    pub(crate) fn set_included_at(&mut self, id: FileId, loc: Loc) {
        if let Some(file) = self.files.get_mut(id.index()) {
            if file.included_at.is_none() && !file.is_main {
                file.included_at = Some(loc);
            }
        }
    }

    /// The file with identifier `id`.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.index())
    }

    /// The text of file `id` (empty if unknown).
    pub(crate) fn text(&self, id: FileId) -> &str {
        self.get(id).map_or("", |file| file.text.as_str())
    }

    /// All files, indexed by [`FileId::index`].
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_dots() {
        assert_eq!(
            normalize(Path::new("a/./b/../c.idl")),
            PathBuf::from("a/c.idl")
        );
        assert_eq!(normalize(Path::new("../x.idl")), PathBuf::from("../x.idl"));
    }

    #[test]
    fn line_text_strips_carriage_returns() {
        let mut map = SourceMap::default();
        let id = map.add("a.idl".into(), "a.idl".into(), "one\r\ntwo\n".into());
        let file = map.get(id).unwrap();
        assert_eq!(file.line_text(1), Some("one"));
        assert_eq!(file.line_text(2), Some("two"));
        assert_eq!(file.line_text(0), None);
    }
}
