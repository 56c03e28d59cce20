//! `armillary naming` as its users run it: `serve` as a child process
//! (killed with SIGKILL and restarted on its store, driven by several
//! client processes at once, by omniORB's `nameclt` and by an omniORB C++
//! client), and the client commands against it and against omniORB's
//! `omniNames`.
//!
//! The omniORB tests need omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip them. Every wait is bounded: a
//! child that does not answer in time fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use armillary::config::OrbConfig;
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_naming::cos_naming::naming_context::NotFoundReason;
use armillary_naming::cos_naming::naming_context_ext::ResolveStrError;
use armillary_naming::cos_naming::{Name, NamingContext, NamingContextExt};
use armillary_testkit::{run_to_end, Finished, LinePeer, OmniNames};

const ARMILLARY: &str = env!("CARGO_BIN_EXE_armillary");

fn n(sn: &str) -> Name {
    armillary_naming::name::to_name(sn).unwrap()
}

/// `armillary naming ARGS` (with `--ns URL` when `ns` is given).
fn naming(ns: Option<&str>, args: &[&str]) -> Finished {
    let mut command = Command::new(ARMILLARY);
    command.arg("naming").args(args);
    if let Some(url) = ns {
        command.args(["--ns", url]);
    }
    run_to_end(&mut command)
}

/// `naming`, which must succeed; its standard output.
fn naming_ok(ns: &str, args: &[&str]) -> String {
    let out = naming(Some(ns), args);
    assert_eq!(out.code, 0, "armillary naming {args:?}: {out:?}");
    out.stdout
}

/// A directory of its own for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "armillary-cli-naming-{test}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `armillary naming serve`, killed when dropped.
struct Served {
    peer: LinePeer,
    corbaloc: String,
    port: u16,
}

/// Starts `armillary naming serve --endpoint ENDPOINT ARGS` and waits
/// for the corbaloc URL it prints.
fn serve(endpoint: &str, args: &[&str]) -> Served {
    let mut command = Command::new(ARMILLARY);
    command
        .args(["naming", "serve", "--endpoint", endpoint])
        .args(args);
    let peer = LinePeer::spawn(command);
    let corbaloc = peer.next_line("the corbaloc URL of the naming service");
    let port = corbaloc
        .strip_prefix("corbaloc:iiop:127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/NameService"))
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not the expected corbaloc URL: {corbaloc:?}"));
    Served {
        peer,
        corbaloc,
        port,
    }
}

fn store_args(store: &Path) -> [&str; 2] {
    ["--store", store.to_str().unwrap()]
}

fn client_orb() -> Orb {
    Orb::with_config(OrbConfig::default()).unwrap()
}

/// A reference that is never called, to bind.
fn object(key: &str) -> String {
    format!("corbaloc::127.0.0.1:1/{key}")
}

/// The object key of `object`'s first IIOP profile, as text.
fn key_of(object: &ObjectRef) -> String {
    let profile = object.ior().iiop_profiles().into_iter().next().unwrap();
    String::from_utf8_lossy(&profile.object_key).into_owned()
}

#[test]
fn serve_answers_the_client_commands() {
    let dir = TempDir::new("commands");
    let mut served = serve("iiop://127.0.0.1:0", &store_args(&dir.path("names.db")));
    let ns = served.corbaloc.clone();
    let ns = ns.as_str();

    let apps_ior = naming_ok(ns, &["mkctx", "apps.ctx"]);
    assert!(apps_ior.starts_with("IOR:"), "{apps_ior}");
    naming_ok(ns, &["bind", "apps.ctx/x.obj", &object("x")]);
    // A reference in a file.
    let file = dir.path("y.ior");
    std::fs::write(&file, format!("{}\n", object("y"))).unwrap();
    naming_ok(ns, &["bind", "apps.ctx/y", &format!("@{}", file.display())]);
    naming_ok(ns, &["mkctx", "apps.ctx/sub"]);
    naming_ok(ns, &["bind", "apps.ctx/sub/z", &object("z")]);
    // A context bound a second time, which makes a cycle.
    naming_ok(
        ns,
        &["bind", "--context", "apps.ctx/sub/up", apps_ior.trim()],
    );

    let ior = naming_ok(ns, &["resolve", "apps.ctx/x.obj"]);
    let orb = client_orb();
    let x = orb.string_to_object(ior.trim()).unwrap();
    assert_eq!(key_of(&x), "x");
    naming_ok(ns, &["rebind", "apps.ctx/x.obj", &object("x2")]);
    let x = orb
        .string_to_object(naming_ok(ns, &["resolve", "apps.ctx/x.obj"]).trim())
        .unwrap();
    assert_eq!(key_of(&x), "x2");

    assert_eq!(
        naming_ok(ns, &["list", "-r"]),
        "apps.ctx/\napps.ctx/sub/\napps.ctx/sub/up/ (listed above)\napps.ctx/sub/z\n\
         apps.ctx/x.obj\napps.ctx/y\n"
    );
    assert_eq!(naming_ok(ns, &["list", "apps.ctx"]), "sub/\nx.obj\ny\n");

    // Errors: one line, exit code 1.
    let w = object("w");
    let failures = [
        (
            vec!["resolve", "apps.ctx/none"],
            "error: name not found: apps.ctx/none\n",
        ),
        (
            vec!["resolve", "apps.ctx/none/deeper"],
            "error: name not found: apps.ctx/none/deeper (apps.ctx/none is not bound)\n",
        ),
        (
            vec!["unbind", "apps.ctx/x.obj/z"],
            "error: name not found: apps.ctx/x.obj/z (apps.ctx/x.obj is not a context)\n",
        ),
        (
            vec!["bind", "apps.ctx/y", &w],
            "error: name already bound: apps.ctx/y\n",
        ),
        (
            vec!["rmctx", "apps.ctx/sub"],
            "error: context not empty: apps.ctx/sub\n",
        ),
        (vec!["resolve", "a//b"], "error: invalid name: \"a//b\"\n"),
    ];
    for (args, message) in failures {
        let out = naming(Some(ns), &args);
        assert_eq!((out.code, out.stderr.as_str()), (1, message), "{args:?}");
    }
    let out = naming(Some(ns), &["bind", "q", "not-a-reference"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with("error: bad object reference \"not-a-reference\""),
        "{}",
        out.stderr
    );
    // No service named.
    let out = naming(None, &["list"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "error: no naming service: give --ns URL, or -ORBInitRef NameService=URL after --\n"
    );
    // ... or one named by -ORBInitRef.
    let out = run_to_end(Command::new(ARMILLARY).args([
        "naming",
        "list",
        "--",
        "-ORBInitRef",
        &format!("NameService={ns}"),
    ]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "apps.ctx/\n"));

    naming_ok(ns, &["unbind", "apps.ctx/sub/z"]);
    naming_ok(ns, &["unbind", "apps.ctx/sub/up"]);
    naming_ok(ns, &["rmctx", "apps.ctx/sub"]);
    assert_eq!(naming_ok(ns, &["list", "apps.ctx"]), "x.obj\ny\n");

    // SIGTERM ends the service cleanly.
    let status = Command::new("kill")
        .args(["-TERM", &served.peer.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(served.peer.wait_exit().success());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn serve_in_memory_forgets_on_exit() {
    let served = serve("iiop://127.0.0.1:0", &["--memory"]);
    naming_ok(&served.corbaloc, &["bind", "x", &object("x")]);
    assert_eq!(naming_ok(&served.corbaloc, &["list"]), "x\n");
    let out = naming(
        Some("corbaloc:iiop:127.0.0.1:1/NameService"),
        &["resolve", "x"],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with("error: cannot reach the naming service: CORBA::"),
        "{}",
        out.stderr
    );
}

/// Bindings acknowledged before `kill -9` are all there after a restart
/// on the same store and endpoint, and references taken before the crash
/// (the root's, a sub-context's) work after it, in the same client ORB.
#[test]
fn acknowledged_bindings_survive_kill_9() {
    let dir = TempDir::new("crash");
    let store = dir.path("names.db");
    let mut served = serve("iiop://127.0.0.1:0", &store_args(&store));
    let port = served.port;
    let orb = client_orb();
    let root = NamingContextExt::from_object(orb.string_to_object(&served.corbaloc).unwrap());
    let x = orb.string_to_object(&object("x")).unwrap();
    for c in 0..4 {
        let context = root.bind_new_context(&n(&format!("c{c}"))).unwrap();
        let sub = context.bind_new_context(&n("sub")).unwrap();
        for i in 0..10 {
            context.bind(&n(&format!("o{i}")), &x).unwrap();
            sub.bind(&n(&format!("s{i}")), &x).unwrap();
        }
    }
    let sub = NamingContext::from_object(root.resolve_str("c2/sub").unwrap());
    root.unbind(&n("c3/o0")).unwrap();

    // A client binding as fast as it can while the service is killed.
    let acknowledged = Mutex::new(Vec::new());
    let stopped = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let stream = root.bind_new_context(&n("stream")).unwrap();
            let mut i = 0;
            loop {
                if stream.bind(&n(&format!("b{i}")), &x).is_err() {
                    stopped.store(true, Ordering::SeqCst);
                    return i;
                }
                acknowledged.lock().unwrap().push(i);
                i += 1;
            }
        });
        armillary_testkit::wait_until("50 bindings are acknowledged", || {
            acknowledged.lock().unwrap().len() >= 50
        });
        served.peer.kill();
        let in_flight = writer.join().unwrap();
        assert!(stopped.load(Ordering::SeqCst));
        assert_eq!(acknowledged.lock().unwrap().len(), in_flight);
    });
    let acknowledged = acknowledged.into_inner().unwrap();

    let served = serve(&format!("iiop://127.0.0.1:{port}"), &store_args(&store));
    assert_eq!(served.port, port);
    // Every acknowledged binding is there; the one in flight may be.
    let stream = NamingContext::from_object(root.resolve_str("stream").unwrap());
    for i in &acknowledged {
        assert_eq!(stream.resolve(&n(&format!("b{i}"))).unwrap(), x, "b{i}");
    }
    let (listed, iterator) = stream.list(100_000).unwrap();
    assert!(iterator.is_nil());
    let extra = listed.len() - acknowledged.len();
    assert!(
        extra <= 1,
        "{} bindings, {} acknowledged",
        listed.len(),
        acknowledged.len()
    );
    for c in 0..4 {
        for i in 0..10 {
            let object = root.resolve_str(&format!("c{c}/o{i}"));
            if (c, i) == (3, 0) {
                assert!(matches!(
                    object,
                    Err(ResolveStrError::NotFound(e)) if e.why == NotFoundReason::MissingNode
                ));
            } else {
                assert_eq!(object.unwrap(), x);
            }
            assert_eq!(root.resolve_str(&format!("c{c}/sub/s{i}")).unwrap(), x);
        }
    }
    // The sub-context reference taken before the crash.
    assert_eq!(sub.resolve(&n("s9")).unwrap(), x);
    sub.bind(&n("after"), &x).unwrap();
    assert_eq!(root.resolve_str("c2/sub/after").unwrap(), x);
    drop(served);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// What one client process's command came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Done,
    AlreadyBound,
    NotFound,
}

fn answer(out: &Finished) -> Answer {
    match (out.code, out.stderr.as_str()) {
        (0, _) => Answer::Done,
        (1, e) if e.starts_with("error: name already bound:") => Answer::AlreadyBound,
        (1, e) if e.starts_with("error: name not found:") => Answer::NotFound,
        _ => panic!("unexpected answer: {out:?}"),
    }
}

/// Several client processes bind and unbind names of their own and the
/// same names, at once: each command is answered as if the commands had
/// run one after the other, and the final bindings are exactly what the
/// acknowledged commands imply.
#[test]
fn client_processes_bind_and_unbind_at_once() {
    const WORKERS: usize = 4;
    const SHARED: usize = 6;
    const GONE: usize = 4;
    const OWN: usize = 4;
    let dir = TempDir::new("concurrent");
    let served = serve("iiop://127.0.0.1:0", &store_args(&dir.path("names.db")));
    let ns = served.corbaloc.as_str();
    for j in 0..GONE {
        naming_ok(ns, &["bind", &format!("gone{j}"), &object("gone")]);
    }
    // Each worker: (name, answer) per command, in its order.
    let answers: Vec<Vec<(String, Answer)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                scope.spawn(move || {
                    let mut answers = Vec::new();
                    let mut command = |args: &[&str]| {
                        let out = naming(Some(ns), args);
                        answers.push((args[1].to_owned(), answer(&out)));
                    };
                    for j in 0..SHARED {
                        command(&["bind", &format!("own{w}-{j}"), &object(&format!("w{w}"))]);
                        command(&["bind", &format!("shared{j}"), &object(&format!("w{w}"))]);
                        if j < GONE {
                            command(&["unbind", &format!("gone{j}")]);
                            command(&["mkctx", &format!("dir{j}")]);
                        }
                    }
                    for j in (0..OWN).step_by(2) {
                        command(&["unbind", &format!("own{w}-{j}")]);
                    }
                    answers
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });

    let winners = |name: &str, won: Answer, lost: Answer| -> Vec<usize> {
        let mut winners = Vec::new();
        for (w, worker) in answers.iter().enumerate() {
            for (_, a) in worker.iter().filter(|(n, _)| n == name) {
                if *a == won {
                    winners.push(w);
                } else {
                    assert_eq!(*a, lost, "{name} for worker {w}");
                }
            }
        }
        winners
    };
    let orb = client_orb();
    let root = NamingContextExt::from_object(orb.string_to_object(ns).unwrap());
    let mut expected = Vec::new();
    for j in 0..SHARED {
        let name = format!("shared{j}");
        let won = winners(&name, Answer::Done, Answer::AlreadyBound);
        assert_eq!(won.len(), 1, "{name}: one bind succeeds");
        assert_eq!(
            key_of(&root.resolve_str(&name).unwrap()),
            format!("w{}", won[0])
        );
        expected.push(name);
    }
    for j in 0..GONE {
        let won = winners(&format!("gone{j}"), Answer::Done, Answer::NotFound);
        assert_eq!(won.len(), 1, "gone{j}: one unbind succeeds");
        let won = winners(&format!("dir{j}"), Answer::Done, Answer::AlreadyBound);
        assert_eq!(won.len(), 1, "dir{j}: one mkctx succeeds");
        expected.push(format!("dir{j}"));
    }
    for (w, mine) in answers.iter().enumerate() {
        for j in 0..SHARED {
            let name = format!("own{w}-{j}");
            assert!(mine
                .iter()
                .filter(|(n, _)| *n == name)
                .all(|(_, a)| *a == Answer::Done));
            if j >= OWN || j % 2 == 1 {
                assert_eq!(key_of(&root.resolve_str(&name).unwrap()), format!("w{w}"));
                expected.push(name);
            }
        }
    }
    expected.sort();
    let (listed, iterator) = root.list(1000).unwrap();
    assert!(iterator.is_nil());
    let mut listed: Vec<String> = listed
        .iter()
        .map(|b| armillary_naming::name::to_string(&b.binding_name).unwrap())
        .collect();
    listed.sort();
    assert_eq!(listed, expected);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// `nameclt` with `url` as its NameService.
fn nameclt(url: &str, args: &[&str]) -> Finished {
    run_to_end(
        Command::new("nameclt")
            .arg("-ORBInitRef")
            .arg(format!("NameService={url}"))
            .args(args),
    )
}

#[test]
fn nameclt_drives_armillary_naming_serve() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let dir = TempDir::new("nameclt");
    let served = serve("iiop://127.0.0.1:0", &store_args(&dir.path("names.db")));
    let ns = served.corbaloc.as_str();
    let x = naming_ok(ns, &["mkctx", "x"]);
    let out = nameclt(ns, &["bind_new_context", "apps.ctx"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(nameclt(ns, &["bind", "apps.ctx/x.obj", x.trim()]).code, 0);
    let out = nameclt(ns, &["resolve", "apps.ctx/x.obj"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), naming_ok(ns, &["resolve", "x"]).trim());
    let out = nameclt(ns, &["list", "apps.ctx"]);
    assert!(out.stdout.contains("x.obj"), "{out:?}");
    let out = nameclt(ns, &["bind", "apps.ctx/x.obj", x.trim()]);
    assert_ne!(out.code, 0);
    assert!((out.stdout + &out.stderr).contains("AlreadyBound"));
    assert_eq!(nameclt(ns, &["unbind", "apps.ctx/x.obj"]).code, 0);
    assert_eq!(nameclt(ns, &["remove_context", "apps.ctx"]).code, 0);
    assert_eq!(naming_ok(ns, &["list"]), "x/\n");
}

#[test]
fn omniorb_cpp_client_drives_armillary_naming_serve() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let peers = armillary_testkit::build_peers();
    let dir = TempDir::new("cpp");
    let served = serve("iiop://127.0.0.1:0", &store_args(&dir.path("names.db")));
    let ns = served.corbaloc.as_str();
    naming_ok(ns, &["bind", "from-rust", &object("x")]);
    let out = run_to_end(
        Command::new(peers.join("naming_client"))
            .arg("-ORBInitRef")
            .arg(format!("NameService={ns}")),
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains(" passed, 0 failed"), "{}", out.stdout);
    let listing = naming_ok(ns, &["list", "cpp.ctx"]);
    assert!(listing.contains("kept\n"), "{listing}");
}

#[test]
fn the_cli_drives_omninames() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let names = OmniNames::start(|port| {
        naming(
            Some(&format!("corbaloc:iiop:127.0.0.1:{port}/NameService")),
            &["list"],
        )
        .code
            == 0
    });
    let ns = names.corbaloc();
    let ns = ns.as_str();
    let apps = naming_ok(ns, &["mkctx", "apps.ctx"]);
    naming_ok(ns, &["mkctx", "apps.ctx/sub"]);
    naming_ok(ns, &["bind", "apps.ctx/sub/x", &object("x")]);
    naming_ok(ns, &["bind", "apps.ctx/y", &object("y")]);
    naming_ok(ns, &["rebind", "apps.ctx/y", &object("y2")]);
    naming_ok(ns, &["bind", "--context", "alias", apps.trim()]);
    let orb = client_orb();
    let y = orb
        .string_to_object(naming_ok(ns, &["resolve", "apps.ctx/y"]).trim())
        .unwrap();
    assert_eq!(key_of(&y), "y2");
    assert_eq!(
        naming_ok(ns, &["list", "-r"]),
        "alias/\nalias/sub/\nalias/sub/x\nalias/y\napps.ctx/ (listed above)\n"
    );
    let out = naming(Some(ns), &["resolve", "apps.ctx/none"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "error: name not found: apps.ctx/none\n")
    );
    let out = naming(Some(ns), &["bind", "apps.ctx/y", &object("y")]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "error: name already bound: apps.ctx/y\n")
    );
    let out = naming(Some(ns), &["rmctx", "apps.ctx/sub"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "error: context not empty: apps.ctx/sub\n")
    );
    // The service through -ORBInitRef.
    let out = run_to_end(Command::new(ARMILLARY).args([
        "naming",
        "unbind",
        "apps.ctx/sub/x",
        "--",
        "-ORBInitRef",
        &format!("NameService={ns}"),
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    naming_ok(ns, &["rmctx", "apps.ctx/sub"]);
    naming_ok(ns, &["unbind", "alias"]);
    assert_eq!(naming_ok(ns, &["list", "-r"]), "apps.ctx/\napps.ctx/y\n");
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
