//! Seed 001's LAN experiment set (§5.2, figures 4–15): the runs the paper
//! reports, each a variation of one farm testbed, and the figures it
//! derives from them — speedup against first-available on the store,
//! performance index, slowdown (whole run and per arrival-rate step),
//! average response time, and throughput by where reads were served
//! (average and 99th percentile). `gridbed farm T --experiments DIR` runs
//! them in the simulator and writes the table and the figures.

use crate::core::farm::{FarmRun, FarmSpec, Task};

/// One run of the set: how it changes the testbed, and what the paper
/// measured for it (where the text gives a number).
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Short name (file names, table rows).
    pub name: &'static str,
    /// Dispatch policy.
    pub policy: &'static str,
    /// Cache per executor (bytes); 0 for no caching (every read from the
    /// store).
    pub cache: u64,
    /// Whether all executors are there from the start (no provisioner).
    pub fixed: bool,
    /// The paper's workload execution time (s).
    pub paper_makespan: Option<f64>,
    /// The paper's CPU hours.
    pub paper_cpu_hours: Option<f64>,
    /// The paper's average response time (s).
    pub paper_response: Option<f64>,
    /// The paper's read shares, as it states them.
    pub paper_reads: &'static str,
}

const GB: u64 = 1_000_000_000;

/// The paper's seven LAN runs (figures 4–10) and the static 64-executor
/// comparison of §5.2.4, the first-available one first (the speedup's
/// base).
pub fn paper_set() -> Vec<Experiment> {
    let gcc = "good-cache-compute[window=3200, threshold=0.8]";
    let run = |name, policy, cache, fixed, makespan, cpu, response, reads| Experiment {
        name,
        policy,
        cache,
        fixed,
        paper_makespan: makespan,
        paper_cpu_hours: cpu,
        paper_response: response,
        paper_reads: reads,
    };
    vec![
        run(
            "first-available",
            "first-available",
            0,
            false,
            Some(5011.0),
            None,
            Some(1870.0),
            "0 / 0 / 100%",
        ),
        run(
            "gcc-1GB",
            gcc,
            GB,
            false,
            Some(3762.0),
            None,
            None,
            "31% hits; 70% misses in its figure 11",
        ),
        run(
            "gcc-1.5GB",
            gcc,
            3 * GB / 2,
            false,
            Some(1596.0),
            None,
            None,
            "78 / 1 / 21%",
        ),
        run(
            "gcc-2GB",
            gcc,
            2 * GB,
            false,
            Some(1436.0),
            Some(24.0),
            None,
            "98% hits",
        ),
        run(
            "gcc-4GB",
            gcc,
            4 * GB,
            false,
            Some(1427.0),
            Some(17.0),
            Some(3.1),
            "88 / 6 / 6%",
        ),
        run(
            "gcc-4GB-static",
            gcc,
            4 * GB,
            true,
            None,
            Some(46.0),
            None,
            "—",
        ),
        run(
            "max-cache-hit-4GB",
            "max-cache-hit[window=3200]",
            4 * GB,
            false,
            Some(2888.0),
            None,
            None,
            "94.5 / – / 5.5%",
        ),
        run(
            "max-compute-util-4GB",
            "max-compute-util[window=3200]",
            4 * GB,
            false,
            Some(2037.0),
            None,
            None,
            "—",
        ),
    ]
}

impl Experiment {
    /// The testbed's farm changed into this run.
    pub fn spec(&self, base: &FarmSpec) -> FarmSpec {
        let mut s = base.clone();
        s.policy = self.policy.into();
        s.caching = self.cache > 0;
        if self.cache > 0 {
            s.cache = self.cache;
        }
        if self.fixed {
            s.drp = None;
        }
        s
    }
}

/// What seed 001 derives from one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Figures {
    /// The run's name.
    pub name: String,
    /// Workload execution time (s).
    pub makespan: f64,
    /// Ideal makespan over the makespan.
    pub efficiency: f64,
    /// The base run's makespan over this one's (SP).
    pub speedup: f64,
    /// CPU hours of registered executors.
    pub cpu_hours: f64,
    /// Speedup per CPU hour, normalised so that the set's best is 1 (PI).
    pub performance_index: f64,
    /// Makespan over the ideal (SL).
    pub slowdown: f64,
    /// Mean response time (s).
    pub response_mean: f64,
    /// Shares of reads (%): local, global, miss.
    pub reads_pct: [f64; 3],
    /// Average throughput over the makespan (Gb/s) by where reads were
    /// served: local, global, store.
    pub throughput_gbps: [f64; 3],
    /// 99th percentile of the per-interval throughput (Gb/s).
    pub throughput_p99_gbps: f64,
    /// Busy slots over registered slots.
    pub utilization: f64,
}

/// The figures of `runs` (name and run), the first being the speedup's
/// base; `ideal` is the ideal makespan (s).
pub fn figures(runs: &[(String, FarmRun)], spec: &FarmSpec, ideal: f64) -> Vec<Figures> {
    let base = runs.first().map_or(1.0, |r| r.1.makespan);
    let size = spec.file_size as f64;
    let mut out: Vec<Figures> = runs
        .iter()
        .map(|(name, r)| {
            let reads = (r.local_hits + r.global_hits + r.misses).max(1) as f64;
            let gbps = |n: u64| n as f64 * size * 8.0 / r.makespan.max(1e-9) / 1e9;
            let speedup = base / r.makespan.max(1e-9);
            Figures {
                name: name.clone(),
                makespan: r.makespan,
                efficiency: ideal / r.makespan.max(1e-9),
                speedup,
                cpu_hours: r.cpu_hours,
                performance_index: speedup / r.cpu_hours.max(1e-9),
                slowdown: r.makespan / ideal.max(1e-9),
                response_mean: r.response_mean,
                reads_pct: [r.local_hits, r.global_hits, r.misses]
                    .map(|n| 100.0 * n as f64 / reads),
                throughput_gbps: [r.local_hits, r.global_hits, r.misses].map(gbps),
                throughput_p99_gbps: p99_throughput(r, spec.interval),
                utilization: r.utilization,
            }
        })
        .collect();
    let best = out
        .iter()
        .map(|f| f.performance_index)
        .fold(0.0_f64, f64::max);
    for f in &mut out {
        f.performance_index /= best.max(1e-12);
    }
    out
}

/// The 99th percentile of the per-interval throughput of `r` (Gb/s): the
/// bytes its ended tasks read per `interval` seconds.
fn p99_throughput(r: &FarmRun, interval: f64) -> f64 {
    let mut v: Vec<f64> = r
        .intervals
        .iter()
        .map(|i| i.read as f64 * 8.0 / interval / 1e9)
        .collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let k = ((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1;
    v[k]
}

/// Slowdown per arrival-rate step (figure 14): for the tasks that arrived
/// in each `step` seconds, how long until the last of them ended, from the
/// step's start, over the step's length — 1 when the step's tasks end as
/// they arrive, 5 when its last task ended four steps' time after the step.
/// Each point is (arrival rate in tasks/s, slowdown).
pub fn slowdown_by_step(r: &FarmRun, step: f64, interval: f64) -> Vec<(f64, f64)> {
    let per = ((step / interval).round() as usize).max(1);
    r.intervals
        .chunks(per)
        .filter_map(|c| {
            let arrived: u64 = c.iter().map(|i| i.arrived).sum();
            if arrived == 0 {
                return None;
            }
            let start = c[0].t;
            let len = interval * c.len() as f64;
            let end = c.iter().map(|i| i.last_end).fold(start, f64::max);
            Some((arrived as f64 / len, (end - start) / len))
        })
        .collect()
}

/// The ideal makespan of `tasks`: the last arrival plus one task's
/// compute (the paper's 1,415 s).
pub fn ideal_makespan(tasks: &[Task], spec: &FarmSpec) -> f64 {
    tasks.last().map_or(0.0, |t| t.arrival) + spec.compute
}

/// The set's table as CSV, one row a run, the paper's numbers beside ours.
pub fn summary_csv(set: &[Experiment], figs: &[Figures]) -> String {
    use std::fmt::Write as _;
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
    let mut out = String::from(
        "run,policy,cache_bytes,provisioner,makespan_s,paper_makespan_s,efficiency,speedup,\
         cpu_hours,paper_cpu_hours,performance_index,slowdown,response_mean_s,paper_response_s,\
         local_pct,global_pct,miss_pct,paper_reads,throughput_local_gbps,throughput_global_gbps,\
         throughput_store_gbps,throughput_p99_gbps,utilization\n",
    );
    for (e, f) in set.iter().zip(figs) {
        let _ = writeln!(
            out,
            "{},\"{}\",{},{},{:.1},{},{:.3},{:.3},{:.2},{},{:.3},{:.3},{:.2},{},{:.2},{:.2},{:.2},\"{}\",{:.3},{:.3},{:.3},{:.3},{:.3}",
            e.name,
            e.policy,
            e.cache,
            !e.fixed,
            f.makespan,
            opt(e.paper_makespan),
            f.efficiency,
            f.speedup,
            f.cpu_hours,
            opt(e.paper_cpu_hours),
            f.performance_index,
            f.slowdown,
            f.response_mean,
            opt(e.paper_response),
            f.reads_pct[0],
            f.reads_pct[1],
            f.reads_pct[2],
            e.paper_reads,
            f.throughput_gbps[0],
            f.throughput_gbps[1],
            f.throughput_gbps[2],
            f.throughput_p99_gbps,
            f.utilization
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::farm::Interval;

    fn interval(t: f64, arrived: u64, last_end: f64, read: u64) -> Interval {
        Interval {
            t,
            arrived,
            last_end,
            read,
            ..Default::default()
        }
    }

    #[test]
    fn a_step_whose_tasks_end_as_they_arrive_has_slowdown_one() {
        let r = FarmRun {
            intervals: vec![
                interval(0.0, 10, 9.5, 0),
                interval(10.0, 10, 20.0, 0),
                // The next step's last task ends 30 s after the step.
                interval(20.0, 40, 30.0, 0),
                interval(30.0, 40, 70.0, 0),
            ],
            ..Default::default()
        };
        let s = slowdown_by_step(&r, 20.0, 10.0);
        assert_eq!(s, vec![(1.0, 1.0), (4.0, 2.5)]);
    }

    #[test]
    fn speedup_is_against_the_first_run_and_the_best_index_is_one() {
        let run = |makespan: f64, cpu_hours: f64| FarmRun {
            makespan,
            cpu_hours,
            local_hits: 50,
            misses: 50,
            intervals: vec![interval(0.0, 1, 1.0, 1_000_000_000)],
            ..Default::default()
        };
        let spec = crate::sim::farm::test_spec("first-available", 1, 0, false);
        let runs = vec![
            ("store".to_string(), run(400.0, 10.0)),
            ("cached".to_string(), run(100.0, 5.0)),
        ];
        let f = figures(&runs, &spec, 100.0);
        assert_eq!((f[0].speedup, f[1].speedup), (1.0, 4.0));
        assert_eq!(f[1].performance_index, 1.0);
        assert!((f[0].performance_index - (0.1 / 0.8)).abs() < 1e-12);
        assert_eq!((f[0].slowdown, f[1].efficiency), (4.0, 1.0));
        assert_eq!(f[1].reads_pct, [50.0, 0.0, 50.0]);
        // 50 reads of 10 MB in 100 s: 0.04 Gb/s from each of local and store.
        assert!((f[1].throughput_gbps[0] - 0.04).abs() < 1e-12);
        // One interval of 10 s with 1 GB read: 0.8 Gb/s.
        assert!((f[1].throughput_p99_gbps - 0.8).abs() < 1e-12);
    }
}
