//! DAG-C: seed 003's DAG-oriented workflow planning (§5.1) with its
//! incremental re-planning over a scheduling horizon (§5.2).
//!
//! A workflow is many DAGs (its weakly connected components). Planning has
//! two phases. **AssignDAGs** gives each whole DAG to the machine where it
//! would end first, `time = timeSoFar + Σ p_i + input_size / netBW`
//! (**GetBestMachine**), counting only inputs and executables the machine
//! neither caches (the RLS) nor will hold by the plan so far. **Parallelize**
//! then walks the DAGs that took a machine's load above the average and moves
//! a job that could run beside its sibling, with the chain of single-parent
//! jobs below it, to the best lightly loaded machine when `savetime =
//! cputime − (input_size + output_size) / netBW` is positive. `input_size`
//! counts the inputs the original machine holds and the new one does not;
//! `output_size` the outputs read by jobs outside the moved part.
//!
//! Jobs then run where planned: a ready job goes to its machine's queue, and
//! its inputs come from any site that holds them. With `horizon = H`
//! (seconds) planning is incremental: (i) no DAG goes to a machine whose
//! expected remaining time reached H, (ii) the cycle ends when every machine
//! did, (iii, iv) Parallelize runs only when no whole DAG is left to assign
//! and some machine is below H, and (v) a lost machine's unstarted jobs are
//! unplanned and their DAGs planned again in a later cycle. A cycle runs
//! whenever a ready job is unplanned or a machine fell below H while DAGs
//! wait; a job whose DAG is beyond the horizon is held, ready, until then.
//!
//! A machine here is a site; a job's time on it is `(runtime / speed +
//! overhead) / cpus`, which is the paper's on its one-CPU machines.

use std::collections::VecDeque;

use crate::core::{FileId, JobId, JobState, ReplicaPolicy, SiteId, Workflow};
use crate::policy::{GridView, Params, SiteSelector};

/// The DAGs of a workflow, found once.
struct Shape {
    /// Each DAG's jobs in (level, id) order.
    dags: Vec<Vec<JobId>>,
    /// Each job's DAG.
    dag_of: Vec<usize>,
    /// Each job's level: 0 without parents, else one below its deepest parent.
    level: Vec<u32>,
}

impl Shape {
    fn of(wf: &Workflow) -> Shape {
        let mut level = vec![0u32; wf.jobs.len()];
        // Jobs are in topological order, so parents' levels are known.
        for (j, job) in wf.jobs.iter().enumerate() {
            for &p in &job.parents {
                level[j] = level[j].max(level[p] + 1);
            }
        }
        let (dag_of, mut dags) = wf.components();
        for d in &mut dags {
            d.sort_by_key(|&j| (level[j], j));
        }
        Shape {
            dags,
            dag_of,
            level,
        }
    }
}

/// The DAG-C planner as a site selector. See the module docs.
pub struct DagC {
    /// netBW in bytes per second.
    bandwidth: f64,
    /// The scheduling horizon (s); `None`: the static plan, all at once.
    horizon: Option<f64>,
    shape: Option<Shape>,
    plan: Vec<Option<SiteId>>,
    /// Per workflow: its DAGs with unplanned jobs, in the order they are
    /// assigned.
    unassigned: Vec<VecDeque<usize>>,
    queued: Vec<bool>,
    /// Each DAG's workflow.
    workflow_of: Vec<usize>,
    /// Per machine: the workflow it is allotted to (fair share, §5.1).
    owner: Vec<Option<usize>>,
    /// Per workflow: arrived with jobs left, at the last allotment.
    active: Vec<bool>,
    /// Per file: the sites that will hold it by the plan.
    will_hold: Vec<Vec<SiteId>>,
    /// Per site: jobs planned there and not yet seen over.
    pending: Vec<Vec<JobId>>,
    /// Planning cycles run (for reports and tests).
    cycles: u64,
    /// Per site: a job's expected time per second of runtime and per job
    /// (`cost` as factors).
    rates: Vec<(f64, f64)>,
}

impl DagC {
    /// A planner assuming `bandwidth` bytes/s between machines, static or
    /// with a scheduling horizon of `horizon` seconds.
    pub fn new(bandwidth: f64, horizon: Option<f64>) -> Self {
        DagC {
            bandwidth,
            horizon,
            shape: None,
            plan: Vec::new(),
            unassigned: Vec::new(),
            queued: Vec::new(),
            workflow_of: Vec::new(),
            owner: Vec::new(),
            active: Vec::new(),
            will_hold: Vec::new(),
            pending: Vec::new(),
            cycles: 0,
            rates: Vec::new(),
        }
    }

    /// `dag-c[bandwidth=MB/s, horizon=s]`: netBW in MB/s (12.5 by default,
    /// the paper's 100 Mbps) and the horizon (0 by default: static).
    pub fn with_params(p: &Params) -> Result<Self, String> {
        let mbs: f64 = p.get("bandwidth", 12.5)?;
        if !(mbs.is_finite() && mbs > 0.0) {
            return Err(format!("bandwidth {mbs}: expected MB/s > 0"));
        }
        let horizon: f64 = p.get("horizon", 0.0)?;
        if !(horizon.is_finite() && horizon >= 0.0) {
            return Err(format!("horizon {horizon}: expected seconds >= 0"));
        }
        Ok(DagC::new(mbs * 1e6, (horizon > 0.0).then_some(horizon)))
    }

    /// Planning cycles so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    fn prepare(&mut self, view: &GridView<'_>) {
        if self.shape.is_some() {
            return;
        }
        let shape = Shape::of(view.workflow.started());
        self.plan = vec![None; view.workflow.job_count()];
        let of_job = &view.submissions.of_job;
        self.workflow_of = shape
            .dags
            .iter()
            .map(|d| of_job.get(d[0]).copied().unwrap_or(0))
            .collect();
        let workflows = view.submissions.list.len().max(1);
        self.unassigned = vec![VecDeque::new(); workflows];
        self.active = vec![false; workflows];
        self.owner = vec![None; view.sites.len()];
        // A workflow's DAGs join the queue when it arrives (`allot`).
        self.queued = vec![false; shape.dags.len()];
        self.will_hold = vec![Vec::new(); view.workflow.files().len()];
        self.rates = view
            .sites
            .iter()
            .map(|s| {
                let slots = s.cpus.max(1) as f64;
                (1.0 / (s.speed * slots), s.overhead / slots)
            })
            .collect();
        self.pending = vec![Vec::new(); view.sites.len()];
        self.shape = Some(shape);
    }

    fn state(view: &GridView<'_>, job: JobId) -> JobState {
        view.states.get(job).copied().unwrap_or(JobState::Waiting)
    }

    /// Not started yet: the plan may still change for it.
    fn open(view: &GridView<'_>, job: JobId) -> bool {
        matches!(Self::state(view, job), JobState::Waiting | JobState::Ready)
    }

    /// A job's expected time on `site`.
    fn cost(view: &GridView<'_>, job: JobId, site: SiteId) -> f64 {
        let s = &view.sites[site];
        (view.workflow.job(job).runtime / s.speed + s.overhead) / s.cpus.max(1) as f64
    }

    fn holds(&self, view: &GridView<'_>, site: SiteId, file: FileId) -> bool {
        view.rls.has(file, site) || self.will_hold[file].contains(&site)
    }

    /// The part's inputs made outside it, each file once.
    fn inputs_from_outside(view: &GridView<'_>, jobs: &[JobId]) -> Vec<FileId> {
        let wf = view.workflow.started();
        let mut seen: Vec<FileId> = Vec::new();
        for &j in jobs {
            for &f in &wf.jobs[j].inputs {
                let made_inside = wf.producer[f].is_some_and(|p| jobs.contains(&p));
                if !made_inside && !seen.contains(&f) {
                    seen.push(f);
                }
            }
        }
        seen
    }

    /// Bytes of the part's outputs that jobs outside it read.
    fn outputs_out(view: &GridView<'_>, jobs: &[JobId]) -> u64 {
        let wf = view.workflow.started();
        let mut seen: Vec<FileId> = Vec::new();
        let mut bytes = 0;
        for &j in jobs {
            for &c in wf.children[j].iter().filter(|c| !jobs.contains(c)) {
                for &f in &wf.jobs[c].inputs {
                    if wf.jobs[j].outputs.contains(&f) && !seen.contains(&f) {
                        seen.push(f);
                        bytes += wf.files[f].size;
                    }
                }
            }
        }
        bytes
    }

    /// GetBestMachine: the candidate where `jobs` would end first, and the
    /// time they add to its load.
    fn best_machine(
        &self,
        view: &GridView<'_>,
        jobs: &[JobId],
        candidates: &[SiteId],
        loads: &[f64],
        with_output: bool,
    ) -> (SiteId, f64) {
        // CalculateIONeeded: the inputs and executables from outside the
        // part that the machine does not hold, plus, `with_output`, the
        // part's outputs read outside it. The part's side is the same for
        // every machine.
        let outside = Self::inputs_from_outside(view, jobs);
        let out = if with_output {
            Self::outputs_out(view, jobs)
        } else {
            0
        };
        // From the few holders of each file rather than a look-up per
        // machine: this loop is the planner's cost (DAGs × machines).
        let wf = view.workflow.started();
        let mut held = vec![0u64; view.sites.len()];
        let mut bring = 0;
        for &f in &outside {
            bring += wf.files[f].size;
            let planned = self.will_hold[f].iter().filter(|&&s| !view.rls.has(f, s));
            for &s in view.rls.holders(f).iter().chain(planned) {
                held[s] += wf.files[f].size;
            }
        }
        let runtime: f64 = jobs.iter().map(|&j| wf.jobs[j].runtime).sum();
        let n = jobs.len() as f64;
        let per_byte = 1.0 / self.bandwidth;
        let mut best = (candidates[0], f64::INFINITY, 0.0);
        for &m in candidates {
            // Self::cost summed over the part, without its divisions.
            let (per_second, per_job) = self.rates[m];
            let run = runtime * per_second + n * per_job;
            let io = (bring - held[m] + out) as f64 * per_byte;
            let time = loads[m] + run + io;
            if time < best.1 {
                best = (m, time, run + io);
            }
        }
        (best.0, best.2)
    }

    fn assign(&mut self, view: &GridView<'_>, jobs: &[JobId], site: SiteId) {
        let wf = view.workflow.started();
        for &j in jobs {
            if let Some(old) = self.plan[j] {
                self.pending[old].retain(|&x| x != j);
            }
            self.plan[j] = Some(site);
            self.pending[site].push(j);
            let files = wf.jobs[j].inputs.iter().chain(&wf.jobs[j].outputs);
            for &f in files {
                if !self.will_hold[f].contains(&site) {
                    self.will_hold[f].push(site);
                }
            }
        }
    }

    /// Each site's expected remaining time: its planned jobs not yet over.
    fn loads(&mut self, view: &GridView<'_>) -> Vec<f64> {
        let mut loads = vec![0.0; view.sites.len()];
        for (s, jobs) in self.pending.iter_mut().enumerate() {
            jobs.retain(|&j| {
                !matches!(
                    Self::state(view, j),
                    JobState::Done | JobState::Failed | JobState::Blocked
                )
            });
            loads[s] = jobs.iter().map(|&j| Self::cost(view, j, s)).sum();
        }
        loads
    }

    /// Rule v: `site` is lost; its unstarted jobs are unplanned and their
    /// DAGs wait for the next cycle, first in line.
    fn lose(&mut self, view: &GridView<'_>, site: SiteId) {
        let lost: Vec<JobId> = self.pending[site]
            .iter()
            .copied()
            .filter(|&j| Self::open(view, j))
            .collect();
        self.unplan(&lost, true);
        for holders in &mut self.will_hold {
            holders.retain(|&s| s != site);
        }
    }

    /// Unplans `jobs` and queues their DAGs again, first in line (`urgent`:
    /// taken from a lost or withdrawn machine) or last.
    fn unplan(&mut self, jobs: &[JobId], urgent: bool) {
        let Some(shape) = &self.shape else { return };
        for &j in jobs {
            if let Some(s) = self.plan[j].take() {
                self.pending[s].retain(|&x| x != j);
            }
            let d = shape.dag_of[j];
            if !self.queued[d] {
                self.queued[d] = true;
                let queue = &mut self.unassigned[self.workflow_of[d]];
                if urgent {
                    queue.push_front(d);
                } else {
                    queue.push_back(d);
                }
            }
        }
    }

    /// The fair share (§5.1, §5.2): the machines are split between the
    /// workflows that arrived and have jobs left, in proportion to their
    /// shares (largest remainders; ties to the earlier workflow). A
    /// workflow keeps the machines it had up to its quota. When the set
    /// changes: a new workflow's DAGs join its queue; a machine taken from a
    /// workflow loses its unstarted jobs there, planned again on the
    /// workflow's own machines; a workflow that gains machines has its
    /// unstarted DAGs planned anew over them.
    fn allot(&mut self, view: &GridView<'_>) {
        let k = self.active.len();
        let is_active = |w: usize| view.workload.get(w).is_none_or(|l| l.active());
        // Called for every job placed: no allocation unless the set changed.
        if (0..k).all(|w| is_active(w) == self.active[w]) {
            return;
        }
        let active: Vec<bool> = (0..k).map(is_active).collect();
        let shape = self.shape.as_ref().expect("prepared");
        for w in (0..k).filter(|&w| active[w] && !self.active[w]) {
            for d in (0..shape.dags.len()).filter(|&d| self.workflow_of[d] == w) {
                if !self.queued[d] && shape.dags[d].iter().all(|&j| self.plan[j].is_none()) {
                    self.queued[d] = true;
                    self.unassigned[w].push_back(d);
                }
            }
        }
        self.active = active;
        let machines: Vec<SiteId> = (0..view.sites.len())
            .filter(|&m| view.sites[m].cpus > 0)
            .collect();
        let share = |w: usize| view.submissions.list.get(w).map_or(1.0, |s| s.share);
        let total: f64 = (0..k).filter(|&w| self.active[w]).map(share).sum();
        let mut quota = vec![0usize; k];
        let mut rest: Vec<(f64, usize)> = Vec::new();
        for w in (0..k).filter(|&w| self.active[w]) {
            let exact = machines.len() as f64 * share(w) / total;
            quota[w] = exact.floor() as usize;
            rest.push((exact - exact.floor(), w));
        }
        rest.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let left = machines.len() - quota.iter().sum::<usize>();
        for &(_, w) in rest.iter().take(left) {
            quota[w] += 1;
        }
        let mut held = vec![0usize; k];
        let mut free = Vec::new();
        let mut taken: Vec<(SiteId, usize)> = Vec::new();
        for &m in &machines {
            match self.owner[m] {
                Some(w) if self.active[w] && held[w] < quota[w] => held[w] += 1,
                was => {
                    if let Some(w) = was {
                        taken.push((m, w));
                    }
                    self.owner[m] = None;
                    free.push(m);
                }
            }
        }
        let mut free = free.into_iter();
        let mut gained = vec![false; k];
        for w in 0..k {
            while held[w] < quota[w] {
                let Some(m) = free.next() else { break };
                self.owner[m] = Some(w);
                held[w] += 1;
                gained[w] = true;
            }
        }
        for (m, w) in taken {
            let dag_w = |d: usize| self.workflow_of[d];
            let shape = self.shape.as_ref().expect("prepared");
            let withdrawn: Vec<JobId> = self.pending[m]
                .iter()
                .copied()
                .filter(|&j| dag_w(shape.dag_of[j]) == w && Self::open(view, j))
                .collect();
            self.unplan(&withdrawn, true);
        }
        for w in (0..k).filter(|&w| gained[w]) {
            let shape = self.shape.as_ref().expect("prepared");
            let unstarted: Vec<JobId> = (0..shape.dags.len())
                .filter(|&d| self.workflow_of[d] == w && !self.queued[d])
                .filter(|&d| shape.dags[d].iter().all(|&j| Self::open(view, j)))
                .flat_map(|d| shape.dags[d].iter().copied())
                .collect();
            self.unplan(&unstarted, false);
        }
    }

    /// The machines allotted to workflow `w` among `eligible`.
    fn machines_of(&self, w: usize, eligible: &[SiteId]) -> Vec<SiteId> {
        eligible
            .iter()
            .copied()
            .filter(|&m| self.owner[m] == Some(w))
            .collect()
    }

    /// One planning cycle of workflow `w` over its `machines`.
    fn cycle(&mut self, view: &GridView<'_>, w: usize, machines: &[SiteId], loads: &mut [f64]) {
        self.cycles += 1;
        let horizon = self.horizon;
        let below = |loads: &[f64], m: SiteId| horizon.is_none_or(|h| loads[m] < h);
        let mut assigned: Vec<(usize, SiteId, f64)> = Vec::new();
        while let Some(&d) = self.unassigned[w].front() {
            let candidates: Vec<SiteId> = machines
                .iter()
                .copied()
                .filter(|&m| below(loads, m))
                .collect();
            if candidates.is_empty() {
                break; // rule ii
            }
            self.unassigned[w].pop_front();
            self.queued[d] = false;
            let shape = self.shape.as_ref().expect("prepared");
            let jobs: Vec<JobId> = shape.dags[d]
                .iter()
                .copied()
                .filter(|&j| self.plan[j].is_none() && Self::open(view, j))
                .collect();
            if jobs.is_empty() {
                continue;
            }
            let (best, time) = self.best_machine(view, &jobs, &candidates, loads, false);
            self.assign(view, &jobs, best);
            loads[best] += time;
            assigned.push((d, best, loads[best]));
        }
        if self.unassigned[w].is_empty() && machines.iter().any(|&m| below(loads, m)) {
            self.parallelize(view, &assigned, machines, loads);
        }
    }

    /// Parallelize: moves parallel parts of the DAGs that took a machine
    /// above the average load to lightly loaded machines, where it saves time.
    fn parallelize(
        &mut self,
        view: &GridView<'_>,
        assigned: &[(usize, SiteId, f64)],
        machines: &[SiteId],
        loads: &mut [f64],
    ) {
        if machines.is_empty() {
            return;
        }
        let avg = machines.iter().map(|&m| loads[m]).sum::<f64>() / machines.len() as f64;
        let wf = view.workflow.started();
        for &(d, heavy, after) in assigned {
            if after <= avg {
                continue;
            }
            let shape = self.shape.as_ref().expect("prepared");
            let level = |j: JobId| shape.level[j];
            let jobs: Vec<JobId> = shape.dags[d]
                .iter()
                .copied()
                .filter(|&j| self.plan[j] == Some(heavy) && Self::open(view, j))
                .collect();
            let levels: Vec<u32> = jobs.iter().map(|&j| level(j)).collect();
            let mut moved: Vec<JobId> = Vec::new();
            for i in 1..jobs.len() {
                let this = jobs[i];
                if moved.contains(&this) || levels[i - 1] != levels[i] {
                    continue;
                }
                // The job and the chain of single-parent jobs below it.
                let mut part = vec![this];
                let mut cur = this;
                while let [child] = wf.children[cur][..]
                    && wf.jobs[child].parents.len() == 1
                    && jobs.contains(&child)
                {
                    part.push(child);
                    cur = child;
                }
                let light: Vec<SiteId> = machines
                    .iter()
                    .copied()
                    .filter(|&m| m != heavy && loads[m] < avg)
                    .collect();
                if light.is_empty() {
                    break;
                }
                let (best, added) = self.best_machine(view, &part, &light, loads, true);
                let cputime: f64 = part.iter().map(|&j| Self::cost(view, j, heavy)).sum();
                let io = Self::outputs_out(view, &part)
                    + Self::inputs_from_outside(view, &part)
                        .into_iter()
                        .filter(|&f| self.holds(view, heavy, f) && !self.holds(view, best, f))
                        .map(|f| wf.files[f].size)
                        .sum::<u64>();
                let savetime = cputime - io as f64 / self.bandwidth;
                if savetime > 0.0 {
                    self.assign(view, &part, best);
                    loads[heavy] -= cputime;
                    loads[best] += added;
                    moved.extend(part);
                }
            }
        }
    }
}

impl SiteSelector for DagC {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        self.place(job, view, eligible).unwrap_or_else(|| {
            let loads = self.loads(view);
            self.best_machine(view, &[job], eligible, &loads, false).0
        })
    }

    fn place(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> Option<SiteId> {
        self.prepare(view);
        self.allot(view);
        if let Some(s) = self.plan[job]
            && !eligible.contains(&s)
        {
            self.lose(view, s);
        }
        let w = self.workflow_of[self.shape.as_ref().expect("prepared").dag_of[job]];
        // The loads cost a pass over every planned job: only when a cycle
        // may run (a static plan places each job once, from the plan).
        let held = self.horizon.is_some() && !self.unassigned[w].is_empty();
        if self.plan[job].is_none() || held {
            // With none of its own machines up, any will do rather than none.
            let mut mine = self.machines_of(w, eligible);
            if mine.is_empty() {
                mine = eligible.to_vec();
            }
            let mut loads = self.loads(view);
            let below = self
                .horizon
                .is_some_and(|h| mine.iter().any(|&m| loads[m] < h));
            if self.plan[job].is_none() || below {
                self.cycle(view, w, &mine, &mut loads);
            }
        }
        self.plan[job].filter(|s| eligible.contains(s))
    }

    fn planned(&self, job: JobId) -> Option<SiteId> {
        self.plan.get(job).copied().flatten()
    }

    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        Some(ReplicaPolicy::Caching)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{File, JobSpec, SiteInfo, rls::Rls};

    fn machines(n: usize) -> Vec<SiteInfo> {
        (0..n)
            .map(|i| SiteInfo {
                name: format!("M{}", i + 1),
                cpus: 1,
                disk: 1 << 40,
                speed: 1.0,
                overhead: 0.0,
            })
            .collect()
    }

    /// `n` V-DAGs (seed 003's figure 3): A and B, each 10 minutes, write F1
    /// and F2 of `pipe` bytes, which C reads.
    fn v_dags(n: usize, pipe: u64) -> Workflow {
        let mut files = Vec::new();
        let mut jobs = Vec::new();
        for d in 0..n {
            for f in ["F1", "F2", "out"] {
                files.push(File {
                    name: format!("{f}-{d}"),
                    size: pipe,
                });
            }
            for (name, out) in [("A", "F1"), ("B", "F2")] {
                jobs.push(JobSpec {
                    name: format!("{name}{d}"),
                    runtime: 600.0,
                    outputs: vec![format!("{out}-{d}")],
                    ..Default::default()
                });
            }
            jobs.push(JobSpec {
                name: format!("C{d}"),
                runtime: 600.0,
                inputs: vec![format!("F1-{d}"), format!("F2-{d}")],
                outputs: vec![format!("out-{d}")],
                parents: vec![format!("A{d}"), format!("B{d}")],
                ..Default::default()
            });
        }
        Workflow::build(files, jobs).unwrap()
    }

    fn view<'a>(
        wf: &'a crate::core::RunDag,
        sites: &'a [SiteInfo],
        rls: &'a Rls,
        claimed: &'a [usize],
        states: &'a [JobState],
    ) -> GridView<'a> {
        GridView {
            claimed,
            states,
            ..GridView::new(wf, sites, rls)
        }
    }

    fn plan_all(wf: &Workflow, sites: &[SiteInfo], rls: &Rls, planner: &mut DagC) -> Vec<String> {
        let states = vec![JobState::Waiting; wf.jobs.len()];
        let claimed = vec![0; sites.len()];
        let run = crate::core::RunDag::from(wf.clone());
        let view = view(&run, sites, rls, &claimed, &states);
        let all: Vec<SiteId> = (0..sites.len()).collect();
        (0..wf.jobs.len())
            .map(|j| {
                let s = planner
                    .place(j, &view, &all)
                    .expect("a static plan places all");
                format!("{}@{}", wf.jobs[j].name, sites[s].name)
            })
            .collect()
    }

    #[test]
    fn six_v_dags_on_four_machines_as_in_figure_4() {
        let wf = v_dags(6, 2_000_000);
        let sites = machines(4);
        let mut dag_c = DagC::new(12.5e6, None);
        let plan = plan_all(&wf, &sites, &Rls::new(4), &mut dag_c);
        // (a) AssignDAGs: DAGs 0-3 on M1-M4, then 4 on M1 and 5 on M2;
        // (b) Parallelize: B of each extra DAG moves to a light machine,
        // where 10 minutes saved beat moving F2 (0.16 s).
        let want = [
            "A0@M1", "B0@M1", "C0@M1", "A1@M2", "B1@M2", "C1@M2", "A2@M3", "B2@M3", "C2@M3",
            "A3@M4", "B3@M4", "C3@M4", "A4@M1", "B4@M3", "C4@M1", "A5@M2", "B5@M4", "C5@M2",
        ];
        let mut got = plan.clone();
        got.sort_by_key(|s| {
            wf.jobs
                .iter()
                .position(|j| s.starts_with(&format!("{}@", j.name)))
        });
        assert_eq!(got, want);
        assert_eq!(dag_c.cycles(), 1, "one static cycle plans everything");
    }

    #[test]
    fn parallelize_keeps_a_job_whose_output_costs_more_to_move_than_it_saves() {
        // F2 of 10 GB takes 800 s at 12.5 MB/s, more than B's 600 s.
        let wf = v_dags(6, 10_000_000_000);
        let sites = machines(4);
        let plan = plan_all(&wf, &sites, &Rls::new(4), &mut DagC::new(12.5e6, None));
        assert!(plan.contains(&"B4@M1".to_string()) && plan.contains(&"B5@M2".to_string()));
    }

    #[test]
    fn get_best_machine_prefers_the_machine_caching_a_dags_batch_input() {
        let files = vec![File {
            name: "nr-db".into(),
            size: 1_250_000_000, // 100 s at 12.5 MB/s
        }];
        let jobs = vec![JobSpec {
            name: "blastall".into(),
            runtime: 1320.0,
            inputs: vec!["nr-db".into()],
            ..Default::default()
        }];
        let wf = Workflow::build(files, jobs).unwrap();
        let sites = machines(3);
        let mut rls = Rls::new(3);
        rls.register(0, 2);
        let plan = plan_all(&wf, &sites, &rls, &mut DagC::new(12.5e6, None));
        assert_eq!(plan, ["blastall@M3"]);
    }

    #[test]
    fn a_horizon_plans_dags_until_every_machine_reaches_it_and_holds_the_rest() {
        let wf = crate::core::RunDag::from(v_dags(6, 1000));
        let sites = machines(2);
        let rls = Rls::new(2);
        let mut states = vec![JobState::Waiting; wf.job_count()];
        let claimed = vec![0; 2];
        let mut dag_c = DagC::new(12.5e6, Some(1800.0));
        // A DAG is 30 minutes: one DAG reaches the horizon on each machine.
        assert_eq!(
            dag_c.place(0, &view(&wf, &sites, &rls, &claimed, &states), &[0, 1]),
            Some(0)
        );
        assert_eq!(
            dag_c.place(3, &view(&wf, &sites, &rls, &claimed, &states), &[0, 1]),
            Some(1)
        );
        assert_eq!(
            dag_c.place(6, &view(&wf, &sites, &rls, &claimed, &states), &[0, 1]),
            None,
            "beyond it"
        );
        // DAG 0 ends: M1 falls below the horizon and takes the next DAG.
        states[0..3].fill(JobState::Done);
        assert_eq!(
            dag_c.place(6, &view(&wf, &sites, &rls, &claimed, &states), &[0, 1]),
            Some(0)
        );
        // M1 is lost: its unstarted jobs wait until M2 is below the horizon.
        assert_eq!(
            dag_c.place(7, &view(&wf, &sites, &rls, &claimed, &states), &[1]),
            None
        );
        assert_eq!(dag_c.planned(6), None, "unplanned with its DAG");
        states[3..6].fill(JobState::Done);
        assert_eq!(
            dag_c.place(7, &view(&wf, &sites, &rls, &claimed, &states), &[1]),
            Some(1)
        );
        assert_eq!(dag_c.planned(6), Some(1));
    }
}
