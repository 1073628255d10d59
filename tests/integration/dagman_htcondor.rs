//! DAGMan's semantics side by side with HTCondor's own test suite: small
//! DAGs shaped as the `src/condor_tests/job_dagman_*` tests of HTCondor's
//! source (25.x) shape theirs, run by both engines through `gridbed run`,
//! and checked against the outcomes those tests require (their node status
//! file lines, script outputs, rescue DAG and whether the DAG fails). Each
//! test names the HTCondor test it follows and says where gridbed's run
//! differs. The DAGs are written here from the tests' descriptions; a
//! node's job is a sidecar entry (its exit status per attempt), and its
//! scripts are small shell scripts.

use std::path::Path;

use crate::dagman::dag_testbed;

/// Writes `name` in `dir` as an executable shell script of `body`.
fn script(dir: &Path, name: &str, body: &str) {
    crate::common::executable(&dir.join(name), &format!("#!/bin/sh\n{body}"));
}

/// Runs `dag` (with `sidecar`, scripts run) on `engine` through `gridbed
/// run`; returns its exit code and the text of the node status file
/// `w.status` it asks for.
fn run(dir: &Path, dag: &str, sidecar: &str, engine: &str) -> (Option<i32>, String) {
    let dag = format!("NODE_STATUS_FILE w.status\n{dag}");
    let tb = dag_testbed(dir, &dag, "", "scripts = \"run\"");
    std::fs::write(dir.join("w.toml"), sidecar).unwrap();
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
    let status = std::fs::read_to_string(dir.join("w.status"))
        .unwrap_or_else(|e| panic!("{engine}: no status file ({e}): {err}"));
    (code, status)
}

/// Every piece of every expected line appears in `text`, in order: the
/// pieces of one line (split at `.*`, as the HTCondor tests' patterns are)
/// on one line of `text`.
fn assert_in_order(text: &str, expected: &[&str], what: &str) {
    let mut lines = text.lines();
    for want in expected {
        let pieces: Vec<&str> = want.split(".*").collect();
        let found = lines.by_ref().any(|l| {
            let mut rest = l;
            pieces.iter().all(|p| match rest.find(p) {
                Some(i) => {
                    rest = &rest[i + p.len()..];
                    true
                }
                None => false,
            })
        });
        assert!(found, "{what}: `{want}` not found in order in:\n{text}");
    }
}

/// HTCondor's `job_dagman_abort-A`: a chain A → B → C → D where C's job
/// always exits 5, with `RETRY C 3` and `ABORT-DAG-ON C 5 RETURN 0`. The
/// abort overrides the retries, D never runs, and RETURN 0 makes the DAG a
/// success. Expected status lines, from that test: DAG `STATUS_DONE
/// (success)`, 4 nodes, 2 done, 1 failed, 1 unready (D is NOT_READY, not
/// futile: C was to be retried when the abort came).
#[test]
fn abort_dag_on_with_return_0_is_a_success_and_leaves_the_rest_unready() {
    let dag = "JOB A n.sub\nJOB B n.sub\nJOB C n.sub\nABORT-DAG-ON C 5 RETURN 0\nRETRY C 3\n\
               JOB D n.sub\nPARENT A CHILD B\nPARENT B CHILD C\nPARENT C CHILD D\n";
    let sidecar = "[[job]]\nname = \"C\"\nexit = [5]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let (code, status) = run(dir.path(), dag, sidecar, engine);
        assert_eq!(code, Some(0), "{engine}: the DAG succeeds");
        assert_in_order(
            &status,
            &[
                "DagStatus = 5;.*STATUS_DONE (success)",
                "NodesTotal = 4;",
                "NodesDone = 2;",
                "NodesUnready = 1;",
                "NodesFailed = 1;",
                "Node = \"A\";",
                "NodeStatus = 5;.*STATUS_DONE",
                "Node = \"B\";",
                "NodeStatus = 5;.*STATUS_DONE",
                "Node = \"C\";",
                "NodeStatus = 6;.*STATUS_ERROR",
                "RetryCount = 0;",
                "Node = \"D\";",
                "NodeStatus = 0;.*STATUS_NOT_READY",
            ],
            engine,
        );
    }
}

/// HTCondor's `job_dagman_abort-B`: A → B → {C, D}, one job in the
/// queue at a time (`DAGMAN_MAX_JOBS_SUBMITTED = 1` in its CONFIG); C's
/// job fails and its POST script exits 5, which aborts (`ABORT-DAG-ON C 5
/// RETURN 1`, `RETRY C 3`). D, submitted once C's job left the queue, is
/// removed by the abort. Expected, from that test: DAG `STATUS_ERROR
/// (aborted)`, 2 done, 2 failed, none unready; C and D in error.
#[test]
fn abort_dag_on_from_a_post_script_aborts_the_dag_with_its_return() {
    let dag = "CONFIG one.cfg\nJOB A n.sub\nJOB B n.sub\nJOB C n.sub\nSCRIPT POST C post5.sh\n\
               ABORT-DAG-ON C 5 RETURN 1\nRETRY C 3\nJOB D n.sub\n\
               PARENT A CHILD B\nPARENT B CHILD C D\n";
    let sidecar = "[[job]]\nname = \"C\"\nexit = [1]\n[[job]]\nname = \"D\"\nexit = [1]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("one.cfg"),
            "DAGMAN_MAX_JOBS_SUBMITTED = 1\n",
        )
        .unwrap();
        script(dir.path(), "post5.sh", "exit 5\n");
        let (code, status) = run(dir.path(), dag, sidecar, engine);
        assert_eq!(code, Some(1), "{engine}: the DAG fails");
        assert_in_order(
            &status,
            &[
                "DagStatus = 6;.*STATUS_ERROR (aborted)",
                "NodesTotal = 4;",
                "NodesDone = 2;",
                "NodesUnready = 0;",
                "NodesFailed = 2;",
                "Node = \"C\";",
                "NodeStatus = 6;.*STATUS_ERROR",
                "Node = \"D\";",
                "NodeStatus = 6;.*STATUS_ERROR",
                "StatusDetails = \"Was STATUS_SUBMITTED\";",
            ],
            engine,
        );
    }
}

/// The FINAL node's scripts, as HTCondor's `job_dagman_final-A` and
/// `-B` write them: each prints `$DAG_STATUS` and `$FAILED_COUNT` and
/// exits its last argument (the POST script `$RETURN`).
const FINAL_DAG: &str = "JOB A n.sub\nJOB B n.sub\nFINAL C n.sub\n\
    SCRIPT DEBUG scripts.out STDOUT PRE C report.sh C Pre $DAG_STATUS $FAILED_COUNT 0\n\
    SCRIPT DEBUG scripts.out STDOUT POST C report.sh C Post $DAG_STATUS $FAILED_COUNT $RETURN\n\
    PARENT A CHILD B\n";

const REPORT_SH: &str =
    "echo \"  DAG_STATUS=$3\"\necho \"  FAILED_COUNT=$4\"\necho \"Node $1 $2\"\nexit $5\n";

/// HTCondor's `job_dagman_final-A`: the DAG succeeds, FINAL's scripts see
/// DAG status 0 and no failed node, every node is done.
#[test]
fn final_after_a_dag_that_succeeded_sees_status_0_and_no_failure() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "report.sh", REPORT_SH);
        let (code, status) = run(dir.path(), FINAL_DAG, "", engine);
        assert_eq!(code, Some(0), "{engine}");
        assert_in_order(
            &status,
            &[
                "DagStatus = 5;.*STATUS_DONE (success)",
                "Node = \"A\";",
                "NodeStatus = 5;.*STATUS_DONE",
                "Node = \"B\";",
                "NodeStatus = 5;.*STATUS_DONE",
                "Node = \"C\";",
                "NodeStatus = 5;.*STATUS_DONE",
            ],
            engine,
        );
        let scripts = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("scripts.out")).unwrap(),
        );
        assert_eq!(
            scripts,
            "  DAG_STATUS=0\n  FAILED_COUNT=0\nNode C Pre\n  DAG_STATUS=0\n  FAILED_COUNT=0\nNode C Post\n",
            "{engine}"
        );
    }
}

/// HTCondor's `job_dagman_final-B`: B's job fails, and so does FINAL's
/// (its POST passes `$RETURN` 1 on). FINAL's scripts see DAG status 2
/// (`DAG_STATUS_NODE_FAILED`) and one failed node; the DAG fails, and its
/// rescue, from that test: 3 nodes, 1 premarked DONE, 2 failed (`B,C`),
/// `DONE A`.
#[test]
fn final_after_a_failed_node_sees_status_2_and_the_rescue_lists_both_failures() {
    let sidecar = "[[job]]\nname = \"B\"\nexit = [1]\n[[job]]\nname = \"C\"\nexit = [1]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "report.sh", REPORT_SH);
        let (code, _) = run(dir.path(), FINAL_DAG, sidecar, engine);
        assert_eq!(code, Some(1), "{engine}: the DAG fails");
        let scripts = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("scripts.out")).unwrap(),
        );
        assert_eq!(
            scripts,
            "  DAG_STATUS=2\n  FAILED_COUNT=1\nNode C Pre\n  DAG_STATUS=2\n  FAILED_COUNT=1\nNode C Post\n",
            "{engine}"
        );
        let rescue = std::fs::read_to_string(dir.path().join("w.dag.rescue001")).unwrap();
        assert_in_order(
            &rescue,
            &[
                "# Rescue DAG file, created after running",
                "#   the ",
                "# Created ",
                "# Rescue DAG version: 2.1.0",
                "#",
                "# Total number of Nodes: 3",
                "# Nodes premarked DONE: 1",
                "# Nodes that failed: 2",
                "#   B,C,<ENDLIST>",
                "DONE A",
            ],
            engine,
        );
    }
}

/// HTCondor's `job_dagman_abort-final-A`: B exits 5, and `ABORT-DAG-ON B
/// 5 RETURN 0` stops the DAG with DAGMan's status forced OK, so FINAL's
/// scripts see DAG status 0 (and B failed); FINAL's job then fails (its
/// POST passes `$RETURN` 1 on), which makes the status NODE_FAILED again:
/// `Dag::DoneSuccess` no longer holds and the DAG fails, exit 1, its
/// status file and metrics saying so.
#[test]
fn final_failing_after_an_abort_returning_0_fails_the_dag() {
    let dag = format!("{FINAL_DAG}ABORT-DAG-ON B 5 RETURN 0\n");
    let sidecar = "[[job]]\nname = \"B\"\nexit = [5]\n[[job]]\nname = \"C\"\nexit = [1]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "report.sh", REPORT_SH);
        let (code, status) = run(dir.path(), &dag, sidecar, engine);
        assert_eq!(code, Some(1), "{engine}: FINAL failed");
        let scripts = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("scripts.out")).unwrap(),
        );
        assert_eq!(
            scripts,
            "  DAG_STATUS=0\n  FAILED_COUNT=1\nNode C Pre\n  DAG_STATUS=0\n  FAILED_COUNT=1\nNode C Post\n",
            "{engine}"
        );
        assert_in_order(
            &status,
            &["DagStatus = 6;.*STATUS_ERROR (failed)", "NodesFailed = 2;"],
            engine,
        );
        let metrics = std::fs::read_to_string(dir.path().join("w.dag.metrics")).unwrap();
        for line in [
            "\"exitcode\":1,",
            "\"nodes_failed\":2,",
            "\"DagStatus\":2\n",
        ] {
            assert!(metrics.contains(line), "{engine}: {line} in {metrics}");
        }
    }
}

/// HTCondor's `job_dagman_pre_skip-A` and `-B`. A: A's PRE exits 0 and
/// its job runs; B's PRE exits 1, not its PRE_SKIP value 2, so B fails
/// without running and the DAG fails. B: A's PRE exits its PRE_SKIP value
/// 1, so neither A's job nor its POST script (which would exit 1) runs, A
/// is done, and B runs: the DAG succeeds.
#[test]
fn pre_skip_skips_job_and_post_only_on_its_value() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "exit0.sh", "exit 0\n");
        script(dir.path(), "exit1.sh", "exit 1\n");
        let dag = "JOB A n.sub\nSCRIPT PRE A exit0.sh\nPRE_SKIP A 2\n\
                   JOB B n.sub\nSCRIPT PRE B exit1.sh\nPRE_SKIP B 2\nPARENT A CHILD B\n\
                   JOBSTATE_LOG j.log\n";
        let (code, status) = run(dir.path(), dag, "", engine);
        assert_eq!(code, Some(1), "{engine}: A's DAG fails");
        assert_in_order(
            &status,
            &[
                "Node = \"A\";",
                "NodeStatus = 5;",
                "Node = \"B\";",
                "NodeStatus = 6;",
            ],
            engine,
        );
        let log = std::fs::read_to_string(dir.path().join("j.log")).unwrap();
        assert!(log.contains(" A EXECUTE "), "{engine}: A ran: {log}");
        assert!(!log.contains(" B EXECUTE "), "{engine}: B did not: {log}");

        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "exit1.sh", "exit 1\n");
        let dag = "JOB A n.sub\nSCRIPT PRE A exit1.sh\nPRE_SKIP A 1\nSCRIPT POST A exit1.sh\n\
                   JOB B n.sub\nPARENT A CHILD B\nJOBSTATE_LOG j.log\n";
        let (code, status) = run(dir.path(), dag, "", engine);
        assert_eq!(code, Some(0), "{engine}: B's DAG succeeds");
        assert_in_order(
            &status,
            &["DagStatus = 5;.*(success)", "NodesDone = 2;"],
            engine,
        );
        let log = std::fs::read_to_string(dir.path().join("j.log")).unwrap();
        assert!(
            !log.contains(" A EXECUTE "),
            "{engine}: A was skipped: {log}"
        );
        assert!(
            !log.contains("POST_SCRIPT_STARTED"),
            "{engine}: no POST: {log}"
        );
        assert!(log.contains(" B EXECUTE "), "{engine}: B ran: {log}");
    }
}

/// The `DONE` lines of a save or rescue file.
fn done_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no save file {}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("DONE "))
        .map(str::to_string)
        .collect()
}

/// HTCondor's `test_dagman_save_files.py`: each case's DAG runs once and
/// writes its save files, each with the `DONE` lines of the nodes done as
/// its node started; then it runs again from one of them (`-load_save`,
/// gridbed's `--load-save`), which pre-completes that many nodes, writes
/// the save points of the nodes that start again and turns the older file
/// into `.old`. The cases, their files and counts are that test's
/// (`declared_save`, `custom_name`, `custom_path`, `complex_test`); the DAG
/// is `w.dag` here, not `test_save_files.dag`.
#[test]
fn save_point_files_are_written_as_nodes_start_and_a_run_loads_one() {
    type Case = (
        &'static str,
        &'static [(&'static str, &'static [&'static str])],
        &'static str,
        usize,
        &'static [&'static str],
    );
    let cases: [Case; 4] = [
        (
            "JOB A n.sub\nJOB B n.sub\nPARENT A CHILD B\nSAVE_POINT_FILE A\nSAVE_POINT_FILE B\n",
            &[
                ("save_files/A-w.dag.save", &[]),
                ("save_files/B-w.dag.save", &["A"]),
            ],
            "B-w.dag.save",
            1,
            &["save_files/A-w.dag.save", "save_files/B-w.dag.save.old"],
        ),
        (
            "JOB A n.sub\nJOB B n.sub\nPARENT A CHILD B\n\
             SAVE_POINT_FILE A redundant.save\nSAVE_POINT_FILE B important.txt\n",
            &[
                ("save_files/redundant.save", &[]),
                ("save_files/important.txt", &["A"]),
            ],
            "important.txt",
            1,
            &["save_files/redundant.save", "save_files/important.txt.old"],
        ),
        (
            "JOB A n.sub\nJOB B n.sub\nPARENT A CHILD B\n\
             SAVE_POINT_FILE A ./irrelevant.save\nSAVE_POINT_FILE B ../custom-path.save\n",
            &[("irrelevant.save", &[]), ("../custom-path.save", &["A"])],
            "../custom-path.save",
            1,
            &["irrelevant.save", "../custom-path.save.old"],
        ),
        (
            "JOB ONE n.sub\nJOB TWO n.sub\nJOB THREE n.sub\nJOB FOUR n.sub\nJOB JOIN n.sub\n\
             JOB LAST n.sub\nPARENT ONE TWO THREE FOUR CHILD JOIN\nPARENT JOIN CHILD LAST\n\
             SAVE_POINT_FILE JOIN complex.save\n",
            &[("save_files/complex.save", &["ONE", "TWO", "THREE", "FOUR"])],
            "complex.save",
            4,
            &["save_files/complex.save", "save_files/complex.save.old"],
        ),
    ];
    for engine in ["sim", "live"] {
        for (dag, saves, load, pre_completed, finals) in cases {
            let top = tempfile::tempdir().unwrap();
            let dir = top.path().join("case");
            std::fs::create_dir(&dir).unwrap();
            let (code, _) = run(&dir, dag, "", engine);
            assert_eq!(code, Some(0), "{engine}: {dag}");
            for (file, expected) in saves {
                let mut done = done_lines(&dir.join(file));
                done.sort();
                let mut want: Vec<&str> = expected.to_vec();
                want.sort();
                assert_eq!(done, want, "{engine}: {file} of {dag}");
            }
            let text = std::fs::read_to_string(dir.join(saves[0].0)).unwrap();
            assert!(
                text.starts_with("# Save file written at Start Node ")
                    && text.contains("# Rescue DAG version: 2.1.0\n"),
                "{engine}: {text}"
            );
            // A path is the user's; a bare name is looked for in save_files/.
            let load = if load.contains('/') {
                dir.join(load).display().to_string()
            } else {
                load.to_string()
            };
            let tb = dir.join("t.toml");
            let (code, _, err) =
                crate::common::run_testbed(&tb, &["--engine", engine, "--load-save", &load]);
            assert_eq!(code, Some(0), "{engine}: {err}");
            assert!(
                err.contains("loading saved progress from ")
                    && err.contains(&format!(": {pre_completed} nodes pre-completed")),
                "{engine}: {err}"
            );
            for file in finals {
                assert!(dir.join(file).exists(), "{engine}: no {file} after {dag}");
            }
        }
    }
}

/// HTCondor's `test_dagman_job_list_failure_tolerance.py`, for a job list
/// of one job (a gridbed node has one): node `TEST`'s job exits 1. The
/// list fails when its failures exceed the tolerance, a percentage taken
/// of the list's size rounded down (`Node::CheckBatchFailed`). Its cases
/// `DEFAULT` (0: the DAG fails, exit 1), `TOLERATE_ALL` (1 of 1: it
/// succeeds), `GREATER_THAN_NUM_PROCS` (100: it succeeds) and a percentage
/// (20% of one job is 0: it fails; 100% is 1: it succeeds), with the
/// tolerance from `TOLERANCE` or from the CONFIG's
/// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE`. The cases of lists of several jobs
/// (and FAIL-FAST/WAIT, which decide what becomes of the list's other
/// jobs) have no gridbed counterpart.
#[test]
fn a_job_failure_within_the_nodes_tolerance_leaves_the_node_done() {
    let sidecar = "[[job]]\nname = \"TEST\"\nexit = [1]\n";
    let cases = [
        ("", 1),
        ("TOLERANCE TEST 1\n", 0),
        ("TOLERANCE TEST 100\n", 0),
        ("TOLERANCE TEST 20%\n", 1),
        ("TOLERANCE TEST 100%\n", 0),
        ("CONFIG t.cfg\n", 0),
        ("CONFIG t.cfg\nTOLERANCE TEST 0\n", 1),
    ];
    for engine in ["sim", "live"] {
        for (tolerance, code) in cases {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(
                dir.path().join("t.cfg"),
                "DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 1\n",
            )
            .unwrap();
            let dag = format!("JOB TEST n.sub\n{tolerance}");
            let (got, status) = run(dir.path(), &dag, sidecar, engine);
            assert_eq!(got, Some(code), "{engine}: {tolerance}");
            let want = match code {
                0 => ["DagStatus = 5;.*STATUS_DONE (success)", "NodesDone = 1;"],
                _ => ["DagStatus = 6;.*STATUS_ERROR", "NodesFailed = 1;"],
            };
            assert_in_order(&status, &want, engine);
        }
    }
}

/// HTCondor's `job_dagman_splice-cat`: categories across nested splices.
/// A splice's categories are its own (`splice+cat`) unless `+`-named; a
/// file's MAXJOBS for a category wins over its splices' (the outer file is
/// read last); a global category's limit is the top DAG's. The DAG is
/// shaped as that test's (three levels, the innermost spliced twice); the
/// expected categories, with how many nodes and what limit each has, are
/// those its `.run` file checks in DAGMan's log (`CHECK CATEGORY`). As
/// there, the first node aborts the DAG with RETURN 0: it succeeds.
#[test]
fn categories_across_nested_splices_have_dagmans_members_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let top = "MAXJOBS big 15\nJOB first n.sub\nABORT-DAG-ON first 0 RETURN 0\n\
               JOB a n.sub\nJOB b n.sub\nCATEGORY b big\nJOB c n.sub\nCATEGORY c big\n\
               SPLICE outer one.dag\nJOB e n.sub\nCATEGORY e +shared\n\
               PARENT first CHILD a\nPARENT a CHILD b c\nPARENT b c CHILD outer\n\
               PARENT outer CHILD e\nMAXJOBS big 10\nMAXJOBS +shared 2\nMAXJOBS outer+mid 12\n";
    let one = "JOB a n.sub\nJOB b n.sub\nCATEGORY b mid\nJOB c n.sub\nCATEGORY c mid\n\
               SPLICE left two.dag\nSPLICE right two.dag\nJOB f n.sub\nCATEGORY f +shared\n\
               PARENT a CHILD b c\nPARENT b c CHILD left right\nPARENT left right CHILD f\n\
               MAXJOBS mid 11\nMAXJOBS +shared 3\nMAXJOBS left+low 33\n";
    let two = "JOB a n.sub\nJOB b n.sub\nCATEGORY b low\nJOB c n.sub\nCATEGORY c low\n\
               JOB d n.sub\nCATEGORY d lower\nJOB e n.sub\nCATEGORY e lower\n\
               JOB f n.sub\nCATEGORY f +shared\n\
               PARENT a CHILD b c\nPARENT b c CHILD d e\nPARENT d e CHILD f\n\
               MAXJOBS low 32\nMAXJOBS lower 22\nMAXJOBS +shared 4\n";
    std::fs::write(d.join("one.dag"), one).unwrap();
    std::fs::write(d.join("two.dag"), two).unwrap();
    std::fs::write(d.join("w.dag"), top).unwrap();
    let opts = gridbed::workflow::formats::Options::default();
    let loaded = gridbed::workflow::formats::load(&d.join("w.dag"), &opts).unwrap();
    let info = loaded.dagman.unwrap();
    let mut found = std::collections::BTreeMap::new();
    for c in info.nodes.iter().filter_map(|n| n.category.as_deref()) {
        *found.entry(c.to_string()).or_insert(0) += 1;
    }
    let found: Vec<(String, usize, usize)> = found
        .into_iter()
        .map(|(c, n)| {
            let limit = info.max_jobs[&c];
            (c, n, limit)
        })
        .collect();
    // The global category keeps its `+`, as HTCondor writes it.
    let expected = [
        ("+shared", 4, 2),
        ("big", 2, 10),
        ("outer+left+low", 2, 33),
        ("outer+left+lower", 2, 22),
        ("outer+mid", 2, 12),
        ("outer+right+low", 2, 32),
        ("outer+right+lower", 2, 22),
    ];
    let expected: Vec<(String, usize, usize)> = expected
        .iter()
        .map(|&(c, n, l)| (c.to_string(), n, l))
        .collect();
    assert_eq!(found, expected);
    for engine in ["sim", "live"] {
        let (code, status) = run(d, top, "", engine);
        assert_eq!(code, Some(0), "{engine}: the abort returns 0");
        assert_in_order(&status, &["NodesDone = 1;"], engine);
    }
}

/// HTCondor's `job_dagman_throttle`: 20 independent nodes, each with a
/// POST script that passes `$RETURN` on, run with `-maxjobs 4` (here
/// `DAGMAN_MAX_JOBS_SUBMITTED = 4` in the DAG's CONFIG, which `-maxjobs`
/// sets) on a site with slots for 8. That test reads the nodes' log and
/// fails if more than 4 jobs were ever in the queue at once; here the
/// attempts' submit and end times are read from the run, ends before
/// submits at the same instant. The DAG succeeds; the limit is reached and
/// never passed, in both engines.
#[test]
fn maxjobs_keeps_at_most_that_many_jobs_in_the_queue() {
    let mut dag = String::from("CONFIG four.cfg\n");
    for i in 0..20 {
        dag.push_str(&format!(
            "JOB N{i} n.sub\nSCRIPT POST N{i} post.sh $RETURN\n"
        ));
    }
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        script(d, "post.sh", "exit $1\n");
        std::fs::write(d.join("four.cfg"), "DAGMAN_MAX_JOBS_SUBMITTED = 4\n").unwrap();
        let tb = crate::dagman::dag_testbed_on(d, &dag, "", "scripts = \"run\"", 8);
        std::fs::write(d.join("w.toml"), "").unwrap();
        let s = crate::common::load(&tb);
        let result = match engine {
            "sim" => gridbed::sim::run(&s).unwrap().result,
            _ => gridbed::live::run(&s, Default::default()).unwrap().result,
        };
        assert!(result.succeeded, "{engine}: {:?}", result.counts);
        let mut events: Vec<(f64, i32)> = Vec::new();
        for a in result.records.jobs.iter().flat_map(|j| &j.attempts) {
            events.push((a.submitted.unwrap(), 1));
            events.push((a.finished.unwrap(), -1));
        }
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut queued = 0;
        let mut most = 0;
        for (_, delta) in events {
            queued += delta;
            most = most.max(queued);
        }
        assert_eq!(most, 4, "{engine}: at most 4 in the queue, and 4 reached");
    }
}

/// HTCondor's `job_dagman_retry-B`: a RETRY counts a failed PRE script, a
/// failed job and a failed POST script alike, NOOP nodes included. A
/// chain A → B → C → D → E → F: A's PRE fails on retry 0, its job on retry
/// 1, its POST on retry 2, and retry 3 succeeds (`RETRY A 3`); B's PRE
/// fails, then its job, then it succeeds (`RETRY B 2`); C's job and POST
/// (which passes `$RETURN` on) fail once (`RETRY C 1`); D's job fails once
/// (`RETRY D 1`); NOOP E's POST and NOOP F's PRE fail on retry 0 (`RETRY
/// 1`). The scripts decide on `$RETRY`, as that test's do. Expected, from
/// its `.run` file: each node retried that many times ("Retrying node NodeA
/// (retry #3 of 3)" …) and the DAG succeeds; here the node status file's
/// `RetryCount` of each node.
#[test]
fn retry_counts_failed_pre_scripts_jobs_and_post_scripts_alike() {
    let dag = "JOB A n.sub\nSCRIPT PRE A above.sh $RETRY 0\nSCRIPT POST A above.sh $RETRY 2\n\
               RETRY A 3\nJOB B n.sub\nSCRIPT PRE B above.sh $RETRY 0\nRETRY B 2\n\
               JOB C n.sub\nSCRIPT POST C above.sh 1 $RETURN\nRETRY C 1\n\
               JOB D n.sub\nRETRY D 1\n\
               JOB E n.sub NOOP\nSCRIPT POST E above.sh $RETRY 0\nRETRY E 1\n\
               JOB F n.sub NOOP\nSCRIPT PRE F above.sh $RETRY 0\nRETRY F 1\n\
               PARENT A CHILD B\nPARENT B CHILD C\nPARENT C CHILD D\n\
               PARENT D CHILD E\nPARENT E CHILD F\n";
    // Each job's exit status per run of its program: A runs on retries 1
    // to 3, B on 1 and 2.
    let sidecar = "[[job]]\nname = \"A\"\nexit = [1, 0]\n[[job]]\nname = \"B\"\nexit = [1, 0]\n\
                   [[job]]\nname = \"C\"\nexit = [1, 0]\n[[job]]\nname = \"D\"\nexit = [1, 0]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        // `above.sh x y`: succeeds when x > y.
        script(dir.path(), "above.sh", "[ \"$1\" -gt \"$2\" ]\n");
        let (code, status) = run(dir.path(), dag, sidecar, engine);
        assert_eq!(code, Some(0), "{engine}: {status}");
        let mut expected = vec!["DagStatus = 5;.*STATUS_DONE (success)".to_string()];
        for (node, retries) in [("A", 3), ("B", 2), ("C", 1), ("D", 1), ("E", 1), ("F", 1)] {
            expected.push(format!("Node = \"{node}\";"));
            expected.push("NodeStatus = 5;".into());
            expected.push(format!("RetryCount = {retries};"));
        }
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        assert_in_order(&status, &expected, engine);
    }
}

/// HTCondor's `job_dagman_rescue-A`: an upper DAG runs a lower one as a
/// SUBDAG with `RETRY 1`. In the lower DAG, a root node's job succeeds on
/// its first run and would fail on a second; a last node's job fails on
/// its first run and succeeds on a second. The first run of the sub-DAG
/// fails at that last node and writes the sub-DAG's rescue; the retry runs
/// the sub-DAG from it: only the failed node runs again, the root is not
/// run twice, and both DAGs succeed (that test checks both DAGMans exit
/// 0). Here also the rescue's lines.
#[test]
fn a_subdag_retried_runs_from_its_rescue_and_nothing_done_runs_twice() {
    let upper = "JOB setup n.sub\nSUBDAG EXTERNAL inner lower.dag\nRETRY inner 1\n\
                 PARENT setup CHILD inner\nJOBSTATE_LOG j.log\n";
    let lower = "JOB first n.sub\nJOB b1 n.sub\nJOB b2 n.sub\nJOB c n.sub\nJOB last n.sub\n\
                 PARENT first CHILD b1 b2\nPARENT b1 b2 CHILD c\nPARENT c CHILD last\n\
                 JOBSTATE_LOG lower.log\n";
    let sidecar = "[[job]]\nname = \"inner+first\"\nexit = [0, 1]\n\
                   [[job]]\nname = \"inner+last\"\nexit = [1, 0]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("lower.dag"), lower).unwrap();
        let (code, status) = run(dir.path(), upper, sidecar, engine);
        assert_eq!(code, Some(0), "{engine}: {status}");
        // The lower DAGMan's log, both its runs.
        let log = std::fs::read_to_string(dir.path().join("lower.log")).unwrap();
        let runs = |node: &str| log.matches(&format!(" {node} EXECUTE ")).count();
        assert_eq!((runs("first"), runs("last")), (1, 2), "{engine}: {log}");
        assert_eq!(log.matches("DAGMAN_STARTED").count(), 2, "{engine}: {log}");
        let rescue = std::fs::read_to_string(dir.path().join("lower.dag.rescue001")).unwrap();
        assert_in_order(
            &rescue,
            &[
                "# Total number of Nodes: 5",
                "# Nodes premarked DONE: 4",
                "# Nodes that failed: 1",
                "#   last,<ENDLIST>",
                "DONE first",
                "DONE b1",
                "DONE b2",
                "DONE c",
            ],
            engine,
        );
        assert!(!dir.path().join("lower.dag.rescue002").exists(), "{engine}");
    }
}

/// The lower DAG of HTCondor's `job_dagman_pre_subdag-A`: LA, then LB and
/// LC, then LD.
const PRE_SUBDAG_LOWER: &str = "Job LA n.sub\nJob LB n.sub\nJob LC n.sub\nJob LD n.sub\n\
                                PARENT LA CHILD LB LC\nPARENT LB LC CHILD LD\n\
                                JOBSTATE_LOG lower.log\n";

/// A PRE script that writes `PRE_SUBDAG_LOWER` as `lower.dag` beside the
/// DAG. gridbed runs a script in its site's pool folder, where HTCondor
/// runs it in the node's DIR: the script writes beside itself.
fn pre_writing_lower(dir: &Path) {
    let text = PRE_SUBDAG_LOWER.replace('\n', "\\n");
    script(
        dir,
        "pre.sh",
        &format!("cd \"$(dirname \"$0\")\"\nprintf '{text}' > lower.dag\n"),
    );
}

/// HTCondor's `job_dagman_pre_subdag-A`: `A` → `B`, `C` → `D`, where `C`
/// is a `SUBDAG EXTERNAL` whose `lower.dag` does not exist until `C`'s PRE
/// script writes it (DAGMan reads a sub-DAG's file when it submits the
/// node). That test requires every node's job to have run (A, B, D, LA,
/// LB, LC, LD) and the DAG to succeed; here also the order: the lower
/// DAG's nodes after `C`'s PRE script and before `D`.
#[test]
fn a_subdag_file_its_pre_script_writes_is_read_after_it_and_runs() {
    let upper = "Job A n.sub\nJob B n.sub\nSubdag external C lower.dag\n\
                 Script pre C pre.sh\nJob D n.sub\nPARENT A CHILD B C\nPARENT B C CHILD D\n\
                 JOBSTATE_LOG j.log\nDOT w.dot\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        pre_writing_lower(dir.path());
        let (code, status) = run(dir.path(), upper, "", engine);
        assert_eq!(code, Some(0), "{engine}: {status}");
        // The upper DAG's own four nodes, C one of them (its DAG's nodes
        // are its own DAGMan's).
        assert_in_order(
            &status,
            &[
                "DagStatus = 5;.*STATUS_DONE (success)",
                "NodesTotal = 4;",
                "NodesDone = 4;",
                "Node = \"A\";",
                "Node = \"B\";",
                "Node = \"C\";",
                "Node = \"D\";",
            ],
            engine,
        );
        assert!(!status.contains("C+"), "{engine}: {status}");
        let dot = std::fs::read_to_string(dir.path().join("w.dot")).unwrap();
        for edge in [
            "\"A\" -> \"B\"",
            "\"A\" -> \"C\"",
            "\"B\" -> \"D\"",
            "\"C\" -> \"D\"",
        ] {
            assert!(dot.contains(edge), "{engine}: {edge} in {dot}");
        }
        assert!(!dot.contains("C+"), "{engine}: {dot}");
        // Each DAGMan's log (the lower one's, as its file asks), by
        // HTCondor id: the order submitted.
        let logs = [("j.log", ""), ("lower.log", "C+")];
        let (ran, log) = crate::common::executions(dir.path(), &logs);
        let ran: Vec<&str> = ran.iter().map(String::as_str).collect();
        for node in ["A", "B", "D", "C+LA", "C+LB", "C+LC", "C+LD"] {
            assert_eq!(
                ran.iter().filter(|&&n| n == node).count(),
                1,
                "{engine}: {node} in {log}"
            );
        }
        let at = |n: &str| ran.iter().position(|&x| x == n).unwrap();
        assert!(
            at("C+LA") < at("C+LB") && at("C+LC") < at("C+LD") && at("C+LD") < at("D"),
            "{engine}: {log}"
        );
        // Its DAGMan, which read it, was submitted after its PRE script.
        let pre = log.find(" C PRE_SCRIPT_SUCCESS ");
        assert!(
            pre.is_some_and(|p| p < log.find(" C SUBMIT ").unwrap()) && at("C") < at("C+LA"),
            "{engine}: {log}"
        );
    }
}

/// DAGMan reads the sub-DAG's file as it is after the PRE script: a
/// script that rewrites an existing file runs the new DAG. A file the
/// script has not written yet makes the sub-DAG's DAGMan exit 1: the
/// node's POST script sees it as `$RETURN`, and `RETRY` runs the PRE
/// script again, which writes it this time. A sub-DAG read so that fails
/// writes its own rescue, naming its nodes.
#[test]
fn a_subdag_is_read_as_its_pre_script_left_it_and_retried_when_unreadable() {
    let upper = "JOB A n.sub\nSUBDAG EXTERNAL C lower.dag\nSCRIPT PRE C pre.sh\n\
                 SCRIPT DEBUG post.log STDOUT POST C post.sh $RETURN\nRETRY C 1\n\
                 PARENT A CHILD C\nJOBSTATE_LOG j.log\n";
    let post = "echo \"returned $1\"\nexit $1\n";
    for engine in ["sim", "live"] {
        // An old file, rewritten.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("lower.dag"), "JOB OLD n.sub\n").unwrap();
        pre_writing_lower(dir.path());
        script(dir.path(), "post.sh", post);
        let (code, _) = run(dir.path(), upper, "", engine);
        assert_eq!(code, Some(0), "{engine}");
        let log = std::fs::read_to_string(dir.path().join("lower.log")).unwrap();
        assert!(
            log.contains(" LD EXECUTE ") && !log.contains("OLD"),
            "{engine}: {log}"
        );
        // No file on the first try: the PRE script writes it only on its
        // second run.
        let dir = tempfile::tempdir().unwrap();
        let text = PRE_SUBDAG_LOWER.replace('\n', "\\n");
        script(
            dir.path(),
            "pre.sh",
            &format!(
                "cd \"$(dirname \"$0\")\"\nif [ -e tried ]; then printf '{text}' > lower.dag; else touch tried; fi\n"
            ),
        );
        script(dir.path(), "post.sh", post);
        let (code, status) = run(dir.path(), upper, "", engine);
        assert_eq!(code, Some(0), "{engine}: {status}");
        let posts = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("post.log")).unwrap(),
        );
        assert_eq!(posts, "returned 1\nreturned 0\n", "{engine}");
        let log = std::fs::read_to_string(dir.path().join("lower.log")).unwrap();
        assert_eq!(log.matches(" LA EXECUTE ").count(), 1, "{engine}: {log}");
        assert!(
            !dir.path().join("lower.dag.rescue001").exists(),
            "{engine}: nothing ran to rescue"
        );
        // The lower DAG fails for good at LD (its POST script, which the
        // file it writes names, exits 1): its rescue names its nodes, the
        // top DAG's names C.
        let dir = tempfile::tempdir().unwrap();
        let failing = format!("{PRE_SUBDAG_LOWER}SCRIPT POST LD fail.sh\n").replace('\n', "\\n");
        script(
            dir.path(),
            "pre.sh",
            &format!("cd \"$(dirname \"$0\")\"\nprintf '{failing}' > lower.dag\n"),
        );
        script(dir.path(), "post.sh", post);
        script(dir.path(), "fail.sh", "exit 1\n");
        let (code, _) = run(dir.path(), &upper.replace("RETRY C 1\n", ""), "", engine);
        assert_eq!(code, Some(1), "{engine}");
        let rescue = std::fs::read_to_string(dir.path().join("lower.dag.rescue001")).unwrap();
        assert_in_order(
            &rescue,
            &[
                "# Total number of Nodes: 4",
                "# Nodes premarked DONE: 3",
                "#   LD,<ENDLIST>",
                "DONE LA",
                "DONE LB",
                "DONE LC",
            ],
            engine,
        );
        let top = std::fs::read_to_string(dir.path().join("w.dag.rescue001")).unwrap();
        assert_in_order(&top, &["#   C,<ENDLIST>", "DONE A"], engine);
        assert!(!top.contains("C+"), "{engine}: {top}");
    }
}

/// A sub-DAG read after its PRE script may itself hold one: the lower DAG
/// of `job_dagman_pre_subdag-A` with a nested `N` whose own PRE script
/// writes `nested.dag` (`P` then `Q`, `MAXJOBS` of its own). Each is read
/// after its own PRE script, and each DAG's nodes run inside it.
#[test]
fn a_subdag_written_by_a_pre_script_inside_another_runs_in_both_engines() {
    let upper = "JOB A n.sub\nSUBDAG EXTERNAL C lower.dag\nSCRIPT PRE C pre.sh\nJOB D n.sub\n\
                 PARENT A CHILD C\nPARENT C CHILD D\nJOBSTATE_LOG j.log\n";
    let lower = "JOB LA n.sub\nSUBDAG EXTERNAL N nested.dag\nSCRIPT PRE N pre2.sh\nJOB LD n.sub\n\
                 PARENT LA CHILD N\nPARENT N CHILD LD\nJOBSTATE_LOG lower.log\n";
    let nested = "JOB P n.sub\nJOB Q n.sub\nJOB R n.sub\nPARENT P CHILD Q R\n\
                  CATEGORY Q one\nCATEGORY R one\nMAXJOBS one 1\nJOBSTATE_LOG nested.log\n";
    let writer = |file: &str, text: &str| {
        let text = text.replace('\n', "\\n");
        format!("cd \"$(dirname \"$0\")\"\nprintf '{text}' > {file}\n")
    };
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        script(dir.path(), "pre.sh", &writer("lower.dag", lower));
        script(dir.path(), "pre2.sh", &writer("nested.dag", nested));
        let (code, status) = run(dir.path(), upper, "", engine);
        assert_eq!(code, Some(0), "{engine}: {status}");
        // Each DAGMan's log, by HTCondor id: the order submitted.
        let logs = [("j.log", ""), ("lower.log", "C+"), ("nested.log", "C+N+")];
        let (ran, log) = crate::common::executions(dir.path(), &logs);
        let at = |n: &str| {
            (ran.iter().position(|x| x == n))
                .unwrap_or_else(|| panic!("{engine}: {n} did not run: {log}"))
        };
        let order = ["A", "C+LA", "C+N+P", "C+N+Q", "C+LD", "D"];
        assert!(
            order.windows(2).all(|w| at(w[0]) < at(w[1])),
            "{engine}: {log}"
        );
        assert!(
            at("C+N+P") < at("C+N+R") && at("C+N+R") < at("C+LD"),
            "{engine}: {log}"
        );
        // MAXJOBS one 1 of the nested DAG: Q and R one after the other.
        let log = std::fs::read_to_string(dir.path().join("nested.log")).unwrap();
        let span = |n: &str| {
            let start = log.find(&format!(" {n} EXECUTE ")).unwrap();
            let end = log.find(&format!(" {n} JOB_TERMINATED ")).unwrap();
            (start, end)
        };
        let (q, r) = (span("Q"), span("R"));
        assert!(q.1 < r.0 || r.1 < q.0, "{engine}: {log}");
    }
}

/// HTCondor's `job_dagman_cycle-A`: `A` → `B` → `C` → `B`. DAGMan runs a
/// DAG with a cycle (it does not look for one first): `A` runs, `B` and
/// `C` never become ready; the DAG fails with the note `cycle`, both left
/// NOT_READY, and a rescue DAG marks `A` done. A FINAL node still runs and
/// decides (`job_dagman_final-H`).
#[test]
fn a_dag_with_a_cycle_runs_what_it_can_and_fails_as_a_cycle() {
    let dag = "JOB A n.sub\nJOB B n.sub\nJOB C n.sub\nPARENT A CHILD B\nPARENT B CHILD C\n\
               PARENT C CHILD B\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let (code, status) = run(dir.path(), dag, "", engine);
        assert_eq!(code, Some(1), "{engine}: the DAG fails");
        assert_in_order(
            &status,
            &[
                "DagStatus = 6;.*STATUS_ERROR (cycle)",
                "NodesDone = 1;",
                "NodesUnready = 2;",
                "NodesFutile = 0;",
                "NodesFailed = 0;",
                "Node = \"B\";",
                "NodeStatus = 0;.*STATUS_NOT_READY",
                "Node = \"C\";",
                "NodeStatus = 0;.*STATUS_NOT_READY",
            ],
            engine,
        );
        let rescue = std::fs::read_to_string(dir.path().join("w.dag.rescue001")).unwrap();
        assert!(rescue.contains("\nDONE A\n"), "{engine}: {rescue}");
        // With a FINAL node that succeeds, the DAG succeeds.
        let dir = tempfile::tempdir().unwrap();
        let (code, _) = run(dir.path(), &format!("{dag}FINAL F n.sub\n"), "", engine);
        assert_eq!(code, Some(0), "{engine}: FINAL decides");
        assert!(dir.path().join("w.dag.rescue001").exists(), "{engine}");
    }
}

/// `condor_submit_dag`'s throttles on `gridbed run` apply to a `.dag`
/// only: elsewhere they are refused, naming the flags.
#[test]
fn dagmans_throttles_are_refused_for_a_workflow_that_is_no_dag() {
    let tb = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml");
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", "sim", "--maxjobs", "2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--maxjobs, --maxidle and --maxpost apply to a .dag workflow"),
        "{err}"
    );
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", "sim", "--always-run-post"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--always-run-post applies to a .dag workflow"),
        "{err}"
    );
}
