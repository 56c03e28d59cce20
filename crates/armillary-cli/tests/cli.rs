//! The `armillary` command as a user runs it: `ior` output, JSON and error
//! messages, `demo`, the benchmarks, and the cache of omniORB's peer
//! programs that the benchmarks build.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `armillary ARGS`: exit code, standard output, standard error.
/// omniORB's peers are built into (and reused from) a cache in the target
/// directory, wherever that is, never the user's own cache.
fn run(args: &[&str]) -> (i32, String, String) {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armillary-cache");
    run_with(args, &[("ARMILLARY_CACHE_DIR", cache.as_os_str())])
}

/// Runs `armillary ARGS` with `env` added to its environment.
fn run_with(args: &[&str], env: &[(&str, &OsStr)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_armillary"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const QUOTER: &str = "IOR:010000001500000049444c3a53746f636b2f51756f7465723a312e3000000000010000000000000058000000010102000a0000003132372e302e302e310059930600000051756f74657200000200000000000000080000000100000000545441010000001c00000001000000010001000100000001000105090101000100000009010100";

#[test]
fn decode_prints_every_profile_and_component() {
    let (code, out, _) = run(&["ior", "decode", QUOTER]);
    assert_eq!(code, 0);
    assert!(out.contains("Type ID: \"IDL:Stock/Quoter:1.0\""), "{out}");
    assert!(
        out.contains("1. IIOP 1.2 127.0.0.1 37721 \"Quoter\""),
        "{out}"
    );
    assert!(out.contains("TAG_ORB_TYPE omniORB"), "{out}");
    assert!(out.contains("char native: ISO-8859-1"), "{out}");
}

#[test]
fn decode_reads_files_and_prints_json() {
    let dir = std::env::temp_dir().join(format!("armillary-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("q.ior");
    std::fs::write(&file, format!("{QUOTER}\n")).unwrap();
    let (code, out, _) = run(&["ior", "decode", "--json", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["type_id"], "IDL:Stock/Quoter:1.0");
    assert_eq!(json["profiles"][0]["port"], 37721);
    assert_eq!(json["profiles"][0]["object_key"], "Quoter");
    assert_eq!(
        json["profiles"][0]["components"][1]["char"]["native"],
        "ISO-8859-1"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn decode_understands_corbaloc_and_corbaname() {
    let (code, out, _) = run(&[
        "ior",
        "decode",
        "corbaloc:iiop:1.2@[::1]:2809,:backup/Name%20Service",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("IIOP 1.2 ::1 2809"), "{out}");
    assert!(out.contains("IIOP 1.0 backup 2809"), "{out}");
    assert!(out.contains("\"Name Service\""), "{out}");
    let (code, out, _) = run(&["ior", "decode", "corbaname::ns.example:2810#a/b.kind"]);
    assert_eq!(code, 0);
    assert!(out.contains("name: \"a/b.kind\""), "{out}");
}

#[test]
fn errors_say_what_and_where() {
    let cases = [
        ("IOR:01zz", "bad hex digit 'z' at character 6"),
        ("IOR:010", "odd number of hex digits"),
        ("IOR:00000000", "malformed IOR"),
        ("corbaloc:iiop:/key", "missing host at character 14"),
        ("corbaloc:iiop:host:99999/key", "bad port"),
        ("corbaloc:http://x/y", "unsupported protocol"),
        ("nonsense", "expected IOR:, corbaloc: or corbaname:"),
        // Non-ASCII text: no panic, and the character named as it is.
        ("abcé", "expected IOR:, corbaloc: or corbaname:"),
        ("IOR:0é", "bad hex digit 'é' at character 5"),
        ("IOR:é", "bad hex digit 'é' at character 4"),
        ("corbaloc:iiop:hé:1/k", "invalid host"),
    ];
    for (input, message) in cases {
        let (code, out, err) = run(&["ior", "decode", input]);
        assert_eq!(code, 1, "{input}: {out}");
        assert!(err.starts_with("error: "), "{input}: {err}");
        assert!(err.contains(message), "{input}: {err}");
    }
    let (code, _, err) = run(&[
        "ior",
        "encode",
        "--type-id",
        "IDL:X:1.0",
        "--host",
        "0.0.0.0",
        "--port",
        "1",
        "--key",
        "k",
    ]);
    assert_eq!(code, 1);
    let (code, _, bad_key) = run(&[
        "ior",
        "encode",
        "--type-id",
        "IDL:X:1.0",
        "--host",
        "h",
        "--port",
        "1",
        "--key-hex",
        "aéb",
    ]);
    assert_eq!(code, 1);
    assert!(
        bad_key.contains("bad hex digit 'é' in --key-hex at character 1"),
        "{bad_key}"
    );
    assert!(
        err.contains("not an address a client can connect to"),
        "{err}"
    );
}

#[test]
fn encode_round_trips_through_decode() {
    let (code, ior, _) = run(&[
        "ior",
        "encode",
        "--type-id",
        "IDL:Stock/Quoter:1.0",
        "--host",
        "::1",
        "--port",
        "2809",
        "--key",
        "Quoter",
    ]);
    assert_eq!(code, 0);
    let (code, out, _) = run(&["ior", "decode", ior.trim()]);
    assert_eq!(code, 0);
    assert!(out.contains("1. IIOP 1.2 ::1 2809 \"Quoter\""), "{out}");
    assert!(out.contains("TAG_ORB_TYPE Armillary"), "{out}");
    assert!(out.contains("char native: UTF-8"), "{out}");
}

#[test]
fn demo_runs_the_quoter_end_to_end_and_exits_0() {
    let (code, out, err) = run(&["demo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("[client] get_quote(\"ACME\") = 4217"), "{out}");
    assert!(out.contains("Invalid_Stock_Symbol"), "{out}");
    assert!(out.ends_with("done: every step succeeded\n"), "{out}");
}

#[test]
fn bench_idl_reports_a_clear_error_without_a_corpus() {
    let (code, _, err) = run(&["bench", "idl", "--dir", "/nonexistent-idl-corpus"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: no .idl files under /nonexistent-idl-corpus"),
        "{err}"
    );
}

#[test]
fn bench_soak_loses_nothing_in_a_short_run() {
    let dir = std::env::temp_dir().join(format!("armillary-soak-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("soak.json");
    let (code, out, err) = run(&[
        "bench",
        "soak",
        "--seconds",
        "3",
        "--connections",
        "4",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("unexpected exceptions"), "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["lost"], 0);
    assert_eq!(report["duplicated"], 0);
    assert_eq!(report["unexpected_exceptions"], 0);
    assert_eq!(report["id_sums_match"], true);
    assert!(report["sync_sent"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["sync_sent"], report["replies"]);
    assert!(report["sessions"].as_u64().unwrap() > 0, "{report}");
    assert!(
        report["server_rss_kib"]["max"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(
        report["server_fds"]["max"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_threading_reports_every_experiment_and_model() {
    let dir = std::env::temp_dir().join(format!("armillary-threading-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("t.json"), dir.join("t.svg"));
    let (code, out, err) = run(&[
        "bench",
        "threading",
        "--size",
        "tiny",
        "--rounds",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let header = out.lines().next().unwrap();
    for column in [
        "experiment",
        "point",
        "model",
        "requests/s",
        "p50 ms",
        "p99 ms",
        "errors",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let experiments = [
        "conversation",
        "contention",
        "traffic",
        "train",
        "demux",
        "locality",
    ];
    let models: Vec<String> = armillary::config::ConcurrencyModel::menu(4)
        .iter()
        .map(ToString::to_string)
        .collect();
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // One table row per record, after the header.
    assert_eq!(out.lines().count(), records.len() + 1, "{out}");
    for experiment in experiments {
        let mine: Vec<_> = records
            .iter()
            .filter(|r| r["experiment"] == experiment)
            .collect();
        assert!(!mine.is_empty(), "no {experiment} records");
        // Every model measured every point of the experiment.
        for model in &models {
            let n = mine.iter().filter(|r| r["model"] == model.as_str()).count();
            assert_eq!(n * models.len(), mine.len(), "{experiment} {model}");
        }
    }
    for r in &records {
        for key in [
            "experiment",
            "model",
            "throughput",
            "p50_ms",
            "p99_ms",
            "errors",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        // Every call of the tiny run was answered.
        assert_eq!(r["errors"], 0, "{r}");
        assert_eq!(r["rounds"], 2, "{r}");
        assert!(r["throughput"].as_f64().unwrap() > 0.0, "{r}");
    }
    let demux: Vec<u64> = records
        .iter()
        .filter_map(|r| r["active_objects"].as_u64())
        .collect();
    assert!(demux.contains(&1) && demux.contains(&10), "{demux:?}");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg"), "{}", &plot[..plot.len().min(200)]);
    // One chart per experiment, captioned with its name.
    for experiment in experiments {
        assert!(
            plot.lines().any(|l| l.trim() == experiment),
            "no {experiment} chart"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_threading_rejects_an_unknown_model() {
    let (code, _, err) = run(&["bench", "threading", "--models", "reactive,bogus"]);
    assert_eq!(code, 1);
    assert!(err.contains("bad model \"bogus\""), "{err}");
}

#[test]
fn bench_middle_tier_writes_one_record_per_point_and_model() {
    let dir = std::env::temp_dir().join(format!("armillary-mt-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("mt.json"), dir.join("mt.svg"));
    let (code, out, err) = run(&[
        "bench",
        "middle-tier",
        "--models",
        "amh,reactive,tpc",
        "--clients",
        // 10: more clients than the 8 connections an ORB opens to one
        // server by default.
        "2,10",
        "--delay-ms",
        "5",
        "--requests",
        "10",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let header = out.lines().next().unwrap();
    for column in [
        "model",
        "clients",
        "delay ms",
        "replies/s",
        "ideal",
        "errors",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 6, "{records:?}");
    let mut seen = Vec::new();
    for r in &records {
        for key in [
            "model",
            "clients",
            "delay_ms",
            "throughput",
            "ideal",
            "p50_ms",
            "p99_ms",
            "errors",
        ] {
            assert!(r.get(key).is_some(), "no {key} in {r}");
        }
        assert_eq!(r["errors"], 0, "{r}");
        assert_eq!(r["delay_ms"], 5, "{r}");
        assert_eq!(r["answered"], r["planned"], "{r}");
        assert!(r["throughput"].as_f64().unwrap() > 0.0, "{r}");
        let clients = r["clients"].as_u64().unwrap();
        // clients ÷ delay, in requests per second.
        assert_eq!(r["ideal"].as_f64().unwrap(), clients as f64 * 200.0, "{r}");
        // Each client its own connection to the middle tier.
        assert!(r["connections"].as_u64().unwrap() >= clients, "{r}");
        seen.push((r["model"].as_str().unwrap().to_owned(), clients));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("amh", 2),
            ("amh", 10),
            ("reactive", 2),
            ("reactive", 10),
            ("tpc", 2),
            ("tpc", 10)
        ]
        .map(|(m, c)| (m.to_owned(), c))
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    // The plot again, from the JSON alone.
    let again = dir.join("again.svg");
    let (code, _, err) = run(&[
        "bench",
        "middle-tier",
        "--replot",
        json.to_str().unwrap(),
        "--plot",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&again).unwrap().contains("<svg"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_middle_tier_rejects_an_unknown_model() {
    let (code, _, err) = run(&["bench", "middle-tier", "--models", "amh,bogus"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown middle-tier model \"bogus\": expected tpc, reactive, pool:N, amh"),
        "{err}"
    );
    let (code, _, err) = run(&["bench", "middle-tier", "--models", "amh-pool:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown middle-tier model \"amh-pool:0\""),
        "{err}"
    );
}

#[test]
fn bench_collocation_reports_every_strategy_size_and_goal() {
    let dir = std::env::temp_dir().join(format!("armillary-colloc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("collocation.json"), dir.join("collocation.svg"));
    let (code, out, err) = run(&[
        "bench",
        "collocation",
        "--calls",
        "20",
        "--rounds",
        "2",
        "--cpus",
        "none",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let strategies = ["remote", "thru_poa", "direct", "plain"];
    for row in strategies
        .iter()
        .chain(&["direct / plain", "thru_poa / direct"])
    {
        assert!(
            out.lines().any(|l| l.starts_with(row)),
            "no row for {row}:\n{out}"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["benchmark"], "collocation");
    assert_eq!(report["calls_per_round"], 20, "{report}");
    // The figures are there and are rates; their sizes are not checked.
    for strategy in strategies {
        for n in ["4", "1024"] {
            let rate = report[strategy][n]["calls_per_s"].as_f64();
            assert!(rate.is_some_and(|r| r > 0.0), "{strategy}.{n}: {report}");
            assert_eq!(report[strategy][n]["calls"], 20, "{report}");
        }
    }
    for goal in [
        "direct_vs_plain",
        "thru_poa_vs_direct",
        "thru_poa_vs_remote",
    ] {
        let g = &report["goals"][goal];
        assert!(
            g["ratio"].as_f64().is_some_and(|r| r > 0.0),
            "{goal}: {report}"
        );
        assert!(g["ratio_at_1024"].as_f64().is_some(), "{goal}: {report}");
        assert!(g["at_least"].as_f64().is_some(), "{goal}: {report}");
        assert!(g["met"].is_boolean(), "{goal}: {report}");
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<svg"), "{plot}");
    assert!(plot.contains("thru-POA"), "{plot}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_collocation_measures_only_the_strategies_asked_for() {
    let dir = std::env::temp_dir().join(format!("armillary-colloc-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("collocation.json"), dir.join("collocation.svg"));
    let (code, out, err) = run(&[
        "bench",
        "collocation",
        "--calls",
        "10",
        "--rounds",
        "1",
        "--cpus",
        "none",
        "--strategies",
        "thru_poa,direct",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for strategy in ["thru_poa", "direct"] {
        assert_eq!(report[strategy]["4"]["calls"], 10, "{report}");
    }
    for strategy in ["remote", "plain"] {
        assert!(report[strategy].is_null(), "{strategy}: {report}");
        assert!(
            out.lines()
                .any(|l| l.starts_with(strategy) && l.contains("not measured")),
            "{strategy}:\n{out}"
        );
    }
    // The goal between the two measured is judged; those that need a
    // strategy not measured are not.
    assert!(report["goals"]["thru_poa_vs_direct"]["met"].is_boolean());
    for goal in ["direct_vs_plain", "thru_poa_vs_remote"] {
        let g = &report["goals"][goal];
        assert!(
            g["met"].is_null() && g["ratio"].is_null(),
            "{goal}: {report}"
        );
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("thru-POA") && !plot.contains("plain Rust call"));
    // A strategy that does not exist is refused, naming the ones that do.
    let (code, _, err) = run(&["bench", "collocation", "--strategies", "sideways"]);
    assert_ne!(code, 0);
    assert!(err.contains("no strategy sideways"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_instructions_counts_each_side_of_both_orbs() {
    let dir = std::env::temp_dir().join(format!("armillary-cg-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("instructions.json");
    let keep = dir.join("callgrind");
    let (code, out, err) = run(&[
        "bench",
        "instructions",
        "--calls",
        "200",
        "--warm",
        "50",
        "--json",
        json.to_str().unwrap(),
        "--keep",
        keep.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for call in ["echo_longlong", "oneway"] {
        for side in ["client", "server", "both"] {
            assert!(
                out.lines().any(|l| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    words.first() == Some(&call) && words.contains(&side)
                }),
                "no row for {call} {side}:\n{out}"
            );
        }
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["benchmark"], "instructions");
    assert_eq!(report["calls"], 200);
    // Every count is there and is a count (never its size: that is the
    // benchmark's to say, not the test's).
    // (The echo's sides at the top level, the oneway's under `oneway`.)
    for (call, sides) in [("echo", &report), ("oneway", &report["oneway"])] {
        for side in ["client", "server", "both"] {
            for orb in ["armillary", "omniorb"] {
                let n = sides[side][orb]["instructions_per_call"].as_f64();
                assert!(n.is_some_and(|n| n > 0.0), "{call} {side}.{orb}: {report}");
                // Every call runs some code, more than a line of it.
                let lines = sides[side][orb]["code_lines_per_call"].as_u64();
                assert!(
                    lines.is_some_and(|n| n > 1),
                    "{call} {side}.{orb}: {report}"
                );
            }
            for ratio in [
                "armillary_over_omniorb",
                "code_lines_armillary_over_omniorb",
            ] {
                assert!(
                    sides[side][ratio].as_f64().is_some(),
                    "{call} {side} {ratio}: {report}"
                );
            }
        }
        // The files kept for callgrind_annotate: both clients' two runs
        // and both servers' dump.
        for file in [
            "client-armillary-few.out",
            "client-armillary-many.out",
            "client-omniorb-few.out",
            "client-omniorb-many.out",
            "server-armillary.out.1",
            "server-omniorb.out.1",
        ] {
            let file = format!("{call}-{file}");
            assert!(keep.join(&file).is_file(), "{file} was not kept");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_invocation_prints_both_tables_and_writes_json_and_svg() {
    let dir = std::env::temp_dir().join(format!("armillary-inv-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("invocation.json");
    let svg = dir.join("invocation.svg");
    let (code, out, err) = run(&[
        "bench",
        "invocation",
        "--calls",
        "20",
        "--throughput-calls",
        "300",
        "--in-flight",
        "8",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("Table 1: latency of 20 two-way calls"),
        "{out}"
    );
    assert!(
        out.contains("Table 2: throughput, 300 calls per form"),
        "{out}"
    );
    for form in [
        "smi",
        "ami_callback",
        "ami_poller",
        "ami_future",
        "dii_deferred",
        "smi_220",
        "smi_7",
        "omniorb_ami",
        "raw_tcp",
    ] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().next() == Some(form)),
            "no row for {form}:\n{out}"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["benchmark"], "invocation");
    // Every form carries its figures (their presence is checked, never
    // their size); only omniORB's is null when omniORB is not installed.
    let latency = report["latency"].as_object().unwrap();
    for form in [
        "smi",
        "ami_callback",
        "ami_poller",
        "ami_future",
        "dii_deferred",
    ] {
        assert_eq!(latency[form]["calls"], 20, "{report}");
        for key in ["min_us", "avg_us", "max_us", "jitter_us"] {
            assert!(
                latency[form][key].as_f64().is_some(),
                "{form}.{key}: {report}"
            );
        }
    }
    let throughput = report["throughput"].as_object().unwrap();
    for form in [
        "smi_220",
        "smi_7",
        "ami_callback",
        "ami_poller",
        "ami_future",
        "dii_deferred",
        "omniorb_ami",
        "raw_tcp",
    ] {
        assert!(throughput.contains_key(form), "{report}");
    }
    assert_eq!(throughput["smi_220"]["threads"], 220, "{report}");
    assert_eq!(throughput["smi_7"]["threads"], 7, "{report}");
    let omniorb = Path::new("/usr/include/omniORB4/CORBA.h").exists();
    assert!(
        !omniorb || !err.contains("no omniORB baseline"),
        "omniORB is installed, yet: {err}"
    );
    for form in [
        "smi_220",
        "smi_7",
        "ami_callback",
        "ami_poller",
        "ami_future",
        "dii_deferred",
        "raw_tcp",
    ]
    .into_iter()
    .chain(omniorb.then_some("omniorb_ami"))
    {
        assert_eq!(throughput[form]["calls"], 300, "{report}");
        assert!(
            throughput[form]["calls_per_s"].as_f64().unwrap() > 0.0,
            "{form}: {report}"
        );
    }
    // The goals of issues 22 and 23, judged on this run: each a ratio,
    // its bound and whether it was met (never whether it was).
    assert_eq!(report["rounds"], 100, "{report}");
    assert!(out.contains("Goals (issues 22 and 23)"), "{out}");
    for (goal, bound) in [
        ("ami_poller_vs_smi", "at_most"),
        ("ami_future_vs_smi", "at_most"),
        ("ami_callback_vs_smi", "at_most"),
        ("ami_callback_vs_ami_future", "at_least"),
    ] {
        let g = &report["goals"][goal];
        assert!(g["ratio"].as_f64().is_some(), "{goal}: {report}");
        assert!(g[bound].as_f64().is_some(), "{goal}: {report}");
        assert!(g["met"].is_boolean(), "{goal}: {report}");
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<svg"), "{plot}");
    assert!(plot.contains("dii_deferred"), "{plot}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_invocation_measures_only_the_forms_asked_for() {
    let dir = std::env::temp_dir().join(format!("armillary-inv-forms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("invocation.json");
    let (code, out, err) = run(&[
        "bench",
        "invocation",
        "--calls",
        "10",
        "--throughput-calls",
        "200",
        "--rounds",
        "3",
        "--forms",
        "smi,ami_future,raw_tcp",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Ten calls in three rounds: every call made, none twice.
    assert_eq!(report["rounds"], 3, "{report}");
    for form in ["smi", "ami_future"] {
        assert_eq!(report["latency"][form]["calls"], 10, "{form}: {report}");
    }
    // A goal whose figures were not both measured is judged on nothing.
    assert!(
        report["goals"]["ami_future_vs_smi"]["ratio"]
            .as_f64()
            .is_some(),
        "{report}"
    );
    for goal in ["ami_poller_vs_smi", "ami_callback_vs_ami_future"] {
        assert!(report["goals"][goal]["met"].is_null(), "{goal}: {report}");
        assert!(report["goals"][goal]["ratio"].is_null(), "{goal}: {report}");
    }
    // Every key is there; those not asked for are null.
    assert!(
        report["latency"]["smi"]["avg_us"].as_f64().is_some(),
        "{report}"
    );
    // `ami_future` names a form of both tables: both are measured.
    assert!(
        report["latency"]["ami_future"]["avg_us"].as_f64().is_some(),
        "{report}"
    );
    for form in ["ami_callback", "dii_deferred"] {
        assert!(report["latency"][form].is_null(), "{form}: {report}");
    }
    for form in ["ami_future", "raw_tcp"] {
        assert!(
            report["throughput"][form]["calls_per_s"].as_f64().unwrap() > 0.0,
            "{form}: {report}"
        );
    }
    for form in [
        "smi_220",
        "smi_7",
        "ami_callback",
        "dii_deferred",
        "omniorb_ami",
    ] {
        assert!(report["throughput"][form].is_null(), "{form}: {report}");
    }
    assert!(out.contains("not measured"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_sync_reports_every_figure_contender_and_goal() {
    let dir = fresh_dir("armillary-sync-test");
    let (json, svg) = (dir.join("sync.json"), dir.join("sync.svg"));
    let (code, out, err) = run(&[
        "bench",
        "sync",
        "--rounds",
        "1",
        "--latency-calls",
        "20",
        "--throughput-calls",
        "40",
        "--oneway-calls",
        "50",
        "--bytes-calls",
        "8",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let omniorb = Path::new("/usr/include/omniORB4/CORBA.h").exists();
    assert!(
        !omniorb || !err.contains("no omniORB baseline"),
        "omniORB is installed, yet: {err}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["benchmark"], "sync");
    // Every figure of every contender is there, a number (its size is
    // never checked); omniORB's is null only when omniORB is missing.
    let figures: [(&str, &[&str], &[&str]); 4] = [
        (
            "latency",
            &[
                "armillary",
                "armillary_thread_per_connection",
                "omniorb",
                "raw_tcp",
            ],
            &["p50_us", "p99_us"],
        ),
        ("throughput", &["armillary", "omniorb"], &["t1", "t2", "t8"]),
        (
            "oneway",
            &["armillary", "omniorb", "raw_tcp"],
            &["calls_per_s"],
        ),
        (
            "bytes",
            &["armillary", "omniorb", "raw_tcp"],
            &["kib1_mb_s", "kib64_mb_s", "mib1_mb_s"],
        ),
    ];
    for (figure, contenders, keys) in figures {
        for contender in contenders {
            let value = &report[figure][contender];
            if *contender == "omniorb" && !omniorb {
                assert!(value.is_null(), "{figure}.{contender}: {report}");
                continue;
            }
            for key in keys {
                assert!(
                    value[key].as_f64().is_some_and(|x| x > 0.0),
                    "{figure}.{contender}.{key}: {report}"
                );
            }
        }
    }
    for goal in [
        "latency_p50_vs_omniorb",
        "latency_thread_per_connection_p50_vs_omniorb",
        "latency_p50_vs_raw_tcp",
        "throughput_t1_vs_omniorb",
        "throughput_t2_vs_omniorb",
        "throughput_t8_vs_omniorb",
        "oneway_vs_omniorb",
        "bytes_mib1_vs_raw_tcp",
    ] {
        let g = &report["goals"][goal];
        let measured = omniorb || !goal.ends_with("omniorb");
        assert_eq!(g["ratio"].as_f64().is_some(), measured, "{goal}: {report}");
        assert_eq!(g["met"].is_boolean(), measured, "{goal}: {report}");
    }
    for row in [
        "latency p50",
        "throughput, 8 threads",
        "oneway",
        "bytes, 1 MiB",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(row)),
            "no row for {row}:\n{out}"
        );
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<svg"), "{plot}");
    assert!(plot.contains("raw TCP"), "{plot}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_latency_keeps_its_json_keys() {
    let dir = fresh_dir("armillary-latency-test");
    let json = dir.join("latency.json");
    let (code, out, err) = run(&[
        "bench",
        "latency",
        "--calls",
        "20",
        "--rounds",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["benchmark"], "latency");
    assert_eq!(report["calls"], 20, "{report}");
    assert_eq!(report["rounds"], 2, "{report}");
    // The ORB's default model.
    assert_eq!(
        report["armillary_server_concurrency"],
        "thread-per-connection:64"
    );
    for key in ["pinning", "request_bytes", "reply_bytes"] {
        assert!(!report[key].is_null(), "{key}: {report}");
    }
    let omniorb = Path::new("/usr/include/omniORB4/CORBA.h").exists();
    for contender in ["armillary", "raw_tcp"]
        .into_iter()
        .chain(omniorb.then_some("omniorb"))
    {
        assert_eq!(report[contender]["samples"], 20, "{contender}: {report}");
        for key in ["p50_us", "p99_us"] {
            assert!(
                report[contender][key].as_f64().is_some(),
                "{contender}.{key}: {report}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A fresh directory for one test, under the target directory.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `bench invocation` measuring omniORB's AMI baseline only, with
/// omniORB's peers cached in `cache`, and `env` added; returns standard
/// error and the JSON's `throughput.omniorb_ami`.
fn omniorb_ami_only(cache: &Path, env: &[(&str, &OsStr)]) -> (String, serde_json::Value) {
    let json = cache.with_extension("json");
    let mut env = env.to_vec();
    env.push(("ARMILLARY_CACHE_DIR", cache.as_os_str()));
    let (code, out, err) = run_with(
        &[
            "bench",
            "invocation",
            "--forms",
            "omniorb_ami",
            "--calls",
            "1",
            "--throughput-calls",
            "50",
            "--cpus",
            "none",
            "--json",
            json.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (err, report["throughput"]["omniorb_ami"].clone())
}

/// The builds in a peers cache (its hidden work directories left out).
fn builds(cache: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(cache.join("peers")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bench_builds_omniorb_peers_once_into_its_cache_and_reuses_them() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let dir = fresh_dir("peers-cache");
    let cache = dir.join("cache");
    let (err, ami) = omniorb_ami_only(&cache, &[]);
    assert!(ami["calls_per_s"].as_f64().unwrap() > 0.0, "{ami}\n{err}");
    assert_eq!(
        err.matches("building omniORB's peer programs into").count(),
        1,
        "{err}"
    );
    let built = builds(&cache);
    assert_eq!(built.len(), 1, "{built:?}");
    for program in ["interop_server", "bench_client", "ami_bench_client"] {
        assert!(
            cache.join("peers").join(&built[0]).join(program).is_file(),
            "no {program}"
        );
    }
    // The second run finds them: nothing is built again.
    let (err, ami) = omniorb_ami_only(&cache, &[]);
    assert!(ami["calls_per_s"].as_f64().unwrap() > 0.0, "{ami}\n{err}");
    assert!(!err.contains("building"), "{err}");
    assert_eq!(builds(&cache), built);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_without_omniidl_says_what_to_install_once_and_reports_null() {
    // A PATH with the build's other tools (those installed) but no omniidl.
    let dir = fresh_dir("no-omniidl");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in ["make", "g++", "pkg-config"] {
        if let Some(found) = std::env::split_paths(&path)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
        {
            std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
        }
    }
    let cache = dir.join("cache");
    let (err, ami) = omniorb_ami_only(&cache, &[("PATH", bin.as_os_str())]);
    assert!(ami.is_null(), "{ami}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("no omniORB baseline: "))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("omniidl (omniORB's IDL compiler)"),
        "{err}"
    );
    let install = said[0].split("`apt-get install -y ").nth(1).unwrap_or("");
    assert!(install.split([' ', '`']).any(|p| p == "omniidl"), "{err}");
    assert!(!err.contains("building"), "{err}");
    assert!(builds(&cache).is_empty(), "{:?}", builds(&cache));
    let _ = std::fs::remove_dir_all(dir);
}
