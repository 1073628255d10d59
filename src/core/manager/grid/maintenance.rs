//! Cache maintenance and k-replication (seed 003 §6): after a job ends at a
//! site, if the files cached there exceed the site's bound
//! (`cache_bound`), files are deleted in increasing worth until the cache
//! is below it. Files needed by jobs planned on or claiming the site are
//! exempt (§6.1), and so are copies the grid keeps — the submit machine's
//! inputs, and an output where it was written while a job may still read
//! it (or, final, for good). With `replicas = k`, a file whose copies
//! would fall below k is first moved to the execute site with the most
//! free room under its bound that lacks a copy, and deleted here once it
//! arrived; with no room anywhere, it is deleted without a copy (§6.2).
//!
//! The placement room decides here; `flight_ends.rs` turns the decisions
//! into steps the manager carries out.

use super::*;
use crate::core::seams::{CacheWorth, CachedFile};

/// What cache maintenance keeps between jobs.
pub(crate) struct Cache {
    /// The ranking, when a bound is set.
    pub(crate) worth: Option<Box<dyn CacheWorth>>,
    /// Per file: the submission times of the jobs that used it.
    pub(crate) uses: Vec<Vec<Time>>,
    /// Per file: the site it was written at.
    pub(crate) made_at: Vec<Option<SiteId>>,
    /// Per file: no job reads it (a final output).
    pub(crate) unread: Vec<bool>,
    /// The initial copies (sorted).
    pub(crate) origin_copies: Vec<(FileId, SiteId)>,
    /// Copies being moved away (file, from).
    pub(crate) replicating: Vec<(FileId, SiteId)>,
    /// The sites whose cache a job's end asks to check.
    pub(crate) maintenance_due: Vec<(SiteId, JobId)>,
}

/// One step of bringing a site's cache back under its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheStep {
    /// k-replication: `file` moves from `from` to `to` before it is
    /// deleted at `from`.
    Replicate { file: FileId, from: SiteId, to: SiteId },
    /// The copy of `file` at `site` is deleted.
    Delete { file: FileId, site: SiteId },
}

/// The grid as cache maintenance sees it.
pub(crate) struct CacheView<'a> {
    pub wf: &'a RunDag,
    pub sites: &'a [SiteInfo],
    /// Each job's state in the node life cycle.
    pub state: &'a [JobState],
    pub now: Time,
    /// `replicas = k`.
    pub k: usize,
}

impl Placement {
    /// Ranks caches for maintenance with `worth`.
    pub(crate) fn set_cache_worth(&mut self, worth: Box<dyn CacheWorth>) {
        self.cache.worth = Some(worth);
    }

    /// `job` was submitted at `now`: a use of each of its files.
    pub(crate) fn note_uses(&mut self, wf: &RunDag, job: JobId, now: Time) {
        let j = wf.job(job);
        for &f in j.inputs.iter().chain(&j.outputs) {
            self.cache.uses[f].push(now);
        }
    }

    /// What brings `site`'s cache back under `bound`, in increasing worth
    /// (see the module docs); nothing when it is under it, holds no slot
    /// or is down.
    pub(crate) fn cache_plan(&mut self, v: &CacheView, site: SiteId, bound: u64) -> Vec<CacheStep> {
        let wf = v.wf;
        if v.sites[site].cpus == 0 || self.pool.down[site] {
            return Vec::new();
        }
        let mut bytes = self.cached_bytes(wf, v.sites.len());
        if bytes[site] <= bound {
            return Vec::new();
        }
        // Files of the jobs planned here or holding a slot here.
        let mut exempt: Vec<FileId> = Vec::new();
        for (j, st) in v.state.iter().enumerate() {
            let here = match st {
                JobState::Staging | JobState::Queued | JobState::Running => self.site_of[j] == site,
                JobState::Waiting | JobState::Ready => self.selector.planned(j) == Some(site),
                _ => false,
            };
            if here {
                let jb = wf.job(j);
                exempt.extend(jb.inputs.iter().chain(&jb.outputs));
            }
        }
        exempt.sort_unstable();
        let Some(mut worth) = self.cache.worth.take() else {
            return Vec::new();
        };
        let mut ranked: Vec<(f64, FileId)> = (0..wf.files().len())
            .filter(|&f| self.replicas.has(f, site))
            .filter(|&f| !self.kept_at(f, site) && exempt.binary_search(&f).is_err())
            .filter(|&f| !self.cache.replicating.contains(&(f, site)))
            .map(|f| {
                let c = CachedFile {
                    file: f,
                    size: wf.files()[f].size,
                    copies: self.replicas.holders(f).len(),
                    uses: &self.cache.uses[f],
                    now: v.now,
                };
                (worth.worth(&c), f)
            })
            .collect();
        self.cache.worth = Some(worth);
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut steps = Vec::new();
        for (_, file) in ranked {
            if bytes[site] <= bound {
                break;
            }
            let size = wf.files()[file].size;
            bytes[site] -= size;
            if v.k > 0 && self.replicas.holders(file).len() <= v.k {
                let target = (0..v.sites.len())
                    .filter(|&s| s != site && v.sites[s].cpus > 0 && !self.pool.down[s])
                    .filter(|&s| !self.replicas.has(file, s) && bytes[s] + size <= bound)
                    .max_by_key(|&s| (bound - bytes[s], std::cmp::Reverse(s)));
                if let Some(to) = target {
                    bytes[to] += size;
                    self.cache.replicating.push((file, site));
                    steps.push(CacheStep::Replicate { file, from: site, to });
                    continue;
                }
            }
            steps.push(CacheStep::Delete { file, site });
        }
        steps
    }

    /// A k-replication transfer of `file` from `from` to `to` ended: the
    /// new copy is registered (returns the jobs that waited for it), and
    /// the old one is to be deleted when it is still there (the second
    /// value); if it failed, the old one stays (nothing is lost).
    pub(crate) fn replica_done(
        &mut self,
        file: FileId,
        (from, to): (SiteId, SiteId),
        ok: bool,
    ) -> (Option<Vec<JobId>>, bool) {
        self.cache.replicating.retain(|&c| c != (file, from));
        if !ok || self.pool.down[to] {
            return (None, false);
        }
        let waiting = self.replicas.register(file, to);
        (waiting, self.replicas.has(file, from))
    }

    /// Registered bytes per site, of `sites` sites.
    fn cached_bytes(&self, wf: &RunDag, sites: usize) -> Vec<u64> {
        let mut bytes = vec![0u64; sites];
        for f in 0..wf.files().len() {
            for &s in self.replicas.holders(f) {
                bytes[s] += wf.files()[f].size;
            }
        }
        bytes
    }

    /// Whether the copy of `file` at `site` is one the grid keeps there.
    fn kept_at(&self, file: FileId, site: SiteId) -> bool {
        self.cache.origin_copies.binary_search(&(file, site)).is_ok()
            || (self.cache.made_at[file] == Some(site)
                && (self.readers_left[file] > 0 || self.cache.unread[file]))
    }
}
