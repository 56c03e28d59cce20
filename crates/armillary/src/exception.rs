//! User exceptions: the exceptions an IDL operation declares in `raises`.

use armillary_giop::cdr::{CdrDecode, CdrEncode};

/// An IDL exception type. Generated code implements it for every
/// `exception` definition; the members are encoded after the repository id.
pub trait UserException: CdrEncode + CdrDecode + std::fmt::Debug + Send + Sync + 'static {
    /// The exception's repository id, e.g. `IDL:Stock/Invalid_Stock_Symbol:1.0`.
    const REPOSITORY_ID: &'static str;
}
