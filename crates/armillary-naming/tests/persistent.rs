//! The persistent naming service (`start_persistent`) across restarts of
//! its ORB in this process: every binding and context comes back from the
//! store, references taken before a restart (the root's and the
//! sub-contexts') work after it, and what was destroyed stays destroyed.
//! (`armillary-cli`'s `naming_serve` tests kill a service process with
//! SIGKILL.)

use std::path::{Path, PathBuf};

use armillary::config::{ConcurrencyModel, ListenEndpoint, OrbConfig};
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_naming::cos_naming::naming_context::{NotFoundReason, ResolveError};
use armillary_naming::cos_naming::naming_context_ext::ResolveStrError;
use armillary_naming::cos_naming::{Name, NamingContext, NamingContextExt};
use armillary_naming::{PersistentStartError, StoreError};

fn n(sn: &str) -> Name {
    armillary_naming::name::to_name(sn).unwrap()
}

/// A directory of its own for one test's store, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("armillary-naming-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn store(&self) -> PathBuf {
        self.0.join("names.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A persistent service on 127.0.0.1:`port` with its store at `store`.
fn serve(port: u16, store: &Path) -> (Orb, NamingContextExt) {
    let config = OrbConfig::new()
        .listen(ListenEndpoint::new("127.0.0.1", port))
        .concurrency(ConcurrencyModel::ThreadPool(2));
    let orb = Orb::with_config(config).unwrap();
    let root = armillary_naming::start_persistent(&orb, store).unwrap();
    (orb, root)
}

fn object(orb: &Orb, key: &str) -> ObjectRef {
    orb.string_to_object(&format!("corbaloc::127.0.0.1:1/{key}"))
        .unwrap()
}

fn context(orb: &Orb, ior: &str) -> NamingContextExt {
    NamingContextExt::from_object(orb.string_to_object(ior).unwrap())
}

fn object_not_exist(e: &armillary::SystemException) -> bool {
    e.kind() == SystemExceptionKind::ObjectNotExist
}

#[test]
fn bindings_and_references_survive_a_restart() {
    let dir = TempDir::new("restart");
    let port = free_port();
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let x = object(&client, "x");
    let y = object(&client, "y");

    let (server, root) = serve(port, &dir.store());
    let root_ior = server.object_to_string(root.as_object());
    let root = context(&client, &root_ior);
    let apps = root.bind_new_context(&n("apps.ctx")).unwrap();
    let deep = apps.bind_new_context(&n("deep")).unwrap();
    root.bind(&n("apps.ctx/x.obj"), &x).unwrap();
    root.bind(&n("apps.ctx/deep/y"), &y).unwrap();
    root.rebind(&n("top"), &x).unwrap();
    root.rebind(&n("top"), &y).unwrap();
    root.bind(&n("gone"), &x).unwrap();
    root.unbind(&n("gone")).unwrap();
    // A context made with new_context and bound nowhere, and one bound
    // with bind_context under a second name.
    let lone = root.new_context().unwrap();
    lone.bind(&n("in-lone"), &x).unwrap();
    root.bind_context(&n("alias"), &deep).unwrap();
    // A context destroyed (and unbound), and an iterator of this run.
    let dead = root.bind_new_context(&n("dead")).unwrap();
    root.unbind(&n("dead")).unwrap();
    dead.destroy().unwrap();
    for i in 0..3 {
        apps.bind(&n(&format!("o{i}")), &x).unwrap();
    }
    let (_, iterator) = apps.list(1).unwrap();
    assert!(!iterator.is_nil());
    // Kept as strings: in this process the references the service hands
    // out belong to its ORB, which is about to shut down.
    let deep_ior = client.object_to_string(deep.as_object());
    let lone_ior = client.object_to_string(lone.as_object());
    let dead_ior = client.object_to_string(dead.as_object());
    let iterator_ior = client.object_to_string(iterator.as_object());
    server.shutdown(WaitForCompletion::Yes).unwrap();

    let (server, new_root) = serve(port, &dir.store());
    // The root's reference is the same object, and answers from the store.
    assert!(new_root
        .as_object()
        .is_equivalent(&context(&client, &root_ior).into_object()));
    let root = context(&client, &root_ior);
    assert_eq!(root.resolve_str("apps.ctx/x.obj").unwrap(), x);
    assert_eq!(root.resolve_str("apps.ctx/deep/y").unwrap(), y);
    assert_eq!(root.resolve_str("alias/y").unwrap(), y);
    assert_eq!(root.resolve_str("top").unwrap(), y);
    assert!(matches!(
        root.resolve_str("gone"),
        Err(ResolveStrError::NotFound(e)) if e.why == NotFoundReason::MissingNode
    ));
    // References to sub-contexts taken before the restart.
    let deep = context(&client, &deep_ior);
    assert_eq!(deep.resolve(&n("y")).unwrap(), y);
    deep.bind(&n("after"), &x).unwrap();
    assert_eq!(root.resolve_str("apps.ctx/deep/after").unwrap(), x);
    let lone = context(&client, &lone_ior);
    assert_eq!(lone.resolve(&n("in-lone")).unwrap(), x);
    // Listing (through an iterator of this run).
    let (first, rest) = root
        .resolve_str("apps.ctx")
        .map(|o| NamingContext::from_object(o).list(2).unwrap())
        .unwrap();
    assert_eq!(first.len(), 2);
    assert_eq!(rest.next_n(10).unwrap().1.len(), 3);
    // What was destroyed stays so; the earlier run's iterator is gone.
    let dead = context(&client, &dead_ior);
    let iterator = armillary_naming::cos_naming::BindingIterator::from_object(
        client.string_to_object(&iterator_ior).unwrap(),
    );
    let e = dead.list(1).unwrap_err();
    assert!(object_not_exist(&e), "{e:?}");
    let e = iterator.next_one().unwrap_err();
    assert!(object_not_exist(&e), "{e:?}");
    // New contexts do not take the destroyed one's id.
    root.bind_new_context(&n("new")).unwrap();
    let e = dead.list(1).unwrap_err();
    assert!(object_not_exist(&e), "{e:?}");
    match dead.resolve(&n("x")) {
        Err(ResolveError::System(e)) => assert!(object_not_exist(&e), "{e:?}"),
        other => panic!("{other:?}"),
    }
    server.shutdown(WaitForCompletion::Yes).unwrap();
    client.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Two persistent services have the same POA name and the same object
/// ids: a context of the other one is called, not taken for one's own.
#[test]
fn contexts_of_another_persistent_service_are_handed_on() {
    let dir = TempDir::new("two");
    let (here_orb, here) = serve(free_port(), &dir.0.join("here.db"));
    let (there_orb, there) = serve(free_port(), &dir.0.join("there.db"));
    let there_root = context(&here_orb, &there_orb.object_to_string(there.as_object()));
    here.bind_context(&n("there"), &there_root.into()).unwrap();
    here.bind_new_context(&n("there/sub")).unwrap();
    assert!(there.resolve_str("sub").is_ok());
    assert!(matches!(
        here.resolve_str("sub"),
        Err(ResolveStrError::NotFound(_))
    ));
    here_orb.shutdown(WaitForCompletion::Yes).unwrap();
    there_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_file_that_is_not_a_store_is_refused() {
    let dir = TempDir::new("refused");
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let path = dir.store();
    std::fs::write(&path, vec![0x55u8; 4096]).unwrap();
    match armillary_naming::start_persistent(&orb, &path) {
        Err(e @ PersistentStartError::OpenStore { .. }) => {
            assert_eq!(
                e.to_string(),
                format!("cannot open the naming store {}", path.display())
            );
            assert!(matches!(
                std::error::Error::source(&e).and_then(|s| s.downcast_ref::<StoreError>()),
                Some(StoreError::Sqlite(_))
            ));
        }
        other => panic!("{other:?}"),
    }
    // A database of another schema version.
    let other = dir.0.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("PRAGMA user_version = 7")
        .unwrap();
    match armillary_naming::start_persistent(&orb, &other) {
        Err(PersistentStartError::OpenStore {
            source: StoreError::UnknownSchema { found: 7 },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
