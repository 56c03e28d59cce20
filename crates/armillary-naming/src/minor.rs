//! The minor codes of the system exceptions the naming service raises
//! itself, in Armillary's vendor minor code space
//! ([`ARMILLARY_VMCID`](armillary::giop::system_exception::ARMILLARY_VMCID),
//! `0x41520000`): numbers 100 to 119 are the naming service's
//! (`armillary-giop`'s `system_exception::minor` keeps the ORB's, below
//! 100).
//!
//! The OMG defines no standard minor code for any of these cases.
//! Exceptions the service only passes on (a remote context's, the POA's
//! OBJECT_NOT_EXIST for a destroyed context) keep their own codes.
//!
//! ```
//! use armillary::giop::system_exception::ARMILLARY_VMCID;
//! use armillary_naming::minor;
//!
//! assert_eq!(minor::NIL_REFERENCE, ARMILLARY_VMCID | 100);
//! ```

use armillary::giop::system_exception::armillary_minor;

/// BAD_PARAM: `bind`, `rebind`, `bind_context` or `rebind_context` was
/// given a nil reference, which a context does not bind
/// (COMPLETED_NO).
pub const NIL_REFERENCE: u32 = armillary_minor(100);

/// BAD_PARAM: `BindingIterator::next_n` was asked for 0 bindings
/// (COMPLETED_NO).
pub const ZERO_BINDINGS_ASKED: u32 = armillary_minor(101);

/// NO_PERMISSION: `destroy` was called on the root context, which lives
/// as long as the service (COMPLETED_NO).
pub const ROOT_NOT_DESTROYABLE: u32 = armillary_minor(102);

/// INTERNAL: an operation that cannot raise `AlreadyBound` came to it
/// (a bug of the service; COMPLETED_MAYBE).
pub const UNEXPECTED_ALREADY_BOUND: u32 = armillary_minor(103);

/// PERSIST_STORE: the store (the SQLite database) failed to read or
/// write: an I/O error, a full disk, a corrupt file. The operation's
/// transaction was rolled back (COMPLETED_NO), unless the commit itself
/// failed (COMPLETED_MAYBE).
pub const STORE_FAILED: u32 = armillary_minor(110);

/// PERSIST_STORE: the store holds a reference that does not decode
/// (the database was changed by hand, or is corrupt; COMPLETED_NO).
pub const STORE_CORRUPT: u32 = armillary_minor(111);

/// TRANSIENT: another process held the store's write lock for longer
/// than the service waits ([`STORE_BUSY_TIMEOUT`](crate::STORE_BUSY_TIMEOUT));
/// the operation did nothing and may be tried again (COMPLETED_NO).
pub const STORE_BUSY: u32 = armillary_minor(112);
