//! `LocateRequest`: where an object is, asked of the server that a
//! reference names ([`Invoker::locate`](crate::object::Invoker::locate)).

use std::time::Instant;

use armillary_giop::giop::{LocateStatus, MessageBody, MessageBuilder, TargetAddress};
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, CdrDecode};

use crate::object::{Location, ObjectRef};
use crate::transport::client::{Awaited, Closed, SendError};
use crate::transport::mux::Caller;
use crate::transport::outbox::Outgoing;
use crate::transport::reply::sync::SyncSlot;

use crate::orb::OrbCore;

impl OrbCore {
    pub(crate) fn locate_once(
        &self,
        target: &Ior,
        deadline: Option<Instant>,
    ) -> Result<Option<Location>, SystemException> {
        let profile = target.iiop_profiles().into_iter().next().ok_or_else(|| {
            SystemException::inv_objref(minor::UNREGISTERED_OBJECT, CompletionStatus::No)
        })?;
        let version = profile.iiop_version.min(self.config.giop_version());
        let route = crate::transport::tls::routes(
            &profile,
            self.connections.has_tls(),
            self.config.tls.require,
        )?
        .into_iter()
        .next()
        .ok_or_else(|| SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No))?;
        let conn = self.connection(&route, Caller::Waits, deadline)?;
        let id = conn.next_request_id();
        let fields = MessageBody::LocateRequest {
            request_id: id,
            target: TargetAddress::Key(profile.object_key.as_slice().into()),
        };
        let bytes = MessageBuilder::new(version, ByteOrder::NATIVE, &fields)
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?
            .finish_spliced(false);
        let slot = SyncSlot::for_this_thread();
        conn.bind(id, slot.dispatcher(), deadline);
        let outgoing = Outgoing {
            reply: Some(id),
            deadline,
        };
        if let Err(e) = conn.send(&bytes, outgoing, Caller::Waits) {
            conn.unbind(id);
            self.connections.evict(&conn);
            return match e {
                SendError::Failed => Ok(None),
                SendError::TimedOut => Err(SystemException::timeout(
                    minor::CALL_TIMEOUT,
                    CompletionStatus::No,
                )),
            };
        }
        let frame = match self.wait_reply(&conn, id, &slot, deadline) {
            Awaited::Reply(frame) => frame,
            Awaited::TimedOut { silent, sent } => return Err(self.timed_out(&conn, silent, sent)),
            Awaited::Closed(Closed::Orderly) | Awaited::Unsent => {
                self.connections.evict(&conn);
                return Ok(None);
            }
            Awaited::ReplyTooLarge => {
                self.connections.evict(&conn);
                return Err(SystemException::marshal(
                    minor::MESSAGE_SIZE_EXCEEDED,
                    CompletionStatus::Yes,
                ));
            }
            Awaited::Closed(Closed::Broken) => {
                self.connections.evict(&conn);
                return Err(SystemException::comm_failure(
                    minor::CONNECTION_LOST,
                    CompletionStatus::No,
                ));
            }
            Awaited::Closed(Closed::Refused) => {
                self.connections.evict(&conn);
                return Err(crate::transport::tls::refused());
            }
        };
        let malformed = || SystemException::marshal(minor::MALFORMED, CompletionStatus::No);
        let msg = frame.message().map_err(|_| malformed())?;
        let MessageBody::LocateReply(h) = msg.body else {
            return Err(malformed());
        };
        let mut body = frame.reader(&msg);
        Ok(Some(match h.locate_status {
            LocateStatus::ObjectHere => Location::Here,
            LocateStatus::UnknownObject => Location::Unknown,
            LocateStatus::ObjectForward | LocateStatus::ObjectForwardPerm => {
                let ior = Ior::decode(&mut body).map_err(|_| malformed())?;
                let me = self.me.upgrade().ok_or_else(malformed)?;
                Location::Forward(ObjectRef::new(ior, me))
            }
            LocateStatus::LocSystemException => {
                return Err(SystemException::decode_body(&mut body).map_err(|_| malformed())?)
            }
            LocateStatus::LocNeedsAddressingMode => {
                return Err(SystemException::no_implement(0, CompletionStatus::No))
            }
        }))
    }
}
