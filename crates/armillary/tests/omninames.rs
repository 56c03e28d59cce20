//! An Armillary client binding and resolving names in omniORB's
//! `omniNames`, and omniORB's `nameclt` seeing what Armillary bound. The
//! CosNaming calls are written by hand against `ObjectRef::invoke` until the
//! IDL compiler generates them from omniORB's CosNaming.idl.
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip.

use std::process::{Command, Stdio};

use armillary_testkit::Peer;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary::config::OrbConfig;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::{ObjectRef, Orb, ReplyBody, Servant, ServerRequest};
use armillary_giop::cdr::{CdrError, CdrWriter};

/// `CosNaming::Name` from "a/b.kind" style text (no escapes needed here).
fn write_name(w: &mut CdrWriter, name: &str) -> Result<(), CdrError> {
    let parts: Vec<&str> = name.split('/').collect();
    w.write_len(parts.len())?;
    for part in parts {
        let (id, kind) = part.split_once('.').unwrap_or((part, ""));
        w.write_string(id)?;
        w.write_string(kind)?;
    }
    Ok(())
}

#[derive(Debug)]
enum NamingError {
    User(String),
    System(SystemException),
}

impl std::fmt::Display for NamingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NamingError::User(id) => write!(f, "user exception {id}"),
            NamingError::System(e) => write!(f, "{e}"),
        }
    }
}

impl From<SystemException> for NamingError {
    fn from(e: SystemException) -> Self {
        NamingError::System(e)
    }
}

fn naming_call<T>(
    ctx: &ObjectRef,
    op: &str,
    args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    result: impl FnOnce(&mut armillary_giop::cdr::CdrReader<'_>) -> Result<T, CdrError>,
) -> Result<T, NamingError> {
    ctx.invoke(op, args, |reply| match reply {
        ReplyBody::Result(r) => Ok(Ok(result(r)?)),
        ReplyBody::UserException { id, .. } => Ok(Err(NamingError::User(id))),
    })
}

struct Hello;

impl Servant for Hello {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Hello:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Hello:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "hello" => req
                .results()
                .write_string("hello from Armillary")
                .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No)),
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

#[test]
fn bind_and_resolve_in_omninames() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("armillary-omninames-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _names = Peer(
        Command::new("omniNames")
            .args(["-start", &port.to_string(), "-always", "-datadir"])
            .arg(&dir)
            .args(["-ORBendPoint", &format!("giop:tcp:127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let root = orb
        .string_to_object(&format!("corbaloc::127.0.0.1:{port}/NameService"))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while root.non_existent().is_err() {
        assert!(Instant::now() < deadline, "omniNames did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(root
        .is_a("IDL:omg.org/CosNaming/NamingContextExt:1.0")
        .unwrap());

    let poa = orb.root_poa();
    poa.the_poa_manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Hello);
    let hello = poa.servant_to_reference(&servant).unwrap();

    // bind_new_context("armillary"), then bind("armillary/hello.obj").
    let sub: ObjectRef = naming_call(
        &root,
        "bind_new_context",
        &|w| write_name(w, "armillary"),
        |r| r.read(),
    )
    .unwrap_or_else(|e| panic!("bind_new_context: {e}"));
    assert!(!sub.is_nil());
    naming_call(
        &root,
        "bind",
        &|w| {
            write_name(w, "armillary/hello.obj")?;
            armillary_giop::CdrEncode::encode(&hello, w)
        },
        |_| Ok(()),
    )
    .unwrap();
    // Binding the same name again is AlreadyBound.
    let again = naming_call(
        &root,
        "bind",
        &|w| {
            write_name(w, "armillary/hello.obj")?;
            armillary_giop::CdrEncode::encode(&hello, w)
        },
        |_| Ok(()),
    );
    assert!(
        matches!(again, Err(NamingError::User(ref id)) if id == "IDL:omg.org/CosNaming/NamingContext/AlreadyBound:1.0"),
        "{again:?}"
    );
    // resolve gives back a reference that reaches our servant.
    let found: ObjectRef = naming_call(
        &root,
        "resolve",
        &|w| write_name(w, "armillary/hello.obj"),
        |r| r.read(),
    )
    .unwrap();
    assert_eq!(found, hello);
    let text: String = found
        .invoke::<_, SystemException>("hello", &|_| Ok(()), |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_string()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        })
        .unwrap();
    assert_eq!(text, "hello from Armillary");
    // A name that is not there: NotFound.
    let missing = naming_call(
        &root,
        "resolve",
        &|w| write_name(w, "armillary/none"),
        |r| r.read::<ObjectRef>(),
    );
    assert!(
        matches!(missing, Err(NamingError::User(ref id)) if id == "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0"),
        "{missing:?}"
    );
    // omniORB's own tool sees the binding.
    let out = Command::new("nameclt")
        .args([
            "-ORBInitRef",
            &format!("NameService=corbaloc::127.0.0.1:{port}/NameService"),
            "list",
            "armillary",
        ])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("hello.obj"), "nameclt list: {listing}");
    orb.shutdown(true);
    let _ = std::fs::remove_dir_all(&dir);
}
