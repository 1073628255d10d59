//! The grid's data placement state (seed 000 §4–5, seed 003 §3–6): where
//! each job goes and why it may not, its prescript's staging, the replica
//! catalogues (RLS), the transfers in flight, the pool's queues and
//! MonitQueue, disk room, stage-out and cache maintenance. The DAGMan node
//! life cycle is the other room (`node_life`); the manager drives both.

use super::maintenance::Cache;
use super::memo::Memo;
use super::room::{Room, RoomStall};
use super::stage_out::{Finals, StageOut};
use super::transfers::{Flight, FlightKind};
use super::stage_in::Staging;
use super::{JobState, Timer};
use crate::core::seams::SiteSelector;
use crate::core::wms::Wms;
use crate::core::ReplicaPolicy;
use crate::core::{FileId, JobId, SiteId, SiteInfo, Time, TransferId, RunDag};
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

/// Where the run's files and jobs are on the grid, and what moves them.
pub(crate) struct Placement {
    /// Chooses each job's site.
    pub(crate) selector: Box<dyn SiteSelector>,
    /// The selector's name, for what a stall says.
    pub(crate) selector_name: String,
    /// The replica policy (the settings', or the selector's own): what
    /// becomes of the copies a job staged once it ends.
    pub(crate) policy: ReplicaPolicy,
    /// The replica catalogues.
    pub(crate) replicas: super::replicas::Replicas,
    /// Transfers in flight and who waits for them.
    pub(crate) transfers: super::transfers::Transfers,
    /// The pool: its serial stages, queues and slots.
    pub(crate) pool: Pool,
    /// Cache maintenance and k-replication.
    pub(crate) cache: Cache,
    /// Final outputs on their way to their submit machine.
    pub(crate) finals: Finals,
    /// Waits for room in a row, per job.
    pub(crate) stall: RoomStall,
    /// Per job: the site of its current (or last) attempt.
    pub(crate) site_of: Vec<SiteId>,
    /// Per job: times planned again for want of room or a vanished input.
    pub(crate) replans: Vec<u32>,
    /// Per job: times it waited for room.
    pub(crate) room_waits: Vec<u32>,
    /// Per job: sites it must not go to again.
    pub(crate) avoid: HashMap<JobId, Vec<SiteId>>,
    /// Per job: the site its next attempt must avoid, if it can go elsewhere
    /// (where MonitQueue killed it, or where it stalled for want of room).
    pub(crate) avoid_once: Vec<Option<SiteId>>,
    /// What each site's disk has committed, and the jobs waiting for room.
    pub(crate) room: Room,
    /// Per job: its prescript's staging state while it stages.
    pub(crate) staging: Vec<Option<Staging>>,
    /// Per job: inputs its last prescript transferred, for the postscript.
    pub(crate) staged: Vec<Vec<FileId>>,
    /// Per job: its submit machine, where the site holding its first
    /// initially placed input (else its first parent's home; else the
    /// first placement's site). The `return` policy sends outputs there.
    pub(crate) home: Vec<SiteId>,
    /// Per job: its outputs on their way home.
    pub(crate) stage_outs: Vec<Option<StageOut>>,
    /// Memoization within the run, when jobs have twins.
    pub(crate) memo: Option<Memo>,
    /// Per job: nominal bytes of its inputs and outputs, which must be at
    /// its site at once.
    pub(crate) footprint: Vec<u64>,
    /// Per file: jobs that read it and have not ended (in-place cleanup).
    pub(crate) readers_left: Vec<u32>,
    /// Intermediate outputs whose last reader ended, to clean up.
    pub(crate) cleanup_due: Vec<FileId>,
    /// Jobs woken by room freed, between two offers (kept for its capacity).
    pub(crate) woken: Vec<JobId>,
    /// Reused buffer of eligible sites.
    pub(crate) eligible: Vec<SiteId>,
    /// The site where a job ended last.
    pub(crate) last_ended: Option<SiteId>,
    /// A job left its slot or a site went down or up since the held jobs
    /// were last offered.
    pub(crate) grid_changed: bool,
    /// Jobs ended so far: only an end frees room for good (a job that
    /// enters a queue may yet fail for want of room for its outputs).
    pub(crate) progress: u64,
}

/// The pool's schedd, negotiator and slots as the manager sees them.
pub(crate) struct Pool {
    /// The pool's serial stages.
    pub(crate) wms: Wms,
    /// Per job: sent to its site's queue (matched and started by the schedd).
    pub(crate) at_site: Vec<bool>,
    /// MonitQueue: queued jobs (submitted, job, attempt) in submission order.
    pub(crate) idle: VecDeque<(Time, JobId, usize)>,
    /// Per job: a Kill is out and unanswered.
    pub(crate) killing: Vec<bool>,
    /// Per site: jobs staging there, queued or running (claimed slots).
    pub(crate) claimed: Vec<usize>,
    /// Per site: jobs running there.
    pub(crate) active: Vec<usize>,
    /// Per site: crashed and not yet recovered.
    pub(crate) down: Vec<bool>,
}

/// What the placement asks of the manager once one of its rules ran: the
/// two rooms talk through these steps, and the manager carries each out,
/// in order, on the node life cycle, the records and the timers
/// (`Manager::route`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GridStep {
    /// Start a transfer of `file` from `from` to `to` for `job`'s `attempt`
    /// (its current one when none).
    Send {
        job: JobId,
        attempt: Option<usize>,
        file: FileId,
        from: SiteId,
        to: SiteId,
        kind: FlightKind,
        retry: bool,
    },
    /// Fire `timer` once the transfer back-off has passed.
    AfterBackoff(Timer),
    /// These jobs waited for a copy that is now registered: ready again.
    Requeue(Vec<JobId>),
    /// The copy of `file` at `site` goes: forgotten, recorded, deleted.
    Delete { file: FileId, site: SiteId },
    /// `job`'s outputs are home: its slot is free and it ended well at
    /// `site`, `delete` going.
    Home {
        job: JobId,
        site: SiteId,
        delete: Vec<FileId>,
    },
    /// An output of `job` could not be sent home from `site`: the job's
    /// work is lost, and it is planned again (a counted retry).
    Lost {
        job: JobId,
        site: SiteId,
        delete: Vec<FileId>,
        reason: String,
    },
    /// Memoizing `job` was given up: it runs as any other once ready.
    Unmemoized(JobId),
    /// Every copy that memoizes `job` is there: its node is done.
    Memoized(JobId),
}

impl Placement {
    /// Each job's submit machine is its workflow's (several workflows
    /// submitted, seed 003 §9).
    pub(crate) fn set_homes(&mut self, submissions: &crate::core::submissions::Submissions) {
        for (j, &w) in submissions.of_job.iter().enumerate() {
            self.home[j] = submissions.list[w].origin;
        }
    }

    /// Its per-job state grows to `n` jobs, the new ones of `node`'s
    /// submit machine (a sub-DAG read as the run goes).
    pub(crate) fn grow(&mut self, n: usize, node: JobId) {
        self.site_of.resize(n, 0);
        self.replans.resize(n, 0);
        self.room_waits.resize(n, 0);
        self.stall.waits.resize(n, 0);
        self.stall.since.resize(n, 0.0);
        self.stall.progress_seen.resize(n, 0);
        self.staging.resize_with(n, || None);
        self.staged.resize(n, Vec::new());
        self.home.resize(n, self.home[node]);
        self.stage_outs.resize_with(n, || None);
        self.pool.killing.resize(n, false);
        self.pool.at_site.resize(n, false);
        self.avoid_once.resize(n, None);
        self.footprint.resize(n, 0);
        self.room.grow(n);
        self.pool.wms.grow(n);
    }

    /// Inputs that `job`'s last prescript transferred (not those it found).
    pub(crate) fn take_staged(&mut self, job: JobId) -> Vec<FileId> {
        std::mem::take(&mut self.staged[job])
    }

    /// MonitQueue (seed 002 §4) at `now`: the next job whose attempt has
    /// waited in a site queue longer than `max_idle`, marked as being
    /// killed. `queued(job, attempt)` says whether that attempt is still
    /// queued. Queued jobs are kept in submission order, so the scan stops
    /// at the first one still queued and not yet overdue; the stale ones
    /// before it are dropped.
    pub(crate) fn next_overdue(
        &mut self,
        now: Time,
        max_idle: f64,
        queued: impl Fn(JobId, usize) -> bool,
    ) -> Option<JobId> {
        while let Some(&(submitted, job, attempt)) = self.pool.idle.front() {
            let waiting = queued(job, attempt) && !self.pool.killing[job];
            if waiting && now - submitted <= max_idle {
                return None;
            }
            self.pool.idle.pop_front();
            if waiting {
                self.pool.killing[job] = true;
                return Some(job);
            }
        }
        None
    }

    /// `site` crashed, losing its pool with `pool_lost`: no job goes there
    /// until it recovers, and with its pool went what its disk held (its
    /// room and every replica there). Returns the jobs staging there,
    /// whose prescripts fail.
    pub(crate) fn crash(&mut self, site: SiteId, pool_lost: bool) -> Vec<JobId> {
        self.pool.down[site] = true;
        if pool_lost {
            self.room.lose_site(site);
            self.replicas.drop_site(site);
        }
        (0..self.staging.len())
            .filter(|&j| self.staging[j].as_ref().is_some_and(|st| st.site == site))
            .collect()
    }

    /// `job` runs again after it ended (an output of it was lost): its
    /// inputs will be read once more, so none is cleaned up before.
    pub(crate) fn read_again(&mut self, wf: &RunDag, job: JobId) {
        for &f in &wf.job(job).inputs {
            self.readers_left[f] += 1;
        }
    }

    /// The node life cycle moved `job` from `from` to `to`: its site's
    /// slot is claimed or freed, and once it is over the inputs it read
    /// for the last time are due for cleanup (with `cleanup`, an
    /// intermediate one only: final outputs stay).
    pub(crate) fn node_moved(
        &mut self,
        job: JobId,
        from: JobState,
        to: JobState,
        wf: &RunDag,
        cleanup: bool,
    ) {
        match (from.claims_slot(), to.claims_slot()) {
            (true, false) => {
                self.pool.claimed[self.site_of[job]] -= 1;
                self.grid_changed = true;
            }
            (false, true) => self.pool.claimed[self.site_of[job]] += 1,
            _ => {}
        }
        if to.is_over() {
            for &f in &wf.job(job).inputs {
                self.readers_left[f] -= 1;
                if self.readers_left[f] == 0 && wf.producer(f).is_some() && cleanup {
                    self.cleanup_due.push(f);
                }
            }
        }
        if to == JobState::Done {
            self.progress += 1;
        }
    }

    /// Transfer `id` ended, well when `ok`: its flight, unless it was not
    /// in flight. Under the caching replica policy a verified copy at a
    /// site that is up is registered at once: every later prescript may
    /// use it.
    pub(crate) fn transfer_ended(&mut self, id: TransferId, ok: bool) -> Option<Flight> {
        let fl = self.transfers.end(id)?;
        if ok && self.policy == ReplicaPolicy::Caching && !self.pool.down[fl.to] {
            self.replicas.arrived(fl.file, fl.to);
        }
        Some(fl)
    }

    /// Applies the replica policy to the copies a job staged at `site`: caching
    /// registers them, delete returns them for removal (never a registered one).
    pub(crate) fn postscript_replicas(&mut self, site: SiteId, staged: &[FileId]) -> Vec<FileId> {
        match self.policy {
            // Registered when they arrived (`transfer_ended`), or now.
            ReplicaPolicy::Caching => {
                self.replicas.publish(staged, site);
                Vec::new()
            }
            ReplicaPolicy::Delete | ReplicaPolicy::Return => staged
                .iter()
                .copied()
                .filter(|&f| !self.replicas.has(f, site))
                .collect(),
        }
    }

    /// Whether a site with slots is up.
    pub(crate) fn any_execution_site_up(&self, sites: &[SiteInfo]) -> bool {
        (sites.iter().zip(&self.pool.down)).any(|(s, &down)| s.cpus > 0 && !down)
    }

    /// The site selector, as a stall names it (`--strategy`'s name).
    pub(crate) fn selector_words(&self) -> String {
        match self.selector_name.as_str() {
            "" => "site selector".to_string(),
            name => format!("site selector `{name}`"),
        }
    }
}
