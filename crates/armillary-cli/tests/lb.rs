//! `armillary lb` as a user runs it, every server a process of its own:
//! `lb serve` and `lb list`, their error messages, a replica killed (by
//! its PID) while clients call through the group reference, an omniORB
//! client (`tests/interop/cpp/lb_client.cc`) following the locator's
//! forwards, and a short `bench lb`.
//!
//! The client retry policy of the kill test is explicit (see
//! [`call_until_done`]); nothing here depends on timing: waits are
//! bounded (`wait_until`) and assertions are on outcomes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use armillary::config::OrbConfig;
use armillary::{ObjectRef, Orb, SystemException, WaitForCompletion};
use armillary_lb::load_balancing::Locator;
use armillary_testkit::{wait_for_file, wait_until, LinePeer, Peer, WAIT_LIMIT};

fn armillary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_armillary"))
}

/// Runs `armillary ARGS`: exit code, standard output, standard error.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = armillary().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lb-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `armillary lb serve` on a port the system picks, probing every 20 ms
/// and dropping a replica at its second missed probe.
struct LbServer {
    _process: LinePeer,
    /// Its `corbaloc:` URL, as it printed it.
    url: String,
}

impl LbServer {
    fn start(policy: &str) -> LbServer {
        let mut command = armillary();
        command.args(["lb", "serve", "--endpoint", "iiop://127.0.0.1:0"]);
        command.args(["--policy", policy, "--probe-ms", "20"]);
        let process = LinePeer::spawn(command);
        let url = process.next_line("the locator's corbaloc URL");
        assert!(url.starts_with("corbaloc:iiop:127.0.0.1:"), "{url}");
        assert!(url.ends_with("/LoadBalancer"), "{url}");
        let ior = process.next_line("the locator's IOR");
        assert!(ior.starts_with("IOR:"), "{ior}");
        LbServer {
            _process: process,
            url,
        }
    }

    /// The locator, for a client in `orb`.
    fn locator(&self, orb: &Orb) -> Locator {
        Locator::from_object(orb.string_to_object(&self.url).unwrap())
    }

    /// The replica ids of `group`, in registration order.
    fn replica_ids(&self, orb: &Orb, group: &str) -> Vec<String> {
        let groups = self.locator(orb).list_groups().unwrap();
        groups
            .into_iter()
            .find(|g| g.name == group)
            .map(|g| g.replicas.into_iter().map(|r| r.id).collect())
            .unwrap_or_default()
    }
}

/// `armillary lb worker` named `name`, registered in `group` with the
/// locator at `url`: its process and its own IOR.
fn start_worker(dir: &Path, url: &str, group: &str, name: &str) -> (Peer, String) {
    let ior_file = dir.join(format!("{name}.ior"));
    let worker = Peer(
        armillary()
            .args([
                "lb", "worker", "--lb", url, "--group", group, "--name", name,
            ])
            .args(["--report-ms", "20", "--ior-file"])
            .arg(&ior_file)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ior = wait_for_file(&ior_file);
    (worker, ior)
}

/// `work(micros)` on `worker`: the name of the replica that answered.
fn work(worker: &ObjectRef, micros: i32) -> Result<String, SystemException> {
    worker.invoke_plain(
        "work",
        &|w| {
            w.write_long(micros);
            Ok(())
        },
        |r| r.read_string(),
    )
}

#[test]
fn serve_prints_its_url_and_list_shows_groups_replicas_and_loads() {
    let dir = fresh_dir("list");
    let lb = LbServer::start("least-loaded");
    let _w1 = start_worker(&dir, &lb.url, "echo", "w1");
    let _w2 = start_worker(&dir, &lb.url, "echo", "w2");
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    wait_until("both replicas reported a load", || {
        let groups = lb.locator(&orb).list_groups().unwrap();
        groups[0].replicas.iter().all(|r| r.reports > 0)
    });
    let group = lb.locator(&orb).group_reference("echo").unwrap();
    let group = orb.string_to_object(&orb.object_to_string(&group)).unwrap();
    work(&group, 0).unwrap();

    let (code, out, err) = run(&["lb", "list", "--lb", &lb.url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(policy least-loaded)"), "{out}");
    assert!(
        out.contains("group echo (IDL:LbBench/Worker:1.0, 2 replicas)"),
        "{out}"
    );
    assert!(out.contains("  reference IOR:"), "{out}");
    assert!(out.contains("replica  address"), "{out}");
    assert_eq!(out.matches("127.0.0.1:").count(), 3, "{out}");

    let (code, out, _) = run(&["lb", "list", "--lb", &lb.url, "--json"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["policy"], "least-loaded");
    let echo = &json["groups"][0];
    assert_eq!(echo["name"], "echo");
    assert_eq!(echo["repository_id"], "IDL:LbBench/Worker:1.0");
    let replicas = echo["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 2);
    let forwarded: u64 = replicas
        .iter()
        .map(|r| r["forwarded"].as_u64().unwrap())
        .sum();
    assert_eq!(forwarded, 1);
    for r in replicas {
        assert!(r["reports"].as_u64().unwrap() > 0, "{r}");
        assert!(r["load"].is_number() && r["address"].is_string(), "{r}");
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn lb_commands_say_what_is_wrong() {
    // Nobody listens on a port the system just gave and took back.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nobody = format!("corbaloc:iiop:127.0.0.1:{port}/LoadBalancer");
    let (code, _, err) = run(&["lb", "list", "--lb", &nobody]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(&format!("error: cannot reach the locator at {nobody}")),
        "{err}"
    );
    assert!(err.contains("TRANSIENT"), "{err}");

    let (code, _, err) = run(&["lb", "list", "--lb", "garbage"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: bad locator reference \"garbage\": malformed object reference"),
        "{err}"
    );

    // An object that is not a locator.
    let dir = fresh_dir("errors");
    let lb = LbServer::start("round-robin");
    let (_worker, worker_ior) = start_worker(&dir, &lb.url, "echo", "w1");
    let (code, _, err) = run(&["lb", "list", "--lb", &worker_ior]);
    assert_eq!(code, 1);
    assert!(err.contains("is not a load-balancing locator"), "{err}");

    // The locator's own endpoint is taken.
    let endpoint = lb
        .url
        .replace("corbaloc:iiop:", "iiop://")
        .replace("/LoadBalancer", "");
    let (code, _, err) = run(&["lb", "serve", "--endpoint", &endpoint]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: cannot start the ORB: cannot listen on"),
        "{err}"
    );
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");

    let (code, _, err) = run(&["lb", "serve", "--endpoint", "bogus"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("bad value \"bogus\" for -ORBListenEndpoints"),
        "{err}"
    );
    let (code, _, err) = run(&["lb", "serve", "--policy", "fastest"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("expected round-robin or least-loaded"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "lb",
        "serve",
        "--endpoint",
        "iiop://127.0.0.1:0",
        "--",
        "stray",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("unexpected arguments after --: [\"stray\"]"),
        "{err}"
    );

    // A worker whose locator is not there.
    let (code, _, err) = run(&["lb", "worker", "--lb", &nobody, "--name", "w"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(&format!(
            "error: cannot register with the locator at {nobody}"
        )),
        "{err}"
    );
}

/// What the clients of the kill test did.
#[derive(Debug, Default)]
struct Tally {
    /// Calls answered, by replica, and whether the call started after the
    /// locator had dropped the killed replica.
    answered: Mutex<BTreeMap<(bool, String), u64>>,
    /// Calls that failed for good (none may).
    gave_up: Mutex<Vec<SystemException>>,
    /// Attempts sent again, by completion status of their failure.
    retried_completed_no: AtomicU64,
    retried_completed_maybe: AtomicU64,
}

impl Tally {
    fn answered_by(&self, after_drop: bool, name: &str) -> u64 {
        let answered = self.answered.lock().unwrap();
        answered
            .get(&(after_drop, name.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

/// The kill test's client retry policy, explicit: `LbBench::Worker::work`
/// is idempotent, so a call that failed because the replica it was
/// forwarded to went away is sent again through the group reference
/// (where the locator forwards it to a replica it still has):
///
/// - TRANSIENT or COMM_FAILURE with COMPLETED_NO (the replica was gone
///   before the request reached it) — any operation may be sent again;
///   the ORB does it by itself (it goes back to the group reference,
///   `armillary-lb`'s test `a_call_forwarded_to_a_dead_replica_goes_back_to_the_group`),
///   so this reaches the application only once its returns in one call
///   are spent;
/// - the same with COMPLETED_MAYBE (the replica died with the request in
///   progress) — only because the operation is idempotent: a client of
///   an operation that is not must not repeat it blindly;
/// - anything else is a failure, and so is a call still failing after
///   [`WAIT_LIMIT`].
fn call_until_done(group: &ObjectRef, tally: &Tally) -> Result<String, SystemException> {
    let deadline = Instant::now() + WAIT_LIMIT;
    loop {
        match work(group, 1000) {
            Ok(name) => return Ok(name),
            Err(e) if (e.is_transient() || e.is_comm_failure()) && Instant::now() < deadline => {
                let counter = if e.is_completed_no() {
                    &tally.retried_completed_no
                } else {
                    &tally.retried_completed_maybe
                };
                counter.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => return Err(e),
        }
    }
}

#[test]
fn every_call_completes_while_one_of_three_replicas_is_killed() {
    let dir = fresh_dir("kill");
    let lb = LbServer::start("round-robin");
    let mut workers: BTreeMap<&str, (Peer, String)> = ["w1", "w2", "w3"]
        .into_iter()
        .map(|name| (name, start_worker(&dir, &lb.url, "work", name)))
        .collect();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let ids = lb.replica_ids(&orb, "work");
    assert_eq!(ids.len(), 3);
    let group = orb.object_to_string(&lb.locator(&orb).group_reference("work").unwrap());

    // Four clients, each with an ORB of its own (its own connections),
    // call `work(1 ms)` through the group until told to stop.
    let tally = Arc::new(Tally::default());
    let dropped = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (group, tally, dropped, stop) =
                (group.clone(), tally.clone(), dropped.clone(), stop.clone());
            std::thread::spawn(move || {
                let orb = Orb::with_config(OrbConfig::default()).unwrap();
                let group = orb.string_to_object(&group).unwrap();
                while !stop.load(Ordering::SeqCst) {
                    let after_drop = dropped.load(Ordering::SeqCst);
                    match call_until_done(&group, &tally) {
                        Ok(name) => {
                            let mut answered = tally.answered.lock().unwrap();
                            *answered.entry((after_drop, name)).or_default() += 1;
                        }
                        Err(e) => tally.gave_up.lock().unwrap().push(e),
                    }
                }
                orb.shutdown(WaitForCompletion::Yes).unwrap();
            })
        })
        .collect();

    wait_until("every replica has answered calls", || {
        ["w1", "w2", "w3"]
            .iter()
            .all(|name| tally.answered_by(false, name) >= 10)
    });
    // w2 is killed (SIGKILL to its PID) while the clients call.
    let (mut w2, _) = workers.remove("w2").unwrap();
    w2.0.kill().unwrap();
    w2.0.wait().unwrap();
    wait_until("the locator drops w2", || {
        !lb.replica_ids(&orb, "work").contains(&ids[1])
    });
    dropped.store(true, Ordering::SeqCst);
    wait_until("the others answer 50 calls begun after the drop", || {
        tally.answered_by(true, "w1") + tally.answered_by(true, "w3") >= 50
    });
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }

    eprintln!(
        "answered: {:?}; sent again: {} COMPLETED_NO, {} COMPLETED_MAYBE",
        tally.answered.lock().unwrap(),
        tally.retried_completed_no.load(Ordering::SeqCst),
        tally.retried_completed_maybe.load(Ordering::SeqCst),
    );
    assert_eq!(*tally.gave_up.lock().unwrap(), []);
    // A call begun after the drop never goes to w2, and both others serve.
    assert_eq!(tally.answered_by(true, "w2"), 0);
    assert!(tally.answered_by(true, "w1") > 0 && tally.answered_by(true, "w3") > 0);
    assert_eq!(
        lb.replica_ids(&orb, "work"),
        [ids[0].clone(), ids[2].clone()]
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// omniORB's `lb_client`, calling through the group reference in
/// `group_file`.
fn omniorb_client(group_file: &Path) -> LinePeer {
    let peers = armillary_testkit::build_peers();
    let mut command = Command::new(peers.join("lb_client"));
    command.arg(group_file);
    LinePeer::spawn(command)
}

/// The name of the replica that answered one `work(0)` of `client`.
fn omniorb_call(client: &mut LinePeer) -> String {
    client.send_line("0");
    client.next_line("the replica that answered")
}

/// JacORB's `LbClient` (`tests/interop/java`), calling through the group
/// reference in `group_file`: a line in, the name of the replica that
/// answered out.
fn jacorb_client(jacorb: &armillary_testkit::jacorb::Jacorb, group_file: &Path) -> LinePeer {
    let mut command = jacorb.command("LbClient");
    command.arg(group_file);
    LinePeer::spawn(command)
}

/// A Java ORB follows the locator too: JacORB clients (by the Dynamic
/// Invocation Interface, on a group reference) are forwarded to a
/// replica each and keep it; when a client's replica dies, it comes back
/// to the group and is answered by a live one (after at most a failure
/// or two the client retries, `work` being idempotent).
#[test]
fn jacorb_clients_follow_the_forward_and_come_back_when_their_replica_dies() {
    let Some(jacorb) = armillary_testkit::jacorb::jacorb() else {
        return;
    };
    let dir = fresh_dir("jacorb");
    let lb = LbServer::start("round-robin");
    let mut workers: BTreeMap<String, Peer> = ["w1", "w2"]
        .into_iter()
        .map(|name| (name.to_owned(), start_worker(&dir, &lb.url, "work", name).0))
        .collect();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let group = lb.locator(&orb).group_reference("work").unwrap();
    let group_file = dir.join("group.ior");
    std::fs::write(&group_file, orb.object_to_string(&group) + "\n").unwrap();

    let mut clients: Vec<LinePeer> = (0..2).map(|_| jacorb_client(jacorb, &group_file)).collect();
    let mut theirs = Vec::new();
    for client in &mut clients {
        let first = omniorb_call(client);
        assert!(workers.contains_key(&first), "{first:?}");
        for _ in 0..3 {
            assert_eq!(omniorb_call(client), first);
        }
        theirs.push(first);
    }
    let mut sorted = theirs.clone();
    sorted.sort();
    assert_eq!(sorted, ["w1", "w2"], "round robin: a replica each");

    // The first client's replica is killed. JacORB, unlike omniORB, may
    // fail the call that finds its connection broken (COMM_FAILURE: it
    // cannot know whether the replica ran it); `work` is idempotent, so
    // the client sends it again, and JacORB, finding the replica gone,
    // goes back to the group reference, where the locator forwards it to
    // a live replica.
    let killed = theirs[0].clone();
    let mut victim = workers.remove(&killed).unwrap();
    victim.0.kill().unwrap();
    victim.0.wait().unwrap();
    let mut failures = Vec::new();
    let next = loop {
        let answer = omniorb_call(&mut clients[0]);
        if !answer.starts_with("error ") {
            break answer;
        }
        assert!(
            failures.len() < 3 && (answer.contains("COMM_FAILURE") || answer.contains("TRANSIENT")),
            "after {killed} died the JacORB client got {answer:?} (before: {failures:?})"
        );
        failures.push(answer);
    };
    assert!(
        workers.contains_key(&next),
        "after {killed} died the JacORB client got {next:?}"
    );
    assert_eq!(omniorb_call(&mut clients[0]), next);
    assert_eq!(omniorb_call(&mut clients[1]), theirs[1]);
    for client in &mut clients {
        client.close_stdin();
        assert!(client.wait_exit().success());
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn omniorb_clients_follow_the_forward_and_come_back_when_their_replica_dies() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let dir = fresh_dir("omniorb");
    let lb = LbServer::start("round-robin");
    let mut workers: BTreeMap<String, Peer> = ["w1", "w2", "w3"]
        .into_iter()
        .map(|name| (name.to_owned(), start_worker(&dir, &lb.url, "work", name).0))
        .collect();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let group = lb.locator(&orb).group_reference("work").unwrap();
    let group_file = dir.join("group.ior");
    std::fs::write(&group_file, orb.object_to_string(&group) + "\n").unwrap();

    // Three omniORB clients, one after the other: round robin sends each
    // to its own replica, and each keeps calling the replica it was
    // forwarded to (omniORB keeps the forward).
    let mut clients: Vec<LinePeer> = (0..3).map(|_| omniorb_client(&group_file)).collect();
    let mut theirs = Vec::new();
    for client in &mut clients {
        let first = omniorb_call(client);
        for _ in 0..3 {
            assert_eq!(omniorb_call(client), first);
        }
        theirs.push(first);
    }
    let mut sorted = theirs.clone();
    sorted.sort();
    assert_eq!(sorted, ["w1", "w2", "w3"]);
    let forwarded: u64 = lb.locator(&orb).list_groups().unwrap()[0]
        .replicas
        .iter()
        .map(|r| r.forwarded)
        .sum();
    assert_eq!(forwarded, 3, "one forward per client, none per later call");

    // The first client's replica is killed. Its next call fails on the
    // forwarded reference; omniORB goes back to the group reference, and
    // the locator forwards it to a live replica (at once, or once its
    // probes have dropped the dead one: omniORB tries again until then).
    let killed = theirs[0].clone();
    let mut victim = workers.remove(&killed).unwrap();
    victim.0.kill().unwrap();
    victim.0.wait().unwrap();
    let next = omniorb_call(&mut clients[0]);
    assert!(
        next != killed && workers.contains_key(&next),
        "after {killed} died the client got {next:?}"
    );
    assert_eq!(omniorb_call(&mut clients[0]), next);
    // The other clients carry on with their replicas.
    for (client, replica) in clients.iter_mut().zip(&theirs).skip(1) {
        assert_eq!(&omniorb_call(client), replica);
    }
    for client in &mut clients {
        client.close_stdin();
        assert!(client.wait_exit().success());
    }
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn bench_lb_measures_one_server_and_the_replicas_with_both_policies() {
    let dir = fresh_dir("bench");
    let (json, svg) = (dir.join("lb.json"), dir.join("lb.svg"));
    let (code, out, err) = run(&[
        "bench",
        "lb",
        "--clients",
        "1,3",
        "--calls",
        "6",
        "--rounds",
        "1",
        "--service-us",
        "200",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for setup in [
        "one server",
        "3 replicas, round robin",
        "3 replicas, least loaded",
    ] {
        let rows = out.lines().filter(|l| l.starts_with(setup)).count();
        assert_eq!(rows, 2, "{out}");
    }
    assert!(
        out.contains("3 clients: 3 replicas behind the locator serve"),
        "{out}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["benchmark"], "lb");
    for setup in ["single", "replicated", "replicated_least_loaded"] {
        let headline = &report[setup];
        assert_eq!(headline["clients"], 3, "{setup}");
        assert_eq!(headline["errors"], 0, "{setup}");
        for key in ["calls_per_s", "p50_ms", "p99_ms"] {
            assert!(
                headline[key].as_f64().is_some_and(|v| v > 0.0),
                "{setup}.{key}"
            );
        }
        let calls: u64 = headline["per_replica"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(calls, 18, "{setup}");
    }
    // One server is one replica; round robin spreads the 18 calls evenly.
    assert_eq!(
        report["single"]["per_replica"].as_object().unwrap().len(),
        1
    );
    assert_eq!(
        report["replicated"]["per_replica"],
        serde_json::json!({"w1": 6, "w2": 6, "w3": 6})
    );
    assert_eq!(report["points"].as_array().unwrap().len(), 6);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("speed-up over one server"),
        "the plot's panels"
    );
}
