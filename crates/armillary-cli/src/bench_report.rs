//! What the `armillary bench` subcommands share to report what they
//! measured: the progress bar, summary statistics of call times, an
//! aligned text table, JSON files and SVG bar charts (plotters).
//!
//! It measures nothing itself; each subcommand's module owns its
//! experiment and calls these to show the result.

use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use serde_json::json;

/// A progress bar of `len` steps, `{bar} pos/len unit message`, drawn on
/// stderr (hidden when stderr is not a terminal).
pub(crate) fn progress(len: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!("{{bar:40}} {{pos}}/{{len}}{unit} {{msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Minimum, mean, maximum and standard deviation ("jitter", as in the AMI
/// paper's Table 1) of a set of call times, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    pub(crate) calls: usize,
    pub(crate) min_us: f64,
    pub(crate) avg_us: f64,
    pub(crate) max_us: f64,
    pub(crate) jitter_us: f64,
}

impl Summary {
    /// The summary of `times`; every figure is NaN when there are none.
    pub(crate) fn of(times: &[Duration]) -> Summary {
        let us: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e6).collect();
        if us.is_empty() {
            return Summary {
                calls: 0,
                min_us: f64::NAN,
                avg_us: f64::NAN,
                max_us: f64::NAN,
                jitter_us: f64::NAN,
            };
        }
        let n = us.len() as f64;
        let avg = us.iter().sum::<f64>() / n;
        let variance = us.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n;
        Summary {
            calls: us.len(),
            min_us: us.iter().copied().fold(f64::INFINITY, f64::min),
            avg_us: avg,
            max_us: us.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            jitter_us: variance.sqrt(),
        }
    }

    /// `{"calls", "min_us", "avg_us", "max_us", "jitter_us"}`, to two
    /// decimals.
    pub(crate) fn to_json(self) -> serde_json::Value {
        let r = |x: f64| (x * 100.0).round() / 100.0;
        json!({
            "calls": self.calls,
            "min_us": r(self.min_us),
            "avg_us": r(self.avg_us),
            "max_us": r(self.max_us),
            "jitter_us": r(self.jitter_us),
        })
    }
}

/// Prints `rows` under `header`, each column as wide as its widest cell;
/// the first column is aligned left, the others right.
pub(crate) fn print_table(header: &[&str], rows: &[Vec<String>]) {
    print!("{}", format_table(header, rows));
}

fn format_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, (cell, width)) in cells.zip(&widths).enumerate() {
            if i == 0 {
                out.push_str(&format!("{cell:<width$}"));
            } else {
                out.push_str(&format!("  {cell:>width$}"));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(&mut header.iter().copied());
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

/// Writes `value` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One bar chart: a caption, the value axis' label and a (name, value)
/// per bar. A bar whose value is not finite (not measured) is left out
/// but keeps its place and name.
#[derive(Debug, Clone)]
pub(crate) struct Bars {
    pub(crate) caption: String,
    pub(crate) y_label: String,
    pub(crate) bars: Vec<(String, f64)>,
}

/// Draws `charts` side by side, as bar charts, into the SVG file `path`.
pub(crate) fn plot_bars_svg(path: &Path, charts: &[Bars]) -> Result<(), String> {
    let cols = charts.len().max(1);
    let size = (560 * cols as u32, 400);
    let fail = |e: &dyn std::fmt::Display| format!("cannot plot {}: {e}", path.display());
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let areas = root.split_evenly((1, cols));
    for (chart, area) in charts.iter().zip(areas.iter()) {
        let n = chart.bars.len().max(1);
        let top = chart
            .bars
            .iter()
            .map(|&(_, v)| v)
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let names: Vec<String> = chart.bars.iter().map(|(name, _)| name.clone()).collect();
        let label = move |x: &SegmentValue<usize>| match x {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                names.get(*i).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        };
        let mut ctx = ChartBuilder::on(area)
            .caption(&chart.caption, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(64)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..top)
            .map_err(|e| fail(&e))?;
        ctx.configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&label)
            .y_desc(chart.y_label.as_str())
            .draw()
            .map_err(|e| fail(&e))?;
        let style = Palette99::pick(0).filled();
        ctx.draw_series(
            chart
                .bars
                .iter()
                .enumerate()
                .filter(|(_, (_, v))| v.is_finite())
                .map(|(i, &(_, v))| {
                    let mut bar = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 0.0),
                            (SegmentValue::Exact(i + 1), v),
                        ],
                        style,
                    );
                    bar.set_margin(0, 0, 12, 12);
                    bar
                }),
        )
        .map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_columns_align_to_the_widest_cell() {
        let table = format_table(
            &["form", "calls/s"],
            &[
                vec!["smi".into(), "12".into()],
                vec!["ami_callback".into(), "1234".into()],
            ],
        );
        assert_eq!(
            table,
            "form          calls/s\nsmi                12\nami_callback     1234\n"
        );
    }

    #[test]
    fn summary_gives_min_mean_max_and_standard_deviation() {
        let times: Vec<Duration> = [2, 4, 4, 4, 5, 5, 7, 9]
            .iter()
            .map(|&us| Duration::from_micros(us))
            .collect();
        let s = Summary::of(&times);
        assert_eq!(s.calls, 8);
        assert!((s.min_us - 2.0).abs() < 1e-9);
        assert!((s.avg_us - 5.0).abs() < 1e-9);
        assert!((s.max_us - 9.0).abs() < 1e-9);
        assert!((s.jitter_us - 2.0).abs() < 1e-9);
        assert!(Summary::of(&[]).avg_us.is_nan());
    }
}
