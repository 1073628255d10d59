//! Other users of a site (seed 002's production grid): slots taken by
//! background load over time, so that a site's free capacity changes while a
//! workflow runs. Both engines step the same load at the same nominal
//! instants, so sim and live see identical load. A job already running keeps
//! its slot: load takes slots as they free up, as a batch system would.
//!
//! * `markov`: each slot is busy or free and may change every `period` nominal
//!   seconds — a free slot becomes busy with probability `mean_busy / 2`, a
//!   busy one frees with probability `(1 − mean_busy) / 2` — so the busy
//!   fraction wanders around `mean_busy` (its stationary mean) with memory of
//!   about two periods. Seeded per site.
//! * `trace`: a recorded history of (nominal time, busy slots) points, e.g.
//!   from a batch system's accounting; the load holds each value from its time
//!   to the next point (none before the first).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The background-load model of a site.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Background {
    /// Slots flip busy/free at random every `period`.
    Markov {
        /// Mean fraction of the slots busy.
        mean_busy: f64,
        /// Nominal seconds between changes.
        period: f64,
    },
    /// A recorded history: (nominal time, busy slots), times non-decreasing.
    Trace(Vec<(f64, usize)>),
}

/// The load of one site as it evolves.
#[derive(Debug, Clone)]
pub struct Load {
    state: State,
    cpus: usize,
    busy: usize,
}

#[derive(Debug, Clone)]
enum State {
    Markov {
        mean_busy: f64,
        period: f64,
        steps: u64,
        slots: Vec<bool>,
        rng: Box<ChaCha8Rng>,
    },
    Trace {
        points: Vec<(f64, usize)>,
        next: usize,
    },
}

impl Load {
    /// A site of `cpus` slots, seeded. A Markov chain starts from its
    /// stationary distribution; a trace from its points at time 0.
    pub fn new(model: Background, cpus: usize, seed: u64) -> Self {
        let state = match model {
            Background::Markov { mean_busy, period } => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let slots = (0..cpus)
                    .map(|_| rng.random_bool(mean_busy.clamp(0.0, 1.0)))
                    .collect();
                State::Markov {
                    mean_busy,
                    period,
                    steps: 0,
                    slots,
                    rng: Box::new(rng),
                }
            }
            Background::Trace(points) => State::Trace { points, next: 0 },
        };
        let mut load = Load {
            state,
            cpus,
            busy: 0,
        };
        load.busy = load.count();
        while load.next_change() == Some(0.0) {
            load.step();
        }
        load
    }

    fn count(&self) -> usize {
        match &self.state {
            State::Markov { slots, .. } => slots.iter().filter(|&&b| b).count(),
            State::Trace { points, next } => next
                .checked_sub(1)
                .map_or(0, |i| points[i].1.min(self.cpus)),
        }
    }

    /// Slots busy now.
    pub fn busy(&self) -> usize {
        self.busy
    }

    /// The nominal instant of the next change, if the load changes again.
    pub fn next_change(&self) -> Option<f64> {
        match &self.state {
            State::Markov { period, steps, .. } => Some((*steps + 1) as f64 * period),
            State::Trace { points, next } => points.get(*next).map(|p| p.0),
        }
    }

    /// Moves to the next change; returns the slots busy now.
    pub fn step(&mut self) -> usize {
        match &mut self.state {
            State::Markov {
                mean_busy,
                steps,
                slots,
                rng,
                ..
            } => {
                let up = (*mean_busy / 2.0).clamp(0.0, 1.0);
                let down = ((1.0 - *mean_busy) / 2.0).clamp(0.0, 1.0);
                for b in slots.iter_mut() {
                    if rng.random_bool(if *b { down } else { up }) {
                        *b = !*b;
                    }
                }
                *steps += 1;
            }
            State::Trace { points, next } => {
                // Points at one instant apply together: the last one holds.
                let t = points.get(*next).map(|p| p.0);
                while *next < points.len() && Some(points[*next].0) == t {
                    *next += 1;
                }
            }
        }
        self.busy = self.count();
        self.busy
    }
}

/// Parses a trace file: one `time, busy` point a line (nominal seconds, busy
/// slots), `#` comments and blank lines ignored, an optional `time,busy`
/// header. Errors say the line and what was expected.
pub fn parse_trace(text: &str) -> Result<Vec<(f64, usize)>, (usize, String)> {
    let mut points: Vec<(f64, usize)> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || (points.is_empty() && line.replace(' ', "") == "time,busy") {
            continue;
        }
        let bad = |what: &str| (n + 1, format!("{what}, found `{line}`"));
        let (t, b) = line
            .split_once(',')
            .ok_or_else(|| bad("expected `time, busy`"))?;
        let t: f64 = t
            .trim()
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad("expected a time in nominal seconds ≥ 0"))?;
        let b: usize = b
            .trim()
            .parse()
            .map_err(|_| bad("expected a whole number of busy slots ≥ 0"))?;
        if let Some(&(last, _)) = points.last()
            && t < last
        {
            return Err(bad(&format!("expected times in order (after {last})")));
        }
        points.push((t, b));
    }
    if points.is_empty() {
        return Err((0, "expected at least one `time, busy` point".into()));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_near_its_mean() {
        let model = Background::Markov {
            mean_busy: 0.6,
            period: 600.0,
        };
        let run = |seed| {
            let mut l = Load::new(model.clone(), 100, seed);
            (0..2000).map(|_| l.step()).collect::<Vec<_>>()
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_ne!(a, run(2));
        let mean = a.iter().sum::<usize>() as f64 / a.len() as f64;
        assert!((55.0..65.0).contains(&mean), "{mean}");
    }

    #[test]
    fn a_trace_holds_each_point_until_the_next_and_is_clamped_to_the_slots() {
        let points = parse_trace("time,busy\n# a comment\n0, 2\n100, 5\n100, 9\n250,0\n").unwrap();
        assert_eq!(points, vec![(0.0, 2), (100.0, 5), (100.0, 9), (250.0, 0)]);
        let mut l = Load::new(Background::Trace(points), 8, 1);
        assert_eq!((l.busy(), l.next_change()), (2, Some(100.0)));
        assert_eq!(l.step(), 8, "the last point of an instant holds, clamped");
        assert_eq!(l.next_change(), Some(250.0));
        assert_eq!(l.step(), 0);
        assert_eq!(l.next_change(), None);
        let late = Load::new(Background::Trace(vec![(50.0, 3)]), 8, 1);
        assert_eq!((late.busy(), late.next_change()), (0, Some(50.0)));
    }

    #[test]
    fn a_bad_trace_names_the_line() {
        for (text, line, what) in [
            ("0,1\n5\n", 2, "expected `time, busy`"),
            ("0,1\n-3,1\n", 2, "time in nominal seconds"),
            ("0,1\n5,x\n", 2, "whole number"),
            ("10,1\n5,1\n", 2, "in order"),
            ("# nothing\n", 0, "at least one"),
        ] {
            let (l, msg) = parse_trace(text).unwrap_err();
            assert_eq!(l, line, "{text}");
            assert!(msg.contains(what), "{text}: {msg}");
        }
    }
}
