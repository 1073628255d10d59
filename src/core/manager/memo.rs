//! Memoization within a run (seed 003 §5.3, §8.4): when a workflow is
//! submitted, each of its jobs whose version already ended well earlier in
//! the run (a twin: same program, arguments and input versions) is not
//! planned nor run. Its outputs are "transferred directly to the user": each
//! is copied from where the twin's output is cached to the job's submit
//! machine, and the node ends when the last copy is there. A copy that
//! fails (its source lost, the submit machine full) gives the job back to
//! the workflow: it runs as any other, so nothing is lost.
//!
//! Memoization across runs (the database of earlier runs) is the config
//! layer's: those jobs are DONE before the run starts.

use super::*;
use crate::core::versions::Twins;

/// The twins of the run and how far each memoized job's copies are.
#[derive(Debug, Default)]
pub(super) struct Memo {
    /// Per job: its group of twins, if any.
    group: Vec<Option<u32>>,
    /// Per group: the first of its jobs that ended well.
    ended: Vec<Option<JobId>>,
    /// Per job: outputs still being copied (0: not memoizing).
    copying: Vec<usize>,
}

impl Memo {
    fn new(twins: &Twins) -> Memo {
        let groups = twins.group.iter().flatten().map(|&g| g as usize + 1).max();
        Memo {
            group: twins.group.clone(),
            ended: vec![None; groups.unwrap_or(0)],
            copying: vec![0; twins.group.len()],
        }
    }
}

impl Placement {
    /// Whether `job` waits for its outputs' copies instead of running.
    pub(super) fn memoizing(&self, job: JobId) -> bool {
        self.memo.as_ref().is_some_and(|m| m.copying[job] > 0)
    }

    /// `job` ended well: a later twin may take its outputs.
    pub(super) fn memo_ended(&mut self, job: JobId) {
        if let Some(m) = self.memo.as_mut()
            && let Some(g) = m.group[job]
        {
            m.ended[g as usize].get_or_insert(job);
        }
    }
}

impl Manager {
    /// Memoizes within the run the jobs `twins` groups; call before the
    /// first event.
    pub fn set_twins(&mut self, twins: &Twins) {
        assert_eq!(twins.group.len(), self.wf.jobs.len());
        if twins.any() {
            self.grid.memo = Some(Memo::new(twins));
        }
    }

    /// Workflow `submission` arrives (§8.4's planning cycle): its jobs whose
    /// twin ended earlier are memoized.
    pub(super) fn memoize_arrival(&mut self, submission: usize, out: &mut Vec<Command>) {
        let Some(m) = self.grid.memo.as_ref() else {
            return;
        };
        let found: Vec<(JobId, JobId)> = (0..self.wf.jobs.len())
            .filter(|&j| self.dag.submissions.of_job[j] == submission)
            .filter(|&j| matches!(self.dag.state[j], JobState::Waiting | JobState::Ready))
            .filter_map(|j| Some((j, m.ended[m.group[j]? as usize]?)))
            .collect();
        let mut memoized = vec![false; self.wf.jobs.len()];
        for &(j, _) in &found {
            memoized[j] = true;
        }
        for (job, twin) in found {
            self.memoize(job, twin, &memoized, out);
        }
    }

    /// Copies `twin`'s outputs to `job`'s submit machine as `job`'s, if
    /// every one is cached on a site that is up. An output only `memoized`
    /// jobs read is not needed, so not copied (were such a reader to run
    /// after all, the lost output is made again, as any other).
    fn memoize(&mut self, job: JobId, twin: JobId, memoized: &[bool], out: &mut Vec<Command>) {
        let to = self.grid.home[job];
        let mut copies = Vec::new();
        let wf = self.wf.clone();
        let pairs = wf.jobs[job].outputs.iter().zip(&wf.jobs[twin].outputs);
        for (&file, &source) in pairs {
            let needed = !self.settings.reproduce_lost
                || self.grid.cache.unread[file]
                || wf.children[job]
                    .iter()
                    .any(|&c| !memoized[c] && wf.jobs[c].inputs.contains(&file));
            if !needed {
                continue;
            }
            // The least busy holder, another site than the destination
            // where one is.
            let from = self
                .grid.replicas
                .holders(source)
                .iter()
                .copied()
                .filter(|&s| !self.grid.pool.down[s])
                .min_by_key(|&s| (s == to, self.grid.transfers.serving(s), s));
            match from {
                Some(from) => copies.push((file, source, from)),
                None => return,
            }
        }
        if self.dag.state[job] == JobState::Ready {
            // Its ready-queue entry is skipped as stale.
            self.set_state(job, JobState::Waiting);
            self.records.jobs[job].ready = None;
        }
        if copies.is_empty() {
            self.memo_done(job);
            return;
        }
        if let Some(m) = self.grid.memo.as_mut() {
            m.copying[job] = copies.len();
        }
        for (file, source, from) in copies {
            let kind = FlightKind::Memo { source };
            self.start_flight((job, usize::MAX), file, from, to, kind, false, out);
        }
    }

    /// A copy of memoized `job`'s output `file` to `to` ended.
    pub(super) fn on_memo_copied(&mut self, job: JobId, file: FileId, to: SiteId, ok: bool) {
        let Some(m) = self.grid.memo.as_mut() else {
            return;
        };
        if m.copying[job] == 0 {
            return; // memoization was given up: the job runs
        }
        if !ok {
            m.copying[job] = 0;
            if self.dag.missing_parents[job] == 0 {
                self.make_ready(job);
            }
            return;
        }
        m.copying[job] -= 1;
        let last = m.copying[job] == 0;
        if !self.grid.pool.down[to] {
            self.register(file, to);
            self.grid.cache.made_at[file] = Some(to);
        }
        if last {
            self.memo_done(job);
        }
    }

    /// Memoized `job`'s node ends.
    fn memo_done(&mut self, job: JobId) {
        self.records.jobs[job].memoized = Some(self.now);
        self.complete_without_running(job);
        self.grid.memo_ended(job);
    }
}
