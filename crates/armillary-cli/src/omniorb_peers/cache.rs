//! A directory of builds, one per key: `<root>/<key>/`, built once and
//! reused afterwards.
//!
//! A build is made in a directory of its own next to its final place
//! (`<root>/.<key>.<pid>.<n>.building`) and renamed into place when it is
//! complete, so a `<root>/<key>` that exists is a whole build: processes
//! that build the same key at the same time each build and rename, the
//! first rename wins and the others use the winner's build and remove
//! their own. A `<root>/<key>` that is not complete (made by hand, or by
//! an older `armillary`) is moved aside and replaced. Builds of other
//! keys are left alone (an older `armillary` may be using them).
//!
//! Where the root is: [`root`].

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why the cache could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CacheError {
    /// A file system operation on the cache failed (permissions, disk
    /// full, a file where a directory should be).
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`create`, `rename`).
        action: &'static str,
        /// Where.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The build reported success but left out part of what makes a build
    /// complete.
    #[error("the build in {} finished incomplete", path.display())]
    Incomplete {
        /// The build's directory.
        path: PathBuf,
    },
}

/// How [`get_or_build`] got its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A build was already there (possibly one that another process
    /// finished while this one was building too).
    Reused,
    /// This call built it.
    Built,
}

/// The root of the peers' cache, from the environment's values of
/// `ARMILLARY_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME`:
/// `$ARMILLARY_CACHE_DIR/peers`, else `$XDG_CACHE_HOME/armillary/peers`,
/// else `$HOME/.cache/armillary/peers`. Empty values count as unset, and
/// so does a relative `XDG_CACHE_HOME` (as the XDG specification says).
/// `None` when none applies.
pub(crate) fn root(
    armillary_cache_dir: Option<OsString>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(armillary_cache_dir) {
        return Some(dir.join("peers"));
    }
    if let Some(dir) = set(xdg_cache_home).filter(|d| d.is_absolute()) {
        return Some(dir.join("armillary/peers"));
    }
    set(home).map(|home| home.join(".cache/armillary/peers"))
}

/// `<root>/<key>`, built by `build` unless a complete one is there
/// (`is_complete` says what complete is). `build` is given an empty
/// directory to build in; its error is returned as is (nothing of the
/// failed build is kept).
pub(crate) fn get_or_build<E: From<CacheError>>(
    root: &Path,
    key: &str,
    is_complete: impl Fn(&Path) -> bool,
    build: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(PathBuf, Outcome), E> {
    let dir = root.join(key);
    if is_complete(&dir) {
        return Ok((dir, Outcome::Reused));
    }
    std::fs::create_dir_all(root).map_err(|e| io_error("create", root, e))?;
    let work = scratch(root, key, "building");
    std::fs::create_dir(&work).map_err(|e| io_error("create", &work, e))?;
    if let Err(e) = build(&work) {
        remove(&work);
        return Err(e);
    }
    if !is_complete(&work) {
        remove(&work);
        return Err(CacheError::Incomplete { path: work }.into());
    }
    // Twice at most: once more after moving an incomplete one aside.
    for _ in 0..2 {
        match std::fs::rename(&work, &dir) {
            Ok(()) => return Ok((dir, Outcome::Built)),
            Err(_) if is_complete(&dir) => {
                // Another process finished first: use its build.
                remove(&work);
                return Ok((dir, Outcome::Reused));
            }
            Err(e) if !dir.exists() => {
                remove(&work);
                return Err(io_error("rename", &work, e).into());
            }
            Err(_) => {
                let stale = scratch(root, key, "stale");
                // It may have been replaced by a complete one meanwhile:
                // the next rename then finds that.
                if std::fs::rename(&dir, &stale).is_ok() {
                    remove(&stale);
                }
            }
        }
    }
    remove(&work);
    Err(CacheError::Incomplete { path: dir }.into())
}

/// A name in `root` that no other call, in this process or another, uses.
fn scratch(root: &Path, key: &str, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    root.join(format!(".{key}.{}.{n}.{what}", std::process::id()))
}

fn remove(dir: &Path) {
    // Best effort: what is left is a stray directory, never a wrong build.
    let _ = std::fs::remove_dir_all(dir);
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> CacheError {
    CacheError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    use super::*;

    /// An empty directory of its own for one test.
    fn test_root(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "armillary-peers-cache-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn complete(dir: &Path) -> bool {
        dir.join("program").is_file()
    }

    /// A build that writes `program` (containing `text`) and counts
    /// itself.
    fn build_writing<'a>(
        text: &'a str,
        builds: &'a AtomicUsize,
    ) -> impl FnOnce(&Path) -> Result<(), CacheError> + 'a {
        move |dir| {
            builds.fetch_add(1, Ordering::SeqCst);
            assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "not empty");
            std::fs::write(dir.join("program"), text).unwrap();
            Ok(())
        }
    }

    /// What is in `root` besides finished builds.
    fn leftovers(root: &Path) -> Vec<String> {
        std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.'))
            .collect()
    }

    #[test]
    fn a_build_is_made_once_then_reused() {
        let root = test_root("once");
        let builds = AtomicUsize::new(0);
        let (dir, outcome) =
            get_or_build(&root, "k1", complete, build_writing("one", &builds)).unwrap();
        assert_eq!(outcome, Outcome::Built);
        assert_eq!(dir, root.join("k1"));
        assert_eq!(std::fs::read_to_string(dir.join("program")).unwrap(), "one");
        for _ in 0..3 {
            let (again, outcome) =
                get_or_build(&root, "k1", complete, build_writing("two", &builds)).unwrap();
            assert_eq!((again, outcome), (dir.clone(), Outcome::Reused));
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert_eq!(std::fs::read_to_string(dir.join("program")).unwrap(), "one");
        assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn another_key_is_built_anew_and_the_old_build_kept() {
        let root = test_root("rekey");
        let builds = AtomicUsize::new(0);
        get_or_build(&root, "k1", complete, build_writing("one", &builds)).unwrap();
        let (dir, outcome) =
            get_or_build(&root, "k2", complete, build_writing("two", &builds)).unwrap();
        assert_eq!((dir.clone(), outcome), (root.join("k2"), Outcome::Built));
        assert_eq!(builds.load(Ordering::SeqCst), 2);
        assert_eq!(std::fs::read_to_string(dir.join("program")).unwrap(), "two");
        assert!(complete(&root.join("k1")));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn builders_racing_for_one_key_leave_one_whole_build() {
        let root = test_root("race");
        const BUILDERS: usize = 4;
        // Every builder is inside its build before any finishes, so all of
        // them build and all of them race to rename.
        let inside = Arc::new(Barrier::new(BUILDERS));
        let threads: Vec<_> = (0..BUILDERS)
            .map(|i| {
                let (root, inside) = (root.clone(), Arc::clone(&inside));
                std::thread::spawn(move || {
                    get_or_build(&root, "k", complete, |dir| {
                        inside.wait();
                        std::fs::write(dir.join("program"), format!("builder {i}"))
                            .map_err(|e| io_error("write", dir, e))
                    })
                    .unwrap()
                })
            })
            .collect();
        let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let built = outcomes
            .iter()
            .filter(|(_, o)| *o == Outcome::Built)
            .count();
        assert_eq!(built, 1, "{outcomes:?}");
        assert!(outcomes.iter().all(|(dir, _)| *dir == root.join("k")));
        let text = std::fs::read_to_string(root.join("k/program")).unwrap();
        assert!(text.starts_with("builder "), "{text}");
        assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_failed_build_leaves_nothing() {
        let root = test_root("fail");
        let result = get_or_build(&root, "k", complete, |dir| {
            std::fs::write(dir.join("half"), "").unwrap();
            Err(io_error("build", dir, io::Error::other("compiler error")))
        });
        assert!(
            matches!(
                result,
                Err(CacheError::Io {
                    action: "build",
                    ..
                })
            ),
            "{result:?}"
        );
        // A build that claims success without the program is refused.
        let result = get_or_build(&root, "k", complete, |_: &Path| Ok::<_, CacheError>(()));
        assert!(
            matches!(result, Err(CacheError::Incomplete { .. })),
            "{result:?}"
        );
        assert!(!root.join("k").exists());
        assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn an_incomplete_directory_in_place_is_replaced() {
        let root = test_root("stale");
        std::fs::create_dir_all(root.join("k")).unwrap();
        std::fs::write(root.join("k/half"), "").unwrap();
        let builds = AtomicUsize::new(0);
        let (dir, outcome) =
            get_or_build(&root, "k", complete, build_writing("whole", &builds)).unwrap();
        assert_eq!(outcome, Outcome::Built);
        assert_eq!(
            std::fs::read_to_string(dir.join("program")).unwrap(),
            "whole"
        );
        assert!(!dir.join("half").exists());
        assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn the_root_follows_the_environment() {
        let s = |v: &str| Some(OsString::from(v));
        let p = |v: &str| Some(PathBuf::from(v));
        assert_eq!(root(s("/a"), s("/x"), s("/h")), p("/a/peers"));
        assert_eq!(root(None, s("/x"), s("/h")), p("/x/armillary/peers"));
        assert_eq!(root(s(""), s("/x"), s("/h")), p("/x/armillary/peers"));
        assert_eq!(root(None, None, s("/h")), p("/h/.cache/armillary/peers"));
        // A relative XDG_CACHE_HOME is ignored.
        assert_eq!(
            root(None, s("rel"), s("/h")),
            p("/h/.cache/armillary/peers")
        );
        assert_eq!(root(None, s(""), s("")), None);
        assert_eq!(root(None, None, None), None);
    }
}
