//! Weighted-Linear-Random (VDS, seed 002 §5): "the execution site is selected
//! randomly but sites with more processors receive more jobs": a site is drawn
//! with probability proportional to its CPU slots.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::core::{JobId, SiteId};
use crate::policy::{GridView, SiteSelector};

/// Draws an eligible site with weight = its CPUs, from a seeded generator.
pub struct WeightedLinearRandom {
    rng: ChaCha8Rng,
}

impl WeightedLinearRandom {
    /// A selector drawing from `rng`.
    pub fn new(rng: ChaCha8Rng) -> Self {
        WeightedLinearRandom { rng }
    }
}

impl SiteSelector for WeightedLinearRandom {
    fn select(&mut self, _job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let total: usize = eligible.iter().map(|&s| view.sites[s].cpus).sum();
        if total == 0 {
            return eligible[0];
        }
        let mut draw = self.rng.random_range(0..total);
        for &s in eligible {
            let w = view.sites[s].cpus;
            if draw < w {
                return s;
            }
            draw -= w;
        }
        eligible[eligible.len() - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{RunDag, SiteInfo, rls::Rls};
    use rand::SeedableRng;

    #[test]
    fn draws_in_proportion_to_cpus() {
        let site = |cpus| SiteInfo {
            name: String::new(),
            cpus,
            disk: 1,
            speed: 1.0,
            overhead: 0.0,
        };
        let sites = vec![site(1), site(3), site(6)];
        let (wf, rls) = (RunDag::default(), Rls::new(0));
        let view = GridView {
            active: &[0; 3],
            ..GridView::new(&wf, &sites, &rls)
        };
        let mut w = WeightedLinearRandom::new(ChaCha8Rng::seed_from_u64(1));
        let mut n = [0usize; 3];
        for _ in 0..10_000 {
            n[w.select(0, &view, &[0, 1, 2])] += 1;
        }
        assert!(
            (800..1200).contains(&n[0]) && (2700..3300).contains(&n[1]),
            "{n:?}"
        );
        assert!((5600..6400).contains(&n[2]), "{n:?}");
    }
}
