//! The interception values driven as a collocated call drives them: no
//! connection, no GIOP message, the service contexts handed from one
//! side to the other as vectors (the module docs, "How collocation calls
//! the interceptors").

use std::sync::Arc;

use armillary_giop::any::Any;
use armillary_giop::giop::{ServiceContext, SyncScope};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use parking_lot::Mutex;

use super::*;
use crate::object_id::ObjectId;

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn push(&self, what: impl Into<String>) {
        self.0.lock().push(what.into());
    }
}

struct Client(Arc<Log>);

impl ClientRequestInterceptor for Client {
    fn send_request(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let slot = info.get_slot(SlotId(0))?.and_then(|v| v.get::<i32>());
        self.0
            .push(format!("send_request {} slot {slot:?}", info.request_id()));
        info.add_request_service_context(
            ServiceContext {
                id: 1,
                data: b"asked".to_vec(),
            },
            false,
        )?;
        Ok(())
    }

    fn receive_reply(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let answer = info.get_reply_service_context(2).map(|c| c.data.clone());
        self.0.push(format!("receive_reply {answer:?}"));
        Ok(())
    }

    fn receive_exception(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        self.0.push(format!(
            "receive_exception {}",
            info.received_exception_id().unwrap_or("?")
        ));
        Ok(())
    }
}

struct Server(Arc<Log>);

impl ServerRequestInterceptor for Server {
    fn receive_request_service_contexts(
        &self,
        info: &mut ServerRequestInfo,
    ) -> Result<(), Intercept> {
        let asked = info.get_request_service_context(1).map(|c| c.data.clone());
        self.0
            .push(format!("receive_request_service_contexts {asked:?}"));
        info.set_slot(SlotId(0), Any::from(5))?;
        info.add_reply_service_context(
            ServiceContext {
                id: 2,
                data: b"answered".to_vec(),
            },
            false,
        )?;
        Ok(())
    }

    fn receive_request(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        self.0.push(format!(
            "receive_request {:?}",
            info.object_id().map(|id| id.as_bytes().to_vec())
        ));
        if info.operation() == "refused" {
            return Err(SystemException::no_permission(1, CompletionStatus::No).into());
        }
        Ok(())
    }

    fn send_reply(&self, _: &mut ServerRequestInfo) -> Result<(), Intercept> {
        self.0.push("send_reply");
        Ok(())
    }

    fn send_exception(&self, _: &mut ServerRequestInfo) -> Result<(), Intercept> {
        self.0.push("send_exception");
        Ok(())
    }
}

/// One collocated request for `operation`, the servant run by `servant`
/// (which sees the thread's slot 0): the final client outcome.
fn collocated_call(
    interceptors: &Arc<Interceptors>,
    operation: &str,
    servant: impl FnOnce(Option<i32>) -> ServerOutcome,
) -> ClientOutcome {
    let current = interceptors.pi_current();
    current.set_slot(SlotId(0), Any::from(3)).unwrap();
    let call = ClientCall {
        request_id: interceptors.next_request_id(),
        operation,
        response_expected: true,
        sync_scope: SyncScope::WithTarget,
        target: crate::object::ObjectRef::nil(),
        effective_target: crate::object::ObjectRef::nil(),
        slots: interceptors.thread_slots(),
        arguments: None,
    };
    let mut client = ClientInterception::start(interceptors, call).expect("intercepted");
    if let Err(outcome) = client.send_request() {
        return client.conclude(outcome, Vec::new());
    }
    let mut server = ServerInterception::start(
        interceptors,
        client.request_id(),
        operation,
        true,
        SyncScope::WithTarget,
        client.request_contexts().to_vec(),
    )
    .expect("intercepted");
    let outcome = match server.receive_request_service_contexts() {
        Err(outcome) => outcome,
        Ok(()) => {
            server.set_target(&ObjectId::from(b"the-object".to_vec()));
            match server.receive_request() {
                Err(outcome) => outcome,
                Ok(()) => {
                    let _scope = server.enter_request_scope();
                    servant(current.get_slot(SlotId(0)).unwrap().and_then(|v| v.get()))
                }
            }
        }
    };
    let (outcome, reply_contexts) = server.conclude(outcome);
    let outcome = match outcome {
        ServerOutcome::Reply => ClientOutcome::Reply,
        ServerOutcome::UserException(id) => ClientOutcome::UserException(id),
        ServerOutcome::System(e) => ClientOutcome::System(e),
        ServerOutcome::Forward(to) => ClientOutcome::Forward(to),
    };
    let outcome = client.conclude(outcome, reply_contexts);
    // The servant's request scope is gone: the thread has its own again.
    assert_eq!(
        current
            .get_slot(SlotId(0))
            .unwrap()
            .and_then(|v| v.get::<i32>()),
        Some(3)
    );
    outcome
}

#[test]
fn a_collocated_call_drives_every_point_without_a_connection() {
    let log = Arc::new(Log::default());
    let interceptors = Arc::new(Interceptors::new(
        vec![Arc::new(Client(log.clone()))],
        vec![Arc::new(Server(log.clone()))],
        Vec::new(),
        1,
    ));
    let mut servant_saw = None;
    let outcome = collocated_call(&interceptors, "op", |slot| {
        servant_saw = slot;
        ServerOutcome::Reply
    });
    assert!(matches!(outcome, ClientOutcome::Reply));
    // The server interceptor's slot was the servant's thread's.
    assert_eq!(servant_saw, Some(5));
    assert_eq!(
        std::mem::take(&mut *log.0.lock()),
        vec![
            "send_request 1 slot Some(3)",
            "receive_request_service_contexts Some([97, 115, 107, 101, 100])",
            "receive_request Some([116, 104, 101, 45, 111, 98, 106, 101, 99, 116])",
            "send_reply",
            "receive_reply Some([97, 110, 115, 119, 101, 114, 101, 100])",
        ]
    );

    // A server interceptor refusing the request: the servant does not
    // run, and both ending points see the exception.
    let outcome = collocated_call(&interceptors, "refused", |_| {
        panic!("the servant of a refused request runs")
    });
    let ClientOutcome::System(e) = outcome else {
        panic!("not a system exception: {outcome:?}");
    };
    assert_eq!(
        e.kind(),
        SystemException::no_permission(0, CompletionStatus::No).kind()
    );
    let log = std::mem::take(&mut *log.0.lock());
    assert_eq!(log[3], "send_exception");
    assert_eq!(
        log[4],
        "receive_exception IDL:omg.org/CORBA/NO_PERMISSION:1.0"
    );
}

#[test]
fn a_panicking_interceptor_is_unknown() {
    struct Panics;
    impl ClientRequestInterceptor for Panics {
        fn send_request(&self, _: &mut ClientRequestInfo) -> Result<(), Intercept> {
            panic!("the interceptor panics");
        }
    }
    let interceptors = Arc::new(Interceptors::new(
        vec![Arc::new(Panics)],
        Vec::new(),
        Vec::new(),
        1,
    ));
    let outcome = collocated_call(&interceptors, "op", |_| ServerOutcome::Reply);
    let ClientOutcome::System(e) = outcome else {
        panic!("not a system exception: {outcome:?}");
    };
    assert_eq!(e.minor(), minor::INTERCEPTOR_PANICKED);
}

#[test]
fn slots_and_contexts_are_checked() {
    let interceptors = Interceptors::new(Vec::new(), Vec::new(), Vec::new(), 1);
    let current = interceptors.pi_current();
    assert_eq!(current.get_slot(SlotId(0)), Ok(None));
    assert_eq!(
        current.set_slot(SlotId(1), Any::from(1)),
        Err(PiError::InvalidSlot(SlotId(1)))
    );
    let mut list = Vec::new();
    let context = |data: &[u8]| ServiceContext {
        id: 9,
        data: data.to_vec(),
    };
    add_context(&mut list, context(b"a"), false).unwrap();
    assert_eq!(
        add_context(&mut list, context(b"b"), false),
        Err(PiError::ContextExists(9))
    );
    add_context(&mut list, context(b"c"), true).unwrap();
    assert_eq!(list, vec![context(b"c")]);
    assert_eq!(
        Intercept::from(PiError::InvalidSlot(SlotId(3))).to_string_kind(),
        "BAD_PARAM"
    );
}

impl Intercept {
    fn to_string_kind(&self) -> &'static str {
        match self {
            Intercept::System(e) => e.kind().name(),
            Intercept::ForwardRequest(_) => "forward",
        }
    }
}
