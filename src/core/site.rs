//! A grid site's rules, sans-IO: the FIFO queue, CPU slots less other users'
//! load, the check that a job's inputs are present when it takes a slot, and
//! the reservation, commit and abort of every write into the site's pool
//! (seed 000 §4's site: P CPUs, D disk, FIFO queue, LRU deletion; seed 002's
//! background load).
//!
//! Both engines drive the same [`Site`]: the simulator on its virtual clock,
//! the live site actor with real bytes and a wall clock. A method takes what
//! happened and appends [`SiteAction`]s that the engine carries out in order —
//! tell the manager, run a job for so many nominal seconds, remove a file's
//! bytes — so the rules of the emulated site are written once.
//!
//! ```text
//!   engine ── submit / fetch / job ran / load changes ──► Site
//!   engine ◄── Emit(Event) / Run { job, nominal } / Remove ──┘
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::background::Load;
use super::faults::{Fault, FaultSchedule};
use super::storage::Pool;
use super::{
    Event, FileId, JobFailure, JobId, SiteId, SiteInfo, Time, TransferFailure, TransferId, Workflow,
    run_dag::RunDag,
};

/// What the engine carries out for a site, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum SiteAction {
    /// Hand this event to the manager.
    Emit(Event),
    /// The job took a slot and its inputs are present: it runs for `nominal`
    /// seconds (`runtime / speed + overhead`), then the engine calls
    /// [`Site::end_run`].
    Run {
        /// The job.
        job: JobId,
        /// Nominal seconds it runs.
        nominal: Time,
    },
    /// Remove the file's bytes from the pool: `evicted` to make room for a
    /// write (the manager is told by an [`Event::FileEvicted`] that follows),
    /// or else deleted when its last job released it (replica policy `delete`).
    Remove {
        /// The file.
        file: FileId,
        /// Evicted to make room (true) or deleted on release (false).
        evicted: bool,
    },
}

/// One site's state. See the module docs.
pub struct Site {
    id: SiteId,
    info: SiteInfo,
    wf: Arc<RunDag>,
    pool: Pool,
    queue: VecDeque<JobId>,
    /// Jobs holding a slot: running, or writing their outputs (`ending`).
    running: Vec<JobId>,
    ending: Vec<JobId>,
    /// Whether the site is up (not crashed).
    up: bool,
    /// Its CPUs' speed now, as a fraction of `info.speed` (a slow spell).
    speed_factor: f64,
    /// Other users' load, and the slots it holds now.
    load: Option<Load>,
    busy: usize,
    peak_used: u64,
    jobs_run: u64,
    /// Queued or running jobs whose program exits non-zero this attempt.
    exits: HashMap<JobId, i32>,
    /// Program runs that fail on purpose (`[[fault]] kind = "exit"`), and
    /// their status.
    exit_faults: FaultSchedule,
    exit_status: i32,
    /// The member a running clustered job is at (seqexec).
    member_at: HashMap<JobId, usize>,
}

impl Site {
    /// The run's DAG grew: a sub-DAG read as the run goes added jobs (and
    /// no files) to it. (The simulator hands the site an empty one while
    /// the manager grows it, so that the manager's grows in place.)
    pub fn graft(&mut self, wf: Arc<RunDag>) {
        self.wf = wf;
    }

    /// [`Site::graft`] from the new jobs alone (a site in another process
    /// is sent those): `jobs` are jobs `first..` of the workflow. Jobs it
    /// has already are kept.
    pub fn add_jobs(&mut self, first: JobId, jobs: &[super::Job]) {
        Arc::make_mut(&mut self.wf).add_jobs(first, jobs);
    }

    /// The run's jobs as this site knows them.
    pub fn workflow(&self) -> &Arc<RunDag> {
        &self.wf
    }

    /// Site `id` over an already filled `pool`, with other users' `load` if
    /// any (ignored on a storage site).
    pub fn new(
        id: SiteId,
        info: SiteInfo,
        wf: Arc<Workflow>,
        pool: Pool,
        load: Option<Load>,
    ) -> Self {
        let load = load.filter(|_| info.cpus > 0);
        Site {
            id,
            info,
            wf: Arc::new(RunDag::from(wf)),
            busy: load.as_ref().map_or(0, Load::busy),
            load,
            peak_used: pool.used(),
            pool,
            queue: VecDeque::new(),
            running: Vec::new(),
            ending: Vec::new(),
            up: true,
            speed_factor: 1.0,
            jobs_run: 0,
            exits: HashMap::new(),
            exit_faults: FaultSchedule::none(),
            exit_status: 1,
            member_at: HashMap::new(),
        }
    }

    /// Program runs fail on purpose as `schedule` says, exiting `status`.
    pub fn with_exit_faults(mut self, (schedule, status): (FaultSchedule, i32)) -> Self {
        self.exit_faults = schedule;
        self.exit_status = status;
        self
    }

    /// The site's id.
    pub fn id(&self) -> SiteId {
        self.id
    }

    /// Its pool's accounting.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
    /// Jobs waiting in the FIFO queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
    /// The job first in the FIFO queue.
    pub fn next_queued(&self) -> Option<JobId> {
        self.queue.front().copied()
    }
    /// Jobs holding a slot.
    pub fn running(&self) -> usize {
        self.running.len() + self.ending.len()
    }
    /// Whether the site is up (not crashed).
    pub fn is_up(&self) -> bool {
        self.up
    }
    /// Whether `job` ran here and its outputs are being written (a crash
    /// meanwhile drops them).
    pub fn is_ending(&self, job: JobId) -> bool {
        self.ending.contains(&job)
    }
    /// Slots other users hold now.
    pub fn background_busy(&self) -> usize {
        self.busy
    }
    /// Most bytes the pool held at any time.
    pub fn peak_used(&self) -> u64 {
        self.peak_used
    }
    /// Jobs that took a slot here.
    pub fn jobs_run(&self) -> u64 {
        self.jobs_run
    }
    /// Whether the site's file server can serve `file` (a live endpoint
    /// answers 404 otherwise).
    pub fn serves(&self, file: FileId) -> bool {
        self.up && self.pool.has(file)
    }

    /// A prescript chose this site for `job`: pin its inputs here, present or
    /// still to come, so staging cannot evict the job's own files.
    pub fn pin(&mut self, job: JobId) {
        let wf = self.wf.clone();
        self.pool.pin_job(job, &wf.job(job).inputs);
    }

    /// Transfer `id` of `file` for `job` is to arrive here: reserves its bytes
    /// (evicting by the pool's policy). False when the pool cannot make room;
    /// the failed [`Event::TransferDone`] is then already among the actions
    /// (`never` when the job's inputs could never fit here).
    pub fn begin_fetch(
        &mut self,
        id: TransferId,
        job: JobId,
        file: FileId,
        out: &mut Vec<SiteAction>,
    ) -> bool {
        if !self.up {
            let result = Err(TransferFailure::Connection("site is down".into()));
            out.push(SiteAction::Emit(Event::TransferDone { id, result }));
            return false;
        }
        match self.pool.begin_write(file, self.wf.files()[file].size) {
            Err(e) => {
                let never = e.never || !self.could_ever_run(job);
                let result = Err(TransferFailure::NoSpace { never });
                out.push(SiteAction::Emit(Event::TransferDone { id, result }));
                false
            }
            Ok(r) => {
                self.evicted(r.evicted, out);
                true
            }
        }
    }

    /// Transfer `id` of `file` into this site ended: its bytes are listed
    /// (`Ok`: nominal bytes moved) or dropped, and the manager is told.
    pub fn end_fetch(
        &mut self,
        id: TransferId,
        file: FileId,
        result: Result<u64, TransferFailure>,
        out: &mut Vec<SiteAction>,
    ) {
        if result.is_ok() {
            self.pool.commit_write(file);
        } else {
            self.pool.abort_write(file);
        }
        out.push(SiteAction::Emit(Event::TransferDone { id, result }));
    }

    /// Every input of `job` is staged and its program ran as a cluster of
    /// procs, which exited `exits` in proc order (none: removed once
    /// another failed): it joins the FIFO queue to exit as the cluster
    /// does, with the first failing proc's status, else 0 (DAGMan removes
    /// a cluster's other procs when one fails). A cluster of several says
    /// how each proc ended ([`Event::ProcsEnded`]).
    pub fn submit_procs(&mut self, job: JobId, exits: Vec<Option<i32>>, out: &mut Vec<SiteAction>) {
        let exit = exits.iter().flatten().copied().find(|&e| e != 0).unwrap_or(0);
        if exits.len() > 1 {
            let site = self.id;
            out.push(SiteAction::Emit(Event::ProcsEnded { job, site, exits }));
        }
        self.submit(job, Ok(exit), out);
    }

    /// Every input of `job` is staged: it joins the FIFO queue, to exit
    /// `exit` once run; or its submission failed for the reason given
    /// (the engine could not make its program), and it ends at once,
    /// never queued ([`JobFailure::SubmitFailed`]).
    pub fn submit(&mut self, job: JobId, exit: Result<i32, String>, out: &mut Vec<SiteAction>) {
        let exit = match exit {
            Ok(exit) => exit,
            Err(why) => {
                out.push(SiteAction::Emit(Event::JobEnded {
                    job,
                    site: self.id,
                    result: Err(JobFailure::SubmitFailed(why)),
                }));
                return;
            }
        };
        if exit != 0 {
            self.exits.insert(job, exit);
        } else {
            self.exits.remove(&job);
        }
        if !self.up {
            out.push(SiteAction::Emit(Event::JobEnded {
                job,
                site: self.id,
                result: Err(JobFailure::Failed("site is down".into())),
            }));
            return;
        }
        self.queue.push_back(job);
        self.try_start(out);
    }

    /// MonitQueue's kill: removes `job` if it still waits in the queue. A job
    /// that already took a slot runs to its end and the kill is void. Returns
    /// whether it was removed; the [`Event::JobKilled`] is among the actions.
    pub fn kill(&mut self, job: JobId, out: &mut Vec<SiteAction>) -> bool {
        let killed = match self.queue.iter().position(|&j| j == job) {
            Some(i) => self.queue.remove(i).is_some(),
            None => false,
        };
        out.push(SiteAction::Emit(Event::JobKilled {
            job,
            site: self.id,
            killed,
        }));
        killed
    }

    /// `condor_rm` of `job` (the DAG stopped): dropped from the queue, or
    /// from its slot, which the next queued job takes; outputs it was
    /// writing are dropped. Its run, if the engine still times one, ends
    /// unseen ([`Site::end_run`] finds no such run). Nothing is emitted:
    /// the manager counted the job removed when it asked.
    pub fn remove(&mut self, job: JobId, out: &mut Vec<SiteAction>) {
        self.exits.remove(&job);
        if let Some(i) = self.queue.iter().position(|&j| j == job) {
            self.queue.remove(i);
            return;
        }
        if let Some(i) = self.running.iter().position(|&j| j == job) {
            self.running.swap_remove(i);
        } else if let Some(i) = self.ending.iter().position(|&j| j == job) {
            for o in self.writing(job).to_vec() {
                self.pool.abort_write(o);
            }
            self.ending.swap_remove(i);
        } else {
            return; // it ended meanwhile, and the manager ignores that end
        }
        self.member_at.remove(&job);
        self.try_start(out);
    }

    /// Postscript: unpins `job`'s files and deletes `delete` once nothing
    /// pins them.
    pub fn release(&mut self, job: JobId, delete: &[FileId], out: &mut Vec<SiteAction>) {
        for file in self.pool.release_job(job, delete) {
            out.push(SiteAction::Remove {
                file,
                evicted: false,
            });
        }
    }

    /// Cache maintenance deletes `file` here (now, or once no job pins it).
    pub fn delete(&mut self, file: FileId, out: &mut Vec<SiteAction>) {
        if self.pool.evict(file) {
            out.push(SiteAction::Remove {
                file,
                evicted: false,
            });
        }
    }

    /// In-place cleanup: every job reading `file` ended, so the copy here
    /// is no longer kept and may be evicted, like any cached copy, when room
    /// is needed. Nothing is deleted now, so a run with room to spare is
    /// unchanged.
    pub fn cleanup(&mut self, file: FileId) {
        self.pool.unkeep(file);
    }

    /// A timed fault of this site happens now (see [`crate::core::faults`]);
    /// the manager hears of it first, then of what it did.
    pub fn fault(&mut self, fault: &Fault, out: &mut Vec<SiteAction>) {
        out.push(SiteAction::Emit(Event::Fault {
            site: self.id,
            fault: fault.clone(),
        }));
        match *fault {
            Fault::Crash { pool_lost } => self.crash(pool_lost, out),
            Fault::Recover => {
                self.up = true;
                self.try_start(out);
            }
            Fault::Slow { factor } => self.speed_factor = factor,
            Fault::SlowEnd => self.speed_factor = 1.0,
            Fault::Shrink { disk } => {
                let evicted = self.pool.set_capacity(disk);
                self.evicted(evicted, out);
            }
            // Per-transfer faults are the file server's (the engine's).
            Fault::Reset { .. }
            | Fault::Stall { .. }
            | Fault::Corrupt { .. }
            | Fault::Exit { .. } => {}
        }
    }

    /// The site crashes: every queued and running job ends as failed (the
    /// manager plans it again, against its RETRY), outputs being written are
    /// dropped, and with `pool_lost` every file goes. The engine ends the
    /// transfers into and out of the site.
    fn crash(&mut self, pool_lost: bool, out: &mut Vec<SiteAction>) {
        self.up = false;
        for i in 0..self.ending.len() {
            let job = self.ending[i];
            for o in self.writing(job).to_vec() {
                self.pool.abort_write(o);
            }
        }
        self.member_at.clear();
        let lost: Vec<JobId> = self
            .running
            .drain(..)
            .chain(self.ending.drain(..))
            .chain(self.queue.drain(..))
            .collect();
        for job in lost {
            out.push(SiteAction::Emit(Event::JobEnded {
                job,
                site: self.id,
                result: Err(JobFailure::Failed("site crashed".into())),
            }));
        }
        for file in self.pool.crash(pool_lost) {
            out.push(SiteAction::Remove {
                file,
                evicted: false,
            });
        }
    }

    /// The nominal instant of the next background-load change, if any.
    pub fn next_load_change(&self) -> Option<Time> {
        self.load.as_ref().and_then(Load::next_change)
    }

    /// The background load changes now (at [`Site::next_load_change`]):
    /// freed slots start queued jobs.
    pub fn step_load(&mut self, out: &mut Vec<SiteAction>) {
        let Some(load) = self.load.as_mut() else {
            return;
        };
        self.busy = load.step();
        self.try_start(out);
    }

    /// Other users' load is now `load` (none: they hold no slot): freed
    /// slots start queued jobs.
    pub fn set_load(&mut self, load: Option<Load>, out: &mut Vec<SiteAction>) {
        self.load = load.filter(|_| self.info.cpus > 0);
        self.busy = self.load.as_ref().map_or(0, Load::busy);
        self.try_start(out);
    }

    /// Starts queued jobs while slots are free, in FIFO order. A job whose
    /// input is gone fails at once and frees its turn.
    fn try_start(&mut self, out: &mut Vec<SiteAction>) {
        while self.up && self.running() < self.info.cpus.saturating_sub(self.busy) {
            let Some(job) = self.queue.pop_front() else {
                return;
            };
            let spec = self.wf.job(job);
            if let Some(&f) = spec.inputs.iter().find(|&&f| !self.pool.has(f)) {
                let failure = JobFailure::MissingInput(self.wf.files()[f].name.clone());
                out.push(SiteAction::Emit(Event::JobEnded {
                    job,
                    site: self.id,
                    result: Err(failure),
                }));
                continue;
            }
            for &f in &spec.inputs {
                self.pool.touch(f);
            }
            self.running.push(job);
            self.jobs_run += 1;
            // A clustered job's slot runs its first member first (seqexec).
            let runtime = match spec.members.first() {
                Some(m) => {
                    self.member_at.insert(job, 0);
                    m.runtime
                }
                None => spec.runtime,
            };
            let nominal = runtime / (self.info.speed * self.speed_factor) + self.info.overhead;
            out.push(SiteAction::Emit(Event::JobStarted { job, site: self.id }));
            out.push(SiteAction::Run { job, nominal });
        }
    }

    /// Whether `job`'s inputs and outputs could ever be here at once.
    fn could_ever_run(&self, job: JobId) -> bool {
        let (wf, spec) = (&self.wf, self.wf.job(job));
        let files = spec.inputs.iter().chain(&spec.outputs);
        self.pool
            .could_ever_hold(files.map(|&f| (f, wf.files()[f].size)))
    }

    /// `job`'s run is over: reserves room for its outputs. `Some(outputs)`
    /// to write (the engine writes their bytes, then calls
    /// [`Site::outputs_written`]); `None` when they do not fit, in which case
    /// the job has already ended with [`JobFailure::NoSpace`].
    pub fn end_run(&mut self, job: JobId, out: &mut Vec<SiteAction>) -> Option<Vec<FileId>> {
        // A run the site lost in a crash ends unseen.
        let i = self.running.iter().position(|&j| j == job)?;
        self.running.swap_remove(i);
        self.ending.push(job);
        let wf = self.wf.clone();
        let member = self.member_at.get(&job).copied();
        let last = member.is_none_or(|k| k + 1 == wf.job(job).members.len());
        // A program that exits non-zero leaves no outputs behind; the first
        // member to fail stops its cluster (seqexec's firstjobfail).
        let status = if self.exit_faults.step() {
            out.push(SiteAction::Emit(Event::Fault {
                site: self.id,
                fault: Fault::Exit {
                    job,
                    status: self.exit_status,
                },
            }));
            self.exit_status
        } else if last {
            self.exits.get(&job).copied().unwrap_or(0)
        } else {
            0
        };
        if status != 0 {
            if let Some(k) = member {
                self.member_ended(job, k, status, out);
            }
            self.finish(job, Err(JobFailure::Exit(status)), out);
            return None;
        }
        let mut reserved = Vec::new();
        for o in self.writing(job).to_vec() {
            match self.pool.begin_write(o, wf.files()[o].size) {
                Ok(r) => {
                    self.evicted(r.evicted, out);
                    reserved.push(o);
                }
                Err(e) => {
                    for &r in &reserved {
                        self.pool.abort_write(r);
                    }
                    let never = e.never || !self.could_ever_run(job);
                    self.finish(job, Err(JobFailure::NoSpace { never }), out);
                    return None;
                }
            }
        }
        Some(reserved)
    }

    /// The outputs reserved by [`Site::end_run`] are written (`Ok`) or could
    /// not be (`Err`: why): they are kept for good or dropped, and the job
    /// ends.
    pub fn outputs_written(
        &mut self,
        job: JobId,
        written: Result<(), String>,
        out: &mut Vec<SiteAction>,
    ) {
        if !self.ending.contains(&job) {
            return; // lost in a crash meanwhile
        }
        let wf = self.wf.clone();
        let files = self.writing(job).to_vec();
        let result = match written {
            Ok(()) => {
                for &o in &files {
                    self.pool.commit_write(o);
                    self.pool.keep(o);
                }
                Ok(())
            }
            Err(msg) => {
                for &o in &files {
                    self.pool.abort_write(o);
                }
                Err(JobFailure::Failed(msg))
            }
        };
        // A member that ended well hands the slot to the next member.
        if let (Ok(()), Some(k)) = (&result, self.member_at.get(&job).copied()) {
            self.member_ended(job, k, 0, out);
            let members = &wf.job(job).members;
            if k + 1 < members.len() {
                self.member_at.insert(job, k + 1);
                self.ending.retain(|&j| j != job);
                self.running.push(job);
                let nominal = members[k + 1].runtime / (self.info.speed * self.speed_factor);
                out.push(SiteAction::Run { job, nominal });
                return;
            }
        }
        self.finish(job, result, out);
    }

    /// The outputs `job` writes as its current program ends: its current
    /// member's, or all of a job that is one program.
    fn writing(&self, job: JobId) -> &[FileId] {
        let spec = self.wf.job(job);
        match self.member_at.get(&job) {
            Some(&k) => &spec.members[k].outputs,
            None => &spec.outputs,
        }
    }

    fn member_ended(&self, job: JobId, member: usize, status: i32, out: &mut Vec<SiteAction>) {
        out.push(SiteAction::Emit(Event::MemberEnded {
            job,
            site: self.id,
            member,
            status,
        }));
    }

    /// A running job failed before its outputs (an input did not verify):
    /// it ends with `failure` and frees its slot.
    pub fn fail_run(&mut self, job: JobId, failure: JobFailure, out: &mut Vec<SiteAction>) {
        let Some(i) = self.running.iter().position(|&j| j == job) else {
            return; // lost in a crash meanwhile
        };
        self.running.swap_remove(i);
        self.ending.push(job);
        self.finish(job, Err(failure), out);
    }

    fn finish(&mut self, job: JobId, result: Result<(), JobFailure>, out: &mut Vec<SiteAction>) {
        self.peak_used = self.peak_used.max(self.pool.used());
        self.ending.retain(|&j| j != job);
        self.member_at.remove(&job);
        self.exits.remove(&job);
        out.push(SiteAction::Emit(Event::JobEnded {
            job,
            site: self.id,
            result,
        }));
        self.try_start(out);
    }

    fn evicted(&mut self, files: Vec<FileId>, out: &mut Vec<SiteAction>) {
        self.peak_used = self.peak_used.max(self.pool.used());
        for file in files {
            out.push(SiteAction::Remove {
                file,
                evicted: true,
            });
            out.push(SiteAction::Emit(Event::FileEvicted {
                site: self.id,
                file,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::background::Background;
    use crate::core::{File, JobSpec};
    use SiteAction::{Emit, Run};

    /// Jobs `j0..j3`, each reading `in` (10 B) and writing `o{i}` (`out` B);
    /// `j3` also reads `absent`, which no pool holds.
    fn site(cpus: usize, disk: u64, out: u64, load: Option<Background>) -> Site {
        let mut files = vec![
            File {
                name: "in".into(),
                size: 10,
            },
            File {
                name: "absent".into(),
                size: 10,
            },
        ];
        let mut jobs = Vec::new();
        for i in 0..4 {
            files.push(File {
                name: format!("o{i}"),
                size: out,
            });
            let mut inputs = vec!["in".to_string()];
            if i == 3 {
                inputs.push("absent".into());
            }
            jobs.push(JobSpec {
                name: format!("j{i}"),
                runtime: 60.0,
                inputs,
                outputs: vec![format!("o{i}")],
                ..Default::default()
            });
        }
        let wf = Arc::new(Workflow::build(files, jobs).unwrap());
        let mut pool = Pool::new(disk, crate::policy::eviction_policy("lru", 1).unwrap());
        pool.place_origin(0, 10).unwrap();
        let info = SiteInfo {
            name: "s".into(),
            cpus,
            disk,
            speed: 2.0,
            overhead: 5.0,
        };
        let load = load.map(|b| Load::new(b, cpus, 7));
        Site::new(0, info, wf, pool, load)
    }

    fn started(out: &[SiteAction]) -> Vec<JobId> {
        out.iter()
            .filter_map(|a| match a {
                Run { job, .. } => Some(*job),
                _ => None,
            })
            .collect()
    }

    fn ended(out: &[SiteAction]) -> Vec<(JobId, Result<(), JobFailure>)> {
        out.iter()
            .filter_map(|a| match a {
                Emit(Event::JobEnded { job, result, .. }) => Some((*job, result.clone())),
                _ => None,
            })
            .collect()
    }

    /// Ends the run of `job` with its outputs written.
    fn complete(s: &mut Site, job: JobId, out: &mut Vec<SiteAction>) {
        assert!(s.end_run(job, out).is_some());
        s.outputs_written(job, Ok(()), out);
    }

    #[test]
    fn jobs_take_free_slots_in_fifo_order_for_runtime_over_speed_plus_overhead() {
        let mut s = site(2, 1000, 5, None);
        let mut out = Vec::new();
        for j in [2, 0, 1] {
            s.submit(j, Ok(0), &mut out);
        }
        assert_eq!(started(&out), vec![2, 0]);
        assert_eq!(
            out[..2],
            [
                Emit(Event::JobStarted { job: 2, site: 0 }),
                Run {
                    job: 2,
                    nominal: 60.0 / 2.0 + 5.0
                }
            ]
        );
        assert_eq!((s.queued(), s.running()), (1, 2));
        out.clear();
        complete(&mut s, 0, &mut out);
        // The end is reported before the next job starts in the freed slot.
        assert_eq!(ended(&out), vec![(0, Ok(()))]);
        assert_eq!(started(&out), vec![1]);
        assert!(s.pool().has(2), "o0 (file 2) written and kept");
        assert_eq!(s.jobs_run(), 3);
    }

    /// One clustered job of three members (20, 40, 60 s, each writing its
    /// own output) on a site of speed 2 and 5 s overhead.
    fn cluster_site(faults: crate::core::faults::FaultSpec) -> Site {
        let files: Vec<File> = ["in", "m0", "m1", "m2"]
            .iter()
            .map(|n| File {
                name: n.to_string(),
                size: 10,
            })
            .collect();
        let members = (0..3)
            .map(|k| {
                (
                    format!("m{k}"),
                    20.0 * (k + 1) as f64,
                    vec![format!("m{k}")],
                )
            })
            .collect();
        let wf = Workflow::build(
            files,
            vec![JobSpec {
                name: "cluster".into(),
                runtime: 120.0,
                inputs: vec!["in".into()],
                outputs: vec!["m0".into(), "m1".into(), "m2".into()],
                members,
                ..Default::default()
            }],
        )
        .unwrap();
        let mut pool = Pool::new(1000, crate::policy::eviction_policy("lru", 1).unwrap());
        pool.place_origin(0, 10).unwrap();
        let info = SiteInfo {
            name: "s".into(),
            cpus: 1,
            disk: 1000,
            speed: 2.0,
            overhead: 5.0,
        };
        let schedule = crate::core::faults::FaultSchedule::new(faults, 1);
        Site::new(0, info, Arc::new(wf), pool, None).with_exit_faults((schedule, 3))
    }

    fn member_ends(out: &[SiteAction]) -> Vec<(usize, i32)> {
        out.iter()
            .filter_map(|a| match a {
                Emit(Event::MemberEnded { member, status, .. }) => Some((*member, *status)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_clusters_members_run_one_after_another_each_writing_its_outputs() {
        let mut s = cluster_site(Default::default());
        let mut out = Vec::new();
        s.submit(0, Ok(0), &mut out);
        // The slot runs the first member (with the job's overhead) ...
        assert_eq!(
            out[1],
            Run {
                job: 0,
                nominal: 20.0 / 2.0 + 5.0
            }
        );
        for k in 0..3 {
            out.clear();
            complete(&mut s, 0, &mut out);
            assert_eq!(member_ends(&out), [(k, 0)]);
            assert!(
                s.pool().has(1 + k),
                "member {k}'s output written as it ended"
            );
            assert!(k == 2 || !s.pool().has(2 + k), "the next member's not yet");
            if k < 2 {
                // ... then each next one in the same slot, no overhead.
                let next = 20.0 * (k + 2) as f64 / 2.0;
                assert_eq!(
                    out.last(),
                    Some(&Run {
                        job: 0,
                        nominal: next
                    })
                );
                assert!(ended(&out).is_empty());
            }
        }
        assert_eq!(ended(&out), [(0, Ok(()))]);
        assert_eq!(s.running(), 0);
    }

    #[test]
    fn a_failing_member_stops_and_fails_its_cluster_as_seqexec_does() {
        // The first program run at the site exits 3: the first member
        // fails, the others never run, nothing is written.
        let once = crate::core::faults::FaultSpec {
            first: 1,
            probability: 0.0,
        };
        let mut s = cluster_site(once);
        let mut out = Vec::new();
        s.submit(0, Ok(0), &mut out);
        out.clear();
        assert!(s.end_run(0, &mut out).is_none());
        assert_eq!(member_ends(&out), [(0, 3)]);
        assert_eq!(ended(&out), [(0, Err(JobFailure::Exit(3)))]);
        assert!((1..4).all(|f| !s.pool().has(f)));
        assert_eq!(s.running(), 0, "the slot is free");
        // Run again, the cluster starts over from its first member.
        out.clear();
        s.submit(0, Ok(0), &mut out);
        for k in 0..3 {
            out.clear();
            complete(&mut s, 0, &mut out);
            assert_eq!(member_ends(&out), [(k, 0)]);
        }
        assert_eq!(ended(&out), [(0, Ok(()))]);
    }

    #[test]
    fn background_load_holds_slots_until_it_frees_them() {
        let trace = Background::Trace(vec![(0.0, 2), (10.0, 0)]);
        let mut s = site(3, 1000, 5, Some(trace));
        assert_eq!(s.background_busy(), 2);
        let mut out = Vec::new();
        for j in 0..3 {
            s.submit(j, Ok(0), &mut out);
        }
        assert_eq!(started(&out), vec![0], "one slot of three is free");
        assert_eq!(s.next_load_change(), Some(10.0));
        out.clear();
        s.step_load(&mut out);
        assert_eq!(s.background_busy(), 0);
        assert_eq!(started(&out), vec![1, 2]);
        assert_eq!(s.next_load_change(), None);
    }

    #[test]
    fn a_job_whose_input_is_missing_fails_at_once_and_frees_its_turn() {
        let mut s = site(1, 1000, 5, None);
        let mut out = Vec::new();
        s.submit(3, Ok(0), &mut out);
        s.submit(0, Ok(0), &mut out);
        assert_eq!(
            ended(&out),
            vec![(3, Err(JobFailure::MissingInput("absent".into())))]
        );
        assert_eq!(started(&out), vec![0]);
        assert_eq!(s.jobs_run(), 1);
    }

    #[test]
    fn an_aborted_transfer_leaves_nothing_and_a_full_pool_refuses_with_never() {
        let mut s = site(1, 20, 5, None);
        let mut out = Vec::new();
        s.pin(3);
        assert!(s.begin_fetch(9, 3, 1, &mut out));
        assert_eq!(s.pool().used(), 20, "reserved while it flows");
        assert!(!s.serves(1), "not served before it is complete");
        s.end_fetch(9, 1, Err(TransferFailure::SourceMissing), &mut out);
        assert_eq!(s.pool().used(), 10);
        assert!(!s.serves(1));
        assert_eq!(
            out,
            [Emit(Event::TransferDone {
                id: 9,
                result: Err(TransferFailure::SourceMissing)
            })]
        );
        // A pool of 15 B can never hold `in` and `absent` (20 B) together.
        let mut s = site(1, 15, 5, None);
        out.clear();
        s.pin(3);
        assert!(!s.begin_fetch(4, 3, 1, &mut out));
        assert_eq!(
            out,
            [Emit(Event::TransferDone {
                id: 4,
                result: Err(TransferFailure::NoSpace { never: true })
            })]
        );
        assert_eq!(s.pool().used(), 10);
    }

    #[test]
    fn outputs_that_do_not_fit_or_fail_to_write_are_dropped_and_free_the_slot() {
        // 10 B of input leave no room for a 20 B output in 25 B.
        let mut s = site(1, 25, 20, None);
        let mut out = Vec::new();
        s.submit(0, Ok(0), &mut out);
        s.submit(1, Ok(0), &mut out);
        out.clear();
        assert!(s.end_run(0, &mut out).is_none());
        assert_eq!(
            ended(&out),
            vec![(0, Err(JobFailure::NoSpace { never: true }))]
        );
        assert_eq!(started(&out), vec![1]);
        assert_eq!(s.pool().used(), 10);
        out.clear();
        let mut s = site(1, 1000, 5, None);
        s.submit(0, Ok(0), &mut out);
        assert_eq!(s.end_run(0, &mut out), Some(vec![2]));
        assert_eq!(s.pool().used(), 15);
        s.outputs_written(0, Err("disk full".into()), &mut out);
        assert_eq!(
            ended(&out),
            vec![(0, Err(JobFailure::Failed("disk full".into())))]
        );
        assert_eq!((s.pool().used(), s.running()), (10, 0));
        assert!(!s.serves(2));
    }

    #[test]
    fn a_kill_removes_a_queued_job_and_is_void_for_a_running_one() {
        let mut s = site(1, 1000, 5, None);
        let mut out = Vec::new();
        s.submit(0, Ok(0), &mut out);
        s.submit(1, Ok(0), &mut out);
        out.clear();
        assert!(s.kill(1, &mut out));
        assert!(!s.kill(0, &mut out));
        assert_eq!(
            out,
            [
                Emit(Event::JobKilled {
                    job: 1,
                    site: 0,
                    killed: true
                }),
                Emit(Event::JobKilled {
                    job: 0,
                    site: 0,
                    killed: false
                })
            ]
        );
        out.clear();
        complete(&mut s, 0, &mut out);
        assert!(started(&out).is_empty(), "the killed job is gone");
    }

    #[test]
    fn a_removal_drops_a_job_queued_running_or_writing_and_frees_its_slot() {
        let mut s = site(1, 1000, 5, None);
        let mut out = Vec::new();
        for j in 0..3 {
            s.submit(j, Ok(0), &mut out);
        }
        out.clear();
        // Queued: gone from the line, nothing said, nothing started.
        s.remove(1, &mut out);
        assert!(out.is_empty());
        // Running: its slot goes to the next in line at once.
        s.remove(0, &mut out);
        assert_eq!(started(&out), vec![2]);
        assert!(out.iter().all(|a| !matches!(a, Emit(Event::JobEnded { .. }))));
        // Its timed run ends unseen.
        out.clear();
        assert!(s.end_run(0, &mut out).is_none());
        assert!(out.is_empty());
        // Writing: the reserved output is dropped, as is its late report.
        assert_eq!(s.end_run(2, &mut out), Some(vec![4]));
        assert_eq!(s.pool().used(), 15);
        s.remove(2, &mut out);
        s.outputs_written(2, Ok(()), &mut out);
        assert!(ended(&out).is_empty());
        assert_eq!((s.pool().used(), s.running()), (10, 0));
        assert!(!s.serves(4));
    }

    #[test]
    fn evictions_remove_bytes_and_tell_the_manager_and_release_deletes() {
        let mut s = site(3, 30, 5, None);
        let mut out = Vec::new();
        s.pin(3);
        assert!(s.begin_fetch(1, 3, 1, &mut out));
        s.end_fetch(1, 1, Ok(10), &mut out);
        s.release(3, &[], &mut out);
        out.clear();
        // `in` and the unpinned `absent` (20 B) leave room for o0 and o1.
        for j in 0..3 {
            s.submit(j, Ok(0), &mut out);
        }
        complete(&mut s, 0, &mut out);
        complete(&mut s, 1, &mut out);
        assert!(!out.iter().any(|a| matches!(a, SiteAction::Remove { .. })));
        // The next 5 B evicts it.
        out.clear();
        complete(&mut s, 2, &mut out);
        assert_eq!(
            out[..2],
            [
                SiteAction::Remove {
                    file: 1,
                    evicted: true
                },
                Emit(Event::FileEvicted { site: 0, file: 1 })
            ]
        );
        // Replica policy `delete`: the staged copy goes when released.
        let mut s = site(1, 30, 5, None);
        out.clear();
        s.pin(3);
        s.begin_fetch(1, 3, 1, &mut out);
        s.end_fetch(1, 1, Ok(10), &mut out);
        out.clear();
        s.release(3, &[1], &mut out);
        assert_eq!(
            out,
            [SiteAction::Remove {
                file: 1,
                evicted: false
            }]
        );
        assert!(!s.serves(1));
    }

    #[test]
    fn a_crash_ends_queued_and_running_jobs_drops_the_pool_and_its_runs_end_unseen() {
        let mut s = site(1, 1000, 5, None);
        let mut out = Vec::new();
        s.submit(0, Ok(0), &mut out);
        s.submit(1, Ok(0), &mut out);
        assert_eq!(started(&out), [0]);
        out.clear();
        s.fault(&Fault::Crash { pool_lost: true }, &mut out);
        assert_eq!(
            out[0],
            Emit(Event::Fault {
                site: 0,
                fault: Fault::Crash { pool_lost: true }
            }),
            "the manager hears of the crash first"
        );
        let failed = Err(JobFailure::Failed("site crashed".into()));
        assert_eq!(ended(&out), [(0, failed.clone()), (1, failed)]);
        assert!(out.contains(&SiteAction::Remove {
            file: 0,
            evicted: false
        }));
        assert_eq!((s.pool().used(), s.running(), s.queued()), (0, 0, 0));
        assert!(!s.serves(0) && !s.is_up());
        // The run that was going ends unseen; nothing is accepted while down.
        out.clear();
        assert_eq!(s.end_run(0, &mut out), None);
        assert!(out.is_empty());
        s.submit(2, Ok(0), &mut out);
        assert!(matches!(ended(&out)[..], [(2, Err(_))]));
        out.clear();
        assert!(!s.begin_fetch(9, 2, 0, &mut out));
        out.clear();
        s.fault(&Fault::Recover, &mut out);
        assert!(s.is_up());
        s.submit(2, Ok(0), &mut out);
        // Its input went with the pool: it fails at once, as a missing input.
        assert!(matches!(
            ended(&out)[..],
            [(2, Err(JobFailure::MissingInput(_)))]
        ));
    }

    #[test]
    fn a_crash_that_keeps_the_pool_keeps_its_files_and_unpins_them() {
        let mut s = site(1, 1000, 5, None);
        let mut out = Vec::new();
        s.pin(0);
        s.submit(0, Ok(0), &mut out);
        s.fault(&Fault::Crash { pool_lost: false }, &mut out);
        assert!(s.pool().has(0) && !s.pool().is_pinned(0));
        out.clear();
        s.fault(&Fault::Recover, &mut out);
        s.submit(1, Ok(0), &mut out);
        assert_eq!(started(&out), [1], "its input is still here");
    }

    #[test]
    fn a_slow_spell_stretches_the_runs_that_start_in_it_and_a_shrink_evicts() {
        let mut s = site(2, 1000, 5, None);
        let mut out = Vec::new();
        s.fault(&Fault::Slow { factor: 0.5 }, &mut out);
        s.submit(0, Ok(0), &mut out);
        // runtime 60 / (speed 2 × 0.5) + overhead 5
        assert!(out.contains(&Run {
            job: 0,
            nominal: 65.0
        }));
        s.fault(&Fault::SlowEnd, &mut out);
        out.clear();
        s.submit(1, Ok(0), &mut out);
        assert!(out.contains(&Run {
            job: 1,
            nominal: 35.0
        }));
        let mut s = site(1, 1000, 5, None);
        let mut out = Vec::new();
        s.submit(0, Ok(0), &mut out);
        let outputs = s.end_run(0, &mut out).unwrap();
        assert_eq!(outputs, [2]);
        s.outputs_written(0, Ok(()), &mut out);
        s.cleanup(2);
        out.clear();
        s.fault(&Fault::Shrink { disk: 12 }, &mut out);
        assert!(out.contains(&Emit(Event::FileEvicted { site: 0, file: 2 })));
        assert_eq!((s.pool().capacity(), s.pool().used()), (12, 10));
    }
}
