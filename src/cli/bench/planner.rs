//! `gridbed bench planner`: the cost of seed 003's planner (§5), which its
//! §11 leaves as future work. A workflow of fan DAGs (figure 7) on machines
//! of one CPU each:
//!
//! * **plan**: the first planning cycle, AssignDAGs + Parallelize over every
//!   DAG (the static plan), as DAGs planned per second;
//! * **re-plan**: rule v of §5.2, a machine lost after the plan: its
//!   unstarted DAGs planned again over the others, milliseconds each, over
//!   ten losses in a row;
//! * **share**: the planner's calls as the simulator makes them (every job
//!   placed when it is ready, its ancestors over), replayed alone, over the
//!   wall time of the simulator running the same scenario with `dag-c`.

use std::time::Instant;

use super::{Failure, Figure, bench_scenario, bench_site, unthrottled};
use crate::core::rls::Rls;
use crate::core::seams::{GridView, SiteSelector};
use crate::core::submissions::Submissions;
use crate::core::{JobState, RunDag, SiteId, SiteInfo, Workflow};
use crate::policy::selector::DagC;
use crate::workflow::generators::{DagShape, Dags};

/// Each timing is the median of this many rounds.
const ROUNDS: usize = 5;

/// The paper's netBW, 100 Mbps.
const NET_BW: f64 = 12.5e6;

/// The figures for `dags` DAGs on `machines` machines.
pub(super) fn planner(dags: usize, machines: usize) -> Result<Vec<Figure>, Failure> {
    let wf = Dags {
        shape: DagShape::Fan,
        dags,
        ..Dags::default()
    }
    .generate()?;
    let mut sites: Vec<SiteInfo> = (0..machines)
        .map(|i| bench_site(&format!("m{i:03}"), 1).info)
        .collect();
    sites.push(bench_site("submit", 0).info);
    let origin = machines;
    let mut rls = Rls::new(wf.files.len());
    for f in (0..wf.files.len()).filter(|&f| wf.producer[f].is_none()) {
        rls.register(f, origin);
    }
    let submissions = Submissions::single(wf.jobs.len(), origin);
    let claimed = vec![0; sites.len()];
    let mut states = vec![JobState::Waiting; wf.jobs.len()];
    let all: Vec<SiteId> = (0..machines).collect();
    let run = RunDag::from(wf.clone());

    // The first cycle plans every DAG (the median of `ROUNDS` planners).
    let mut planner = DagC::new(NET_BW, None);
    let mut plans = Vec::new();
    for _ in 0..ROUNDS {
        planner = DagC::new(NET_BW, None);
        let started = Instant::now();
        planner
            .place(
                0,
                &grid_view(&run, &sites, &rls, &claimed, &states, &submissions),
                &all,
            )
            .ok_or("planner bench: the static plan left a root unplaced")?;
        plans.push(started.elapsed().as_secs_f64());
    }
    let plan = median(plans);
    if (0..wf.jobs.len()).any(|j| planner.planned(j).is_none()) {
        return Err("planner bench: the static plan left a job unplanned".into());
    }

    // Ten machines lost one after the other, each re-planned at once by
    // placing one of its jobs on the machines left.
    let mut up = all.clone();
    let mut replans = Vec::new();
    for lost in 0..10.min(machines - 1) {
        up.retain(|&m| m != lost);
        let job = (0..wf.jobs.len())
            .find(|&j| planner.planned(j) == Some(lost))
            .ok_or("planner bench: a machine with nothing planned")?;
        let started = Instant::now();
        let site = planner.place(
            job,
            &grid_view(&run, &sites, &rls, &claimed, &states, &submissions),
            &up,
        );
        replans.push(started.elapsed().as_secs_f64());
        if site.is_none_or(|s| s == lost)
            || (0..wf.jobs.len()).any(|j| planner.planned(j).is_none_or(|s| s == lost))
        {
            return Err("planner bench: a lost machine's jobs were not planned again".into());
        }
    }
    let replan_ms = replans.iter().sum::<f64>() / replans.len().max(1) as f64 * 1e3;

    // The simulator's calls, replayed: each job placed once it is ready, in
    // an order of levels, and over at once.
    let order = levels(&wf);
    let mut replays = Vec::new();
    for _ in 0..ROUNDS {
        let mut replayed = DagC::new(NET_BW, None);
        states.fill(JobState::Waiting);
        let started = Instant::now();
        for &j in &order {
            states[j] = JobState::Ready;
            replayed
                .place(
                    j,
                    &grid_view(&run, &sites, &rls, &claimed, &states, &submissions),
                    &all,
                )
                .ok_or("planner bench: replay left a job unplaced")?;
            states[j] = JobState::Done;
        }
        replays.push(started.elapsed().as_secs_f64());
    }
    let in_planner = median(replays);
    let scenario = bench_scenario(
        "bench-planner",
        sites
            .iter()
            .map(|s| bench_site(&s.name, s.cpus))
            .map(|mut s| {
                s.bandwidth_out = NET_BW;
                s.bandwidth_in = NET_BW;
                s
            })
            .collect(),
        origin,
        wf.clone(),
        "dag-c",
        unthrottled(),
    );
    let mut sims = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let run = crate::sim::run(&scenario)?;
        sims.push(started.elapsed().as_secs_f64());
        if !run.succeeded {
            return Err("planner bench: the simulated run did not finish".into());
        }
    }
    let sim = median(sims);
    let share = in_planner / sim;
    let jobs = wf.jobs.len();
    Ok(vec![
        Figure {
            name: format!(
                "planner: AssignDAGs + Parallelize, {dags} fan DAGs ({jobs} jobs) on {machines} machines, DAGs planned/s"
            ),
            value: dags as f64 / plan,
            unit: "DAGs/s".into(),
            goal: None,
            met: true,
        },
        Figure {
            name: format!(
                "planner: re-plan after a machine loss, {dags} DAGs on {machines} machines"
            ),
            value: replan_ms,
            unit: "ms".into(),
            goal: None,
            met: true,
        },
        Figure {
            name: format!(
                "planner: share of the sim run's wall time ({:.1} ms of {:.1} ms, medians of {ROUNDS})",
                in_planner * 1e3,
                sim * 1e3
            ),
            value: share * 100.0,
            unit: "%".into(),
            goal: Some("≤ 10%".into()),
            met: share <= 0.10,
        },
    ])
}

/// The median of a few timings: one run of a few milliseconds is noise.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The planner's view of a grid where nothing is claimed.
fn grid_view<'a>(
    workflow: &'a RunDag,
    sites: &'a [SiteInfo],
    rls: &'a Rls,
    claimed: &'a [usize],
    states: &'a [JobState],
    submissions: &'a Submissions,
) -> GridView<'a> {
    GridView {
        claimed,
        states,
        submissions,
        ..GridView::new(workflow, sites, rls)
    }
}

/// The jobs in order of their level (roots first).
fn levels(wf: &Workflow) -> Vec<usize> {
    let mut level = vec![0usize; wf.jobs.len()];
    for j in 0..wf.jobs.len() {
        level[j] = wf.jobs[j]
            .parents
            .iter()
            .map(|&p| level[p] + 1)
            .max()
            .unwrap_or(0);
    }
    let mut order: Vec<usize> = (0..wf.jobs.len()).collect();
    order.sort_by_key(|&j| level[j]);
    order
}
