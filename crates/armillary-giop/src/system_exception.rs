//! The standard CORBA system exceptions: their kinds and repository ids,
//! minor codes, completion status, and how they travel in a reply body.
//!
//! Minor codes carry a vendor id (VMCID) in their upper 20 bits: the OMG's
//! is [`OMG_VMCID`] (`0x4F4D0000`, "OM"); Armillary's own minor codes use
//! [`ARMILLARY_VMCID`].

use std::fmt;

use crate::cdr::{CdrError, CdrReader, CdrWriter};

/// The OMG's vendor minor code id: standard minor codes are `OMG_VMCID | n`.
pub const OMG_VMCID: u32 = 0x4f4d_0000;

/// Armillary's vendor minor code id ("AR" in the upper bits).
pub const ARMILLARY_VMCID: u32 = 0x4152_0000;

/// An OMG standard minor code.
pub const fn omg_minor(n: u32) -> u32 {
    OMG_VMCID | n
}

/// An Armillary-specific minor code.
pub const fn armillary_minor(n: u32) -> u32 {
    ARMILLARY_VMCID | n
}

/// Named minor codes used across Armillary. Armillary's numbers 60 to 79
/// are the load-balancing locator's (`armillary_lb::minor`), 100 to 119
/// the naming service's (`armillary_naming::minor`).
pub mod minor {
    use super::{armillary_minor, omg_minor};

    /// BAD_PARAM 23: the wchar code set was not negotiated.
    pub const WCHAR_CODESET_UNKNOWN: u32 = omg_minor(23);
    /// DATA_CONVERSION 1: a character cannot be converted.
    pub const CHAR_NOT_CONVERTIBLE: u32 = omg_minor(1);
    /// OBJECT_NOT_EXIST 1: no usable profile / the object is gone.
    pub const UNREGISTERED_OBJECT: u32 = omg_minor(1);
    /// OBJECT_NOT_EXIST 2: the POA (adapter) does not exist.
    pub const NONEXISTENT_ADAPTER: u32 = omg_minor(2);
    /// TRANSIENT 1: the POA manager is discarding requests.
    pub const POA_DISCARDING: u32 = omg_minor(1);
    /// TRANSIENT 2: no usable profile could be connected.
    pub const CONNECT_FAILED: u32 = omg_minor(2);
    /// OBJ_ADAPTER 1: the POA manager is inactive.
    pub const ADAPTER_INACTIVE: u32 = omg_minor(1);
    /// BAD_OPERATION 2: the servant does not implement the operation.
    pub const UNKNOWN_OPERATION: u32 = omg_minor(2);
    /// BAD_INV_ORDER 3: waiting for completion here would deadlock (an
    /// upcall asked its own ORB to shut down and wait for its requests).
    pub const WOULD_DEADLOCK: u32 = omg_minor(3);
    /// BAD_INV_ORDER 4: the ORB has shut down.
    pub const ORB_SHUT_DOWN: u32 = omg_minor(4);
    /// BAD_INV_ORDER 7: a dynamic servant read its arguments twice, or
    /// after setting an exception.
    pub const ARGUMENTS_ALREADY_READ: u32 = omg_minor(7);
    /// BAD_INV_ORDER 9: a dynamic servant set its result twice, before
    /// reading its arguments, or after setting an exception.
    pub const RESULT_ALREADY_SET: u32 = omg_minor(9);
    /// BAD_INV_ORDER 10: a DII request sent (or invoked) a second time.
    pub const REQUEST_ALREADY_SENT: u32 = omg_minor(10);
    /// BAD_INV_ORDER 11: a DII request polled, or its response asked for,
    /// before it was sent (or `get_next_response` with none outstanding).
    pub const REQUEST_NOT_SENT: u32 = omg_minor(11);
    /// BAD_INV_ORDER 12: a DII request's response asked for after it was
    /// retrieved.
    pub const RESPONSE_ALREADY_RETRIEVED: u32 = omg_minor(12);
    /// UNKNOWN 1: a user exception the caller does not know.
    pub const UNLISTED_USER_EXCEPTION: u32 = omg_minor(1);
    /// MARSHAL: a malformed message or value (Armillary's own).
    pub const MALFORMED: u32 = armillary_minor(1);
    /// BAD_PARAM: a `corbaname:` URL whose name the naming context could
    /// not resolve (OMG: "unable to resolve corbaname").
    pub const CORBANAME_UNRESOLVED: u32 = omg_minor(10);
    /// MARSHAL: a message broke a configured limit (Armillary's own).
    pub const LIMIT_EXCEEDED: u32 = armillary_minor(2);
    /// COMM_FAILURE: the connection closed or failed (Armillary's own).
    pub const CONNECTION_LOST: u32 = armillary_minor(3);
    /// TRANSIENT: too many LOCATION_FORWARD hops (Armillary's own).
    pub const FORWARD_LIMIT: u32 = armillary_minor(4);
    /// NO_RESPONSE / INTERNAL: a servant dropped its reply (Armillary's own).
    pub const NO_REPLY: u32 = armillary_minor(5);
    /// NO_PERMISSION: the client requires TLS (`-ORBTlsRequire`) and the
    /// reference announces no TLS endpoint (Armillary's own).
    pub const TLS_REQUIRED: u32 = armillary_minor(20);
    /// NO_PERMISSION: the reference announces only TLS endpoints and the
    /// client has no TLS configuration (no trusted roots, `-ORBTlsCa`)
    /// (Armillary's own).
    pub const TLS_NOT_CONFIGURED: u32 = armillary_minor(21);
    /// NO_PERMISSION: the TLS handshake failed: the server's certificate
    /// is not trusted or does not name the host, the server refused the
    /// client's certificate (or its lack of one), or the peer does not
    /// speak TLS (Armillary's own). The server received no request.
    pub const TLS_REFUSED: u32 = armillary_minor(22);
    /// TIMEOUT: a call's reply did not come within the ORB's call timeout
    /// (`-ORBClientCallTimeout`), or its request could not be sent in that
    /// time (Armillary's own).
    pub const CALL_TIMEOUT: u32 = armillary_minor(6);
    /// INTERNAL: the ORB's reactor failed (its event poll returned an
    /// error), so the ORB can serve nothing more (Armillary's own).
    pub const REACTOR_FAILED: u32 = armillary_minor(7);
    /// MARSHAL: a client's message is larger than its ORB's
    /// `-ORBMaxMessageSize`: a reply it received (COMPLETED_YES; the
    /// connection is closed), or a request it would have sent (refused
    /// before sending, COMPLETED_NO). omniORB raises
    /// `MARSHAL_MessageSizeExceedLimitOnClient` in both cases
    /// (Armillary's own).
    pub const MESSAGE_SIZE_EXCEEDED: u32 = armillary_minor(8);
    /// TRANSIENT: the server's concurrency model is at its limit (the
    /// thread-per-request cap is reached, or the worker pool's queue is
    /// full); the request did not run, so it may be sent again
    /// (Armillary's own).
    pub const SERVER_BUSY: u32 = armillary_minor(30);
    /// OBJ_ADAPTER: a request filter sent a request to a lane the ORB's
    /// configuration does not name (Armillary's own).
    pub const UNKNOWN_LANE: u32 = armillary_minor(32);
    /// TRANSIENT: the server could not start a thread for a request (the
    /// system refused one); the request did not run (Armillary's own).
    pub const NO_THREAD: u32 = armillary_minor(33);
    /// UNKNOWN: the servant panicked while it carried out the request; the
    /// server caught the panic and goes on serving (Armillary's own).
    pub const SERVANT_PANICKED: u32 = armillary_minor(34);
    /// TRANSIENT: the object is being deactivated (`deactivate_object`
    /// waits for its running requests before its servant activator
    /// etherealizes it) and its POA's servant activator would incarnate it
    /// again once that is done; the request did not run, so it may be sent
    /// again (Armillary's own).
    pub const OBJECT_DEACTIVATING: u32 = armillary_minor(40);
    /// MARSHAL: a GIOP 1.1 fragment boundary falls inside a single value,
    /// which no sender writes (Armillary's own).
    pub const FRAGMENT_SPLITS_VALUE: u32 = armillary_minor(41);
    /// MARSHAL: a block of 8-byte values crosses a GIOP 1.1 fragment
    /// boundary, and the message reads completely both as omniORB's C++
    /// library lays such blocks out and as omniORBpy (and the spec) does,
    /// or in neither: its values cannot be known for certain (Armillary's
    /// own; see `armillary_giop::cdr::fragments`). GIOP 1.2 has no such
    /// ambiguity.
    pub const FRAGMENT_AMBIGUOUS: u32 = armillary_minor(42);
    /// UNKNOWN: a portable interceptor panicked at one of its interception
    /// points; the ORB caught the panic, ended the request with this
    /// exception and goes on (Armillary's own).
    pub const INTERCEPTOR_PANICKED: u32 = armillary_minor(43);
}

/// Whether the operation ran before the exception was raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionStatus {
    /// It completed.
    Yes,
    /// It never started.
    No,
    /// Nobody can tell (e.g. the connection died after the request left).
    Maybe,
}

impl CompletionStatus {
    /// The CDR value (0, 1, 2).
    pub const fn to_u32(self) -> u32 {
        match self {
            CompletionStatus::Yes => 0,
            CompletionStatus::No => 1,
            CompletionStatus::Maybe => 2,
        }
    }

    /// From the CDR value.
    pub const fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(CompletionStatus::Yes),
            1 => Some(CompletionStatus::No),
            2 => Some(CompletionStatus::Maybe),
            _ => None,
        }
    }

    /// The IDL name (`COMPLETED_YES`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            CompletionStatus::Yes => "COMPLETED_YES",
            CompletionStatus::No => "COMPLETED_NO",
            CompletionStatus::Maybe => "COMPLETED_MAYBE",
        }
    }
}

macro_rules! kinds {
    ($($variant:ident => $name:literal, $ctor:ident;)*) => {
        /// Which standard system exception.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types, missing_docs)]
        pub enum SystemExceptionKind {
            $($variant,)*
        }

        impl SystemExceptionKind {
            /// Every kind, in the order of the CORBA specification.
            pub const ALL: &'static [SystemExceptionKind] = &[$(SystemExceptionKind::$variant,)*];

            /// The IDL name, e.g. `OBJECT_NOT_EXIST`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(SystemExceptionKind::$variant => $name,)*
                }
            }

            /// The repository id, e.g. `IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0`.
            pub const fn repository_id(self) -> &'static str {
                match self {
                    $(SystemExceptionKind::$variant => concat!("IDL:omg.org/CORBA/", $name, ":1.0"),)*
                }
            }

            /// The kind with this repository id (the `:1.0` version, or any
            /// version: only the name counts).
            pub fn from_repository_id(id: &str) -> Option<Self> {
                let name = id.strip_prefix("IDL:omg.org/CORBA/")?;
                let name = name.split(':').next()?;
                match name {
                    $($name => Some(SystemExceptionKind::$variant),)*
                    _ => None,
                }
            }
        }

        impl SystemException {
            $(
                #[doc = concat!("A `", $name, "` exception.")]
                pub fn $ctor(minor: u32, completed: CompletionStatus) -> Self {
                    SystemException::new(SystemExceptionKind::$variant, minor, completed)
                }
            )*
        }
    };
}

kinds! {
    Unknown => "UNKNOWN", unknown;
    BadParam => "BAD_PARAM", bad_param;
    NoMemory => "NO_MEMORY", no_memory;
    ImpLimit => "IMP_LIMIT", imp_limit;
    CommFailure => "COMM_FAILURE", comm_failure;
    InvObjref => "INV_OBJREF", inv_objref;
    NoPermission => "NO_PERMISSION", no_permission;
    Internal => "INTERNAL", internal;
    Marshal => "MARSHAL", marshal;
    Initialize => "INITIALIZE", initialize;
    NoImplement => "NO_IMPLEMENT", no_implement;
    BadTypecode => "BAD_TYPECODE", bad_typecode;
    BadOperation => "BAD_OPERATION", bad_operation;
    NoResources => "NO_RESOURCES", no_resources;
    NoResponse => "NO_RESPONSE", no_response;
    PersistStore => "PERSIST_STORE", persist_store;
    BadInvOrder => "BAD_INV_ORDER", bad_inv_order;
    Transient => "TRANSIENT", transient;
    FreeMem => "FREE_MEM", free_mem;
    InvIdent => "INV_IDENT", inv_ident;
    InvFlag => "INV_FLAG", inv_flag;
    IntfRepos => "INTF_REPOS", intf_repos;
    BadContext => "BAD_CONTEXT", bad_context;
    ObjAdapter => "OBJ_ADAPTER", obj_adapter;
    DataConversion => "DATA_CONVERSION", data_conversion;
    ObjectNotExist => "OBJECT_NOT_EXIST", object_not_exist;
    TransactionRequired => "TRANSACTION_REQUIRED", transaction_required;
    TransactionRolledback => "TRANSACTION_ROLLEDBACK", transaction_rolledback;
    InvalidTransaction => "INVALID_TRANSACTION", invalid_transaction;
    InvPolicy => "INV_POLICY", inv_policy;
    CodesetIncompatible => "CODESET_INCOMPATIBLE", codeset_incompatible;
    Rebind => "REBIND", rebind;
    Timeout => "TIMEOUT", timeout;
    TransactionUnavailable => "TRANSACTION_UNAVAILABLE", transaction_unavailable;
    TransactionMode => "TRANSACTION_MODE", transaction_mode;
    BadQos => "BAD_QOS", bad_qos;
    InvalidActivity => "INVALID_ACTIVITY", invalid_activity;
    ActivityCompleted => "ACTIVITY_COMPLETED", activity_completed;
    ActivityRequired => "ACTIVITY_REQUIRED", activity_required;
    ThreadCancelled => "THREAD_CANCELLED", thread_cancelled;
}

/// A CORBA system exception. Made with [`SystemException::new`] or the
/// constructor named after its kind (`SystemException::transient(..)`),
/// read with [`kind`](Self::kind), [`minor`](Self::minor) and
/// [`completed`](Self::completed).
///
/// Every CORBA call can raise one: the generated per-operation error enums
/// carry it as their `System` variant, and `armillary` re-exports it as
/// `armillary::SystemException`.
///
/// # Examples
///
/// ```
/// use armillary_giop::system_exception::{
///     minor, CompletionStatus, SystemException, SystemExceptionKind,
/// };
///
/// /// Whether a failed call may be made again without running twice.
/// fn worth_retrying(e: &SystemException) -> bool {
///     (e.is_transient() || e.is_comm_failure()) && e.is_completed_no()
/// }
///
/// let refused = SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No);
/// assert_eq!(refused.kind(), SystemExceptionKind::Transient);
/// assert_eq!(refused.repository_id(), "IDL:omg.org/CORBA/TRANSIENT:1.0");
/// assert_eq!(
///     refused.to_string(),
///     "CORBA::TRANSIENT (minor 0x4f4d0002, COMPLETED_NO)"
/// );
/// assert!(worth_retrying(&refused));
///
/// // The connection dropped after the request was sent: it may have run.
/// let lost = SystemException::comm_failure(minor::CONNECTION_LOST, CompletionStatus::Maybe);
/// assert!(!worth_retrying(&lost));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SystemException {
    /// Which exception.
    pub(crate) kind: SystemExceptionKind,
    /// The minor code (vendor id in the upper 20 bits).
    pub(crate) minor: u32,
    /// Whether the operation completed.
    pub(crate) completed: CompletionStatus,
    /// The repository id as received, when it named no standard exception
    /// (the kind is then `UNKNOWN`).
    pub(crate) foreign_id: Option<String>,
}

impl SystemException {
    /// An exception of `kind`.
    pub fn new(kind: SystemExceptionKind, minor: u32, completed: CompletionStatus) -> Self {
        SystemException {
            kind,
            minor,
            completed,
            foreign_id: None,
        }
    }

    /// Which standard exception (`UNKNOWN` for a foreign one).
    pub fn kind(&self) -> SystemExceptionKind {
        self.kind
    }

    /// The minor code (vendor id in the upper 20 bits; see [`minor`]).
    pub fn minor(&self) -> u32 {
        self.minor
    }

    /// Whether the operation completed before the exception was raised.
    pub fn completed(&self) -> CompletionStatus {
        self.completed
    }

    /// The repository id as received, when it named no standard exception
    /// (the kind is then `UNKNOWN`).
    pub fn foreign_id(&self) -> Option<&str> {
        self.foreign_id.as_deref()
    }

    /// This exception with another completion status (a server that
    /// learns the operation ran before it failed, for example).
    pub fn with_completed(mut self, completed: CompletionStatus) -> Self {
        self.completed = completed;
        self
    }

    /// Whether this is a `TRANSIENT`: the request did not reach a servant
    /// and may succeed if tried again (the server is starting, discarding
    /// requests, or could not be connected).
    pub fn is_transient(&self) -> bool {
        self.kind == SystemExceptionKind::Transient
    }

    /// Whether this is a `TIMEOUT`: no reply within the call timeout.
    pub fn is_timeout(&self) -> bool {
        self.kind == SystemExceptionKind::Timeout
    }

    /// Whether this is a `COMM_FAILURE`: the connection failed while the
    /// request was in progress (see [`completed`](Self::completed) for
    /// whether it ran).
    pub fn is_comm_failure(&self) -> bool {
        self.kind == SystemExceptionKind::CommFailure
    }

    /// Whether this is an `OBJECT_NOT_EXIST`: the object is gone for good
    /// and the reference can be dropped.
    pub fn is_object_not_exist(&self) -> bool {
        self.kind == SystemExceptionKind::ObjectNotExist
    }

    /// Whether this is a `NO_PERMISSION` (including the TLS refusals).
    pub fn is_no_permission(&self) -> bool {
        self.kind == SystemExceptionKind::NoPermission
    }

    /// Whether the operation surely did not run (`COMPLETED_NO`), so that
    /// trying it again cannot do it twice.
    pub fn is_completed_no(&self) -> bool {
        self.completed == CompletionStatus::No
    }

    /// The repository id (the received one for foreign exceptions).
    pub fn repository_id(&self) -> &str {
        self.foreign_id
            .as_deref()
            .unwrap_or_else(|| self.kind.repository_id())
    }

    /// Writes the reply-body form: repository id, minor, completion status.
    pub fn encode_body(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_string(self.repository_id())?;
        w.write_ulong(self.minor);
        w.write_ulong(self.completed.to_u32());
        Ok(())
    }

    /// Reads the reply-body form. An unknown repository id gives an
    /// `UNKNOWN` exception that keeps the id.
    pub fn decode_body(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let id = r.read_string()?;
        let minor = r.read_ulong()?;
        let offset = r.position();
        let completed = CompletionStatus::from_u32(r.read_ulong()?).ok_or(CdrError::Invalid {
            offset,
            what: "completion status is not 0, 1 or 2",
        })?;
        Ok(match SystemExceptionKind::from_repository_id(&id) {
            Some(kind) => SystemException::new(kind, minor, completed),
            None => SystemException {
                kind: SystemExceptionKind::Unknown,
                minor,
                completed,
                foreign_id: Some(id),
            },
        })
    }

    /// The exception a marshalling error becomes: DATA_CONVERSION for text
    /// that cannot be converted, BAD_PARAM (minor 23) for wide characters
    /// without a negotiated code set, BAD_PARAM for a string or sequence
    /// longer than its IDL bound, IMP_LIMIT for lengths CDR cannot carry,
    /// MARSHAL for everything else.
    pub fn from_cdr_error(error: &CdrError, completed: CompletionStatus) -> Self {
        match error {
            CdrError::NotRepresentable { .. }
            | CdrError::InvalidText { .. }
            | CdrError::UnsupportedCodeSet(_) => {
                Self::data_conversion(minor::CHAR_NOT_CONVERTIBLE, completed)
            }
            CdrError::WCharCodeSetUnknown { .. } => {
                Self::bad_param(minor::WCHAR_CODESET_UNKNOWN, completed)
            }
            CdrError::TooLong(_) => Self::imp_limit(minor::LIMIT_EXCEEDED, completed),
            CdrError::BoundExceeded { .. } => Self::bad_param(minor::MALFORMED, completed),
            CdrError::SplitByFragment { .. } => {
                Self::marshal(minor::FRAGMENT_SPLITS_VALUE, completed)
            }
            CdrError::AmbiguousFragment { .. } => {
                Self::marshal(minor::FRAGMENT_AMBIGUOUS, completed)
            }
            _ => Self::marshal(minor::MALFORMED, completed),
        }
    }
}

impl fmt::Display for SystemException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match &self.foreign_id {
            Some(id) => id.as_str(),
            None => self.kind.name(),
        };
        write!(
            f,
            "CORBA::{name} (minor {:#010x}, {})",
            self.minor,
            self.completed.name()
        )
    }
}

impl fmt::Debug for SystemException {
    /// The fields, the minor code in hexadecimal as OMG and omniORB write
    /// it (its vendor id is then legible: `0x4f4d…` is the OMG's,
    /// `0x4152…` Armillary's):
    ///
    /// ```
    /// use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
    ///
    /// let e = SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No);
    /// assert_eq!(
    ///     format!("{e:?}"),
    ///     "SystemException { kind: Transient, minor: 0x4f4d0002, completed: No, foreign_id: None }"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemException")
            .field("kind", &self.kind)
            .field("minor", &format_args!("{:#010x}", self.minor))
            .field("completed", &self.completed)
            .field("foreign_id", &self.foreign_id)
            .finish()
    }
}

impl std::error::Error for SystemException {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ByteOrder, GiopVersion};

    #[test]
    fn every_kind_round_trips_through_its_repository_id() {
        assert_eq!(SystemExceptionKind::ALL.len(), 40);
        for kind in SystemExceptionKind::ALL {
            assert_eq!(
                SystemExceptionKind::from_repository_id(kind.repository_id()),
                Some(*kind)
            );
            let e = SystemException::new(*kind, omg_minor(3), CompletionStatus::Maybe);
            for order in [ByteOrder::Big, ByteOrder::Little] {
                let mut w = CdrWriter::new(order, GiopVersion::V1_2);
                e.encode_body(&mut w).unwrap();
                let mut r = CdrReader::new(w.as_bytes(), order, GiopVersion::V1_2);
                assert_eq!(SystemException::decode_body(&mut r).unwrap(), e);
            }
        }
    }

    #[test]
    fn accessors_and_helpers_read_the_exception() {
        let e = SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No);
        assert_eq!(e.kind(), SystemExceptionKind::Transient);
        assert_eq!(e.minor(), minor::CONNECT_FAILED);
        assert_eq!(e.completed(), CompletionStatus::No);
        assert_eq!(e.foreign_id(), None);
        assert!(e.is_transient() && e.is_completed_no());
        assert!(!e.is_timeout() && !e.is_comm_failure() && !e.is_object_not_exist());
        let e = e.with_completed(CompletionStatus::Maybe);
        assert_eq!(e.completed(), CompletionStatus::Maybe);
        assert!(!e.is_completed_no());
        assert!(
            SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::Maybe).is_timeout()
        );
        assert!(
            SystemException::comm_failure(minor::CONNECTION_LOST, CompletionStatus::Maybe)
                .is_comm_failure()
        );
        assert!(SystemException::object_not_exist(0, CompletionStatus::No).is_object_not_exist());
        assert!(SystemException::no_permission(0, CompletionStatus::No).is_no_permission());
    }

    #[test]
    fn foreign_ids_are_kept_and_display_is_readable() {
        let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
        w.write_string("IDL:acme.com/Weird:1.0").unwrap();
        w.write_ulong(7);
        w.write_ulong(1);
        let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Little, GiopVersion::V1_2);
        let e = SystemException::decode_body(&mut r).unwrap();
        assert_eq!(e.kind, SystemExceptionKind::Unknown);
        assert_eq!(e.repository_id(), "IDL:acme.com/Weird:1.0");
        assert_eq!(
            SystemException::object_not_exist(omg_minor(1), CompletionStatus::No).to_string(),
            "CORBA::OBJECT_NOT_EXIST (minor 0x4f4d0001, COMPLETED_NO)"
        );
    }
}
