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
//!
//! The placement room decides here (which jobs have a twin, which copies,
//! from where); `flight_ends.rs` says what a copy's end means as steps
//! the manager carries out, and `Manager::memoize_arrival` starts them.

use super::*;
use crate::core::versions::Twins;

/// The twins of the run and how far each memoized job's copies are.
#[derive(Debug, Default)]
pub(crate) struct Memo {
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

/// A copy that memoizes a job: its output `file`, made from its twin's
/// output `source` held at `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoCopy {
    pub file: FileId,
    pub source: FileId,
    pub from: SiteId,
}

/// What the end of a memoized job's copy means for its node.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MemoCopied {
    /// Its memoization was given up before: nothing.
    Stale,
    /// The copy failed: memoization is given up, the node runs as any
    /// other.
    GaveUp,
    /// The copy is there (registered where its site is up, freeing the
    /// jobs `waiting` for it); with `last`, the node ends.
    Copied {
        last: bool,
        waiting: Option<Vec<JobId>>,
    },
}

impl Placement {
    /// Memoizes within the run the jobs `twins` groups.
    pub(crate) fn set_twins(&mut self, twins: &Twins) {
        if twins.any() {
            self.memo = Some(Memo::new(twins));
        }
    }

    /// Whether `job` waits for its outputs' copies instead of running.
    pub(crate) fn memoizing(&self, job: JobId) -> bool {
        self.memo.as_ref().is_some_and(|m| m.copying[job] > 0)
    }

    /// `job` ended well: a later twin may take its outputs.
    pub(crate) fn memo_ended(&mut self, job: JobId) {
        if let Some(m) = self.memo.as_mut()
            && let Some(g) = m.group[job]
        {
            m.ended[g as usize].get_or_insert(job);
        }
    }

    /// Each of `jobs` whose twin ended well earlier in the run, with that
    /// twin.
    pub(crate) fn twins_ended(&self, jobs: impl Iterator<Item = JobId>) -> Vec<(JobId, JobId)> {
        let Some(m) = self.memo.as_ref() else {
            return Vec::new();
        };
        jobs.filter_map(|j| Some((j, m.ended[m.group[j]? as usize]?)))
            .collect()
    }

    /// The copies that give `job` its `twin`'s outputs at its submit
    /// machine, each from the least busy holder that is up (another site
    /// than the destination where one is); `None` when an output has no
    /// holder up (the job then runs). With `reproduce_lost`, an output only
    /// `memoized` jobs read is not needed, so not copied (were such a reader
    /// to run after all, the lost output is made again, as any other).
    pub(crate) fn memo_copies(
        &self,
        wf: &RunDag,
        (job, twin): (JobId, JobId),
        memoized: &[bool],
        reproduce_lost: bool,
    ) -> Option<Vec<MemoCopy>> {
        let to = self.home[job];
        let pairs = wf.job(job).outputs.iter().zip(&wf.job(twin).outputs);
        let mut copies = Vec::new();
        for (&file, &source) in pairs {
            let needed = !reproduce_lost
                || self.cache.unread[file]
                || (wf.children(job).iter())
                    .any(|&c| !memoized[c] && wf.job(c).inputs.contains(&file));
            if !needed {
                continue;
            }
            let from = (self.replicas.holders(source).iter().copied())
                .filter(|&s| !self.pool.down[s])
                .min_by_key(|&s| (s == to, self.transfers.serving(s), s))?;
            copies.push(MemoCopy { file, source, from });
        }
        Some(copies)
    }

    /// `job` waits for `copies` copies instead of running.
    pub(crate) fn memo_waits(&mut self, job: JobId, copies: usize) {
        if let Some(m) = self.memo.as_mut() {
            m.copying[job] = copies;
        }
    }

    /// A copy of memoized `job`'s output `file` to `to` ended, `ok` or not.
    pub(crate) fn memo_copied(&mut self, job: JobId, file: FileId, to: SiteId, ok: bool) -> MemoCopied {
        let Some(m) = self.memo.as_mut() else {
            return MemoCopied::Stale;
        };
        if m.copying[job] == 0 {
            return MemoCopied::Stale;
        }
        if !ok {
            m.copying[job] = 0;
            return MemoCopied::GaveUp;
        }
        m.copying[job] -= 1;
        let last = m.copying[job] == 0;
        let mut waiting = None;
        if !self.pool.down[to] {
            waiting = self.replicas.register(file, to);
            self.cache.made_at[file] = Some(to);
        }
        MemoCopied::Copied { last, waiting }
    }
}
