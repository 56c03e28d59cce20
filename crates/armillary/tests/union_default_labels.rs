//! Which form of union default label the ORB writes to whom (see the
//! `armillary_giop::typecode` module docs): a request takes the form its
//! target's ORB reads, known from the reference's `TAG_ORB_TYPE`, else
//! the client's `-ORBUnionDefaultLabel`; a reply takes the form the
//! client's TypeCodes showed, in that request or an earlier one on the
//! connection, else the server's `-ORBUnionDefaultLabel`.
//!
//! Each reply's form is read back on the client
//! (`CdrReader::default_label_seen`); a server configured for the other
//! form echoing an `any` shows the form of the request.

use std::sync::{Arc, Mutex};

use armillary::config::{OrbConfig, UnionDefaultLabel};
use armillary::giop::any::{Any, DynValue};
use armillary::giop::ior::{
    Ior, ProfileBody, TaggedComponent, ORB_TYPE_ARMILLARY, ORB_TYPE_JACORB, ORB_TYPE_OMNIORB,
    ORB_TYPE_TAO, TAG_ORB_TYPE,
};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::giop::typecode::{DefaultLabelForm, TypeCode, UnionMember};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError};

/// Echoes an `any` (`echo`) and gives the last one back (`last`, no
/// arguments).
struct Keeper {
    last: Mutex<Option<Any>>,
}

impl Servant for Keeper {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Keeper:1.0"
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let marshal = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        match req.operation() {
            "echo" => {
                let any = Any::decode(req.args()).map_err(marshal)?;
                any.encode(req.results()).map_err(marshal)?;
                *self.last.lock().unwrap() = Some(any);
                Ok(())
            }
            "last" => {
                let any = self
                    .last
                    .lock()
                    .unwrap()
                    .clone()
                    .ok_or_else(|| SystemException::bad_inv_order(0, CompletionStatus::No))?;
                any.encode(req.results()).map_err(marshal)
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

/// A union switching on `long long`, holding its default member: its
/// label is never 8-aligned here, so the two forms put the member's name
/// at different places and the bytes tell the form.
fn wide_union() -> Any {
    let members = vec![
        UnionMember {
            label: 1,
            name: "one".into(),
            type_code: TypeCode::long(),
        },
        UnionMember {
            label: 0,
            name: "other".into(),
            type_code: TypeCode::short(),
        },
    ];
    let tc = TypeCode::union_tc("IDL:Test/U:1.0", "U", TypeCode::longlong(), 1, members);
    let value = DynValue::Union {
        discriminator: Box::new(DynValue::LongLong(2)),
        member: Some((1, Box::new(DynValue::Short(-5)))),
    };
    Any::new(tc, value).unwrap()
}

fn server(label: UnionDefaultLabel) -> (Orb, Ior) {
    let orb = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .union_default_label(label),
    )
    .unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Keeper {
        last: Mutex::new(None),
    });
    let ior = poa.servant_to_reference(&servant).unwrap().ior().clone();
    (orb, ior)
}

fn client(label: UnionDefaultLabel) -> Orb {
    Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .union_default_label(label),
    )
    .unwrap()
}

/// `ior` claiming to be made by the ORB of `orb_type` (or by none).
fn made_by(ior: &Ior, orb_type: Option<u32>) -> Ior {
    let mut body: ProfileBody = ior.iiop_profiles().into_iter().next().unwrap();
    body.components.retain(|c| c.tag != TAG_ORB_TYPE);
    body.components
        .extend(orb_type.map(TaggedComponent::orb_type));
    Ior::iiop(&ior.type_id, &body).unwrap()
}

/// Calls `op` (with `any` as the argument, if given) and returns the `any`
/// of the reply and the form its TypeCode showed.
fn call(obj: &ObjectRef, op: &str, any: Option<&Any>) -> (Any, Option<DefaultLabelForm>) {
    obj.invoke(
        op,
        &|w| any.map_or(Ok(()), |a| a.encode(w)),
        |reply| match reply {
            ReplyBody::Result(r) => {
                let back = Any::decode(r)?;
                Ok(Ok::<_, SystemException>((back, r.default_label_seen())))
            }
            ReplyBody::UserException { id, .. } => panic!("user exception {id}"),
        },
    )
    .unwrap()
}

#[test]
fn a_reply_takes_the_form_the_client_showed_else_the_servers_setting() {
    let any = wide_union();
    let (server_orb, ior) = server(UnionDefaultLabel::ZeroOctet);
    // A client that writes a zero of the discriminator's type (Armillary
    // reads both forms, so the reference's ORB type leaves the choice to
    // the client's setting).
    let typed = client(UnionDefaultLabel::Discriminator);
    let obj = typed.ior_to_object(ior.clone());
    let typed_form = Some(DefaultLabelForm::DiscriminatorTyped);
    assert_eq!(call(&obj, "echo", Some(&any)), (any.clone(), typed_form));
    // A request without TypeCodes, on the same connection: as the earlier
    // request showed.
    assert_eq!(call(&obj, "last", None), (any.clone(), typed_form));
    // A client whose TypeCodes the server has not seen: its setting.
    let fresh = client(UnionDefaultLabel::Discriminator);
    let obj = fresh.ior_to_object(ior);
    let zero_octet = Some(DefaultLabelForm::ZeroOctet);
    assert_eq!(call(&obj, "last", None), (any.clone(), zero_octet));
    for orb in [typed, fresh, server_orb] {
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

#[test]
fn a_request_takes_the_form_its_targets_orb_reads_else_the_clients_setting() {
    use DefaultLabelForm::{DiscriminatorTyped as Typed, ZeroOctet};
    use UnionDefaultLabel::{Discriminator, ZeroOctet as ZeroOctetSetting};
    let any = wide_union();
    // A server that, shown no form, would answer in the other one.
    let (zero_server, zero_ior) = server(ZeroOctetSetting);
    let (typed_server, typed_ior) = server(Discriminator);
    for (setting, orb_type, expected) in [
        (ZeroOctetSetting, Some(ORB_TYPE_OMNIORB), Typed),
        (Discriminator, Some(ORB_TYPE_OMNIORB), Typed),
        (ZeroOctetSetting, Some(ORB_TYPE_TAO), Typed),
        (Discriminator, Some(ORB_TYPE_JACORB), ZeroOctet),
        (ZeroOctetSetting, Some(ORB_TYPE_ARMILLARY), ZeroOctet),
        (Discriminator, Some(ORB_TYPE_ARMILLARY), Typed),
        (ZeroOctetSetting, Some(0x1234_5678), ZeroOctet),
        (ZeroOctetSetting, None, ZeroOctet),
        (Discriminator, None, Typed),
    ] {
        let ior = match expected {
            Typed => &zero_ior,
            ZeroOctet => &typed_ior,
        };
        let orb = client(setting);
        let obj = orb.ior_to_object(made_by(ior, orb_type));
        let (back, seen) = call(&obj, "echo", Some(&any));
        assert_eq!(back, any);
        assert_eq!(seen, Some(expected), "{setting:?} {orb_type:x?}");
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
    for orb in [zero_server, typed_server] {
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}
