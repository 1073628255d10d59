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

use super::*;
use crate::core::seams::{CacheWorth, CachedFile};

/// What cache maintenance keeps between jobs.
pub(super) struct Cache {
    /// The ranking, when a bound is set.
    pub(super) worth: Option<Box<dyn CacheWorth>>,
    /// Per file: the submission times of the jobs that used it.
    pub(super) uses: Vec<Vec<Time>>,
    /// Per file: the site it was written at.
    pub(super) made_at: Vec<Option<SiteId>>,
    /// Per file: no job reads it (a final output).
    pub(super) unread: Vec<bool>,
    /// The initial copies (sorted).
    pub(super) origin_copies: Vec<(FileId, SiteId)>,
    /// Copies being moved away (file, from).
    pub(super) replicating: Vec<(FileId, SiteId)>,
    /// The sites whose cache a job's end asks to check.
    pub(super) maintenance_due: Vec<(SiteId, JobId)>,
}

impl Manager {
    /// Ranks caches for maintenance with `worth` (after each job, when a
    /// bound is set).
    pub fn set_cache_worth(&mut self, worth: Box<dyn CacheWorth>) {
        self.grid.cache.worth = Some(worth);
    }

    /// `job` was submitted now: a use of each of its files.
    pub(super) fn note_uses(&mut self, job: JobId) {
        if self.settings.cache_bound.is_none() {
            return;
        }
        let j = &self.wf.jobs[job];
        for &f in j.inputs.iter().chain(&j.outputs) {
            self.grid.cache.uses[f].push(self.now);
        }
    }

    /// A job ended at `site`: bring its cache back under the bound.
    pub(super) fn maintain_cache(&mut self, site: SiteId, job: JobId, out: &mut Vec<Command>) {
        let Some(bound) = self.settings.cache_bound else {
            return;
        };
        if self.sites[site].cpus == 0 || self.grid.pool.down[site] {
            return;
        }
        let mut bytes = self.grid.cached_bytes(&self.wf, self.sites.len());
        if bytes[site] <= bound {
            return;
        }
        // Files of the jobs planned here or holding a slot here.
        let mut exempt: Vec<FileId> = Vec::new();
        for (j, st) in self.dag.state.iter().enumerate() {
            let here = match st {
                JobState::Staging | JobState::Queued | JobState::Running => self.grid.site_of[j] == site,
                JobState::Waiting | JobState::Ready => self.grid.selector.planned(j) == Some(site),
                _ => false,
            };
            if here {
                let jb = &self.wf.jobs[j];
                exempt.extend(jb.inputs.iter().chain(&jb.outputs));
            }
        }
        exempt.sort_unstable();
        let now = self.now;
        let Some(mut worth) = self.grid.cache.worth.take() else {
            return;
        };
        let mut ranked: Vec<(f64, FileId)> = (0..self.wf.files.len())
            .filter(|&f| self.grid.replicas.has(f, site))
            .filter(|&f| !self.grid.kept_at(f, site) && exempt.binary_search(&f).is_err())
            .filter(|&f| !self.grid.cache.replicating.contains(&(f, site)))
            .map(|f| {
                let c = CachedFile {
                    file: f,
                    size: self.wf.files[f].size,
                    copies: self.grid.replicas.holders(f).len(),
                    uses: &self.grid.cache.uses[f],
                    now,
                };
                (worth.worth(&c), f)
            })
            .collect();
        self.grid.cache.worth = Some(worth);
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let k = self.settings.replicas;
        for (_, file) in ranked {
            if bytes[site] <= bound {
                break;
            }
            let size = self.wf.files[file].size;
            bytes[site] -= size;
            if k > 0 && self.grid.replicas.holders(file).len() <= k {
                let target = (0..self.sites.len())
                    .filter(|&s| s != site && self.sites[s].cpus > 0 && !self.grid.pool.down[s])
                    .filter(|&s| !self.grid.replicas.has(file, s) && bytes[s] + size <= bound)
                    .max_by_key(|&s| (bound - bytes[s], std::cmp::Reverse(s)));
                if let Some(to) = target {
                    bytes[to] += size;
                    self.replicate(file, site, to, job, out);
                    continue;
                }
            }
            self.delete_copy(file, site, out);
        }
    }

    /// The copy of `file` at `site` goes: forgotten, then deleted.
    fn delete_copy(&mut self, file: FileId, site: SiteId, out: &mut Vec<Command>) {
        self.forget_copy(file, site);
        out.push(Command::Delete { site, file });
    }

    /// k-replication: `file` moves from `from` to `to` before it is deleted
    /// at `from`.
    fn replicate(
        &mut self,
        file: FileId,
        from: SiteId,
        to: SiteId,
        job: JobId,
        out: &mut Vec<Command>,
    ) {
        self.grid.cache.replicating.push((file, from));
        let attempt = self.records.jobs[job].attempts.len().saturating_sub(1);
        let kind = FlightKind::Replica;
        self.start_flight((job, attempt), file, from, to, kind, false, out);
    }

    /// A k-replication transfer ended: the new copy is registered and the
    /// old one deleted; if it failed, the old one stays (nothing is lost).
    pub(super) fn on_replica_done(
        &mut self,
        file: FileId,
        from: SiteId,
        to: SiteId,
        ok: bool,
        out: &mut Vec<Command>,
    ) {
        self.grid.cache.replicating.retain(|&c| c != (file, from));
        if !ok || self.grid.pool.down[to] {
            return;
        }
        self.register(file, to);
        if self.grid.replicas.has(file, from) {
            self.delete_copy(file, from, out);
        }
    }
}

impl Placement {
    /// Registered bytes per site, of `sites` sites.
    fn cached_bytes(&self, wf: &Workflow, sites: usize) -> Vec<u64> {
        let mut bytes = vec![0u64; sites];
        for f in 0..wf.files.len() {
            for &s in self.replicas.holders(f) {
                bytes[s] += wf.files[f].size;
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
