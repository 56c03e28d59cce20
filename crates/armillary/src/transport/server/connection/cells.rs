//! The small pieces of a connection's state that every request reads or
//! sets, each in one atomic rather than under a lock: the GIOP version
//! of its own messages, whether it is refused, its code sets, when it was
//! last active and when the message being received began, and which
//! thread holds its replies.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use armillary_giop::cdr::codeset::{CharCodeSet, CodeSets, WCharCodeSet};
use armillary_giop::GiopVersion;

use crate::thread_key::ThreadKey;

/// The GIOP version of a connection's own messages (CloseConnection,
/// MessageError): its latest request's, which every request sets, so it
/// is one atomic rather than a lock.
#[derive(Debug)]
pub(super) struct ConnectionVersion(AtomicU16);

impl ConnectionVersion {
    pub(super) fn new(version: GiopVersion) -> Self {
        ConnectionVersion(AtomicU16::new(pack_version(version)))
    }

    pub(super) fn get(&self) -> GiopVersion {
        unpack_version(self.0.load(Ordering::Acquire))
    }

    pub(super) fn set(&self, version: GiopVersion) {
        self.0.store(pack_version(version), Ordering::Release);
    }
}

/// Whether the connection is refused, and the version its MessageError
/// goes out in: the first refusal's (see `ServerConnection::refused`).
/// Every read asks, so it is one atomic: 0 while not refused (a GIOP
/// version is 1.0 or later, never 0).
#[derive(Debug, Default)]
pub(super) struct Refusal(AtomicU16);

impl Refusal {
    pub(super) fn get(&self) -> Option<GiopVersion> {
        let bits = self.0.load(Ordering::Acquire);
        (bits != 0).then(|| unpack_version(bits))
    }

    /// Refuses in `version`, unless refused already.
    pub(super) fn refuse(&self, version: GiopVersion) {
        let _ = self.0.compare_exchange(
            0,
            pack_version(version),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

/// An instant after the connection opened (its `opened`), or none, in
/// one atomic: nanoseconds since then, 0 for none. Every read records
/// the connection's activity and whether a message is being received,
/// so these take no lock.
#[derive(Debug, Default)]
pub(super) struct InstantCell(AtomicU64);

impl InstantCell {
    /// A cell holding none.
    pub(super) fn new() -> Self {
        InstantCell::default()
    }

    pub(super) fn get(&self, opened: Instant) -> Option<Instant> {
        let nanos = self.0.load(Ordering::Acquire);
        (nanos != 0).then(|| opened + Duration::from_nanos(nanos))
    }

    /// Records `at` (an instant at or before `opened` counts as 1 ns
    /// after it).
    pub(super) fn set(&self, at: Option<Instant>, opened: Instant) {
        let nanos = at.map_or(0, |at| {
            let since = at.saturating_duration_since(opened).as_nanos();
            u64::try_from(since).unwrap_or(u64::MAX).max(1)
        });
        self.0.store(nanos, Ordering::Release);
    }
}

fn pack_version(version: GiopVersion) -> u16 {
    u16::from_be_bytes([version.major, version.minor])
}

fn unpack_version(bits: u16) -> GiopVersion {
    let [major, minor] = bits.to_be_bytes();
    GiopVersion { major, minor }
}

/// The code sets a connection's requests and replies use: the defaults
/// until a request announces others. Every request reads them, so they
/// are one atomic rather than a lock: two code sets and a flag fit one
/// octet.
#[derive(Debug)]
pub(super) struct ConnectionCodeSets(AtomicU8);

impl ConnectionCodeSets {
    const UTF8: u8 = 1;
    const UTF16: u8 = 2;
    const UCS2: u8 = 4;
    const BOM: u8 = 8;

    pub(super) fn new(codesets: CodeSets) -> Self {
        ConnectionCodeSets(AtomicU8::new(Self::pack(codesets)))
    }

    fn pack(codesets: CodeSets) -> u8 {
        let char_set = match codesets.char_set {
            CharCodeSet::Iso8859_1 => 0,
            CharCodeSet::Utf8 => Self::UTF8,
        };
        let wchar_set = match codesets.wchar_set {
            None => 0,
            Some(WCharCodeSet::Utf16) => Self::UTF16,
            Some(WCharCodeSet::Ucs2) => Self::UCS2,
        };
        char_set | wchar_set | if codesets.write_bom { Self::BOM } else { 0 }
    }

    pub(super) fn get(&self) -> CodeSets {
        let bits = self.0.load(Ordering::Acquire);
        CodeSets {
            char_set: if bits & Self::UTF8 != 0 {
                CharCodeSet::Utf8
            } else {
                CharCodeSet::Iso8859_1
            },
            wchar_set: if bits & Self::UTF16 != 0 {
                Some(WCharCodeSet::Utf16)
            } else if bits & Self::UCS2 != 0 {
                Some(WCharCodeSet::Ucs2)
            } else {
                None
            },
            write_bom: bits & Self::BOM != 0,
        }
    }

    pub(super) fn set(&self, codesets: CodeSets) {
        self.0.store(Self::pack(codesets), Ordering::Release);
    }
}

/// The thread holding a connection's replies (`HeldReplies`), if one
/// does: every reply asks whether its thread is the one, so it is one
/// atomic, not a lock (0: none).
#[derive(Debug, Default)]
pub(super) struct ReplyHolder(AtomicU64);

impl ReplyHolder {
    /// Makes `thread` the holder, unless a thread is.
    pub(super) fn take(&self, thread: ThreadKey) -> bool {
        self.0
            .compare_exchange(0, thread.get(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether `thread` is the holder.
    pub(super) fn is(&self, thread: ThreadKey) -> bool {
        self.0.load(Ordering::Acquire) == thread.get()
    }

    /// No thread holds the replies any more.
    pub(super) fn let_go(&self) {
        self.0.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_cells_give_back_what_they_hold() {
        let opened = Instant::now();
        let cell = InstantCell::new();
        assert_eq!(cell.get(opened), None);
        let later = opened + Duration::from_millis(1500);
        cell.set(Some(later), opened);
        assert_eq!(cell.get(opened), Some(later));
        // The opening instant itself (or one before it) is still an instant.
        cell.set(Some(opened), opened);
        assert_eq!(cell.get(opened), Some(opened + Duration::from_nanos(1)));
        cell.set(None, opened);
        assert_eq!(cell.get(opened), None);
    }

    #[test]
    fn a_refusal_keeps_the_first_version() {
        let refusal = Refusal::default();
        assert_eq!(refusal.get(), None);
        refusal.refuse(GiopVersion::V1_1);
        refusal.refuse(GiopVersion::V1_2);
        assert_eq!(refusal.get(), Some(GiopVersion::V1_1));
    }

    #[test]
    fn connection_code_sets_keep_every_combination() {
        let chars = [CharCodeSet::Iso8859_1, CharCodeSet::Utf8];
        let wchars = [None, Some(WCharCodeSet::Utf16), Some(WCharCodeSet::Ucs2)];
        let held = ConnectionCodeSets::new(CodeSets::DEFAULT);
        assert_eq!(held.get(), CodeSets::DEFAULT);
        for char_set in chars {
            for wchar_set in wchars {
                for write_bom in [false, true] {
                    let codesets = CodeSets {
                        char_set,
                        wchar_set,
                        write_bom,
                    };
                    held.set(codesets);
                    assert_eq!(held.get(), codesets);
                }
            }
        }
    }
}
