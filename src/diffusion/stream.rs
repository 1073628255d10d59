//! Task streams (seed 001 §5.2): independent tasks arriving over time, each
//! reading files of a dataset. The paper's workload: 10,000 files of 10 MB,
//! 10 ms of compute a task, arrivals ramping from 1/s by ×1.3 (rounded up)
//! every 60 s to at most 1,000/s — `A_i = min(ceil(1.3 A_{i-1}), 1000)` —
//! until 250,000 tasks (1,414.9 s), each file drawn uniformly. Constant rates,
//! recorded arrival times and Zipf popularity are the other choices.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::core::FileId;
use crate::core::farm::Task;

/// When tasks arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrivals {
    /// The paper's ramp: `start` tasks/s, times `factor` (rounded up) every
    /// `interval` seconds, capped at `max` tasks/s.
    Ramp {
        /// First rate (tasks/s).
        start: f64,
        /// Growth per interval.
        factor: f64,
        /// Seconds between increases.
        interval: f64,
        /// Highest rate (tasks/s).
        max: f64,
    },
    /// A constant rate (tasks/s).
    Constant(f64),
    /// Recorded arrival times (s), in order.
    Trace(Vec<f64>),
}

impl Arrivals {
    /// The paper's ramp: 1/s, ×1.3 every 60 s, at most 1,000/s.
    pub fn paper_ramp() -> Self {
        Arrivals::Ramp {
            start: 1.0,
            factor: 1.3,
            interval: 60.0,
            max: 1000.0,
        }
    }

    /// The first `n` arrival times; tasks within a second of one rate are
    /// evenly spaced.
    pub fn times(&self, n: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(n);
        match self {
            Arrivals::Ramp {
                start,
                factor,
                interval,
                max,
            } => {
                let (mut rate, mut t0) = (start.max(1e-9), 0.0);
                while out.len() < n {
                    let count = (rate * interval).round().max(1.0) as usize;
                    for k in 0..count.min(n - out.len()) {
                        out.push(t0 + k as f64 / rate);
                    }
                    t0 += interval;
                    rate = (rate * factor).ceil().min(*max);
                }
            }
            Arrivals::Constant(rate) => {
                out.extend((0..n).map(|k| k as f64 / rate.max(1e-9)));
            }
            Arrivals::Trace(times) => out.extend(times.iter().take(n)),
        }
        out
    }
}

/// Parses an arrival trace: one arrival time (nominal seconds) a line, the
/// first comma-separated column if there are more; `#` comments, blank lines
/// and a header line starting with a letter are skipped. Times must be ≥ 0
/// and in order. Errors give the line and what was expected.
pub fn parse_arrivals(text: &str) -> Result<Vec<f64>, (usize, String)> {
    let mut times: Vec<f64> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        let first = line.split(',').next().unwrap_or("").trim();
        if first.is_empty() || (times.is_empty() && first.starts_with(char::is_alphabetic)) {
            continue;
        }
        let bad = |what: String| (n + 1, format!("{what}, found `{line}`"));
        let t: f64 = first
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad("expected an arrival time in seconds ≥ 0".into()))?;
        if let Some(&last) = times.last()
            && t < last
        {
            return Err(bad(format!("expected times in order (after {last})")));
        }
        times.push(t);
    }
    if times.is_empty() {
        return Err((0, "expected at least one arrival time".into()));
    }
    Ok(times)
}

/// Which files tasks read.
#[derive(Debug, Clone, PartialEq)]
pub enum Popularity {
    /// Every file equally likely (the paper).
    Uniform,
    /// Zipf with exponent `s`: file `k` (from 0) drawn with weight
    /// `1 / (k + 1)^s`.
    Zipf(f64),
}

/// A stream of `tasks` tasks over `files` files, `per_task` files each,
/// seeded. A trace shorter than `tasks` gives that many tasks.
pub fn generate(
    tasks: usize,
    files: usize,
    per_task: usize,
    arrivals: &Arrivals,
    popularity: &Popularity,
    seed: u64,
) -> Vec<Task> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cumulative: Option<Vec<f64>> = match popularity {
        Popularity::Uniform => None,
        Popularity::Zipf(s) => {
            let mut acc = 0.0;
            Some(
                (0..files)
                    .map(|k| {
                        acc += 1.0 / ((k + 1) as f64).powf(*s);
                        acc
                    })
                    .collect(),
            )
        }
    };
    let draw = |rng: &mut ChaCha8Rng| -> FileId {
        match &cumulative {
            None => rng.random_range(0..files.max(1)),
            Some(c) => {
                let x = rng.random::<f64>() * c.last().copied().unwrap_or(0.0);
                c.partition_point(|&v| v < x).min(files.saturating_sub(1))
            }
        }
    };
    arrivals
        .times(tasks)
        .into_iter()
        .map(|arrival| Task {
            arrival,
            files: (0..per_task).map(|_| draw(&mut rng)).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_trace_parses_in_order_and_names_a_bad_line() {
        let t = parse_arrivals("time,note\n# warm-up\n0\n0.5, burst\n\n2\n").unwrap();
        assert_eq!(t, [0.0, 0.5, 2.0]);
        assert_eq!(parse_arrivals("1\n0.5\n").unwrap_err().0, 2, "out of order");
        let (line, msg) = parse_arrivals("1\nsoon\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(msg.contains("expected an arrival time"), "{msg}");
        assert!(parse_arrivals("# nothing\n").is_err());
    }

    #[test]
    fn the_papers_ramp_makes_250k_tasks_in_1415_seconds() {
        let times = Arrivals::paper_ramp().times(250_000);
        assert_eq!(times.len(), 250_000);
        let last = *times.last().unwrap();
        assert!((last - 1414.9).abs() < 0.01, "{last}");
        // Rates per interval: 1, 2, 3, 4, 6, 8, 11, … 836, 1000.
        let in_interval = |i: usize| {
            times
                .iter()
                .filter(|&&t| t >= i as f64 * 60.0 && t < (i + 1) as f64 * 60.0)
                .count()
        };
        assert_eq!(in_interval(0), 60);
        assert_eq!(in_interval(5), 8 * 60);
        assert_eq!(in_interval(22), 836 * 60);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn popularity_is_seeded_and_shaped() {
        let ramp = Arrivals::Constant(100.0);
        let a = generate(20_000, 100, 1, &ramp, &Popularity::Uniform, 7);
        assert_eq!(a, generate(20_000, 100, 1, &ramp, &Popularity::Uniform, 7));
        let mut counts = vec![0; 100];
        for t in &a {
            counts[t.files[0]] += 1;
        }
        assert!(
            counts.iter().all(|&c| (120..290).contains(&c)),
            "{counts:?}"
        );
        let z = generate(20_000, 100, 1, &ramp, &Popularity::Zipf(1.0), 7);
        let mut zc = vec![0; 100];
        for t in &z {
            zc[t.files[0]] += 1;
        }
        // Weight of file 0 over the harmonic number H_100 ≈ 5.19: about 19%.
        assert!((3300..4400).contains(&zc[0]), "{}", zc[0]);
        assert!(zc[0] > zc[1] && zc[1] > zc[9] && zc[9] > zc[99]);
        assert_eq!(
            Arrivals::Trace(vec![0.5, 2.0]).times(5),
            [0.5, 2.0],
            "a trace gives what it has"
        );
    }
}
