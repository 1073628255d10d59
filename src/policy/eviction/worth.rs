//! File worth (seed 003 §6.1): `worth = prob_use × size / num_copies`, with
//! `prob_use = Σ (1/2)^(λ·t_i)` over the past uses of the file, `t_i` the
//! minutes since the i-th job using it was submitted — LRFU (Lee et al.),
//! which is LFU at λ = 0 (prob_use counts the uses) and LRU at λ = 1 (the
//! latest use outweighs all older ones). Larger files are worth more (they
//! cost more to bring back), and a file with many copies in the grid less.
//! Files go in increasing worth.
//!
//! It ranks twice. After each job, the manager's cache maintenance weighs a
//! site's cached files with [`CacheWorth`] as the paper does: uses in
//! minutes, copies from the RLS. When a pool must make room at once for a
//! write, it ranks by [`EvictionPolicy`]: a pool knows neither the time nor
//! the grid, so there a use is a tick of its own access clock and a file
//! has one copy. With λ = 1 that is exactly LRU, with λ = 0 LFU.

use rustc_hash::FxHashMap as HashMap;

use crate::core::FileId;
use crate::policy::{CacheWorth, CachedFile, Candidate, EvictionPolicy, Params};

/// LRFU worth with decay `lambda` per minute.
#[derive(Debug, Clone, Default)]
pub struct Worth {
    lambda: f64,
    /// Pool path, per file: its last access tick and log2 Σ 2^(λ·t_i),
    /// a form whose order does not change as time passes.
    crf: HashMap<FileId, (u64, f64)>,
}

impl Worth {
    /// Worth with LRFU decay `lambda` (0 = LFU … 1 = LRU).
    pub fn new(lambda: f64) -> Self {
        Worth {
            lambda,
            crf: HashMap::default(),
        }
    }

    /// From inline parameters: `worth[lambda=0.5]` (default 0.5).
    pub fn with_params(p: &Params) -> Result<Self, String> {
        let lambda: f64 = p.get("lambda", 0.5)?;
        if !(lambda.is_finite() && (0.0..=1.0).contains(&lambda)) {
            return Err(format!("lambda: expected 0 to 1, found {lambda}"));
        }
        Ok(Worth::new(lambda))
    }

    /// `prob_use` now: Σ (1/2)^(λ·t_i), t_i in minutes.
    pub fn prob_use(&self, uses: &[f64], now: f64) -> f64 {
        uses.iter()
            .map(|&t| (-self.lambda * (now - t).max(0.0) / 60.0).exp2())
            .sum()
    }
}

impl CacheWorth for Worth {
    fn worth(&mut self, f: &CachedFile<'_>) -> f64 {
        self.prob_use(f.uses, f.now) * f.size as f64 / f.copies.max(1) as f64
    }
}

/// log2(2^a + 2^b) without overflow.
fn log2_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp2().ln_1p() / std::f64::consts::LN_2
}

/// An order-preserving map of a finite f64 onto u64.
fn sortable(x: f64) -> u64 {
    let bits = x.to_bits();
    if x.is_sign_negative() {
        !bits
    } else {
        bits | (1 << 63)
    }
}

impl EvictionPolicy for Worth {
    fn key(&mut self, c: &Candidate) -> u64 {
        let lambda = self.lambda;
        let (last, log_s) = self
            .crf
            .entry(c.file)
            .or_insert((c.last_access, lambda * c.last_access as f64));
        if *last != c.last_access {
            // A new use at tick `last_access`.
            *log_s = log2_add(*log_s, lambda * c.last_access as f64);
            *last = c.last_access;
        }
        // log2(worth) up to the same decay for every file.
        sortable(*log_s + (c.size.max(1) as f64).log2())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::eviction::{Lfu, Lru};

    /// Four equal files and a history of uses (file, minute): the order in
    /// which `policy` would delete them at minute 100.
    fn order(policy: &mut dyn CacheWorth, history: &[(FileId, f64)]) -> Vec<FileId> {
        let uses = |f: FileId| -> Vec<f64> {
            history
                .iter()
                .filter(|u| u.0 == f)
                .map(|u| u.1 * 60.0)
                .collect()
        };
        let mut w: Vec<(f64, FileId)> = (0..4)
            .map(|f| {
                let u = uses(f);
                let c = CachedFile {
                    file: f,
                    size: 1000,
                    copies: 1,
                    uses: &u,
                    now: 6000.0,
                };
                (policy.worth(&c), f)
            })
            .collect();
        w.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        w.into_iter().map(|(_, f)| f).collect()
    }

    /// File 0 used often long ago, 3 once just now, 1 and 2 in between.
    const HISTORY: &[(FileId, f64)] = &[
        (0, 1.0),
        (0, 2.0),
        (0, 3.0),
        (0, 4.0),
        (1, 10.0),
        (1, 11.0),
        (2, 20.0),
        (3, 99.0),
    ];

    #[test]
    fn lambda_0_evicts_like_lfu_and_lambda_1_like_lru() {
        let lfu = order(&mut Lfu, HISTORY);
        assert_eq!(lfu, [2, 3, 1, 0]);
        assert_eq!(order(&mut Worth::new(0.0), HISTORY), [2, 3, 1, 0]);
        let lru = order(&mut Lru, HISTORY);
        assert_eq!(lru, [0, 1, 2, 3]);
        assert_eq!(order(&mut Worth::new(1.0), HISTORY), lru);
        // In between, frequency and recency trade: 0's four old uses are
        // worth less than 2's single later one at λ = 0.5.
        assert_eq!(order(&mut Worth::new(0.5), HISTORY), [0, 1, 2, 3]);
        assert_eq!(order(&mut Worth::new(0.05), HISTORY), [2, 1, 0, 3]);
    }

    #[test]
    fn bigger_files_are_worth_more_and_more_copies_less() {
        let mut w = Worth::new(0.5);
        let uses = [0.0];
        let f = |size, copies| CachedFile {
            file: 0,
            size,
            copies,
            uses: &uses,
            now: 60.0,
        };
        assert!(w.worth(&f(2000, 1)) > w.worth(&f(1000, 1)));
        assert!(w.worth(&f(1000, 2)) < w.worth(&f(1000, 1)));
        assert!((w.worth(&f(1000, 1)) - 1000.0 * 0.5f64.powf(0.5)).abs() < 1e-9);
    }

    #[test]
    fn in_a_pool_lambda_1_ranks_like_lru_and_lambda_0_like_lfu() {
        let c = |file, last_access, accesses| Candidate {
            file,
            size: 10,
            inserted: 0,
            last_access,
            accesses,
        };
        // Accesses in clock order: file 0 at 1, 2, 3; file 1 at 4; file 2 at 5.
        let seq = [(0, 1, 1), (0, 2, 2), (0, 3, 3), (1, 4, 1), (2, 5, 1)];
        let rank = |mut p: Box<dyn EvictionPolicy>| {
            let mut keys = [0u64; 3];
            for &(f, t, n) in &seq {
                keys[f] = p.key(&c(f, t, n));
            }
            let mut files = vec![0, 1, 2];
            files.sort_by_key(|&f| (keys[f], f));
            files
        };
        assert_eq!(rank(Box::new(Worth::new(1.0))), rank(Box::new(Lru)));
        assert_eq!(rank(Box::new(Worth::new(1.0))), [0, 1, 2]);
        // LFU: file 0 (3 uses) last; 1 and 2 tie on count.
        assert_eq!(rank(Box::new(Worth::new(0.0)))[2], 0);
    }
}
