//! What a thread per request costs: loopback two-way calls to an empty
//! upcall under thread-per-request (a thread created per call), a worker
//! pool (a pooled thread takes each call from a queue) and the reactive
//! model (the reading thread runs it), from one client thread (latency)
//! and from eight (throughput). Rounds interleave the models; the medians
//! of the rounds are printed. `cargo bench -p armillary --bench
//! server_models [-- CALLS ROUNDS]`; figures in `docs/performance.md`.

use std::sync::Arc;
use std::time::Instant;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};

/// Answers `echo_long` with its argument.
struct Echo;

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Bench/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Bench/Echo:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let v = req
            .args()
            .read_long()
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
        req.results().write_long(v);
        Ok(())
    }
}

fn call(obj: &ObjectRef, v: i32) -> i32 {
    obj.invoke(
        "echo_long",
        &|w| {
            w.write_long(v);
            Ok(())
        },
        |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        },
    )
    .expect("the call succeeds")
}

/// Microseconds per call for `calls` calls spread over `clients` threads.
fn measure(model: ConcurrencyModel, clients: usize, calls: usize) -> f64 {
    let server = Orb::with_config(OrbConfig::new().concurrency(model)).expect("server ORB");
    let poa = server.root_poa();
    poa.manager().activate().expect("activate");
    let servant: Arc<dyn Servant> = Arc::new(Echo);
    let ior = server.object_to_string(&poa.servant_to_reference(&servant).expect("reference"));
    let client = Orb::with_config(OrbConfig::default()).expect("client ORB");
    let obj = client.string_to_object(&ior).expect("reference");
    for i in 0..100 {
        call(&obj, i);
    }
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..clients {
            let obj = obj.clone();
            s.spawn(move || {
                for i in 0..calls / clients {
                    call(&obj, i as i32);
                }
            });
        }
    });
    let elapsed = start.elapsed();
    client.shutdown(WaitForCompletion::Yes).expect("shutdown");
    server.shutdown(WaitForCompletion::Yes).expect("shutdown");
    elapsed.as_secs_f64() * 1e6 / calls as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let calls = args.first().copied().unwrap_or(20_000);
    let rounds = args.get(1).copied().unwrap_or(5);
    let models = [
        (
            "thread-per-request",
            ConcurrencyModel::ThreadPerRequest(None),
        ),
        (
            "worker-pool:8",
            ConcurrencyModel::WorkerPool {
                workers: 8,
                queue: 1024,
            },
        ),
        ("reactive", ConcurrencyModel::SingleThreadedReactive),
    ];
    println!("{calls} calls per point, median of {rounds} interleaved rounds (unpinned)");
    println!(
        "{:<20} {:>14} {:>14}",
        "model", "1 client µs", "8 clients µs"
    );
    let mut results = vec![(Vec::new(), Vec::new()); models.len()];
    for _ in 0..rounds {
        for (i, (_, model)) in models.iter().enumerate() {
            results[i].0.push(measure(*model, 1, calls));
            results[i].1.push(measure(*model, 8, calls));
        }
    }
    for ((name, _), (one, eight)) in models.iter().zip(results) {
        println!("{name:<20} {:>14.1} {:>14.1}", median(one), median(eight));
    }
}
