//! `armillary lb`: the load-balancing locator of `armillary-lb` from the
//! command line. `serve` starts a locator and prints its `corbaloc:` URL
//! and IOR; `list` shows a locator's groups, their replicas and their
//! loads; `worker` serves a demo replica (`LbBench::Worker`, see
//! `lb_worker`) registered with one or more locators, to try a group
//! with, and the replica of `armillary bench lb`.

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use armillary::config::OrbConfig;
use armillary::{Orb, OrbError, ReferenceError, SystemException, SystemExceptionKind};
use armillary_lb::load_balancing::{GroupInfo, Locator};
use armillary_lb::{LocatorConfig, PolicyKind, StartError, LOCATOR_KEY};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::bench_process::write_atomically;
use crate::lb_worker::{WorkerError, WorkerOptions};

/// Where `serve` listens and `list` looks unless told otherwise.
const DEFAULT_ENDPOINT: &str = "iiop://127.0.0.1:2810";
const DEFAULT_LOCATOR: &str = "corbaloc:iiop:127.0.0.1:2810/LoadBalancer";

/// How long `list` waits for the locator's answer.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// `armillary lb …`
#[derive(Debug, Args)]
pub struct LbArgs {
    #[command(subcommand)]
    command: LbCommand,
}

#[derive(Debug, Subcommand)]
enum LbCommand {
    /// Start an object-group locator: replicas register with it, clients
    /// call a group's one reference and are forwarded (LOCATION_FORWARD)
    /// to a replica. Prints the locator's corbaloc URL and IOR, then
    /// serves until killed.
    Serve {
        /// Where to listen (`iiop://HOST:PORT`; port 0 lets the system
        /// choose). A fixed port keeps the group references valid across
        /// restarts.
        #[arg(long, default_value = DEFAULT_ENDPOINT)]
        endpoint: String,
        /// How a replica is picked for each client: round-robin or
        /// least-loaded (from the loads the replicas report).
        #[arg(long, default_value = "round-robin")]
        policy: PolicyKind,
        /// How often every replica is probed (`_non_existent`), in
        /// milliseconds.
        #[arg(long, default_value_t = 1000)]
        probe_ms: u64,
        /// Missed probes in a row after which a replica is dropped.
        #[arg(long, default_value_t = 2)]
        failures_to_drop: u32,
        /// For least-loaded: how long a forward counts in a replica's
        /// estimate before its reports can show it, in milliseconds (it
        /// decays by a factor e per this much time).
        #[arg(long, default_value_t = 1000)]
        forward_memory_ms: u64,
        /// Also write the locator's IOR to this file.
        #[arg(long)]
        ior_file: Option<PathBuf>,
        /// More ORB options (`-ORBConcurrency thread-pool:4`, …), after
        /// `--`.
        #[arg(last = true)]
        orb_options: Vec<String>,
    },
    /// List a locator's groups, their replicas and the loads they
    /// reported.
    List {
        /// The locator (`corbaloc:…/LoadBalancer` or `IOR:…`, as `lb
        /// serve` prints it).
        #[arg(long, default_value = DEFAULT_LOCATOR)]
        lb: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Serve a demo replica, `LbBench::Worker` (`work(micros)` holds the
    /// server's one backend that long, then answers its name), registered
    /// with the locators given, its load (requests in progress) reported
    /// every period. Serves until killed.
    Worker {
        /// A locator to register with (repeatable).
        #[arg(long = "lb", required = true)]
        locators: Vec<String>,
        /// The group to register in.
        #[arg(long, default_value = "workers")]
        group: String,
        /// The name `work` answers (default: `worker-PID`).
        #[arg(long)]
        name: Option<String>,
        /// Where to listen (default: 127.0.0.1, a port the system picks).
        #[arg(long)]
        endpoint: Option<String>,
        /// The worker's concurrency model (`-ORBConcurrency`).
        #[arg(long, default_value = "thread-pool:16")]
        concurrency: String,
        /// How often the load is reported, in milliseconds.
        #[arg(long, default_value_t = 100)]
        report_ms: u64,
        /// Write the worker's own IOR to this file once it is registered
        /// (instead of printing it).
        #[arg(long)]
        ior_file: Option<PathBuf>,
    },
}

/// Why an `armillary lb` command failed.
#[derive(Debug, thiserror::Error)]
enum LbError {
    /// A bad `--endpoint` or ORB option.
    #[error("bad ORB option")]
    Option(#[source] armillary::config::OrbOptionError),
    /// Arguments after `--` that are not `-ORB…` options.
    #[error("unexpected arguments after --: {0:?} (only -ORB… options go there)")]
    NotOrbOptions(Vec<String>),
    /// The ORB could not start (an endpoint in use, say).
    #[error("cannot start the ORB")]
    Orb(#[source] OrbError),
    /// The locator could not start in the ORB.
    #[error("cannot start the locator")]
    Start(#[source] StartError),
    /// `--lb` is not a reference.
    #[error("bad locator reference {url:?}")]
    Url {
        url: String,
        #[source]
        source: ReferenceError,
    },
    /// The locator could not be reached.
    #[error("cannot reach the locator at {url} (is `armillary lb serve` running there?)")]
    Unreachable {
        url: String,
        #[source]
        source: SystemException,
    },
    /// The object there answered, but it is no locator.
    #[error("{url} is not a load-balancing locator")]
    NotALocator {
        url: String,
        #[source]
        source: SystemException,
    },
    /// The IOR file could not be written (the message says why).
    #[error("{0}")]
    Write(String),
    /// The ORB's main loop failed.
    #[error("the locator's ORB failed")]
    Run(#[source] SystemException),
    /// A worker could not start.
    #[error(transparent)]
    Worker(WorkerError),
}

/// Runs `armillary lb`.
pub fn run(args: LbArgs) -> ExitCode {
    let result = match args.command {
        LbCommand::Serve {
            endpoint,
            policy,
            probe_ms,
            failures_to_drop,
            forward_memory_ms,
            ior_file,
            orb_options,
        } => {
            let config = LocatorConfig::new()
                .policy(policy)
                .probe_period(Duration::from_millis(probe_ms.max(1)))
                .failures_to_drop(failures_to_drop)
                .forward_memory(Duration::from_millis(forward_memory_ms));
            serve(&endpoint, config, ior_file, orb_options)
        }
        LbCommand::List { lb, json } => list(&lb, json),
        LbCommand::Worker {
            locators,
            group,
            name,
            endpoint,
            concurrency,
            report_ms,
            ior_file,
        } => crate::lb_worker::serve(&WorkerOptions {
            name: name.unwrap_or_else(|| format!("worker-{}", std::process::id())),
            group,
            locators,
            endpoint,
            concurrency,
            report_period: Duration::from_millis(report_ms.max(1)),
            ior_file,
        })
        .map_err(LbError::Worker),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", with_causes(&e));
            ExitCode::from(1)
        }
    }
}

/// `e` and its causes, joined by ": " (a cause whose text the message
/// already ends with is not repeated).
fn with_causes(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

fn serve(
    endpoint: &str,
    config: LocatorConfig,
    ior_file: Option<PathBuf>,
    orb_options: Vec<String>,
) -> Result<(), LbError> {
    let mut orb_config = OrbConfig::default();
    orb_config
        .apply_args(["-ORBListenEndpoints", endpoint])
        .map_err(LbError::Option)?;
    let rest = orb_config
        .apply_args(orb_options)
        .map_err(LbError::Option)?;
    if !rest.is_empty() {
        return Err(LbError::NotOrbOptions(rest));
    }
    let orb = Orb::with_config(orb_config).map_err(LbError::Orb)?;
    let (policy, period) = (config.get_policy(), config.get_probe_period());
    let service = armillary_lb::start(&orb, config).map_err(LbError::Start)?;
    let ior = orb.object_to_string(service.locator().as_object());
    // `iiop://host:port` → `corbaloc:iiop:host:port/LoadBalancer`.
    for e in orb.endpoints().iter().filter(|e| !e.is_tls()) {
        let address = e.to_string();
        let address = address.trim_start_matches("iiop://");
        println!("corbaloc:iiop:{address}/{LOCATOR_KEY}");
    }
    println!("{ior}");
    if let Some(path) = &ior_file {
        write_atomically(path, &format!("{ior}\n")).map_err(LbError::Write)?;
    }
    eprintln!(
        "armillary lb: policy {policy}, replicas probed every {} ms; serving until killed",
        period.as_millis()
    );
    orb.run().map_err(LbError::Run)?;
    drop(service);
    Ok(())
}

fn list(url: &str, as_json: bool) -> Result<(), LbError> {
    let orb = Orb::with_config(OrbConfig::default()).map_err(LbError::Orb)?;
    let result = list_with(&orb, url, as_json);
    // A client ORB: nothing to wait for.
    let _ = orb.shutdown(armillary::WaitForCompletion::No);
    print!("{}", result?);
    Ok(())
}

/// The text (or JSON) `lb list` prints for the locator at `url`.
fn list_with(orb: &Orb, url: &str, as_json: bool) -> Result<String, LbError> {
    let object = orb
        .try_string_to_object(url)
        .map_err(|source| LbError::Url {
            url: url.to_owned(),
            source,
        })?;
    let locator = Locator::from_object(object.with_call_timeout(LIST_TIMEOUT));
    let failed = |source: SystemException| {
        let url = url.to_owned();
        match source.kind() {
            // It answered: not with a locator's answer.
            SystemExceptionKind::BadOperation
            | SystemExceptionKind::ObjectNotExist
            | SystemExceptionKind::Unknown => LbError::NotALocator { url, source },
            _ => LbError::Unreachable { url, source },
        }
    };
    let policy = locator.policy().map_err(failed)?;
    let groups = locator.list_groups().map_err(failed)?;
    Ok(if as_json {
        let groups: Vec<Value> = groups.iter().map(|g| group_json(orb, g)).collect();
        let report = json!({ "locator": url, "policy": policy, "groups": groups });
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    } else {
        groups_text(orb, url, &policy, &groups)
    })
}

/// `host:port` of a reference's first IIOP profile.
fn address(reference: &armillary::ObjectRef) -> String {
    match reference.ior().iiop_profiles().first() {
        Some(p) if p.host.contains(':') => format!("[{}]:{}", p.host, p.port),
        Some(p) => format!("{}:{}", p.host, p.port),
        None => "-".to_owned(),
    }
}

fn group_json(orb: &Orb, group: &GroupInfo) -> Value {
    json!({
        "name": group.name,
        "repository_id": group.repository_id,
        "reference": orb.object_to_string(&group.group_reference),
        "replicas": group.replicas.iter().map(|r| json!({
            "id": r.id,
            "address": address(&r.reference),
            "reference": orb.object_to_string(&r.reference),
            "load": r.load,
            "reports": r.reports,
            "forwarded": r.forwarded,
        })).collect::<Vec<_>>(),
    })
}

fn groups_text(orb: &Orb, url: &str, policy: &str, groups: &[GroupInfo]) -> String {
    let mut out = format!("locator {url} (policy {policy})\n");
    if groups.is_empty() {
        out.push_str("no groups\n");
    }
    for g in groups {
        let interface = if g.repository_id.is_empty() {
            "interface unknown"
        } else {
            g.repository_id.as_str()
        };
        let count = match g.replicas.len() {
            1 => "1 replica".to_owned(),
            n => format!("{n} replicas"),
        };
        out.push_str(&format!("\ngroup {} ({interface}, {count})\n", g.name));
        out.push_str(&format!(
            "  reference {}\n",
            orb.object_to_string(&g.group_reference)
        ));
        if g.replicas.is_empty() {
            continue;
        }
        let header = ["replica", "address", "load", "reports", "forwarded"];
        let rows: Vec<Vec<String>> = g
            .replicas
            .iter()
            .map(|r| {
                vec![
                    r.id.clone(),
                    address(&r.reference),
                    format!("{:.2}", r.load),
                    r.reports.to_string(),
                    r.forwarded.to_string(),
                ]
            })
            .collect();
        for line in crate::bench_report::format_table(2, &header, &rows).lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}
