//! Workflow files users bring: the five WfFormat versions of one real Montage
//! run give one DAG; the project's fixtures cover each format's corner cases;
//! malformed files give their error and exit code 2; edited files never
//! panic a parser (proptest).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gridbed::core::Workflow;
use gridbed::workflow::formats::{self, Format, Options};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/workflows")
        .join(name)
}

/// A real file of `../shared/reference/` (see its README), which a clone of
/// the repository on its own does not have. The tests that read one are
/// `#[ignore = "needs ../shared/reference"]`, so that `cargo test` lists them
/// as ignored there; `.ci/run` runs them with `--include-ignored`.
fn reference(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: this test needs ../shared/reference beside the repository",
        path.display()
    );
    path
}

/// (job, runtime) pairs, (parent, child) edges, workflow-input bytes.
type Shape = (BTreeSet<(String, String)>, BTreeSet<(String, String)>, u64);

fn shape(wf: &Workflow) -> Shape {
    let jobs = wf
        .jobs
        .iter()
        .map(|j| (j.name.clone(), format!("{:.3}", j.runtime)))
        .collect();
    let edges = crate::common::edges(wf);
    let input_bytes = wf.inputs().map(|f| wf.files[f].size).sum();
    (jobs, edges, input_bytes)
}

#[test]
#[ignore = "needs ../shared/reference"]
fn five_wfformat_versions_of_one_montage_run_give_the_same_dag() {
    let mut shapes = Vec::new();
    for v in ["1.0", "1.2", "1.3", "1.4", "1.5"] {
        let path = reference(&format!(
            "wfformat-cross-version/montage-2mass-005d-v{v}.json"
        ));
        let loaded =
            formats::load(&path, &Options::default()).unwrap_or_else(|e| panic!("v{v}: {e}"));
        assert_eq!(loaded.format, Format::Wfformat);
        let (jobs, edges, input_bytes) = shape(&loaded.workflow);
        assert_eq!(jobs.len(), 58, "v{v}");
        assert_eq!(edges.len(), 114, "v{v}");
        assert_eq!(input_bytes, 17_862_229, "v{v}");
        shapes.push((v, (jobs, edges, input_bytes)));
    }
    for (v, s) in &shapes[1..] {
        assert_eq!(s, &shapes[0].1, "v{v} differs from v1.0");
    }
}

/// The diamond of every fixture: four jobs, four edges, 1000 input bytes.
fn assert_diamond(wf: &Workflow, runtimes: [f64; 4]) {
    let (jobs, edges, input_bytes) = shape(wf);
    let names = ["preprocess_1", "findrange_2", "findrange_3", "analyze_4"];
    let want_jobs: BTreeSet<_> = names
        .iter()
        .zip(runtimes)
        .map(|(n, r)| (n.to_string(), format!("{r:.3}")))
        .collect();
    assert_eq!(jobs, want_jobs);
    let want_edges: BTreeSet<_> = [
        ("preprocess_1", "findrange_2"),
        ("preprocess_1", "findrange_3"),
        ("findrange_2", "analyze_4"),
        ("findrange_3", "analyze_4"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(edges, want_edges);
    assert_eq!(input_bytes, 1000);
}

#[test]
fn each_format_reads_its_corner_cases_into_the_same_diamond() {
    let all = [60.0, 40.5, 41.0, 30.0];
    for (file, format, runtimes, warnings) in [
        // Parents by name, no children, an auxiliary task dropped.
        ("diamond-1.3.json", Format::Wfformat, all, 1),
        // 1.5 split, edges only on one side of each pair.
        ("diamond-1.5.json", Format::Wfformat, all, 0),
        ("diamond-2.1.dax", Format::Dax, all, 0),
        // analyze_4 has no runtime, f.d no size: defaults and two warnings.
        ("diamond-3.dax", Format::Dax, [60.0, 40.5, 41.0, 1.0], 2),
        // Sizes as strings in metadata; findrange_2's f.b1 sized by its writer.
        ("diamond.yml", Format::PegasusYaml, all, 0),
    ] {
        let loaded = formats::load(&fixture(file), &Options::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(loaded.format, format, "{file}");
        assert_diamond(&loaded.workflow, runtimes);
        assert_eq!(
            loaded.warnings.len(),
            warnings,
            "{file}: {:?}",
            loaded.warnings
        );
        let sizes: BTreeSet<(String, u64)> = loaded
            .workflow
            .files
            .iter()
            .map(|f| (f.name.clone(), f.size))
            .collect();
        if warnings == 0 {
            assert!(sizes.contains(&("f.b1".into(), 2048)), "{file}: {sizes:?}");
            assert!(sizes.contains(&("f.d".into(), 100)), "{file}: {sizes:?}");
        }
    }
    // Kept on request, the auxiliary task is a job of its own.
    let keep = Options {
        keep_auxiliary: true,
        ..Default::default()
    };
    let wf = formats::load(&fixture("diamond-1.3.json"), &keep)
        .unwrap()
        .workflow;
    assert_eq!(wf.jobs.len(), 5);
}

#[test]
fn workflow_write_gives_a_wfformat_file_that_reads_back_to_the_same_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let testbed = crate::common::write_testbed(
        dir.path(),
        "epi.toml",
        "name = \"epi\"\nstrategy = \"round-robin\"\norigin = \"submit-host\"\n\
         [emulation]\ntime_scale = 1000\nbyte_scale = 1000000\n\
         [workflow]\ngenerator = \"epigenomics\"\ntasks = 1000\nchunks = 8\n\
         [[site]]\nname = \"submit-host\"\n[[site]]\nname = \"grid3-01\"\n",
    );
    let generated = crate::common::load(&testbed).workflow;
    // A generator's workflow and a DAX file, each written and read back.
    for (source, original) in [
        (testbed.clone(), (*generated).clone()),
        (
            fixture("diamond-3.dax"),
            formats::load(&fixture("diamond-3.dax"), &Options::default())
                .unwrap()
                .workflow,
        ),
    ] {
        let out = dir.path().join("written.json");
        let (code, stdout, stderr) = crate::common::gridbed(&[
            "workflow",
            "write",
            source.to_str().unwrap(),
            "--sites",
            crate::common::catalog().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        let back = formats::load(&out, &Options::default()).unwrap();
        assert_eq!(back.format, Format::Wfformat);
        assert!(back.warnings.is_empty(), "{:?}", back.warnings);
        let back = back.workflow;
        assert_eq!(shape(&back), shape(&original), "{}", source.display());
        for (a, b) in back.jobs.iter().zip(&original.jobs) {
            assert_eq!((&a.name, a.runtime), (&b.name, b.runtime));
            assert_eq!(a.transformation, b.transformation);
        }
        let sizes = |wf: &Workflow| -> BTreeSet<(String, u64)> {
            wf.files.iter().map(|f| (f.name.clone(), f.size)).collect()
        };
        assert_eq!(sizes(&back), sizes(&original));
    }
    // 30 lanes of 8 chunks (4 jobs a chunk, a split and a merge a lane), 3 more.
    assert_eq!(generated.jobs.len(), 30 * (4 * 8 + 2) + 3);
}

#[test]
fn dagman_reads_every_keyword_of_the_fixture() {
    let loaded = formats::load(&fixture("every-keyword.dag"), &Options::default()).unwrap();
    assert_eq!(loaded.format, Format::Dagman);
    let info = loaded.dagman.unwrap();
    let node = |n: &str| info.nodes.iter().find(|x| x.name == n).unwrap();
    assert_eq!(info.nodes.len(), 6);
    assert_eq!(node("preprocess_1").dir.as_deref(), Some("work"));
    assert!(node("cleanup").noop && node("already").done);
    let pre = node("preprocess_1").pre.as_ref().unwrap();
    assert_eq!(
        (pre.executable.as_str(), pre.args.clone()),
        ("pre.sh", vec!["$JOB".to_string()])
    );
    let post = node("preprocess_1").post.as_ref().unwrap();
    assert_eq!(post.args, ["$JOB", "$RETURN", "$RETRY"]);
    assert_eq!(node("analyze_4").pre.as_ref().unwrap().defer, Some((4, 30)));
    assert_eq!(node("findrange_2").retry, 3);
    assert_eq!(
        (
            node("findrange_3").retry,
            node("findrange_3").retry_unless_exit
        ),
        (2, Some(42))
    );
    assert_eq!(
        node("preprocess_1").vars,
        [
            ("infile".to_string(), "f.a".to_string()),
            ("label".to_string(), "a \"quoted\" word".to_string())
        ]
    );
    assert_eq!(
        (node("findrange_3").priority, node("findrange_2").priority),
        (10, -5)
    );
    assert_eq!(node("findrange_2").category.as_deref(), Some("range"));
    assert_eq!(info.max_jobs.get("range"), Some(&1));
    assert_eq!(
        (info.max_pre, info.max_post, info.max_jobs_idle),
        (Some(4), Some(2), Some(50))
    );
    assert_eq!(info.submit_depth_first, Some(true));
    // DAGMAN_VERBOSITY is not read, and a warning says so at its line.
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("every-keyword.config: not read by gridbed")
                && w.contains("DAGMAN_VERBOSITY (line 6)")),
        "{:?}",
        loaded.warnings
    );
    let wf = &loaded.workflow;
    let (_, edges, _) = shape(wf);
    // PARENT a CHILD b c (continued) and PARENT b c CHILD d e: 2 + 4 edges.
    assert_eq!(edges.len(), 6, "{edges:?}");
    let dot = info.dot.as_ref().expect("read, for the run to write");
    assert_eq!(dot.file, "diamond.dot");
    assert!(
        !dot.update && dot.overwrite && dot.include.is_none(),
        "{dot:?}"
    );
}

#[test]
#[ignore = "needs ../shared/reference"]
fn htcondors_prepost_dag_reads_its_nodes_scripts_and_knobs() {
    let prepost = reference("job_dagman_prepost.dag");
    let htc = formats::load(&prepost, &Options::default()).unwrap();
    let info = htc.dagman.unwrap();
    assert_eq!(info.nodes.len(), 20);
    assert!(info.nodes[0].noop && !info.nodes[1].noop);
    assert!(
        info.nodes
            .iter()
            .all(|n| n.pre.is_some() && n.post.is_some())
    );
    assert_eq!(info.nodes[5].post.as_ref().unwrap().args, ["$RETURN"]);
}

/// `gridbed workflow stats FILE` on a file; (exit code, stderr).
fn stats(path: &Path) -> (Option<i32>, String) {
    let (code, _, stderr) =
        crate::common::gridbed(&["workflow".as_ref(), "stats".as_ref(), path.as_os_str()]);
    (code, stderr)
}

#[test]
fn each_malformed_input_class_gives_its_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body, expect) in [
        (
            "cut.json",
            "{\"workflow\": {\"tasks\": [{\"name\": \"a\"",
            "line 1, column",
        ),
        (
            "type.json",
            "{\"workflow\": {\"tasks\": [{\"name\": 3}]}}",
            "at `workflow.tasks[0].name`",
        ),
        (
            "none.json",
            "{\"workflow\": {}}",
            "expected `jobs` (1.0–1.2), `tasks`",
        ),
        (
            "dangling.json",
            "{\"workflow\": {\"tasks\": [{\"name\": \"a\", \"parents\": [\"ghost\"]}]}}",
            "names `ghost`, which is no task's id or name",
        ),
        (
            "cycle.json",
            "{\"workflow\": {\"tasks\": [{\"name\": \"a\", \"parents\": [\"b\"]}, {\"name\": \"b\", \"parents\": [\"a\"]}]}}",
            "cycle",
        ),
        (
            "bad.dax",
            "<adag><job id=\"a\"><uses name=\"x\" link=\"input\"></job></adag>",
            "line 1: not well-formed XML",
        ),
        (
            "noid.dax",
            "<adag>\n<job name=\"a\"/>\n</adag>",
            "line 2: <job> without `id`",
        ),
        (
            "ghost.dax",
            "<adag><job id=\"a\"/><child ref=\"a\"><parent ref=\"b\"/></child></adag>",
            "<parent ref=\"b\">: no job has that id",
        ),
        (
            "bad.yml",
            "pegasus: \"5.0\"\njobs:\n  - id: a\n    uses: 7\n",
            "line 4",
        ),
        (
            "dep.yml",
            "pegasus: \"5.0\"\njobs:\n  - id: a\njobDependencies:\n  - id: a\n    children: [z]\n",
            "at `jobDependencies[0].children`: `z` is no job's id",
        ),
        (
            "unknown.dag",
            "JOB a a.sub\nFROB a\n",
            "line 2: unknown command `FROB`",
        ),
        (
            "retry.dag",
            "JOB a a.sub\nRETRY a many\n",
            "line 2: RETRY: expected a whole number",
        ),
        (
            "edge.dag",
            "JOB a a.sub\nPARENT a CHILD b\n",
            "line 2: PARENT/CHILD: no JOB, SUBDAG or SPLICE named `b`",
        ),
        (
            "quote.dag",
            "JOB a a.sub\nVARS a x=\"open\n",
            "line 2: an unclosed",
        ),
        (
            "splice.dag",
            "JOB a a.sub\nSPLICE s other.dag\n",
            "line 2: SPLICE s: cannot read",
        ),
        ("script.dag", "JOB a a.sub\nSCRIPT PRE a\n", "an executable"),
        ("what.txt", "hello", "cannot tell the format"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let (code, stderr) = stats(&path);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains(name), "{name}: the file is named: {stderr}");
        assert!(
            stderr.contains(expect),
            "{name}: expected `{expect}` in: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    // A .dag with a cycle is read, as DAGMan reads and runs it; a warning
    // names a node of the cycle.
    let path = dir.path().join("loop.dag");
    std::fs::write(
        &path,
        "JOB a a.sub\nJOB b b.sub\nPARENT a CHILD b\nPARENT b CHILD a\n",
    )
    .unwrap();
    let (code, stderr) = stats(&path);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("has a cycle through node `a`"), "{stderr}");
    // --format overrides what the content says.
    let yml = fixture("diamond.yml");
    let (code, _, stderr) = crate::common::gridbed(&[
        "workflow",
        "stats",
        "--format",
        "dax",
        yml.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no <adag> element: not a Pegasus DAX"));
}

/// Three sites running `diamond.yml` (copied beside the testbed).
const DIAMOND_TESTBED: &str = r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 50
byte_scale = 1
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[[site]]
name = "grid3-02"
[workflow]
file = "diamond.yml"
"#;

/// Writes [`DIAMOND_TESTBED`] into `dir`; a function that runs it with
/// extra arguments, asserts success and returns the output.
fn diamond_testbed(dir: &Path) -> impl Fn(&[&str]) -> String {
    std::fs::copy(fixture("diamond.yml"), dir.join("diamond.yml")).unwrap();
    let testbed = crate::common::write_testbed(dir, "t.toml", DIAMOND_TESTBED);
    let catalog = crate::common::catalog();
    move |extra: &[&str]| {
        let mut args = vec![
            "run",
            testbed.to_str().unwrap(),
            "--sites",
            catalog.to_str().unwrap(),
            "-q",
        ];
        args.extend(extra);
        let (code, stdout, stderr) = crate::common::gridbed(&args);
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        stdout
    }
}

#[test]
#[ignore = "needs ../shared/reference"]
fn a_real_montage_run_replaces_a_testbeds_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let run = diamond_testbed(dir.path());
    let montage = reference("wfformat-cross-version/montage-2mass-005d-v1.5.json");
    let out = run(&["--engine", "sim", "--workflow", montage.to_str().unwrap()]);
    assert!(out.contains("58 ended of 58"), "{out}");
}

#[test]
fn a_testbed_runs_a_workflow_file_and_workflow_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = diamond_testbed(dir.path());
    let body = DIAMOND_TESTBED;
    let catalog = crate::common::catalog();
    for engine in ["sim", "live"] {
        let out = run(&["--engine", engine]);
        assert!(out.contains("4 ended of 4"), "{engine}: {out}");
    }
    let other = fixture("epigenomics-wfcommons-1.6.json");
    let out = run(&["--engine", "sim", "--workflow", other.to_str().unwrap()]);
    assert!(out.contains("57 ended of 57"), "{out}");
    let bad = crate::common::write_testbed(
        dir.path(),
        "both.toml",
        &body.replace(
            "file = \"diamond.yml\"",
            "file = \"diamond.yml\"\ngenerator = \"pipeline\"",
        ),
    );
    let (code, _, stderr) = crate::common::gridbed(&[
        "check",
        bad.to_str().unwrap(),
        "--sites",
        catalog.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("not both"));
}

#[test]
fn a_dag_file_runs_live_with_maxjobs_and_priorities_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let mut dag = String::from("# eight nodes, one category of at most two at a time\n");
    for i in 0..8 {
        dag.push_str(&format!(
            "JOB n{i} n.sub\nCATEGORY n{i} heavy\nPRIORITY n{i} {i}\n"
        ));
    }
    dag.push_str("JOB last n.sub\nPARENT n0 n1 n2 n3 n4 n5 n6 n7 CHILD last\nMAXJOBS heavy 2\n");
    std::fs::write(dir.path().join("w.dag"), dag).unwrap();
    let body = r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 100
byte_scale = 1
[manager]
maxpre = 8
prescript_interval = 0
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 4
[[site]]
name = "grid3-02"
cpus = 4
[workflow]
file = "w.dag"
default_runtime = 20
"#;
    let s = crate::common::load(&crate::common::write_testbed(dir.path(), "t.toml", body));
    let run = gridbed::live::run(&s, Default::default()).unwrap();
    assert!(run.succeeded, "{:?}", run.counts);
    let attempts: Vec<(String, f64, f64)> = run
        .records
        .jobs
        .iter()
        .zip(&s.workflow.jobs)
        .filter(|(_, j)| j.name != "last")
        .map(|(r, j)| {
            let a = &r.attempts[0];
            (j.name.clone(), a.prescript, a.ended.unwrap())
        })
        .collect();
    // At most two of the category between prescript and end at any instant
    // (8 slots would allow all eight), and the limit was reached.
    let peak = attempts
        .iter()
        .map(|&(_, t, _)| {
            attempts
                .iter()
                .filter(|&&(_, s, e)| s <= t && t < e)
                .count()
        })
        .max()
        .unwrap();
    assert_eq!(peak, 2, "{attempts:?}");
    // Released highest priority first: n7, n6 lead; n0, n1 trail.
    let mut by_start = attempts.clone();
    by_start.sort_by(|a, b| a.1.total_cmp(&b.1));
    let first: BTreeSet<&str> = by_start[..2].iter().map(|a| a.0.as_str()).collect();
    let last: BTreeSet<&str> = by_start[6..].iter().map(|a| a.0.as_str()).collect();
    assert_eq!(first, BTreeSet::from(["n6", "n7"]));
    assert_eq!(last, BTreeSet::from(["n0", "n1"]));
}

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    crate::common::executable(path, &format!("#!/bin/sh\n{body}\n"));
}

fn dag_testbed(dir: &Path, dag: &str, maxpre: usize) -> gridbed::config::Scenario {
    let body = format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 10
byte_scale = 1
[manager]
maxpre = {maxpre}
prescript_interval = 0
replan_backoff = 0
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 4
[[site]]
name = "grid3-02"
cpus = 4
[workflow]
file = "{dag}"
scripts = "run"
default_runtime = 1
"#
    );
    crate::common::load(&crate::common::write_testbed(dir, "t.toml", &body))
}

#[test]
#[ignore = "needs ../shared/reference"]
fn htcondors_prepost_dag_runs_its_scripts_never_more_than_maxpre_pre_scripts_at_once() {
    let prepost = reference("job_dagman_prepost.dag");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(prepost, dir.path().join("job_dagman_prepost.dag")).unwrap();
    // Stand-ins for the test suite's scripts, which are not published with
    // the file: PRE records its start and end and sleeps; POST records $RETURN.
    let log = dir.path().join("scripts.log");
    script(
        &dir.path().join("job_dagman_prepost-prehello.pl"),
        &format!(
            "echo \"start $(date +%s%N)\" >> {log}\nsleep 0.2\necho \"end $(date +%s%N)\" >> {log}",
            log = log.display()
        ),
    );
    script(
        &dir.path().join("job_dagman_prepost-posthello.pl"),
        &format!("echo \"post $1 $PWD\" >> {}", log.display()),
    );
    let s = dag_testbed(dir.path(), "job_dagman_prepost.dag", 4);
    assert_eq!(s.manager.maxpre, 4);
    let run = gridbed::live::run(&s, Default::default()).unwrap();
    assert!(run.succeeded, "{:?}", run.counts);
    assert_eq!(run.counts.done, 20);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut events: Vec<(u128, i32)> = text
        .lines()
        .filter_map(|l| {
            let (kind, t) = l.split_once(' ')?;
            let t: u128 = t.trim().parse().ok()?;
            match kind {
                "start" => Some((t, 1)),
                "end" => Some((t, -1)),
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        events.len(),
        40,
        "20 PRE scripts ran, NOOP node's too:\n{text}"
    );
    events.sort();
    let (mut now, mut peak) = (0, 0);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    assert_eq!(peak, 4, "PRE scripts at once (MAXPRE 4):\n{text}");
    let posts: Vec<&str> = text.lines().filter(|l| l.starts_with("post ")).collect();
    assert_eq!(posts.len(), 20);
    assert!(
        posts.iter().all(|l| l.starts_with("post 0 ")),
        "$RETURN is 0: {posts:?}"
    );
    // As DAGMan runs them: in the node's folder, the DAG's.
    let folder = dir.path().canonicalize().unwrap();
    assert!(
        posts
            .iter()
            .all(|l| l.ends_with(&format!(" {}", folder.display()))),
        "run in the DAG's folder: {posts:?}"
    );
}

#[test]
fn a_failed_pre_script_fails_its_node_and_retry_runs_it_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.dag"),
        "JOB a a.sub\nSCRIPT PRE a pre.sh $JOB $RETRY\nRETRY a 2\n\
         JOB b b.sub\nSCRIPT PRE b pre.sh $JOB $RETRY\n\
         JOB c c.sub\nPARENT b CHILD c\n",
    )
    .unwrap();
    // Fails the first attempt of every node (exit 3), as DAGMan would see it.
    script(
        &dir.path().join("pre.sh"),
        "[ \"$2\" = \"0\" ] && exit 3\nexit 0",
    );
    let s = dag_testbed(dir.path(), "w.dag", 4);
    let run = gridbed::live::run(&s, Default::default()).unwrap();
    let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
    let a = &run.records.jobs[job("a")].attempts;
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(
        a[0].outcome,
        gridbed::core::records::Outcome::StagingFailed("PRE script exited 3".into())
    );
    assert_eq!(a[1].outcome, gridbed::core::records::Outcome::Ended);
    // b has no RETRY: one failed attempt fails it; its child never runs.
    assert_eq!(run.records.jobs[job("b")].attempts.len(), 1);
    assert!(!run.succeeded);
    assert_eq!((run.counts.failed, run.counts.blocked), (1, 1));
}

#[test]
fn a_sidecar_gives_dag_jobs_runtimes_and_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.dag"),
        "JOB a a.sub\nJOB b b.sub\nPARENT a CHILD b\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("w.toml"),
        "[[file]]\nname = \"in\"\nsize = \"2 MB\"\n[[file]]\nname = \"mid\"\nsize = \"1 MB\"\n\
         [[job]]\nname = \"a\"\nruntime = 30\ninputs = [\"in\"]\noutputs = [\"mid\"]\n\
         [[job]]\nname = \"b\"\nruntime = 12\ninputs = [\"mid\"]\n",
    )
    .unwrap();
    let opts = Options {
        sidecar: Some(dir.path().join("w.toml")),
        ..Default::default()
    };
    let loaded = formats::load(&dir.path().join("w.dag"), &opts).unwrap();
    let wf = &loaded.workflow;
    assert_eq!(wf.jobs[0].runtime, 30.0);
    assert_eq!(wf.jobs[1].runtime, 12.0);
    assert_eq!(
        wf.inputs().map(|f| wf.files[f].size).sum::<u64>(),
        2_000_000
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    std::fs::write(
        dir.path().join("bad.toml"),
        "[[job]]\nname = \"a\"\n[[job]]\nname = \"zz\"\n",
    )
    .unwrap();
    let bad = Options {
        sidecar: Some(dir.path().join("bad.toml")),
        ..Default::default()
    };
    let e = formats::load(&dir.path().join("w.dag"), &bad)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.toml: line 4: job `zz` is no JOB of the DAG"),
        "{e}"
    );
}

#[test]
fn a_wfformat_1_6_file_written_by_the_wfcommons_package_reads_as_it_says() {
    // Written by `wfcommons` 1.6's epigenomics recipe (60 tasks asked, 57
    // made); the counts are those of an independent reading of the JSON.
    let loaded = formats::load(
        &fixture("epigenomics-wfcommons-1.6.json"),
        &Options::default(),
    )
    .unwrap();
    let (jobs, edges, input_bytes) = shape(&loaded.workflow);
    assert_eq!(
        (jobs.len(), edges.len(), input_bytes),
        (57, 68, 1_010_098_301)
    );
    // Task names repeat in 1.6 (`name` is the program): jobs take the ids,
    // and the name becomes the transformation.
    assert!(loaded.workflow.jobs.iter().all(|j| j.name.contains('_')));
    assert!(
        loaded
            .workflow
            .jobs
            .iter()
            .any(|j| j.transformation.as_deref() == Some("mapMerge"))
    );
}

use crate::common::Edit;

/// Applies `edits` to `path` and reads the result as `format`: a result or
/// an error, never a panic.
fn parse_edited(path: &Path, format: usize, edits: Vec<Edit>) {
    let text = crate::common::edit(&std::fs::read_to_string(path).unwrap(), edits);
    let format = [
        Format::Auto,
        Format::Wfformat,
        Format::Dax,
        Format::PegasusYaml,
        Format::Dagman,
    ][format];
    let _ = formats::load_text(
        path,
        &text,
        &Options {
            format,
            ..Default::default()
        },
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Fuzzing (proptest, 256 cases a run): any edits of any fixture — cuts,
    /// deletions, insertions of arbitrary text, swaps — read as any format,
    /// give a result or an error, never a panic.
    #[test]
    fn no_edit_of_a_fixture_panics_a_parser(
        which in 0usize..16,
        format in 0usize..5,
        edits in proptest::collection::vec((0usize..4, proptest::prelude::any::<proptest::sample::Index>(), ".{0,12}"), 1..6),
    ) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(fixture(""))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        parse_edited(&files[which % files.len()], format, edits);
    }

    /// The same on real files of HTCondor and Pegasus.
    #[test]
    #[ignore = "needs ../shared/reference"]
    fn no_edit_of_a_real_workflow_file_panics_a_parser(
        which in 0usize..2,
        format in 0usize..5,
        edits in proptest::collection::vec((0usize..4, proptest::prelude::any::<proptest::sample::Index>(), ".{0,12}"), 1..6),
    ) {
        let file = ["pegasus5-diamond-workflow.yml", "job_dagman_prepost.dag"][which];
        parse_edited(&reference(file), format, edits);
    }
}

#[test]
fn workflow_stats_on_a_file_prints_its_shape() {
    let yml = fixture("diamond.yml");
    let stdout = crate::common::gridbed_ok(&["workflow", "stats", yml.to_str().unwrap()]);
    // 60 + 40.5 + 41 + 30 s in all; 60 + 41 + 30 s along the critical path.
    for line in [
        "(pegasus-yaml)",
        "jobs                             4",
        "edges                            4",
        "files                            6",
        "input files                      1  (1.00 kB)",
        "total runtime                  172 s",
        "critical path                  131 s",
        "depth × width                3 × 2",
    ] {
        assert!(stdout.contains(line), "`{line}` in:\n{stdout}");
    }
}
