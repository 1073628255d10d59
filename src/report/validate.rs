//! `gridbed validate`: the same scenario and seed on both engines, side by side.
//!
//! Seed 000's simulator was 15–30% off its live runs and could not say why.
//! Here every figure of the two run records is put side by side with its
//! deviation `(live − sim) / sim`, and the time of every job is split into its
//! phases — waiting for a prescript slot, staging (prescript), queueing at the
//! site, running — so that a difference in makespan is traced to the phase that
//! holds it.

use std::fmt::Write as _;

use serde::Serialize;

use std::collections::BTreeMap;

use super::record::RunRecord;
use crate::core::farm::FarmRun;
use crate::core::trace::TraceEvent;

/// One compared figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// What it is.
    pub name: String,
    /// Sim value.
    pub sim: f64,
    /// Live value.
    pub live: f64,
    /// `(live − sim) / sim`; 0 when both are 0, ±∞ shown as null.
    pub deviation: Option<f64>,
}

/// Mean nominal seconds a job spends in one phase.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Phase {
    /// Phase name.
    pub name: String,
    /// Sim mean (s).
    pub sim: f64,
    /// Live mean (s).
    pub live: f64,
    /// Live minus sim (s).
    pub difference: f64,
}

/// The comparison of a sim and a live run of one scenario.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    /// Testbed name.
    pub testbed: String,
    /// Seed both ran with.
    pub seed: u64,
    /// Allowed makespan deviation (fraction).
    pub tolerance: f64,
    /// Makespan deviation (fraction).
    pub makespan_deviation: f64,
    /// Whether it is within the tolerance.
    pub within_tolerance: bool,
    /// Figures side by side.
    pub rows: Vec<Row>,
    /// Per-phase mean times of the attempts that ended.
    pub phases: Vec<Phase>,
    /// The phase holding the largest difference.
    pub dominant_phase: String,
    /// Events of each kind in the two runs' traces, side by side.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Row>,
}

/// `(live − sim) / sim`; 0 when both are equal, `None` when only sim is 0.
pub fn deviation(sim: f64, live: f64) -> Option<f64> {
    if sim == live {
        Some(0.0)
    } else if sim == 0.0 {
        None
    } else {
        Some((live - sim) / sim)
    }
}

/// Mean phase durations over the attempts that ended: (ready→prescript,
/// prescript→submitted, submitted→started, started→ended).
fn phases(rec: &RunRecord) -> [f64; 4] {
    let mut sums = [0.0; 4];
    let mut n = 0usize;
    for job in &rec.jobs {
        let Some(a) = job.attempts.last() else {
            continue;
        };
        let (Some(ready), Some(sub), Some(start), Some(end)) =
            (job.ready, a.submitted, a.started, a.ended)
        else {
            continue;
        };
        sums[0] += a.prescript - ready;
        sums[1] += sub - a.prescript;
        sums[2] += start - sub;
        sums[3] += end - start;
        n += 1;
    }
    if n > 0 {
        for s in &mut sums {
            *s /= n as f64;
        }
    }
    sums
}

fn pct(d: Option<f64>) -> String {
    match d {
        Some(d) => format!("{:+.2}%", d * 100.0),
        None => "n/a".into(),
    }
}

/// Figures side by side with their deviations, one line each.
pub fn rows_table(rows: &[Row]) -> String {
    let mut out = format!(
        "  {:<28} {:>14} {:>14} {:>10}\n",
        "figure", "sim", "live", "deviation"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "  {:<28} {:>14.1} {:>14.1} {:>10}",
            r.name,
            r.sim,
            r.live,
            pct(r.deviation)
        );
    }
    out
}

fn share(r: &FarmRun, n: u64) -> f64 {
    100.0 * n as f64 / (r.local_hits + r.global_hits + r.misses).max(1) as f64
}

/// A data-diffusion farm's figures, sim beside live (seed 001's metrics).
pub fn farm_rows(sim: &FarmRun, live: &FarmRun) -> Vec<Row> {
    type Figure = fn(&FarmRun) -> f64;
    let figures: [(&str, Figure); 9] = [
        ("makespan (s)", |r| r.makespan),
        ("tasks", |r| r.tasks as f64),
        ("cache hit local (%)", |r| share(r, r.local_hits)),
        ("cache hit global (%)", |r| share(r, r.global_hits)),
        ("cache miss (%)", |r| share(r, r.misses)),
        ("bytes moved (GB)", |r| r.bytes_moved as f64 / 1e9),
        ("peak executors", |r| r.peak_executors as f64),
        ("CPU hours", |r| r.cpu_hours),
        ("mean response time (s)", |r| r.response_mean),
    ];
    figures
        .iter()
        .map(|(name, f)| Row {
            name: name.to_string(),
            sim: f(sim),
            live: f(live),
            deviation: deviation(f(sim), f(live)),
        })
        .collect()
}

impl Comparison {
    /// Compares `sim` and `live`, records of the same scenario and seed.
    pub fn new(sim: &RunRecord, live: &RunRecord, tolerance: f64) -> Comparison {
        let mut rows = Vec::new();
        let mut row = |name: &str, s: f64, l: f64| {
            rows.push(Row {
                name: name.to_string(),
                sim: s,
                live: l,
                deviation: deviation(s, l),
            });
        };
        let (a, b) = (&sim.summary, &live.summary);
        row("makespan (s)", a.makespan_s, b.makespan_s);
        row("transfers", a.transfers as f64, b.transfers as f64);
        row("bytes moved", a.bytes as f64, b.bytes as f64);
        row(
            "mean queue wait (s)",
            a.mean_queue_wait_s,
            b.mean_queue_wait_s,
        );
        row("cache hits", a.cache_hits as f64, b.cache_hits as f64);
        row("evictions", a.evictions as f64, b.evictions as f64);
        row("re-plans", a.replans as f64, b.replans as f64);
        for (s, l) in sim.sites.iter().zip(&live.sites) {
            if s.cpus > 0 {
                row(
                    &format!("jobs on {}", s.name),
                    s.jobs_ended as f64,
                    l.jobs_ended as f64,
                );
            }
        }
        let (ps, pl) = (phases(sim), phases(live));
        let names = [
            "waiting for a prescript",
            "staging (prescript)",
            "queueing at the site",
            "running",
        ];
        let phases: Vec<Phase> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Phase {
                name: n.to_string(),
                sim: ps[i],
                live: pl[i],
                difference: pl[i] - ps[i],
            })
            .collect();
        let dominant_phase = phases
            .iter()
            .max_by(|x, y| x.difference.abs().total_cmp(&y.difference.abs()))
            .map(|p| p.name.clone())
            .unwrap_or_default();
        let makespan_deviation = deviation(a.makespan_s, b.makespan_s).unwrap_or(f64::INFINITY);
        Comparison {
            testbed: sim.testbed.clone(),
            seed: sim.seed,
            tolerance,
            within_tolerance: makespan_deviation.abs() <= tolerance,
            makespan_deviation,
            rows,
            phases,
            dominant_phase,
            events: Vec::new(),
        }
    }

    /// Adds the count of every kind of event in the two runs' traces
    /// ([`Records::trace`](crate::core::records::Records::trace)), side by
    /// side: where the runs took different paths (more transfers failed,
    /// more attempts, evictions), the kind of event says which.
    pub fn with_traces(mut self, sim: &[TraceEvent<'_>], live: &[TraceEvent<'_>]) -> Self {
        let mut counts: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
        for e in sim {
            counts.entry(e.kind()).or_default().0 += 1;
        }
        for e in live {
            counts.entry(e.kind()).or_default().1 += 1;
        }
        self.events = counts
            .into_iter()
            .map(|(kind, (s, l))| Row {
                name: format!("events: {kind}"),
                sim: s as f64,
                live: l as f64,
                deviation: deviation(s as f64, l as f64),
            })
            .collect();
        self
    }

    /// The side-by-side table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "gridbed validate `{}` (seed {}): sim vs live",
            self.testbed, self.seed
        );
        out.push('\n');
        out.push_str(&rows_table(&self.rows));
        if !self.events.is_empty() {
            out.push('\n');
            out.push_str(&rows_table(&self.events));
        }
        let _ = writeln!(out, "\n  mean time per job, by phase (nominal s)");
        for p in &self.phases {
            let _ = writeln!(
                out,
                "  {:<28} {:>14.2} {:>14.2} {:>+10.2}",
                p.name, p.sim, p.live, p.difference
            );
        }
        let verdict = if self.within_tolerance {
            "within"
        } else {
            "OUTSIDE"
        };
        let _ = writeln!(
            out,
            "\n  makespan deviation {} is {verdict} the tolerance of ±{:.1}%; the largest difference is in {}",
            pct(Some(self.makespan_deviation)),
            self.tolerance * 100.0,
            self.dominant_phase
        );
        out
    }
}

/// How the transfers of one run agree with a model run's, transfer by
/// transfer (the same job's same file into the same site, first completed
/// copy): relative differences of their durations.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct TransferAgreement {
    /// Transfers found in both runs.
    pub matched: usize,
    /// Mean of `|other − model| / model`.
    pub mean_abs: f64,
    /// Its 95th percentile.
    pub p95_abs: f64,
    /// How many times the model's time a transfer takes, fitted by least
    /// squares through the origin (`Σ model·other / Σ model²`, so long
    /// transfers weigh most): a rate the model gets wrong by one factor
    /// everywhere, as the protocols' headers are (1 when nothing matched).
    pub scale: f64,
}

/// Transfer-by-transfer agreement of `other` with `model` (see
/// [`TransferAgreement`]); transfers of zero time in the model are left
/// out.
pub fn transfer_agreement(
    model: &crate::core::records::Records,
    other: &crate::core::records::Records,
) -> TransferAgreement {
    let durations = |r: &crate::core::records::Records| {
        let mut by = BTreeMap::new();
        for t in r.transfers.iter().filter(|t| t.failure.is_none()) {
            if let Some(end) = t.end {
                by.entry((t.job, t.file, t.to)).or_insert(end - t.start);
            }
        }
        by
    };
    let theirs = durations(other);
    agreement(
        durations(model)
            .into_iter()
            .filter_map(|(k, m)| theirs.get(&k).map(|&o| (m, o))),
    )
}

/// The agreement of (model, other) durations of the same transfers; those
/// of zero time in the model are left out.
pub fn agreement(pairs: impl IntoIterator<Item = (f64, f64)>) -> TransferAgreement {
    let pairs: Vec<(f64, f64)> = pairs.into_iter().filter(|&(m, _)| m > 0.0).collect();
    let mut diffs: Vec<f64> = pairs.iter().map(|&(m, o)| (o - m).abs() / m).collect();
    diffs.sort_by(f64::total_cmp);
    let n = diffs.len();
    let (mo, mm) = pairs
        .iter()
        .fold((0.0, 0.0), |(mo, mm), &(m, o)| (mo + m * o, mm + m * m));
    TransferAgreement {
        scale: if n == 0 { 1.0 } else { mo / mm },
        matched: n,
        mean_abs: if n == 0 {
            0.0
        } else {
            diffs.iter().sum::<f64>() / n as f64
        },
        p95_abs: if n == 0 {
            0.0
        } else {
            diffs[((n as f64 * 0.95).ceil() as usize).clamp(1, n) - 1]
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::{Records, TransferRecord};

    fn transfer(job: usize, start: f64, end: f64) -> TransferRecord {
        TransferRecord {
            id: job as u64,
            job,
            file: job,
            from: 0,
            to: 1,
            start,
            end: Some(end),
            bytes: 1,
            failure: None,
            retry: false,
        }
    }

    #[test]
    fn transfers_are_matched_by_job_file_and_receiver() {
        let mut model = Records::default();
        let mut other = Records::default();
        for j in 0..20 {
            model.transfers.push(transfer(j, 0.0, 10.0));
            // 19 transfers 1% slow, one 20% fast.
            let took = if j == 7 { 8.0 } else { 10.1 };
            other.transfers.push(transfer(j, 5.0, 5.0 + took));
        }
        let a = transfer_agreement(&model, &other);
        assert_eq!(a.matched, 20);
        assert!((a.mean_abs - (19.0 * 0.01 + 0.2) / 20.0).abs() < 1e-12);
        assert!((a.p95_abs - 0.01).abs() < 1e-9, "{a:?}");
        // Σ m·o / Σ m² with every m = 10: the mean of the others over 10.
        assert!(
            (a.scale - (19.0 * 10.1 + 8.0) / 200.0).abs() < 1e-12,
            "{a:?}"
        );
    }

    #[test]
    fn the_scale_weighs_long_transfers_most() {
        // A fixed 0.5 s on every transfer and 5% on the rate: the long
        // transfer says 1.05, the short one 1.55; the fit leans long.
        let mut model = Records::default();
        let mut other = Records::default();
        for (j, m) in [(0, 100.0), (1, 1.0)] {
            model.transfers.push(transfer(j, 0.0, m));
            other.transfers.push(transfer(j, 0.0, m * 1.05 + 0.5));
        }
        let a = transfer_agreement(&model, &other);
        let want = (100.0 * 105.5 + 1.0 * 1.55) / (100.0 * 100.0 + 1.0);
        assert!((a.scale - want).abs() < 1e-12 && a.scale < 1.06, "{a:?}");
    }
}
