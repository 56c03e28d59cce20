//! Table 1, latency: each form's calls one at a time, each timed, the
//! forms interleaved round by round.
//!
//! In each of `--rounds` rounds every form makes its share of the calls,
//! the forms' order turned by one each round, so that a slow spell of
//! the machine falls on every form and no form always follows the same
//! one. A form's figures are of all its calls together.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use super::{ami, check, dii_echo, dii_result, Contender, InvocationOptions, LATENCY_FORMS};
use crate::bench_report::{progress, Summary};

/// Table 1: every measured form's `--calls` calls, in `--rounds` rounds;
/// the `latency` JSON (a [`Summary`] per form, `null` for a form not
/// measured).
pub(super) fn latency_phase(
    options: &InvocationOptions,
    dir: &Path,
) -> Result<serde_json::Value, String> {
    let c = Contender::start(dir, &options.concurrency, 1)?;
    let calls = options.calls.max(1);
    let rounds = options.rounds.clamp(1, calls);
    let forms: Vec<&str> = LATENCY_FORMS
        .iter()
        .copied()
        .filter(|form| options.measures(form))
        .collect();
    let bar = progress((calls * forms.len()) as u64, " calls");
    // The callback form's handler hands each outcome to this slot.
    let reply = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&reply);
    c.sink.set(move |outcome| {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
    });
    let mut times: Vec<Vec<Duration>> = forms.iter().map(|_| Vec::with_capacity(calls)).collect();
    for round in 0..rounds {
        // This round's calls: `calls` split as evenly as rounds allow.
        let first = calls * round / rounds;
        let values = first as i64..(calls * (round + 1) / rounds) as i64;
        for turn in 0..forms.len() {
            let index = (round + turn) % forms.len();
            let form = forms[index];
            bar.set_message(format!("latency {form}, round {}/{rounds}", round + 1));
            let took = &mut times[index];
            let values = values.clone();
            match form {
                "smi" => timed_calls(values, took, &bar, |v| {
                    c.echo.echo_longlong(v).map_err(|e| e.to_string())
                })?,
                "dii_deferred" => timed_calls(values, took, &bar, |v| {
                    let mut request = dii_echo(&c.echo, v);
                    request.send_deferred().map_err(|e| e.to_string())?;
                    dii_result(&mut request)
                })?,
                // One thread: send, then drive the ORB until the handler
                // has run.
                "ami_callback" => timed_calls(values, took, &bar, |v| {
                    c.echo
                        .sendc_echo_longlong(&c.handler, v)
                        .map_err(|e| e.to_string())?;
                    loop {
                        if let Some(outcome) =
                            reply.lock().unwrap_or_else(PoisonError::into_inner).take()
                        {
                            return outcome;
                        }
                        c.orb.perform_work().map_err(|e| e.to_string())?;
                    }
                })?,
                // Sent, then collected at once: the poller's wait reads
                // the reply itself.
                "ami_poller" => timed_calls(values, took, &bar, |v| {
                    c.echo
                        .sendp_echo_longlong(v)
                        .take()
                        .map_err(|e| e.to_string())
                })?,
                "ami_future" => timed_calls(values, took, &bar, |v| {
                    ami::block_on(ami::echo_async(&c.echo, v)).map_err(|e| e.to_string())
                })?,
                other => return Err(format!("no latency form {other}")),
            }
        }
    }
    bar.finish_and_clear();
    let mut result = serde_json::Map::new();
    for form in LATENCY_FORMS {
        let value = match forms.iter().position(|f| *f == form) {
            Some(index) => Summary::of(&times[index]).to_json(),
            None => serde_json::Value::Null,
        };
        result.insert(form.to_owned(), value);
    }
    Ok(serde_json::Value::Object(result))
}

/// A call of `call` for each of `values`, each timed into `times`; every
/// reply checked.
fn timed_calls(
    values: std::ops::Range<i64>,
    times: &mut Vec<Duration>,
    bar: &ProgressBar,
    mut call: impl FnMut(i64) -> Result<i64, String>,
) -> Result<(), String> {
    let calls = values.end - values.start;
    for v in values {
        let t = Instant::now();
        let got = call(v)?;
        times.push(t.elapsed());
        check(v, got)?;
    }
    bar.inc(calls as u64);
    Ok(())
}
