//! Per-site state over nominal time — queue length, running jobs, storage
//! used — sampled by both engines into the run record, so that `gridbed
//! report` can draw a finished run (the offline twin of the Grafana panels).
//!
//! Samples are taken at least `step` nominal seconds apart; when there are
//! more than [`Timeline::MAX`], every other one is dropped and the step
//! doubles, so a run of any length keeps a bounded, evenly spaced history.

use serde::{Deserialize, Serialize};

/// One instant of every site, in scenario order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Nominal seconds since the run started.
    pub t: f64,
    /// Jobs waiting in each site's queue.
    pub queued: Vec<u32>,
    /// Jobs running at each site.
    pub running: Vec<u32>,
    /// Nominal bytes held in each site's pool.
    pub used: Vec<u64>,
}

/// The sampled history of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Nominal seconds between samples (it doubles as samples are thinned).
    pub step: f64,
    /// The samples, in time order.
    pub samples: Vec<Sample>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(1.0)
    }
}

impl Timeline {
    /// Samples kept before thinning.
    pub const MAX: usize = 2000;

    /// An empty history sampled every `step` nominal seconds at first.
    pub fn new(step: f64) -> Self {
        Timeline {
            step,
            samples: Vec::new(),
        }
    }

    /// Whether a sample is due at `now`.
    pub fn due(&self, now: f64) -> bool {
        self.samples.last().is_none_or(|s| now >= s.t + self.step)
    }

    /// Appends a sample (thinning when too many).
    pub fn push(&mut self, sample: Sample) {
        self.samples.push(sample);
        if self.samples.len() > Self::MAX {
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.step *= 2.0;
        }
    }

    /// Appends the final state, replacing a sample at the same instant.
    pub fn finish(&mut self, sample: Sample) {
        if self.samples.last().is_some_and(|s| s.t >= sample.t) {
            self.samples.pop();
        }
        self.samples.push(sample);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: f64) -> Sample {
        Sample {
            t,
            queued: vec![0],
            running: vec![0],
            used: vec![0],
        }
    }

    #[test]
    fn samples_stay_bounded_and_evenly_spaced() {
        let mut tl = Timeline::new(1.0);
        let mut t = 0.0;
        while t < 10_000.0 {
            if tl.due(t) {
                tl.push(at(t));
            }
            t += 0.25;
        }
        assert!(tl.samples.len() <= Timeline::MAX);
        assert!(tl.samples.len() > Timeline::MAX / 4);
        assert_eq!(tl.step, 8.0);
        let gaps: Vec<f64> = tl.samples.windows(2).map(|w| w[1].t - w[0].t).collect();
        assert!(gaps.iter().all(|&g| g >= 1.0), "{gaps:?}");
        tl.finish(at(10_000.0));
        assert_eq!(tl.samples.last().unwrap().t, 10_000.0);
    }
}
