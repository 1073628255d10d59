//! A scripted fake world (no actix, no clock): transfers take `transfer`
//! seconds, jobs their runtime, sites have FIFO queues and LRU pools.

use super::*;
use crate::core::storage::Pool;
use crate::core::{File, JobSpec};
use crate::policy::{eviction::Lru, site_selector};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

struct World {
    m: Manager,
    pools: Vec<Pool>,
    queues: Vec<VecDeque<JobId>>,
    running: Vec<usize>,
    events: BinaryHeap<Reverse<(u64, u64, usize)>>,
    payloads: Vec<Option<Event>>,
    now: Time,
    transfer: f64,
    corrupt_first: usize,
    fail_from: Option<SiteId>,
    /// Sites whose slots are all taken by other users: nothing starts there.
    blocked: Vec<bool>,
    /// On a Kill, start the job first if it is next in line (the race).
    start_before_kill: bool,
    /// Scripts that fail (exit 1) the next time they run.
    failing_scripts: Vec<(JobId, ScriptKind)>,
    ended_ok: Vec<u32>,
    pin_times: Vec<Time>,
    max_prescripts: usize,
    transfers: usize,
}

fn t(x: Time) -> u64 {
    (x * 1000.0).round() as u64
}

impl World {
    fn new(wf: Workflow, sites: Vec<SiteInfo>, settings: ManagerSettings, strategy: &str) -> Self {
        Self::with_origins(wf, sites, settings, strategy, &[0])
    }

    /// A world whose inputs start on every site of `origins`.
    fn with_origins(
        wf: Workflow,
        sites: Vec<SiteInfo>,
        settings: ManagerSettings,
        strategy: &str,
        origins: &[SiteId],
    ) -> Self {
        let wf = Arc::new(wf);
        let mut pools: Vec<Pool> = sites
            .iter()
            .map(|s| Pool::new(s.disk, Box::new(Lru)))
            .collect();
        let placement: Vec<(FileId, SiteId)> = wf
            .inputs()
            .flat_map(|f| origins.iter().map(move |&s| (f, s)))
            .collect();
        for &(f, s) in &placement {
            pools[s].place_origin(f, wf.files[f].size).unwrap();
        }
        let n = wf.jobs.len();
        let m = sites.len();
        let sel = site_selector(strategy, 7).unwrap();
        World {
            m: Manager::new(wf, sites, &placement, settings, sel),
            pools,
            queues: vec![VecDeque::new(); m],
            running: vec![0; m],
            events: BinaryHeap::new(),
            payloads: Vec::new(),
            now: 0.0,
            transfer: 5.0,
            corrupt_first: 0,
            fail_from: None,
            blocked: vec![false; m],
            start_before_kill: false,
            failing_scripts: Vec::new(),
            ended_ok: vec![0; n],
            pin_times: Vec::new(),
            max_prescripts: 0,
            transfers: 0,
        }
    }

    fn at(&mut self, when: Time, e: Event) {
        self.payloads.push(Some(e));
        let seq = self.payloads.len() as u64 - 1;
        self.events.push(Reverse((t(when), seq, seq as usize)));
    }

    fn apply(&mut self, cmds: Vec<Command>) {
        for c in cmds {
            match c {
                Command::Kill { job, site } => {
                    if self.start_before_kill && self.queues[site].front() == Some(&job) {
                        // The slot freed just before the kill arrived.
                        self.blocked[site] = false;
                        self.start_jobs(site);
                        self.blocked[site] = true;
                    }
                    let q = &mut self.queues[site];
                    let killed = match q.iter().position(|&j| j == job) {
                        Some(i) => q.remove(i).is_some(),
                        None => false,
                    };
                    self.at(self.now, Event::JobKilled { job, site, killed });
                }
                Command::Pin { job, site } => {
                    self.pin_times.push(self.now);
                    let inputs = self.m.workflow().jobs[job].inputs.clone();
                    self.pools[site].pin_job(job, &inputs);
                }
                Command::StartTransfer { id, from, .. } if self.fail_from == Some(from) => {
                    let result = Err(TransferFailure::Connection("refused".into()));
                    self.at(self.now + 1.0, Event::TransferDone { id, result });
                }
                Command::StartTransfer {
                    id, file, to, job, ..
                } => {
                    self.transfers += 1;
                    let size = self.m.workflow().files[file].size;
                    match self.pools[to].begin_write(file, size) {
                        Ok(r) => {
                            for f in r.evicted {
                                self.at(self.now, Event::FileEvicted { site: to, file: f });
                            }
                            let ok = self.corrupt_first == 0;
                            let result = if ok {
                                self.pools[to].commit_write(file);
                                Ok(size)
                            } else {
                                self.corrupt_first -= 1;
                                self.pools[to].abort_write(file);
                                Err(TransferFailure::Corrupt("flipped".into()))
                            };
                            self.at(self.now + self.transfer, Event::TransferDone { id, result });
                        }
                        Err(e) => {
                            let wf = self.m.workflow().clone();
                            let inputs = wf.jobs[job].inputs.iter().map(|&f| (f, wf.files[f].size));
                            let never = e.never || !self.pools[to].could_ever_hold(inputs);
                            let result = Err(TransferFailure::NoSpace { never });
                            self.at(self.now, Event::TransferDone { id, result });
                        }
                    }
                }
                Command::Submit { job, site } => {
                    self.queues[site].push_back(job);
                    self.start_jobs(site);
                }
                Command::Release { job, site, delete } => {
                    self.pools[site].release_job(job, &delete);
                }
                Command::RunScript { job, kind, .. } => {
                    let status = i32::from(self.failing_scripts.contains(&(job, kind)));
                    self.failing_scripts.retain(|&(j, k)| (j, k) != (job, kind));
                    self.at(self.now, Event::ScriptDone { job, kind, status });
                }
            }
        }
    }

    fn start_jobs(&mut self, site: SiteId) {
        while !self.blocked[site] && self.running[site] < self.m.sites()[site].cpus {
            let Some(job) = self.queues[site].pop_front() else {
                return;
            };
            let wf = self.m.workflow().clone();
            let missing = wf.jobs[job]
                .inputs
                .iter()
                .find(|&&f| !self.pools[site].has(f));
            if let Some(&f) = missing {
                let failure = JobFailure::MissingInput(wf.files[f].name.clone());
                self.at(
                    self.now,
                    Event::JobEnded {
                        job,
                        site,
                        result: Err(failure),
                    },
                );
                continue;
            }
            for &f in &wf.jobs[job].inputs {
                self.pools[site].touch(f);
            }
            self.running[site] += 1;
            self.at(self.now, Event::JobStarted { job, site });
            for &o in &wf.jobs[job].outputs {
                let r = self.pools[site].begin_write(o, wf.files[o].size).unwrap();
                for file in r.evicted {
                    self.at(self.now, Event::FileEvicted { site, file });
                }
                self.pools[site].commit_write(o);
                self.pools[site].keep(o);
            }
            self.ended_ok[job] += 1;
            // The end event frees the slot; the world starts the next job then.
            let end = self.now + wf.jobs[job].runtime;
            self.at(
                end,
                Event::JobEnded {
                    job,
                    site,
                    result: Ok(()),
                },
            );
        }
    }
}

impl World {
    /// Runs to the end; a slot frees when its job's end event is delivered.
    fn run_with_slots(&mut self) {
        let mut out = Vec::new();
        self.m.handle(0.0, Event::Tick, &mut out);
        self.apply(out);
        for _ in 0..1_000_000 {
            let next_event = self
                .events
                .peek()
                .map(|Reverse((w, _, _))| *w as f64 / 1000.0);
            let wake = self.m.next_wakeup();
            let (when, ev) = match (next_event, wake) {
                (Some(e), Some(w)) if w < e => (w, Event::Tick),
                (Some(_), _) => {
                    let Reverse((w, _, i)) = self.events.pop().unwrap();
                    (w as f64 / 1000.0, self.payloads[i].take().unwrap())
                }
                (None, Some(w)) => (w, Event::Tick),
                (None, None) => break,
            };
            self.now = when;
            let freed = match &ev {
                Event::JobEnded {
                    site,
                    result: Ok(()),
                    ..
                } => Some(*site),
                _ => None,
            };
            let mut out = Vec::new();
            self.m.handle(when, ev, &mut out);
            self.max_prescripts = self.max_prescripts.max(self.m.prescripts_running());
            self.apply(out);
            if let Some(site) = freed {
                self.running[site] -= 1;
                self.start_jobs(site);
            }
        }
    }
}

fn pipeline(width: usize, files_per_job: usize) -> Workflow {
    let mut files = Vec::new();
    let mut jobs = Vec::new();
    for i in 0..width {
        let mut inputs = Vec::new();
        for k in 0..files_per_job {
            let name = format!("in-{}-{k}", i % 7);
            if !files.iter().any(|f: &File| f.name == name) {
                files.push(File {
                    name: name.clone(),
                    size: 100,
                });
            }
            inputs.push(name);
        }
        files.push(File {
            name: format!("mid-{i}"),
            size: 5,
        });
        files.push(File {
            name: format!("out-{i}"),
            size: 5,
        });
        jobs.push(JobSpec {
            name: format!("a{i}"),
            runtime: 60.0,
            inputs,
            outputs: vec![format!("mid-{i}")],
            parents: vec![],
            ..Default::default()
        });
        jobs.push(JobSpec {
            name: format!("b{i}"),
            runtime: 30.0,
            inputs: vec![format!("mid-{i}")],
            outputs: vec![format!("out-{i}")],
            parents: vec![format!("a{i}")],
            ..Default::default()
        });
    }
    Workflow::build(files, jobs).unwrap()
}

fn sites(n: usize, cpus: usize, disk: u64) -> Vec<SiteInfo> {
    let mut v = vec![SiteInfo {
        name: "storage".into(),
        cpus: 0,
        disk: 1 << 40,
        speed: 1.0,
        overhead: 0.0,
    }];
    for i in 0..n {
        v.push(SiteInfo {
            name: format!("s{i}"),
            cpus,
            disk,
            speed: 1.0,
            overhead: 0.0,
        });
    }
    v
}

#[test]
fn maxpre_and_interval_hold_and_every_job_ends_once() {
    for strategy in ["random", "round-robin", "data-present"] {
        let settings = ManagerSettings {
            maxpre: 4,
            prescript_interval: 1.0,
            ..Default::default()
        };
        let mut w = World::new(pipeline(30, 3), sites(3, 2, 10_000), settings, strategy);
        w.run_with_slots();
        assert!(
            w.m.is_finished() && w.m.succeeded(),
            "{strategy}: {:?}",
            w.m.counts()
        );
        assert!(w.max_prescripts <= 4, "{strategy}: MAXPRE exceeded");
        assert!(w.max_prescripts == 4, "{strategy}: MAXPRE never reached");
        for pair in w.pin_times.windows(2) {
            assert!(
                pair[1] - pair[0] >= 1.0 - 1e-9,
                "{strategy}: interval broken"
            );
        }
        assert!(
            w.ended_ok.iter().all(|&n| n == 1),
            "{strategy}: a job ran twice or never"
        );
    }
}

#[test]
fn delete_policy_transfers_every_missing_input_and_caching_reuses() {
    let run = |policy| {
        // One slot and prescripts further apart than a job runs: each job is
        // planned after the previous postscript, as a second job would be.
        let settings = ManagerSettings {
            replica_policy: policy,
            prescript_interval: 100.0,
            ..Default::default()
        };
        let mut w = World::new(pipeline(14, 2), sites(1, 1, 10_000), settings, "random");
        w.run_with_slots();
        assert!(w.m.succeeded());
        w.transfers
    };
    // 14 first-level jobs read 2 inputs each; the second level finds its input.
    assert_eq!(run(ReplicaPolicy::Delete), 28);
    // Only 7 distinct names × 2 files exist: caching moves each once.
    assert_eq!(run(ReplicaPolicy::Caching), 14);
}

#[test]
fn failed_transfers_are_retried_and_nothing_is_lost() {
    let settings = ManagerSettings::default();
    let mut w = World::new(pipeline(5, 1), sites(2, 1, 10_000), settings, "round-robin");
    w.corrupt_first = 5;
    w.run_with_slots();
    assert!(w.m.succeeded());
    let failed =
        w.m.records()
            .transfers
            .iter()
            .filter(|r| r.failure.is_some())
            .count();
    assert_eq!(failed, 5);
}

#[test]
fn a_source_that_keeps_failing_is_replaced_by_another_replica() {
    let mut s = sites(1, 1, 10_000);
    let mut mirror = s[0].clone();
    mirror.name = "mirror".into();
    s.push(mirror);
    let settings = ManagerSettings::default();
    let mut w = World::with_origins(pipeline(3, 1), s, settings, "random", &[0, 2]);
    w.fail_from = Some(0); // the least busy holder (ties go to the lower id)
    w.run_with_slots();
    assert!(w.m.succeeded());
    let t = &w.m.records().transfers;
    let failed: Vec<_> = t.iter().filter(|r| r.failure.is_some()).collect();
    assert!(failed.iter().all(|r| r.from == 0));
    assert!(
        t.iter()
            .filter(|r| r.failure.is_none())
            .all(|r| r.from == 2),
        "{t:?}"
    );
    // Each of the 3 distinct inputs: 1 try + transfer_retries on source 0.
    assert_eq!(failed.len(), 3 * 4);
}

fn monitqueue() -> ManagerSettings {
    ManagerSettings {
        monit_interval: 10.0,
        max_idle: 50.0,
        ..Default::default()
    }
}

#[test]
fn monitqueue_kills_jobs_idle_at_a_busy_site_and_they_end_elsewhere() {
    let mut w = World::new(
        pipeline(6, 1),
        sites(2, 2, 10_000),
        monitqueue(),
        "round-robin",
    );
    w.blocked[1] = true; // s0: every slot taken by other users
    w.run_with_slots();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(
        w.ended_ok.iter().all(|&n| n == 1),
        "a job ran twice or never"
    );
    let r = w.m.records();
    assert!(r.sites[1].killed > 0 && r.sites[1].ended == 0);
    for (j, rec) in r.jobs.iter().enumerate() {
        for pair in rec.attempts.windows(2) {
            if pair[0].outcome == Outcome::Killed {
                assert_ne!(
                    pair[1].site, pair[0].site,
                    "job {j} went back to its killer"
                );
                assert!(pair[0].ended.unwrap() - pair[0].submitted.unwrap() > 50.0);
            }
        }
    }
}

#[test]
fn a_kill_racing_a_start_leaves_exactly_one_outcome() {
    let mut w = World::new(
        pipeline(6, 1),
        sites(2, 2, 10_000),
        monitqueue(),
        "round-robin",
    );
    w.blocked[1] = true;
    w.start_before_kill = true;
    w.run_with_slots();
    assert!(w.m.succeeded());
    assert!(
        w.ended_ok.iter().all(|&n| n == 1),
        "a job ran twice or never"
    );
    let r = w.m.records();
    // The first job in each queue started as its kill arrived: it ran there.
    assert!(r.sites[1].ended > 0, "the start won some races");
    for rec in &r.jobs {
        let ended = rec
            .attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Ended)
            .count();
        assert_eq!(ended, 1);
    }
}

#[test]
fn a_full_disk_evicts_and_the_run_still_completes() {
    // Each execution site holds only 3 of the 7 distinct inputs at once.
    let settings = ManagerSettings {
        replica_policy: ReplicaPolicy::Caching,
        ..Default::default()
    };
    let mut w = World::new(pipeline(20, 1), sites(2, 1, 450), settings, "random");
    w.run_with_slots();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let evictions: u64 = w.pools.iter().map(Pool::evictions).sum();
    assert!(evictions > 0);
    for (s, pool) in w.pools.iter().enumerate() {
        for f in 0..w.m.workflow().files.len() {
            if w.m.rls().has(f, s) {
                assert!(pool.has(f), "RLS lists a file site {s} no longer holds");
            }
        }
    }
}

#[test]
fn inputs_that_never_fit_avoid_the_site() {
    let mut s = sites(2, 1, 10_000);
    s[1].disk = 250; // two 100-byte inputs never fit beside the 100-byte origin
    let mut w = World::new(pipeline(4, 2), s, ManagerSettings::default(), "round-robin");
    w.pools[1].place_origin(99, 100).unwrap();
    w.run_with_slots();
    assert!(w.m.succeeded());
    for j in (0..8).filter(|j| w.m.workflow().jobs[*j].name.starts_with('a')) {
        let last = w.m.records().jobs[j].attempts.last().unwrap();
        assert_eq!(last.site, 2, "job {j} ended on the site it cannot fit");
    }
}

#[test]
fn a_job_failing_everywhere_fails_for_good_and_blocks_its_children() {
    let wf = pipeline(1, 1);
    let mut w = World::new(
        wf,
        sites(1, 1, 10_000),
        ManagerSettings::default(),
        "random",
    );
    let mut out = Vec::new();
    w.m.handle(0.0, Event::Tick, &mut out);
    let mut now = 0.0;
    for _ in 0..100 {
        for c in std::mem::take(&mut out) {
            match c {
                Command::StartTransfer { id, .. } => w.m.handle(
                    now,
                    Event::TransferDone {
                        id,
                        result: Ok(100),
                    },
                    &mut out,
                ),
                Command::Submit { job, site } => w.m.handle(
                    now,
                    Event::JobEnded {
                        job,
                        site,
                        result: Err(JobFailure::Failed("exit 1".into())),
                    },
                    &mut out,
                ),
                _ => {}
            }
        }
        now += 100.0;
        w.m.handle(now, Event::Tick, &mut out);
    }
    assert!(w.m.is_finished() && !w.m.succeeded());
    assert_eq!(w.m.job_state(0), JobState::Failed);
    assert_eq!(w.m.job_state(1), JobState::Blocked);
    assert_eq!(
        w.m.records().jobs[0].attempts.len(),
        4,
        "1 try + max_retries 3"
    );
}

/// Independent input-less jobs `0..n` (job `i` named `j{i}`), their
/// DAGMan settings, one site of `cpus` slots: runs to the end, each job
/// taking 10 s, `fails(job, attempt)` deciding failures. Returns the
/// manager and the jobs in submission order.
fn run_nodes(
    n: usize,
    parents: &[(usize, usize)],
    nodes: NodeSettings,
    cpus: usize,
    fails: impl Fn(JobId, usize) -> bool,
) -> (Manager, Vec<JobId>) {
    let specs = (0..n)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime: 10.0,
            parents: parents
                .iter()
                .filter(|&&(_, c)| c == i)
                .map(|&(p, _)| format!("j{p}"))
                .collect(),
            ..Default::default()
        })
        .collect();
    let wf = Arc::new(Workflow::build(Vec::new(), specs).unwrap());
    let settings = ManagerSettings {
        maxpre: 1,
        prescript_interval: 0.0,
        replan_backoff: 0.0,
        ..Default::default()
    };
    let selector = crate::policy::site_selector("round-robin", 1).unwrap();
    let mut m = Manager::new(wf, sites(1, cpus, 1000), &[], settings, selector);
    m.set_nodes(nodes);
    let mut out = Vec::new();
    let mut order = Vec::new();
    let mut running: Vec<(Time, JobId, SiteId)> = Vec::new();
    let mut now = 0.0;
    m.handle(now, Event::Tick, &mut out);
    for _ in 0..10_000 {
        for c in std::mem::take(&mut out) {
            if let Command::Submit { job, site } = c {
                order.push(job);
                m.handle(now, Event::JobStarted { job, site }, &mut Vec::new());
                running.push((now + 10.0, job, site));
            }
        }
        if m.is_finished() {
            break;
        }
        running.sort_by(|a, b| b.0.total_cmp(&a.0));
        match running.pop() {
            Some((at, job, site)) => {
                now = at;
                let attempt = m.records().jobs[job].attempts.len() - 1;
                let result = if fails(job, attempt) {
                    Err(JobFailure::Failed("exit 1".into()))
                } else {
                    Ok(())
                };
                m.handle(now, Event::JobEnded { job, site, result }, &mut out);
            }
            None => {
                now += 1.0;
                m.handle(now, Event::Tick, &mut out);
            }
        }
    }
    (m, order)
}

#[test]
fn dagman_priorities_order_the_release_of_ready_nodes() {
    let mut nodes = NodeSettings::none(5);
    nodes.priority = vec![0, 3, -2, 3, 9];
    let (m, order) = run_nodes(5, &[], nodes, 1, |_, _| false);
    assert!(m.succeeded());
    assert_eq!(order, [4, 1, 3, 0, 2]);
}

#[test]
fn dagman_maxjobs_bounds_a_category_in_flight() {
    let mut nodes = NodeSettings::none(6);
    nodes.category = vec![Some(0), Some(0), Some(0), Some(0), None, None];
    nodes.category_limits = vec![2];
    let (m, order) = run_nodes(6, &[], nodes, 8, |_, _| false);
    assert!(m.succeeded());
    assert_eq!(order.len(), 6);
    assert_eq!(m.category_peaks(), [2], "MAXJOBS 2 held");
    // With 8 slots and no limit all six would run at once; the category's
    // last two wait for the first two.
    let started = |j: usize| m.records().jobs[j].attempts[0].started.unwrap();
    let mut cat: Vec<f64> = (0..4).map(started).collect();
    cat.sort_by(f64::total_cmp);
    assert!(cat[2] >= cat[0] + 10.0, "{cat:?}");
}

#[test]
fn dagman_retry_bounds_the_attempts_of_one_node() {
    let mut nodes = NodeSettings::none(3);
    nodes.retry = vec![Some(1), Some(4), None];
    // Job 0 always fails; job 1 fails three times then succeeds; job 2
    // (the manager's max_retries, 3) fails twice.
    let (m, _) = run_nodes(3, &[], nodes, 1, |j, a| match j {
        0 => true,
        1 => a < 3,
        _ => a < 2,
    });
    let attempts = |j: usize| m.records().jobs[j].attempts.len();
    assert_eq!(m.job_state(0), JobState::Failed);
    assert_eq!(attempts(0), 2, "RETRY 1: two attempts, then failed");
    assert_eq!((m.job_state(1), attempts(1)), (JobState::Done, 4));
    assert_eq!((m.job_state(2), attempts(2)), (JobState::Done, 3));
}

#[test]
fn dagman_noop_and_done_nodes_run_no_job() {
    let mut nodes = NodeSettings::none(4);
    nodes.noop[1] = true;
    nodes.done[0] = true;
    // 0 → 1 → 2, 3 alone.
    let (m, order) = run_nodes(4, &[(0, 1), (1, 2)], nodes, 1, |_, _| false);
    assert!(m.succeeded());
    // 0 is DONE at the start (releasing 1), 1 ends when its prescript
    // does (releasing 2): only 3 and 2 ever reach a site, in queue order.
    assert_eq!(order, [3, 2]);
    assert!(
        m.records().jobs[0].attempts.is_empty(),
        "DONE: nothing runs"
    );
    // NOOP: its prescript (and scripts) run, no job reaches the queue.
    let noop = &m.records().jobs[1].attempts;
    assert_eq!(noop.len(), 1);
    assert!(noop[0].submitted.is_none() && noop[0].outcome == Outcome::Ended);
}

#[test]
fn dagman_scripts_a_failed_pre_or_post_fails_the_attempt_and_retry_runs_it_again() {
    let mut w = World::new(
        pipeline(2, 1),
        sites(1, 2, 10_000),
        ManagerSettings::default(),
        "round-robin",
    );
    let n = w.m.workflow().jobs.len();
    let mut nodes = NodeSettings::none(n);
    nodes.pre = vec![true; n];
    nodes.post = vec![true; n];
    nodes.retry = vec![Some(1); n];
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![(0, ScriptKind::Pre), (1, ScriptKind::Post)];
    w.run_with_slots();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let a = &w.m.records().jobs[0].attempts;
    assert_eq!(a.len(), 2);
    assert_eq!(
        a[0].outcome,
        Outcome::StagingFailed("PRE script exited 1".into())
    );
    assert!(
        a[0].submitted.is_none(),
        "a failed PRE script stops the attempt before the queue"
    );
    let b = &w.m.records().jobs[1].attempts;
    assert_eq!(b.len(), 2);
    assert!(
        matches!(&b[0].outcome, Outcome::Failed(JobFailure::Failed(m)) if m == "POST script exited 1")
    );
    assert_eq!(b[1].outcome, Outcome::Ended);
}

fn scripted_world() -> World {
    World::new(
        pipeline(3, 1),
        sites(1, 3, 10_000),
        ManagerSettings::default(),
        "round-robin",
    )
}

#[test]
fn dagman_retry_unless_exit_makes_that_exit_final() {
    let mut w = scripted_world();
    let n = w.m.workflow().jobs.len();
    let mut nodes = NodeSettings::none(n);
    nodes.pre = vec![true; n];
    nodes.retry = vec![Some(3); n];
    nodes.retry_unless_exit = vec![Some(1); n];
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![(0, ScriptKind::Pre)];
    w.run_with_slots();
    assert_eq!(w.m.job_state(0), JobState::Failed);
    assert_eq!(w.m.records().jobs[0].attempts.len(), 1, "RETRY 3 not used");
    let job = |name: &str| {
        w.m.workflow()
            .jobs
            .iter()
            .position(|j| j.name == name)
            .unwrap()
    };
    assert_eq!(w.m.job_state(job("b0")), JobState::Blocked);
    assert_eq!(w.m.job_state(job("a1")), JobState::Done);
}

#[test]
fn dagman_defer_runs_the_script_again_later_without_a_failure() {
    let mut w = scripted_world();
    let n = w.m.workflow().jobs.len();
    let mut nodes = NodeSettings::none(n);
    nodes.pre = vec![true; n];
    nodes.retry = vec![Some(0); n];
    nodes.pre_defer = vec![Some((1, 30.0)); n];
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![(0, ScriptKind::Pre)];
    w.run_with_slots();
    assert!(w.m.succeeded());
    let a = &w.m.records().jobs[0].attempts;
    assert_eq!(a.len(), 1, "a deferral is not a failure");
    assert!(a[0].submitted.unwrap() >= a[0].prescript + 30.0, "{a:?}");
}

#[test]
fn dagman_max_jobs_idle_bounds_jobs_submitted_and_not_started() {
    // Six jobs, one slot: without a limit five would wait in the queue.
    let mut w = World::new(
        pipeline(6, 1),
        sites(1, 1, 10_000),
        ManagerSettings {
            maxpre: 0,
            prescript_interval: 0.0,
            ..Default::default()
        },
        "round-robin",
    );
    let n = w.m.workflow().jobs.len();
    let mut nodes = NodeSettings::none(n);
    nodes.max_jobs_idle = 2;
    w.m.set_nodes(nodes);
    w.run_with_slots();
    assert!(w.m.succeeded());
    let spans: Vec<(Time, Time)> =
        w.m.records()
            .jobs
            .iter()
            .flat_map(|j| &j.attempts)
            .filter_map(|a| Some((a.submitted?, a.started?)))
            .collect();
    let peak = spans
        .iter()
        .map(|&(t, _)| spans.iter().filter(|&&(s, e)| s <= t && t < e).count())
        .max()
        .unwrap();
    assert_eq!(peak, 2, "{spans:?}");
}
