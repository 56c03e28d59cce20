//! A collocated invoker: calls a servant in this process through the same
//! marshalling path as a remote call, with no transport in between.
//!
//! It is the simplest [`Invoker`]: the arguments are encoded into a buffer,
//! the servant's skeleton decodes them and writes its reply into another,
//! and the stub decodes that. The ORB serves its local objects (POA
//! Current, the `RootPOA` reference) with it; it is internal to the crate.

use std::sync::Arc;

use armillary_giop::cdr::{CdrReader, CdrWriter, CodeSets};
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, GiopVersion};

use crate::object::{Invoker, ObjectRef, OutgoingRequest, ReplyMessage, ReplyOutcome};
use crate::servant::{ReplyKind, Servant, ServerRequest};

/// Dispatches every request to one servant, through CDR.
pub(crate) struct CollocatedInvoker {
    servant: Arc<dyn Servant>,
    byte_order: ByteOrder,
    version: GiopVersion,
    codesets: CodeSets,
}

impl std::fmt::Debug for CollocatedInvoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollocatedInvoker")
            .field("servant", &self.servant.repository_id())
            .field("byte_order", &self.byte_order)
            .field("version", &self.version)
            .field("codesets", &self.codesets)
            .finish()
    }
}

impl CollocatedInvoker {
    /// An invoker for `servant`, encoding in the machine's byte order with
    /// GIOP 1.2 rules and UTF-8/UTF-16 code sets.
    pub(crate) fn new(servant: Arc<dyn Servant>) -> Self {
        CollocatedInvoker {
            servant,
            byte_order: ByteOrder::NATIVE,
            version: GiopVersion::V1_2,
            codesets: CodeSets::NATIVE,
        }
    }

    /// A reference to the servant carried by this invoker.
    pub(crate) fn into_object_ref(self) -> ObjectRef {
        let ior = Ior {
            type_id: self.servant.repository_id().to_owned(),
            profiles: vec![armillary_giop::ior::TaggedProfile {
                tag: armillary_giop::ior::TAG_MULTIPLE_COMPONENTS,
                data: vec![self.byte_order.flag(), 0, 0, 0, 0, 0, 0, 0],
            }],
        };
        ObjectRef::new(ior, Arc::new(self))
    }

    fn writer(&self) -> CdrWriter {
        CdrWriter::new(self.byte_order, self.version).with_codesets(self.codesets)
    }
}

impl Invoker for CollocatedInvoker {
    fn invoke(
        &self,
        _target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        let mut args = self.writer();
        (request.args)(&mut args)
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
        let args = args.into_bytes();
        let reader =
            CdrReader::new(&args, self.byte_order, self.version).with_codesets(self.codesets);
        let mut server_request = ServerRequest::new(
            request.operation,
            &crate::object_id::EMPTY,
            reader,
            request.response_expected,
            self.writer(),
        );
        crate::servant::dispatch_contained(&*self.servant, &mut server_request)?;
        if !request.response_expected {
            return Ok(None);
        }
        let (kind, reply, body_offset) = server_request.into_reply();
        let outcome = match kind {
            ReplyKind::Normal => ReplyOutcome::Normal,
            ReplyKind::UserException => ReplyOutcome::UserException,
            ReplyKind::SystemException => {
                let bytes = reply.into_bytes();
                let mut r = CdrReader::new(&bytes, self.byte_order, self.version)
                    .with_position(body_offset);
                return Err(SystemException::decode_body(&mut r).unwrap_or_else(|e| {
                    SystemException::from_cdr_error(&e, CompletionStatus::Maybe)
                }));
            }
        };
        Ok(Some(ReplyMessage {
            bytes: reply.into_bytes().into(),
            body_offset,
            byte_order: self.byte_order,
            version: self.version,
            codesets: self.codesets,
            outcome,
            fragment_starts: Vec::new(),
        }))
    }
}
