//! What the `armillary bench` subcommands share to report what they
//! measured: the progress bar, summary statistics of call times, their
//! exact percentiles ([`CallTimes`]) and latency histograms
//! (hdrhistogram), an aligned text table, JSON files, SVG line plots
//! (legend inside, or beside with a dashed reference line), bar charts
//! and grouped bar charts (on a logarithmic or linear axis), one chart
//! or a grid of them (plotters), and the goals an issue sets as ratios
//! of two figures of one run (JSON and a PASS/MISS table).
//!
//! It measures nothing itself; each subcommand's module owns its
//! experiment and calls these to show the result.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::{json, Map, Value};

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

/// What [`pin`] did.
pub(crate) enum Pinning {
    /// The command ran again, pinned, in a child process that exited with
    /// this code: return it.
    RanPinned(ExitCode),
    /// Carry on in this process; the text says how it is placed.
    Here(String),
}

/// Pins the benchmark to the CPUs `cpus` (a `taskset` list, or `none`) by
/// running the same command again under `taskset`: every thread and
/// process started from there inherits the CPU set.
pub(crate) fn pin(cpus: &str) -> Result<Pinning, String> {
    if cpus != "none" && std::env::var_os("ARMILLARY_BENCH_PINNED").is_none() {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let args: Vec<String> = std::env::args().skip(1).collect();
        match Command::new("taskset")
            .arg("-c")
            .arg(cpus)
            .arg(&exe)
            .args(&args)
            .env("ARMILLARY_BENCH_PINNED", cpus)
            .status()
        {
            Ok(status) => {
                return Ok(Pinning::RanPinned(ExitCode::from(
                    status.code().unwrap_or(1) as u8,
                )))
            }
            Err(e) => eprintln!("warning: cannot pin with taskset ({e}); running unpinned"),
        }
    }
    Ok(Pinning::Here(
        match std::env::var("ARMILLARY_BENCH_PINNED") {
            Ok(cpus) => format!("all processes on CPU {cpus} (taskset)"),
            Err(_) => "unpinned".to_owned(),
        },
    ))
}

/// Call latencies in microseconds, 1 µs to 100 s at three significant
/// digits; longer calls count as 100 s.
#[derive(Debug, Clone)]
pub(crate) struct Latencies(Histogram<u64>);

impl Latencies {
    const HIGHEST_US: u64 = 100_000_000;

    pub(crate) fn new() -> Self {
        // The bounds are constants that hdrhistogram accepts (low 1,
        // high ≥ 2·low, 3 significant digits): it cannot fail.
        Latencies(
            Histogram::new_with_bounds(1, Self::HIGHEST_US, 3).expect("constant, valid bounds"),
        )
    }

    /// Records one call that took `took`.
    pub(crate) fn record(&mut self, took: Duration) {
        let us = (took.as_micros() as u64).clamp(1, Self::HIGHEST_US);
        self.0.saturating_record(us);
    }

    /// Adds every call another histogram recorded.
    pub(crate) fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides: the add cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// The latency at quantile `q` (0.5 for the median) in milliseconds,
    /// NaN when nothing was recorded.
    pub(crate) fn quantile_ms(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        self.0.value_at_quantile(q) as f64 / 1000.0
    }
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

/// The times of a contender's calls, in microseconds, for their
/// percentiles (exact: every call is kept).
#[derive(Debug, Clone, Default)]
pub(crate) struct CallTimes {
    pub(crate) micros: Vec<f64>,
}

impl CallTimes {
    /// Records one call that took `took`.
    pub(crate) fn record(&mut self, took: Duration) {
        self.micros.push(took.as_secs_f64() * 1e6);
    }

    /// `{"p50_us", "p99_us", "samples"}`, the percentiles to two
    /// decimals (NaN, so `null` in JSON, when there are none).
    pub(crate) fn summary(&self) -> serde_json::Value {
        let mut v = self.micros.clone();
        v.sort_by(f64::total_cmp);
        let r = |x: f64| (x * 100.0).round() / 100.0;
        json!({
            "p50_us": r(percentile(&v, 0.5)),
            "p99_us": r(percentile(&v, 0.99)),
            "samples": v.len(),
        })
    }
}

/// The value at quantile `p` of `sorted` (nearest rank), NaN when empty.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Prints `rows` under `header`, each column as wide as its widest cell;
/// the first `left` columns (words) are aligned left, the others
/// (numbers) right.
pub(crate) fn print_table(left: usize, header: &[&str], rows: &[Vec<String>]) {
    print!("{}", format_table(left, header, rows));
}

/// What [`print_table`] prints, as a string.
pub(crate) fn format_table(left: usize, header: &[&str], rows: &[Vec<String>]) -> String {
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
            let gap = if i == 0 { "" } else { "  " };
            if i < left {
                out.push_str(&format!("{gap}{cell:<width$}"));
            } else {
                out.push_str(&format!("{gap}{cell:>width$}"));
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

/// A number for the JSON: rounded to `decimals`, `null` when not finite.
pub(crate) fn number(x: f64, decimals: i32) -> Value {
    if x.is_finite() {
        let scale = 10f64.powi(decimals);
        json!((x * scale).round() / scale)
    } else {
        Value::Null
    }
}

/// A goal, as JSON: `{ratio, <bound>: limit, met}` for `ours / theirs`
/// against `bound` (`"at_most"` or `"at_least"`); `ratio` and `met` are
/// `null` when either figure is missing.
pub(crate) fn goal(ours: &Value, theirs: &Value, bound: &str, limit: f64) -> Value {
    let ratio = match (ours.as_f64(), theirs.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => a / b,
        _ => f64::NAN,
    };
    let met = if !ratio.is_finite() {
        Value::Null
    } else if bound == "at_most" {
        json!(ratio <= limit)
    } else {
        json!(ratio >= limit)
    };
    let mut g = Map::new();
    g.insert("ratio".into(), number(ratio, 3));
    g.insert(bound.into(), json!(limit));
    g.insert("met".into(), met);
    Value::Object(g)
}

/// Prints the goals of `goals` (an object of [`goal`]s) named by
/// `names` (`(key, label)`, in table order): each ratio, its bound, and
/// PASS, MISS or "not measured". A goal missed is reported, never a
/// failure of the command: timings on a shared machine decide nothing.
pub(crate) fn print_goal_table(goals: &Value, names: &[(&str, &str)]) {
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|(key, label)| {
            let g = &goals[*key];
            let bound = match (g["at_most"].as_f64(), g["at_least"].as_f64()) {
                (Some(x), _) => format!("≤ {x}"),
                (_, Some(x)) => format!("≥ {x}"),
                _ => String::new(),
            };
            vec![
                (*label).to_owned(),
                g["ratio"]
                    .as_f64()
                    .map_or("–".to_owned(), |r| format!("{r:.3}")),
                bound,
                match g["met"].as_bool() {
                    Some(true) => "PASS".to_owned(),
                    Some(false) => "MISS".to_owned(),
                    None => "not measured".to_owned(),
                },
            ]
        })
        .collect();
    print_table(1, &["goal", "ratio", "needed", "met"], &rows);
}

/// Writes `value` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One line of a plot: a name for the legend and its (x, y) points.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// One chart of a plot: a caption, axis labels and its lines.
#[derive(Debug, Clone)]
pub(crate) struct Panel {
    pub(crate) caption: String,
    pub(crate) x_label: String,
    pub(crate) y_label: String,
    pub(crate) series: Vec<Series>,
    /// The series come in groups of this many (the same models for each
    /// of several settings): a line's colour is its place in its group,
    /// its dash its group. `None`: ten colours, then the next dash.
    pub(crate) group: Option<usize>,
}

/// Colours of [`plot_lines_svg`]'s lines, in order (Tableau 10: distinct,
/// and all dark enough to read on white).
const LINE_COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Width of the legend beside each chart of [`plot_lines_svg`], at least
/// (wider for longer names).
const LEGEND_WIDTH: u32 = 150;

/// Pixels a character of the legend's 13-point font takes, about.
const LEGEND_CHAR_WIDTH: u32 = 7;

/// Draws `panels` as line charts, two per row, into the SVG file `path`,
/// each with its legend beside it (never over a line, as wide as its
/// longest name), every line in a colour of its own (past ten colours,
/// dashed); the series named `reference` (an ideal, say), if any, in
/// black, dashed finely. A panel whose index is in `log_y` has a
/// logarithmic value axis (its values must be positive; others are left
/// out).
pub(crate) fn plot_lines_svg(
    path: &Path,
    panels: &[Panel],
    reference: Option<&str>,
    log_y: &[usize],
) -> Result<(), String> {
    let rows = panels.len().div_ceil(2).max(1);
    let cols = if panels.len() > 1 { 2 } else { 1 };
    let longest = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .map(|s| s.name.chars().count() as u32)
        .max()
        .unwrap_or(0);
    let legend_width = (longest * LEGEND_CHAR_WIDTH + 40).max(LEGEND_WIDTH);
    // Tall enough for the longest legend too.
    let entries = panels.iter().map(|p| p.series.len()).max().unwrap_or(0) as u32;
    let height = (60 + 20 * entries).max(400);
    let size = ((560 + legend_width) * cols as u32, height * rows as u32);
    let fail = |e: &dyn std::fmt::Display| format!("cannot plot {}: {e}", path.display());
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let areas = root.split_evenly((rows, cols));
    for (index, (panel, area)) in panels.iter().zip(areas.iter()).enumerate() {
        let (plot_area, legend_area) =
            area.split_horizontally(area.dim_in_pixel().0 - legend_width);
        // On a logarithmic axis the chart is of log10(y), labelled 10^v.
        let log = log_y.contains(&index);
        let value = |y: f64| if log { y.log10() } else { y };
        let finite = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!log || y > 0.0);
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in panel
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| finite(p))
        {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(value(y));
            y1 = y1.max(value(y));
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if x0 == x1 {
            (x0, x1) = (x0 - 1.0, x1 + 1.0);
        }
        let (y0, y1) = match (log, y0 <= y1) {
            (true, true) => (y0 - 0.1, y1 + 0.1),
            (true, false) => (0.0, 1.0),
            (false, _) => (0.0, if y1 > 0.0 { y1 * 1.05 } else { 1.0 }),
        };
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(&panel.caption, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| fail(&e))?;
        // Whole numbers on axes that span ten or more.
        let tick = |span: f64| {
            move |v: &f64| {
                if span >= 10.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            }
        };
        // An axis of counts (clients, requests) is labelled at whole
        // numbers only, however short its span.
        let counts = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .all(|&(x, _)| x.fract() == 0.0);
        let x_span = tick(x1 - x0);
        let x_tick = |v: &f64| match (counts, v.fract() == 0.0) {
            (true, true) => format!("{v:.0}"),
            (true, false) => String::new(),
            (false, _) => x_span(v),
        };
        let y_linear = tick(y1);
        let y_tick = |v: &f64| {
            if log {
                format!("{:.0}", 10f64.powf(*v))
            } else {
                y_linear(v)
            }
        };
        chart
            .configure_mesh()
            .x_desc(panel.x_label.as_str())
            .y_desc(panel.y_label.as_str())
            .x_label_formatter(&x_tick)
            .y_label_formatter(&y_tick)
            .draw()
            .map_err(|e| fail(&e))?;
        let mut drawn = 0;
        let mut legend: Vec<(String, ShapeStyle, Dash)> = Vec::new();
        for series in &panel.series {
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|p| finite(p))
                .map(|&(x, y)| (x, value(y)))
                .collect();
            if Some(series.name.as_str()) == reference {
                let style = BLACK.stroke_width(1);
                chart
                    .draw_series(DashedLineSeries::new(points, 6, 4, style))
                    .map_err(|e| fail(&e))?;
                legend.push((series.name.clone(), style, Dash::Reference));
                continue;
            }
            let group = panel.group.unwrap_or(LINE_COLOURS.len()).max(1);
            let colour = LINE_COLOURS[(drawn % group) % LINE_COLOURS.len()];
            let dash = Dash::CYCLE[(drawn / group) % Dash::CYCLE.len()];
            drawn += 1;
            let style = colour.stroke_width(2);
            let mut line = |size, spacing| {
                chart
                    .draw_series(DashedLineSeries::new(
                        points.iter().copied(),
                        size,
                        spacing,
                        style,
                    ))
                    .map(|_| ())
            };
            match dash {
                Dash::Long => line(10, 5),
                Dash::Short => line(4, 4),
                Dash::Dotted => line(2, 4),
                Dash::Solid | Dash::Reference => chart
                    .draw_series(LineSeries::new(points.iter().copied(), style))
                    .map(|_| ()),
            }
            .map_err(|e| fail(&e))?;
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|e| fail(&e))?;
            legend.push((series.name.clone(), style, dash));
        }
        // The legend, beside the chart, level with its top.
        for (i, (name, style, dash)) in legend.iter().enumerate() {
            let y = 40 + 20 * i as i32;
            let pieces: &[(i32, i32)] = match dash {
                Dash::Solid => &[(4, 24)],
                Dash::Long => &[(4, 12), (17, 24)],
                Dash::Short => &[(4, 8), (12, 16), (20, 24)],
                Dash::Dotted => &[(4, 6), (10, 12), (16, 18), (22, 24)],
                Dash::Reference => &[(4, 10), (14, 20)],
            };
            for &(from, to) in pieces {
                legend_area
                    .draw(&PathElement::new(vec![(from, y), (to, y)], *style))
                    .map_err(|e| fail(&e))?;
            }
            if *dash != Dash::Reference {
                legend_area
                    .draw(&Circle::new((14, y), 3, style.color.filled()))
                    .map_err(|e| fail(&e))?;
            }
            legend_area
                .draw(&Text::new(
                    name.as_str(),
                    (30, y - 7),
                    ("sans-serif", 13).into_font(),
                ))
                .map_err(|e| fail(&e))?;
        }
    }
    root.present().map_err(|e| fail(&e))
}

/// How a line of [`plot_lines_svg`] is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dash {
    /// Solid, in a colour: the first ten lines (or first group).
    Solid,
    /// Long dashes, in a colour: the next ten (or group).
    Long,
    /// Short dashes, in a colour: the next.
    Short,
    /// Dots, in a colour: the next.
    Dotted,
    /// Short black dashes: the reference line.
    Reference,
}

impl Dash {
    /// The dashes of coloured lines, ten lines (or a group) each, in turn.
    const CYCLE: [Dash; 4] = [Dash::Solid, Dash::Long, Dash::Short, Dash::Dotted];
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
    // Room for each bar's name under it (the longest forms' names are a
    // dozen characters).
    let most_bars = charts.iter().map(|c| c.bars.len()).max().unwrap_or(1);
    let column = (110 * most_bars as u32).max(560);
    let size = (column * cols as u32, 400);
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
            // Plotters counts an integer range's end in: `0..n - 1` is n slots.
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)
            .map_err(|e| fail(&e))?;
        ctx.configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&label)
            .y_label_formatter(&|y| compact(*y))
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

/// A bar chart of several series over a few groups (the collocation
/// paper's Figure 4: calls/s per strategy, grouped by sequence length):
/// `series` are (name, one value per group), drawn in the order given,
/// each in a colour of its own; on a logarithmic value axis when
/// `log_y` (values spanning orders of magnitude), else a linear one from
/// zero.
#[derive(Debug, Clone)]
pub(crate) struct GroupedBars {
    pub(crate) caption: String,
    pub(crate) y_label: String,
    pub(crate) groups: Vec<String>,
    pub(crate) series: Vec<(String, Vec<f64>)>,
    pub(crate) log_y: bool,
}

/// Width of the legend beside [`plot_grouped_bars_svg`]'s chart.
const GROUPED_LEGEND_WIDTH: u32 = 190;

/// `x` in four significant figures at most and a suffix, without
/// trailing zeros: `16.34`, `950`, `12.35k`, `4.56M`, `1M`.
fn compact(x: f64) -> String {
    let (scaled, suffix) = match x.abs() {
        a if a >= 1e9 => (x / 1e9, "G"),
        a if a >= 1e6 => (x / 1e6, "M"),
        a if a >= 1e3 => (x / 1e3, "k"),
        _ => (x, ""),
    };
    // Three decimals at most, one fewer per digit before the point (so
    // that 16.3 µs and 16.2 µs do not both read 16).
    let decimals = 3 - (scaled.abs().log10().floor().clamp(0.0, 3.0) as usize);
    let digits = format!("{scaled:.decimals$}");
    let digits = if digits.contains('.') {
        digits.trim_end_matches('0').trim_end_matches('.')
    } else {
        &digits
    };
    format!("{digits}{suffix}")
}

/// Draws `chart` into the SVG file `path`: each group a cluster of bars,
/// one per series, each labelled with its value above it, the groups'
/// names under them, on a logarithmic or linear value axis (values that
/// are not positive numbers are left out, their place kept); the legend
/// beside the chart, never over a bar.
pub(crate) fn plot_grouped_bars_svg(path: &Path, chart: &GroupedBars) -> Result<(), String> {
    plot_grouped_bar_panels_svg(path, std::slice::from_ref(chart), 1)
}

/// Width of a [`GroupedBars`] chart's plot (its legend left out): wide
/// enough for every bar's label (about 60 px a bar).
fn grouped_plot_width(chart: &GroupedBars) -> u32 {
    let groups = chart.groups.len().max(1);
    let per_group = chart.series.len().max(1);
    (120 + 64 * groups * per_group + 40 * groups) as u32
}

/// Draws `charts` into the SVG file `path`, `columns` to a row, each as
/// [`plot_grouped_bars_svg`] draws one (each as wide as the widest), with
/// its own legend beside it; a series has the same colour in every chart
/// (colours go to series names in the order they first appear).
pub(crate) fn plot_grouped_bar_panels_svg(
    path: &Path,
    charts: &[GroupedBars],
    columns: usize,
) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot plot {}: {e}", path.display());
    let columns = columns.clamp(1, charts.len().max(1));
    let rows = charts.len().div_ceil(columns).max(1);
    let cell_width =
        charts.iter().map(grouped_plot_width).max().unwrap_or(400) + GROUPED_LEGEND_WIDTH;
    let size = (cell_width * columns as u32, 440 * rows as u32);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in charts.iter().flat_map(|c| c.series.iter()) {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    let colour_of = |name: &str| {
        let i = names.iter().position(|n| *n == name).unwrap_or(0);
        LINE_COLOURS[i % LINE_COLOURS.len()]
    };
    let cells = root.split_evenly((rows, columns));
    for (chart, cell) in charts.iter().zip(cells.iter()) {
        draw_grouped_bars(cell, chart, &colour_of).map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))
}

/// What drawing on an SVG area fails with.
type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// Draws `chart` into `area`, its legend in the area's last
/// [`GROUPED_LEGEND_WIDTH`] pixels.
fn draw_grouped_bars(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &GroupedBars,
    colour_of: &dyn Fn(&str) -> RGBColor,
) -> Result<(), DrawError> {
    let width = area.dim_in_pixel().0;
    let (plot_area, legend_area) =
        area.split_horizontally(width.saturating_sub(GROUPED_LEGEND_WIDTH));
    let values = chart
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = values.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let groups = chart.groups.len().max(1) as f64;
    let builder = || {
        let mut builder = ChartBuilder::on(&plot_area);
        builder
            .caption(&chart.caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(64);
        builder
    };
    match (chart.log_y, hi > 0.0) {
        (true, true) => {
            // From the decade below the smallest bar (so that it shows)
            // to the decade above the tallest with room for its label:
            // whole decades, whose axis plotters labels once each (a
            // range ending inside a decade got one label drawn twice).
            let lo = 10f64.powf((lo * 0.9).log10().floor());
            let top = 10f64.powf((hi * 1.6).log10().ceil());
            let ctx = builder().build_cartesian_2d(0.0..groups, (lo..top).log_scale())?;
            draw_bars_on(ctx, area, chart, colour_of, lo, &|v| v * 1.08)?;
        }
        (true, false) => {
            let ctx = builder().build_cartesian_2d(0.0..groups, (1.0..10.0).log_scale())?;
            draw_bars_on(ctx, area, chart, colour_of, 1.0, &|v| v * 1.08)?;
        }
        (false, _) => {
            // Room above the tallest bar for its label.
            let top = if hi > 0.0 { hi * 1.15 } else { 1.0 };
            let ctx = builder().build_cartesian_2d(0.0..groups, 0.0..top)?;
            draw_bars_on(ctx, area, chart, colour_of, 0.0, &|v| v + top * 0.01)?;
        }
    }
    // The legend, beside the chart, level with its top.
    for (s, (name, _)) in chart.series.iter().enumerate() {
        let colour = colour_of(name);
        let y = 44 + 22 * s as i32;
        legend_area.draw(&Rectangle::new([(4, y - 6), (18, y + 6)], colour.filled()))?;
        legend_area.draw(&Text::new(
            name.as_str(),
            (26, y - 7),
            ("sans-serif", 13).into_font(),
        ))?;
    }
    Ok(())
}

/// Draws `chart`'s mesh, bars, value labels and group names on `ctx` (a
/// chart in `area` whose value axis starts at `floor`), each value's
/// label with its bottom at `label_at(value)`, a little above the bar.
fn draw_bars_on<Y>(
    mut ctx: ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &GroupedBars,
    colour_of: &dyn Fn(&str) -> RGBColor,
    floor: f64,
    label_at: &dyn Fn(f64) -> f64,
) -> Result<(), DrawError>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let groups = chart.groups.len().max(1);
    let per_group = chart.series.len().max(1);
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(chart.y_label.as_str())
        .y_label_formatter(&|v: &f64| compact(*v))
        .draw()?;
    // Each group spans one unit; its bars share the middle 80 % of it.
    let bar_width = 0.8 / per_group as f64;
    let left = |g: usize, s: usize| g as f64 + 0.1 + bar_width * s as f64;
    let label_style = ("sans-serif", 12)
        .into_font()
        .into_text_style(area)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    for (s, (name, values)) in chart.series.iter().enumerate() {
        let colour = colour_of(name);
        let shown = || {
            values
                .iter()
                .enumerate()
                .take(groups)
                .filter(|(_, v)| v.is_finite() && **v > 0.0)
        };
        ctx.draw_series(shown().map(|(g, &v)| {
            let mut bar = Rectangle::new(
                [(left(g, s), floor), (left(g, s) + bar_width, v)],
                colour.filled(),
            );
            bar.set_margin(0, 0, 3, 3);
            bar
        }))?;
        ctx.draw_series(shown().map(|(g, &v)| {
            Text::new(
                compact(v),
                (left(g, s) + bar_width / 2.0, label_at(v)),
                label_style.clone(),
            )
        }))?;
    }
    // The groups' names, under their bars (the axis has no labels of
    // its own: its key points are not the groups' middles).
    let name_style = ("sans-serif", 14)
        .into_font()
        .into_text_style(area)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let (x0, y0) = area.get_base_pixel();
    for (g, name) in chart.groups.iter().enumerate() {
        let (x, y) = ctx.backend_coord(&(g as f64 + 0.5, floor));
        area.draw(&Text::new(
            name.as_str(),
            (x - x0, y - y0 + 8),
            name_style.clone(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_columns_align_to_the_widest_cell() {
        let table = format_table(
            1,
            &["model", "calls/s"],
            &[
                vec!["reactive".into(), "12".into()],
                vec!["thread-pool:4".into(), "1234".into()],
            ],
        );
        assert_eq!(
            table,
            "model          calls/s\nreactive            12\nthread-pool:4     1234\n"
        );
    }

    #[test]
    fn compact_numbers_keep_four_figures_at_most() {
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(16.34), "16.34");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(12_345.0), "12.35k");
        assert_eq!(compact(123_456.0), "123.5k");
        assert_eq!(compact(38_795_026.0), "38.8M");
        assert_eq!(compact(10_000.0), "10k");
        assert_eq!(compact(4_560_000.0), "4.56M");
        assert_eq!(compact(1e6), "1M");
        assert_eq!(compact(2.5e9), "2.5G");
    }

    #[test]
    fn latencies_give_quantiles_in_milliseconds() {
        let mut a = Latencies::new();
        assert!(a.quantile_ms(0.5).is_nan());
        for us in 1..=100 {
            a.record(Duration::from_micros(us * 10));
        }
        let mut b = Latencies::new();
        b.record(Duration::from_secs(1000));
        a.merge(&b);
        assert!((a.quantile_ms(0.5) - 0.51).abs() < 0.01);
        assert!((a.quantile_ms(1.0) - 100_000.0).abs() < 100.0);
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

    #[test]
    fn an_axis_of_counts_is_labelled_at_whole_numbers() {
        let path = std::env::temp_dir().join(format!("armillary-axis-{}.svg", std::process::id()));
        let panel = |points: Vec<(f64, f64)>| Panel {
            caption: "calls".into(),
            x_label: "clients".into(),
            y_label: "calls/s".into(),
            series: vec![Series {
                name: "one server".into(),
                points,
            }],
            group: None,
        };
        let counts = panel(vec![(1.0, 700.0), (4.0, 800.0), (10.0, 780.0)]);
        plot_lines_svg(&path, &[counts], None, &[]).unwrap();
        // The SVG backend writes each text on a line of its own.
        let labels = |svg: &str| -> Vec<String> {
            svg.lines()
                .map(str::trim)
                .filter(|l| !l.starts_with('<'))
                .map(String::from)
                .collect()
        };
        let svg = std::fs::read_to_string(&path).unwrap();
        let ticks = labels(&svg);
        assert!(
            ticks.iter().any(|t| t == "2") && ticks.iter().any(|t| t == "10"),
            "{ticks:?}"
        );
        assert!(!ticks.iter().any(|t| t.contains('.')), "{ticks:?}");
        // A fractional axis keeps its decimals.
        let fractions = panel(vec![(0.0, 1.0), (2.5, 2.0), (5.0, 3.0)]);
        plot_lines_svg(&path, &[fractions], None, &[]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let ticks = labels(&svg);
        assert!(ticks.iter().any(|t| t == "2.50"), "{ticks:?}");
    }
}
