//! The seams where policies plug into the core: a [`SiteSelector`] chooses a
//! job's site from a read-only [`GridView`], an [`EvictionPolicy`] ranks a
//! pool's [`Candidate`]s, a [`DispatchPolicy`] places the farm's tasks
//! (seed 001 §3.2: notify, then pick up from the [`TaskQueue`]) from a
//! read-only [`FarmView`]. The core defines them and calls them; the policies
//! themselves live in `crate::policy`, one file each, so the core never
//! depends on a particular policy.

use super::cache_index::{CacheIndex, ExecId};
use super::records::SiteCounters;
use super::submissions::{Submissions, Workload};
use super::{
    FileId, JobId, JobState, ReplicaPolicy, SiteId, SiteInfo, Workflow, rls::Rls, run_dag::RunDag,
};

/// What a site selector may look at when a prescript plans a job: the
/// grid as the manager knows it at that moment, read-only.
///
/// What a policy reads it for, field by field:
///
/// * a job's inputs and their sizes: `workflow.job(job).inputs` (file
///   ids), `workflow.files()[f].size` (nominal bytes) and `.name`; its
///   `runtime` and `outputs` likewise (a job of a sub-DAG read as the run
///   goes is there too, not in the workflow the run started with);
/// * who holds a copy now: `rls.holders(f)` (the sites, in site order) and
///   `rls.has(f, site)`: the bytes of a job's inputs already at a site are
///   the sizes of the inputs `rls` has there;
/// * a site's size: `sites[s].cpus`, `.disk`, `.speed`, `.name`;
/// * its load: `claimed[s]` (jobs holding one of its slots, from their
///   prescript to their end: it is free while this is below its CPUs, see
///   [`is_free`](Self::is_free)), `active[s]` (jobs submitted there and not
///   ended), `counters[s]` (submitted, started, ended, killed so far);
/// * the rest: `states[job]`, `last_ended`, `now`, and with several
///   workflows `submissions` and `workload` (fair share,
///   [`over_fair_share`](Self::over_fair_share)).
///
/// ```
/// use gridbed::core::{JobId, SiteId};
/// use gridbed::policy::GridView;
///
/// /// Bytes of `job`'s inputs already held at `site`.
/// fn present(view: &GridView<'_>, job: JobId, site: SiteId) -> u64 {
///     let wf = view.workflow;
///     (wf.job(job).inputs.iter())
///         .filter(|&&f| view.rls.has(f, site))
///         .map(|&f| wf.files()[f].size)
///         .sum()
/// }
/// # let _ = present;
/// ```
pub struct GridView<'a> {
    /// The run's DAG: its jobs (inputs, outputs, runtime, parents) and
    /// files (name, size), indexed by [`JobId`] and [`FileId`]: the
    /// workflow the run started with and the sub-DAGs it read as it went.
    pub workflow: &'a RunDag,
    /// Every site of the scenario, indexed by [`SiteId`]: name, CPUs, disk,
    /// speed.
    pub sites: &'a [SiteInfo],
    /// The replica catalogue: the sites holding a copy of each file now
    /// (`holders`, `has`).
    pub rls: &'a Rls,
    /// Jobs submitted to each site and not yet ended (queued or running).
    pub active: &'a [usize],
    /// Per-site control records so far: submitted, started, ended, killed (the
    /// postscript keeps them, as seed 002's control database).
    pub counters: &'a [SiteCounters],
    /// The site where a job ended most recently.
    pub last_ended: Option<SiteId>,
    /// Per site: jobs holding one of its slots, from their prescript's start
    /// to their end (staging there, queued or running) — Condor's claimed
    /// slots, so a site is free while this is below its CPUs.
    pub claimed: &'a [usize],
    /// Every job's state now.
    pub states: &'a [JobState],
    /// The workflows submitted and each job's (empty: one workflow).
    pub submissions: &'a Submissions,
    /// Per submission: arrived, slots held, jobs ready and open.
    pub workload: &'a [Workload],
    /// The time now (nominal s).
    pub now: f64,
    /// Placing a job registers its inputs at its site in `rls` at once
    /// (planned registration under the caching replica policy), so the
    /// next decision sees them there.
    pub plans_inputs: bool,
}

/// The submissions of a view that has none yet.
static NO_SUBMISSIONS: Submissions = Submissions {
    list: Vec::new(),
    of_job: Vec::new(),
};

impl<'a> GridView<'a> {
    /// A view of `sites` and `rls` where nothing has happened yet: no job
    /// active, claimed, ended or in a state, one workflow, time 0. A policy's
    /// tests and tools start here and set what they need with struct update
    /// syntax (`GridView { claimed: &c, ..GridView::new(&wf, &sites, &rls) }`).
    pub fn new(workflow: &'a RunDag, sites: &'a [SiteInfo], rls: &'a Rls) -> Self {
        GridView {
            workflow,
            sites,
            rls,
            active: &[],
            counters: &[],
            last_ended: None,
            claimed: &[],
            states: &[],
            submissions: &NO_SUBMISSIONS,
            workload: &[],
            now: 0.0,
            plans_inputs: false,
        }
    }

    /// Whether `site` has a slot no job holds (Condor's unclaimed machine).
    pub fn is_free(&self, site: SiteId) -> bool {
        self.claimed[site] < self.sites[site].cpus
    }

    /// Whether `job`'s workflow should leave the next free slot to another
    /// workflow below its fair share (seed 003 §3: the matchmaker allots
    /// each user machines by a fair-share scheme).
    pub fn over_fair_share(&self, job: JobId) -> bool {
        if self.submissions.list.len() < 2 {
            return false;
        }
        let slots = self.sites.iter().map(|s| s.cpus).sum();
        let w = self.submissions.of_job[job];
        super::submissions::over_fair_share(&self.submissions.list, self.workload, slots, w)
    }

    /// Whether Condor's matchmaker matches `job` now: one of `sites` is
    /// free and its workflow is not over its fair share while another
    /// waits below its own.
    pub fn matchable(&self, job: JobId, sites: &[SiteId]) -> bool {
        self.any_free(sites) && !self.over_fair_share(job)
    }

    /// Whether any of `sites` is free.
    pub fn any_free(&self, sites: &[SiteId]) -> bool {
        sites.iter().any(|&s| self.is_free(s))
    }
}

/// A ready job the manager will offer a selector, with the execution
/// sites it may use (see [`SiteSelector::place_ahead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The job.
    pub job: JobId,
    /// The sites it may use, in site order (never empty).
    pub eligible: Vec<SiteId>,
}

/// Chooses the execution site for a job (the prescript's first task, seed 000 §4).
pub trait SiteSelector: Send {
    /// `eligible` is never empty: execution sites the job may use for this
    /// attempt, in site order. Returns one of them.
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId;

    /// Where the ready `job` goes now, or `None` to hold it, ready, until
    /// the grid changes (a job leaves its slot, a site goes down or comes
    /// back), when it is offered again. Condor's matchmaker places a job
    /// only on a free machine (seed 003 §3); a planner with a scheduling
    /// horizon leaves the DAGs beyond it unplanned (seed 003 §5.2). By
    /// default every job is placed at once by [`select`](Self::select).
    fn place(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> Option<SiteId> {
        Some(self.select(job, view, eligible))
    }

    /// How many of the jobs the manager offers after `job` in the same
    /// round the selector wants to see with it, through
    /// [`place_ahead`](Self::place_ahead); 0 (the default) asks
    /// [`place`](Self::place) alone. An external program answers a whole
    /// round in one exchange this way.
    fn look_ahead(&mut self, _job: JobId, _view: &GridView<'_>, _eligible: &[SiteId]) -> usize {
        0
    }

    /// [`place`](Self::place), told the offers that follow `job` in this
    /// round if nothing else changes (next first, at most what
    /// [`look_ahead`](Self::look_ahead) asked, each with the sites it may
    /// use). A forecast only: each is offered in turn through `place` or
    /// `place_ahead`, with the grid as it is then.
    fn place_ahead(
        &mut self,
        job: JobId,
        view: &GridView<'_>,
        eligible: &[SiteId],
        _ahead: &[Offer],
    ) -> Option<SiteId> {
        self.place(job, view, eligible)
    }

    /// Called once before the run: extra (parent, child) ordering edges the
    /// manager must honour on top of the workflow's (SPCL sequences the
    /// clusters that share a site this way). A job failing for good releases
    /// its ordering children rather than blocking them.
    fn prepare(&mut self, _workflow: &Workflow, _sites: &[SiteInfo]) -> Vec<(JobId, JobId)> {
        Vec::new()
    }

    /// The site a planner has put `job` on ahead of its release, if any
    /// (seed 003's job schedule): the cache maintenance keeps the files of
    /// jobs planned on a site (§6.1).
    fn planned(&self, _job: JobId) -> Option<SiteId> {
        None
    }

    /// The replica policy this strategy implies, if any (RandomCaching is
    /// Random with caching); `None` leaves it to the testbed.
    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        None
    }
}

/// A file that may be evicted, with what an eviction policy may weigh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The file.
    pub file: FileId,
    /// Its size.
    pub size: u64,
    /// Pool clock when it was written.
    pub inserted: u64,
    /// Pool clock of its last use.
    pub last_access: u64,
    /// Number of uses.
    pub accesses: u64,
}

/// Ranks unpinned files for eviction: the smallest key goes first. A pool asks
/// again whenever a file's state changes (written, read), so the key may use
/// recency, age, frequency or a draw from the policy's generator; ties go to
/// the lower file id.
pub trait EvictionPolicy: Send {
    /// The eviction key of `candidate` as it is now: asked whenever a file
    /// becomes evictable or an evictable file changes (written, read).
    fn key(&mut self, candidate: &Candidate) -> u64;

    /// `file` is no longer evictable (pinned, being written, kept, or
    /// gone from the pool).
    fn forget(&mut self, _file: FileId) {}

    /// Whether it chooses the victims itself ([`victims`](Self::victims))
    /// instead of ranking files by key.
    fn chooses(&self) -> bool {
        false
    }

    /// When [`chooses`](Self::chooses): the files to evict, among those
    /// evictable now (as [`key`](Self::key) and [`forget`](Self::forget)
    /// told), freeing at least `need` bytes; `None` leaves it to the keys.
    fn victims(&mut self, _need: u64) -> Option<Vec<FileId>> {
        None
    }
}

/// A file in an execute site's long-term cache as seed 003's cache
/// maintenance weighs it (§6.1), when the site is above its bound.
#[derive(Debug, Clone, Copy)]
pub struct CachedFile<'a> {
    /// The file.
    pub file: FileId,
    /// Its size (nominal bytes).
    pub size: u64,
    /// Registered copies in the grid (the RLS), this one included.
    pub copies: usize,
    /// When each job that used it (read or wrote it, anywhere) was
    /// submitted, oldest first (nominal s).
    pub uses: &'a [f64],
    /// The time now (nominal s).
    pub now: f64,
}

/// Ranks a site's cached files for deletion after a job (seed 003 §6.1):
/// files go in increasing worth, ties to the lower file id.
pub trait CacheWorth: Send {
    /// The worth of keeping `file` cached.
    fn worth(&mut self, file: &CachedFile<'_>) -> f64;
}

/// The wait queue as a policy sees it: tasks by position (0 is the head).
pub trait TaskQueue {
    /// Tasks waiting.
    fn len(&self) -> usize;
    /// The files task `i` reads.
    fn files(&self, i: usize) -> &[FileId];
    /// Whether no task waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A queue held as a slice of file lists.
pub struct Tasks<'a>(pub &'a [Vec<FileId>]);

impl TaskQueue for Tasks<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn files(&self, i: usize) -> &[FileId] {
        &self.0[i]
    }
}

/// What a dispatch policy may look at.
pub struct FarmView<'a> {
    /// Per registered executor: whether it has a free CPU slot.
    pub free: &'a [bool],
    /// Busy executors over registered ones (the paper's CPU utilization).
    pub utilization: f64,
    /// Which executor caches which file.
    pub index: &'a CacheIndex,
}

/// A dispatch policy of the data-diffusion farm, in two parts as the
/// paper's pseudo code.
pub trait DispatchPolicy: Send {
    /// Part 1: the executor to notify for a task reading `files` (the head
    /// of the queue), or `None` to leave it waiting.
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId>;

    /// Part 2: executor `e`, notified, may take up to `max` more tasks:
    /// their positions in `queue`, among the first `window()` only.
    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize>;
}
