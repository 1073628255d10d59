//! Clustered (SPCL, seed 000 §3 and §5.1): jobs are clustered by spatial
//! proximity, each cluster is assigned to a site, and every job runs at its
//! cluster's site, so the files a cluster shares are transferred there once.
//!
//! * **Clusters**: a job with a sky position (ra, dec, filter) belongs to the
//!   cluster of its `8 ra × 3 dec` cell, all filters together (the paper's
//!   120-job clusters; cells at the edge of the sky are smaller). Jobs without a
//!   position are clustered by pipeline: a cluster is a set of jobs connected by
//!   parent edges ("clustering together all jobs that are pipelined").
//! * **Order**: clusters are numbered by (dec cell, ra cell), i.e. along ra
//!   within each dec band; position-less clusters follow, by their first job.
//! * **Sites**: "the number of clusters per site is acquired by dividing the
//!   number of clusters by the number of sites": with C clusters and S
//!   execution sites (catalogue order), cluster c goes to site `⌊c·S/C⌋`, so
//!   each site gets a contiguous run of ⌊C/S⌋ or ⌈C/S⌉ clusters, whatever its
//!   size (the paper's assignment ignores site resources too).
//! * **Sequencing**: "SPCL does not schedule jobs from different clusters to run
//!   at the same time at the same site ... by creating a parent-child relationship
//!   between the jobs": for consecutive clusters a, b of one site, the n-th job
//!   of b waits for the (n mod |a|)-th job of a. These are ordering edges the
//!   manager honours (dropped if they would make a cycle with the workflow's own).
//! * Parameters: `clustered[ra=8, dec=3, sequence=true]` — the cell size and
//!   whether to sequence (a sparse sample of the sky has clusters of a few jobs,
//!   where sequencing only serialises the site).
//! * A job that must avoid its cluster's site (inputs that never fit) goes to
//!   the next eligible site in catalogue order. The strategy implies caching.

use std::collections::BTreeMap;

use crate::core::{JobId, ReplicaPolicy, SiteId, SiteInfo, Workflow};
use crate::policy::{GridView, SiteSelector};

/// Cluster width in ra grid points.
pub const CLUSTER_RA: u32 = 8;
/// Cluster height in dec grid points.
pub const CLUSTER_DEC: u32 = 3;

/// SPCL. See the module docs.
#[derive(Debug)]
pub struct Clustered {
    site_of: Vec<SiteId>,
    clusters: usize,
    cell: (u32, u32),
    sequence: bool,
}

impl Default for Clustered {
    fn default() -> Self {
        Clustered {
            site_of: Vec::new(),
            clusters: 0,
            cell: (CLUSTER_RA, CLUSTER_DEC),
            sequence: true,
        }
    }
}

impl Clustered {
    /// From inline parameters: `ra` and `dec` (cluster cell, default 8 × 3)
    /// and `sequence` (chain the clusters of a site, default true).
    pub fn with_params(p: &crate::policy::Params) -> Result<Self, String> {
        let ra: u32 = p.get("ra", CLUSTER_RA)?;
        let dec: u32 = p.get("dec", CLUSTER_DEC)?;
        if ra == 0 || dec == 0 {
            return Err("`ra` and `dec` must be at least 1".into());
        }
        Ok(Clustered {
            cell: (ra, dec),
            sequence: p.get("sequence", true)?,
            ..Default::default()
        })
    }

    /// Clusters of `wf` in SPCL order with the paper's 8 × 3 cells.
    pub fn clusters(wf: &Workflow) -> Vec<Vec<JobId>> {
        Self::clusters_of(wf, (CLUSTER_RA, CLUSTER_DEC))
    }

    /// Clusters of `wf` in SPCL order, each a sorted list of jobs.
    pub fn clusters_of(wf: &Workflow, (cell_ra, cell_dec): (u32, u32)) -> Vec<Vec<JobId>> {
        let mut cells: BTreeMap<(u32, u32), Vec<JobId>> = BTreeMap::new();
        let mut loose = Vec::new();
        for (j, job) in wf.jobs.iter().enumerate() {
            match job.position {
                Some([ra, dec, _]) => cells
                    .entry((dec / cell_dec, ra / cell_ra))
                    .or_default()
                    .push(j),
                None => loose.push(j),
            }
        }
        let mut clusters: Vec<Vec<JobId>> = cells.into_values().collect();
        clusters.extend(components(wf, &loose));
        clusters
    }

    /// Number of clusters found by the last [`prepare`](SiteSelector::prepare).
    pub fn cluster_count(&self) -> usize {
        self.clusters
    }
}

/// Weakly connected components (by parent edges) of the jobs in `jobs`,
/// ordered by their first job.
fn components(wf: &Workflow, jobs: &[JobId]) -> Vec<Vec<JobId>> {
    let n = wf.jobs.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let member: std::collections::HashSet<JobId> = jobs.iter().copied().collect();
    for &j in jobs {
        for &q in &wf.jobs[j].parents {
            if member.contains(&q) {
                let (a, b) = (find(&mut parent, j), find(&mut parent, q));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<JobId>> = BTreeMap::new();
    for &j in jobs {
        let root = find(&mut parent, j);
        groups.entry(root).or_default().push(j);
    }
    let mut out: Vec<Vec<JobId>> = groups.into_values().collect();
    out.sort_by_key(|g| g[0]);
    out
}

/// Whether the workflow's edges plus `extra` are acyclic.
fn acyclic(wf: &Workflow, extra: &[(JobId, JobId)]) -> bool {
    let n = wf.jobs.len();
    let mut indegree: Vec<usize> = wf.jobs.iter().map(|j| j.parents.len()).collect();
    let mut children: Vec<Vec<JobId>> = wf.children.clone();
    for &(p, c) in extra {
        children[p].push(c);
        indegree[c] += 1;
    }
    let mut ready: Vec<JobId> = (0..n).filter(|&j| indegree[j] == 0).collect();
    let mut seen = 0;
    while let Some(j) = ready.pop() {
        seen += 1;
        for &c in &children[j] {
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(c);
            }
        }
    }
    seen == n
}

impl SiteSelector for Clustered {
    fn prepare(&mut self, wf: &Workflow, sites: &[SiteInfo]) -> Vec<(JobId, JobId)> {
        let exec: Vec<SiteId> = (0..sites.len()).filter(|&s| sites[s].cpus > 0).collect();
        let clusters = Self::clusters_of(wf, self.cell);
        self.clusters = clusters.len();
        self.site_of = vec![exec.first().copied().unwrap_or(0); wf.jobs.len()];
        if exec.is_empty() || clusters.is_empty() {
            return Vec::new();
        }
        let mut per_site: Vec<Vec<&Vec<JobId>>> = vec![Vec::new(); exec.len()];
        for (c, jobs) in clusters.iter().enumerate() {
            let k = c * exec.len() / clusters.len();
            for &j in jobs {
                self.site_of[j] = exec[k];
            }
            per_site[k].push(jobs);
        }
        let mut edges = Vec::new();
        if !self.sequence {
            return edges;
        }
        for seq in &per_site {
            for pair in seq.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                for (n, &child) in b.iter().enumerate() {
                    edges.push((a[n % a.len()], child));
                }
            }
        }
        if acyclic(wf, &edges) {
            edges
        } else {
            tracing::warn!(
                "clustered: sequencing clusters would make a cycle; running them unsequenced"
            );
            Vec::new()
        }
    }

    fn select(&mut self, job: JobId, _view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let want = self.site_of.get(job).copied().unwrap_or(eligible[0]);
        if eligible.contains(&want) {
            return want;
        }
        eligible
            .iter()
            .copied()
            .find(|&s| s > want)
            .unwrap_or(eligible[0])
    }

    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        Some(ReplicaPolicy::Caching)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::generators::{Coadd, Pipeline};

    fn sites(n: usize) -> Vec<SiteInfo> {
        let mut v = vec![SiteInfo {
            name: "store".into(),
            cpus: 0,
            disk: 1,
            speed: 1.0,
            overhead: 0.0,
        }];
        v.extend((0..n).map(|i| SiteInfo {
            name: format!("s{i}"),
            cpus: 2,
            disk: 1,
            speed: 1.0,
            overhead: 0.0,
        }));
        v
    }

    #[test]
    fn the_paper_cluster_design_at_full_scale() {
        let wf = Coadd::default().generate(1).unwrap();
        let clusters = Clustered::clusters(&wf);
        assert_eq!(clusters.len(), 372);
        assert_eq!(clusters.iter().filter(|c| c.len() == 120).count(), 368);
        assert_eq!(clusters.iter().filter(|c| c.len() == 60).count(), 4);
    }

    #[test]
    fn clusters_map_to_contiguous_site_blocks_and_are_sequenced() {
        let wf = Coadd {
            ra: 32,
            dec: 6,
            filters: 2,
            ..Default::default()
        }
        .generate(1)
        .unwrap();
        let mut c = Clustered::default();
        let s = sites(3);
        let edges = c.prepare(&wf, &s);
        assert_eq!(c.cluster_count(), 8); // 4 ra cells × 2 dec cells
        let clusters = Clustered::clusters(&wf);
        let site_of_cluster: Vec<SiteId> = clusters.iter().map(|cl| c.site_of[cl[0]]).collect();
        assert_eq!(site_of_cluster, vec![1, 1, 1, 2, 2, 2, 3, 3]);
        // Site 1 runs clusters 0, 1, 2: two links of 48 jobs each; site 2 two, site 3 one.
        assert_eq!(edges.len(), 48 * 2 + 48 * 2 + 48);
        assert!(edges.iter().all(|&(p, ch)| c.site_of[p] == c.site_of[ch]));
        let rls = crate::core::rls::Rls::new(wf.files.len());
        let run = crate::core::RunDag::from(wf.clone());
        let view = GridView {
            active: &[0; 4],
            ..GridView::new(&run, &s, &rls)
        };
        let j = clusters[7][0];
        assert_eq!(c.select(j, &view, &[1, 2, 3]), 3);
        assert_eq!(
            c.select(j, &view, &[1, 2]),
            1,
            "falls over to the next eligible site"
        );
    }

    #[test]
    fn pipelines_cluster_by_component() {
        let wf = Pipeline {
            width: 4,
            ..Default::default()
        }
        .generate(1)
        .unwrap();
        let clusters = Clustered::clusters(&wf);
        assert_eq!(clusters.len(), 4);
        assert!(clusters.iter().all(|c| c.len() == 3));
    }
}
