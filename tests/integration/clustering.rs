//! Pegasus job clustering (seed 004) on generated workflows: each mode gives
//! the clusters the paper's definition gives, and a clustered run ends the
//! same jobs with fewer submissions.

use std::collections::BTreeSet;

use gridbed::config::Scenario;

use crate::common;

/// Three levels of ten pipelines (runtimes 100, 50, 20 s), clustered by `spec`.
fn pipeline(spec: Option<&str>) -> (tempfile::TempDir, Scenario) {
    let clustering = spec
        .map(|s| format!("clustering = \"{s}\"\n"))
        .unwrap_or_default();
    common::scenario(&format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
{clustering}[emulation]
time_scale = 100
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 4
[[site]]
name = "grid3-02"
cpus = 4
[workflow]
generator = "pipeline"
levels = 3
width = 10
runtime = [100, 50, 20]
jitter = 0
file_size = "1 MB"
"#
    ))
}

/// Cluster sizes per level (level = the `P1`/`P2`/`P3` prefix of members).
fn sizes(s: &Scenario) -> Vec<(String, usize)> {
    let c = s.clustering.as_ref().expect("clustered");
    let mut v: Vec<(String, usize)> = c
        .members
        .iter()
        .map(|m| (m[0][..2].to_string(), m.len()))
        .collect();
    v.sort();
    v
}

fn level(l: &str, sizes: &[usize]) -> Vec<(String, usize)> {
    sizes.iter().map(|&n| (l.to_string(), n)).collect()
}

#[test]
fn each_mode_gives_the_papers_clusters() {
    let cases: [(&str, Vec<(String, usize)>); 5] = [
        // clusters.size 4 of 10 jobs a level: 4, 4, 2.
        (
            "horizontal[size=4]",
            [
                level("P1", &[2, 4, 4]),
                level("P2", &[2, 4, 4]),
                level("P3", &[2, 4, 4]),
            ]
            .concat(),
        ),
        // clusters.num 3: 4, 3, 3.
        (
            "horizontal[num=3]",
            [
                level("P1", &[3, 3, 4]),
                level("P2", &[3, 3, 4]),
                level("P3", &[3, 3, 4]),
            ]
            .concat(),
        ),
        // maxruntime 250: 100 s jobs two a bin, 50 s five, 20 s all ten.
        (
            "runtime[maxruntime=250]",
            [
                level("P1", &[2, 2, 2, 2, 2]),
                level("P2", &[5, 5]),
                level("P3", &[10]),
            ]
            .concat(),
        ),
        // num 2: five and five.
        (
            "runtime[num=2]",
            [
                level("P1", &[5, 5]),
                level("P2", &[5, 5]),
                level("P3", &[5, 5]),
            ]
            .concat(),
        ),
        // maxruntime 80: the 100 s jobs are longer than a bin and stay alone.
        (
            "runtime[maxruntime=80]",
            [
                level("P1", &[1; 10]),
                level("P2", &[1; 10]),
                level("P3", &[2, 4, 4]),
            ]
            .concat(),
        ),
    ];
    for (spec, want) in cases {
        let (_d, s) = pipeline(Some(spec));
        assert_eq!(sizes(&s), want, "{spec}");
        let jobs: usize = s
            .clustering
            .as_ref()
            .unwrap()
            .members
            .iter()
            .map(Vec::len)
            .sum();
        assert_eq!(jobs, 30, "{spec}: every job in one cluster");
        assert_eq!(s.workflow.jobs.len(), want.len(), "{spec}");
    }
    // Membership: size 4 takes the jobs of a level in order.
    let (_d, s) = pipeline(Some("horizontal[size=4]"));
    let members: BTreeSet<Vec<String>> = s.clustering.unwrap().members.into_iter().collect();
    let p1: Vec<String> = (0..4).map(|i| format!("P1-{i:04}")).collect();
    assert!(members.contains(&p1), "{members:?}");
}

#[test]
fn label_and_recursive_clustering() {
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
clustering = "label,horizontal[size=2]"
[emulation]
time_scale = 100
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[workflow]
generator = "inline"
[[workflow.file]]
name = "in"
size = "1 MB"
[[workflow.file]]
name = "ab"
size = "1 MB"
[[workflow.job]]
name = "a"
runtime = 10
inputs = ["in"]
outputs = ["ab"]
label = "p1"
[[workflow.job]]
name = "b"
runtime = 10
inputs = ["ab"]
parents = ["a"]
label = "p1"
[[workflow.job]]
name = "c"
runtime = 5
transformation = "t"
[[workflow.job]]
name = "d"
runtime = 5
transformation = "t"
[[workflow.job]]
name = "e"
runtime = 5
transformation = "t"
"#;
    let (_d, s) = common::scenario(body);
    let members: BTreeSet<Vec<String>> = s
        .clustering
        .as_ref()
        .unwrap()
        .members
        .iter()
        .cloned()
        .collect();
    let want: BTreeSet<Vec<String>> = [vec!["a", "b"], vec!["c", "d"], vec!["e"]]
        .into_iter()
        .map(|v| v.into_iter().map(String::from).collect())
        .collect();
    assert_eq!(members, want, "label p1 runs a then b; c, d, e by two");
    // The label cluster reads `in` only: `ab` is made and used inside it.
    let p1 = s.workflow.jobs.iter().find(|j| j.runtime == 20.0).unwrap();
    let names: Vec<&str> = p1
        .inputs
        .iter()
        .map(|&f| s.workflow.files[f].name.as_str())
        .collect();
    assert_eq!(names, ["in"]);

    // A labelling that leaves a cluster and comes back is refused: x and z
    // share a label, y sits between them.
    let cyclic = r#"
strategy = "round-robin"
origin = "submit-host"
clustering = "label"
[emulation]
time_scale = 100
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[workflow]
generator = "inline"
[[workflow.job]]
name = "x"
label = "L"
[[workflow.job]]
name = "y"
parents = ["x"]
[[workflow.job]]
name = "z"
parents = ["y"]
label = "L"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_testbed(dir.path(), "cyclic.toml", cyclic);
    let (code, _, stderr) = common::gridbed(&[
        "check",
        path.to_str().unwrap(),
        "--sites",
        common::catalog().to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("cyclic.toml:4:14") && stderr.contains("cycle"),
        "{stderr}"
    );
}

#[test]
fn a_clustered_run_ends_the_same_jobs_with_fewer_submissions() {
    let (_d, plain) = pipeline(None);
    let (_d2, clustered) = pipeline(Some("horizontal[size=4]"));
    for engine in ["sim", "live"] {
        let (a, b) = match engine {
            "sim" => (
                gridbed::sim::run(&plain).unwrap().result.records,
                gridbed::sim::run(&clustered).unwrap().result.records,
            ),
            _ => (
                gridbed::live::run(&plain, Default::default())
                    .unwrap()
                    .result
                    .records,
                gridbed::live::run(&clustered, Default::default())
                    .unwrap()
                    .result
                    .records,
            ),
        };
        let ended = |s: &Scenario, r: &gridbed::core::records::Records| -> BTreeSet<String> {
            let members = s.clustering.as_ref().map(|c| c.members.clone());
            r.jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| {
                    j.attempts
                        .iter()
                        .any(|a| a.outcome == gridbed::core::records::Outcome::Ended)
                })
                .flat_map(|(i, _)| match &members {
                    Some(m) => m[i].clone(),
                    None => vec![s.workflow.jobs[i].name.clone()],
                })
                .collect()
        };
        assert_eq!(ended(&plain, &a).len(), 30, "{engine}");
        assert_eq!(ended(&plain, &a), ended(&clustered, &b), "{engine}");
        let submitted = |r: &gridbed::core::records::Records| -> u64 {
            r.sites.iter().map(|s| s.submitted).sum()
        };
        assert_eq!((submitted(&a), submitted(&b)), (30, 9), "{engine}");
    }
}

/// One level of six 10-s jobs in clusters of three on one 2-slot site,
/// the site's first program run exiting 2 when `fail_first`.
fn seqexec(fail_first: bool) -> (tempfile::TempDir, Scenario) {
    let fault = if fail_first {
        "[[fault]]\nkind = \"exit\"\nsite = \"grid3-01\"\nfirst = 1\nstatus = 2\n"
    } else {
        ""
    };
    common::scenario(&format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
clustering = "horizontal[size=3]"
[emulation]
time_scale = 100
byte_scale = 1000
[manager]
prescript_interval = 0
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 2
speed = 1
overhead = 0
[workflow]
generator = "pipeline"
levels = 1
width = 6
runtime = [10]
jitter = 0
file_size = "1 MB"
{fault}"#
    ))
}

/// Every clustered job's last attempt ran its members in order, one after
/// another from the cluster's start to its program's end.
fn assert_members_ran_in_turn(s: &Scenario, run: &gridbed::core::result::RunResult, exact: bool) {
    assert!(run.succeeded, "{:?}", run.counts);
    let c = s.clustering.as_ref().unwrap();
    for (j, names) in c.members.iter().enumerate() {
        let a = run.records.jobs[j].attempts.last().unwrap();
        let ran: Vec<&str> = a.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(ran, names.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(a.members[0].start, a.started.unwrap());
        // Live: the cluster's end reaches the manager a moment after its
        // last member's (up to 20 ms real on a loaded machine).
        let slack = 2.0;
        let gap = a.finished.unwrap() - a.members.last().unwrap().end;
        assert!(
            gap.abs() < 1e-9 || (!exact && (0.0..slack).contains(&gap)),
            "{gap}"
        );
        for w in a.members.windows(2) {
            assert_eq!(w[0].end, w[1].start, "one after another");
        }
        for m in &a.members {
            assert_eq!(m.status, 0);
            if exact {
                assert!((m.end - m.start - 10.0).abs() < 1e-9, "{m:?}");
            } else {
                // Live times are when the manager heard of each end: a
                // member looks a few ms (here 1 ms real = 0.1 nominal s)
                // shorter when its predecessor's end reached it late.
                assert!(m.end - m.start >= 10.0 - slack, "{m:?}");
            }
        }
    }
}

#[test]
fn a_clustered_run_records_every_members_start_and_end_in_both_engines() {
    let (_d, s) = seqexec(false);
    assert_eq!(s.workflow.jobs.len(), 2);
    let sim = gridbed::sim::run(&s).unwrap().result;
    assert_members_ran_in_turn(&s, &sim, true);
    // Two clusters side by side, three 10-s members each.
    assert!((sim.makespan - 30.0).abs() < 5.0, "{}", sim.makespan);
    let live = gridbed::live::run(&s, Default::default()).unwrap().result;
    assert_members_ran_in_turn(&s, &live, false);
}

#[test]
fn a_members_failure_fails_its_cluster_as_seqexec_does_in_both_engines() {
    let (_d, s) = seqexec(true);
    let sim = gridbed::sim::run(&s).unwrap().result;
    let live = gridbed::live::run(&s, Default::default()).unwrap().result;
    for run in [&sim, &live] {
        assert_members_ran_in_turn(&s, run, std::ptr::eq(run, &sim));
        // The site's first program run was a cluster's first member: it
        // exited 2, the rest of that cluster never ran, and the cluster
        // ran again from its first member.
        let failed: Vec<_> = run
            .records
            .jobs
            .iter()
            .filter(|r| r.attempts.len() == 2)
            .collect();
        assert_eq!(failed.len(), 1, "{:?}", run.records.jobs);
        let first = &failed[0].attempts[0];
        assert_eq!(first.members.len(), 1);
        assert_eq!(first.members[0].status, 2);
        assert_eq!(first.exit, Some(2));
        let kinds: Vec<&str> = run.records.faults.iter().map(|f| f.fault.kind()).collect();
        assert_eq!(kinds, ["exit"], "the fault is an event of the run");
        assert_eq!(
            first.outcome,
            gridbed::core::records::Outcome::Failed(gridbed::core::JobFailure::Exit(2))
        );
    }
}

#[test]
fn jobs_are_grouped_per_execution_site_where_the_file_records_one() {
    // Four tasks of one level and program; a trace ran two on each machine.
    let task = |i: usize| {
        format!(
            r#"{{"name": "t_{i}", "id": "t_{i}", "category": "t", "parents": [], "children": []}}"#
        )
    };
    let run = |i: usize, m: &str| {
        format!(r#"{{"id": "t_{i}", "runtimeInSeconds": 5, "machines": ["{m}"]}}"#)
    };
    let tasks: Vec<String> = (0..4).map(task).collect();
    let runs: Vec<String> = ["m1", "m2", "m1", "m2"]
        .iter()
        .enumerate()
        .map(|(i, m)| run(i, m))
        .collect();
    let instance = format!(
        r#"{{"name": "w", "schemaVersion": "1.5", "workflow": {{
            "specification": {{"tasks": [{}], "files": []}},
            "execution": {{"makespanInSeconds": 10, "executedAt": "2026-01-01T00:00:00Z",
                           "tasks": [{}]}}}}}}"#,
        tasks.join(","),
        runs.join(",")
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.json"), instance).unwrap();
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
clustering = "horizontal[size=4]"
[emulation]
time_scale = 100
byte_scale = 1000
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[workflow]
file = "w.json"
"#;
    let s = common::load(&common::write_testbed(dir.path(), "t.toml", body));
    let members: BTreeSet<Vec<String>> = s.clustering.unwrap().members.into_iter().collect();
    let want: BTreeSet<Vec<String>> = [["t_0", "t_2"], ["t_1", "t_3"]]
        .iter()
        .map(|v| v.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(members, want, "one cluster per machine, not one of four");
    let sites: BTreeSet<Option<&str>> = s.workflow.jobs.iter().map(|j| j.site.as_deref()).collect();
    assert_eq!(sites, BTreeSet::from([Some("m1"), Some("m2")]));
}

#[test]
fn the_planner_adds_pegasus_auxiliary_jobs_after_clustering_and_they_run() {
    let (_d, plain) = pipeline(Some("horizontal[size=5]"));
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
clustering = "horizontal[size=5]"
[emulation]
time_scale = 100
byte_scale = 1000
[planner]
stageout_clusters = 1
runtime = 3
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 4
[workflow]
generator = "pipeline"
levels = 3
width = 10
runtime = [100, 50, 20]
jitter = 0
file_size = "1 MB"
"#;
    let s = common::load(&common::write_testbed(dir.path(), "t.toml", body));
    // Two clusters a level; create-dir, two stage-ins for each level that
    // reads workflow inputs first (levels 0 and 1: the generator's shared
    // data), one stage-out and one registration for the last level's
    // outputs.
    assert_eq!(plain.workflow.jobs.len(), 6);
    let names: Vec<&str> = s.workflow.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(s.workflow.jobs.len(), 6 + 1 + 4 + 1 + 1, "{names:?}");
    let c = s.clustering.as_ref().unwrap();
    assert_eq!(c.members.len(), s.workflow.jobs.len());
    assert_eq!(c.clusters(), 6, "the clusters keep their members");
    let run = gridbed::sim::run(&s).unwrap().result;
    assert!(run.succeeded, "{:?}", run.counts);
    let end = |n: &str| {
        let j = s
            .workflow
            .jobs
            .iter()
            .position(|j| j.name.starts_with(n))
            .unwrap();
        run.records.jobs[j].attempts[0].ended.unwrap()
    };
    assert!(end("register_2_0") >= end("stage_out_2_0") + 3.0);
    // A field the planner does not know is an error at its line.
    let bad = body.replace("runtime = 3", "runtime = 3\nstage_in = 2");
    let e = gridbed::config::load(
        &common::write_testbed(dir.path(), "b.toml", &bad),
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("b.toml:11") && e.contains("stage_in"), "{e}");
}

/// Two levels of 200 five-second jobs on 4 sites of 8 CPUs, each charging
/// `overhead` seconds a job; clustered by `spec`. The makespan.
fn short_jobs_makespan(overhead: f64, spec: Option<&str>) -> f64 {
    let clustering = spec
        .map(|s| format!("clustering = \"{s}\"\n"))
        .unwrap_or_default();
    let sites: String = (1..=4)
        .map(|i| {
            format!(
                "[[site]]\nname = \"grid3-0{i}\"\ncpus = 8\noverhead = {overhead}\nstream_cap = \"unlimited\"\n"
            )
        })
        .collect();
    let (_d, s) = common::scenario(&format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
{clustering}[emulation]
time_scale = 100
byte_scale = 1000
[manager]
prescript_interval = 0
maxpre = 0
[[site]]
name = "submit-host"
stream_cap = "unlimited"
{sites}[workflow]
generator = "pipeline"
levels = 2
width = 200
runtime = [5, 5]
jitter = 0
file_size = "1 kB"
"#
    ));
    let run = gridbed::sim::run(&s).unwrap().result;
    assert!(run.succeeded, "{:?}", run.counts);
    run.makespan
}

/// Seed 004's premise: "the overhead of running any job on the grid is
/// usually 60 seconds or more. Hence, it makes sense to cluster small
/// independent jobs" — and, when jobs cost nothing, it does not.
#[test]
fn clustering_pays_when_jobs_cost_60_s_and_not_when_they_are_free() {
    let (none, clustered) = (
        short_jobs_makespan(60.0, None),
        short_jobs_makespan(60.0, Some("horizontal[size=8]")),
    );
    assert!(
        clustered < 0.5 * none,
        "60 s overhead: {clustered} vs {none}"
    );
    let (none, clustered) = (
        short_jobs_makespan(0.0, None),
        short_jobs_makespan(0.0, Some("horizontal[size=8]")),
    );
    assert!(clustered > none, "no overhead: {clustered} vs {none}");
}
