//! A cheap identity for the calling thread: [`ThreadKey::current`] reads
//! a thread-local number, where `std::thread::current().id()` clones the
//! thread's handle (two atomic reference-count updates). For the checks
//! a request makes on its way ("is this the thread that read it?"), which
//! run on every call.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

/// The identity of a thread, unique for the life of the process (a
/// thread's key is never reused, even after it ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ThreadKey(NonZeroU64);

/// The next thread's key.
static NEXT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static KEY: ThreadKey = ThreadKey(NonZeroU64::MIN.saturating_add(NEXT.fetch_add(1, Ordering::Relaxed)));
}

impl ThreadKey {
    /// The calling thread's key.
    pub(crate) fn current() -> ThreadKey {
        KEY.with(|key| *key)
    }

    /// The key as a number (never 0).
    pub(crate) fn get(self) -> u64 {
        self.0.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_key_and_no_other_thread_has_it() {
        let mine = ThreadKey::current();
        assert_eq!(ThreadKey::current(), mine);
        let others: Vec<ThreadKey> = (0..4)
            .map(|_| std::thread::spawn(ThreadKey::current).join().unwrap())
            .collect();
        for (i, other) in others.iter().enumerate() {
            assert_ne!(*other, mine);
            assert!(others[..i].iter().all(|earlier| earlier != other));
        }
    }
}
