//! [`ExceptionHolder`]: CORBA Messaging's `ExceptionHolder` valuetype, the
//! exception an AMI reply handler receives in its `<op>_excep` operation,
//! typed by the operation's error enum; and [`UserExceptionSet`], how that
//! enum decodes the user exceptions it knows.
//!
//! The holder keeps the exception marshaled, as the standard does (and as
//! TAO does): `is_system_exception`, `byte_order`, and the octets of the
//! exception as a reply body carries it (repository id, then members; for
//! a system exception, repository id, minor code and completion status).
//! It is decoded when [`raise`](ExceptionHolder::raise) is called, by the
//! process that calls it. Decoding needs more than the standard members,
//! so the holder also keeps, in process only: the GIOP version and the
//! transmission code sets of the stream the exception came in (strings and
//! wide strings in its members are in those), the stream offset the octets
//! started at (CDR alignment counts from the start of the message), and
//! the fragment boundaries of a fragmented GIOP 1.1 reply. A holder
//! decoded from the wire takes the version and code sets of the message it
//! arrived in and starts its octets at alignment 0 (as TAO reads them).
//!
//! On the wire ([`CdrEncode`]/[`CdrDecode`]: a holder is a parameter of a
//! reply handler's `_excep` operations, which may live in another process)
//! it is the valuetype `IDL:omg.org/Messaging/ExceptionHolder:1.0`: a value
//! tag with one repository id (`0x7fffff02`), the id, then the state
//! members `boolean is_system_exception`, `boolean byte_order`,
//! `sequence<octet> marshaled_exception`. Decoding also accepts a value
//! without type information, with a list of ids, with a codebase URL, and
//! chunked. omniORB 4.2 implements the holder without its state members
//! (its `messaging.idl` leaves them out), so an omniORB reply handler in
//! another process cannot receive a holder's exception from any ORB; TAO
//! sends and reads the members as here.
//!
//! Put on the wire, the exception is marshaled afresh from alignment 0, in
//! the GIOP version and code sets of the message the holder travels in
//! (the octets as they came may have been aligned from another offset in a
//! GIOP 1.0/1.1 reply, cut by GIOP 1.1 fragment headers, or written in
//! another connection's code sets, and would be misread by another
//! process): system exceptions always, user exceptions through
//! [`UserExceptionSet::encode_user_exception`], which generated error enums
//! implement. Only a user exception the operation does not declare travels
//! as it came (its receiver cannot decode it anyway: UNKNOWN).

use std::fmt;
use std::marker::PhantomData;

use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, CodeSets};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, GiopVersion};

use crate::object::ReplyMessage;

/// The repository id of the `Messaging::ExceptionHolder` valuetype.
pub const EXCEPTION_HOLDER_ID: &str = "IDL:omg.org/Messaging/ExceptionHolder:1.0";

/// Value tags (CORBA 3, 15.3.4): every tag has these bits; the low bits
/// say what follows.
const VALUE_TAG_BASE: i32 = 0x7fff_ff00;
const VALUE_TAG_CODEBASE: i32 = 0x01;
const VALUE_TAG_TYPE_MASK: i32 = 0x06;
const VALUE_TAG_SINGLE_ID: i32 = 0x02;
const VALUE_TAG_ID_LIST: i32 = 0x06;
const VALUE_TAG_CHUNKED: i32 = 0x08;

/// The error type of an operation as generated code declares it: the
/// operation's user exceptions and [`SystemException`]. An
/// [`ExceptionHolder`] uses it to decode the exception it holds.
pub trait UserExceptionSet: From<SystemException> + Send + 'static {
    /// Decodes the user exception `id` (members at `members`); `Ok(None)` if
    /// it is not one of the operation's.
    fn decode_user_exception(
        id: &str,
        members: &mut CdrReader<'_>,
    ) -> Result<Option<Self>, CdrError>;

    /// Encodes `self` as a reply body carries a user exception (repository
    /// id, then members); `None` when it is not one of the operation's user
    /// exceptions (a system exception). Generated error enums implement
    /// it, so that a holder sent to a reply handler in another process is
    /// marshaled afresh for the message it travels in (see
    /// [`ExceptionHolder`]'s wire form); without it the octets travel as
    /// they came.
    fn encode_user_exception(&self, w: &mut CdrWriter) -> Option<Result<(), CdrError>> {
        let _ = w;
        None
    }
}

impl UserExceptionSet for SystemException {
    /// An operation without user exceptions knows none.
    fn decode_user_exception(
        _id: &str,
        _members: &mut CdrReader<'_>,
    ) -> Result<Option<Self>, CdrError> {
        Ok(None)
    }
}

/// CORBA Messaging's `ExceptionHolder`: the exception an AMI request ended
/// in, as a reply handler's `<op>_excep` operation receives it, typed by
/// the operation's error enum `E`.
///
/// ```
/// use armillary::ami::ExceptionHolder;
/// use armillary::{minor, CompletionStatus, SystemException};
/// let timeout = SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::Maybe);
/// let holder = ExceptionHolder::<SystemException>::from_system_exception(&timeout);
/// assert!(holder.is_system_exception());
/// assert_eq!(holder.raise(), timeout);
/// ```
pub struct ExceptionHolder<E> {
    is_system_exception: bool,
    byte_order: ByteOrder,
    marshaled: Vec<u8>,
    /// The GIOP version of the stream the octets came from.
    version: GiopVersion,
    /// The transmission code sets of that stream.
    codesets: CodeSets,
    /// The stream offset of `marshaled[0]` (alignment counts from it).
    align_base: usize,
    /// Where fragments' data start in `marshaled` (fragmented GIOP 1.1).
    fragment_starts: Vec<usize>,
    _error: PhantomData<fn() -> E>,
}

impl<E> Clone for ExceptionHolder<E> {
    fn clone(&self) -> Self {
        ExceptionHolder {
            is_system_exception: self.is_system_exception,
            byte_order: self.byte_order,
            marshaled: self.marshaled.clone(),
            version: self.version,
            codesets: self.codesets,
            align_base: self.align_base,
            fragment_starts: self.fragment_starts.clone(),
            _error: PhantomData,
        }
    }
}

impl<E> fmt::Debug for ExceptionHolder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.reader().read_string().ok();
        f.debug_struct("ExceptionHolder")
            .field("is_system_exception", &self.is_system_exception)
            .field("repository_id", &id)
            .field("byte_order", &self.byte_order)
            .field("len", &self.marshaled.len())
            .finish_non_exhaustive()
    }
}

impl<E> ExceptionHolder<E> {
    /// A holder of `exception` (marshaled in native byte order).
    pub fn from_system_exception(exception: &SystemException) -> Self {
        let mut w = CdrWriter::new(ByteOrder::NATIVE, GiopVersion::V1_2);
        // A system exception's body has only a string and two ulongs,
        // which always encode.
        let _ = exception.encode_body(&mut w);
        ExceptionHolder {
            is_system_exception: true,
            byte_order: ByteOrder::NATIVE,
            marshaled: w.into_bytes(),
            version: GiopVersion::V1_2,
            codesets: CodeSets::default(),
            align_base: 0,
            fragment_starts: Vec::new(),
            _error: PhantomData,
        }
    }

    /// A holder of the user exception a USER_EXCEPTION reply carries.
    pub(crate) fn from_user_exception_reply(reply: &ReplyMessage) -> Self {
        let start = reply.body_offset.min(reply.bytes.len());
        // Alignment at the body's start counts from the message's start, or
        // from the header of the GIOP 1.1 fragment the body starts in.
        let align_base = match reply.fragment_starts.iter().rev().find(|s| **s <= start) {
            Some(fragment) => armillary_giop::giop::HEADER_SIZE + (start - fragment),
            None => start,
        };
        ExceptionHolder {
            is_system_exception: false,
            byte_order: reply.byte_order,
            marshaled: reply.bytes[start..].to_vec(),
            version: reply.version,
            codesets: reply.codesets,
            align_base,
            fragment_starts: reply
                .fragment_starts
                .iter()
                .filter(|s| **s > start)
                .map(|s| s - start)
                .collect(),
            _error: PhantomData,
        }
    }

    /// Whether it holds a system exception (`is_system_exception`).
    pub fn is_system_exception(&self) -> bool {
        self.is_system_exception
    }

    /// The byte order of the marshaled exception (`byte_order`).
    pub fn byte_order(&self) -> ByteOrder {
        self.byte_order
    }

    /// The exception's octets as a reply body carries it
    /// (`marshaled_exception`).
    pub fn marshaled_exception(&self) -> &[u8] {
        &self.marshaled
    }

    /// The repository id of the exception held, if it reads.
    pub fn repository_id(&self) -> Option<String> {
        self.reader().read_string().ok()
    }

    /// A reader at the start of the marshaled exception.
    fn reader(&self) -> CdrReader<'_> {
        CdrReader::new(&self.marshaled, self.byte_order, self.version)
            .with_codesets(self.codesets)
            .with_align_base(self.align_base)
            .with_fragment_starts(&self.fragment_starts)
    }
}

impl<E: UserExceptionSet> ExceptionHolder<E> {
    /// The exception held, typed: one of the operation's user exceptions,
    /// or `E::from` the system exception. A user exception the operation
    /// does not declare is UNKNOWN ([`minor::UNLISTED_USER_EXCEPTION`]); a
    /// marshaled exception that does not decode is MARSHAL; both
    /// COMPLETED_YES (the server answered).
    pub fn raise(&self) -> E {
        let marshal = |e: &CdrError| SystemException::from_cdr_error(e, CompletionStatus::Yes);
        let mut r = self.reader();
        if self.is_system_exception {
            return match SystemException::decode_body(&mut r) {
                Ok(e) => e.into(),
                Err(e) => marshal(&e).into(),
            };
        }
        let decoded = r.decode_whole(|r| {
            let id = r.read_string()?;
            E::decode_user_exception(&id, r)
        });
        match decoded {
            Ok(Some(e)) => e,
            Ok(None) => {
                SystemException::unknown(minor::UNLISTED_USER_EXCEPTION, CompletionStatus::Yes)
                    .into()
            }
            Err(e) => marshal(&e).into(),
        }
    }
}

impl<E: UserExceptionSet> ExceptionHolder<E> {
    /// The exception's octets marshaled afresh for a receiver that reads
    /// them from alignment 0, with no fragment headers, in the GIOP
    /// version, code sets and union default-label form of `w` (the
    /// message the holder travels in): the octets as they came may have
    /// been aligned from another offset (a GIOP 1.0/1.1 reply body that
    /// did not start 8-aligned), cut by fragment headers (fragmented GIOP
    /// 1.1) or written for another connection. A user exception that the
    /// operation does not declare, or that does not decode, travels as it
    /// came (the receiver decodes it to UNKNOWN or MARSHAL, as this
    /// process would).
    fn marshaled_for(&self, w: &CdrWriter) -> Vec<u8> {
        let mut out = CdrWriter::new(self.byte_order, w.version())
            .with_codesets(w.codesets())
            .with_default_label(w.default_label());
        let mut r = self.reader();
        let encoded = if self.is_system_exception {
            SystemException::decode_body(&mut r)
                .ok()
                .and_then(|e| e.encode_body(&mut out).ok())
                .is_some()
        } else {
            let decoded = r.decode_whole(|r| {
                let id = r.read_string()?;
                E::decode_user_exception(&id, r)
            });
            matches!(
                decoded
                    .ok()
                    .flatten()
                    .and_then(|e| e.encode_user_exception(&mut out)),
                Some(Ok(()))
            )
        };
        if encoded {
            out.into_bytes()
        } else {
            self.marshaled.clone()
        }
    }
}

impl<E: UserExceptionSet> CdrEncode for ExceptionHolder<E> {
    /// The valuetype with one repository id and its three state members,
    /// the exception marshaled afresh for this message (in its version
    /// and code sets, from alignment 0).
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        let marshaled = self.marshaled_for(w);
        w.write_long(VALUE_TAG_BASE | VALUE_TAG_SINGLE_ID);
        w.write_string(EXCEPTION_HOLDER_ID)?;
        w.write_bool(self.is_system_exception);
        w.write_bool(self.byte_order == ByteOrder::Little);
        w.write_octet_seq(&marshaled)
    }
}

impl<E> CdrDecode for ExceptionHolder<E> {
    const MIN_SIZE: usize = 14;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let offset = r.position();
        let invalid = |what| CdrError::Invalid { offset, what };
        let tag = r.read_long()?;
        if tag == 0 {
            return Err(invalid("null ExceptionHolder"));
        }
        if tag & !0xff != VALUE_TAG_BASE {
            return Err(invalid(
                "ExceptionHolder: not a value tag (indirections are not supported)",
            ));
        }
        if tag & VALUE_TAG_CODEBASE != 0 {
            r.read_string()?;
        }
        match tag & VALUE_TAG_TYPE_MASK {
            VALUE_TAG_SINGLE_ID => {
                if r.read_string()? != EXCEPTION_HOLDER_ID {
                    return Err(invalid("value is not a Messaging::ExceptionHolder"));
                }
            }
            VALUE_TAG_ID_LIST => {
                let n = r.read_ulong()?;
                let mut found = false;
                for _ in 0..n {
                    found |= r.read_string()? == EXCEPTION_HOLDER_ID;
                }
                if !found {
                    return Err(invalid("value is not a Messaging::ExceptionHolder"));
                }
            }
            // No type information: the formal type says what it is.
            0 => {}
            _ => return Err(invalid("ExceptionHolder: reserved value tag bits")),
        }
        let chunked = tag & VALUE_TAG_CHUNKED != 0;
        if chunked {
            let size = r.read_long()?;
            if size <= 0 || size >= VALUE_TAG_BASE {
                return Err(invalid("ExceptionHolder: bad chunk size"));
            }
        }
        let is_system_exception = r.read_bool()?;
        let byte_order = if r.read_bool()? {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        };
        let marshaled = r.read_octet_seq()?.to_vec();
        if chunked {
            let end = r.read_long()?;
            if end >= 0 {
                return Err(invalid("ExceptionHolder: missing end tag"));
            }
        }
        Ok(ExceptionHolder {
            is_system_exception,
            byte_order,
            marshaled,
            version: r.version(),
            codesets: r.codesets(),
            align_base: 0,
            fragment_starts: Vec::new(),
            _error: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operation's error enum as generated code writes it.
    #[derive(Debug, PartialEq)]
    enum OpError {
        NotFound { key: String, at: f64 },
        System(SystemException),
    }

    impl From<SystemException> for OpError {
        fn from(e: SystemException) -> Self {
            OpError::System(e)
        }
    }

    impl UserExceptionSet for OpError {
        fn decode_user_exception(
            id: &str,
            members: &mut CdrReader<'_>,
        ) -> Result<Option<Self>, CdrError> {
            if id != "IDL:Test/NotFound:1.0" {
                return Ok(None);
            }
            Ok(Some(OpError::NotFound {
                key: members.read_string()?,
                at: members.read_double()?,
            }))
        }

        fn encode_user_exception(&self, w: &mut CdrWriter) -> Option<Result<(), CdrError>> {
            let OpError::NotFound { key, at } = self else {
                return None;
            };
            Some((|| {
                w.write_string("IDL:Test/NotFound:1.0")?;
                w.write_string(key)?;
                w.write_double(*at);
                Ok(())
            })())
        }
    }

    fn user_holder(order: ByteOrder, id: &str) -> ExceptionHolder<OpError> {
        let mut w = CdrWriter::new(order, GiopVersion::V1_2);
        w.write_string(id).unwrap();
        w.write_string("k").unwrap();
        w.write_double(2.5);
        ExceptionHolder {
            is_system_exception: false,
            byte_order: order,
            marshaled: w.into_bytes(),
            version: GiopVersion::V1_2,
            codesets: CodeSets::default(),
            align_base: 0,
            fragment_starts: Vec::new(),
            _error: PhantomData,
        }
    }

    #[test]
    fn raise_gives_the_typed_user_exception_or_unknown() {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let h = user_holder(order, "IDL:Test/NotFound:1.0");
            assert!(!h.is_system_exception());
            assert_eq!(
                h.raise(),
                OpError::NotFound {
                    key: "k".into(),
                    at: 2.5
                }
            );
        }
        let other = user_holder(ByteOrder::Big, "IDL:Test/Other:1.0");
        assert_eq!(
            other.raise(),
            OpError::System(SystemException::unknown(
                minor::UNLISTED_USER_EXCEPTION,
                CompletionStatus::Yes
            ))
        );
        let mut cut = user_holder(ByteOrder::Big, "IDL:Test/NotFound:1.0");
        cut.marshaled.truncate(cut.marshaled.len() - 3);
        assert!(
            matches!(cut.raise(), OpError::System(e) if e.kind() == armillary_giop::system_exception::SystemExceptionKind::Marshal)
        );
    }

    #[test]
    fn the_wire_form_is_the_valuetype_with_its_three_members() {
        let h = user_holder(ByteOrder::Little, "IDL:Test/NotFound:1.0");
        let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        h.encode(&mut w).unwrap();
        let bytes = w.into_bytes();
        // Built by hand: tag, id, two booleans, the octet sequence.
        let mut expected = vec![0x7f, 0xff, 0xff, 0x02];
        let id = EXCEPTION_HOLDER_ID.as_bytes();
        expected.extend_from_slice(&(id.len() as u32 + 1).to_be_bytes());
        expected.extend_from_slice(id);
        expected.push(0);
        expected.extend_from_slice(&[0, 1]);
        while expected.len() % 4 != 0 {
            expected.push(0);
        }
        expected.extend_from_slice(&(h.marshaled.len() as u32).to_be_bytes());
        expected.extend_from_slice(&h.marshaled);
        assert_eq!(bytes, expected);

        let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
        let back = ExceptionHolder::<OpError>::decode(&mut r).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(back.marshaled_exception(), h.marshaled_exception());
        assert_eq!(back.byte_order(), ByteOrder::Little);
        assert_eq!(back.raise(), h.raise());
    }

    #[test]
    fn a_holder_from_an_unaligned_reply_body_is_marshaled_afresh_for_the_wire() {
        // A GIOP 1.0 reply body that starts 4 bytes past an 8-byte
        // boundary: the double's padding counts from the message start.
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let mut w = CdrWriter::new(order, GiopVersion::V1_0).with_align_base(4);
            w.write_string("IDL:Test/NotFound:1.0").unwrap();
            w.write_string("key").unwrap();
            w.write_double(-7.25);
            let h = ExceptionHolder::<OpError> {
                is_system_exception: false,
                byte_order: order,
                marshaled: w.into_bytes(),
                version: GiopVersion::V1_0,
                codesets: CodeSets::default(),
                align_base: 4,
                fragment_starts: Vec::new(),
                _error: PhantomData,
            };
            let expected = OpError::NotFound {
                key: "key".into(),
                at: -7.25,
            };
            assert_eq!(h.raise(), expected);
            // The receiver reads the octets from alignment 0.
            let mut wire = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
            h.encode(&mut wire).unwrap();
            let bytes = wire.into_bytes();
            let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
            let back = ExceptionHolder::<OpError>::decode(&mut r).unwrap();
            assert_eq!(back.raise(), expected, "{order:?}");
            assert_ne!(back.marshaled_exception(), h.marshaled_exception());
        }
    }

    #[test]
    fn decoding_accepts_chunked_and_untyped_values_and_refuses_others() {
        let sys = SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::Maybe);
        let h = ExceptionHolder::<OpError>::from_system_exception(&sys);
        let members = |w: &mut CdrWriter| {
            w.write_bool(true);
            w.write_bool(h.byte_order() == ByteOrder::Little);
            w.write_octet_seq(h.marshaled_exception()).unwrap();
        };
        // Chunked, with a codebase URL and a list of ids.
        let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        w.write_long(0x7fff_ff0f);
        w.write_string("http://example/").unwrap();
        w.write_ulong(2);
        w.write_string("IDL:Other:1.0").unwrap();
        w.write_string(EXCEPTION_HOLDER_ID).unwrap();
        let mut body = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
        members(&mut body);
        w.write_long(body.as_bytes().len() as i32);
        members(&mut w);
        w.write_long(-1);
        let bytes = w.into_bytes();
        let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
        let back = ExceptionHolder::<OpError>::decode(&mut r).unwrap();
        assert!(back.is_system_exception());
        assert_eq!(back.raise(), OpError::System(sys.clone()));
        // No type information.
        let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_0);
        w.write_long(0x7fff_ff00);
        members(&mut w);
        let bytes = w.into_bytes();
        let mut r = CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_0);
        assert_eq!(
            ExceptionHolder::<OpError>::decode(&mut r).unwrap().raise(),
            OpError::System(sys)
        );
        // Null, an indirection, another type, and cut input are errors.
        for bad in [
            vec![0, 0, 0, 0],
            vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 8],
            {
                let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
                w.write_long(0x7fff_ff02);
                w.write_string("IDL:Other:1.0").unwrap();
                members(&mut w);
                w.into_bytes()
            },
            vec![0x7f, 0xff, 0xff, 0x02, 0, 0],
        ] {
            let mut r = CdrReader::new(&bad, ByteOrder::Big, GiopVersion::V1_2);
            assert!(ExceptionHolder::<OpError>::decode(&mut r).is_err());
        }
    }
}
