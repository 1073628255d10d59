//! The data-diffusion farm's summary view (seed 001 §5, figures 4–10):
//! throughput against the ideal, the wait queue, executors allocated and
//! busy, and where reads were served, per interval, as one SVG; and the
//! comparison figures of an experiment set (figures 12–15).

use super::plot::{Group, Panel, PlotError, Series, grouped_bars, line_chart, stacked};
use crate::core::farm::{FarmRun, FarmSpec, Interval};
use crate::diffusion::experiments::Figures;

/// The summary view of seed 001's figures 4–10 as an SVG at `path`:
/// throughput vs the ideal, the wait queue, executors allocated and busy,
/// and where reads were served, per interval.
pub fn summary_svg(
    run: &FarmRun,
    path: &std::path::Path,
    title: &str,
    spec: &FarmSpec,
) -> Result<(), PlotError> {
    let step = if spec.interval > 0.0 {
        spec.interval
    } else {
        60.0
    };
    let line = |name: &str, f: &dyn Fn(&Interval) -> f64| Series {
        name: name.into(),
        points: run.intervals.iter().map(|i| (i.t, f(i))).collect(),
    };
    let gbps = |bytes: f64| bytes * 8.0 / step / 1e9;
    let share = |n: u64, i: &Interval| {
        let all = (i.local + i.global + i.miss).max(1) as f64;
        100.0 * n as f64 / all
    };
    let size = spec.file_size as f64;
    let panels = [
        Panel {
            title: "Throughput".into(),
            y_label: "Gb/s".into(),
            series: vec![
                line("ideal (files the arrivals read × file size)", &|i| {
                    gbps(i.arrived_reads as f64 * size)
                }),
                line("measured (reads of ended tasks)", &|i| gbps(i.read as f64)),
            ],
        },
        Panel {
            title: "Wait queue".into(),
            y_label: "tasks".into(),
            series: vec![line("wait queue length", &|i| i.queue as f64)],
        },
        Panel {
            title: "Executors".into(),
            y_label: "executors".into(),
            series: vec![
                line("allocated", &|i| i.executors as f64),
                line("busy", &|i| i.busy as f64),
            ],
        },
        Panel {
            title: "Where reads were served".into(),
            y_label: "% of reads".into(),
            series: vec![
                line("cache hit local", &|i| share(i.local, i)),
                line("cache hit global", &|i| share(i.global, i)),
                line("cache miss (store)", &|i| share(i.miss, i)),
            ],
        },
    ];
    stacked(path, title, "time (s)", &panels)
}

/// Seed 001's comparison figures of an experiment set into `dir`:
/// throughput by source and its 99th percentile (figure 12), speedup and
/// performance index (13), slowdown per arrival-rate step (14) and average
/// response time (15, on a log10 axis). `steps` holds each run's
/// (arrival rate, slowdown) points.
pub fn experiment_figures(
    dir: &std::path::Path,
    figs: &[Figures],
    steps: &[Vec<(f64, f64)>],
) -> Result<(), PlotError> {
    let names: Vec<String> = figs.iter().map(|f| f.name.clone()).collect();
    let group = |name: &str, f: &dyn Fn(&Figures) -> f64| Group {
        name: name.into(),
        values: figs.iter().map(f).collect(),
    };
    grouped_bars(
        &dir.join("throughput.svg"),
        "Average and peak (99th percentile) throughput",
        "Gb/s",
        &names,
        &[
            group("local cache", &|f| f.throughput_gbps[0]),
            group("remote cache", &|f| f.throughput_gbps[1]),
            group("store", &|f| f.throughput_gbps[2]),
            group("peak (p99 of intervals)", &|f| f.throughput_p99_gbps),
        ],
    )?;
    grouped_bars(
        &dir.join("speedup-pi.svg"),
        "Speedup (vs first-available) and performance index",
        "SP, PI",
        &names,
        &[
            group("speedup", &|f| f.speedup),
            group("performance index", &|f| f.performance_index),
        ],
    )?;
    let series: Vec<Series> = figs
        .iter()
        .zip(steps)
        .map(|(f, pts)| Series {
            name: f.name.clone(),
            points: pts.clone(),
        })
        .collect();
    line_chart(
        &dir.join("slowdown.svg"),
        "Slowdown per arrival-rate step",
        "arrival rate (tasks/s)",
        "slowdown",
        &series,
        &[],
    )?;
    grouped_bars(
        &dir.join("response.svg"),
        "Average response time",
        "log10 of seconds",
        &names,
        &[group("mean response time (log10 s)", &|f| {
            f.response_mean.max(1e-3).log10().max(0.0)
        })],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diffusion::stream::{Arrivals, Popularity, generate};

    #[test]
    fn the_summary_view_draws_every_panel_from_the_intervals() {
        let tasks = generate(
            2000,
            50,
            1,
            &Arrivals::Constant(50.0),
            &Popularity::Uniform,
            2,
        );
        let s = crate::sim::farm::test_spec("good-cache-compute", 4, 200_000_000, true);
        let r = crate::sim::farm::run(&s, &tasks).unwrap();
        let arrived: u64 = r.intervals.iter().map(|i| i.arrived).sum();
        let done: u64 = r.intervals.iter().map(|i| i.done).sum();
        assert_eq!((arrived, done), (2000, 2000));
        let reads: u64 = r
            .intervals
            .iter()
            .map(|i| i.local + i.global + i.miss)
            .sum();
        assert_eq!(reads, r.local_hits + r.global_hits + r.misses);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("view.svg");
        summary_svg(&r, &path, "t", &s).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for panel in [
            "Throughput",
            "Wait queue",
            "Executors",
            "Where reads were served",
        ] {
            assert!(svg.contains(panel), "{panel}");
        }
    }
}
