//! Service contexts: the tagged side-data of requests and replies. Every
//! context is kept byte-exact; the ones Armillary understands can be
//! decoded on demand.

use crate::cdr::codeset::CodeSetContext;
use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
use crate::ior::Ior;
use crate::version::GiopVersion;

/// `CodeSets`: the transmission code sets the client chose.
pub const CODE_SETS: u32 = 1;
/// `BI_DIR_IIOP`: the client's listen points, for bidirectional GIOP.
pub const BI_DIR_IIOP: u32 = 5;
/// `SendingContextRunTime`: the sender's CodeBase (valuetypes).
pub const SENDING_CONTEXT_RUN_TIME: u32 = 6;

/// One service context, with its data exactly as it travelled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceContext {
    /// The context id.
    pub id: u32,
    /// The context data (an encapsulation for the standard ids).
    pub data: Vec<u8>,
}

/// A host and port the sender listens on (`IIOP::ListenPoint`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListenPoint {
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// A service context Armillary understands, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownServiceContext {
    /// `CodeSets`.
    CodeSets(CodeSetContext),
    /// `BI_DIR_IIOP`.
    BiDirIiop(Vec<ListenPoint>),
    /// `SendingContextRunTime`: the CodeBase reference.
    SendingContextRunTime(Ior),
}

impl ServiceContext {
    /// A `CodeSets` context.
    pub fn code_sets(ctx: CodeSetContext, version: GiopVersion) -> Self {
        Self::encapsulate(CODE_SETS, version, |w| ctx.encode(w))
    }

    /// A `BI_DIR_IIOP` context.
    pub fn bi_dir_iiop(points: &[ListenPoint], version: GiopVersion) -> Self {
        Self::encapsulate(BI_DIR_IIOP, version, |w| {
            w.write_len(points.len())?;
            for p in points {
                w.write_string(&p.host)?;
                w.write_ushort(p.port);
            }
            Ok(())
        })
    }

    fn encapsulate(
        id: u32,
        version: GiopVersion,
        body: impl FnOnce(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Self {
        let order = crate::ByteOrder::NATIVE;
        let mut w = CdrWriter::new(order, version);
        w.write_octet(order.flag());
        // Code set ids, counts and ASCII host names cannot fail to encode.
        let _ = body(&mut w);
        ServiceContext {
            id,
            data: w.into_bytes(),
        }
    }

    /// Decodes the context if its id is one Armillary understands;
    /// `Ok(None)` for other ids.
    pub fn decode_known(&self) -> Result<Option<KnownServiceContext>, CdrError> {
        let reader = || CdrReader::encapsulation(&self.data, GiopVersion::V1_2, 0);
        Ok(Some(match self.id {
            CODE_SETS => KnownServiceContext::CodeSets(CodeSetContext::decode(&mut reader()?)?),
            BI_DIR_IIOP => {
                let mut r = reader()?;
                let points = r.read_seq_with(6, |r| {
                    Ok(ListenPoint {
                        host: r.read_string()?,
                        port: r.read_ushort()?,
                    })
                })?;
                KnownServiceContext::BiDirIiop(points)
            }
            SENDING_CONTEXT_RUN_TIME => {
                KnownServiceContext::SendingContextRunTime(Ior::decode(&mut reader()?)?)
            }
            _ => return Ok(None),
        }))
    }

    /// The name of a standard context id, for display.
    pub fn name_of(id: u32) -> Option<&'static str> {
        Some(match id {
            0 => "TransactionService",
            CODE_SETS => "CodeSets",
            2 => "ChainBypassCheck",
            3 => "ChainBypassInfo",
            4 => "LogicalThreadId",
            BI_DIR_IIOP => "BI_DIR_IIOP",
            SENDING_CONTEXT_RUN_TIME => "SendingContextRunTime",
            7 => "INVOCATION_POLICIES",
            8 => "FORWARDED_IDENTITY",
            9 => "UnknownExceptionInfo",
            10 => "RTCorbaPriority",
            11 => "RTCorbaPriorityRange",
            15 => "SecurityAttributeService",
            _ => return None,
        })
    }
}

impl CdrEncode for ServiceContext {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_ulong(self.id);
        w.write_octet_seq(&self.data)
    }
}

impl CdrDecode for ServiceContext {
    const MIN_SIZE: usize = 8;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(ServiceContext {
            id: r.read_ulong()?,
            data: r.read_octet_seq()?.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_contexts_round_trip() {
        let cs = CodeSetContext {
            char_data: 0x0501_0001,
            wchar_data: 0x0001_0109,
        };
        let ctx = ServiceContext::code_sets(cs, GiopVersion::V1_2);
        assert_eq!(
            ctx.decode_known().unwrap(),
            Some(KnownServiceContext::CodeSets(cs))
        );
        let points = vec![ListenPoint {
            host: "::1".into(),
            port: 2809,
        }];
        let ctx = ServiceContext::bi_dir_iiop(&points, GiopVersion::V1_2);
        assert_eq!(
            ctx.decode_known().unwrap(),
            Some(KnownServiceContext::BiDirIiop(points))
        );
        let unknown = ServiceContext {
            id: 0x4f4d_0000,
            data: vec![1, 2, 3],
        };
        assert_eq!(unknown.decode_known().unwrap(), None);
        let garbage = ServiceContext {
            id: CODE_SETS,
            data: vec![7],
        };
        assert!(garbage.decode_known().is_err());
    }
}
