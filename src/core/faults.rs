//! Faults on purpose: seeded schedules of what goes wrong, stepped by both
//! engines at the same points so that a run with faults can be validated
//! like any other (DESIGN.md: "a corrupted or truncated transfer is detected
//! by its sha256 and retried").
//!
//! Two kinds, both from the testbed's `[[fault]]` table:
//!
//! * **Timed** faults of a site at a nominal instant ([`FaultPlan`]): a crash
//!   (its queue, running jobs and transfers are lost; its pool too, or kept,
//!   by option) and the recovery; a slow spell (its CPUs run at a fraction
//!   of their speed for jobs that start meanwhile); a disk that shrinks.
//!   Both engines schedule them at the same nominal times and carry them out
//!   through the site state machine (`core::site::Site`).
//! * **Per-transfer** faults of a site's file server ([`SiteFaults`]): each
//!   response that starts to stream steps the site's schedules, which say
//!   whether it is corrupted, reset halfway or stalled.
//!
//! Every fault that happens reaches the manager as an
//! [`super::Event::Fault`] and is kept in the control records, so the run
//! record, the control database and the metrics list them.
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
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct FaultSpec {
    /// The first this many steps fail.
    pub first: u32,
    /// Every later step fails with this probability (seeded).
    pub probability: f64,
}

/// The faults a site's file server injects, per response.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct SiteFaults {
    /// Responses that are corrupted (one byte flipped).
    pub corrupt_responses: FaultSpec,
    /// Responses whose connection is reset when half their bytes are sent.
    pub resets: FaultSpec,
    /// Responses that stall for `stall_seconds` (nominal) before their bytes
    /// flow, the connection held meanwhile.
    pub stalls: FaultSpec,
    /// How long a stall lasts, nominal seconds.
    pub stall_seconds: f64,
    /// Program runs (a job, or a clustered job's member) that exit
    /// `exit_status` instead of 0, stepped by the site state machine as
    /// each run ends.
    pub exits: FaultSpec,
    /// The status of those runs (0 is read as 1).
    pub exit_status: i32,
}

/// The kinds of per-response schedule, each seeded apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseFault {
    /// One byte flipped.
    Corrupt,
    /// Connection reset halfway.
    Reset,
    /// A stall before the bytes.
    Stall,
}

impl SiteFaults {
    /// The seed of site `site`'s schedules in a run seeded `run_seed` (the
    /// same in both engines, distinct from the background load's).
    pub fn seed(run_seed: u64, site: SiteId) -> u64 {
        run_seed ^ 0xd1b5_4a32_d192_ed03u64.wrapping_mul(site as u64 + 1)
    }

    /// Site `site`'s schedule of failing program runs in a run seeded
    /// `run_seed`, and their exit status.
    pub fn exit_schedule(&self, run_seed: u64, site: SiteId) -> (FaultSchedule, i32) {
        let seed = Self::seed(run_seed, site) ^ 0x94d0_49bb_1331_11eb;
        let status = if self.exit_status == 0 {
            1
        } else {
            self.exit_status
        };
        (FaultSchedule::new(self.exits, seed), status)
    }

    /// Site `site`'s schedule of `kind` in a run seeded `run_seed`.
    pub fn schedule(&self, kind: ResponseFault, run_seed: u64, site: SiteId) -> FaultSchedule {
        let (spec, salt) = match kind {
            ResponseFault::Corrupt => (self.corrupt_responses, 0),
            ResponseFault::Reset => (self.resets, 0x9e37_79b9_7f4a_7c15),
            ResponseFault::Stall => (self.stalls, 0xbf58_476d_1ce4_e5b9),
        };
        FaultSchedule::new(spec, Self::seed(run_seed, site) ^ salt)
    }
}

/// A fault that happened, as the manager records it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Fault {
    /// The site crashed: its queue, running jobs and transfers are lost, and
    /// its pool too when `pool_lost`.
    Crash {
        /// Whether the pool's files are gone.
        pool_lost: bool,
    },
    /// The site is back, with an empty pool if it was lost.
    Recover,
    /// Its CPUs run at `factor` of their speed for jobs starting from now.
    Slow {
        /// Speed factor (0, 1].
        factor: f64,
    },
    /// Its CPUs are back to full speed.
    SlowEnd,
    /// Its disk shrinks to `disk` nominal bytes (files evicted to fit).
    Shrink {
        /// New capacity.
        disk: u64,
    },
    /// Its file server reset transfer `transfer` halfway.
    Reset {
        /// The transfer.
        transfer: super::TransferId,
    },
    /// Its file server stalled transfer `transfer` for `seconds`.
    Stall {
        /// The transfer.
        transfer: super::TransferId,
        /// Nominal seconds.
        seconds: f64,
    },
    /// Its file server flipped a byte of transfer `transfer`.
    Corrupt {
        /// The transfer.
        transfer: super::TransferId,
    },
    /// A program run of `job` (the job, or its cluster's current member)
    /// exited `status` on purpose.
    Exit {
        /// The job.
        job: super::JobId,
        /// Its exit status.
        status: i32,
    },
}

impl Fault {
    /// Its kind in one word (metrics label, database column).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash { .. } => "crash",
            Fault::Recover => "recover",
            Fault::Slow { .. } => "slow",
            Fault::SlowEnd => "slow_end",
            Fault::Shrink { .. } => "shrink",
            Fault::Reset { .. } => "reset",
            Fault::Stall { .. } => "stall",
            Fault::Corrupt { .. } => "corrupt",
            Fault::Exit { .. } => "exit",
        }
    }
}

/// The timed faults of a run: (nominal instant, site, fault), in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultPlan {
    /// The faults, sorted by time (stable: ties keep the testbed's order).
    pub timed: Vec<(super::Time, SiteId, Fault)>,
}

impl FaultPlan {
    /// A plan of `timed` faults in any order.
    pub fn new(mut timed: Vec<(super::Time, SiteId, Fault)>) -> Self {
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        FaultPlan { timed }
    }

    /// Whether nothing is planned.
    pub fn is_empty(&self) -> bool {
        self.timed.is_empty()
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
