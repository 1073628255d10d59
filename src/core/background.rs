//! Other users of a site (seed 002's production grid): slots taken by
//! background load over time, so that a site's free capacity changes while a
//! workflow runs. Both engines step the same seeded chain at the same nominal
//! instants, so sim and live see identical load.
//!
//! `markov` model: each slot is busy or free and may change every `period`
//! nominal seconds — a free slot becomes busy with probability `mean_busy / 2`,
//! a busy one frees with probability `(1 − mean_busy) / 2` — so the busy
//! fraction wanders around `mean_busy` (its stationary mean) with memory of
//! about two periods. A job already running keeps its slot: load takes slots
//! as they free up, as a batch system would.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The background-load model of a site.
#[derive(Debug, Clone, PartialEq)]
pub struct Background {
    /// Mean fraction of the slots busy.
    pub mean_busy: f64,
    /// Nominal seconds between changes.
    pub period: f64,
}

/// The load of one site as it evolves.
#[derive(Debug, Clone)]
pub struct Load {
    model: Background,
    busy: Vec<bool>,
    rng: ChaCha8Rng,
}

impl Load {
    /// A site of `cpus` slots, seeded; the first state is drawn from the
    /// stationary distribution.
    pub fn new(model: Background, cpus: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let busy = (0..cpus)
            .map(|_| rng.random_bool(model.mean_busy.clamp(0.0, 1.0)))
            .collect();
        Load { model, busy, rng }
    }

    /// Slots busy now.
    pub fn busy(&self) -> usize {
        self.busy.iter().filter(|&&b| b).count()
    }

    /// The change period (nominal s).
    pub fn period(&self) -> f64 {
        self.model.period
    }

    /// Advances one period; returns the slots busy now.
    pub fn step(&mut self) -> usize {
        let up = (self.model.mean_busy / 2.0).clamp(0.0, 1.0);
        let down = ((1.0 - self.model.mean_busy) / 2.0).clamp(0.0, 1.0);
        for b in &mut self.busy {
            let flip = self.rng.random_bool(if *b { down } else { up });
            if flip {
                *b = !*b;
            }
        }
        self.busy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_near_its_mean() {
        let model = Background {
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
}
