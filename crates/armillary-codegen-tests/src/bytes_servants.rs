//! A servant of `idl/bytes.idl`'s `Octets::Store` for the tests of the
//! `Bytes` mapping (`tests/bytes.rs`, `tests/bytes_allocations.rs`).

use armillary::{Bytes, SystemException};

use crate::bytes::octets::{
    store::TagOfError, Blob, BlobList, Label, Record, StoreAmhServant, StoreEchoResponder,
};

/// Answers with what it was given, checking nothing: `echo` replies with
/// its argument from the calling thread (so the reply is written as the
/// upcall returns), `tag_of` with its argument whatever its length (more
/// octets than a `Label` may hold, if it was given them), `swap` with its
/// record; the rest with empty values.
#[derive(Debug, Default, Clone, Copy)]
pub struct PassThroughStore;

impl StoreAmhServant for PassThroughStore {
    fn echo(&self, responder: StoreEchoResponder, b: Blob) {
        responder.reply(b);
    }

    fn distance(&self, _: Blob, _: Blob) -> Result<i64, SystemException> {
        Ok(0)
    }

    fn swap(&self, r: Record, _: &mut Blob) -> Result<(Record, Label), SystemException> {
        Ok((r, Bytes::new()))
    }

    fn split(&self, _: Blob, _: i32) -> Result<BlobList, SystemException> {
        Ok(Vec::new())
    }

    fn tag_of(&self, b: Blob) -> Result<Label, TagOfError> {
        Ok(b)
    }

    fn last(&self) -> Result<Blob, SystemException> {
        Ok(Bytes::new())
    }

    fn set_last(&self, _: Blob) -> Result<(), SystemException> {
        Ok(())
    }
}
