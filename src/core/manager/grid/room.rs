//! Storage-aware release (Ramakrishnan et al., "Scheduling data-intensive
//! workflows onto storage-constrained distributed resources", CCGrid 2007):
//! a prescript places a job only at a site whose disk can hold, beside
//! what is committed there already, the job's inputs not yet held there
//! and its outputs. A job no site has room for now waits for room without
//! an attempt, and is offered again as soon as room is freed.
//!
//! What is committed at a site is the manager's own ledger, the same in
//! both engines: the origin copies placed there, the outputs kept there
//! for jobs yet to read them (until their cleanup), and the inputs and
//! outputs of every job placed there (from its prescript until its pins
//! are released). Cached copies nothing holds are not committed: a pool
//! evicts them to make room.
//!
//! Why it cannot deadlock a pipeline: a job that starts new work (a root,
//! with no parent) may not take the last `reserve` bytes of a site while
//! other jobs hold files anywhere, `reserve` being the largest footprint of
//! a job that continues work (one with parents). The kept outputs that the
//! roots leave behind can therefore never fill a disk past the room their
//! readers need; a reader that leaves no more kept bytes than it found (a
//! pipeline's, the tight-disk case's) frees its room again when it ends.
//! With `submit_depth_first`, those readers are also offered before new
//! roots. A job that grows the kept bytes (a fan-in whose inputs others
//! still read) may still fill a disk: then the wait for room ends as
//! before, failing the job once no job has ended anywhere for long.

use super::*;

use rustc_hash::FxHashSet as HashSet;
use std::collections::BTreeMap;

/// Per job: waits for room in a row with no job ended in between, when
/// the first of them was, and the manager's `progress` at the last.
pub(crate) struct RoomStall {
    pub(crate) waits: Vec<u32>,
    pub(crate) since: Vec<Time>,
    pub(crate) progress_seen: Vec<u64>,
    /// Twice the longest a job can take from submission to its node's end
    /// at any site: no job ending for longer means none is about to.
    pub(crate) horizon: Time,
}

/// The bytes committed at each site, and the jobs waiting for room.
#[derive(Debug, Default)]
pub(crate) struct Room {
    on: bool,
    disk: Vec<u64>,
    /// Per site: it has CPUs.
    runs: Vec<bool>,
    committed: Vec<u64>,
    /// Holders of each copy: jobs placed at its site, its keeping as an
    /// output, its being an origin copy.
    holds: HashMap<(FileId, SiteId), u32>,
    /// Output copies kept for their readers (held once each).
    kept: HashSet<(FileId, SiteId)>,
    /// Per job: the site where it holds its files.
    held_at: Vec<Option<SiteId>>,
    /// Jobs holding files anywhere.
    holding: usize,
    reserve: u64,
    /// Per job: its inputs' and outputs' bytes, the most it can need.
    footprint: Vec<u64>,
    /// Per site: its disk holds every file of the workflow and a reserve
    /// beside, so it always has room and keeps no ledger.
    roomy: Vec<bool>,
    /// Jobs waiting for room, by the least they need and then by arrival.
    waiting: BTreeMap<(u64, u64), JobId>,
    wait_key: Vec<Option<(u64, u64)>>,
    seq: u64,
    /// Room was freed since the waiting jobs were last looked at.
    freed: bool,
    /// A `RoomCheck` timer is pending.
    check_pending: bool,
    /// Jobs ended at the last `RoomCheck`.
    progress_seen: u64,
}

impl Room {
    /// The ledger for `wf` on `sites`, with the origin
    /// copies in `placement`; `on` false keeps no ledger (every site has
    /// room as long as it can ever hold the job).
    pub(crate) fn new(
        on: bool,
        wf: &RunDag,
        sites: &[SiteInfo],
        placement: &[(FileId, SiteId)],
    ) -> Room {
        let n = wf.job_count();
        let footprint: Vec<u64> = if on {
            (0..n).map(|j| wf.footprint(j)).collect()
        } else {
            Vec::new()
        };
        let reserve = (0..footprint.len())
            .filter(|&j| !wf.job(j).parents.is_empty())
            .map(|j| footprint[j])
            .max()
            .unwrap_or(0);
        let all: u64 = wf.files().iter().map(|f| f.size).sum();
        let roomy = sites
            .iter()
            .map(|s| s.disk >= all.saturating_add(reserve))
            .collect();
        let mut room = Room {
            on,
            roomy,
            committed: vec![0; sites.len()],
            disk: sites.iter().map(|s| s.disk).collect(),
            runs: sites.iter().map(|s| s.cpus > 0).collect(),
            held_at: vec![None; if on { n } else { 0 }],
            wait_key: vec![None; if on { n } else { 0 }],
            reserve,
            footprint,
            ..Room::default()
        };
        if on {
            for &(f, s) in placement {
                room.hold(wf, f, s);
            }
        }
        room
    }

    /// The ledger follows `jobs` jobs (a sub-DAG's, which move no data,
    /// were added).
    pub(crate) fn grow(&mut self, jobs: usize) {
        if self.on {
            self.held_at.resize(jobs, None);
            self.wait_key.resize(jobs, None);
            self.footprint.resize(jobs, 0);
        }
    }

    fn hold(&mut self, wf: &RunDag, file: FileId, site: SiteId) {
        if self.roomy[site] {
            return;
        }
        let n = self.holds.entry((file, site)).or_insert(0);
        if *n == 0 {
            self.committed[site] = self.committed[site].saturating_add(wf.files()[file].size);
        }
        *n += 1;
    }

    fn unhold(&mut self, wf: &RunDag, file: FileId, site: SiteId) {
        if self.roomy[site] {
            return;
        }
        let Some(n) = self.holds.get_mut(&(file, site)) else {
            return; // lost with its site's pool
        };
        *n -= 1;
        if *n == 0 {
            self.holds.remove(&(file, site));
            self.committed[site] = self.committed[site].saturating_sub(wf.files()[file].size);
            self.freed = true;
        }
    }

    /// Bytes `job` would add to what is committed at `site`.
    pub(crate) fn need(&self, wf: &RunDag, job: JobId, site: SiteId) -> u64 {
        let j = wf.job(job);
        j.inputs
            .iter()
            .chain(&j.outputs)
            .filter(|&&f| !self.holds.contains_key(&(f, site)))
            .map(|&f| wf.files()[f].size)
            .sum()
    }

    /// The room `job` must leave free: the reserve for a root while other
    /// jobs hold files.
    fn reserve_for(&self, wf: &RunDag, job: JobId) -> u64 {
        if wf.job(job).parents.is_empty() && self.holding > 0 {
            self.reserve
        } else {
            0
        }
    }

    /// Whether `site` has room for `job` now (see the module's note on the
    /// reserve).
    pub(crate) fn fits(&self, wf: &RunDag, job: JobId, site: SiteId) -> bool {
        if !self.on || self.roomy[site] {
            return true;
        }
        let reserve = self.reserve_for(wf, job);
        let free = self.disk[site].saturating_sub(self.committed[site]);
        // What a job needs is at most its footprint: a site with room for
        // all of it needs no look at which of its files are held there.
        if self.footprint[job].saturating_add(reserve) <= free {
            return true;
        }
        let need = self.need(wf, job, site);
        need == 0 || need.saturating_add(reserve) <= free
    }

    /// `job` was placed at `site`: its inputs and outputs are held there.
    pub(crate) fn place(&mut self, wf: &RunDag, job: JobId, site: SiteId) {
        if !self.on {
            return;
        }
        debug_assert!(self.held_at[job].is_none(), "placed twice");
        let j = wf.job(job);
        if !self.roomy[site] {
            for &f in j.inputs.iter().chain(&j.outputs) {
                self.hold(wf, f, site);
            }
        }
        self.held_at[job] = Some(site);
        self.holding += 1;
    }

    /// `job`'s pins are released; its outputs stay kept at its site when
    /// `kept` (it ended well and they are registered there).
    pub(crate) fn release(&mut self, wf: &RunDag, job: JobId, kept: bool) {
        if !self.on {
            return;
        }
        let Some(site) = self.held_at[job].take() else {
            return;
        };
        self.holding -= 1;
        let j = wf.job(job);
        if self.roomy[site] {
            return;
        }
        if kept {
            for &o in &j.outputs {
                if self.kept.insert((o, site)) {
                    self.hold(wf, o, site);
                }
            }
        }
        for &f in j.inputs.iter().chain(&j.outputs) {
            self.unhold(wf, f, site);
        }
    }

    /// The copy of `file` at `site` is no longer kept (its cleanup).
    pub(crate) fn unkeep(&mut self, wf: &RunDag, file: FileId, site: SiteId) {
        if self.on && self.kept.remove(&(file, site)) {
            self.unhold(wf, file, site);
        }
    }

    /// `site` crashed and lost its pool: nothing is committed there.
    pub(crate) fn lose_site(&mut self, site: SiteId) {
        if !self.on {
            return;
        }
        self.holds.retain(|&(_, s), _| s != site);
        self.kept.retain(|&(_, s)| s != site);
        self.committed[site] = 0;
        self.freed = true;
    }

    /// `job` waits for room at one of `sites`.
    pub(crate) fn wait(&mut self, wf: &RunDag, job: JobId, sites: &[SiteId]) {
        self.stop_waiting(job);
        // Keyed as if others hold room (when none does, all are woken).
        let reserve = if wf.job(job).parents.is_empty() {
            self.reserve
        } else {
            0
        };
        let need = sites
            .iter()
            .map(|&s| self.need(wf, job, s).saturating_add(reserve))
            .min()
            .unwrap_or(u64::MAX);
        self.seq += 1;
        let key = (need, self.seq);
        self.waiting.insert(key, job);
        self.wait_key[job] = Some(key);
    }

    /// `job` no longer waits for room (its back-off ran out first).
    pub(crate) fn stop_waiting(&mut self, job: JobId) {
        if let Some(key) = self.wait_key.get_mut(job).and_then(Option::take) {
            self.waiting.remove(&key);
        }
    }

    /// The jobs to offer again now that room was freed: in order of need,
    /// as many as the room freed at all sites together may hold.
    pub(crate) fn wake(&mut self, into: &mut Vec<JobId>) {
        if !std::mem::take(&mut self.freed) || self.waiting.is_empty() {
            return;
        }
        if self.holding == 0 {
            // No reserve applies now: every waiting job may fit.
            self.wake_all(into);
            return;
        }
        // Room at sites that run jobs (a storage-only site runs none).
        let free = |s: usize| {
            if self.runs[s] {
                self.disk[s].saturating_sub(self.committed[s])
            } else {
                0
            }
        };
        let most = (0..self.disk.len()).map(free).max().unwrap_or(0);
        let mut budget = (0..self.disk.len()).map(free).fold(0u64, u64::saturating_add);
        let mut keys = Vec::new();
        for (&key, &job) in self.waiting.range(..=(most, u64::MAX)) {
            if key.0 > budget {
                break;
            }
            budget -= key.0;
            keys.push(key);
            into.push(job);
        }
        for key in keys {
            if let Some(job) = self.waiting.remove(&key) {
                self.wait_key[job] = None;
            }
        }
    }

    fn wake_all(&mut self, into: &mut Vec<JobId>) {
        for (_, job) in std::mem::take(&mut self.waiting) {
            self.wait_key[job] = None;
            into.push(job);
        }
    }

    /// Bytes committed at `site`.
    #[cfg(test)]
    pub(crate) fn committed(&self, site: SiteId) -> u64 {
        self.committed[site]
    }
}

/// What a look at the jobs waiting for room finds.
#[derive(Debug, PartialEq)]
pub(crate) enum RoomCheck {
    /// Nothing to look at.
    Nothing,
    /// A job ended, or one holds room it will free: look again at this
    /// time.
    Again(Time),
    /// Nothing will free room: each waiting job, in turn, fails for good
    /// when it has none anywhere, saying why, or goes back to the ready
    /// queue.
    Verdict(Vec<(JobId, Option<String>)>),
}

impl Placement {
    /// Unpins `job`'s files at `site`, deleting `delete` there; the room
    /// its files held is free again, but for its outputs when `ended_well`
    /// leaves them registered there.
    pub(crate) fn release_pins(
        &mut self,
        wf: &RunDag,
        (job, site): (JobId, SiteId),
        delete: Vec<FileId>,
        ended_well: bool,
        out: &mut Vec<Command>,
    ) {
        let kept = ended_well && self.output_site(job, site) == site;
        self.room.release(wf, job, kept);
        out.push(Command::Release { job, site, delete });
    }

    /// No site that can run `job` (those are `could`) has room for it now:
    /// it waits. Returns when to look at the whole grid, if no look is due
    /// yet.
    pub(crate) fn wait_for_room(&mut self, wf: &RunDag, job: JobId, could: &[SiteId], now: Time) -> Option<Time> {
        self.room.wait(wf, job, could);
        if self.room.check_pending {
            return None;
        }
        self.room.check_pending = true;
        self.room.progress_seen = self.progress;
        Some(now + self.stall.horizon.max(1.0))
    }

    /// Jobs wait for room. While any job ends, or any holds room it will
    /// free, they are woken as room is freed. When no job has ended for the
    /// stall horizon and none holds room, nothing will free any: each
    /// waiting job (that is still ready, by `state`) that has no room
    /// anywhere fails (a deadlock on disk space: what the disks keep
    /// leaves it no room).
    pub(crate) fn check_room(&mut self, wf: &RunDag, sites: &[SiteInfo], state: &[JobState], now: Time) -> RoomCheck {
        self.room.check_pending = false;
        if self.room.waiting.is_empty() {
            return RoomCheck::Nothing;
        }
        if self.progress != self.room.progress_seen || self.room.holding > 0 {
            self.room.check_pending = true;
            self.room.progress_seen = self.progress;
            return RoomCheck::Again(now + self.stall.horizon.max(1.0));
        }
        let mut waiting = Vec::new();
        self.room.wake_all(&mut waiting);
        let mut eligible = std::mem::take(&mut self.eligible);
        let mut verdict = Vec::new();
        for job in waiting {
            if state[job] != JobState::Ready {
                continue;
            }
            let room = self.eligible_sites(job, sites, wf, &mut eligible);
            if matches!(room, Err(site_choice::NoSite::NoRoom(_))) {
                let why = format!(
                    "no site that can run it had room for its files ({} bytes) for {:.0} s \
                     in which no job ended anywhere and none held room to free (a deadlock \
                     on disk space: the outputs the disks keep for their readers leave no room)",
                    self.footprint[job],
                    self.stall.horizon.max(1.0)
                );
                verdict.push((job, Some(why)));
            } else {
                verdict.push((job, None));
            }
        }
        self.eligible = eligible;
        RoomCheck::Verdict(verdict)
    }
}
