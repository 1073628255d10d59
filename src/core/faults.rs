//! Faults on purpose: seeded schedules of what goes wrong, stepped by both
//! engines at the same points so that a run with faults can be validated
//! like any other (DESIGN.md: "a corrupted or truncated transfer is detected
//! by its sha256 and retried").
//!
//! A schedule answers one question per step — is this one faulty? — from a
//! fixed prefix (`first`: the first n steps) and a seeded probability for
//! every later step. The engines decide where a step is; for the file
//! server's corruption it is each response that starts to stream, after the
//! connection slot and the latency (live: the gridftp endpoint flips one byte
//! of it, so the destination's sha256 check fails; sim: the transfer ends as
//! [`crate::core::TransferFailure::Corrupt`] when its bytes have flowed).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::SiteId;

/// Which steps of one kind fail.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultSpec {
    /// The first this many steps fail.
    pub first: u32,
    /// Every later step fails with this probability (seeded).
    pub probability: f64,
}

/// The faults a site injects.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SiteFaults {
    /// Responses of its file server that are corrupted (one byte flipped).
    pub corrupt_responses: FaultSpec,
}

impl SiteFaults {
    /// The seed of site `site`'s schedules in a run seeded `run_seed` (the
    /// same in both engines, distinct from the background load's).
    pub fn seed(run_seed: u64, site: SiteId) -> u64 {
        run_seed ^ 0xd1b5_4a32_d192_ed03u64.wrapping_mul(site as u64 + 1)
    }
}

/// A [`FaultSpec`] as it is stepped.
#[derive(Debug, Clone)]
pub struct FaultSchedule {
    spec: FaultSpec,
    steps: u64,
    faults: u64,
    rng: Option<Box<ChaCha8Rng>>,
}

impl FaultSchedule {
    /// `spec`, seeded.
    pub fn new(spec: FaultSpec, seed: u64) -> Self {
        FaultSchedule {
            spec,
            steps: 0,
            faults: 0,
            rng: (spec.probability > 0.0).then(|| Box::new(ChaCha8Rng::seed_from_u64(seed))),
        }
    }

    /// A schedule that never fails.
    pub fn none() -> Self {
        FaultSchedule::new(FaultSpec::default(), 0)
    }

    /// The next step: whether it fails.
    pub fn step(&mut self) -> bool {
        self.steps += 1;
        let fail = if self.steps <= u64::from(self.spec.first) {
            true
        } else {
            let p = self.spec.probability.clamp(0.0, 1.0);
            self.rng.as_mut().is_some_and(|r| r.random_bool(p))
        };
        self.faults += u64::from(fail);
        fail
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Steps that failed so far.
    pub fn faults(&self) -> u64 {
        self.faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_steps_fail_then_none() {
        let mut s = FaultSchedule::new(
            FaultSpec {
                first: 3,
                probability: 0.0,
            },
            1,
        );
        let got: Vec<bool> = (0..6).map(|_| s.step()).collect();
        assert_eq!(got, [true, true, true, false, false, false]);
        assert_eq!((s.steps(), s.faults()), (6, 3));
        assert!(!FaultSchedule::none().step());
    }

    #[test]
    fn a_probability_is_seeded_and_near_its_rate() {
        let spec = FaultSpec {
            first: 0,
            probability: 0.1,
        };
        let run = |seed| {
            let mut s = FaultSchedule::new(spec, seed);
            (0..10_000).map(|_| s.step()).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5), "same seed, same schedule");
        assert_ne!(run(5), run(6));
        let n = run(5).iter().filter(|&&f| f).count();
        assert!((800..1200).contains(&n), "{n} of 10,000 at 10%");
    }
}
