//! `gridbed report <run.json> --out DIR`: the pictures of a finished run, for
//! a user without Grafana — per-site Gantt of job executions, bytes and
//! transfers into each site over time, storage used and queue lengths over
//! time — and an `index.html` that shows them beside the summary table. Works
//! on sim and live runs alike: the record gives the totals and the timeline,
//! the control database beside it every attempt and transfer
//! (`docs/run-record.md`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::RunRecord;
use super::plot::{PlotError, Series, colour, line_chart};
use crate::core::timeline::Sample;

/// The plots `report` writes, in the order `index.html` shows them.
pub const PLOTS: [(&str, &str); 5] = [
    ("gantt.svg", "Job executions per site (Gantt)"),
    ("bytes-in.svg", "Bytes received per site over time"),
    ("transfers-in.svg", "Transfers into each site over time"),
    ("storage.svg", "Storage used per site over time"),
    ("queues.svg", "Jobs queued per site over time"),
];

/// Why a record could not be reported.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be read or is not a run record.
    #[error("{path}: {message}")]
    Input {
        /// The record file.
        path: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// Writing the output failed.
    #[error("{0}")]
    Output(String),
}

/// Reads a run record written by `gridbed run --json` (its totals, sites,
/// timeline; no per-job or per-transfer detail).
pub fn read_record(path: &Path) -> Result<RunRecord, ReportError> {
    let input = |message: String| ReportError::Input {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| input(format!("cannot read: {e}")))?;
    let rec: RunRecord = serde_json::from_str(&text).map_err(|e| {
        input(format!(
            "line {}, column {}: not a gridbed run record: {e}",
            e.line(),
            e.column()
        ))
    })?;
    if rec.schema != super::record::SCHEMA_VERSION {
        return Err(input(format!(
            "run record schema {}, this gridbed reads schema {} (run it again to write it anew)",
            rec.schema,
            super::record::SCHEMA_VERSION
        )));
    }
    Ok(rec)
}

/// The control database a record names: `db` when given, else the record's
/// own `db` (relative to the record's folder).
pub fn database_of(record: &Path, rec: &RunRecord, db: Option<&Path>) -> Option<PathBuf> {
    if let Some(db) = db {
        return Some(db.to_path_buf());
    }
    let named = Path::new(rec.db.as_deref()?);
    Some(match record.parent() {
        Some(dir) if named.is_relative() => dir.join(named),
        _ => named.to_path_buf(),
    })
}

/// Reads a run record and, from the control database it names (or `db`),
/// every job attempt and transfer of the run: what `report` draws.
pub fn read_run(path: &Path, db: Option<&Path>) -> Result<RunRecord, ReportError> {
    let mut rec = read_record(path)?;
    let Some(db) = database_of(path, &rec, db) else {
        return Err(ReportError::Input {
            path: path.display().to_string(),
            message: "the record names no control database (pass --db FILE, the database `gridbed run --db` wrote)".into(),
        });
    };
    let detail = crate::db::run_detail(&db).map_err(|e| ReportError::Input {
        path: db.display().to_string(),
        message: format!("the control database of {}: {e}", path.display()),
    })?;
    if let Some(id) = detail.run_id.as_ref().filter(|id| **id != rec.run_id) {
        return Err(ReportError::Input {
            path: db.display().to_string(),
            message: format!(
                "is the control database of run `{id}`, the record {}'s is `{}`: not this run's (pass --db with the one `gridbed run` wrote beside it)",
                path.display(),
                rec.run_id
            ),
        });
    }
    if detail.jobs.len() != rec.summary.jobs {
        return Err(ReportError::Input {
            path: db.display().to_string(),
            message: format!(
                "lists {} jobs, the record {}: not this run's control database",
                detail.jobs.len(),
                rec.summary.jobs
            ),
        });
    }
    rec.jobs = detail.jobs;
    rec.transfers = detail.transfers;
    Ok(rec)
}

/// Writes every plot of `rec` and an `index.html` into `out`; returns the
/// files written.
pub fn write_report(rec: &RunRecord, out: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(out)
        .map_err(|e| ReportError::Output(format!("{}: {e}", out.display())))?;
    let sites: Vec<&str> = rec.sites.iter().map(|s| s.name.as_str()).collect();
    let end = rec.summary.makespan_s.max(1e-9);
    let mut written = Vec::new();
    let path = |name: &str| out.join(name);

    gantt(rec, &path(PLOTS[0].0), end).map_err(|e| ReportError::Output(e.to_string()))?;

    // Transfers into each site, binned over the makespan: bytes (cumulative)
    // and transfers ended per bin.
    let bins = 100;
    let width = end / bins as f64;
    let mut bytes = vec![vec![0.0; bins + 1]; sites.len()];
    let mut count = vec![vec![0.0; bins + 1]; sites.len()];
    for t in &rec.transfers {
        let (Some(e), None) = (t.end, &t.failure) else {
            continue;
        };
        let Some(site) = sites.iter().position(|s| *s == t.to) else {
            continue;
        };
        let bin = ((e / width).ceil() as usize).min(bins);
        bytes[site][bin] += t.bytes as f64;
        count[site][bin] += 1.0;
    }
    let active: Vec<usize> = (0..sites.len())
        .filter(|&s| count[s].iter().any(|&c| c > 0.0))
        .collect();
    let binned = |data: &[Vec<f64>], cumulative: bool, scale: f64| -> Vec<Series> {
        active
            .iter()
            .map(|&s| {
                let mut acc = 0.0;
                Series {
                    name: sites[s].to_string(),
                    points: data[s]
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| {
                            acc = if cumulative { acc + v } else { v };
                            (i as f64 * width, acc / scale)
                        })
                        .collect(),
                }
            })
            .collect()
    };
    lines_or_note(
        &path(PLOTS[1].0),
        PLOTS[1].1,
        "MB received (cumulative, nominal)",
        &binned(&bytes, true, 1e6),
    )?;
    lines_or_note(
        &path(PLOTS[2].0),
        PLOTS[2].1,
        &format!("transfers ended per {width:.0} s"),
        &binned(&count, false, 1.0),
    )?;

    // Storage and queues from the sampled timeline, for every site that held
    // data or ran a job (a queue that stayed empty is a flat line, not absent).
    let samples = &rec.timeline.samples;
    let took_part: Vec<usize> = (0..sites.len())
        .filter(|&s| {
            samples.iter().any(|x| {
                x.used.get(s).is_some_and(|&u| u > 0) || x.running.get(s).is_some_and(|&r| r > 0)
            })
        })
        .collect();
    let sampled = |value: &dyn Fn(&Sample, usize) -> f64| -> Vec<Series> {
        took_part
            .iter()
            .map(|&s| Series {
                name: sites[s].to_string(),
                points: rec
                    .timeline
                    .samples
                    .iter()
                    .map(|x| (x.t, value(x, s)))
                    .collect(),
            })
            .collect()
    };
    lines_or_note(
        &path(PLOTS[3].0),
        PLOTS[3].1,
        "GB used (nominal)",
        &sampled(&|x, s| x.used.get(s).map_or(0.0, |&b| b as f64 / 1e9)),
    )?;
    lines_or_note(
        &path(PLOTS[4].0),
        PLOTS[4].1,
        "jobs queued",
        &sampled(&|x, s| x.queued.get(s).map_or(0.0, |&q| q as f64)),
    )?;
    for (name, _) in PLOTS {
        written.push(path(name));
    }
    let index = path("index.html");
    std::fs::write(&index, index_html(rec))
        .map_err(|e| ReportError::Output(format!("{}: {e}", index.display())))?;
    written.push(index);
    Ok(written)
}

/// A line chart, or — when nothing happened (no transfers, no storage) — an
/// empty chart that says so, so that every plot of the index exists.
fn lines_or_note(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), ReportError> {
    if series.is_empty() {
        return note(path, &format!("{title}: nothing to show in this run"))
            .map_err(|e| ReportError::Output(e.to_string()));
    }
    line_chart(path, title, "nominal time (s)", y_label, series, &[])
        .map_err(|e| ReportError::Output(e.to_string()))
}

fn note(path: &Path, text: &str) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    let root = SVGBackend::new(path, (800, 120)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    root.draw(&Text::new(text.to_string(), (20, 50), ("sans-serif", 18)))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// One bar per job attempt that ran, on a lane of its site: attempts are
/// packed onto the fewest lanes that never overlap (at most the site's slots),
/// sites stacked top to bottom; killed and failed attempts drawn in red.
fn gantt(rec: &RunRecord, path: &Path, end: f64) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    let sites: Vec<&str> = rec.sites.iter().map(|s| s.name.as_str()).collect();
    let mut runs: Vec<Vec<(f64, f64, bool)>> = vec![Vec::new(); sites.len()];
    for a in rec.jobs.iter().flat_map(|j| &j.attempts) {
        let (Some(s), Some(e)) = (a.started, a.ended) else {
            continue;
        };
        if let Some(site) = sites.iter().position(|n| *n == a.site) {
            let ok = matches!(a.outcome, crate::core::records::Outcome::Ended);
            runs[site].push((s, e, ok));
        }
    }
    // Interval partitioning per site: the first lane free at the start.
    let mut bars = Vec::new();
    let mut bands = Vec::new();
    let mut base = 0usize;
    for (site, list) in runs.iter_mut().enumerate() {
        if list.is_empty() {
            continue;
        }
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut lanes: Vec<f64> = Vec::new();
        for &(s, e, ok) in list.iter() {
            let lane = match lanes.iter().position(|&free| free <= s) {
                Some(l) => l,
                None => {
                    lanes.push(0.0);
                    lanes.len() - 1
                }
            };
            lanes[lane] = e;
            bars.push((site, base + lane, s, e, ok));
        }
        bands.push((site, base, lanes.len()));
        base += lanes.len() + 1;
    }
    if bars.is_empty() {
        return note(path, "Job executions per site: no job ran in this run");
    }
    let height = (base as u32 * 4).clamp(300, 1600) + 80;
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(PLOTS[0].1, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(140)
        .build_cartesian_2d(0.0..end * 1.02, (base as f64)..0.0)
        .map_err(|e| err(&e))?;
    let band_of: Vec<(f64, String)> = bands
        .iter()
        .map(|&(s, b, n)| (b as f64 + n as f64 / 2.0, sites[s].to_string()))
        .collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("nominal time (s)")
        .draw()
        .map_err(|e| err(&e))?;
    let n = sites.len();
    chart
        .draw_series(bars.iter().map(|&(site, lane, s, e, ok)| {
            let c = if ok { colour(site, n) } else { RED };
            Rectangle::new(
                [
                    (s, lane as f64 + 0.1),
                    (e.max(s + end * 1e-4), lane as f64 + 0.9),
                ],
                c.filled(),
            )
        }))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(bands.iter().skip(1).map(|&(_, b, _)| {
            PathElement::new(
                vec![(0.0, b as f64 - 0.5), (end * 1.02, b as f64 - 0.5)],
                BLACK.mix(0.3),
            )
        }))
        .map_err(|e| err(&e))?;
    // Site names at the left of their bands.
    for (y, name) in &band_of {
        let (px, py) = chart.backend_coord(&(0.0, *y));
        root.draw(&Text::new(
            name.clone(),
            (px.saturating_sub(135), py - 6),
            ("sans-serif", 12),
        ))
        .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn index_html(rec: &RunRecord) -> String {
    let mut h = String::new();
    let title = format!(
        "gridbed {} run of {} ({}, seed {})",
        rec.engine, rec.testbed, rec.strategy, rec.seed
    );
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}\
         pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}\
         img{{max-width:100%;border:1px solid #ddd;margin-bottom:2em}}</style></head>\n\
         <body><h1>{t}</h1>\n<p>Run <code>{id}</code>, gridbed {v}; makespan {m:.1} nominal s.</p>\n\
         <h2>Summary</h2>\n<pre>{table}</pre>\n",
        t = escape(&title),
        id = escape(&rec.run_id),
        v = escape(&rec.gridbed),
        m = rec.summary.makespan_s,
        table = escape(&rec.table()),
    );
    for (file, caption) in PLOTS {
        let _ = writeln!(
            h,
            "<h2>{c}</h2>\n<img src=\"{file}\" alt=\"{c}\">",
            c = escape(caption)
        );
    }
    h.push_str("</body></html>\n");
    h
}
