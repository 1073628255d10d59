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
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
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
                "NodesFailed = 1;",
                "NodesUnready = 1;",
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
                "NodesFailed = 2;",
                "NodesUnready = 0;",
                "Node = \"C\";",
                "NodeStatus = 6;.*STATUS_ERROR",
                "Node = \"D\";",
                "NodeStatus = 6;.*STATUS_ERROR",
                "StatusDetails = \"removed: the DAG was aborted",
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
        let scripts = std::fs::read_to_string(dir.path().join("scripts.out")).unwrap();
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
        let scripts = std::fs::read_to_string(dir.path().join("scripts.out")).unwrap();
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
