//! The Dynamic Skeleton Interface served over IIOP to Armillary's own DII
//! client: a `DynamicServant` activated like any servant, `_is_a` answered
//! from its declared ids, and the checks a dynamic servant is held to
//! (arguments read once, one result, every out value set, exceptions that
//! are exceptions). omniORB's client against a DSI servant is in
//! `omniorb_client.rs`.

use std::sync::Arc;

use armillary::config::{Collocation, ConcurrencyModel, OrbConfig};
use armillary::dii::{ArgMode, NvList};
use armillary::dsi::{DynamicRequest, DynamicServant};
use armillary::giop::any::DynValue;
use armillary::giop::typecode::{StructMember, TypeCode};
use armillary::Any;
use armillary::WaitForCompletion;
use armillary::{
    minor, CompletionStatus, ObjectRef, Orb, RequestError, Servant, SystemException,
    SystemExceptionKind,
};

const CALCULATOR: &str = "IDL:Test/Calculator:1.0";
const BASE: &str = "IDL:Test/Base:1.0";

fn overflow() -> TypeCode {
    TypeCode::exception_tc(
        "IDL:Test/Overflow:1.0",
        "Overflow",
        vec![StructMember {
            name: "limit".into(),
            type_code: TypeCode::long(),
        }],
    )
}

/// `interface Calculator : Base { long add(in long a, inout long b, out
/// string text) raises (Overflow); ... }`, plus operations that misuse the
/// dynamic request on purpose.
struct Calculator;

fn long_at(args: &NvList, i: usize) -> i32 {
    args.value(i)
        .and_then(|v| v.get::<i32>())
        .unwrap_or_default()
}

impl DynamicServant for Calculator {
    fn primary_interface(&self) -> &'static str {
        CALCULATOR
    }

    fn base_interfaces(&self) -> &[&'static str] {
        &[BASE]
    }

    fn invoke(&self, req: &mut DynamicRequest<'_, '_>) -> Result<(), SystemException> {
        let add_params = || {
            NvList::new()
                .with_param(ArgMode::In, TypeCode::long())
                .with_param(ArgMode::InOut, TypeCode::long())
                .with_param(ArgMode::Out, TypeCode::string(0))
        };
        match req.operation() {
            "add" => {
                let args = req.arguments(add_params())?;
                let (a, b) = (long_at(args, 0), long_at(args, 1));
                let Some(sum) = a.checked_add(b) else {
                    let limit =
                        Any::new(overflow(), DynValue::Struct(vec![DynValue::Long(i32::MAX)]))
                            .expect("fits");
                    return req.set_exception(limit);
                };
                args.set_value(1, Any::from(b + 1))?;
                args.set_value(2, Any::from(format!("{a} + {b}")))?;
                req.set_result(Any::from(sum))
            }
            "add_without_out" => {
                let args = req.arguments(add_params())?;
                args.set_value(1, Any::from(0))?;
                req.set_result(Any::from(0))
            }
            "wrong_out_type" => {
                let args = req.arguments(add_params())?;
                // The servant's own mistake, refused before anything is sent.
                args.set_value(2, Any::from(5))?;
                Ok(())
            }
            "set_in_value" => {
                let args = req.arguments(add_params())?;
                args.set_value(0, Any::from(5))?;
                Ok(())
            }
            "two_results" => {
                req.arguments(NvList::new())?;
                req.set_result(Any::from(1))?;
                req.set_result(Any::from(2))
            }
            "arguments_twice" => {
                req.arguments(NvList::new())?;
                req.arguments(NvList::new())?;
                Ok(())
            }
            "raise_a_long" => req.set_exception(Any::from(1)),
            "expects_a_string" => {
                let args =
                    req.arguments(NvList::new().with_param(ArgMode::In, TypeCode::string(0)))?;
                let text = args.value(0).cloned().unwrap_or_else(Any::null);
                req.set_result(text)
            }
            _ => Err(SystemException::bad_operation(
                minor::UNKNOWN_OPERATION,
                CompletionStatus::No,
            )),
        }
    }
}

fn serve(concurrency: ConcurrencyModel) -> (Orb, ObjectRef) {
    let orb = Orb::with_config(OrbConfig::new().concurrency(concurrency)).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Calculator);
    let obj = poa.servant_to_reference(&servant).unwrap();
    (orb, obj)
}

fn add(obj: &ObjectRef, a: i32, b: i32) -> armillary::Request {
    obj.request("add")
        .with_in(Any::from(a))
        .with_inout(Any::from(b))
        .with_out(TypeCode::string(0))
        .returns(TypeCode::long())
        .raises(overflow())
}

fn system_error(outcome: Result<(), RequestError>) -> (SystemExceptionKind, u32, CompletionStatus) {
    let error = outcome.unwrap_err();
    let e = error.system_exception().expect("a system exception");
    (e.kind(), e.minor(), e.completed())
}

#[test]
fn a_dynamic_servant_serves_dii_requests_over_iiop() {
    let (orb, obj) = serve(ConcurrencyModel::ThreadPool(2));
    assert_eq!(obj.type_id(), CALCULATOR);
    assert!(obj.is_a(BASE).unwrap(), "a base interface, asked remotely");
    assert!(obj.is_a("IDL:omg.org/CORBA/Object:1.0").unwrap());
    assert!(!obj.is_a("IDL:Test/Other:1.0").unwrap());
    assert!(!obj.non_existent().unwrap());

    let mut request = add(&obj, 40, 2);
    request.invoke().unwrap();
    assert_eq!(
        request.return_value().and_then(|v| v.get::<i32>()),
        Some(42)
    );
    assert_eq!(
        request.arguments().value(1).and_then(|v| v.get::<i32>()),
        Some(3)
    );
    assert_eq!(
        request
            .arguments()
            .value(2)
            .and_then(|v| v.get::<String>())
            .as_deref(),
        Some("40 + 2")
    );

    // A user exception given as an any arrives as one.
    let error = add(&obj, i32::MAX, 1).invoke().unwrap_err();
    let exception = error.user_exception().expect("Overflow");
    assert_eq!(exception.type_code.id(), Ok("IDL:Test/Overflow:1.0"));
    assert_eq!(
        exception.value,
        DynValue::Struct(vec![DynValue::Long(i32::MAX)])
    );

    // Misuses of the dynamic request, each a system exception.
    let call = |op: &str| {
        let mut request = obj
            .request(op)
            .with_in(Any::from(1))
            .with_inout(Any::from(2))
            .with_out(TypeCode::string(0))
            .returns(TypeCode::long());
        system_error(request.invoke())
    };
    let bad_param = (SystemExceptionKind::BadParam, 0, CompletionStatus::Yes);
    assert_eq!(call("add_without_out"), bad_param);
    assert_eq!(call("wrong_out_type"), bad_param);
    assert_eq!(call("set_in_value"), bad_param);
    let plain = |op: &str| system_error(obj.request(op).returns(TypeCode::long()).invoke());
    assert_eq!(
        plain("two_results"),
        (
            SystemExceptionKind::BadInvOrder,
            minor::RESULT_ALREADY_SET,
            CompletionStatus::No
        )
    );
    assert_eq!(
        plain("arguments_twice"),
        (
            SystemExceptionKind::BadInvOrder,
            minor::ARGUMENTS_ALREADY_READ,
            CompletionStatus::No
        )
    );
    assert_eq!(
        plain("raise_a_long"),
        (SystemExceptionKind::BadParam, 0, CompletionStatus::No)
    );
    assert_eq!(
        plain("no_such_operation"),
        (
            SystemExceptionKind::BadOperation,
            minor::UNKNOWN_OPERATION,
            CompletionStatus::No
        )
    );
    // Arguments that do not match what the servant declares.
    let mismatch = system_error(
        obj.request("expects_a_string")
            .with_in(Any::from(i64::MAX))
            .returns(TypeCode::string(0))
            .invoke(),
    );
    assert_eq!(
        (mismatch.0, mismatch.2),
        (SystemExceptionKind::Marshal, CompletionStatus::No)
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn deferred_replies_are_delivered_by_whichever_call_reads_them() {
    // One server thread: a connection's requests are answered in order.
    // (Over IIOP: asynchronous calls to a collocated object run on
    // collocation threads, in no set order.)
    let (server, obj) = serve(ConcurrencyModel::SingleThreadedReactive);
    let client = Orb::with_config(OrbConfig::new().collocation(Collocation::None)).unwrap();
    let obj = client.string_to_object(&obj.ior().to_string()).unwrap();
    // Many outstanding on one connection: a dispatcher each, no thread.
    let mut deferred: Vec<_> = (0..500).map(|i| add(&obj, i, i)).collect();
    for request in &mut deferred {
        request.send_deferred().unwrap();
    }
    // The synchronous call reads the earlier replies on its way to its own
    // and hands each to its deferred dispatcher: all are there, with no
    // further read.
    let mut sync = add(&obj, 100, 1);
    sync.invoke().unwrap();
    for (i, request) in deferred.iter_mut().enumerate() {
        assert!(request.poll_response().unwrap(), "request {i}");
        request.get_response().unwrap();
        let i = i as i32;
        assert_eq!(
            request.return_value().and_then(|v| v.get::<i32>()),
            Some(2 * i)
        );
    }
    client.shutdown(WaitForCompletion::Yes).unwrap();
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn dii_requests_on_a_local_object_are_answered_at_once() {
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let current = orb.resolve_initial_references("POACurrent").unwrap();
    let mut is_a = current
        .request("_is_a")
        .with_in(Any::from("IDL:omg.org/PortableServer/Current:1.0"))
        .returns(TypeCode::boolean());
    // An invoker that cannot defer runs the request when it is sent.
    is_a.send_deferred().unwrap();
    assert!(is_a.poll_response().unwrap());
    is_a.get_response().unwrap();
    assert!(is_a.return_value().and_then(|v| v.get::<bool>()).is_some());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Reads requests from `stream` until one arrives; its id.
fn next_request_id(
    stream: &mut std::net::TcpStream,
    decoder: &mut armillary::giop::giop::FrameDecoder,
) -> Option<u32> {
    use std::io::Read;
    loop {
        if let Some(frame) = decoder.poll_frame() {
            let (msg, _) = frame.decode().ok()?;
            if let armillary::giop::giop::MessageBody::Request(h) = msg.body {
                return Some(h.request_id);
            }
            continue;
        }
        let mut buf = [0u8; 4096];
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => decoder.handle_bytes(&buf[..n]).ok()?,
        }
    }
}

#[test]
fn a_deferred_request_is_sent_again_after_an_orderly_close_and_follows_a_forward() {
    use armillary::giop::giop::{
        FrameDecoder, FrameLimits, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus,
    };
    use armillary::giop::{ByteOrder, CdrEncode, GiopVersion};
    use std::io::Write;

    let (server, target) = serve(ConcurrencyModel::ThreadPool(2));
    let forward_to = target.ior().clone();
    // A gateway: its first connection is closed in an orderly way before
    // the request is answered; on the second it forwards to the server.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let gateway = std::thread::spawn(move || {
        let mut requests = 0;
        for (n, stream) in listener.incoming().take(2).enumerate() {
            let mut stream = stream.unwrap();
            let mut decoder = FrameDecoder::new(FrameLimits::default());
            let id = next_request_id(&mut stream, &mut decoder).unwrap();
            requests += 1;
            let body = if n == 0 {
                MessageBody::CloseConnection
            } else {
                MessageBody::Reply(ReplyHeader {
                    request_id: id,
                    reply_status: ReplyStatus::LocationForward,
                    service_contexts: Vec::new(),
                })
            };
            let mut message =
                MessageBuilder::new(GiopVersion::V1_2, ByteOrder::NATIVE, &body).unwrap();
            if n == 1 {
                forward_to.encode(message.body()).unwrap();
            }
            stream.write_all(&message.finish(false)).unwrap();
            // Wait for the client to hang up.
            let _ = next_request_id(&mut stream, &mut decoder);
        }
        requests
    });
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let obj = client
        .string_to_object(&format!("corbaloc::1.2@127.0.0.1:{port}/calculator"))
        .unwrap();
    let mut request = add(&obj, 20, 22);
    request.send_deferred().unwrap();
    request.get_response().unwrap();
    assert_eq!(
        request.return_value().and_then(|v| v.get::<i32>()),
        Some(42)
    );
    client.shutdown(WaitForCompletion::Yes).unwrap();
    assert_eq!(gateway.join().unwrap(), 2);
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn requests_are_send() {
    fn send<T: Send>() {}
    send::<armillary::Request>();
    send::<armillary::runtime::PendingReply>();
}
