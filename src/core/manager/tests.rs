//! The manager's unit tests, in the scripted world (LRU pools).

use super::abort::EXIT_ABORT;
use super::grid::memo::{self, MemoCopied};
use super::scripted::ScriptedWorld as World;
use super::*;
use crate::core::nodes::SubmitTries;
use crate::core::wms::{Latency, WmsSettings};
use crate::core::seams::GridView;
use crate::core::{File, JobSpec};
use crate::policy::{eviction::Lru, site_selector};

fn world(wf: Workflow, sites: Vec<SiteInfo>, settings: ManagerSettings, strategy: &str) -> World {
    world_with_origins(wf, sites, settings, strategy, &[0])
}

/// A world whose inputs start on every site of `origins`.
fn world_with_origins(
    wf: Workflow,
    sites: Vec<SiteInfo>,
    settings: ManagerSettings,
    strategy: &str,
    origins: &[SiteId],
) -> World {
    let selector = site_selector(strategy, 7).unwrap();
    World::new(wf, sites, settings, selector, |_| Box::new(Lru), origins)
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
        let mut w = world(pipeline(30, 3), sites(3, 2, 10_000), settings, strategy);
        w.run();
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

/// A job naming an input more than once stages it once, whether its list
/// is short (scanned) or long (checked against a set).
#[test]
fn an_input_named_twice_is_staged_once() {
    for n in [3, 40] {
        let names: Vec<String> = (0..n).map(|k| format!("in-{k}")).collect();
        let files = (names.iter())
            .map(|name| File {
                name: name.clone(),
                size: 10,
            })
            .chain([File {
                name: "out".into(),
                size: 1,
            }])
            .collect();
        let mut inputs = names.clone();
        inputs.extend(names.iter().rev().cloned());
        let job = JobSpec {
            name: "a".into(),
            runtime: 1.0,
            inputs,
            outputs: vec!["out".into()],
            ..Default::default()
        };
        let wf = Workflow::build(files, vec![job]).unwrap();
        let mut w = world(wf, sites(1, 1, 1 << 20), ManagerSettings::default(), "random");
        w.run();
        assert!(w.m.succeeded(), "{n}");
        let mut staged: Vec<FileId> = w.m.records().transfers.iter().map(|t| t.file).collect();
        staged.sort_unstable();
        assert_eq!(staged, (0..n).collect::<Vec<_>>(), "{n} inputs, each once");
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
        let mut w = world(pipeline(14, 2), sites(1, 1, 10_000), settings, "random");
        w.run();
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
    let mut w = world(pipeline(5, 1), sites(2, 1, 10_000), settings, "round-robin");
    w.corrupt_first = 5;
    w.run();
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
    let mut w = world_with_origins(pipeline(3, 1), s, settings, "random", &[0, 2]);
    w.fail_from = Some(0); // the least busy holder (ties go to the lower id)
    w.run();
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

#[test]
fn a_busy_source_is_a_failed_try_and_its_jobs_wait_for_it_instead_of_failing() {
    // One origin serving one transfer at a time to six hungry slots, one
    // retry a source: most tries are refused, and the origin is excluded
    // again and again, but no job fails for it.
    let settings = ManagerSettings {
        transfer_retries: 1,
        transfer_backoff: 0.5,
        max_retries: 0,
        ..Default::default()
    };
    let mut w = world(
        pipeline(12, 1),
        sites(2, 3, 10_000),
        settings,
        "round-robin",
    );
    w.max_connections = Some(1);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.ended_ok.iter().all(|&n| n == 1), "each job ended once");
    let t = &w.m.records().transfers;
    let busy = t
        .iter()
        .filter(|r| r.failure.as_deref() == Some(&TransferFailure::Busy))
        .count();
    assert!(busy > 12, "refused {busy} times");
    let waited =
        w.m.records()
            .jobs
            .iter()
            .flat_map(|j| &j.attempts)
            .any(|a| matches!(&a.outcome, Outcome::StagingFailed(r) if r.contains("was busy")));
    assert!(waited, "some job ran out of sources that were only busy");
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
    let mut w = world(
        pipeline(6, 1),
        sites(2, 2, 10_000),
        monitqueue(),
        "round-robin",
    );
    w.blocked[1] = true; // s0: every slot taken by other users
    w.run();
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
    let mut w = world(
        pipeline(6, 1),
        sites(2, 2, 10_000),
        monitqueue(),
        "round-robin",
    );
    w.blocked[1] = true;
    w.start_before_kill = true;
    w.run();
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
    let mut w = world(pipeline(20, 1), sites(2, 1, 450), settings, "random");
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let n = w.m.sites().len();
    let evictions: u64 = (0..n).map(|s| w.pool(s).evictions()).sum();
    assert!(evictions > 0);
    for (s, pool) in (0..n).map(|s| (s, w.pool(s))) {
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
    let mut w = world(pipeline(4, 2), s, ManagerSettings::default(), "round-robin");
    w.place_origin(1, 99, 100).unwrap();
    w.run();
    assert!(w.m.succeeded());
    for j in (0..8).filter(|j| w.m.workflow().jobs[*j].name.starts_with('a')) {
        let last = w.m.records().jobs[j].attempts.last().unwrap();
        assert_eq!(last.site, 2, "job {j} ended on the site it cannot fit");
    }
}

#[test]
fn outputs_that_do_not_fit_fail_the_attempt_and_the_job_ends_elsewhere() {
    // Site 1 has room for a job's 100-byte input and 5-byte output, but
    // holds a 5-byte origin copy of its own: the output never fits there.
    let mut s = sites(2, 1, 10_000);
    s[1].disk = 105;
    let mut w = world(pipeline(2, 1), s, ManagerSettings::default(), "round-robin");
    w.place_origin(1, 99, 5).unwrap();
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let full = Outcome::Failed(JobFailure::NoSpace { never: true });
    let attempts = w.m.records().jobs.iter().flat_map(|j| &j.attempts);
    let on_full: Vec<_> = attempts.filter(|a| a.outcome == full).collect();
    assert!(!on_full.is_empty() && on_full.iter().all(|a| a.site == 1));
    assert!(w.ended_ok.iter().all(|&n| n == 1), "each job ended once");
}

/// A chain `c0 → c1 → …` in which `ck` reads `mk-1` (`c0` the origin's
/// `in`) and writes `mk`, every file 40 bytes.
fn chain(n: usize) -> Workflow {
    let mut files = vec![File {
        name: "in".into(),
        size: 40,
    }];
    let mut jobs = Vec::new();
    for k in 0..n {
        files.push(File {
            name: format!("m{k}"),
            size: 40,
        });
        jobs.push(JobSpec {
            name: format!("c{k}"),
            runtime: 10.0,
            inputs: vec![if k == 0 {
                "in".into()
            } else {
                format!("m{}", k - 1)
            }],
            outputs: vec![format!("m{k}")],
            parents: if k == 0 {
                vec![]
            } else {
                vec![format!("c{}", k - 1)]
            },
            ..Default::default()
        });
    }
    Workflow::build(files, jobs).unwrap()
}

#[test]
fn an_intermediate_output_is_cleaned_up_after_its_last_reader_and_a_final_one_stays() {
    let mut w = world(
        pipeline(3, 1),
        sites(1, 2, 10_000),
        ManagerSettings::default(),
        "random",
    );
    w.run();
    assert!(w.m.succeeded());
    let wf = w.m.workflow().clone();
    let file = |name: &str| wf.files.iter().position(|f| f.name == name).unwrap();
    let job = |name: &str| wf.jobs.iter().position(|j| j.name == name).unwrap();
    let mut cleaned: Vec<_> = w
        .cleaned
        .iter()
        .map(|&(s, f)| (s, wf.files[f].name.clone()))
        .collect();
    cleaned.sort();
    let want: Vec<_> = (0..3).map(|i| (1, format!("mid-{i}"))).collect();
    assert_eq!(
        cleaned, want,
        "each mid once, at the site that wrote it; no out, no input"
    );
    for i in 0..3 {
        // Still on disk (nothing needed the room) and still registered.
        assert!(w.pool(1).has(file(&format!("mid-{i}"))));
        assert!(w.m.rls().has(file(&format!("mid-{i}")), 1));
        let reader = &w.m.records().jobs[job(&format!("b{i}"))];
        assert_eq!(reader.attempts.last().unwrap().outcome, Outcome::Ended);
    }
    let off = ManagerSettings {
        cleanup: false,
        ..Default::default()
    };
    let mut w = world(pipeline(3, 1), sites(1, 2, 10_000), off, "random");
    w.run();
    assert!(w.m.succeeded() && w.cleaned.is_empty());
}

#[test]
fn cleanup_lets_a_chain_run_on_a_disk_that_holds_two_of_its_files() {
    // 100 bytes hold a job's input and output (80) but not a third file:
    // with every output kept, c2 finds no room, ever.
    let mut w = world(
        chain(5),
        sites(1, 1, 100),
        ManagerSettings::default(),
        "random",
    );
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.pool(1).evictions() > 0, "cleaned outputs made room");

    let off = ManagerSettings {
        cleanup: false,
        ..Default::default()
    };
    let mut w = world(chain(5), sites(1, 1, 100), off, "random");
    w.run();
    assert!(w.m.is_finished() && !w.m.succeeded(), "{:?}", w.m.counts());
    let r = w.m.records();
    assert_eq!(w.m.job_state(2), JobState::Failed);
    let why = r.jobs[2].failure.as_deref().unwrap();
    assert!(why.contains("deadlock on disk space"), "{why}");
    assert!(r.jobs[0].failure.is_none() && r.jobs[1].failure.is_none());
    for k in 3..5 {
        assert_eq!(w.m.job_state(k), JobState::Blocked);
        assert_eq!(r.jobs[k].blocked_by, Some(2), "c{k} is blocked by c2");
    }
}

#[test]
fn a_job_that_fits_no_site_fails_at_once_and_says_why() {
    let mut w = world(
        chain(2),
        sites(2, 1, 30),
        ManagerSettings::default(),
        "random",
    );
    w.run();
    assert!(w.m.is_finished());
    assert_eq!(w.m.job_state(0), JobState::Failed);
    assert!(w.m.records().jobs[0].attempts.is_empty(), "never placed");
    let why = w.m.records().jobs[0].failure.as_deref().unwrap();
    assert!(
        why.contains("no site with CPUs can hold its inputs and outputs (80 bytes)"),
        "{why}"
    );
}

#[test]
fn a_job_failing_everywhere_fails_for_good_and_blocks_its_children() {
    let wf = pipeline(1, 1);
    let mut w = world(
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
                Command::Submit { job, site, .. } => w.m.handle(
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
    let why = w.m.records().jobs[0].failure.as_deref().unwrap();
    assert!(
        why.starts_with("failed 4 times, more than its 3 retries; last: failed: exit 1"),
        "{why}"
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
            if let Command::Submit { job, site, .. } = c {
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
    let mut w = world(
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
    w.run();
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
    world(
        pipeline(3, 1),
        sites(1, 3, 10_000),
        ManagerSettings::default(),
        "round-robin",
    )
}

/// DAGMan's PRE_SKIP (HTCondor's `Dag::PreScriptReaper`): a PRE script
/// exiting the node's skip value ends the node as a success, with neither
/// its job nor its POST script run, and its children go on; another
/// non-zero exit is still a failed attempt.
#[test]
fn dagman_pre_skip_ends_the_node_well_without_its_job_or_post_script() {
    let mut w = scripted_world();
    let n = w.m.workflow().jobs.len();
    let mut nodes = NodeSettings::none(n);
    nodes.pre = vec![true; n];
    nodes.post = vec![true; n];
    nodes.retry = vec![Some(1); n];
    nodes.pre_skip[1] = Some(1);
    nodes.pre_skip[2] = Some(7);
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![(1, ScriptKind::Pre), (2, ScriptKind::Pre)];
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let skipped = &w.m.records().jobs[1].attempts;
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].outcome, Outcome::Ended);
    assert!(skipped[0].submitted.is_none(), "the job never reaches a queue");
    assert!(
        !w.scripts_run.iter().any(|&(j, k, _)| (j, k) == (1, ScriptKind::Post)),
        "{:?}",
        w.scripts_run
    );
    // Job 2's PRE exited 1, not its skip value 7: a failure, then a retry.
    let other = &w.m.records().jobs[2].attempts;
    assert_eq!(other.len(), 2);
    assert_eq!(
        other[0].outcome,
        Outcome::StagingFailed("PRE script exited 1".into())
    );
    assert!(other[1].submitted.is_some() && other[1].outcome == Outcome::Ended);
}

/// `DAGMAN_ALWAYS_RUN_POST` (HTCondor's `Dag::PreScriptReaper`): a node
/// whose PRE script failed runs its POST script anyway, with `$RETURN`
/// -1004 (the job skipped); a POST exiting 0 ends the node well without
/// its job, a failing one is a failed attempt that RETRY runs again.
#[test]
fn dagman_always_run_post_runs_the_post_script_after_a_failed_pre_script() {
    let mut w = scripted_world();
    let wf = w.m.workflow().clone();
    let n = wf.jobs.len();
    let leaves: Vec<JobId> = (0..n)
        .filter(|&j| !wf.jobs.iter().any(|k| k.parents.contains(&j)))
        .collect();
    let (rescued, retried) = (leaves[0], leaves[1]);
    let mut nodes = NodeSettings::none(n);
    nodes.pre = vec![true; n];
    nodes.post = vec![true; n];
    nodes.retry = vec![Some(1); n];
    nodes.always_run_post = true;
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![
        (rescued, ScriptKind::Pre),
        (retried, ScriptKind::Pre),
        (retried, ScriptKind::Post),
    ];
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let posts = |j: JobId| -> Vec<i32> {
        (w.scripts_run.iter())
            .filter(|&&(k, kind, _)| k == j && kind == ScriptKind::Post)
            .map(|&(_, _, status)| status)
            .collect()
    };
    // The rescued node: one attempt, its POST saw the job skipped.
    let a = &w.m.records().jobs[rescued].attempts;
    assert_eq!(a.len(), 1);
    assert!(a[0].submitted.is_none() && a[0].outcome == Outcome::Ended);
    assert_eq!(posts(rescued), [-1004]);
    // The retried node: its POST failed after the failed PRE, then all ran.
    let b = &w.m.records().jobs[retried].attempts;
    assert_eq!(b.len(), 2);
    assert!(b[0].submitted.is_none());
    assert!(b[1].submitted.is_some() && b[1].outcome == Outcome::Ended);
    assert_eq!(posts(retried), [-1004, 0]);
}

#[test]
fn dagman_retry_unless_exit_makes_that_exit_final() {
    let mut w = scripted_world();
    let n = w.m.workflow().jobs.len();
    let mut nodes = NodeSettings::none(n);
    nodes.pre = vec![true; n];
    nodes.retry = vec![Some(3); n];
    nodes.retry_unless_exit = vec![Some(1); n].into();
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![(0, ScriptKind::Pre)];
    w.run();
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
    nodes.pre_defer = vec![Some((1, 30.0)); n].into();
    w.m.set_nodes(nodes);
    w.failing_scripts = vec![(0, ScriptKind::Pre)];
    w.run();
    assert!(w.m.succeeded());
    let a = &w.m.records().jobs[0].attempts;
    assert_eq!(a.len(), 1, "a deferral is not a failure");
    assert!(a[0].submitted.unwrap() >= a[0].prescript + 30.0, "{a:?}");
}

#[test]
fn dagman_max_jobs_idle_bounds_jobs_submitted_and_not_started() {
    // Six jobs, one slot: without a limit five would wait in the queue.
    let mut w = world(
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
    w.run();
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

/// `n` jobs of `runtime` s that move no data; each a child of the previous
/// one when `chain`.
/// A world of dataless jobs (name, runtime, parents) on one site of
/// `cpus` slots, each prescript at once.
fn chart_world(jobs: &[(&str, f64, &[&str])], cpus: usize) -> World {
    chart_world_with(jobs, cpus, ManagerSettings::default())
}

/// [`chart_world`] with `settings` (their prescripts still at once).
fn chart_world_with(
    jobs: &[(&str, f64, &[&str])],
    cpus: usize,
    settings: ManagerSettings,
) -> World {
    let jobs = jobs
        .iter()
        .map(|&(name, runtime, parents)| JobSpec {
            name: name.into(),
            runtime,
            parents: parents.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        })
        .collect();
    let settings = ManagerSettings {
        prescript_interval: 0.0,
        maxpre: 0,
        ..settings
    };
    let wf = Workflow::build(vec![], jobs).unwrap();
    world(wf, sites(1, cpus, 10_000), settings, "round-robin")
}

fn dataless(n: usize, runtime: f64, chain: bool) -> Workflow {
    let jobs = (0..n)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime,
            parents: if chain && i > 0 {
                vec![format!("j{}", i - 1)]
            } else {
                vec![]
            },
            ..Default::default()
        })
        .collect();
    Workflow::build(vec![], jobs).unwrap()
}

/// The makespan of a run of `wf` on one site of `cpus` slots with these WMS
/// stages (prescripts unthrottled).
fn wms_makespan(wf: Workflow, cpus: usize, wms: WmsSettings) -> f64 {
    let settings = ManagerSettings {
        prescript_interval: 0.0,
        maxpre: 0,
        wms: WmsSettings {
            random_phase: false,
            ..wms
        },
        ..Default::default()
    };
    let mut w = world(wf, sites(1, cpus, 10_000), settings, "round-robin");
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.ended_ok.iter().all(|&n| n == 1));
    w.m.records()
        .jobs
        .iter()
        .filter_map(|j| j.attempts.last()?.ended)
        .fold(0.0, f64::max)
}

#[test]
fn a_chain_waits_a_negotiation_cycle_per_job_when_claims_lapse() {
    let wms = WmsSettings {
        negotiator_interval: 60.0,
        ..WmsSettings::default()
    };
    // j0 matched at 0, ends at 10; nothing idle then, so its claim goes
    // back; j1 is matched at 60, j2 at 120.
    assert_eq!(wms_makespan(dataless(3, 10.0, true), 4, wms), 130.0);
}

#[test]
fn claims_pass_from_job_to_job_without_a_cycle() {
    let wms = WmsSettings {
        negotiator_interval: 60.0,
        ..WmsSettings::default()
    };
    // Two slots matched at 0; each end hands its claim to the next idle job.
    assert_eq!(wms_makespan(dataless(8, 10.0, false), 2, wms.clone()), 40.0);
    // With a claim worklife shorter than a job, every claim lapses: two
    // jobs per cycle.
    let short = WmsSettings {
        claim_worklife: 5.0,
        ..wms
    };
    assert_eq!(wms_makespan(dataless(8, 10.0, false), 2, short), 190.0);
}

#[test]
fn the_schedd_starts_job_start_count_jobs_per_job_start_delay() {
    let wms = WmsSettings {
        job_start_delay: 5.0,
        job_start_count: 2,
        ..WmsSettings::default()
    };
    // Starts at 0, 0, 5, 5, 10, 10: the last ends at 20.
    assert_eq!(wms_makespan(dataless(6, 10.0, false), 6, wms), 20.0);
}

#[test]
fn dagman_submits_its_limit_per_scan_and_notices_ends_at_scans() {
    let wms = WmsSettings {
        user_log_scan_interval: 5.0,
        max_submits_per_interval: 2,
        submit_delay: 1.0,
        ..WmsSettings::default()
    };
    // Submitted at 1, 2 (tick 0), 6, 7 (tick 5), 11, 12 (tick 10); the last
    // ends at 22 and is noticed at the scan of 25.
    assert_eq!(wms_makespan(dataless(6, 10.0, false), 6, wms), 25.0);
}

#[test]
fn dagman_scans_without_a_submit_delay_send_jobs_to_their_site_at_the_tick() {
    // Seed 003's ORIG and Job-C: only the 5-s log scan, submissions free.
    let wms = WmsSettings {
        user_log_scan_interval: 5.0,
        ..WmsSettings::default()
    };
    // j0 submitted at tick 0, ends at 12, noticed at 15; j1 submitted at
    // that tick, ends at 27, noticed at 30.
    assert_eq!(wms_makespan(dataless(2, 12.0, true), 1, wms), 30.0);
}

#[test]
fn per_job_latencies_are_drawn_from_their_distribution() {
    let settings = |postscript_overhead| ManagerSettings {
        prescript_interval: 0.0,
        maxpre: 0,
        postscript_overhead,
        ..Default::default()
    };
    let run = |l| {
        let mut w = world(
            dataless(200, 1.0, true),
            sites(1, 1, 10_000),
            settings(l),
            "random",
        );
        w.run();
        w.m.records().jobs.last().unwrap().attempts[0]
            .ended
            .unwrap()
    };
    // 200 jobs in a chain: 200 s of work and 200 postscripts.
    let fixed = run(Latency::fixed(3.0));
    assert!((fixed - 800.0).abs() < 1e-6, "{fixed}");
    let drawn = run(Latency::Exponential { mean: 3.0 });
    assert!((drawn - 800.0).abs() < 120.0 && drawn != fixed, "{drawn}");
}

/// A chain of `n` dataless 10-s jobs and, when `with_final`, a last job
/// with no edges as the FINAL node; one site of 4 slots, the DAG's settings
/// as `set` makes them.
fn dag_world(n: usize, with_final: bool, set: impl FnOnce(&mut NodeSettings)) -> World {
    let chain = dataless(n, 10.0, true);
    let mut specs: Vec<JobSpec> = (0..n).map(|j| chain.spec(j)).collect();
    if with_final {
        specs.push(JobSpec {
            name: "final".into(),
            runtime: 10.0,
            ..Default::default()
        });
    }
    let settings = ManagerSettings {
        prescript_interval: 0.0,
        maxpre: 0,
        ..Default::default()
    };
    let wf = Workflow::build(vec![], specs).unwrap();
    let mut w = world(wf, sites(1, 4, 10_000), settings, "round-robin");
    let mut nodes = NodeSettings::none(n + usize::from(with_final));
    if with_final {
        nodes.final_node = Some(n);
    }
    set(&mut nodes);
    w.m.set_nodes(nodes);
    w
}

/// Each POST script run: (node, `$RETURN`), in order.
fn posts_run(w: &World) -> Vec<(JobId, i32)> {
    w.scripts_run
        .iter()
        .filter(|s| s.1 == ScriptKind::Post)
        .map(|s| (s.0, s.2))
        .collect()
}

#[test]
fn a_failed_job_runs_its_post_script_with_its_exit_status_and_post_0_rescues_it() {
    // j1's program exits 3 on its first attempt; its POST script (exit 0
    // unless told otherwise) rescues the node: no retry, j2 runs.
    let mut w = dag_world(3, false, |n| {
        n.post = vec![true; 3];
        n.exits[1] = vec![3];
        n.retry = vec![Some(2); 3];
    });
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let posts = posts_run(&w);
    assert_eq!(posts, [(0, 0), (1, 3), (2, 0)]);
    assert_eq!(w.m.records().jobs[1].attempts.len(), 1);
    assert_eq!(w.m.records().jobs[1].attempts[0].outcome, Outcome::Ended);
    assert_eq!(
        w.ended_ok[1], 0,
        "the program failed: nothing ended well at the site"
    );
}

#[test]
fn a_failed_post_script_after_a_failed_job_retries_the_node() {
    // j0 exits 2, then 0; its POST fails on the first run.
    let mut w = dag_world(2, false, |n| {
        n.post[0] = true;
        n.exits[0] = vec![2, 0];
        n.retry = vec![Some(1); 2];
    });
    w.failing_scripts = vec![(0, ScriptKind::Post)];
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let a = &w.m.records().jobs[0].attempts;
    assert_eq!(a.len(), 2);
    assert!(
        matches!(&a[0].outcome, Outcome::Failed(JobFailure::Failed(m)) if m == "POST script exited 1")
    );
    let posts: Vec<i32> = w
        .scripts_run
        .iter()
        .filter(|s| s.0 == 0)
        .map(|s| s.2)
        .collect();
    assert_eq!(posts, [2, 0], "$RETURN of each attempt");
    // Without a POST script the exit fails the attempt; RETRY runs it again.
    let mut w = dag_world(2, false, |n| {
        n.exits[0] = vec![2, 0];
        n.retry = vec![Some(1); 2];
    });
    w.run();
    assert!(w.m.succeeded());
    let a = &w.m.records().jobs[0].attempts;
    assert_eq!(a[0].outcome, Outcome::Failed(JobFailure::Exit(2)));
    assert_eq!(a[1].outcome, Outcome::Ended);
}

#[test]
fn the_final_node_runs_last_even_after_a_failure_and_decides_the_dag() {
    // j1 always exits 1: j2 never runs; FINAL runs after everything.
    let mut w = dag_world(3, true, |n| {
        n.exits[1] = vec![1];
        n.retry = vec![Some(1); 4];
    });
    w.run();
    assert_eq!(w.m.job_state(1), JobState::Failed);
    assert_eq!(w.m.job_state(2), JobState::Blocked);
    assert_eq!(w.m.job_state(3), JobState::Done);
    let r = w.m.records();
    let last_other = (0..3)
        .filter_map(|j| r.jobs[j].attempts.last().and_then(|a| a.ended))
        .fold(0.0, f64::max);
    let fin = &r.jobs[3].attempts[0];
    assert!(
        fin.prescript >= last_other,
        "FINAL started before the others ended"
    );
    assert!(w.m.succeeded(), "the FINAL node succeeded: so did the DAG");
    // Without the failure FINAL still comes last.
    let mut w = dag_world(3, true, |_| {});
    w.run();
    assert!(w.m.succeeded());
    let r = w.m.records();
    assert!(r.jobs[3].attempts[0].prescript >= r.jobs[2].attempts[0].ended.unwrap());
}

#[test]
fn abort_dag_on_stops_the_dag_and_the_final_node_still_runs() {
    // j0 exits 7: ABORT-DAG-ON j0 7 RETURN 2. Nothing after it runs but FINAL.
    let mut w = dag_world(3, true, |n| {
        n.exits[0] = vec![7];
        n.retry = vec![Some(5); 4];
        n.abort_on[0] = vec![(7, Some(2))];
    });
    w.run();
    let a = w.m.dag_abort().expect("aborted");
    assert_eq!((a.node, a.status, a.dag_return), (Some(0), 7, 2));
    assert_eq!(
        w.m.job_state(0),
        JobState::Failed,
        "an abort overrides RETRY"
    );
    assert_eq!(w.m.records().jobs[0].attempts.len(), 1);
    assert_eq!(w.m.job_state(1), JobState::Blocked);
    assert_eq!(w.m.job_state(3), JobState::Done);
    assert!(w.m.is_finished());
    // Without a FINAL node the DAG's return value decides: 2 is a failure,
    // RETURN 0 a success.
    for (ret, ok) in [(Some(2), false), (Some(0), true)] {
        let mut w = dag_world(3, false, |n| {
            n.exits[0] = vec![7];
            n.abort_on[0] = vec![(7, ret)];
        });
        w.run();
        assert!(w.m.is_finished());
        assert_eq!(w.m.succeeded(), ok);
    }
    // A POST script's exit aborts too (here the job succeeds, POST exits 1).
    let mut w = dag_world(3, false, |n| {
        n.post = vec![true; 3];
        n.abort_on[1] = vec![(1, None)];
    });
    w.failing_scripts = vec![(1, ScriptKind::Post)];
    w.run();
    assert_eq!(
        w.m.dag_abort().map(|a| (a.node, a.dag_return)),
        Some((Some(1), 1))
    );
    assert_eq!(w.m.job_state(2), JobState::Blocked);
}

/// `j0` (10 s; with `abort`, it exits 7: ABORT-DAG-ON j0 7 RETURN 4)
/// beside five 100 s jobs that each write a file and have a POST script,
/// on one site of six slots; node 6 is FINAL if `with_final`.
fn five_running_beside_j0(abort: bool, with_final: bool) -> World {
    let files = (1..6)
        .map(|i| File {
            name: format!("out{i}"),
            size: 10,
        })
        .collect();
    let jobs = (0..7)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime: if (1..6).contains(&i) { 100.0 } else { 10.0 },
            outputs: if (1..6).contains(&i) {
                vec![format!("out{i}")]
            } else {
                vec![]
            },
            ..Default::default()
        })
        .collect();
    let settings = ManagerSettings {
        prescript_interval: 0.0,
        maxpre: 0,
        ..Default::default()
    };
    let wf = Workflow::build(files, jobs).unwrap();
    let mut w = world(wf, sites(1, 6, 10_000), settings, "round-robin");
    let mut nodes = NodeSettings::none(7);
    nodes.final_node = with_final.then_some(6);
    nodes.post = (0..7).map(|j| j > 0).collect();
    nodes.retry = vec![Some(3); 7];
    if abort {
        nodes.exits[0] = vec![7];
        nodes.abort_on[0] = vec![(7, Some(4))];
    }
    w.m.set_nodes(nodes);
    w
}

/// j1..j5: each attempt removed at `at` while it ran, none of their
/// outputs registered, no POST script of theirs run, never retried.
fn assert_removed(w: &World, at: Time) {
    for j in 1..6 {
        assert_eq!(w.m.job_state(j), JobState::Failed, "j{j}");
        let r = &w.m.records().jobs[j];
        assert_eq!(r.attempts.len(), 1, "j{j} is not retried");
        let a = &r.attempts[0];
        assert!(matches!(a.outcome, Outcome::Removed(_)), "{:?}", a.outcome);
        assert!(a.started.is_some_and(|t| t < at), "j{j} was running");
        assert_eq!((a.finished, a.ended), (None, Some(at)));
        assert!(!w.m.rls().has(j - 1, 1), "out{j} registered");
    }
    assert!(
        w.scripts_run.iter().all(|s| !(1..6).contains(&s.0)),
        "a removed node ran a POST script: {:?}",
        w.scripts_run
    );
    assert_eq!(w.ended_ok[1..6], [0; 5], "a removed job ended well");
    assert_eq!(w.running(1), 0, "every slot freed");
}

#[test]
fn abort_dag_on_removes_the_running_jobs_before_final_runs() {
    // j0 exits 7 at 10 s with j1..j5 running until 100 s. DAGMan's
    // main_shutdown_rescue: every job removed, then FINAL runs.
    let mut w = five_running_beside_j0(true, true);
    w.run();
    let a = w.m.dag_abort().expect("aborted");
    assert_eq!((a.node, a.dag_return), (Some(0), 4));
    assert_removed(&w, 10.0);
    let fin = &w.m.records().jobs[6].attempts[0];
    assert!(fin.prescript >= 10.0 && fin.prescript < 100.0, "{fin:?}");
    assert_eq!(w.m.job_state(6), JobState::Done);
    assert!(w.m.is_finished());
    // FINAL ended well, so the DAG did (Dag::DoneSuccess).
    assert!(w.m.succeeded());
    // Without FINAL, RETURN 4 is the DAG's exit: a failure.
    let mut w = five_running_beside_j0(true, false);
    w.run();
    assert_removed(&w, 10.0);
    assert!(w.m.is_finished() && !w.m.succeeded());
    assert_eq!(w.m.dag_abort().map(|a| a.dag_return), Some(4));
}

#[test]
fn a_users_removal_removes_jobs_runs_final_and_exits_dagmans_exit_abort() {
    // The user removes the DAG at 50 s, while j1..j5 run.
    let mut w = five_running_beside_j0(false, true);
    w.tell_at(50.0, Event::DagRemoved);
    w.run();
    let a = w.m.dag_abort().expect("removed");
    assert_eq!((a.node, a.dag_return), (None, EXIT_ABORT));
    assert_removed(&w, 50.0);
    assert_eq!(w.m.job_state(0), JobState::Done, "it had ended");
    assert_eq!(w.m.job_state(6), JobState::Done, "FINAL runs after a removal");
    assert!(w.m.records().jobs[6].attempts[0].prescript >= 50.0);
    assert!(w.m.succeeded(), "FINAL ended well: so did the DAG");
    // Without FINAL the DAG exits EXIT_ABORT; a second removal changes
    // nothing.
    let mut w = five_running_beside_j0(false, false);
    w.tell_at(50.0, Event::DagRemoved);
    w.tell_at(60.0, Event::DagRemoved);
    w.run();
    assert_removed(&w, 50.0);
    assert!(w.m.is_finished() && !w.m.succeeded());
    assert_eq!(w.m.dag_abort().map(|a| a.dag_return), Some(EXIT_ABORT));
    // A removal after the DAG's end is no stop.
    let mut w = five_running_beside_j0(false, false);
    w.tell_at(1000.0, Event::DagRemoved);
    w.run();
    assert!(w.m.succeeded());
    assert_eq!(w.m.dag_abort(), None);
}

/// DAGMan's halt (`condor_event_timer`): once halted, nothing starts but
/// FINAL; what is in flight ends and its POST script runs; then the DAG
/// stops and FINAL runs, its scripts given DAG_STATUS_HALTED (6).
#[test]
fn a_halt_lets_what_runs_end_starts_nothing_more_then_runs_final() {
    let world = |with_final: bool| {
        dag_world(4, with_final, |n| {
            n.post = vec![true; n.post.len()];
            if with_final {
                n.pre[4] = true;
            }
        })
    };
    // Unhalted, j1 runs from `start` to `end`.
    let mut w = world(true);
    w.run();
    let a = &w.m.records().jobs[1].attempts[0];
    let (start, end) = (a.started.unwrap(), a.finished.unwrap());
    let mid = (start + end) / 2.0;
    let mut w = world(true);
    w.tell_at(mid, Event::Halted);
    w.tell_at(end + 1.0, Event::Halted);
    w.run();
    assert_eq!(w.m.job_state(1), JobState::Done, "it was running");
    assert!(posts_run(&w).contains(&(1, 0)), "its POST script ran");
    for j in [2, 3] {
        assert_eq!(w.m.job_state(j), JobState::Blocked, "j{j}");
        assert!(w.m.records().jobs[j].attempts.is_empty(), "j{j} started");
    }
    let stop = w.m.dag_abort().expect("stopped");
    assert_eq!((stop.dag_status(), stop.node, stop.dag_return), (6, None, 1));
    assert!(stop.halted_at.is_some_and(|at| at >= end), "{stop:?}");
    assert_eq!(w.m.job_state(4), JobState::Done, "FINAL ran");
    let finals: Vec<i32> = (w.scripts_run.iter().zip(&w.scripts_dag_status))
        .filter(|(s, _)| s.0 == 4)
        .map(|(_, &d)| d)
        .collect();
    assert_eq!(finals, [6, 6], "FINAL's PRE and POST scripts");
    assert!(w.m.succeeded() && w.m.dag_exit() == 0, "FINAL decides");
    // Without FINAL the halted DAG fails: EXIT_ERROR.
    let mut w = world(false);
    w.tell_at(mid, Event::Halted);
    w.run();
    assert!(w.m.is_finished() && !w.m.succeeded());
    assert_eq!(w.m.dag_exit(), 1);
    assert_eq!(w.m.job_state(2), JobState::Blocked);
    // A halt after the end changes nothing.
    let mut w = world(false);
    w.tell_at(1e6, Event::Halted);
    w.run();
    assert!(w.m.succeeded() && w.m.dag_abort().is_none());
}

/// Eight 60 s jobs that each read the one 100-byte file `x`.
fn eight_readers_of_one_file() -> Workflow {
    let files = vec![File {
        name: "x".into(),
        size: 100,
    }];
    let jobs = (0..8)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            runtime: 60.0,
            inputs: vec!["x".into()],
            ..Default::default()
        })
        .collect();
    Workflow::build(files, jobs).unwrap()
}

/// Seed 000's simulator registers a staged copy in its job's postscript:
/// DataPresent does not follow a copy whose job has not run yet, while a
/// job at the copy's own site reuses it at once; on arrival, every later
/// prescript follows it.
#[test]
fn postscript_registration_hides_a_staged_copy_from_selectors_until_its_job_ran() {
    let wf = eight_readers_of_one_file;
    let run = |registration| {
        // Prescripts 10 s apart, transfers of 5 s, jobs of 60 s: j0's copy
        // arrives at 5 and its postscript is at 65, between j6's and j7's
        // prescripts.
        let settings = ManagerSettings {
            prescript_interval: 10.0,
            registration,
            ..Default::default()
        };
        let mut w = world(wf(), sites(4, 8, 10_000), settings, "data-present");
        w.run();
        assert!(w.m.succeeded());
        let site: Vec<SiteId> = (0..8)
            .map(|j| w.m.records().jobs[j].attempts[0].site)
            .collect();
        (site, w.transfers)
    };
    let (site, transfers) = run(Registration::Arrival);
    assert!(site.iter().all(|&s| s == site[0]), "{site:?}");
    assert_eq!(transfers, 1);
    let (site, transfers) = run(Registration::Postscript);
    let mut before: Vec<SiteId> = site[..7].to_vec();
    before.sort_unstable();
    before.dedup();
    assert!(before.len() > 1, "ties broken at random: {site:?}");
    // One copy per site: jobs at a site reuse its unregistered copy.
    assert_eq!(transfers, before.len());
    // By j7's prescript only j0 has run: its copy is the one registered.
    assert_eq!(site[7], site[0], "{site:?}");
}

/// Issue 39: with planned registration a selector sees a copy from the
/// moment a prescript plans it, so prescripts 1 s apart follow the first
/// one's copy though its 5 s transfer has not ended; on arrival, the ones
/// before its end tie and spread at random. A planned copy that never
/// arrives leaves the catalogue.
#[test]
fn planned_registration_shows_a_copy_on_its_way_and_forgets_one_that_never_comes() {
    let wf = eight_readers_of_one_file;
    let settings = |registration| ManagerSettings {
        prescript_interval: 1.0,
        registration,
        ..Default::default()
    };
    let run = |registration| {
        let mut w = world(wf(), sites(4, 8, 10_000), settings(registration), "data-present");
        w.transfer = 5.0;
        w.run();
        assert!(w.m.succeeded());
        let mut site: Vec<SiteId> = (0..8)
            .map(|j| w.m.records().jobs[j].attempts[0].site)
            .collect();
        site.dedup();
        (site, w.transfers)
    };
    let (site, transfers) = run(Registration::Planned);
    assert_eq!((site.len(), transfers), (1, 1), "{site:?}");
    let (site, transfers) = run(Registration::Arrival);
    assert!(site.len() > 1 && transfers > 1, "{site:?}");

    let mut w = world(wf(), sites(4, 8, 10_000), settings(Registration::Planned), "data-present");
    w.fail_from = Some(0);
    w.run();
    assert!(!w.m.succeeded(), "x never arrives anywhere");
    assert!(w.m.grid.replicas.planned_len() == 0);
    let catalogue = w.m.grid.replicas.catalogue().expect("planned registration keeps one");
    assert_eq!(catalogue.holders(0), w.m.rls().holders(0));
}

#[test]
fn a_matchmaker_holds_ready_jobs_until_a_slot_is_free_and_every_job_ends_once() {
    for strategy in ["orig", "job-c"] {
        let mut w = world(
            pipeline(30, 3),
            sites(3, 2, 100_000),
            ManagerSettings::default(),
            strategy,
        );
        w.run();
        assert!(w.m.succeeded(), "{strategy}: {:?}", w.m.counts());
        assert!(w.ended_ok.iter().all(|&n| n == 1), "{strategy}");
        // A site's claims (prescript start to end) never outnumber its CPUs.
        let mut edges: Vec<(f64, i32, SiteId)> = Vec::new();
        for a in w.m.records().jobs.iter().flat_map(|j| &j.attempts) {
            let end = a.ended.expect("every attempt ended");
            edges.push((a.prescript, 1, a.site));
            edges.push((end, -1, a.site));
        }
        edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut claims = [0i32; 4];
        for (_, d, s) in edges {
            claims[s] += d;
            assert!(claims[s] <= 2, "{strategy}: site {s} claimed thrice");
        }
    }
}

#[test]
fn orig_sends_outputs_home_holds_the_slot_meanwhile_and_leaves_execute_disks_empty() {
    let mut w = world(
        pipeline(6, 1),
        sites(2, 1, 10_000),
        ManagerSettings::default(),
        "orig",
    );
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.ended_ok.iter().all(|&n| n == 1));
    let rec = w.m.records();
    let wf = w.m.workflow().clone();
    for (j, job) in wf.jobs.iter().enumerate() {
        let a = rec.jobs[j].attempts.last().unwrap();
        for &o in &job.outputs {
            // Every output went from where its job ran to the submit machine,
            // before the node ended (the claim held meanwhile).
            let t = rec
                .transfers
                .iter()
                .find(|t| t.file == o && t.to == 0)
                .expect("output sent home");
            assert_eq!(t.from, a.site);
            assert!(t.end.unwrap() <= a.ended.unwrap());
            assert_eq!(w.m.rls().holders(o), [0]);
        }
    }
    // Every input came from the submit machine; nothing stays where jobs ran.
    assert!(rec.transfers.iter().all(|t| t.from == 0 || t.to == 0));
    assert_eq!(w.pool(1).used() + w.pool(2).used(), 0);
}

#[test]
fn an_output_that_cannot_go_home_fails_the_attempt_and_the_job_is_retried() {
    let mut w = world(
        pipeline(1, 1),
        sites(1, 1, 10_000),
        ManagerSettings::default(),
        "orig",
    );
    w.fail_from = Some(1);
    w.run();
    assert!(w.m.is_finished() && !w.m.succeeded());
    let attempts = &w.m.records().jobs[0].attempts;
    assert_eq!(attempts.len(), 4, "RETRY 3 after the first");
    for a in attempts {
        assert!(
            a.outcome.describe().contains("could not send `mid-0`"),
            "{}",
            a.outcome.describe()
        );
    }
    assert!(w.m.rls().holders(1).is_empty(), "mid-0 is nowhere");
}

/// A planner that put every job on a fixed site ahead of time (caching).
struct Fixed {
    plan: Vec<SiteId>,
    announce: bool,
}

impl SiteSelector for Fixed {
    fn select(&mut self, job: JobId, _: &GridView<'_>, _: &[SiteId]) -> SiteId {
        self.plan[job]
    }
    fn planned(&self, job: JobId) -> Option<SiteId> {
        self.announce.then(|| self.plan[job])
    }
    fn replica_policy(&self) -> Option<ReplicaPolicy> {
        Some(ReplicaPolicy::Caching)
    }
}

/// A world of `specs` (files `files`) on a storage site and `execute`
/// one-CPU sites, each job where `plan` says, caches bounded at `bound`.
fn cache_world(
    files: &[(&str, u64)],
    specs: Vec<JobSpec>,
    execute: usize,
    plan: Vec<SiteId>,
    announce: bool,
    bound: u64,
    replicas: usize,
) -> World {
    let files = files
        .iter()
        .map(|&(name, size)| File {
            name: name.into(),
            size,
        })
        .collect();
    let wf = Workflow::build(files, specs).unwrap();
    let settings = ManagerSettings {
        cache_bound: Some(bound),
        replicas,
        ..Default::default()
    };
    let selector = Box::new(Fixed { plan, announce });
    let mut w = World::new(
        wf,
        sites(execute, 1, 10_000),
        settings,
        selector,
        |_| Box::new(Lru),
        &[0],
    );
    w.m.set_cache_worth(Box::new(Lru));
    w
}

fn spec(name: &str, runtime: f64, inputs: &[&str], outputs: &[&str], parents: &[&str]) -> JobSpec {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    JobSpec {
        name: name.into(),
        runtime,
        inputs: strings(inputs),
        outputs: strings(outputs),
        parents: strings(parents),
        ..Default::default()
    }
}

#[test]
fn cache_maintenance_keeps_the_files_of_jobs_planned_on_the_site() {
    // p and q read x at s1; q waits for r at s2. The cache of s1 (bound 10)
    // is over after p, but q is planned there: x stays and is staged once.
    let run = |announce| {
        let specs = vec![
            spec("p", 10.0, &["x"], &[], &[]),
            spec("r", 500.0, &[], &["y"], &[]),
            spec("q", 10.0, &["x", "y"], &[], &["r"]),
        ];
        let files = [("x", 20), ("y", 1)];
        let mut w = cache_world(&files, specs, 2, vec![1, 2, 1], announce, 10, 0);
        w.run();
        assert!(w.m.succeeded(), "{:?}", w.m.counts());
        let rec = w.m.records();
        let x_to_s1 = rec.transfers.iter().filter(|t| t.file == 0 && t.to == 1);
        (x_to_s1.count(), rec.evictions.clone())
    };
    let (staged, evictions) = run(true);
    assert_eq!(staged, 1);
    // x goes only after q, its last planned reader, ended (at 500 + …).
    assert!(evictions.iter().all(|e| e.file != 0 || e.time > 500.0));
    assert!(evictions.iter().any(|e| e.file == 0 && e.site == 1));
    // Without the plan, x goes after p and comes back for q.
    let (staged, _) = run(false);
    assert_eq!(staged, 2);
}

#[test]
fn k_replication_moves_a_last_copy_when_a_site_has_room_and_deletes_it_otherwise() {
    // a writes m (30) at s1, b reads it there and writes o (1, final).
    // After b, s1 holds 31 > 30; m's readers ended, so m may go — but it
    // is its only copy.
    let specs = || {
        vec![
            spec("a", 10.0, &[], &["m"], &[]),
            spec("b", 10.0, &["m"], &["o"], &["a"]),
        ]
    };
    let files = [("m", 30), ("o", 1)];
    // k = 1 and s2 has room: m moves to s2, then goes from s1.
    let mut w = cache_world(&files, specs(), 2, vec![1, 1], true, 30, 1);
    w.run();
    assert!(w.m.succeeded());
    let moved: Vec<_> =
        w.m.records()
            .transfers
            .iter()
            .filter(|t| t.file == 0)
            .collect();
    assert_eq!(moved.len(), 1);
    assert_eq!((moved[0].from, moved[0].to), (1, 2));
    assert_eq!(w.m.rls().holders(0), [2]);
    assert!(!w.pool(1).has(0) && w.pool(2).has(0));
    assert!(w.pool(1).has(1), "the final output stays");
    // No other execute site: m is deleted without a copy.
    let mut w = cache_world(&files, specs(), 1, vec![1, 1], true, 30, 1);
    w.run();
    assert!(w.m.succeeded());
    assert!(w.m.records().transfers.is_empty());
    assert!(w.m.rls().holders(0).is_empty() && !w.pool(1).has(0));
    // k = 0: deleted even with room elsewhere.
    let mut w = cache_world(&files, specs(), 2, vec![1, 1], true, 30, 0);
    w.run();
    assert!(w.m.records().transfers.is_empty() && !w.pool(1).has(0));
}

/// Two submit machines (sites 0 and 1) and `exec` one-CPU execute sites;
/// the workflow's first `first` DAGs are `u1`'s, submitted from site 0 at
/// time 0, the rest `u2`'s, from site 1 at `arrival`.
fn two_users(
    wf: Workflow,
    exec: usize,
    strategy: &str,
    first: usize,
    arrival: f64,
) -> (World, crate::core::submissions::Submissions) {
    use crate::core::submissions::{Submission, Submissions};
    let mut s = sites(exec, 1, 10_000);
    s.insert(
        1,
        SiteInfo {
            name: "storage2".into(),
            ..s[0].clone()
        },
    );
    let sub = |name: &str, origin, arrival| Submission {
        name: name.into(),
        origin,
        arrival,
        share: 1.0,
    };
    let subs = Submissions::by_dags(
        &wf,
        vec![sub("u1", 0, 0.0), sub("u2", 1, arrival)],
        &[Some(first), None],
    )
    .unwrap();
    let settings = ManagerSettings {
        prescript_interval: 0.0,
        maxpre: 0,
        ..Default::default()
    };
    let mut w = world_with_origins(wf, s, settings, strategy, &[0, 1]);
    w.m.set_submissions(subs.clone());
    (w, subs)
}

#[test]
fn a_late_workflow_waits_for_its_arrival_and_orig_serves_each_from_its_own_submit_machine() {
    let (mut w, subs) = two_users(pipeline(6, 1), 2, "orig", 3, 100.0);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.ended_ok.iter().all(|&n| n == 1));
    let rec = w.m.records();
    for (j, r) in rec.jobs.iter().enumerate() {
        let user = subs.of_job[j];
        if user == 1 {
            assert!(r.ready.unwrap() >= 100.0, "job {j} ready at {:?}", r.ready);
            assert!(r.attempts[0].prescript >= 100.0);
        }
        // Every input came from, and every output went to, its own user's
        // submit machine.
        for t in rec.transfers.iter().filter(|t| t.job == j) {
            let home = if t.to <= 1 { t.to } else { t.from };
            assert_eq!(home, user, "transfer {t:?} of a job of u{}", user + 1);
        }
    }
    assert!(rec.jobs[0].ready == Some(0.0), "u1 starts at once");
}

#[test]
fn the_fair_share_gives_a_freed_slot_to_the_workflow_below_its_share() {
    // u1's 4 jobs are ready at 0 and take both slots; u2's 4 arrive at 5.
    // When the slots free at 10, each workflow gets one.
    let (mut w, subs) = two_users(dataless(8, 10.0, false), 2, "orig", 4, 5.0);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.ended_ok.iter().all(|&n| n == 1));
    let starts = |user: usize| -> Vec<f64> {
        let rec = w.m.records();
        (0..8)
            .filter(|&j| subs.of_job[j] == user)
            .map(|j| rec.jobs[j].attempts[0].started.unwrap())
            .collect()
    };
    let (u1, u2) = (starts(0), starts(1));
    let first_u2 = u2.iter().copied().fold(f64::INFINITY, f64::min);
    let last_u1 = u1.iter().copied().fold(0.0, f64::max);
    assert!(
        first_u2 < last_u1,
        "u2 waited for all of u1: u1 {u1:?}, u2 {u2:?}"
    );
    // Two jobs started at each of four waves, one of each user after 0.
    let mut waves: Vec<(f64, usize)> = u1
        .iter()
        .map(|&t| (t, 0))
        .chain(u2.iter().map(|&t| (t, 1)))
        .collect();
    waves.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let users: Vec<usize> = waves.iter().map(|w| w.1).collect();
    assert_eq!(users, [0, 0, 0, 1, 0, 1, 1, 1], "{waves:?}");
}

#[test]
fn dag_c_splits_the_machines_when_a_workflow_arrives_and_replans_the_first_ones_jobs() {
    // u1's 4 DAGs (a → b) take the 4 machines at 0; u2's 4 arrive at 30,
    // while every a runs: each user then has 2 machines, and u1's b jobs
    // planned on u2's machines are planned again on u1's.
    let (mut w, subs) = two_users(pipeline(8, 1), 4, "dag-c", 4, 30.0);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert!(w.ended_ok.iter().all(|&n| n == 1), "every job ends once");
    let rec = w.m.records();
    let wf = w.m.workflow().clone();
    let sites_of = |user: usize, name: char| -> Vec<SiteId> {
        let mut v: Vec<SiteId> = (0..wf.jobs.len())
            .filter(|&j| subs.of_job[j] == user && wf.jobs[j].name.starts_with(name))
            .map(|j| rec.jobs[j].attempts.last().unwrap().site)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    assert_eq!(sites_of(0, 'a'), [2, 3, 4, 5], "u1 alone had every machine");
    let u1_after: Vec<SiteId> = sites_of(0, 'b');
    let mut u2: Vec<SiteId> = sites_of(1, 'a');
    u2.extend(sites_of(1, 'b'));
    u2.sort_unstable();
    u2.dedup();
    assert_eq!(u1_after, [2, 3], "u1 keeps the first half");
    assert_eq!(u2, [4, 5], "u2 gets the rest");
}

/// Attempts in `w`'s records whose staging failed for want of room now.
fn staged_without_room(w: &World) -> usize {
    w.m.records()
        .jobs
        .iter()
        .flat_map(|j| &j.attempts)
        .filter(|a| matches!(&a.outcome, Outcome::StagingFailed(why) if why.contains("no room")))
        .count()
}

#[test]
fn storage_aware_release_places_a_job_only_where_its_files_fit_now() {
    // One site of two CPUs with room for two 100-byte inputs and their
    // 5-byte outputs, but not a third input: placed regardless of room,
    // prescripts stage inputs the disk cannot hold and fail.
    let run = |storage_aware: bool| {
        let settings = ManagerSettings {
            storage_aware,
            prescript_interval: 0.0,
            ..Default::default()
        };
        let mut w = world(pipeline(7, 1), sites(1, 2, 230), settings, "random");
        w.run();
        assert!(w.m.succeeded(), "{:?}", w.m.counts());
        w
    };
    let aware = run(true);
    assert_eq!(staged_without_room(&aware), 0);
    assert!(aware.m.records().jobs.iter().all(|j| j.attempts.len() == 1));
    assert_eq!(aware.m.grid.room.committed(1), 7 * 5, "the seven final outputs");
    let blind = run(false);
    assert!(staged_without_room(&blind) > 0, "placed without room");
}

#[test]
fn stage_out_sends_final_outputs_home_so_that_a_small_disk_holds_only_the_work_under_way() {
    // 125 bytes hold one 100-byte input, a job's outputs and a few final
    // outputs, not all seven: kept, they leave no room for the last jobs.
    let run = |stage_out: bool| {
        let settings = ManagerSettings {
            stage_out,
            prescript_interval: 0.0,
            ..Default::default()
        };
        let mut w = world(pipeline(7, 1), sites(1, 1, 125), settings, "random");
        w.run();
        w
    };
    let kept = run(false);
    assert!(kept.m.is_finished() && !kept.m.succeeded());
    let why = kept.m.records().jobs.iter().find_map(|j| j.failure.as_deref());
    assert!(why.unwrap().contains("deadlock on disk space"), "{why:?}");
    let w = run(true);
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let wf = w.m.workflow().clone();
    for i in 0..7 {
        let out = wf.files.iter().position(|f| f.name == format!("out-{i}")).unwrap();
        // Registered at home; where it was made, until it is evicted.
        assert!(w.m.rls().has(out, 0), "out-{i} is home");
        assert!(w.cleaned.contains(&(1, out)), "out-{i} cleaned where it was made");
    }
    assert_eq!(w.m.grid.room.committed(1), 0, "nothing is kept at the site");
}

/// A sub-DAG `s` of `s+a` → `s+b`, with `s+c` (`c_runtime` s) beside
/// them, then `after`; `s+b` exits 1 on its first attempt. Node 3 is `s`.
fn subdag_world(c_runtime: f64, set: impl FnOnce(&mut NodeSettings)) -> World {
    let mut w = chart_world(
        &[
            ("s+a", 10.0, &[]),
            ("s+b", 10.0, &["s+a"]),
            ("s+c", c_runtime, &[]),
            ("s", 0.0, &["s+b", "s+c"]),
            ("after", 10.0, &["s"]),
        ],
        4,
    );
    let mut nodes = NodeSettings::none(5);
    nodes.retry = vec![Some(0); 5];
    nodes.noop[3] = true;
    nodes.exits[1] = vec![1, 0];
    nodes.subdags = vec![crate::core::nodes::SubDag {
        node: 3,
        entry: None,
        members: vec![0, 1, 2],
        ..Default::default()
    }];
    set(&mut nodes);
    w.m.set_nodes(nodes);
    w
}

#[test]
fn a_failed_subdag_with_retry_runs_again_from_its_rescue_and_succeeds() {
    // RETRY s 1: the sub-DAG's DAGMan exits 1, runs again from its rescue
    // (s+a and s+c DONE), and s+b succeeds this time.
    let mut w = subdag_world(10.0, |n| n.retry[3] = Some(1));
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let attempts = |j: JobId| w.m.records().jobs[j].attempts.len();
    assert_eq!(
        (0..5).map(attempts).collect::<Vec<_>>(),
        [1, 2, 1, 2, 1],
        "only s+b and s run again"
    );
    let s = &w.m.records().jobs[3].attempts;
    assert_eq!(s[0].exit, Some(1), "the sub-DAG's exit value");
    assert_eq!(s[0].outcome, Outcome::Failed(JobFailure::Exit(1)));
    assert_eq!(s[1].outcome, Outcome::Ended);
    assert_eq!(
        w.m.subdag_runs_failed(),
        [SubDagRun {
            subdag: 0,
            done: vec![0, 2],
            failed: vec![1]
        }]
    );
    // Without RETRY the node fails, and only what follows it is blocked.
    let mut w = subdag_world(10.0, |_| {});
    w.run();
    assert!(!w.m.succeeded());
    let states: Vec<JobState> = (0..5).map(|j| w.m.job_state(j)).collect();
    use JobState::*;
    assert_eq!(states, [Done, Failed, Done, Failed, Blocked]);
}

/// A sub-DAG's own halt file: its DAGMan starts nothing more, lets what
/// runs end, then exits 1; the DAG above goes on, and a RETRY of the node
/// runs a new DAGMan, not halted.
#[test]
fn a_halted_subdag_drains_and_fails_its_node_and_a_retry_runs_it_anew() {
    let world = |retry: u32| {
        subdag_world(100.0, |n| {
            n.exits[1] = vec![0];
            n.retry[3] = Some(retry);
        })
    };
    let mut w = world(0);
    w.run();
    assert!(w.m.succeeded());
    let a = &w.m.records().jobs[0].attempts[0];
    let mid = (a.started.unwrap() + a.finished.unwrap()) / 2.0;
    let c_end = w.m.records().jobs[2].attempts[0].ended.unwrap();
    let halt = Event::SubDagHalted { subdag: 0 };
    let mut w = world(0);
    w.tell_at(mid, halt.clone());
    w.run();
    use JobState::*;
    let states: Vec<JobState> = (0..5).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Done, Blocked, Done, Failed, Blocked], "s+a and s+c ran on");
    assert!(w.m.records().jobs[1].attempts.is_empty(), "s+b never started");
    let s = &w.m.records().jobs[3].attempts[0];
    assert_eq!(s.exit, Some(1), "the halted sub-DAG's DAGMan exits 1");
    assert!(s.prescript >= c_end, "its node ends once it drained");
    assert!(w.m.dag_abort().is_none(), "the top DAG was not halted");
    // RETRY: a new DAGMan of it runs what the halt left.
    let mut w = world(1);
    w.tell_at(mid, halt.clone());
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let attempts: Vec<usize> = (0..5).map(|j| w.m.records().jobs[j].attempts.len()).collect();
    assert_eq!(attempts, [1, 1, 1, 2, 1]);
    // Once its DAG is over (its node released), its halt file does nothing.
    let mut w = world(0);
    w.tell_at(c_end + 0.5, halt.clone());
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    // Nor does one for a sub-DAG the run does not have.
    let mut w = world(0);
    w.tell_at(mid, Event::SubDagHalted { subdag: 7 });
    w.run();
    assert!(w.m.succeeded());
}

/// The top DAG and its sub-DAG halted together, both drained by one
/// event: the sub-DAG's DAGMan, its node's job, which the top DAG waits
/// for, stops first and runs its FINAL node; its node then ends (though
/// the top DAG starts no node), and the top DAG stops after it. (Before,
/// the top DAG stopped first and left the node NOT_READY.)
#[test]
fn a_subdag_halted_with_the_top_dag_runs_its_final_before_the_top_stops() {
    let mut w = chart_world(
        &[
            ("s^entry", 0.0, &[]),
            ("s+a", 10.0, &["s^entry"]),
            ("s+f", 10.0, &[]),
            ("s", 0.0, &["s+a", "s+f"]),
            ("after", 10.0, &["s"]),
        ],
        4,
    );
    let mut nodes = NodeSettings::none(5);
    (nodes.noop[0], nodes.noop[3]) = (true, true);
    nodes.subdags = vec![crate::core::nodes::SubDag {
        node: 3,
        entry: Some(0),
        members: vec![1, 2],
        final_node: Some(2),
        ..Default::default()
    }];
    w.m.set_nodes(nodes);
    w.tell_at(1.0, Event::Halted);
    w.tell_at(1.0, Event::SubDagHalted { subdag: 0 });
    w.run();
    use JobState::*;
    let states: Vec<JobState> = (0..5).map(|j| w.m.job_state(j)).collect();
    // s+a runs on, then FINAL s+f, whose success is its sub-DAG's: s ends
    // well, and only then does the top DAG stop.
    assert_eq!(states, [Done, Done, Done, Done, Blocked]);
    let r = w.m.records();
    let end = |j: JobId| r.jobs[j].attempts[0].ended.unwrap();
    assert!(r.jobs[2].attempts[0].prescript >= end(1), "FINAL after the drain");
    assert!(end(3) >= end(2), "the node ends with its DAGMan");
    assert!(w.m.dag_abort().is_some_and(|a| a.halted_at.is_some()), "the top DAG halted");
    // Without a FINAL node the halted sub-DAG's DAGMan exits 1 (s+b never
    // started): its node fails, still before the top DAG stops.
    let mut w = chart_world(
        &[
            ("s+a", 10.0, &[]),
            ("s+b", 10.0, &["s+a"]),
            ("s", 0.0, &["s+b"]),
            ("after", 10.0, &["s"]),
        ],
        4,
    );
    let mut nodes = NodeSettings::none(4);
    nodes.retry = vec![Some(0); 4];
    nodes.noop[2] = true;
    nodes.subdags = vec![crate::core::nodes::SubDag {
        node: 2,
        members: vec![0, 1],
        ..Default::default()
    }];
    w.m.set_nodes(nodes);
    w.tell_at(1.0, Event::SubDagHalted { subdag: 0 });
    w.tell_at(1.0, Event::Halted);
    w.run();
    let states: Vec<JobState> = (0..4).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Done, Blocked, Failed, Blocked]);
    assert_eq!(w.m.records().jobs[2].attempts[0].exit, Some(1));
}

#[test]
fn a_subdag_nodes_post_script_sees_its_dags_exit_and_decides() {
    // POST fails the first time it runs (on $RETURN 1): the node is
    // retried, its DAG runs again and ends well, and POST sees 0.
    let mut w = subdag_world(10.0, |n| {
        n.retry[3] = Some(1);
        n.post[3] = true;
    });
    w.failing_scripts = vec![(3, ScriptKind::Post)];
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let posts = posts_run(&w);
    assert_eq!(posts, [(3, 1), (3, 0)]);
    // A POST script that exits 0 on $RETURN 1 rescues the node: no re-run.
    let mut w = subdag_world(10.0, |n| n.post[3] = true);
    w.run();
    assert!(w.m.succeeded());
    assert_eq!(w.m.records().jobs[1].attempts.len(), 1);
    assert_eq!(w.m.job_state(4), JobState::Done);
}

#[test]
fn a_failed_subdag_ends_only_once_nothing_more_of_it_runs() {
    // s+b fails at 20 s, s+c runs until 100 s: DAGMan's sub-DAG goes on
    // with s+c, and its node ends after it.
    let mut w = subdag_world(100.0, |_| {});
    w.run();
    let r = w.m.records();
    let c_end = r.jobs[2].attempts[0].ended.unwrap();
    assert!(c_end >= 100.0);
    let s = &r.jobs[3].attempts[0];
    assert!(s.prescript >= c_end, "{} < {c_end}", s.prescript);
    assert_eq!(w.m.job_state(2), JobState::Done);
    assert_eq!(
        w.m.subdag_runs_failed(),
        [SubDagRun {
            subdag: 0,
            done: vec![0, 2],
            failed: vec![1]
        }]
    );
}

#[test]
fn abort_dag_on_inside_a_subdag_stops_only_that_subdag() {
    // ABORT-DAG-ON s+b 1 RETURN 3 in the sub-DAG: its DAGMan removes s+c
    // (running until 100 s) and exits 3; the top DAG goes on and fails
    // only through s.
    let mut w = subdag_world(100.0, |n| n.abort_on[1] = vec![(1, Some(3))]);
    w.run();
    assert_eq!(w.m.dag_abort(), None, "the top DAG was not aborted");
    let r = w.m.records();
    assert!(matches!(r.jobs[2].attempts[0].outcome, Outcome::Removed(_)));
    assert_eq!(r.jobs[3].attempts[0].exit, Some(3), "the sub-DAG's RETURN");
    assert!(r.jobs[3].attempts[0].prescript < 100.0, "s+c was removed");
    use JobState::*;
    let states: Vec<JobState> = (0..5).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Done, Failed, Failed, Failed, Blocked]);
    // RETRY s 1: the sub-DAG runs again from its rescue, s+b and s+c
    // with it, and ends well.
    let mut w = subdag_world(100.0, |n| {
        n.abort_on[1] = vec![(1, Some(3))];
        n.retry[3] = Some(1);
    });
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let attempts = |j: JobId| w.m.records().jobs[j].attempts.len();
    assert_eq!((0..5).map(attempts).collect::<Vec<_>>(), [1, 2, 2, 2, 1]);
}

/// `svc` (SERVICE, 1000 s), `prov` (PROVISIONER, 50 s), `a` → `b` (10 s
/// each) and, with `with_final`, FINAL `fin` (10 s), on one 4-slot site.
fn service_world(with_final: bool, set: impl FnOnce(&mut NodeSettings)) -> World {
    let mut jobs: Vec<(&str, f64, &[&str])> = vec![
        ("svc", 1000.0, &[]),
        ("prov", 50.0, &[]),
        ("a", 10.0, &[]),
        ("b", 10.0, &["a"]),
    ];
    if with_final {
        jobs.push(("fin", 10.0, &[]));
    }
    let n = jobs.len();
    let mut w = chart_world(&jobs, 4);
    let mut nodes = NodeSettings::none(n);
    nodes.retry = vec![Some(0); n];
    nodes.service[0] = true;
    nodes.provisioner = Some(1);
    nodes.final_node = with_final.then_some(4);
    set(&mut nodes);
    w.m.set_nodes(nodes);
    w
}

#[test]
fn a_service_runs_beside_the_dag_and_is_removed_at_its_end_after_final() {
    let mut w = service_world(true, |_| {});
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let r = w.m.records();
    let at = |j: JobId| &r.jobs[j].attempts[0];
    assert_eq!(at(0).prescript, 0.0, "the service starts with the DAG");
    // The provisioner's go-ahead is its job running, not its end.
    let go = at(1).started.unwrap();
    assert!(at(2).prescript >= go && at(2).prescript < 50.0, "{:?}", at(2));
    // FINAL does not wait for the service; the service is removed after it.
    let fin_end = at(4).ended.unwrap();
    assert!(at(4).prescript >= at(3).ended.unwrap() && fin_end < 1000.0);
    assert!(matches!(at(0).outcome, Outcome::Removed(_)), "{:?}", at(0));
    assert_eq!(at(0).ended, Some(fin_end));
    assert_eq!(w.m.job_state(0), JobState::Done);
    assert_eq!(w.running(1), 0, "its slot freed");
    assert!(w.m.is_finished());
    // A service that fails (its PRE script does) is not the DAG's failure.
    let mut w = service_world(false, |n| n.pre[0] = true);
    w.failing_scripts = vec![(0, ScriptKind::Pre)];
    w.run();
    assert_eq!(w.m.job_state(0), JobState::Failed);
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
}

#[test]
fn nothing_starts_before_the_provisioner_runs_and_nothing_if_it_never_does() {
    // Its PRE script fails (no retries): the nodes waiting for its
    // go-ahead never run; the service still runs and is removed.
    let mut w = service_world(false, |n| n.pre[1] = true);
    w.failing_scripts = vec![(1, ScriptKind::Pre)];
    w.run();
    use JobState::*;
    let states: Vec<JobState> = (0..4).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Done, Failed, Blocked, Blocked]);
    assert!(!w.m.succeeded());
    assert!(w.m.is_finished());
    assert!(w.m.records().jobs[2].attempts.is_empty());
}

/// `top` → sub-DAG `S` (its entry `S+PRE`; PROVISIONER `S+prov`, 50 s;
/// `S+a` → `S+b`, 10 s each), on one 4-slot site.
fn subdag_provisioner_world(set: impl FnOnce(&mut NodeSettings)) -> World {
    let jobs: Vec<(&str, f64, &[&str])> = vec![
        ("top", 10.0, &[]),
        ("S+PRE", 0.0, &["top"]),
        ("S+prov", 50.0, &["S+PRE"]),
        ("S+a", 10.0, &["S+PRE"]),
        ("S+b", 10.0, &["S+a"]),
        ("S", 0.0, &["S+prov", "S+b"]),
    ];
    let mut w = chart_world(&jobs, 4);
    let mut nodes = NodeSettings::none(6);
    nodes.retry = vec![Some(0); 6];
    nodes.noop[1] = true;
    nodes.noop[5] = true;
    nodes.subdags = vec![crate::core::nodes::SubDag {
        node: 5,
        entry: Some(1),
        members: vec![2, 3, 4],
        provisioner: Some(2),
        ..Default::default()
    }];
    set(&mut nodes);
    w.m.set_nodes(nodes);
    w
}

#[test]
fn a_subdags_nodes_start_when_its_provisioner_runs_and_never_if_it_does_not() {
    let mut w = subdag_provisioner_world(|_| {});
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let r = w.m.records();
    let at = |j: JobId| &r.jobs[j].attempts[0];
    let go = at(2).started.unwrap();
    assert!(go >= at(0).ended.unwrap(), "the provisioner starts with its sub-DAG");
    assert!(at(3).prescript >= go && at(3).prescript < go + 50.0, "{:?}", at(3));
    // Its PRE script fails for good: the sub-DAG's other nodes never run,
    // and the sub-DAG node fails with its DAG.
    let mut w = subdag_provisioner_world(|n| n.pre[2] = true);
    w.failing_scripts = vec![(2, ScriptKind::Pre)];
    w.run();
    use JobState::*;
    let states: Vec<JobState> = (0..6).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Done, Done, Failed, Blocked, Blocked, Failed]);
    assert!(w.m.records().jobs[3].attempts.is_empty());
    assert!(!w.m.succeeded() && w.m.is_finished());
}

#[test]
fn a_subdags_node_whose_parents_are_done_in_its_rescue_waits_for_the_subdag_to_start() {
    // S+a DONE in S's rescue DAG: S+b has no parent left, but S is
    // submitted only once `top` is over, and S+b runs in it.
    for provisioner in [None, Some(2)] {
        let mut w = subdag_provisioner_world(|n| {
            n.done[3] = true;
            n.subdags[0].provisioner = provisioner;
        });
        assert_eq!(w.m.job_state(4), JobState::Waiting);
        w.run();
        assert!(w.m.succeeded(), "{:?}", w.m.counts());
        let r = w.m.records();
        let at = |j: JobId| &r.jobs[j].attempts[0];
        let start = if provisioner.is_some() { at(2).started } else { at(0).ended };
        assert!(at(4).prescript >= start.unwrap(), "{:?}", at(4));
        assert!(r.jobs[3].attempts.is_empty(), "S+a is not run again");
    }
}

#[test]
fn dagman_max_jobs_submitted_bounds_each_dagmans_jobs_in_the_queue() {
    // Most jobs of a set in the queue at once, over the run.
    let most = |w: &World, jobs: &[JobId]| {
        let r = w.m.records();
        let mut edges: Vec<(f64, i32)> = jobs
            .iter()
            .flat_map(|&j| r.jobs[j].attempts.iter())
            .filter_map(|a| Some([(a.submitted?, 1), (a.finished.or(a.ended)?, -1)]))
            .flatten()
            .collect();
        edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        edges
            .iter()
            .scan(0, |n, e| {
                *n += e.1;
                Some(*n)
            })
            .max()
            .unwrap_or(0)
    };
    // The top DAG's limit: eight independent jobs on eight slots, two at
    // a time.
    let names: Vec<String> = (0..8).map(|j| format!("j{j}")).collect();
    let jobs: Vec<(&str, f64, &[&str])> = names.iter().map(|n| (n.as_str(), 10.0, &[][..])).collect();
    let mut w = chart_world(&jobs, 8);
    let mut nodes = NodeSettings::none(8);
    nodes.max_jobs_submitted = 2;
    w.m.set_nodes(nodes);
    w.run();
    assert!(w.m.succeeded());
    assert_eq!(most(&w, &(0..8).collect::<Vec<_>>()), 2);
    // A sub-DAG's own: s+a and s+c one at a time, `after` unbounded.
    let mut w = subdag_world(10.0, |n| {
        n.exits[1] = vec![0];
        n.subdags[0].max_jobs_submitted = 1;
    });
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert_eq!(most(&w, &[0, 1, 2]), 1);
}

/// HTCondor's `job_dagman_depth_first` in small: A, then three chains
/// b?-1 → b?-2 under `DAGMAN_SUBMIT_DEPTH_FIRST` and
/// `DAGMAN_MAX_JOBS_SUBMITTED = 1`. A full DAGMan leaves its ready nodes in
/// its ready queue, so the node a chain's end makes ready goes first and
/// each chain runs whole before the next starts.
#[test]
fn a_full_dagman_leaves_its_nodes_in_the_ready_queue_so_depth_first_runs_chains_whole() {
    let jobs: Vec<(&str, f64, &[&str])> = vec![
        ("A", 10.0, &[]),
        ("b1-1", 10.0, &["A"]),
        ("b1-2", 10.0, &["b1-1"]),
        ("b2-1", 10.0, &["A"]),
        ("b2-2", 10.0, &["b2-1"]),
        ("b3-1", 10.0, &["A"]),
        ("b3-2", 10.0, &["b3-1"]),
    ];
    let starts = |pre: &[JobId]| {
        let settings = ManagerSettings {
            submit_depth_first: true,
            ..Default::default()
        };
        let mut w = chart_world_with(&jobs, 4, settings);
        let mut nodes = NodeSettings::none(7);
        nodes.max_jobs_submitted = 1;
        for &j in pre {
            nodes.pre[j] = true;
        }
        w.m.set_nodes(nodes);
        w.run();
        assert!(w.m.succeeded());
        let r = w.m.records();
        let mut order: Vec<JobId> = (0..7).collect();
        order.sort_by(|&a, &b| {
            let at = |j: JobId| r.jobs[j].attempts[0].started.unwrap();
            at(a).total_cmp(&at(b))
        });
        let name = |j: JobId| w.m.workflow().jobs[j].name.clone();
        order.into_iter().map(name).collect::<Vec<_>>()
    };
    // The newest ready node first: b3-1, then the b3-2 it makes ready.
    assert_eq!(
        starts(&[]),
        ["A", "b3-1", "b3-2", "b2-1", "b2-2", "b1-1", "b1-2"]
    );
    // PRE scripts run regardless of the limit, as DAGMan runs them before
    // its ready queue: the three chain heads have theirs run at once and
    // wait for their submission ahead of the b?-2, which then go newest
    // first.
    assert_eq!(
        starts(&[1, 3, 5]),
        ["A", "b3-1", "b2-1", "b1-1", "b1-2", "b2-2", "b3-2"]
    );
}

#[test]
fn a_weak_child_runs_after_its_parent_fails_and_a_futile_nodes_children_are_all_futile() {
    // a fails; WEAK PARENT a CHILD b; PARENT a CHILD c; PARENT c CHILD d;
    // WEAK PARENT c CHILD e (c never ran: e is futile too).
    let mut w = chart_world(
        &[
            ("a", 10.0, &[]),
            ("b", 10.0, &["a"]),
            ("c", 10.0, &["a"]),
            ("d", 10.0, &["c"]),
            ("e", 10.0, &["c"]),
        ],
        4,
    );
    let mut nodes = NodeSettings::none(5);
    nodes.retry = vec![Some(0); 5];
    nodes.exits[0] = vec![1];
    nodes.weak = [(0, 1), (2, 4)].into_iter().collect();
    w.m.set_nodes(nodes);
    w.run();
    use JobState::*;
    let states: Vec<JobState> = (0..5).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Failed, Done, Blocked, Blocked, Blocked]);
    assert!(!w.m.succeeded(), "a failed: so did the DAG");
    let b = &w.m.records().jobs[1].attempts[0];
    assert!(b.prescript >= w.m.records().jobs[0].attempts[0].ended.unwrap());
}

#[test]
fn a_save_point_records_the_dag_as_its_node_first_starts_not_on_a_retry() {
    // j0 is DONE before anything starts; j1 fails once and is retried; j3
    // starts after j1 and j2.
    let mut w = dag_world(4, false, |n| {
        n.done[0] = true;
        n.exits[1] = vec![1, 0];
        n.retry = vec![Some(1); 4];
        n.save_points = [1, 3].into();
    });
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert_eq!(w.m.records().jobs[1].attempts.len(), 2, "j1 was retried");
    let points: Vec<(JobId, Vec<JobId>)> = w
        .m
        .save_points()
        .iter()
        .map(|p| (p.node, p.done.clone()))
        .collect();
    assert_eq!(points, [(1, vec![0]), (3, vec![0, 1, 2])]);
}

#[test]
fn a_tolerated_job_failure_ends_the_node_done_without_a_retry() {
    // j1's program exits 3; its TOLERANCE allows one failure: the node is
    // done on its first attempt and j2 runs. Without the tolerance it fails.
    for tolerant in [true, false] {
        let mut w = dag_world(3, false, |n| {
            n.exits[1] = vec![3];
            n.retry = vec![Some(0); 3];
            if tolerant {
                n.tolerant = [1].into();
            }
        });
        w.run();
        assert_eq!(w.m.succeeded(), tolerant, "{:?}", w.m.counts());
        let a = &w.m.records().jobs[1].attempts;
        assert_eq!((a.len(), a[0].exit), (1, Some(3)));
        let done = w.m.job_state(2) == JobState::Done;
        assert_eq!(done, tolerant, "j2 runs after a tolerated failure only");
    }
}

#[test]
fn a_noop_node_whose_post_script_fails_is_retried_and_lets_its_placement_go() {
    // j0 is a NOOP whose POST script fails once; RETRY 1 runs it again.
    let mut w = dag_world(2, false, |n| {
        n.noop[0] = true;
        n.post[0] = true;
        n.retry = vec![Some(1); 2];
    });
    w.failing_scripts.push((0, ScriptKind::Post));
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert_eq!(w.m.records().jobs[0].attempts.len(), 2);
    assert_eq!(posts_run(&w), [(0, 0), (0, 0)]);
}

/// Top jobs `t0`–`t2` and sub-DAG `s` (`s+a`, `s+b`, `s+c`; 10 s each,
/// scripts 15 s) on one site of `cpus` slots, with `set` on the nodes.
fn subdag_limits_world(cpus: usize, set: impl FnOnce(&mut NodeSettings)) -> World {
    let settings = ManagerSettings {
        script_time: crate::core::wms::Latency::Fixed { value: 15.0 },
        ..Default::default()
    };
    let mut w = chart_world_with(
        &[
            ("t0", 10.0, &[]),
            ("t1", 10.0, &[]),
            ("t2", 10.0, &[]),
            ("s+a", 10.0, &[]),
            ("s+b", 10.0, &[]),
            ("s+c", 10.0, &[]),
            ("s", 0.0, &["s+a", "s+b", "s+c"]),
        ],
        cpus,
        settings,
    );
    let mut nodes = NodeSettings::none(7);
    nodes.noop[6] = true;
    nodes.subdags = vec![crate::core::nodes::SubDag {
        node: 6,
        members: vec![3, 4, 5],
        ..Default::default()
    }];
    set(&mut nodes);
    w.m.set_nodes(nodes);
    w
}

/// The most of `spans` (start, end) going at one instant.
fn most_at_once(spans: &[(Time, Time)]) -> usize {
    spans
        .iter()
        .map(|&(t, _)| spans.iter().filter(|&&(s, e)| s <= t && t < e).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn a_subdags_own_idle_and_post_limits_hold_its_jobs_only() {
    // One slot: jobs queue. The sub-DAG's DAGMan lets one of its jobs wait
    // idle and one of its POST scripts (15 s each, longer than a job) run
    // at once; the top DAG's jobs have no limit.
    let mut w = subdag_limits_world(1, |n| {
        for j in 3..6 {
            n.post[j] = true;
        }
        n.subdags[0].max_jobs_idle = 1;
        n.subdags[0].max_post = 1;
    });
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let jobs = &w.m.records().jobs;
    let idle = |js: std::ops::Range<usize>| -> Vec<(Time, Time)> {
        js.flat_map(|j| &jobs[j].attempts)
            .filter_map(|a| Some((a.submitted?, a.started?)))
            .collect()
    };
    assert_eq!(most_at_once(&idle(3..6)), 1, "the sub-DAG's idle jobs");
    assert!(most_at_once(&idle(0..3)) > 1, "the top DAG's idle jobs");
    let posts: Vec<(Time, Time)> = (3..6)
        .flat_map(|j| &jobs[j].attempts)
        .flat_map(|a| &a.scripts)
        .filter_map(|r| Some((r.start, r.end?)))
        .collect();
    assert_eq!(posts.len(), 3);
    assert_eq!(most_at_once(&posts), 1, "{posts:?}");
}

#[test]
fn a_subdags_own_max_pre_scripts_holds_its_prescripts_only() {
    // Every node has a PRE script (15 s); the sub-DAG's DAGMan runs one of
    // its prescripts at once, the top DAG's are bounded by nothing.
    let mut w = subdag_limits_world(6, |n| {
        for j in 0..6 {
            n.pre[j] = true;
        }
        n.subdags[0].max_pre = 1;
    });
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let jobs = &w.m.records().jobs;
    let prescripts = |js: std::ops::Range<usize>| -> Vec<(Time, Time)> {
        js.flat_map(|j| &jobs[j].attempts)
            .filter_map(|a| Some((a.prescript, a.submitted?)))
            .collect()
    };
    let (sub, top) = (prescripts(3..6), prescripts(0..3));
    assert_eq!(sub.len(), 3);
    assert_eq!(most_at_once(&sub), 1, "{sub:?}");
    assert_eq!(most_at_once(&top), 3, "{top:?}");
}

/// `top` → sub-DAG `S` read after its PRE script (its entry `S+PRE`) →
/// `after`, 10 s each, on one 4-slot site; `S` has `RETRY 1`. The sub-DAG's
/// file gives the graft(s) in `reads`, in turn.
fn deferred_world(reads: Vec<Result<Graft, String>>) -> World {
    let jobs: Vec<(&str, f64, &[&str])> = vec![
        ("top", 10.0, &[]),
        ("S+PRE", 0.0, &["top"]),
        ("S", 0.0, &["S+PRE"]),
        ("after", 10.0, &["S"]),
    ];
    let mut w = chart_world(&jobs, 4);
    let mut nodes = NodeSettings::none(4);
    nodes.retry = vec![Some(0), Some(1), Some(1), Some(0)];
    nodes.noop[1] = true;
    nodes.noop[2] = true;
    nodes.pre[1] = true;
    nodes.subdags = vec![crate::core::nodes::SubDag {
        node: 2,
        entry: Some(1),
        deferred: true,
        ..Default::default()
    }];
    w.m.set_nodes(nodes);
    w.grafts.insert(0, reads.into());
    w
}

/// A sub-DAG's DAG as read: `(name, runtime, parents)` by index.
fn graft_of(jobs: &[(&str, f64, &[usize])]) -> Graft {
    let mut nodes = NodeSettings::none(jobs.len());
    nodes.retry = vec![Some(0); jobs.len()];
    Graft {
        jobs: jobs
            .iter()
            .map(|&(name, runtime, parents)| crate::core::Job {
                name: name.into(),
                runtime,
                parents: parents.to_vec(),
                ..Default::default()
            })
            .collect(),
        nodes,
        ..Default::default()
    }
}

#[test]
fn a_sub_dag_read_after_its_pre_script_runs_between_its_entry_and_its_node() {
    let graft = graft_of(&[("S+a", 10.0, &[]), ("S+b", 10.0, &[0])]);
    let mut w = deferred_world(vec![Ok(graft)]);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert_eq!(w.m.run_dag().job_count(), 6);
    assert_eq!(w.m.run_dag().job(4).name, "S+a");
    assert_eq!(w.m.workflow().jobs.len(), 4, "the workflow it started with is unchanged");
    assert_eq!(w.ended_ok, [1, 0, 0, 1, 1, 1], "no-ops run no job");
    let r = w.m.records();
    let at = |j: JobId| &r.jobs[j].attempts[0];
    // The PRE script ran before the file was read, and the DAG after it.
    assert_eq!(w.scripts_run, [(1, ScriptKind::Pre, 0)]);
    assert!(at(4).prescript >= at(1).ended.unwrap());
    assert!(at(5).started.unwrap() >= at(4).ended.unwrap());
    // The node ends with its DAG, and what follows it after.
    assert!(at(2).ended.unwrap() >= at(5).ended.unwrap());
    assert!(at(3).started.unwrap() >= at(2).ended.unwrap());
}

#[test]
fn an_unreadable_sub_dag_exits_1_and_its_retry_reads_it_again() {
    let graft = graft_of(&[("S+a", 10.0, &[])]);
    let mut w = deferred_world(vec![Err("no such file".into()), Ok(graft)]);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let r = w.m.records();
    // The node's first attempt exited 1 (its DAGMan could not read its
    // file); its retry ran the PRE script again and read the file.
    assert_eq!(r.jobs[2].attempts.len(), 2);
    assert_eq!(r.jobs[2].attempts[0].exit, Some(1));
    assert_eq!(w.scripts_run, [(1, ScriptKind::Pre, 0), (1, ScriptKind::Pre, 0)]);
    assert_eq!(r.jobs[4].attempts.len(), 1);
    // No rescue for a sub-DAG that never ran.
    assert!(w.m.subdag_runs_failed().is_empty());
    // Unreadable for good: the node fails, and what follows it is blocked.
    let mut w = deferred_world(vec![]);
    w.run();
    use JobState::*;
    let states: Vec<JobState> = (0..4).map(|j| w.m.job_state(j)).collect();
    assert_eq!(states, [Done, Done, Failed, Blocked]);
    assert!(!w.m.succeeded() && w.m.is_finished());
}

#[test]
fn a_read_sub_dag_keeps_its_final_node_categories_and_done_nodes() {
    // `S+a` (DONE, of its rescue) → `S+b`; `S+c` and `S+d` of a category
    // of one; FINAL `S+fin`.
    let mut graft = graft_of(&[
        ("S+a", 10.0, &[]),
        ("S+b", 10.0, &[0]),
        ("S+c", 10.0, &[]),
        ("S+d", 10.0, &[]),
        ("S+fin", 10.0, &[]),
    ]);
    graft.nodes.done[0] = true;
    graft.nodes.category[2] = Some(0);
    graft.nodes.category[3] = Some(0);
    graft.nodes.category_limits = vec![1];
    graft.nodes.final_node = Some(4);
    let mut w = deferred_world(vec![Ok(graft)]);
    w.run();
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    let r = w.m.records();
    let at = |j: JobId| &r.jobs[j].attempts[0];
    assert!(r.jobs[4].attempts.is_empty(), "a DONE node does not run");
    assert_eq!(w.m.category_peaks(), [1]);
    let (c, d) = (at(6), at(7));
    assert!(c.ended.unwrap() <= d.prescript || d.ended.unwrap() <= c.prescript);
    let last = [5, 6, 7].map(|j| at(j).ended.unwrap());
    assert!(last.iter().all(|&e| at(8).prescript >= e), "FINAL runs last");
    assert!(at(2).ended.unwrap() >= at(8).ended.unwrap());
}

/// A stop of a sub-DAG read as the run went (here its `ABORT-DAG-ON`)
/// runs its FINAL node, which came with its file: until session 62 that
/// FINAL node was never known as one, so it waited and the run stalled.
/// FINAL then ends well and decides the sub-DAG's outcome.
#[test]
fn a_read_sub_dag_stopped_by_its_abort_dag_on_runs_its_final_node() {
    let mut graft = graft_of(&[("S+a", 10.0, &[]), ("S+b", 10.0, &[0]), ("S+fin", 10.0, &[])]);
    graft.nodes.exits[0] = vec![3];
    graft.nodes.abort_on[0] = vec![(3, None)];
    graft.nodes.final_node = Some(2);
    let mut w = deferred_world(vec![Ok(graft)]);
    w.run();
    let r = w.m.records();
    assert_eq!(r.jobs[6].attempts.len(), 1, "FINAL ran after the stop");
    assert!(r.jobs[5].attempts.is_empty(), "S+b never started");
    // FINAL ended well, and decides the sub-DAG's outcome.
    assert!(w.m.succeeded(), "{:?}", w.m.counts());
    assert_eq!(r.jobs[2].attempts.len(), 1, "S");
}

/// The grid's rule for where a job may go (`Placement::eligible_sites`),
/// against the rule written out: sites with CPUs and a disk that holds
/// its files, not avoided, up; not the one it must avoid once if it may go
/// elsewhere; every candidate down is a wait, none at all a failure.
#[test]
fn a_job_may_go_to_sites_with_cpus_and_disk_not_avoided_and_up() {
    // Job a0 reads 100 B and writes 5 B: s1's 50-B disk cannot hold them.
    let mut s = sites(3, 4, 1 << 30);
    s[2].disk = 50;
    let w = world(pipeline(1, 1), s, ManagerSettings::default(), "round-robin");
    let mut m = w.m;
    let (s0, s2) = (1, 3);
    let job = 0;
    let mut out = Vec::new();
    let mut eligible = |m: &Manager| {
        let r = m.grid.eligible_sites(job, &m.sites, &m.wf, &mut out);
        let mut got = out.clone();
        got.sort_unstable();
        (r, got)
    };
    let (r, got) = eligible(&m);
    assert!(r.is_ok() && got == [s0, s2], "{got:?}");
    m.grid.avoid.insert(job, vec![s0]);
    assert_eq!(eligible(&m).1, [s2]);
    m.grid.pool.down[s2] = true;
    assert!(matches!(eligible(&m).0, Err(site_choice::NoSite::AllDown)));
    m.grid.avoid.clear();
    assert_eq!(eligible(&m).1, [s0]);
    m.grid.pool.down[s2] = false;
    m.grid.avoid_once[job] = Some(s0);
    assert_eq!(eligible(&m).1, [s2]);
    m.grid.pool.down[s2] = true;
    assert_eq!(eligible(&m).1, [s0], "avoided once, but nowhere else is up");
    m.grid.footprint[job] = 1 << 40;
    assert!(matches!(eligible(&m).0, Err(site_choice::NoSite::None)));
}

/// The site choice and the placement it makes, in the placement room
/// alone: the selector's site is one the job may use, and choosing clears
/// the site it had to avoid once; with every candidate down nothing is
/// chosen and that site is still avoided. Placing commits the job's room,
/// pins its inputs and lists to stage only those the site lacks, counting
/// the others as cache hits.
#[test]
fn a_placement_pins_the_inputs_and_stages_only_those_the_site_lacks() {
    use super::site_choice::{DagSide, NoSite};
    let wf = pipeline(1, 3);
    let run = RunDag::from(wf.clone());
    // A disk just big enough for a0's 305 bytes: its room is counted.
    let settings = ManagerSettings { storage_aware: true, ..Default::default() };
    let w = world(wf.clone(), sites(2, 1, 310), settings, "round-robin");
    let (mut g, d, mut records) = (w.m.grid, w.m.dag, w.m.records);
    let (job, s0, s1) = (0, 1, 2);
    let side = || DagSide {
        states: &d.state,
        submissions: &d.submissions,
        workload: &d.workload,
        ready: &d.ready,
    };
    let s = &w.m.sites;
    g.avoid_once[job] = Some(s0);
    g.pool.down = vec![false, true, true];
    assert_eq!(g.choose_site(job, &run, s, &records.sites, side(), 0.0), Err(NoSite::AllDown));
    assert_eq!(g.avoid_once[job], Some(s0), "still to avoid");
    g.pool.down = vec![false; 3];
    let chosen = g.choose_site(job, &run, s, &records.sites, side(), 0.0);
    assert_eq!(chosen, Ok(Some(s1)), "the one it was not to go to again");
    assert_eq!(g.avoid_once[job], None);

    let file = |n: &str| wf.files.iter().position(|f| f.name == n).unwrap();
    let (f0, f1, f2) = (file("in-0-0"), file("in-0-1"), file("in-0-2"));
    g.replicas.register(f1, s1);
    let before = g.room.committed(s1);
    let mut out = Vec::new();
    g.place_at(&run, job, s1, 0, true, &mut records.sites[s1], &mut out);
    assert_eq!(out, [Command::Pin { job, site: s1 }]);
    assert_eq!(g.site_of[job], s1);
    assert_eq!(g.room.committed(s1) - before, g.footprint[job], "its files' room");
    let st = g.staging[job].as_ref().unwrap();
    assert_eq!((st.site, st.attempt, st.pre_running), (s1, 0, true));
    assert_eq!(st.pending, [f0, f2], "the input there already is not staged");
    let c = &records.sites[s1];
    assert_eq!((c.inputs_planned, c.cache_hits), (3, 1));
}

/// Memoization's decisions, in the placement room alone: a job whose twin
/// ended takes its outputs by copies from the least busy holder that is up
/// (none while an output has no holder up); its copies end it, one failure
/// gives it back to the workflow, and a copy after that changes nothing.
#[test]
fn memo_decisions_are_the_placement_rooms() {
    let wf = pipeline(2, 1);
    let run = RunDag::from(wf.clone());
    let mut w = world(wf.clone(), sites(2, 1, 1 << 30), ManagerSettings::default(), "round-robin");
    let job = |n: &str| wf.jobs.iter().position(|j| j.name == n).unwrap();
    let file = |n: &str| wf.files.iter().position(|f| f.name == n).unwrap();
    let (a0, a1) = (job("a0"), job("a1"));
    let mut group = vec![None; wf.jobs.len()];
    (group[a0], group[a1]) = (Some(0), Some(0));
    let twins = crate::core::versions::Twins {
        group,
        content: (0..wf.files.len()).collect(),
    };
    let g = &mut w.m.grid;
    g.set_twins(&twins);
    assert!(g.twins_ended([a0, a1].into_iter()).is_empty(), "no twin ended yet");
    g.memo_ended(a0);
    assert_eq!(g.twins_ended([a1].into_iter()), [(a1, a0)]);
    let memoized = vec![false; wf.jobs.len()];
    // a0's output is nowhere yet: a1 runs.
    assert_eq!(g.memo_copies(&run, (a1, a0), &memoized, true), None);
    let (mid0, mid1) = (file("mid-0"), file("mid-1"));
    g.replicas.register(mid0, 2);
    g.home[a1] = 1;
    let copies = g.memo_copies(&run, (a1, a0), &memoized, true).unwrap();
    let expected = memo::MemoCopy {
        file: mid1,
        source: mid0,
        from: 2,
    };
    assert_eq!(copies, [expected]);
    g.memo_waits(a1, 1);
    assert!(g.memoizing(a1));
    assert_eq!(g.memo_copied(a1, mid1, 1, false), MemoCopied::GaveUp);
    assert!(!g.memoizing(a1));
    assert_eq!(g.memo_copied(a1, mid1, 1, true), MemoCopied::Stale);
    g.memo_waits(a1, 1);
    let done = g.memo_copied(a1, mid1, 1, true);
    assert!(matches!(done, MemoCopied::Copied { last: true, .. }), "{done:?}");
    assert!(g.replicas.holders(mid1).contains(&1), "registered where it arrived");
}

/// What a stall says, by what keeps the run from moving: every ready job
/// held by the site selector (named), no execution site up (which comes
/// first), else that nothing can start.
#[test]
fn a_stall_says_what_keeps_the_run_from_moving() {
    let mut w = world(pipeline(2, 1), sites(2, 1, 1 << 30), ManagerSettings::default(), "random");
    let m = &mut w.m;
    let words = |m: &Manager| {
        let up = m.grid.any_execution_site_up(&m.sites);
        m.dag.stall_words(up, || m.grid.selector_words())
    };
    assert_eq!(
        words(m),
        "4 jobs are left and none can start: no job runs, no file moves and nothing is due"
    );
    m.dag.held.push(0);
    assert!(words(m).contains("held by the site selector,"), "{}", words(m));
    m.set_selector_name("fussy");
    assert_eq!(
        words(m),
        "every ready job (1) is held by the site selector `fussy`, and no job runs or moves that could change its mind"
    );
    m.grid.pool.down[1] = true;
    assert!(words(m).contains("held by"), "one execution site is still up");
    m.grid.pool.down[2] = true;
    assert_eq!(words(m), "4 jobs are left and no execution site is up");
}

/// A job waiting for room waits twice as long each time, up to 64
/// back-offs; it gives up only after `MAX_STALLS` waits in a row over the
/// stall horizon in which no job ended anywhere, and after waits over half
/// the horizon it avoids its site once; a job ending anywhere starts its
/// count again.
#[test]
fn a_job_waiting_for_room_gives_up_only_when_nothing_ends_for_long() {
    use super::grid::replan::MAX_STALLS;
    let mut w = world(pipeline(2, 1), sites(1, 1, 1 << 30), ManagerSettings::default(), "random");
    let g = &mut w.m.grid;
    let h = g.stall.horizon;
    assert!(h > 0.0);
    let waits: Vec<f64> = (0..9).map(|_| g.room_backoff(0, 0.0, 10.0).0).collect();
    assert_eq!(waits, [10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 640.0, 640.0]);
    assert_eq!(g.avoid_once[0], None, "no time went by");
    for k in 1..MAX_STALLS {
        assert_eq!(g.room_backoff(1, h, 10.0).1, None, "wait {k}");
    }
    assert_eq!(g.avoid_once[1], Some(g.site_of[1]), "over half the horizon");
    assert_eq!(g.room_backoff(1, h, 10.0).1, Some((MAX_STALLS + 1, h)));
    for _ in 1..MAX_STALLS {
        g.room_backoff(2, h, 10.0);
    }
    g.progress += 1;
    assert_eq!(g.room_backoff(2, h, 10.0).1, None, "a job ended: its count starts again");
    for _ in 1..MAX_STALLS {
        g.room_backoff(2, 2.0 * h, 10.0);
    }
    assert_eq!(g.room_backoff(2, 2.0 * h, 10.0).1, Some((MAX_STALLS + 1, h)));
}

/// MonitQueue's scan, in the placement room alone: it hands over the
/// overdue jobs still queued one at a time in submission order, each
/// marked as being killed, drops the stale entries it passes (a later
/// attempt, a kill already out), and stops at the first job still queued
/// and not yet overdue.
#[test]
fn monitqueue_hands_over_the_overdue_jobs_in_submission_order() {
    let wf = pipeline(6, 1);
    let mut w = world(wf, sites(2, 1, 1 << 30), ManagerSettings::default(), "round-robin");
    let g = &mut w.m.grid;
    // (submitted, job, attempt); job 1's entry is of an attempt it left,
    // job 2 has a kill out, job 5 is not overdue, job 4 after it is.
    for entry in [(0.0, 0, 0), (1.0, 1, 0), (2.0, 2, 0), (3.0, 3, 0), (9.0, 5, 0), (9.5, 4, 0)] {
        g.pool.idle.push_back(entry);
    }
    g.pool.killing[2] = true;
    let queued = |job: JobId, attempt: usize| attempt == usize::from(job == 1);
    let mut killed = Vec::new();
    while let Some(job) = g.next_overdue(10.0, 5.0, queued) {
        assert!(g.pool.killing[job], "job {job} is marked as being killed");
        killed.push(job);
    }
    assert_eq!(killed, [0, 3]);
    assert_eq!(g.pool.idle.front(), Some(&(9.0, 5, 0)), "the scan stops at job 5");
    assert_eq!(g.next_overdue(14.0, 5.0, queued), None, "nothing more is due");
    assert_eq!(g.next_overdue(14.5, 5.0, queued), Some(5));
    assert_eq!(g.next_overdue(14.5, 5.0, queued), None, "job 4 waited 5 s");
    assert_eq!(g.next_overdue(15.0, 5.0, queued), Some(4));
    assert!(g.pool.idle.is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(300))]

    /// Where a job may go against the rule written out, on random grids
    /// of four execution sites whose disks hold nothing, the job, the job
    /// beside the reserve, or everything, with other jobs placed there
    /// first: sites with CPUs whose disk can hold the job's files, not
    /// avoided; every such site down is a wait, none at all a failure;
    /// not the site to avoid once if another is up; of those, the ones
    /// with room now beside the files held there (and, for a root while
    /// jobs hold files, the reserve for the jobs after the roots), in
    /// their order, else the wait for room at any of them.
    #[test]
    fn a_job_may_go_where_the_rule_written_out_lets_it(
        disks in proptest::collection::vec(proptest::sample::select(vec![5u64, 100, 205, 215, 300, 420, 430, 1000]), 4),
        cpus in proptest::collection::vec(0usize..3, 4),
        down in proptest::collection::vec(proptest::bool::weighted(0.3), 4),
        avoid in proptest::collection::vec(proptest::bool::weighted(0.2), 4),
        avoid_once in proptest::option::of(1usize..5),
        placed in proptest::collection::vec((0usize..4, 1usize..5), 0..4),
        job in 0usize..4,
    ) {
        use super::site_choice::NoSite;
        let wf = pipeline(2, 2);
        let run = RunDag::from(wf.clone());
        let mut s = sites(4, 1, 0);
        for i in 0..4 {
            (s[i + 1].disk, s[i + 1].cpus) = (disks[i], cpus[i]);
        }
        let settings = ManagerSettings { storage_aware: true, ..Default::default() };
        let mut w = world(wf.clone(), s.clone(), settings, "round-robin");
        let g = &mut w.m.grid;
        // The rule written out, beside the placement's.
        let size = |f: FileId| wf.files[f].size;
        let files = |j: JobId| wf.jobs[j].inputs.iter().chain(&wf.jobs[j].outputs).copied();
        let footprint = |j: JobId| files(j).map(size).sum::<u64>();
        let mut held = vec![std::collections::BTreeSet::new(); 5];
        let mut others = Vec::new();
        for (other, site) in placed {
            if other != job && !others.contains(&other) {
                others.push(other);
                g.room.place(&run, other, site);
                held[site].extend(files(other));
            }
        }
        let avoided: Vec<SiteId> = (1..5).filter(|&k| avoid[k - 1]).collect();
        if !avoided.is_empty() {
            g.avoid.insert(job, avoided.clone());
        }
        g.pool.down = std::iter::once(false).chain(down.iter().copied()).collect();
        g.avoid_once[job] = avoid_once;
        let mut could: Vec<SiteId> = (1..5)
            .filter(|&k| s[k].cpus > 0 && s[k].disk >= footprint(job) && !avoided.contains(&k))
            .collect();
        let everything: u64 = wf.files.iter().map(|f| f.size).sum();
        let reserve = (0..wf.jobs.len()).filter(|&j| !wf.jobs[j].parents.is_empty()).map(footprint).max().unwrap();
        let has_room = |k: SiteId| {
            if s[k].disk >= everything + reserve {
                return true;
            }
            let free = s[k].disk.saturating_sub(held[k].iter().map(|&f| size(f)).sum());
            let reserve = if wf.jobs[job].parents.is_empty() && !others.is_empty() { reserve } else { 0 };
            let need: u64 = files(job).filter(|f| !held[k].contains(f)).map(size).sum();
            footprint(job) + reserve <= free || need == 0 || need + reserve <= free
        };
        let want = if !could.is_empty() && could.iter().all(|&k| down[k - 1]) {
            Err(NoSite::AllDown)
        } else {
            could.retain(|&k| !down[k - 1]);
            if could.is_empty() {
                Err(NoSite::None)
            } else {
                if let Some(k) = avoid_once.filter(|_| could.len() > 1) {
                    could.retain(|&c| c != k);
                }
                let fit: Vec<SiteId> = could.iter().copied().filter(|&k| has_room(k)).collect();
                if fit.is_empty() { Err(NoSite::NoRoom(could)) } else { Ok(fit) }
            }
        };
        let mut out = Vec::new();
        let got = match g.eligible_sites(job, &s, &run, &mut out) {
            Ok(()) => Ok(out),
            Err(NoSite::NoRoom(mut all)) => {
                all.sort_unstable();
                Err(NoSite::NoRoom(all))
            }
            Err(e) => Err(e),
        };
        proptest::prop_assert_eq!(got, want);
    }

    /// Placing a job against the rule written out, on random catalogues:
    /// each of the job's inputs is held at the site, elsewhere, or
    /// nowhere yet; the inputs to stage are those the site does not hold,
    /// in the job's order, the others counted as cache hits, and the job
    /// is pinned there whichever policy registers its copies.
    #[test]
    fn a_placement_stages_what_the_rule_written_out_stages(
        held in proptest::collection::vec(0u8..3, 5),
        site in 1usize..4,
        attempt in 0usize..3,
        pre: bool,
        caching: bool,
    ) {
        let wf = pipeline(1, 5);
        let run = RunDag::from(wf.clone());
        let policy = if caching { ReplicaPolicy::Caching } else { ReplicaPolicy::Delete };
        let settings = ManagerSettings { replica_policy: policy, ..Default::default() };
        let mut w = world(wf.clone(), sites(3, 1, 1 << 30), settings, "round-robin");
        let (g, records) = (&mut w.m.grid, &mut w.m.records);
        let job = 0;
        let inputs = wf.jobs[job].inputs.clone();
        for (&f, &h) in inputs.iter().zip(&held) {
            match h {
                0 => g.replicas.register(f, site),
                1 => g.replicas.register(f, site % 3 + 1),
                _ => None,
            };
        }
        let want: Vec<FileId> = (inputs.iter().zip(&held)).filter(|&(_, &h)| h != 0).map(|(&f, _)| f).collect();
        let hits = held.iter().filter(|&&h| h == 0).count() as u64;
        let before = records.sites[site].clone();
        let mut out = Vec::new();
        g.place_at(&run, job, site, attempt, pre, &mut records.sites[site], &mut out);
        proptest::prop_assert_eq!(out, vec![Command::Pin { job, site }]);
        let st = g.staging[job].as_ref().unwrap();
        proptest::prop_assert_eq!((st.site, st.attempt, st.pre_running), (site, attempt, pre));
        proptest::prop_assert_eq!(st.pending.iter().copied().collect::<Vec<_>>(), want);
        let c = &records.sites[site];
        proptest::prop_assert_eq!(c.cache_hits - before.cache_hits, hits);
        proptest::prop_assert_eq!(c.inputs_planned - before.inputs_planned, 5);
        proptest::prop_assert_eq!(g.site_of[job], site);
    }

    /// MonitQueue's scan against the rule written out, on random queues:
    /// whole-second times so that a job waiting exactly `max_idle` (not
    /// overdue) comes often, entries of attempts a job left, jobs listed
    /// twice and kills already out. Going down the queue in submission
    /// order, the jobs still queued with no kill out are killed while they
    /// waited longer than `max_idle`, up to the first that did not.
    #[test]
    fn monitqueue_kills_what_the_rule_written_out_kills(
        entries in proptest::collection::vec((0u8..6, 0usize..6, 0usize..2), 0..12),
        current in proptest::collection::vec(0usize..2, 6),
        killing in proptest::collection::vec(proptest::bool::weighted(0.2), 6),
        now in 0u8..10,
        max_idle in 0u8..4,
    ) {
        let mut entries: Vec<(f64, JobId, usize)> =
            entries.into_iter().map(|(t, j, a)| (f64::from(t), j, a)).collect();
        entries.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (now, max_idle) = (f64::from(now), f64::from(max_idle));
        let mut marked = killing.clone();
        let mut want = Vec::new();
        for &(submitted, job, attempt) in &entries {
            if current[job] != attempt || marked[job] {
                continue;
            }
            if now - submitted <= max_idle {
                break;
            }
            marked[job] = true;
            want.push(job);
        }
        let mut w = world(pipeline(3, 1), sites(1, 1, 1 << 30), ManagerSettings::default(), "round-robin");
        let g = &mut w.m.grid;
        g.pool.idle = entries.iter().copied().collect();
        g.pool.killing = killing;
        let queued = |job: JobId, attempt: usize| current[job] == attempt;
        let mut got = Vec::new();
        while let Some(job) = g.next_overdue(now, max_idle, queued) {
            proptest::prop_assert!(got.len() <= entries.len(), "the scan ends");
            got.push(job);
        }
        proptest::prop_assert_eq!(&got, &want);
        proptest::prop_assert_eq!(&g.pool.killing, &marked);
    }
}

/// The pool's schedd, in the placement room alone: jobs that reach it
/// are idle and only the first asks for a negotiation cycle; the cycle
/// matches as many as the site has slots, dropping an attempt no longer
/// queued; a job leaving its slot hands its claim to the site's next job
/// still waiting, past one with a kill out; with no negotiator a job has
/// its slot at once.
#[test]
fn the_schedd_hands_a_claim_to_the_sites_next_job_still_waiting() {
    use super::schedd::Entered;
    let wms = WmsSettings { negotiator_interval: 10.0, claim_worklife: 1200.0, ..Default::default() };
    let settings = ManagerSettings { wms, ..Default::default() };
    let w = world(pipeline(2, 1), sites(1, 1, 1 << 30), settings, "round-robin");
    let (mut g, site) = (w.m.grid, 1);
    assert!(matches!(g.pool.enter(0, 0, site, 0.0, true), Entered::Idle(Some(_))));
    for j in 1..4 {
        assert_eq!(g.pool.enter(j, 0, site, 1.0, false), Entered::Idle(None), "a cycle is due");
    }
    assert_eq!(g.pool.active[site], 4);
    assert_eq!(g.pool.idle.len(), 1, "only the first is listed for MonitQueue");
    let queued = |j: JobId, _: usize| j != 1;
    assert!(g.pool.waits(0, 0, queued) && !g.pool.waits(1, 0, queued));
    let (matched, next) = g.pool.negotiate(10.0, queued);
    assert_eq!(matched, [(0, 0)], "one slot");
    assert_eq!(next, Some(20.0), "jobs are left idle");
    g.pool.sent(0);
    assert!(!g.pool.waits(0, 0, queued), "at its site");
    g.pool.killing[2] = true;
    assert_eq!(g.pool.leave_slot(0, site, 30.0, queued), Some(3));
    assert!(!g.pool.at_site[0]);

    let w = world(pipeline(1, 1), sites(1, 1, 1 << 30), ManagerSettings::default(), "round-robin");
    let mut g = w.m.grid;
    assert_eq!(g.pool.enter(0, 0, site, 0.0, false), Entered::Matched);
    assert_eq!(g.pool.leave_slot(0, site, 1.0, queued), None, "no claims without a negotiator");
}

/// What the end of a transfer that is no stage-in asks of the manager,
/// in the placement room alone: an output sent home is retried after the
/// back-off, and once its tries are spent the job's work is lost; the
/// last one home ends the job well; a final output that keeps failing
/// gives up; a k-replication move that arrived deletes the old copy.
#[test]
fn a_transfer_that_is_no_stage_in_ends_in_steps_for_the_manager() {
    use super::placement::GridStep;
    use super::transfers::{Flight, FlightKind};
    let wf = pipeline(2, 1);
    let run = RunDag::from(wf.clone());
    let mut w = world(wf.clone(), sites(3, 1, 1 << 30), ManagerSettings::default(), "round-robin");
    let file = |n: &str| wf.files.iter().position(|f| f.name == n).unwrap();
    let g = &mut w.m.grid;
    let (job, site) = (0, 2);
    let out_file = wf.jobs[job].outputs[0];
    let (mut out, mut steps) = (Vec::new(), Vec::new());
    g.start_stage_out(&run, (job, 0), site, vec![], &mut steps);
    let home = g.home[job];
    let send = GridStep::Send {
        job,
        attempt: Some(0),
        file: out_file,
        from: site,
        to: home,
        kind: FlightKind::StageOut,
        retry: false,
    };
    assert_eq!(std::mem::take(&mut steps), [send]);
    let home_flight = Flight {
        job,
        attempt: 0,
        file: out_file,
        from: site,
        to: home,
        kind: FlightKind::StageOut,
    };
    let retries = 1;
    g.flight_ended(&run, &home_flight, (false, retries), &mut out, &mut steps);
    let timer = Timer::RetryStageOut { job, attempt: 0, file: out_file };
    assert_eq!(std::mem::take(&mut steps), [GridStep::AfterBackoff(timer)]);
    g.retry_stage_out(job, 0, out_file, &mut steps);
    assert!(matches!(steps.pop(), Some(GridStep::Send { retry: true, .. })), "a retry");
    g.retry_stage_out(job, 1, out_file, &mut steps);
    assert!(steps.is_empty(), "attempt 1 sends nothing");
    g.flight_ended(&run, &home_flight, (false, retries), &mut out, &mut steps);
    assert!(matches!(steps.pop(), Some(GridStep::Lost { job: 0, site: 2, .. })), "tries spent");
    g.flight_ended(&run, &home_flight, (true, retries), &mut out, &mut steps);
    assert!(steps.is_empty(), "a late end of a lost stage-out changes nothing");
    // A second attempt gets home.
    g.start_stage_out(&run, (job, 1), site, vec![], &mut steps);
    steps.clear();
    let again = Flight { attempt: 1, ..home_flight.clone() };
    g.flight_ended(&run, &again, (true, retries), &mut out, &mut steps);
    assert!(matches!(steps.pop(), Some(GridStep::Home { job: 0, site: 2, .. })), "home");

    // A final output: retried while its copy is there, then given up.
    let fin = file("out-1");
    g.replicas.register(fin, site);
    g.finals.out = 1;
    let final_flight = Flight { job: 1, attempt: 0, file: fin, from: site, to: home, kind: FlightKind::Final };
    g.flight_ended(&run, &final_flight, (false, retries), &mut out, &mut steps);
    let timer = Timer::RetryFinal { job: 1, file: fin, from: site };
    assert_eq!(std::mem::take(&mut steps), [GridStep::AfterBackoff(timer)]);
    g.flight_ended(&run, &final_flight, (false, retries), &mut out, &mut steps);
    assert!(steps.is_empty(), "gave up");
    assert_eq!(g.finals.out, 0, "no longer on its way");

    // k-replication: the copy arrived, the old one goes.
    let moved = Flight { job, attempt: 0, file: fin, from: site, to: 1, kind: FlightKind::Replica };
    g.flight_ended(&run, &moved, (true, retries), &mut out, &mut steps);
    assert_eq!(std::mem::take(&mut steps), [GridStep::Delete { file: fin, site }]);
    assert!(g.replicas.has(fin, 1), "registered where it arrived");
}

/// A prescript of `attempt` staging `pending` at `site`, nothing started.
fn staging(attempt: usize, site: SiteId, pending: &[FileId]) -> Option<stage_in::Staging> {
    Some(stage_in::Staging {
        attempt,
        site,
        pending: pending.iter().copied().collect(),
        in_flight: 0,
        waiting: 0,
        staged: Vec::new(),
        tries: Vec::new(),
        pre_running: false,
        planned: Vec::new(),
    })
}

/// The prescript's staging, in the placement room alone: inputs go one
/// stream at a time from the least busy holder; a failing source is tried
/// again `transfer_retries` times, then another; with none left the
/// staging fails, waiting rather than counted when a source was only busy;
/// inputs whose every replica was lost, or is on a site that is down, say
/// so; an end of another attempt only counts; with caching, a copy on its
/// way is waited for, and fetched after all when it failed.
#[test]
fn the_prescripts_staging_is_the_placement_rooms() {
    use super::stage_in::{StageEnd, StageNext};
    use super::transfers::{Flight, FlightKind};
    let wf = pipeline(1, 2);
    let run = RunDag::from(wf.clone());
    let mut w = world(wf.clone(), sites(2, 1, 1 << 30), ManagerSettings::default(), "round-robin");
    let file = |n: &str| wf.files.iter().position(|f| f.name == n).unwrap();
    let (job, f0, f1) = (0, file("in-0-0"), file("in-0-1"));
    let g = &mut w.m.grid;
    g.policy = ReplicaPolicy::Delete;
    g.replicas.register(f0, 2);
    let stage = |attempt: usize, pending: &[FileId]| staging(attempt, 1, pending);
    let send = |file: FileId, from: SiteId, attempt: usize, retry: bool| StageNext::Send {
        file,
        from,
        to: 1,
        attempt,
        retry,
    };
    let flight = |file: FileId, from: SiteId, attempt: usize| Flight {
        job,
        attempt,
        file,
        from,
        to: 1,
        kind: FlightKind::Stage,
    };
    let failed = Err(TransferFailure::Connection("refused".into()));
    let busy = Err(TransferFailure::Busy);
    let again = |file: FileId, attempt: usize| StageEnd::Again(Timer::RetryTransfer { job, attempt, file });
    let retries = 1;

    g.staging[job] = stage(1, &[f0, f1]);
    assert_eq!(g.next_stage(&run, job, 1), send(f0, 0, 1, false), "the lower of two idle holders");
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Wait, "one stream");
    // A source fails: tried again once, then the other holder.
    assert_eq!(g.stage_ended(&run, &flight(f0, 0, 1), &failed, retries), again(f0, 1));
    assert!(g.stage_again(job, 1, f0));
    assert_eq!(g.next_stage(&run, job, 1), send(f0, 0, 1, true));
    assert_eq!(g.stage_ended(&run, &flight(f0, 0, 1), &failed, retries), again(f0, 1));
    assert!(g.stage_again(job, 1, f0));
    assert_eq!(g.next_stage(&run, job, 1), send(f0, 2, 1, true));
    // The other is busy twice: none is left, and the staging waits.
    assert_eq!(g.stage_ended(&run, &flight(f0, 2, 1), &busy, retries), again(f0, 1));
    assert!(g.stage_again(job, 1, f0));
    assert_eq!(g.next_stage(&run, job, 1), send(f0, 2, 1, true));
    assert_eq!(g.stage_ended(&run, &flight(f0, 2, 1), &busy, retries), again(f0, 1));
    assert!(g.stage_again(job, 1, f0));
    let why = "every replica of `in-0-0` was busy".to_string();
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Fail(why, Retry::Later));
    // The staging of attempt 1 ended meanwhile: its stragglers only count.
    g.staging[job] = stage(2, &[f1]);
    assert_eq!(g.stage_ended(&run, &flight(f0, 2, 1), &Ok(100), retries), StageEnd::Stale);
    assert!(!g.stage_again(job, 1, f0) && !g.woken(job, 1, f0, true));
    assert_eq!(g.next_stage(&run, job, 1), send(f1, 0, 2, false));
    assert_eq!(g.stage_ended(&run, &flight(f1, 0, 2), &Ok(100), retries), StageEnd::Staged);
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Submit);
    // No source after failures that were not busy: a counted failure.
    g.staging[job] = stage(3, &[f1]);
    assert_eq!(g.next_stage(&run, job, 1), send(f1, 0, 3, false));
    assert_eq!(g.stage_ended(&run, &flight(f1, 0, 3), &failed, retries), again(f1, 3));
    assert!(g.stage_again(job, 3, f1));
    assert_eq!(g.next_stage(&run, job, 1), send(f1, 0, 3, true));
    assert_eq!(g.stage_ended(&run, &flight(f1, 0, 3), &failed, retries), again(f1, 3));
    assert!(g.stage_again(job, 3, f1));
    let why = "no usable replica of `in-0-1`".to_string();
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Fail(why, Retry::Counted));
    // Its only holder down; every replica lost.
    g.staging[job] = stage(4, &[f1]);
    g.pool.down[0] = true;
    let why = "every replica of `in-0-1` is on a site that is down".to_string();
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Fail(why, Retry::SitesDown));
    g.pool.down[0] = false;
    g.staging[job] = stage(5, &[f0]);
    g.replicas.forget(f0, 0);
    g.replicas.forget(f0, 2);
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Lost(f0));
    // Caching: a copy of f1 on its way to the site is waited for; it
    // failed, so the prescript fetches the file itself.
    g.policy = ReplicaPolicy::Caching;
    let other = Flight { job: 1, ..flight(f1, 0, 0) };
    let id = g.transfers.start(other, true);
    g.staging[job] = stage(6, &[f1]);
    assert_eq!(g.next_stage(&run, job, 1), StageNext::Wait, "waits for the copy on its way");
    g.transfers.end(id);
    assert!(g.woken(job, 6, f1, false));
    assert_eq!(g.next_stage(&run, job, 1), send(f1, 0, 6, false));
}

/// A crash in the placement room alone: the site takes no job until it
/// recovers, the jobs staging there are handed back, and with its pool
/// its replicas are gone.
#[test]
fn a_crash_takes_the_site_and_with_its_pool_its_replicas() {
    let wf = pipeline(3, 1);
    let mut w = world(wf.clone(), sites(2, 1, 1 << 30), ManagerSettings::default(), "round-robin");
    let g = &mut w.m.grid;
    let staging_at = |site: SiteId| staging(0, site, &[]);
    (g.staging[0], g.staging[2], g.staging[4]) = (staging_at(1), staging_at(2), staging_at(1));
    let mid = wf.files.iter().position(|f| f.name == "mid-0").unwrap();
    g.replicas.register(mid, 1);
    g.replicas.register(mid, 2);
    assert_eq!(g.crash(2, false), [2]);
    assert!(g.pool.down[2] && !g.pool.down[1]);
    assert!(g.replicas.has(mid, 2), "its pool kept");
    assert_eq!(g.crash(1, true), [0, 4]);
    assert!(!g.replicas.has(mid, 1), "its pool lost");
    assert_eq!(g.replicas.holders(mid), [2]);
}

/// Node 0 of a chain of three, whose job cannot be submitted, with
/// RETRY 2, submitted as `tries` says.
fn unsubmittable_world(tries: SubmitTries, post: bool) -> World {
    let mut w = dag_world(3, false, |n| {
        n.retry = vec![Some(2); 3];
        n.post[0] = post;
        n.submit = tries;
    });
    w.unsubmittable = vec![0];
    w
}

#[test]
fn a_direct_submission_that_fails_fails_its_node_at_once_its_retry_spent() {
    let mut w = unsubmittable_world(SubmitTries::default(), false);
    w.run();
    assert!(w.m.is_finished() && !w.m.succeeded());
    let r = &w.m.records().jobs[0];
    assert_eq!(r.attempts.len(), 1, "RETRY 2 is short-circuited");
    let a = &r.attempts[0];
    assert_eq!(w.m.records().submit_failures(0, 0).count(), 1);
    assert_eq!((a.submitted, a.started), (None, None));
    assert!(matches!(&a.outcome, Outcome::Failed(JobFailure::SubmitFailed(_))));
    assert!(r.failure.as_deref().is_some_and(|f| f.starts_with("job submit failed")));
    assert_eq!(w.m.job_state(0), JobState::Failed);
    assert_eq!(w.m.job_state(1), JobState::Blocked);
    assert_eq!(w.m.records().sites[0].submitted, 0, "nothing entered the queue");
}

#[test]
fn through_condor_submit_a_failed_submission_is_tried_again_after_a_doubling_wait() {
    let tries = SubmitTries {
        direct: false,
        max_attempts: 4,
    };
    let mut w = unsubmittable_world(tries, false);
    w.run();
    let r = &w.m.records().jobs[0];
    assert_eq!(r.attempts.len(), 1, "the tries are one attempt's");
    let t: Vec<f64> = w.m.records().submit_failures(0, 0).collect();
    assert_eq!(t.len(), 4);
    let waits: Vec<f64> = t.windows(2).map(|p| p[1] - p[0]).collect();
    assert_eq!(waits, [1.0, 2.0, 4.0]);
    assert_eq!(w.m.job_state(0), JobState::Failed);
    // The waits start over once it gives up: a node that fails later waits
    // 1 s again.
    assert_eq!(w.m.dag.submit_gate(0), 0.0);
}

#[test]
fn a_failed_submission_runs_the_post_script_with_return_minus_1001() {
    for post_fails in [false, true] {
        let mut w = unsubmittable_world(SubmitTries::default(), true);
        if post_fails {
            w.failing_scripts = vec![(0, ScriptKind::Post)];
        }
        w.run();
        assert_eq!(posts_run(&w)[0], (0, SUBMIT_FAILED));
        let r = &w.m.records().jobs[0];
        assert_eq!(r.attempts.len(), 1, "no retry after the POST script either");
        assert_eq!(w.m.succeeded(), !post_fails, "{:?}", w.m.counts());
        let done = w.m.job_state(2) == JobState::Done;
        assert_eq!(done, !post_fails, "a POST script that exits 0 rescues the node");
    }
}
