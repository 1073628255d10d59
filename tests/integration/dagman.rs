//! DAGMan as HTCondor writes it: each construct parsed to the DAG DAGMan
//! would run, and the semantics of what is read carried out by both engines
//! (a POST script after a failed job, FINAL, ABORT-DAG-ON, script time and
//! DEBUG files).

use std::collections::BTreeSet;
use std::path::Path;

use gridbed::workflow::formats::{self, Options, dagman::DagmanInfo};

use crate::common::{load, write_testbed};

/// A parsed DAG: its DAGMan info, job names and edges (parent, child).
type Dag = (DagmanInfo, Vec<String>, BTreeSet<(String, String)>);

/// Parses `dag` (written to a temporary `.dag`).
fn parse(dag: &str) -> Result<Dag, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.dag");
    std::fs::write(&path, dag).unwrap();
    let loaded = formats::load(&path, &Options::default()).map_err(|e| e.to_string())?;
    let wf = &loaded.workflow;
    let names = wf.jobs.iter().map(|j| j.name.clone()).collect();
    let edges = wf
        .jobs
        .iter()
        .flat_map(|j| {
            j.parents
                .iter()
                .map(|&p| (wf.jobs[p].name.clone(), j.name.clone()))
        })
        .collect();
    Ok((loaded.dagman.unwrap(), names, edges))
}

/// Each DAG (text, line, words) is refused at that line with those words.
fn assert_refused_at(cases: &[(&str, usize, &str)]) {
    for &(dag, line, what) in cases {
        let e = parse(dag).unwrap_err();
        assert!(
            e.contains(&format!("line {line}:")) && e.contains(what),
            "{dag:?}: {e}"
        );
    }
}

fn node<'a>(info: &'a DagmanInfo, name: &str) -> &'a formats::dagman::NodeInfo {
    info.nodes.iter().find(|n| n.name == name).unwrap()
}

#[test]
fn vars_take_spaces_around_equals_classad_attributes_and_all_nodes() {
    let (info, _, _) = parse(
        r#"JOB A a.sub
JOB B a.sub
JOB C a.sub
VARS A name="alphaNode"
VARS ALL_NODES name = "$(JOB)"   +accounting_group = "ligo"
VARS B name ="nodeB"  My.rank= "3"
VARS C APPEND extra="x \"quoted\" y"
"#,
    )
    .unwrap();
    let vars = |n: &str| node(&info, n).vars.clone();
    let v = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    // The last command to set a macro wins: ALL_NODES overrode A's, B's
    // own line came after it.
    assert_eq!(
        vars("A"),
        v(&[("name", "$(JOB)"), ("+accounting_group", "ligo")])
    );
    assert_eq!(
        vars("B"),
        v(&[
            ("+accounting_group", "ligo"),
            ("name", "nodeB"),
            ("My.rank", "3")
        ])
    );
    assert_eq!(vars("C")[2], ("extra".into(), "x \"quoted\" y".into()));
    for bad in ["VARS A name", "VARS A na$me=\"x\"", "VARS A name=\"open"] {
        let e = parse(&format!("JOB A a.sub\n{bad}\n")).unwrap_err();
        assert!(e.contains("line 2: "), "{bad}: {e}");
    }
}

#[test]
fn all_nodes_applies_in_file_order_and_skips_the_final_node() {
    let (info, names, edges) = parse(
        r#"JOB A a.sub
JOB B a.sub
FINAL F f.sub NOOP
PARENT A CHILD B
SCRIPT PRE ALL_NODES pre.sh $JOB
SCRIPT POST F cleanup.sh $RETURN
RETRY all_nodes 3
RETRY A 10
PRIORITY ALL_NODES 5
CATEGORY ALL_NODES c1
ABORT-DAG-ON ALL_NODES 9 RETURN 1
"#,
    )
    .unwrap();
    assert_eq!(names, ["A", "B", "F"]);
    let ab = ("A".to_string(), "B".to_string());
    assert_eq!(edges, BTreeSet::from([ab]), "FINAL has no edges");
    let (a, b, f) = (node(&info, "A"), node(&info, "B"), node(&info, "F"));
    assert_eq!((a.retry, b.retry, f.retry), (10, 3, 0));
    assert_eq!(a.pre.as_ref().unwrap().args, ["$JOB"]);
    assert!(b.pre.is_some() && f.pre.is_none());
    assert_eq!(f.post.as_ref().unwrap().executable, "cleanup.sh");
    assert_eq!((a.priority, f.priority), (5, 0));
    assert_eq!(b.category.as_deref(), Some("c1"));
    assert!(f.category.is_none());
    assert_eq!(a.abort_on, [(9, Some(1))]);
    assert!(f.is_final && f.noop && f.abort_on.is_empty());
}

#[test]
fn final_abort_dag_on_script_debug_and_reject_read_or_fail_at_their_line() {
    let (info, _, _) = parse(
        r#"JOB A a.sub
SCRIPT DEFER 4 30 DEBUG a.log ALL POST A post.sh $RETURN
SCRIPT DEBUG pre.out STDOUT PRE A pre.sh
ABORT-DAG-ON A 3
SCRIPT HOLD A hold.sh
"#,
    )
    .unwrap();
    let a = node(&info, "A");
    let post = a.post.as_ref().unwrap();
    assert_eq!(post.defer, Some((4, 30)));
    assert_eq!(post.debug, Some(("a.log".into(), "ALL".into())));
    assert_eq!(
        a.pre.as_ref().unwrap().debug,
        Some(("pre.out".into(), "STDOUT".into()))
    );
    assert_eq!(a.abort_on, [(3, None)]);
    assert_refused_at(&[
        ("JOB A a.sub\nREJECT\n", 2, "REJECT"),
        (
            "JOB A a.sub\nFINAL F f.sub\nFINAL G g.sub\n",
            3,
            "a second FINAL",
        ),
        (
            "JOB A a.sub\nFINAL F f.sub\nPARENT A CHILD F\n",
            3,
            "FINAL node",
        ),
        ("FINAL F f.sub\nRETRY F 2\n", 2, "FINAL node"),
        ("JOB A a.sub\nABORT-DAG-ON A x\n", 2, "ABORT-DAG-ON"),
        ("JOB A a.sub\nABORT-DAG-ON A 1 EXIT 2\n", 2, "RETURN"),
        (
            "JOB A a.sub\nSCRIPT DEBUG f BOTH POST A p.sh\n",
            2,
            "STDOUT, STDERR or ALL",
        ),
        ("JOB A a.sub\nSPLICE S s.dag\n", 2, "SPLICE"),
        (
            "JOB A a.sub\nRETRY A 1000000000\n",
            2,
            "at most 100000 retries",
        ),
    ]);
}

/// A three-node chain with a FINAL node, where `b`'s job exits 5 on its
/// first attempt and its POST script records `$RETURN` and exits 0 (a
/// rescue); every script writes to `scripts.log` through DEBUG.
const RESCUED: &str = r#"JOB a n.sub
JOB b n.sub
JOB c n.sub
FINAL fin n.sub
PARENT a CHILD b
PARENT b CHILD c
SCRIPT DEBUG scripts.log STDOUT POST b post.sh $JOB $RETURN
SCRIPT DEBUG scripts.log STDOUT POST fin post.sh $JOB $RETURN
RETRY b 2
"#;

const POST_SH: &str = "#!/bin/sh\necho \"$1 returned $2\"\nexit 0\n";

const SIDECAR: &str = r#"
[[job]]
name = "b"
runtime = 20
exit = [5, 0]
"#;

/// A testbed running `dag` with the sidecar above on one 2-slot site; its
/// `[manager]` gets `manager` (script time), `[workflow]` `workflow`.
pub(crate) fn dag_testbed(
    dir: &Path,
    dag: &str,
    manager: &str,
    workflow: &str,
) -> std::path::PathBuf {
    dag_testbed_on(dir, dag, manager, workflow, 2)
}

/// [`dag_testbed`] with `cpus` slots on its site.
pub(crate) fn dag_testbed_on(
    dir: &Path,
    dag: &str,
    manager: &str,
    workflow: &str,
    cpus: usize,
) -> std::path::PathBuf {
    std::fs::write(dir.join("w.dag"), dag).unwrap();
    std::fs::write(dir.join("w.toml"), SIDECAR).unwrap();
    let body = format!(
        r#"
strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 50
byte_scale = 1
[manager]
maxpre = 0
prescript_interval = 0
{manager}
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = {cpus}
[workflow]
file = "w.dag"
sidecar = "w.toml"
default_runtime = 10
{workflow}
"#
    );
    write_testbed(dir, "t.toml", &body)
}

fn rescued_testbed(dir: &Path, script_time: &str) -> std::path::PathBuf {
    let post = dir.join("post.sh");
    crate::common::executable(&post, POST_SH);
    dag_testbed(dir, RESCUED, script_time, "scripts = \"run\"")
}

/// The rescued DAG on one engine: the POST script saw `$RETURN` 5, the
/// node was not retried, `c` and FINAL ran, the run succeeded.
fn assert_rescued(
    run: &gridbed::core::result::RunResult,
    dir: &Path,
    s: &gridbed::config::Scenario,
) {
    assert!(run.succeeded, "{:?}", run.counts);
    let log =
        crate::common::script_output(&std::fs::read_to_string(dir.join("scripts.log")).unwrap());
    assert_eq!(
        log, "b returned 5\nfin returned 0\n",
        "POST script output (DEBUG)"
    );
    let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
    let b = &run.records.jobs[job("b")].attempts;
    assert_eq!(b.len(), 1, "rescued by its POST script: not retried");
    assert_eq!(b[0].outcome, gridbed::core::records::Outcome::Ended);
    let fin = &run.records.jobs[job("fin")].attempts[0];
    let c_end = run.records.jobs[job("c")].attempts[0].ended.unwrap();
    assert!(fin.prescript >= c_end, "FINAL ran last");
}

#[test]
fn a_failed_jobs_post_script_gets_its_exit_and_rescues_it_in_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let s = load(&rescued_testbed(dir.path(), "script_time = 7"));
    let run = gridbed::sim::run(&s).unwrap().result;
    assert_rescued(&run, dir.path(), &s);
    // The scripts took the testbed's 7 s: a (10 s), b (20 s) + POST 7,
    // c (10 s), FINAL (10 s) + POST 7.
    assert!((run.makespan - 64.0).abs() < 1e-6, "{}", run.makespan);
}

#[test]
fn a_failed_jobs_post_script_gets_its_exit_and_rescues_it_live() {
    let dir = tempfile::tempdir().unwrap();
    let s = load(&rescued_testbed(dir.path(), ""));
    let run = gridbed::live::run(&s, Default::default()).unwrap();
    assert_rescued(&run.result, dir.path(), &s);
}

#[test]
fn abort_dag_on_stops_both_engines_and_final_decides() {
    let dir = tempfile::tempdir().unwrap();
    let dag = "JOB a n.sub\nJOB b n.sub\nJOB c n.sub\nFINAL fin n.sub\nPARENT a CHILD b\nPARENT b CHILD c\nRETRY b 3\nABORT-DAG-ON b 5 RETURN 2\n";
    let s = load(&dag_testbed(dir.path(), dag, "", ""));
    let sim = gridbed::sim::run(&s).unwrap().result;
    let live = gridbed::live::run(&s, Default::default()).unwrap().result;
    for run in [&sim, &live] {
        let attempts = |n: usize| run.records.jobs[n].attempts.len();
        // b exits 5 and aborts: no retry, c never runs, FINAL does, and
        // FINAL's success is the DAG's.
        assert_eq!((attempts(1), attempts(2), attempts(3)), (1, 0, 1));
        assert!(run.succeeded);
        assert_eq!(run.counts.blocked, 1);
    }
}

/// Writes `files` (name, text) into a temporary folder; parses the first.
fn parse_files(files: &[(&str, &str)]) -> Result<Dag, String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let path = dir.path().join(files[0].0);
    let loaded = formats::load(&path, &Options::default()).map_err(|e| e.to_string())?;
    Ok((
        loaded.dagman.unwrap(),
        loaded
            .workflow
            .jobs
            .iter()
            .map(|j| j.name.clone())
            .collect(),
        crate::common::edges(&loaded.workflow),
    ))
}

fn edge_set(edges: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    edges
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

const DIAMOND: &str = "JOB B b.sub\nJOB C c.sub\nJOB D d.sub\nJOB E e.sub\n\
PARENT B CHILD C D\nPARENT C D CHILD E\nCATEGORY C local\nCATEGORY D +shared\n\
MAXJOBS local 1\nSPLICE N leaf.dag\nPARENT E CHILD N\n";

#[test]
fn splices_flatten_with_prefixed_names_and_stand_for_their_roots_and_leaves() {
    let (info, names, edges) = parse_files(&[
        (
            "top.dag",
            "JOB A a.sub\nSPLICE S1 diamond.dag\nSPLICE S2 diamond.dag DIR sub\nJOB Z z.sub\n\
             PARENT A CHILD S1\nPARENT S1 CHILD S2\nPARENT S2 CHILD Z\nMAXJOBS +shared 2\n",
        ),
        ("diamond.dag", DIAMOND),
        ("leaf.dag", "JOB X x.sub\n"),
        ("sub/diamond.dag", DIAMOND),
        ("sub/leaf.dag", "JOB X x.sub\n"),
    ])
    .unwrap();
    assert_eq!(names.len(), 2 + 2 * 5);
    let mut expected = edge_set(&[("A", "S1+B"), ("S1+N+X", "S2+B"), ("S2+N+X", "Z")]);
    for s in ["S1", "S2"] {
        for (p, c) in [("B", "C"), ("B", "D"), ("C", "E"), ("D", "E"), ("E", "N+X")] {
            expected.insert((format!("{s}+{p}"), format!("{s}+{c}")));
        }
    }
    assert_eq!(edges, expected);
    // A splice's categories are its own unless `+`-named; DIR carries down.
    let n = |name: &str| node(&info, name);
    assert_eq!(n("S1+C").category.as_deref(), Some("S1+local"));
    assert_eq!(n("S2+D").category.as_deref(), Some("+shared"));
    assert_eq!(info.max_jobs.get("S1+local"), Some(&1));
    assert_eq!(info.max_jobs.get("+shared"), Some(&2));
    assert_eq!(n("S2+N+X").dir.as_deref(), Some("sub/"));
    assert_eq!(n("S1+B").dir, None);
}

/// HTCondor's `job_dagman_splice-R` (gittrac #1780): a DAG's node
/// commands may name a spliced node as `splice+node` (nested splices too),
/// as DAGMan finds it once the splice is joined; a category named so is
/// the naming file's. A node the splice lacks is refused at the command's
/// line.
#[test]
fn node_commands_may_name_a_spliced_node() {
    let top = "SPLICE A lower.dag\nvars A+A foo=\"bar\"\nRETRY A+B+X 2\nCATEGORY A+A c\n\
               DONE A+B+X\nPRIORITY A+A 7\n";
    let files = |top: &'static str| {
        [
            ("top.dag", top),
            (
                "lower.dag",
                "job A a.sub\nVARS A foo=\"lower\" x=\"1\"\nSPLICE B leaf.dag\n",
            ),
            ("leaf.dag", "JOB X x.sub\n"),
        ]
    };
    let (info, _, _) = parse_files(&files(top)).unwrap();
    let n = |name: &str| node(&info, name);
    // The upper DAG's VARS come after the splice's own: its value wins.
    assert_eq!(
        n("A+A").vars,
        [
            ("x".to_string(), "1".to_string()),
            ("foo".to_string(), "bar".to_string())
        ]
    );
    assert_eq!(n("A+A").category.as_deref(), Some("c"));
    assert_eq!(n("A+A").priority, 7);
    assert_eq!(n("A+B+X").retry, 2);
    assert!(n("A+B+X").done);
    // DAGMan reads its nodes and splices first: a command may come before
    // the SPLICE line.
    let vars_first = "VARS A+A foo=\"bar\"\nSPLICE A lower.dag\n";
    let (info, _, _) = parse_files(&files(vars_first)).unwrap();
    assert_eq!(node(&info, "A+A").vars[1].1, "bar");
    let e = parse_files(&files("SPLICE A lower.dag\nRETRY A+Q 1\n")).unwrap_err();
    assert!(
        e.contains("top.dag") && e.contains("line 2: ") && e.contains("splice `A` has no node `Q`"),
        "{e}"
    );
}

#[test]
fn connect_joins_output_pins_to_input_pins_of_the_same_number() {
    let files = |consumer: &'static str| {
        [
            (
                "top.dag",
                "SPLICE P producer.dag\nSPLICE C consumer.dag\nCONNECT P C\n",
            ),
            (
                "producer.dag",
                "JOB O1 o.sub\nJOB O2 o.sub\nPIN_OUT O1 1\nPIN_OUT O2 2\n",
            ),
            ("consumer.dag", consumer),
        ]
    };
    let (_, _, edges) = parse_files(&files(
        "JOB I1 i.sub\nJOB I2 i.sub\nPIN_IN I1 1\nPIN_IN I2 2\n",
    ))
    .unwrap();
    assert_eq!(edges, edge_set(&[("P+O1", "C+I1"), ("P+O2", "C+I2")]));
    let e = parse_files(&files("JOB I1 i.sub\nPIN_IN I1 1\n")).unwrap_err();
    assert!(
        e.contains("line 3: CONNECT P C") && e.contains("[1, 2]"),
        "{e}"
    );
    let e = parse_files(&files("JOB I1 i.sub\nPIN_IN I9 1\n")).unwrap_err();
    assert!(
        e.contains("consumer.dag: line 2: PIN") && e.contains("I9"),
        "{e}"
    );
}

#[test]
fn a_subdag_is_one_node_that_ends_when_its_dag_ends_and_include_reads_inline() {
    let (info, names, edges) = parse_files(&[
        (
            "top.dag",
            "INCLUDE nodes.inc\nSUBDAG EXTERNAL S inner.dag\nPARENT A CHILD S\nPARENT S CHILD Z\n\
             SCRIPT PRE S pre.sh\nSCRIPT POST S post.sh\n",
        ),
        ("nodes.inc", "JOB A a.sub\nJOB Z z.sub\n"),
        ("inner.dag", "JOB X x.sub\nJOB Y y.sub\nPARENT X CHILD Y\n"),
    ])
    .unwrap();
    assert_eq!(names.len(), 6, "{names:?}");
    assert_eq!(
        edges,
        edge_set(&[
            ("A", "S+PRE"),
            ("S+PRE", "S+X"),
            ("S+X", "S+Y"),
            ("S+Y", "S"),
            ("S", "Z")
        ])
    );
    let s = node(&info, "S");
    assert!(s.noop && s.pre.is_none() && s.post.is_some());
    assert!(node(&info, "S+PRE").pre.is_some());
    for (files, what) in [
        (
            &[("top.dag", "INCLUDE top.dag\n")][..],
            "nested more than 32",
        ),
        (
            &[
                ("top.dag", "SPLICE S s.dag\n"),
                ("s.dag", "FINAL F f.sub\n"),
            ][..],
            "it has a FINAL node (F)",
        ),
        (
            &[("top.dag", "SUBDAG EXTERNAL S missing.dag\n")][..],
            "SUBDAG EXTERNAL S: cannot read",
        ),
        (
            &[(
                "top.dag",
                "SUBDAG EXTERNAL S made.dag\nSCRIPT PRE S make.sh\n",
            )][..],
            "with scripts = \"run\" it is read after the PRE script",
        ),
        (
            &[("top.dag", "SUBDAG INTERNAL S s.dag\n")][..],
            "line 1: SUBDAG",
        ),
    ] {
        let e = parse_files(files).unwrap_err();
        assert!(e.contains(what), "{what}: {e}");
    }
}

#[test]
fn a_spliced_dag_with_a_subdag_runs_every_node_in_dependency_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("leaf.dag"), "JOB X x.sub\n").unwrap();
    std::fs::write(dir.path().join("diamond.dag"), DIAMOND).unwrap();
    std::fs::write(
        dir.path().join("inner.dag"),
        "JOB X x.sub\nJOB Y y.sub\nPARENT X CHILD Y\n",
    )
    .unwrap();
    let top = "JOB A a.sub\nSPLICE S diamond.dag\nSUBDAG EXTERNAL Sub inner.dag\n\
               PARENT A CHILD S\nPARENT S CHILD Sub\n";
    let tb = dag_testbed(dir.path(), top, "", "");
    // The sidecar names `b`, no node of this DAG: a clear error.
    let e = gridbed::config::load(&tb, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("`b` is no JOB"), "{e}");
    std::fs::write(dir.path().join("w.toml"), "").unwrap();
    let s = load(&tb);
    let run = gridbed::sim::run(&s).unwrap().result;
    assert!(run.succeeded, "{:?}", run.counts);
    let wf = &s.workflow;
    for (j, job) in wf.jobs.iter().enumerate() {
        let start = run.records.jobs[j].attempts[0].prescript;
        for &p in &job.parents {
            let end = run.records.jobs[p].attempts[0].ended.unwrap();
            assert!(
                start >= end,
                "{} began before {} ended",
                job.name,
                wf.jobs[p].name
            );
        }
    }
    let at = |n: &str| wf.jobs.iter().position(|j| j.name == n).unwrap();
    let ended = |n: &str| run.records.jobs[at(n)].attempts[0].ended.unwrap();
    assert!(
        ended("Sub") >= ended("Sub+Y"),
        "the SUBDAG node ends with its DAG"
    );
}

/// The event names of `node` in a jobstate.log, in order.
fn node_events<'a>(log: &'a str, node: &str) -> Vec<&'a str> {
    log.lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|f| f.get(1) == Some(&node))
        .map(|f| f[2])
        .collect()
}

#[test]
fn a_run_writes_the_jobstate_log_node_status_file_and_dot_its_dag_asks_for() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = rescued_testbed(d, "");
        let dag = format!(
            "{RESCUED}JOBSTATE_LOG jobstate.log\nNODE_STATUS_FILE w.status 30 ALWAYS-UPDATE\n\
             DOT w.dot UPDATE INCLUDE header.dot\n"
        );
        std::fs::write(d.join("w.dag"), dag).unwrap();
        std::fs::write(d.join("header.dot"), "    rankdir=LR;\n").unwrap();
        // The job tag DAGMan writes is the submit file's, not the site
        // gridbed chose.
        std::fs::write(
            d.join("n.sub"),
            "executable = x\n+pegasus_site = \"tag\"\nqueue\n",
        )
        .unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let log = std::fs::read_to_string(d.join("jobstate.log")).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert!(
            lines[0].ends_with("INTERNAL *** DAGMAN_STARTED 0.0 ***"),
            "{log}"
        );
        assert!(
            lines
                .last()
                .unwrap()
                .ends_with("INTERNAL *** DAGMAN_FINISHED 0 ***")
        );
        assert_eq!(
            node_events(&log, "b"),
            [
                "SUBMIT",
                "EXECUTE",
                "JOB_TERMINATED",
                "JOB_FAILURE",
                "POST_SCRIPT_STARTED",
                "POST_SCRIPT_TERMINATED",
                "POST_SCRIPT_SUCCESS"
            ],
            "{engine}: {log}"
        );
        let b_failure = lines
            .iter()
            .find(|l| l.contains(" b JOB_FAILURE "))
            .unwrap();
        assert!(b_failure.ends_with("JOB_FAILURE 5 tag - 2"), "{b_failure}");
        // Timestamps never go back; a, b, c, fin are attempts 1 to 4.
        let times: Vec<u64> = lines
            .iter()
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{log}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains(" fin SUBMIT ") && l.ends_with(" - 4"))
        );
        let status = std::fs::read_to_string(d.join("w.status")).unwrap();
        assert!(
            status.contains("DagFiles = {\n    \"w.dag\"\n  };"),
            "{status}"
        );
        assert!(status.contains("NodesTotal = 4;") && status.contains("NodesDone = 4;"));
        assert_eq!(status.matches("Type = \"NodeStatus\"").count(), 4);
        assert!(
            status.contains("Node = \"b\";\n  NodeStatus = 5;"),
            "{status}"
        );
        assert!(
            status
                .trim_end()
                .ends_with("NextUpdate = 0; /* \"none\" */\n]")
        );
        // Drawn at the start and, with UPDATE, again at the end.
        let dot = std::fs::read_to_string(d.join("w.dot")).unwrap();
        assert!(
            dot.starts_with("digraph DAG {\n    label=\"DAGMan Job status at "),
            "{dot}"
        );
        assert!(
            dot.contains(
                "// Beginning of commands included from header.dot.\n    rankdir=LR;\n\
                 // End of commands included from header.dot.\n"
            ),
            "{dot}"
        );
        assert!(
            dot.contains("    \"a\" -> \"b\";\n")
                && dot.contains("    \"b\" [shape=ellipse label=\"b (Done)\" style=bold];\n"),
            "{dot}"
        );
    }
}

#[test]
fn an_aborted_dags_status_file_marks_the_nodes_that_never_ran_futile() {
    let dir = tempfile::tempdir().unwrap();
    let dag = "JOB a n.sub\nJOB b n.sub\nJOB c n.sub\nPARENT a CHILD b\nPARENT b CHILD c\n\
               ABORT-DAG-ON b 5 RETURN 3\nJOBSTATE_LOG j.log\nNODE_STATUS_FILE w.status\n";
    let tb = dag_testbed(dir.path(), dag, "", "");
    let (code, _, _) = crate::common::run_testbed(&tb, &["--engine", "sim"]);
    assert_eq!(code, Some(1), "the DAG did not succeed");
    let status = std::fs::read_to_string(dir.path().join("w.status")).unwrap();
    assert!(status.contains("DagStatus = 6;"), "{status}");
    assert!(
        status.contains("Node = \"c\";\n  NodeStatus = 7;"),
        "{status}"
    );
    assert!(
        status.contains("Node = \"b\";\n  NodeStatus = 6;"),
        "{status}"
    );
    let log = std::fs::read_to_string(dir.path().join("j.log")).unwrap();
    assert!(log.trim_end().ends_with("DAGMAN_FINISHED 3 ***"), "{log}");
    for (dag, what) in [
        (
            "JOB a n.sub\nDOT g.dot SIDEWAYS\n",
            "`SIDEWAYS` is no option of DOT",
        ),
        ("JOB a n.sub\nNODE_STATUS_FILE s x\n", "`X` is no option"),
    ] {
        let e = parse(dag).unwrap_err();
        assert!(e.contains("line 2:") && e.contains(what), "{e}");
    }
}

/// HTCondor reads a DAG file in two passes (`DagProcessor::process` in its
/// `parse.cpp`, gittrac #5732): first the commands that make nodes and
/// splices, then the rest in file order. So a command may come before the
/// JOB it names, and the file reads as its reordered twin.
#[test]
fn commands_before_their_job_read_as_the_reordered_dag() {
    let before = r#"# every command above the nodes it names
PARENT A CHILD B
RETRY A 2 UNLESS-EXIT 4
SCRIPT POST B post.sh $RETURN
VARS ALL_NODES x="1"
PRIORITY B 7
CATEGORY A c1
MAXJOBS c1 1
ABORT_DAG_ON B 3 RETURN 9
DONE A
JOB A a.sub
JOB B b.sub
FINAL F f.sub
"#;
    let after = r#"JOB A a.sub
JOB B b.sub
FINAL F f.sub
PARENT A CHILD B
RETRY A 2 UNLESS-EXIT 4
SCRIPT POST B post.sh $RETURN
VARS ALL_NODES x="1"
PRIORITY B 7
CATEGORY A c1
MAXJOBS c1 1
ABORT-DAG-ON B 3 RETURN 9
DONE A
"#;
    let (a, b) = (parse(before).unwrap(), parse(after).unwrap());
    assert_eq!(a, b);
    let (info, names, edges) = a;
    assert_eq!(names, ["A", "B", "F"]);
    assert_eq!(edges, edge_set(&[("A", "B")]));
    let (na, nb) = (node(&info, "A"), node(&info, "B"));
    assert_eq!(
        (na.retry, na.retry_unless_exit, na.done),
        (2, Some(4), true)
    );
    assert_eq!((nb.priority, nb.abort_on.clone()), (7, vec![(3, Some(9))]));
    assert_eq!(nb.post.as_ref().unwrap().args, ["$RETURN"]);
    // ALL_NODES reaches every node but FINAL, wherever it is written.
    assert_eq!(na.vars, [("x".to_string(), "1".to_string())]);
    assert!(node(&info, "F").vars.is_empty());
    assert_eq!(info.max_jobs.get("c1"), Some(&1));
}

/// What the two passes still refuse, at the command's own line: a node no
/// file defines (HTCondor: "Unknown node … referenced"), a node defined
/// only in an INCLUDE read below the command (the INCLUDE is read where it
/// stands, on the second pass), and keywords DAGMan does not know (refused
/// on the first pass, before any node command is looked at).
#[test]
fn a_command_naming_no_node_of_the_dag_fails_at_its_line() {
    let e = parse("RETRY X 2\nJOB A a.sub\n").unwrap_err();
    assert!(e.contains("line 1: RETRY: unknown node `X`"), "{e}");
    let e = parse_files(&[
        ("top.dag", "JOB A a.sub\nRETRY B 1\nINCLUDE more.dag\n"),
        ("more.dag", "JOB B b.sub\n"),
    ])
    .unwrap_err();
    assert!(
        e.contains("top.dag: line 2: RETRY: unknown node `B`"),
        "{e}"
    );
    let (info, _, _) = parse_files(&[
        (
            "top.dag",
            "JOB A a.sub\nINCLUDE more.dag\nRETRY B 1\nPRIORITY ALL_NODES 3\n",
        ),
        ("more.dag", "RETRY B 2\nJOB B b.sub\n"),
    ])
    .unwrap();
    let b = node(&info, "B");
    assert_eq!((b.retry, b.priority), (1, 3), "the later command wins");
    let e = parse("RETRY X 2\nJOB A a.sub\nFROB A\n").unwrap_err();
    assert!(e.contains("line 3: unknown command `FROB`"), "{e}");
}

/// Inline submit descriptions as HTCondor's `test_dagman_inline_desc.py`
/// writes them: `JOB C @=desc … @desc`, named `SUBMIT-DESCRIPTION`s used
/// before they are written, from an INCLUDE, and from a splice, where the
/// top DAG's description of a name wins over the splice's (that test's
/// splice defines `sleep` with a million-second argument that "should not
/// take effect").
#[test]
fn inline_submit_descriptions_are_kept_with_their_nodes_and_the_top_dag_wins() {
    let (info, names, _) = parse_files(&[
        (
            "top.dag",
            "JOB BEFORE sleep\n\nSUBMIT-DESCRIPTION sleep @=desc\n    executable = /bin/sleep\n    arguments  = 0\n@desc\n\
             JOB AFTER sleep\nJOB INCLUDE INC\nJOB BRACE {\n  executable = /bin/true\n  # a comment inside\n\n  queue\n} DIR d NOOP\n\
             SPLICE A splice.dag\nINCLUDE dag.include\n",
        ),
        (
            "dag.include",
            "SUBMIT-DESCRIPTION INC @=desc\n    executable = /bin/sleep\n    arguments  = 0\n@desc\n",
        ),
        (
            "splice.dag",
            "SUBMIT-DESCRIPTION foo @=desc\n  executable = /bin/sleep\n  arguments  = 0\n@desc\n\
             SUBMIT-DESCRIPTION sleep @=desc\n  executable = /bin/sleep\n  arguments  = 1000000\n@desc\n\
             JOB A foo\nJOB B sleep\nJOB C @=desc\n  executable = /bin/sleep\n  arguments = 0\n@desc\n",
        ),
    ])
    .unwrap();
    assert_eq!(
        names,
        ["BEFORE", "AFTER", "INCLUDE", "BRACE", "A+A", "A+B", "A+C"]
    );
    let desc = |n: &str| node(&info, n).submit_description.clone().unwrap();
    let zero = "executable = /bin/sleep\narguments  = 0\n";
    for n in ["BEFORE", "AFTER", "INCLUDE", "A+B"] {
        assert_eq!(desc(n), zero, "{n}");
    }
    assert_eq!(desc("A+A"), "executable = /bin/sleep\narguments  = 0\n");
    assert_eq!(desc("A+C"), "executable = /bin/sleep\narguments = 0\n");
    let brace = node(&info, "BRACE");
    assert_eq!(desc("BRACE"), "executable = /bin/true\nqueue\n");
    assert_eq!((brace.dir.as_deref(), brace.noop), (Some("d"), true));
    assert_eq!(brace.submit, "BRACE-InlineDesc");
    // A plain submit file has no description.
    let (info, _, _) = parse("JOB A a.sub\n").unwrap();
    assert_eq!(node(&info, "A").submit_description, None);
    assert_refused_at(&[
        ("JOB A {\n  executable = x\n", 1, "no closing `}`"),
        ("JOB A @=\nx\n@\n", 1, "@=TOKEN"),
        (
            "SUBMIT-DESCRIPTION d a.sub\n",
            1,
            "expected an inline description",
        ),
        (
            "JOB A a.sub\nJOB B @=end\nexecutable = x\n@end FROB\n",
            2,
            "`FROB`",
        ),
    ]);
}

/// `PRE_SKIP node value` (HTCondor's `Node::AddPreSkip`: 0 to 255, the last
/// one written wins; ALL_NODES reaches every node but FINAL).
#[test]
fn pre_skip_reads_its_value_and_refuses_one_beyond_an_exit_code() {
    let (info, _, _) =
        parse("PRE_SKIP ALL_NODES 2\nJOB A a.sub\nJOB B b.sub\nPRE-SKIP B 9\nFINAL F f.sub\n")
            .unwrap();
    let skip = |n: &str| node(&info, n).pre_skip;
    assert_eq!((skip("A"), skip("B"), skip("F")), (Some(2), Some(9), None));
    for bad in [
        "PRE_SKIP A 256",
        "PRE_SKIP A -1",
        "PRE_SKIP A x",
        "PRE_SKIP A",
    ] {
        let e = parse(&format!("JOB A a.sub\n{bad}\n")).unwrap_err();
        assert!(e.contains("line 2: PRE_SKIP: expected"), "{bad}: {e}");
    }
}

/// `ENV` and `SET_JOB_ATTR`, which `condor_submit_dag` reads into the
/// DAGMan job (HTCondor's `dagman_utils.cpp`): DAGMan's scripts run with its
/// `getenv` list of the submitter's variables, `ENV GET`'s and `ENV SET`'s,
/// and nothing else; a real script shows what it sees.
#[test]
fn env_makes_the_scripts_environment_and_set_job_attr_is_kept() {
    let (info, _, _) = parse(
        "JOB A a.sub\nENV GET MY_*, KEEP_ME\nENV SET COLOR=blue; SIZE=2\n\
         ENV SET \"GREETING='hello world' QUOTE='it''s'\"\nSET_JOB_ATTR accounting_group = \"ligo\"\n",
    )
    .unwrap();
    assert_eq!(info.env_get, ["MY_*", "KEEP_ME"]);
    assert_eq!(info.job_attrs, ["accounting_group = \"ligo\""]);
    let submitter = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/u"),
        ("MY_TOKEN", "t"),
        ("KEEP_ME", "k"),
        ("SECRET", "s"),
        ("COLOR", "red"),
        ("PERL5LIB", "/p"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let env = info.script_env(submitter.into_iter());
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "COLOR", "GREETING", "HOME", "KEEP_ME", "MY_TOKEN", "PATH", "PERL5LIB", "QUOTE", "SIZE"
        ]
    );
    let get = |k: &str| env.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str());
    assert_eq!(
        get("COLOR"),
        Some("blue"),
        "ENV SET overrides the submitter's"
    );
    assert_eq!(
        (get("GREETING"), get("QUOTE")),
        (Some("hello world"), Some("it's"))
    );
    // A real script run with that environment.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("env.log");
    let run = formats::dagman::Invocation {
        executable: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            "echo \"$COLOR|$GREETING|${SECRET-unset}\"".into(),
        ],
        debug: Some((log.clone(), true, true)),
        env,
        dir: dir.path().to_path_buf(),
        label: "Node=A Type=PRE".into(),
        streams: Default::default(),
    };
    assert_eq!(run.run_blocking(), 0);
    // DAGMan's banner, then the output.
    let text = std::fs::read_to_string(&log).unwrap();
    let (banner, output) = text.split_once('\n').unwrap();
    assert!(
        banner.starts_with("*** Node=A Type=PRE ExitCode=0 Completion=")
            && banner.ends_with(" Cmd='/bin/sh -c echo \"$COLOR|$GREETING|${SECRET-unset}\"'"),
        "{text}"
    );
    assert_eq!(output, "blue|hello world|unset\n");
    for (bad, what) in [
        ("ENV PUT A=1", "expected SET or GET"),
        ("ENV SET", "expected variables"),
        ("ENV SET A", "no key=value"),
        ("SET_JOB_ATTR nothing", "key = value"),
    ] {
        let e = parse(&format!("JOB A a.sub\n{bad}\n")).unwrap_err();
        assert!(e.contains("line 2: ") && e.contains(what), "{bad}: {e}");
    }
}

/// Rescue DAGs as DAGMan writes and finds them (HTCondor manual, "The
/// Rescue DAG"): a failed run of `w.dag` writes `w.dag.rescue001` with a
/// `DONE` line per node that ended well; the next run starts from it, runs
/// only the rest, and writes `rescue002` when it fails again; a run that
/// succeeds writes none. `--no-rescue` and `--rescue-from N` choose as
/// `-AutoRescue 0` and `-DoRescueFrom N` do, the latter renaming the newer
/// rescues to `.old`.
#[test]
fn a_failed_dag_writes_dagmans_rescue_and_the_next_run_starts_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let dag =
        "JOB a n.sub\nJOB b n.sub\nJOB c n.sub\nJOB d n.sub\nPARENT a CHILD b\nPARENT b CHILD c\n";
    let tb = dag_testbed(dir.path(), dag, "", "");
    // b fails on every attempt (a .dag node without RETRY has one).
    std::fs::write(
        dir.path().join("w.toml"),
        "[[job]]\nname = \"b\"\nexit = [1]\n",
    )
    .unwrap();
    let run =
        |args: &[&str]| crate::common::run_testbed(&tb, &[&["--engine", "sim"], args].concat());
    let rescue = |n: u32| dir.path().join(format!("w.dag.rescue{n:03}"));
    let (code, _, err) = run(&[]);
    assert_eq!(code, Some(1), "{err}");
    let first = std::fs::read_to_string(rescue(1)).unwrap();
    assert!(
        first.starts_with("# Rescue DAG file, created after running\n#   the "),
        "{first}"
    );
    assert!(first.contains("# Rescue DAG version: 2.1.0\n"), "{first}");
    assert!(
        first.contains("# Total number of Nodes: 4\n# Nodes premarked DONE: 2\n# Nodes that failed: 1\n#   b,<ENDLIST>\n\nDONE a\nDONE d\n"),
        "{first}"
    );
    // The next run starts from it: a and d are DONE, b fails again.
    let (code, _, err) = run(&[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("w.dag.rescue001: 2 nodes already DONE"),
        "{err}"
    );
    let second = std::fs::read_to_string(rescue(2)).unwrap();
    assert!(second.contains("DONE a\nDONE d\n"), "{second}");
    // Its metrics name the rescue it ran from; a and d, DONE from the
    // start, count as succeeded nodes, b as failed; b alone was submitted.
    let m = metrics(&dir.path().join("w.dag.metrics"));
    let want = [
        ("exitcode", 1),
        ("DagStatus", 2),
        ("rescue_dag_number", 1),
        ("nodes_succeeded", 2),
        ("nodes_failed", 1),
        ("total_nodes_run", 3),
        ("jobs_submitted", 1),
    ];
    assert_metrics(&m, &want, "sim");
    // --rescue-from a number that does not exist is bad input.
    let (code, _, err) = run(&["--rescue-from", "7"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no rescue DAG number 7"), "{err}");
    // --no-rescue runs every node again (and still writes the next rescue).
    let (code, _, err) = run(&["--no-rescue"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("already DONE"), "{err}");
    assert!(rescue(3).exists());
    // b now succeeds: the run from the newest rescue completes, no rescue004.
    std::fs::write(
        dir.path().join("w.toml"),
        "[[job]]\nname = \"b\"\nexit = [0]\n",
    )
    .unwrap();
    let (code, _, err) = run(&[
        "--rescue-from",
        "1",
        "--json",
        dir.path().join("r.json").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("w.dag.rescue001: 2 nodes already DONE"),
        "{err}"
    );
    let m = metrics(&dir.path().join("w.dag.metrics"));
    assert_metrics(
        &m,
        &[("exitcode", 0), ("DagStatus", 0), ("rescue_dag_number", 1)],
        "sim",
    );
    assert!(!rescue(4).exists());
    // As -DoRescueFrom 1 does, the newer rescues became `.old`.
    assert!(!rescue(2).exists() && !rescue(3).exists());
    assert!(dir.path().join("w.dag.rescue003.old").exists());
    // An edited DAG whose rescue names a node it no longer has is refused
    // at the rescue's line.
    std::fs::write(
        dir.path().join("w.dag"),
        "JOB a n.sub\nJOB b n.sub\nJOB c n.sub\n",
    )
    .unwrap();
    let (code, _, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("w.dag.rescue001") && err.contains("DONE d: the DAG has no such node"),
        "{err}"
    );
}

/// `a` and five 1000 s nodes `r1`..`r5` that each write a file and have a
/// POST script, FINAL `fin` with one; with `abort`, `a` exits 7 at 10 s
/// and `ABORT-DAG-ON a 7 RETURN 4` stops the DAG while r1..r5 run. Every
/// script writes to `scripts.log`; the site has six slots.
fn five_running_testbed(dir: &Path, abort: bool) -> std::path::PathBuf {
    let mut dag = String::from("JOB a n.sub\nFINAL fin n.sub\n");
    let mut sidecar = String::from("[[job]]\nname = \"a\"\nruntime = 10\n");
    if abort {
        dag.push_str("ABORT-DAG-ON a 7 RETURN 4\n");
        sidecar.push_str("exit = [7]\n");
    }
    for i in 1..6 {
        dag.push_str(&format!(
            "JOB r{i} n.sub\nSCRIPT DEBUG scripts.log STDOUT POST r{i} post.sh $JOB $RETURN\n"
        ));
        sidecar.push_str(&format!(
            "[[file]]\nname = \"out{i}\"\nsize = 1000\n[[job]]\nname = \"r{i}\"\nruntime = 1000\noutputs = [\"out{i}\"]\n"
        ));
    }
    dag.push_str("SCRIPT DEBUG scripts.log STDOUT POST fin post.sh $JOB $RETURN\n");
    let tb = dag_testbed_on(dir, &dag, "", "scripts = \"run\"", 6);
    std::fs::write(dir.join("w.toml"), sidecar).unwrap();
    let post = dir.join("post.sh");
    crate::common::executable(&post, POST_SH);
    tb
}

/// r1..r5 were removed at `at` (nominal s) before they ended: attempt
/// removed, output not registered, no POST script run; FINAL ran after.
fn assert_five_removed(run: &gridbed::core::result::RunResult, s: &gridbed::config::Scenario) {
    use gridbed::core::records::Outcome;
    let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
    let stop = run.records.jobs[job("r1")].attempts[0].ended.unwrap();
    for i in 1..6 {
        let attempts = &run.records.jobs[job(&format!("r{i}"))].attempts;
        assert_eq!(attempts.len(), 1, "r{i} is not retried");
        let a = &attempts[0];
        assert!(
            matches!(&a.outcome, Outcome::Removed(_)),
            "r{i}: {:?}",
            a.outcome
        );
        assert_eq!((a.finished, a.ended), (None, Some(stop)), "r{i}");
        let out = s
            .workflow
            .files
            .iter()
            .position(|f| f.name == format!("out{i}"))
            .unwrap();
        assert!(run.rls.holders(out).is_empty(), "out{i} registered");
    }
    assert!(stop < 1000.0, "removed long before their end: {stop}");
    let fin = &run.records.jobs[job("fin")].attempts[0];
    assert!(fin.prescript >= stop, "FINAL ran after the removal");
    assert!(run.makespan < 1000.0, "{}", run.makespan);
}

/// The issue's case (HTCondor's main_shutdown_rescue): ABORT-DAG-ON with
/// five jobs running removes them all in both engines, none registers its
/// output or runs its POST script, FINAL runs, and FINAL's success is the
/// DAG's (Dag::DoneSuccess) while the DAG's stop value is RETURN's 4.
#[test]
fn abort_dag_on_removes_five_running_jobs_in_both_engines_then_final_runs() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let s = load(&five_running_testbed(dir.path(), true));
        let run = match engine {
            "sim" => gridbed::sim::run(&s).unwrap().result,
            _ => gridbed::live::run(&s, Default::default()).unwrap().result,
        };
        assert_five_removed(&run, &s);
        let stop = run.dag_stop.expect("stopped");
        assert_eq!((stop.status, stop.dag_return), (7, 4), "{engine}");
        assert!(run.succeeded, "{engine}: FINAL ended well");
        let log = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("scripts.log")).unwrap(),
        );
        assert_eq!(log, "fin returned 0\n", "{engine}: only FINAL's POST ran");
    }
    // Through `gridbed run`: DAGMan writes the rescue at the stop, before
    // FINAL, so there is one though the run succeeded.
    let dir = tempfile::tempdir().unwrap();
    let tb = five_running_testbed(dir.path(), true);
    let catalog = crate::common::catalog();
    let (code, said, err) = crate::common::gridbed(&[
        "run".as_ref(),
        tb.as_os_str(),
        "--sites".as_ref(),
        catalog.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        said.contains("the DAG stopped (ABORT-DAG-ON: node `a` exited 7)")
            && said.contains("exit value 4"),
        "{said}"
    );
    let rescue = std::fs::read_to_string(dir.path().join("w.dag.rescue001")).unwrap();
    assert!(
        rescue.contains("# Nodes premarked DONE: 0\n# Nodes that failed: 6\n"),
        "{rescue}"
    );
    // DAGMan's metrics: the stop's DagStatus (3) stays; FINAL's success is
    // the exit; with a FINAL node to wait for, DAGMan reads the five
    // removals, so they count as failed nodes and as jobs out of the queue.
    let m = metrics(&dir.path().join("w.dag.metrics"));
    let want = [
        ("exitcode", 0),
        ("DagStatus", 3),
        ("nodes", 7),
        ("nodes_failed", 6),
        ("nodes_succeeded", 1),
        ("jobs_submitted", 7),
        ("jobs_succeeded", 7),
        ("jobs_failed", 0),
    ];
    assert_metrics(&m, &want, "run");
    assert_eq!(m["has_final_node"], true, "{m}");
}

/// Ctrl-C of a live `gridbed run` removes the DAG as `condor_rm` of
/// DAGMan does (main_shutdown_remove): its running jobs are removed, FINAL
/// runs, and the rescue DAG is written (the removal's exit value is 2,
/// EXIT_ABORT); FINAL's success is the DAG's, so the jobstate log ends
/// with DAGMan's 0, as ExitSuccess writes it, and the process exits 130.
#[test]
fn ctrl_c_removes_the_running_jobs_runs_final_and_writes_the_rescue() {
    let dir = tempfile::tempdir().unwrap();
    let tb = five_running_testbed(dir.path(), false);
    // Each r node's PRE script marks that its job is about to start.
    let marks = dir.path().join("pre.log");
    let pre = dir.path().join("pre.sh");
    let text = format!("#!/bin/sh\necho \"$1\" >> '{}'\n", marks.display());
    crate::common::executable(&pre, &text);
    let mut dag = std::fs::read_to_string(dir.path().join("w.dag")).unwrap();
    for i in 1..6 {
        dag.push_str(&format!("SCRIPT PRE r{i} pre.sh $JOB\n"));
    }
    dag.push_str("JOBSTATE_LOG j.log\n");
    std::fs::write(dir.path().join("w.dag"), dag).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", tb.to_str().unwrap(), "--sites"])
        .arg(crate::common::catalog())
        .args(["--json", "r.json"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The r jobs run 20 s of real time once their PRE scripts are over.
    let marked = || std::fs::read_to_string(&marks).map_or(0, |t| t.lines().count());
    for _ in 0..400 {
        if marked() == 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = std::process::Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status();
    let out = child.wait_with_output().unwrap();
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // FINAL ended well, the DAG's exit value is 0; the process says it
    // was stopped by the signal (issue 61).
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("SIGINT: stopping"), "{err}");
    assert!(
        said.contains("the DAG stopped (removed by the user)"),
        "{said}"
    );
    assert!(said.contains("exit value 2"), "{said}");
    assert!(dir.path().join("w.dag.rescue001").exists(), "{said}");
    let scripts = crate::common::script_output(
        &std::fs::read_to_string(dir.path().join("scripts.log")).unwrap(),
    );
    assert_eq!(scripts, "fin returned 0\n");
    let jobstate = std::fs::read_to_string(dir.path().join("j.log")).unwrap();
    assert!(jobstate.contains("DAGMAN_FINISHED 0"), "{jobstate}");
    assert_eq!(
        jobstate.matches("JOB_ABORTED").count(),
        5,
        "each removed job's abort is logged: {jobstate}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(record["summary"]["jobs_failed"], 5, "{record}");
    assert!(record["summary"]["makespan_s"].as_f64().unwrap() < 1000.0);
}

/// `a` (10 s) and `c` (300 s) run side by side; `a`'s POST script creates
/// the DAG's halt file. `b` and `d` (with a PRE script) are `a`'s
/// children, and FINAL's PRE script reports `$DAG_STATUS`.
fn halted_testbed(dir: &Path) -> std::path::PathBuf {
    let dag = "JOB a n.sub\nJOB b n.sub\nJOB c n.sub\nJOB d n.sub\nPARENT a CHILD b d\n\
               SCRIPT POST a halt.sh\nSCRIPT PRE d pre.sh\nFINAL fin n.sub\n\
               SCRIPT DEBUG scripts.log STDOUT PRE fin post.sh $JOB $DAG_STATUS\n\
               NODE_STATUS_FILE w.status\n";
    let tb = dag_testbed_on(dir, dag, "", "scripts = \"run\"", 4);
    std::fs::write(dir.join("w.toml"), "[[job]]\nname = \"c\"\nruntime = 300\n").unwrap();
    crate::common::executable(&dir.join("post.sh"), POST_SH);
    crate::common::executable(&dir.join("pre.sh"), "#!/bin/sh\necho d >> pre.log\n");
    // It waits a little after, as HTCondor's final-I's node does, so that
    // DAGMan sees the file before the node's children are ready.
    crate::common::executable(
        &dir.join("halt.sh"),
        "#!/bin/sh\ntouch w.dag.halt\nsleep 1\n",
    );
    tb
}

/// DAGMan's halt file (HTCondor's `condor_event_timer`, `final-I`): once it
/// appears nothing starts, neither a job nor a PRE script; what runs ends;
/// then the DAG stops, writes its rescue DAG, and FINAL runs with
/// `$DAG_STATUS` 6 and decides the exit. The node whose PRE script waited
/// is failed in the status file ("Was STATUS_PRERUN"), the other one not
/// ready. In both engines, through `gridbed run`; a stale halt file is
/// removed as the DAG is submitted.
#[test]
fn a_halt_file_starts_nothing_more_lets_the_running_job_end_then_final_runs() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let tb = halted_testbed(dir.path());
        std::fs::write(dir.path().join("w.dag.halt"), "").unwrap();
        let catalog = crate::common::catalog();
        let (code, said, err) = crate::common::gridbed(&[
            "run".as_ref(),
            tb.as_os_str(),
            "--sites".as_ref(),
            catalog.as_os_str(),
            "--engine".as_ref(),
            engine.as_ref(),
            "--json".as_ref(),
            dir.path().join("r.json").as_os_str(),
        ]);
        assert_eq!(code, Some(0), "{engine}: FINAL ended well: {err}");
        assert!(said.contains("the DAG was halted"), "{engine}: {said}");
        assert!(
            dir.path().join("w.dag.rescue001").exists(),
            "{engine}: {said}"
        );
        assert!(
            !dir.path().join("pre.log").exists(),
            "{engine}: d's PRE script ran"
        );
        let scripts = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("scripts.log")).unwrap(),
        );
        assert_eq!(scripts, "fin returned 6\n", "{engine}: DAG_STATUS_HALTED");
        let status = std::fs::read_to_string(dir.path().join("w.status")).unwrap();
        for want in [
            "DagStatus = 5; /* \"STATUS_DONE (success)\" */",
            "NodesDone = 3;",
            "NodesUnready = 1;",
            "NodesFailed = 1;",
            "Node = \"b\";\n  NodeStatus = 0;",
            "Node = \"c\";\n  NodeStatus = 5;",
            "Node = \"d\";\n  NodeStatus = 6; /* \"STATUS_ERROR\" */\n  StatusDetails = \"Was STATUS_PRERUN\";",
        ] {
            assert!(status.contains(want), "{engine}: no {want:?} in\n{status}");
        }
        // `c` ran to its end: the halt waited for it.
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap())
                .unwrap();
        assert!(
            record["summary"]["makespan_s"].as_f64().unwrap() >= 300.0,
            "{engine}"
        );
    }
}

/// A sub-DAG's own halt file (`inner.dag.halt`, its DAGMan's): `s+x`'s
/// POST script creates it, so the sub-DAG's DAGMan starts nothing more
/// (`s+y` never runs), stops, and runs its FINAL node with `$DAG_STATUS` 6,
/// whose PRE script then fails, so that the sub-DAG's DAGMan exits 1,
/// while the top DAG goes on (`c` runs). Without RETRY `s` fails
/// and so does the DAG; with `RETRY s 1` its new DAGMan removes the stale
/// file as it is submitted, runs from the rescue (`s+x` DONE) and ends
/// well. Both engines.
#[test]
fn a_subdags_own_halt_file_halts_its_dagman_alone_and_a_retry_submits_it_anew() {
    for engine in ["sim", "live"] {
        for retry in [0, 1] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let top = format!(
                "JOB a n.sub\nSUBDAG EXTERNAL s inner.dag\nJOB c n.sub\nPARENT a CHILD s\n\
                 RETRY s {retry}\n"
            );
            std::fs::write(
                d.join("inner.dag"),
                "JOB x n.sub\nJOB y n.sub\nPARENT x CHILD y\nSCRIPT POST x halt.sh\n\
                 FINAL f n.sub\nSCRIPT PRE f fin.sh $DAG_STATUS\n",
            )
            .unwrap();
            let tb = dag_testbed(d, &top, "", "scripts = \"run\"");
            std::fs::write(d.join("w.toml"), "").unwrap();
            crate::common::executable(
                &d.join("halt.sh"),
                "#!/bin/sh\ntouch inner.dag.halt\nsleep 1\n",
            );
            // FINAL decides a halted DAG's exit: it fails after a halt.
            let fin = "#!/bin/sh\necho $1 >> fin.log\ntest \"$1\" != 6\n";
            crate::common::executable(&d.join("fin.sh"), fin);
            let s = load(&tb);
            let run = match engine {
                "sim" => gridbed::sim::run(&s).unwrap().result,
                _ => gridbed::live::run(&s, Default::default()).unwrap().result,
            };
            let job = |n: &str| run.workflow.jobs.iter().position(|j| j.name == n).unwrap();
            let attempts = |n: &str| run.records.jobs[job(n)].attempts.len();
            let counts: Vec<usize> = ["a", "s+x", "s+y", "s", "c"].map(attempts).to_vec();
            let fin = std::fs::read_to_string(d.join("fin.log")).unwrap();
            let s_exit = run.records.jobs[job("s")].attempts[0].exit;
            assert_eq!(
                s_exit,
                Some(1),
                "{engine} {retry}: the halted DAGMan's exit"
            );
            assert!(
                run.dag_stop.is_none(),
                "{engine} {retry}: the top DAG went on"
            );
            match retry {
                0 => {
                    assert!(!run.succeeded, "{engine}");
                    assert_eq!(counts, [1, 1, 0, 1, 1], "{engine}: attempts");
                    assert_eq!(fin, "6\n", "{engine}: FINAL's $DAG_STATUS");
                }
                _ => {
                    assert!(run.succeeded, "{engine}: {:?}", run.counts);
                    assert_eq!(counts, [1, 1, 1, 2, 1], "{engine}: attempts");
                    assert_eq!(fin, "6\n0\n", "{engine}: FINAL's $DAG_STATUS");
                }
            }
        }
    }
}

/// A POST script that reports `$RETURN` and exits with it.
const POST_PASS_SH: &str = "#!/bin/sh\necho \"$1 returned $2\"\nexit $2\n";

/// `a`, then the sub-DAG `s` (`inner.dag`: `x` then `y`, and `w1`..`w3`
/// of category `wide` with `MAXJOBS wide 1`), then `z`. `s+y` exits as
/// `y_exits` says; `s` has a POST script that reports and passes on
/// `$RETURN`, and `retry` retries.
fn subdag_testbed(dir: &Path, y_exits: &str, retry: u32) -> std::path::PathBuf {
    let top = format!(
        "JOB a n.sub\nSUBDAG EXTERNAL s inner.dag\nJOB z n.sub\nPARENT a CHILD s\n\
         PARENT s CHILD z\nRETRY s {retry}\n\
         SCRIPT DEBUG scripts.log STDOUT POST s post.sh $JOB $RETURN\n"
    );
    std::fs::write(
        dir.join("inner.dag"),
        "JOB x n.sub\nJOB y n.sub\nJOB w1 n.sub\nJOB w2 n.sub\nJOB w3 n.sub\n\
         PARENT x CHILD y\nCATEGORY w1 wide\nCATEGORY w2 wide\nCATEGORY w3 wide\n\
         MAXJOBS wide 1\n",
    )
    .unwrap();
    let tb = dag_testbed(dir, &top, "", "scripts = \"run\"");
    std::fs::write(
        dir.join("w.toml"),
        format!("[[job]]\nname = \"s+y\"\nexit = {y_exits}\n"),
    )
    .unwrap();
    let post = dir.join("post.sh");
    crate::common::executable(&post, POST_PASS_SH);
    tb
}

/// The issue's SUBDAG case, after HTCondor's manual ("SUBDAG EXTERNAL",
/// "The Rescue DAG"): `s+y` fails once, so the sub-DAG's DAGMan exits 1;
/// the POST script of `s` sees `$RETURN` 1 and passes it on; `RETRY s 1`
/// runs the sub-DAG again from its rescue (`x` and `w1`..`w3` stay DONE),
/// `y` succeeds, POST sees 0 and `z` runs. `MAXJOBS wide 1` of the
/// sub-DAG holds throughout. Both engines.
#[test]
fn a_failing_subdag_with_retry_reruns_from_its_rescue_and_its_post_sees_the_status() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let s = load(&subdag_testbed(dir.path(), "[1, 0]", 1));
        let run = match engine {
            "sim" => gridbed::sim::run(&s).unwrap().result,
            _ => gridbed::live::run(&s, Default::default()).unwrap().result,
        };
        assert!(run.succeeded, "{engine}: {:?}", run.counts);
        let job = |n: &str| run.workflow.jobs.iter().position(|j| j.name == n).unwrap();
        let attempts = |n: &str| run.records.jobs[job(n)].attempts.len();
        let counts: Vec<usize> = ["a", "s+x", "s+y", "s+w1", "s", "z"]
            .iter()
            .map(|n| attempts(n))
            .collect();
        assert_eq!(counts, [1, 1, 2, 1, 2, 1], "{engine}: attempts");
        let log = crate::common::script_output(
            &std::fs::read_to_string(dir.path().join("scripts.log")).unwrap(),
        );
        assert_eq!(
            log, "s returned 1\ns returned 0\n",
            "{engine}: POST's $RETURN"
        );
        let s_attempts = &run.records.jobs[job("s")].attempts;
        assert_eq!(s_attempts[0].exit, Some(1), "{engine}: the sub-DAG's exit");
        assert_eq!(run.subdag_runs_failed.len(), 1, "{engine}");
        // MAXJOBS wide 1: the w nodes' flights never overlap.
        let mut spans: Vec<(f64, f64)> = ["s+w1", "s+w2", "s+w3"]
            .iter()
            .map(|n| {
                let a = &run.records.jobs[job(n)].attempts[0];
                (a.prescript, a.ended.unwrap())
            })
            .collect();
        spans.sort_by(|p, q| p.0.total_cmp(&q.0));
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0 + 1e-9, "{engine}: {spans:?}");
        }
    }
    // Through `gridbed run`: the sub-DAG's failed run wrote its rescue,
    // DAGMan's way, beside inner.dag; the DAG succeeded, so no rescue of
    // its own.
    let dir = tempfile::tempdir().unwrap();
    let tb = subdag_testbed(dir.path(), "[1, 0]", 1);
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", "sim"]);
    assert_eq!(code, Some(0), "{err}");
    let rescue = std::fs::read_to_string(dir.path().join("inner.dag.rescue001")).unwrap();
    assert!(
        rescue.contains(
            "# Total number of Nodes: 5\n# Nodes premarked DONE: 4\n# Nodes that failed: 1\n#   y,<ENDLIST>\n\nDONE x\nDONE w1\nDONE w2\nDONE w3\n"
        ),
        "{rescue}"
    );
    assert!(!dir.path().join("w.dag.rescue001").exists());
}

/// A sub-DAG that fails for good: the top DAG's rescue names `s` (not
/// its nodes) as not done, the sub-DAG's rescue its own nodes; the next
/// run starts from both, running only `s+y` (and `s`, and what follows).
#[test]
fn a_subdag_that_fails_writes_both_rescues_and_the_next_run_starts_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let tb = subdag_testbed(dir.path(), "[1]", 0);
    let run =
        |args: &[&str]| crate::common::run_testbed(&tb, &[&["--engine", "sim"], args].concat());
    let (code, _, err) = run(&[]);
    assert_eq!(code, Some(1), "{err}");
    let top = std::fs::read_to_string(dir.path().join("w.dag.rescue001")).unwrap();
    assert!(
        top.contains("# Total number of Nodes: 3\n# Nodes premarked DONE: 1\n# Nodes that failed: 1\n#   s,<ENDLIST>\n\nDONE a\n"),
        "{top}"
    );
    assert!(!top.contains("s+"), "{top}");
    assert!(dir.path().join("inner.dag.rescue001").exists());
    // The next run: a DONE from the top rescue, x and w1..w3 from the
    // sub-DAG's; y fails again, so each writes its next rescue.
    let (code, _, err) = run(&["--json", dir.path().join("r.json").to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("w.dag.rescue001: 1 nodes already DONE"),
        "{err}"
    );
    assert!(
        err.contains("inner.dag.rescue001: 4 nodes already DONE"),
        "{err}"
    );
    assert!(dir.path().join("inner.dag.rescue002").exists());
    assert!(dir.path().join("w.dag.rescue002").exists());
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    // a, x, w1..w3 were DONE before the run: only y and s ran (and failed).
    assert_eq!(record["summary"]["jobs_failed"], 2, "{record}");
}

/// SERVICE and PROVISIONER read as HTCondor's parser reads them, and
/// refused where it refuses them (`parse.cpp`, `Dag::AddNode`).
#[test]
fn service_and_provisioner_nodes_read_and_are_refused_where_htcondor_refuses_them() {
    let (info, names, edges) = parse(
        "SERVICE S s.sub DIR d\nPROVISIONER P p.sub\nJOB A a.sub\nRETRY ALL_NODES 2\n\
         SERVICE T t.sub DONE\nPARENT P CHILD A\n",
    )
    .unwrap();
    assert_eq!(names, ["S", "P", "A", "T"]);
    assert!(node(&info, "S").is_service && !node(&info, "S").is_provisioner);
    assert!(node(&info, "P").is_provisioner);
    assert_eq!(node(&info, "S").dir.as_deref(), Some("d"));
    // ALL_NODES reaches no SERVICE node; DONE on one is ignored (a warning).
    assert_eq!((node(&info, "S").retry, node(&info, "A").retry), (0, 2));
    assert!(!node(&info, "T").done);
    assert_eq!(edges.len(), 1);
    assert_refused_at(&[
        (
            "SERVICE S s.sub\nRETRY S 2\n",
            2,
            "SERVICE node, which cannot have a RETRY",
        ),
        (
            "SERVICE S s.sub\nPRIORITY S 2\n",
            2,
            "cannot have a PRIORITY",
        ),
        (
            "SERVICE S s.sub\nCATEGORY S c\n",
            2,
            "cannot have a CATEGORY",
        ),
        (
            "PROVISIONER P p.sub\nPROVISIONER Q q.sub\n",
            2,
            "a second PROVISIONER",
        ),
        (
            "JOB A a.sub\nSERVICE S s.sub\nPARENT A CHILD S\n",
            3,
            "is a SERVICE node",
        ),
    ]);
}

/// `TOLERANCE` as HTCondor's `DagParser::ParseTolerance` reads it: a
/// count or a percentage (`n%` or `n %`), then FAIL-FAST or WAIT; ALL_NODES
/// reaches every node but FINAL, which may be named. A sub-DAG's nodes take its own CONFIG's
/// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE`, not the top DAG's.
#[test]
fn tolerance_reads_counts_and_percentages_and_is_refused_where_dagman_refuses_it() {
    use formats::dagman::Tolerance;
    let (info, _, _) = parse(
        "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nFINAL F f.sub\nTOLERANCE ALL_NODES 2\n\
         TOLERANCE A 50% FAIL-FAST\nTOLERANCE B 100 % wait\nTOLERANCE F 1\n",
    )
    .unwrap();
    let t = |n: &str| node(&info, n).tolerance;
    let count = |value| Tolerance {
        value,
        percent: false,
    };
    assert_eq!(
        t("A"),
        Some(Tolerance {
            value: 50,
            percent: true
        })
    );
    assert_eq!(
        t("B"),
        Some(Tolerance {
            value: 100,
            percent: true
        })
    );
    assert_eq!((t("C"), t("F")), (Some(count(2)), Some(count(1))));
    assert!(
        !t("A").unwrap().tolerates_one_failure(),
        "50% of one job is 0"
    );
    assert!(t("B").unwrap().tolerates_one_failure());
    let (info, _, _) = parse_files(&[
        (
            "top.dag",
            "CONFIG top.cfg\nJOB A a.sub\nSUBDAG EXTERNAL S in.dag\n",
        ),
        ("top.cfg", "DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 1\n"),
        (
            "in.dag",
            "CONFIG in.cfg\nJOB X x.sub\nJOB Y y.sub\nTOLERANCE Y 5\n",
        ),
        ("in.cfg", "DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 3\n"),
    ])
    .unwrap();
    assert_eq!(info.node_job_failure_tolerance, Some(1));
    assert_eq!(node(&info, "A").tolerance, None, "the top DAG's default");
    assert_eq!(node(&info, "S+X").tolerance, Some(count(3)));
    assert_eq!(node(&info, "S+Y").tolerance, Some(count(5)));
    assert_refused_at(&[
        (
            "JOB A a.sub\nTOLERANCE A\n",
            2,
            "expected a failure tolerance value",
        ),
        ("JOB A a.sub\nTOLERANCE A %\n", 2, "Empty percentage"),
        (
            "JOB A a.sub\nTOLERANCE A -1\n",
            2,
            "Invalid tolerance value '-1'",
        ),
        (
            "JOB A a.sub\nTOLERANCE A 1 SOON\n",
            2,
            "Unexpected token 'SOON'",
        ),
        ("JOB A a.sub\nTOLERANCE Z 1\n", 2, "unknown node `Z`"),
    ]);
}

/// `SAVE_POINT_FILE` as HTCondor's `parse_save_point_file` reads it: a
/// file name, or `node-dagfile.save`; refused for ALL_NODES, an extra
/// word, and a node that is no JOB (FINAL, SERVICE, PROVISIONER).
#[test]
fn save_point_file_names_its_file_and_is_refused_where_dagman_refuses_it() {
    let (info, _, _) =
        parse("JOB A a.sub\nJOB B b.sub\nSAVE_POINT_FILE A\nSAVE_POINT_FILE B b.save\n").unwrap();
    assert_eq!(node(&info, "A").save_point.as_deref(), Some("A-w.dag.save"));
    assert_eq!(node(&info, "B").save_point.as_deref(), Some("b.save"));
    assert_refused_at(&[
        (
            "JOB A a.sub\nSAVE_POINT_FILE ALL_NODES\n",
            2,
            "does not allow ALL_NODES",
        ),
        (
            "JOB A a.sub\nSAVE_POINT_FILE A a.save extra\n",
            2,
            "Extra token (extra)",
        ),
        ("FINAL F f.sub\nSAVE_POINT_FILE F\n", 2, "is the FINAL node"),
        (
            "SERVICE S s.sub\nSAVE_POINT_FILE S\n",
            2,
            "neither SERVICE nor PROVISIONER",
        ),
        ("JOB A a.sub\nSAVE_POINT_FILE Z\n", 2, "unknown node `Z`"),
    ]);
}

/// Each save file records its own DAGMan's nodes: a sub-DAG node's is the
/// top DAG's state as it starts (before its DAG's nodes), beside the top
/// `.dag`; a node inside the sub-DAG writes beside the sub-DAG's `.dag`,
/// with the names it has there; a spliced node's has its full name. Both
/// engines.
#[test]
fn save_points_in_a_subdag_and_a_splice_write_their_own_dagmans_state() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(
            d.join("sub/inner.dag"),
            "JOB X x.sub\nJOB Y y.sub\nPARENT X CHILD Y\nSAVE_POINT_FILE Y\n",
        )
        .unwrap();
        std::fs::write(d.join("piece.dag"), "JOB P p.sub\nSAVE_POINT_FILE P\n").unwrap();
        let top = "JOB A a.sub\nSUBDAG EXTERNAL S sub/inner.dag\nSPLICE L piece.dag\n\
                   PARENT A CHILD S\nPARENT S CHILD L\nSAVE_POINT_FILE S\n";
        let tb = dag_testbed(d, top, "", "");
        std::fs::write(d.join("w.toml"), "").unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let read = |p: &str| std::fs::read_to_string(d.join(p)).unwrap();
        let s = read("save_files/S-w.dag.save");
        assert!(
            s.starts_with("# Save file written at Start Node S\n"),
            "{s}"
        );
        assert!(
            s.contains("# Total number of Nodes: 3\n"),
            "{engine}: A, S, L+P: {s}"
        );
        assert!(s.ends_with("\n\nDONE A\n"), "{engine}: {s}");
        let y = read("sub/save_files/Y-inner.dag.save");
        assert!(y.contains("# Total number of Nodes: 2\n"), "{engine}: {y}");
        assert!(y.ends_with("\n\nDONE X\n"), "{engine}: {y}");
        let p = read("save_files/P-piece.dag.save");
        assert!(
            p.starts_with("# Save file written at Start Node L+P\n"),
            "{p}"
        );
        assert!(p.ends_with("DONE A\nDONE S\n"), "{engine}: {p}");
    }
}

/// A SERVICE node runs beside the DAG and is removed at its end, after
/// FINAL; no node starts before the PROVISIONER's job runs. Both engines.
#[test]
fn a_service_is_removed_at_the_dags_end_and_the_provisioner_runs_first_in_both_engines() {
    // Written in the DAG, or in a splice (lifted into the DAG, as DAGMan
    // lifts splices).
    let nodes = "SERVICE svc n.sub\nPROVISIONER prov n.sub\n";
    let rest = "JOB a n.sub\nJOB b n.sub\nPARENT a CHILD b\nFINAL fin n.sub\n";
    for (dag, spliced, pre) in [
        (format!("{nodes}{rest}"), None, ""),
        (format!("SPLICE S s.dag\n{rest}"), Some(nodes), "S+"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        if let Some(text) = spliced {
            std::fs::write(dir.path().join("s.dag"), text).unwrap();
        }
        let tb = dag_testbed(dir.path(), &dag, "", "");
        let sidecar = format!(
            "[[job]]\nname = \"{pre}svc\"\nruntime = 1000\n[[job]]\nname = \"{pre}prov\"\nruntime = 50\n"
        );
        std::fs::write(dir.path().join("w.toml"), sidecar).unwrap();
        let s = load(&tb);
        let sim = gridbed::sim::run(&s).unwrap().result;
        let live = gridbed::live::run(&s, Default::default()).unwrap().result;
        let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
        for (engine, run) in [("sim", &sim), ("live", &live)] {
            assert!(run.succeeded, "{engine}: {:?}", run.counts);
            let at = |n: &str| &run.records.jobs[job(n)].attempts[0];
            let go = at(&format!("{pre}prov")).started.unwrap();
            assert!(at("a").prescript >= go, "{engine}: a before the go-ahead");
            assert!(
                at("a").prescript < 50.0,
                "{engine}: a waited for prov's end"
            );
            let fin_end = at("fin").ended.unwrap();
            assert!(fin_end < 1000.0, "{engine}: FINAL waited for the service");
            let svc = at(&format!("{pre}svc"));
            assert!(
                matches!(svc.outcome, gridbed::core::records::Outcome::Removed(_)),
                "{engine}: {:?}",
                svc.outcome
            );
            assert!(run.makespan < 1000.0, "{engine}: {}", run.makespan);
        }
    }
}

/// A sub-DAG's own PROVISIONER runs first in its DAG, as its own DAGMan
/// runs it: the sub-DAG's other nodes start once its job runs (not before
/// the sub-DAG starts, not at its end), and the run again of a RETRY waits
/// for it again. Both engines.
#[test]
fn a_subdags_provisioner_runs_before_its_other_nodes_in_each_run_in_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.dag"),
        "PROVISIONER prov n.sub\nJOB a n.sub\nJOB b n.sub\nPARENT a CHILD b\n",
    )
    .unwrap();
    let dag = "JOB top n.sub\nSUBDAG EXTERNAL S s.dag\nRETRY S 1\nPARENT top CHILD S\n";
    let tb = dag_testbed_on(dir.path(), dag, "", "", 4);
    // S+b fails in the first run: the sub-DAG runs again from its rescue
    // (S+a done), and S+prov, which ended well, is DONE in it too.
    std::fs::write(
        dir.path().join("w.toml"),
        "[[job]]\nname = \"S+prov\"\nruntime = 50\n\
         [[job]]\nname = \"S+b\"\nruntime = 10\nexit = [3, 0]\n",
    )
    .unwrap();
    let s = load(&tb);
    let sim = gridbed::sim::run(&s).unwrap().result;
    let live = gridbed::live::run(&s, Default::default()).unwrap().result;
    let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
    for (engine, run) in [("sim", &sim), ("live", &live)] {
        assert!(run.succeeded, "{engine}: {:?}", run.counts);
        let attempts = |n: &str| &run.records.jobs[job(n)].attempts;
        let top_end = attempts("top")[0].ended.unwrap();
        let go = attempts("S+prov")[0].started.unwrap();
        assert!(
            go >= top_end,
            "{engine}: the provisioner ran before its sub-DAG"
        );
        let a = &attempts("S+a")[0];
        assert!(a.prescript >= go, "{engine}: S+a before the go-ahead");
        assert!(
            a.prescript < go + 50.0,
            "{engine}: S+a waited for the provisioner's end"
        );
        assert_eq!(attempts("S+a").len(), 1, "{engine}: S+a ran twice");
        assert_eq!(
            attempts("S+prov").len(),
            1,
            "{engine}: the provisioner ran twice"
        );
        assert_eq!(attempts("S+b").len(), 2, "{engine}: S+b ran once");
    }
}

/// A sub-DAG's own file sets its own PROVISIONER (beside the top DAG's)
/// and, in its CONFIG, its own `DAGMAN_MAX_PRE_SCRIPTS`.
#[test]
fn a_subdags_provisioner_and_max_pre_scripts_are_its_own() {
    let (info, _, _) = parse_files(&[
        (
            "top.dag",
            "PROVISIONER P p.sub\nJOB A a.sub\nSUBDAG EXTERNAL S in.dag\n",
        ),
        (
            "in.dag",
            "CONFIG in.cfg\nPROVISIONER V v.sub\nJOB X x.sub\n",
        ),
        ("in.cfg", "DAGMAN_MAX_PRE_SCRIPTS = 2\n"),
    ])
    .unwrap();
    let sub = &info.subdags[0];
    assert_eq!(sub.provisioner.as_deref(), Some("S+V"));
    assert_eq!(sub.max_pre, Some(2));
    assert_eq!(info.max_pre, None, "the top DAG's is not the sub-DAG's");
}

/// Where HTCondor refuses these nodes across files: a splice with a FINAL
/// node, a second PROVISIONER lifted from a splice, into the DAG or into a
/// sub-DAG's own DAG.
#[test]
fn final_in_a_splice_and_a_second_provisioner_from_one_are_refused() {
    for (files, what) in [
        (
            &[
                ("top.dag", "JOB A a.sub\nSPLICE S s.dag\n"),
                ("s.dag", "JOB X x.sub\nFINAL F f.sub\n"),
            ][..],
            "SPLICE S: it has a FINAL node (F). This is not permitted.",
        ),
        (
            &[
                ("top.dag", "PROVISIONER P p.sub\nSPLICE S s.dag\n"),
                ("s.dag", "PROVISIONER Q q.sub\n"),
            ][..],
            "PROVISIONER S+Q: the DAG already has a PROVISIONER node (P)",
        ),
        (
            &[
                ("top.dag", "PROVISIONER P p.sub\nSUBDAG EXTERNAL S s.dag\n"),
                ("s.dag", "PROVISIONER V v.sub\nSPLICE T t.dag\n"),
                ("t.dag", "PROVISIONER W w.sub\n"),
            ][..],
            "PROVISIONER T+W: the DAG already has a PROVISIONER node (V)",
        ),
    ] {
        let e = parse_files(files).unwrap_err();
        assert!(e.contains(what), "{what}: {e}");
    }
}

/// `WEAK PARENT` as HTCondor 25.x reads and runs it: a weak child runs
/// once its parent is over, even failed; an edge declared weak and strong
/// is strong; the rescue writes a failed node whose every child is weak
/// DONE, under DAGMan's comment.
#[test]
fn a_weak_edge_lets_its_child_run_after_a_failure_and_the_rescue_says_so() {
    let (info, _, edges) =
        parse("JOB a n.sub\nJOB b n.sub\nJOB c n.sub\nWEAK PARENT a CHILD b c\nPARENT a CHILD c\n")
            .unwrap();
    assert_eq!(edges.len(), 2);
    assert_eq!(info.weak_edges, [("a".to_string(), "b".to_string())]);
    let e = parse("JOB a n.sub\nJOB b n.sub\nWEAK a CHILD b\n").unwrap_err();
    assert!(
        e.contains("line 3:") && e.contains("WEAK dependency missing PARENT keyword"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let tb = dag_testbed(
        dir.path(),
        "JOB a n.sub\nJOB b n.sub\nWEAK PARENT a CHILD b\n",
        "",
        "",
    );
    std::fs::write(
        dir.path().join("w.toml"),
        "[[job]]\nname = \"a\"\nexit = [1]\n",
    )
    .unwrap();
    let s = load(&tb);
    let run = gridbed::sim::run(&s).unwrap().result;
    assert_eq!(run.records.jobs[1].attempts.len(), 1, "b ran");
    assert!(run.done[1] && !run.succeeded);
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", "sim"]);
    assert_eq!(code, Some(1), "{err}");
    let rescue = std::fs::read_to_string(dir.path().join("w.dag.rescue001")).unwrap();
    assert!(
        rescue.contains(
            "#   a,<ENDLIST>\n\n# Failed node with only weak child dependencies:\nDONE a\nDONE b\n"
        ),
        "{rescue}"
    );
}

/// A sub-DAG's own FINAL node, as its DAGMan runs it: last, once every
/// other node of the sub-DAG is over (after a failure too), its outcome the
/// sub-DAG's; it runs again with each run of the sub-DAG, and its rescue
/// never marks it DONE. Both engines.
#[test]
fn a_subdags_final_node_runs_last_and_decides_the_subdag() {
    let inner = "JOB X n.sub\nJOB Y n.sub\nPARENT X CHILD Y\nFINAL F n.sub\n\
                 JOBSTATE_LOG inner.log\n";
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nJOB T n.sub\n\
               PARENT A CHILD S\nPARENT S CHILD T\nJOBSTATE_LOG j.log\n";
    // (sidecar, RETRY of S, the DAG succeeds, runs of X, Y, F, T)
    let cases = [
        // X fails, Y never runs; F succeeds: so does the sub-DAG.
        (
            "[[job]]\nname = \"S+X\"\nexit = [1]\n",
            "",
            true,
            [1, 0, 1, 1],
        ),
        // F fails: the sub-DAG fails, and the DAG.
        (
            "[[job]]\nname = \"S+F\"\nexit = [1]\n",
            "",
            false,
            [1, 1, 1, 0],
        ),
        // F fails once; the retried sub-DAG runs only F again.
        (
            "[[job]]\nname = \"S+F\"\nexit = [1, 0]\n",
            "RETRY S 1\n",
            true,
            [1, 1, 2, 1],
        ),
    ];
    for engine in ["sim", "live"] {
        for (sidecar, retry, ok, runs) in cases {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            std::fs::write(d.join("inner.dag"), inner).unwrap();
            let tb = dag_testbed(d, &format!("{top}{retry}"), "", "");
            std::fs::write(d.join("w.toml"), sidecar).unwrap();
            let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
            assert_eq!(code == Some(0), ok, "{engine} {sidecar}: {out}{err}");
            // The sub-DAG's nodes are in its own DAGMan's log.
            let log = std::fs::read_to_string(d.join("j.log")).unwrap();
            let inner_log = std::fs::read_to_string(d.join("inner.log")).unwrap();
            let n = |log: &str, node: &str| log.matches(&format!(" {node} EXECUTE ")).count();
            assert_eq!(
                [
                    n(&inner_log, "X"),
                    n(&inner_log, "Y"),
                    n(&inner_log, "F"),
                    n(&log, "T")
                ],
                runs,
                "{engine} {sidecar}: {log}{inner_log}"
            );
            // F starts once X ended (the log's times are whole seconds).
            let at = |node: &str, what: &str| -> u64 {
                let l = inner_log
                    .lines()
                    .find(|l| l.contains(&format!(" {node} {what} ")));
                l.and_then(|l| l.split(' ').next()?.parse().ok()).unwrap()
            };
            assert!(
                at("F", "SUBMIT") >= at("X", "JOB_TERMINATED"),
                "{engine}: {inner_log}"
            );
            if !ok {
                let rescue = std::fs::read_to_string(d.join("inner.dag.rescue001")).unwrap();
                assert!(
                    rescue.contains("# Nodes that failed: 1\n#   F,<ENDLIST>")
                        && rescue.ends_with("\nDONE X\nDONE Y\n"),
                    "{engine}: {rescue}"
                );
            }
        }
    }
}

/// `DAGMAN_SUBMIT_DEPTH_FIRST` is each DAGMan's own, as each reads its own
/// configuration (`dagman_main.cpp`) and `Dag::StartNode` puts a ready node
/// at the head of its own ready queue when it is set. A sub-DAG without a
/// CONFIG has the testbed's order (HTCondor's configuration), not the top
/// DAG's CONFIG. One slot runs the jobs in the order they were submitted;
/// the DAGMans take turns in the order their nodes became ready
/// (`core::ready_queue`). Both engines.
#[test]
fn each_dagman_submits_in_its_own_depth_first_order() {
    let top = "JOB A n.sub\nJOB B n.sub\nJOB C n.sub\nSUBDAG EXTERNAL S inner.dag\n\
               JOBSTATE_LOG j.log\n";
    let inner = "JOB X n.sub\nJOB Y n.sub\nJOB Z n.sub\nJOBSTATE_LOG inner.log\n";
    // (top DAG's CONFIG, sub-DAG's CONFIG, the testbed's, the order run)
    let cases = [
        (None, Some("True"), "", ["A", "B", "C", "S+Z", "S+Y", "S+X"]),
        (Some("True"), None, "", ["C", "B", "A", "S+X", "S+Y", "S+Z"]),
        (
            None,
            Some("False"),
            "submit_depth_first = true",
            ["C", "B", "A", "S+X", "S+Y", "S+Z"],
        ),
        // Both depth-first: each DAGMan its newest first, by turns, where
        // one queue would have run the sub-DAG's three before C, B and A.
        (
            None,
            None,
            "submit_depth_first = true",
            ["C", "B", "A", "S+Z", "S+Y", "S+X"],
        ),
    ];
    for engine in ["sim", "live"] {
        for (top_cfg, inner_cfg, testbed, order) in cases {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let config = |name: &str, value: Option<&str>| match value {
                Some(v) => {
                    let body = format!("DAGMAN_SUBMIT_DEPTH_FIRST = {v}\n");
                    std::fs::write(d.join(name), body).unwrap();
                    format!("CONFIG {name}\n")
                }
                None => String::new(),
            };
            let inner_dag = format!("{}{inner}", config("in.cfg", inner_cfg));
            std::fs::write(d.join("inner.dag"), inner_dag).unwrap();
            let top_dag = format!("{}{top}", config("top.cfg", top_cfg));
            let tb = dag_testbed_on(d, &top_dag, testbed, "", 1);
            std::fs::write(d.join("w.toml"), "").unwrap();
            let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
            assert_eq!(code, Some(0), "{engine}: {out}{err}");
            // Each DAGMan logs its own nodes; one schedd numbers every
            // job in the order submitted, which one slot runs them in (the
            // sub-DAG's own DAGMan job is no job of the slot).
            let (ran, logs) = crate::common::executions(d, &[("j.log", ""), ("inner.log", "S+")]);
            let ran: Vec<&str> = ran
                .iter()
                .map(String::as_str)
                .filter(|&n| n != "S")
                .collect();
            assert_eq!(
                ran, order,
                "{engine} {top_cfg:?} {inner_cfg:?} {testbed}: {logs}"
            );
        }
    }
}

/// A testbed named by a relative path, beside its `.dag`: a script named
/// bare (`post.sh`) is the one beside the `.dag`, not one looked for on
/// PATH (it was, and exited 127).
#[test]
fn a_bare_script_name_is_found_beside_a_dag_named_relative() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dag = "JOB A n.sub\nSCRIPT POST A post.sh $RETURN\n";
    dag_testbed(d, dag, "", "scripts = \"run\"");
    std::fs::write(d.join("w.toml"), "").unwrap();
    let post = d.join("post.sh");
    crate::common::executable(&post, "#!/bin/sh\nexit $1\n");
    let sites = crate::common::catalog();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", "t.toml", "--engine", "sim", "-q", "--sites"])
        .arg(&sites)
        .current_dir(d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("No such file"), "{err}");
}

/// A sub-DAG node's PRE script is the node's, as in DAGMan: its failures
/// count against the node's RETRY (the sub-DAG does not run and no POST
/// script runs), and once they have used it up the node fails and the
/// nodes below it are futile. Both engines.
#[test]
fn a_subdag_nodes_failed_pre_script_uses_its_retry_and_fails_it_without_post() {
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nSCRIPT PRE S pre.sh $RETRY\n\
               SCRIPT POST S post.sh $RETURN\nJOB T n.sub\nPARENT A CHILD S\nPARENT S CHILD T\n\
               JOBSTATE_LOG j.log\n";
    // The PRE script fails on retries 0 and 1.
    for (retry, ok) in [(2, true), (1, false)] {
        for engine in ["sim", "live"] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            std::fs::write(d.join("inner.dag"), "JOB X n.sub\nJOBSTATE_LOG inner.log\n").unwrap();
            for (name, body) in [
                ("pre.sh", "[ \"$1\" -ge 2 ]\n"),
                (
                    "post.sh",
                    "echo \"post $1\" >> \"$(dirname \"$0\")/post.out\"\nexit $1\n",
                ),
            ] {
                let path = d.join(name);
                crate::common::executable(&path, &format!("#!/bin/sh\n{body}"));
            }
            let dag = format!("{top}RETRY S {retry}\n");
            let tb = dag_testbed(d, &dag, "", "scripts = \"run\"");
            std::fs::write(d.join("w.toml"), "").unwrap();
            let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
            assert_eq!(code == Some(0), ok, "{engine} RETRY {retry}: {out}{err}");
            // The sub-DAG's nodes are in its own DAGMan's log, written
            // if it ran.
            let mut log = std::fs::read_to_string(d.join("j.log")).unwrap();
            let inner = std::fs::read_to_string(d.join("inner.log")).unwrap_or_default();
            log += &inner;
            let n = |what: &str| log.matches(what).count();
            assert_eq!(n(" S PRE_SCRIPT_FAILURE "), 2, "{engine}: {log}");
            let post = std::fs::read_to_string(d.join("post.out")).unwrap_or_default();
            if ok {
                assert_eq!(inner.matches(" X EXECUTE ").count(), 1, "{engine}: {log}");
                assert_eq!(post, "post 0\n", "{engine}: POST only after the sub-DAG");
            } else {
                assert_eq!(
                    inner.matches(" X EXECUTE ").count() + n(" T EXECUTE "),
                    0,
                    "{engine}: {log}"
                );
                assert_eq!(post, "", "{engine}: no POST after a failed PRE");
                let rescue = std::fs::read_to_string(d.join("w.dag.rescue001")).unwrap();
                assert!(rescue.contains("#   S,<ENDLIST>"), "{engine}: {rescue}");
            }
        }
    }
}

/// A sub-DAG is one job of the DAGMan above it (its own DAGMan's job, in
/// the queue from its submission to its end): with the top DAG's
/// `DAGMAN_MAX_JOBS_SUBMITTED = 1`, its job A and its sub-DAG S never
/// overlap, while the sub-DAG's own two jobs run side by side (they count
/// against the sub-DAG's DAGMan, which has no limit). Both engines.
#[test]
fn a_subdag_is_one_job_of_the_dagman_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("inner.dag"), "JOB X n.sub\nJOB Y n.sub\n").unwrap();
    std::fs::write(d.join("one.cfg"), "DAGMAN_MAX_JOBS_SUBMITTED = 1\n").unwrap();
    let tb = crate::dagman::dag_testbed_on(
        d,
        "CONFIG one.cfg\nJOB A n.sub\nSUBDAG EXTERNAL S inner.dag\n",
        "",
        "",
        4,
    );
    std::fs::write(d.join("w.toml"), "").unwrap();
    let s = load(&tb);
    let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
    for engine in ["sim", "live"] {
        let run = match engine {
            "sim" => gridbed::sim::run(&s).unwrap().result,
            _ => gridbed::live::run(&s, Default::default()).unwrap().result,
        };
        assert!(run.succeeded, "{engine}: {:?}", run.counts);
        let span = |n: &str| {
            let a = &run.records.jobs[job(n)].attempts[0];
            (a.submitted.unwrap(), a.finished.unwrap())
        };
        let (a, x, y) = (span("A"), span("S+X"), span("S+Y"));
        let sub = (x.0.min(y.0), x.1.max(y.1));
        assert!(
            a.1 <= sub.0 || sub.1 <= a.0,
            "{engine}: A {a:?} beside S {sub:?}"
        );
        assert!(
            x.0 < y.1 && y.0 < x.1,
            "{engine}: X {x:?} and Y {y:?} side by side"
        );
    }
}

/// Each DAGMan writes its own files, as each DAGMan process does: in the
/// DAG above, a SUBDAG node is one job (its sub-DAG's DAGMan: submitted
/// and executing as its PRE script ends, terminated with that DAGMan's
/// exit, its HTCondor id the POST script's too); the sub-DAG's nodes are
/// in its own jobstate log, one `DAGMAN_STARTED`…`DAGMAN_FINISHED` per
/// run of it (DAGMan appends), naming its DAGMan job's id, a rescue run
/// numbering its node attempts on; its node status file and DOT are its own. A
/// sub-DAG rescued by its node's RETRY leaves the top DAG done: no rescue
/// of the top DAG. Both engines.
#[test]
fn each_dagman_writes_its_own_jobstate_log_status_and_dot() {
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nSCRIPT POST S post.sh $RETURN\n\
               RETRY S 1\nPARENT A CHILD S\nJOBSTATE_LOG j.log\n";
    let inner = "JOB X n.sub\nJOB Y n.sub\nPARENT X CHILD Y\nJOBSTATE_LOG inner.log\n\
                 NODE_STATUS_FILE inner.status\nDOT inner.dot UPDATE\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("inner.dag"), inner).unwrap();
        crate::common::executable(&d.join("post.sh"), "#!/bin/sh\nexit $1\n");
        let tb = dag_testbed(d, top, "", "scripts = \"run\"");
        std::fs::write(d.join("w.toml"), "[[job]]\nname = \"S+Y\"\nexit = [1, 0]\n").unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let log = std::fs::read_to_string(d.join("j.log")).unwrap();
        let inner_log = std::fs::read_to_string(d.join("inner.log")).unwrap();
        let both = format!("{engine}: {log}{inner_log}");
        let attempt = |end: &'static str, post: &'static str| {
            let started = ["SUBMIT", "EXECUTE", "JOB_TERMINATED"];
            let post_run = ["POST_SCRIPT_STARTED", "POST_SCRIPT_TERMINATED", post];
            [&started[..], &[end], &post_run[..]].concat()
        };
        let expected = [
            attempt("JOB_FAILURE", "POST_SCRIPT_FAILURE"),
            attempt("JOB_SUCCESS", "POST_SCRIPT_SUCCESS"),
        ]
        .concat();
        assert_eq!(node_events(&log, "S"), expected, "{both}");
        assert!(!log.contains("S+") && !log.contains(" X "), "{both}");
        // S's job ids, one per run, are its DAGMan's in its own log.
        let ids: Vec<&str> = (log.lines())
            .filter(|l| l.contains(" S SUBMIT "))
            .map(|l| l.split(' ').nth(3).unwrap())
            .collect();
        assert_eq!(ids.len(), 2, "{both}");
        assert!(log.contains(" S JOB_FAILURE 1 - - 2\n"), "{both}");
        assert!(
            log.contains(&format!(" S POST_SCRIPT_FAILURE {} ", ids[0])),
            "{both}"
        );
        let frames: Vec<&str> = (inner_log.lines())
            .filter(|l| l.contains(" INTERNAL "))
            .map(|l| l.split_once(' ').unwrap().1)
            .collect();
        assert_eq!(
            frames,
            [
                format!("INTERNAL *** DAGMAN_STARTED {} ***", ids[0]),
                "INTERNAL *** DAGMAN_FINISHED 1 ***".into(),
                format!("INTERNAL *** DAGMAN_STARTED {} ***", ids[1]),
                "INTERNAL *** DAGMAN_FINISHED 0 ***".into(),
            ],
            "{both}"
        );
        // X ran once; Y in each run. The second run is from the first's
        // rescue, so its node attempts number on from the file's last (X 1,
        // Y 2), as JobstateLog::InitializeRescue does.
        assert_eq!(node_events(&inner_log, "X").len(), 4, "{both}");
        let second = inner_log
            .split(&format!("DAGMAN_STARTED {}", ids[1]))
            .nth(1)
            .unwrap();
        assert!(second.contains(" Y JOB_SUCCESS 0 - - 3\n"), "{both}");
        let cluster = |id: &str| id.trim_end_matches(".0").parse::<u64>().unwrap();
        let first_y: &str = (inner_log.lines())
            .find(|l| l.contains(" Y SUBMIT "))
            .and_then(|l| l.split(' ').nth(3))
            .unwrap();
        assert!(cluster(first_y) > cluster(ids[0]), "{both}");
        let status = std::fs::read_to_string(d.join("inner.status")).unwrap();
        for line in [
            "DagFiles = {\n    \"inner.dag\"\n  };",
            "DagStatus = 5; /* \"STATUS_DONE (success)\" */",
            "NodesTotal = 2;",
            "NodesDone = 2;",
            "Node = \"Y\";\n  NodeStatus = 5;",
        ] {
            assert!(status.contains(line), "{engine}: {line} in {status}");
        }
        let dot = std::fs::read_to_string(d.join("inner.dot")).unwrap();
        assert!(
            dot.contains("\"X\" -> \"Y\";") && dot.contains("label=\"Y (Done)\""),
            "{engine}: {dot}"
        );
        assert!(
            d.join("inner.dag.rescue001").exists(),
            "{engine}: the failed run's rescue"
        );
        assert!(
            !d.join("w.dag.rescue001").exists(),
            "{engine}: the top DAG succeeded"
        );
        // Each DAGMan's metrics, its last run's: the sub-DAG's second run
        // started from the first's rescue (X DONE there counts as
        // succeeded) and submitted Y alone; the top DAG submitted A and
        // S's DAGMan twice.
        let inner = metrics(&d.join("inner.dag.metrics"));
        let want = [
            ("exitcode", 0),
            ("DagStatus", 0),
            ("rescue_dag_number", 1),
            ("nodes", 2),
            ("nodes_succeeded", 2),
            ("nodes_failed", 0),
            ("jobs_submitted", 1),
            ("jobs_succeeded", 1),
        ];
        assert_metrics(&inner, &want, engine);
        assert_eq!(
            inner["dagman_id"],
            ids[1].trim_end_matches(".0"),
            "{engine}"
        );
        assert_eq!(inner["parent_dagman_id"], "0", "{engine}");
        let top = metrics(&d.join("w.dag.metrics"));
        let want = [
            ("exitcode", 0),
            ("DagStatus", 0),
            ("rescue_dag_number", 0),
            ("nodes", 1),
            ("dag_nodes", 1),
            ("dag_nodes_succeeded", 1),
            ("total_nodes_run", 2),
            ("jobs_submitted", 3),
            ("jobs_succeeded", 3),
        ];
        assert_metrics(&top, &want, engine);
        assert_eq!(top["parent_dagman_id"], "", "{engine}");
    }
}

/// A DAGMan's metrics file (`<dag>.metrics`), read as JSON.
fn metrics(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

/// Each of `want`'s fields has its value in `m`.
fn assert_metrics(m: &serde_json::Value, want: &[(&str, i64)], engine: &str) {
    for &(field, value) in want {
        assert_eq!(m[field].as_i64(), Some(value), "{engine}: {field} in {m}");
    }
}

/// A library caller that runs a `.dag` writes what `gridbed run` writes,
/// each DAGMan's files beside its own `.dag`, with one call.
#[test]
fn a_library_caller_writes_each_dagmans_files() {
    use gridbed::workflow::formats::dagman::files::{self, DagFile};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nPARENT A CHILD S\nJOBSTATE_LOG j.log\n";
    std::fs::write(d.join("inner.dag"), "JOB X n.sub\nJOBSTATE_LOG inner.log\n").unwrap();
    let tb = dag_testbed(d, top, "", "");
    std::fs::write(d.join("w.toml"), "").unwrap();
    let s = load(&tb);
    let run = gridbed::sim::run(&s).unwrap().result;
    let src = s.source.as_ref().unwrap();
    let info = src.dagman.as_ref().unwrap();
    let epoch = std::time::SystemTime::UNIX_EPOCH;
    let written = files::write_at_end(&src.path, info, &run, epoch).unwrap();
    let kinds: Vec<(String, DagFile)> = (written.iter())
        .map(|(p, k)| (p.file_name().unwrap().to_string_lossy().into_owned(), *k))
        .collect();
    assert_eq!(
        kinds,
        [
            ("j.log".to_string(), DagFile::JobstateLog),
            ("w.dag.metrics".to_string(), DagFile::Metrics),
            ("w.dag.dagman.out".to_string(), DagFile::DagmanOut),
            ("inner.log".to_string(), DagFile::JobstateLog),
            ("inner.dag.metrics".to_string(), DagFile::Metrics),
            ("inner.dag.dagman.out".to_string(), DagFile::DagmanOut),
        ]
    );
    let inner = std::fs::read_to_string(d.join("inner.log")).unwrap();
    // After A (10 s, cluster 1): the sub-DAG's DAGMan job is cluster 2.
    assert!(
        inner.starts_with("10 INTERNAL *** DAGMAN_STARTED 2.0 ***\n"),
        "{inner}"
    );
    assert!(inner.contains(" X EXECUTE "), "{inner}");
}

/// `PRE_SKIP` of a sub-DAG node: its PRE script exiting that value skips
/// the node's DAG and its POST script, and the node is done (DAGMan's
/// `Dag::PreScriptReaper`); the node below runs. Both engines.
#[test]
fn pre_skip_of_a_subdag_node_skips_its_dag_and_post() {
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nSCRIPT PRE S exit3.sh\nPRE_SKIP S 3\n\
               SCRIPT POST S exit1.sh\nJOB T n.sub\nPARENT A CHILD S\nPARENT S CHILD T\n\
               JOBSTATE_LOG j.log\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("inner.dag"),
            "JOB X n.sub\nJOB Y n.sub\nPARENT X CHILD Y\nJOBSTATE_LOG inner.log\n",
        )
        .unwrap();
        for (name, code) in [("exit3.sh", 3), ("exit1.sh", 1)] {
            let path = d.join(name);
            crate::common::executable(&path, &format!("#!/bin/sh\nexit {code}\n"));
        }
        let tb = dag_testbed(d, top, "", "scripts = \"run\"");
        std::fs::write(d.join("w.toml"), "").unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        // The sub-DAG's DAGMan never ran: no job of the node, no log of
        // its own.
        let log = std::fs::read_to_string(d.join("j.log")).unwrap();
        assert!(!d.join("inner.log").exists(), "{engine}: the sub-DAG ran");
        assert!(
            log.contains(" S PRE_SCRIPT_STARTED ") && !log.contains(" S SUBMIT "),
            "{engine}: {log}"
        );
        assert!(!log.contains("POST_SCRIPT_STARTED"), "{engine}: {log}");
        assert!(log.contains(" T EXECUTE "), "{engine}: {log}");
    }
}

/// A script's count macros are its own DAGMan's (`Script::BackgroundRun`
/// reads them from the DAG that runs it): in a sub-DAG, the sub-DAG's
/// nodes; in the top DAG, its own nodes, a sub-DAG being one. Both engines.
#[test]
fn a_scripts_counts_are_its_own_dagmans() {
    let inner = "JOB X n.sub\nJOB Y n.sub\nPARENT X CHILD Y\nFINAL F n.sub\n\
                 SCRIPT DEBUG macros.out STDOUT POST F report.sh F $DAG_STATUS $FAILED_COUNT $FUTILE_COUNT $NODE_COUNT\n";
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S sub/inner.dag\nJOB T n.sub\n\
               PARENT A CHILD S\nPARENT S CHILD T\n\
               SCRIPT DEBUG macros.out STDOUT POST T report.sh T $DAG_STATUS $DONE_COUNT $FAILED_COUNT $NODE_COUNT\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/inner.dag"), inner).unwrap();
        // A sub-DAG runs where the DAG does (DAGMan without -usedagdir).
        crate::common::executable(&d.join("report.sh"), "#!/bin/sh\necho \"$*\"\n");
        let tb = dag_testbed(d, top, "", "scripts = \"run\"");
        std::fs::write(d.join("w.toml"), "[[job]]\nname = \"S+X\"\nexit = [1]\n").unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: F rescues the sub-DAG: {out}{err}");
        let macros =
            crate::common::script_output(&std::fs::read_to_string(d.join("macros.out")).unwrap());
        // F: status 2 (a node failed), X failed, Y futile, 3 nodes. T: the
        // top DAG's A and S done, none failed, 3 nodes.
        assert_eq!(macros, "F 2 1 1 3\nT 0 2 0 3\n", "{engine}");
    }
}

/// A sub-DAG's own SERVICE node runs beside the sub-DAG, from its start,
/// and is removed once every other node of it (its FINAL too) is over: the
/// sub-DAG does not wait for it, nor does the DAG above. Both engines.
#[test]
fn a_subdags_service_is_removed_at_the_subdags_end() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("inner.dag"),
        "SERVICE V n.sub\nJOB X n.sub\nJOB Y n.sub\nPARENT X CHILD Y\nFINAL F n.sub\n",
    )
    .unwrap();
    let top = "JOB A n.sub\nSUBDAG EXTERNAL S inner.dag\nJOB T n.sub\nPARENT A CHILD S\nPARENT S CHILD T\n";
    let tb = dag_testbed_on(d, top, "", "", 4);
    std::fs::write(
        d.join("w.toml"),
        "[[job]]\nname = \"S+V\"\nruntime = 1000\n",
    )
    .unwrap();
    let s = load(&tb);
    let job = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n).unwrap();
    for engine in ["sim", "live"] {
        let run = match engine {
            "sim" => gridbed::sim::run(&s).unwrap().result,
            _ => gridbed::live::run(&s, Default::default()).unwrap().result,
        };
        assert!(run.succeeded, "{engine}: {:?}", run.counts);
        let at = |n: &str| &run.records.jobs[job(n)].attempts[0];
        assert!(
            at("S+V").prescript >= at("A").ended.unwrap(),
            "{engine}: V starts with its sub-DAG"
        );
        assert!(
            matches!(
                at("S+V").outcome,
                gridbed::core::records::Outcome::Removed(_)
            ),
            "{engine}: {:?}",
            at("S+V").outcome
        );
        let removed = at("S+V").ended.unwrap();
        assert!(removed >= at("S+F").ended.unwrap(), "{engine}: after FINAL");
        assert!(
            removed <= at("T").prescript,
            "{engine}: at the sub-DAG's end"
        );
        assert!(run.makespan < 1000.0, "{engine}: {}", run.makespan);
    }
}

/// A sub-DAG read after its node's PRE script is refused with what plans
/// the whole DAG ahead (here the DAG-C strategy), naming the sub-DAG; read
/// with the DAG (the scripts not run), its missing file is refused saying
/// why.
#[test]
fn a_subdag_read_after_its_pre_script_is_refused_with_a_plan_made_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let dag = "JOB A n.sub\nSUBDAG EXTERNAL S later.dag\nSCRIPT PRE S pre.sh\nPARENT A CHILD S\n";
    let tb = dag_testbed(dir.path(), dag, "", "scripts = \"run\"");
    std::fs::write(dir.path().join("w.toml"), "").unwrap();
    let (code, _, err) =
        crate::common::run_testbed(&tb, &["--engine", "sim", "--strategy", "dag-c"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the sub-DAG S is read after its node's PRE script")
            && err.contains("a strategy that plans the whole DAG ahead"),
        "{err}"
    );
    let tb = dag_testbed(dir.path(), dag, "", "");
    std::fs::write(dir.path().join("w.toml"), "").unwrap();
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", "sim"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("SUBDAG EXTERNAL S: cannot read") && err.contains("scripts = \"run\""),
        "{err}"
    );
}

/// The sidecar may name the nodes of a sub-DAG read after its node's PRE
/// script: what it says of them (runtime, exits) holds once they are read
/// (X takes 30 s and exits 3, then 0 on its RETRY; so does T's Y, of a
/// sub-DAG read as S runs); a node the sub-DAG turns out not to have is
/// warned of, and one given files is refused, since such a node reads and
/// writes none. Both engines.
#[test]
fn the_sidecar_speaks_for_the_nodes_of_a_subdag_read_as_the_run_goes() {
    let top = "SUBDAG EXTERNAL S inner.dag\nSCRIPT PRE S pre.sh\n";
    let inner = "JOB X x.sub\nRETRY X 1\nSUBDAG EXTERNAL T deep.dag\nSCRIPT PRE T pre.sh\n\
                 PARENT X CHILD T\nJOBSTATE_LOG inner.log\n";
    let deep = "JOB Y y.sub\nRETRY Y 1\nJOBSTATE_LOG deep.log\n";
    let sidecar = "[[job]]\nname = \"S+X\"\nruntime = 30\nexit = [3, 0]\n\
                   [[job]]\nname = \"S+T+Y\"\nruntime = 20\nexit = [4, 0]\n\
                   [[job]]\nname = \"S+Z\"\nruntime = 5\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = dag_testbed(d, top, "", "scripts = \"run\"");
        std::fs::write(d.join("w.toml"), sidecar).unwrap();
        std::fs::write(d.join("inner.dag"), inner).unwrap();
        std::fs::write(d.join("deep.dag"), deep).unwrap();
        crate::common::executable(&d.join("pre.sh"), "#!/bin/sh\nexit 0\n");
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        assert!(
            err.contains("`S+Z` is no node of sub-DAG S"),
            "{engine}: {err}"
        );
        for (log, node, runtime) in [("inner.log", "X", 30), ("deep.log", "Y", 20)] {
            let log = std::fs::read_to_string(d.join(log)).unwrap();
            let at = |event: &str| -> Vec<u64> {
                (log.lines())
                    .filter(|l| {
                        l.split(' ').nth(1) == Some(node) && l.split(' ').nth(2) == Some(event)
                    })
                    .map(|l| l.split(' ').next().unwrap().parse().unwrap())
                    .collect()
            };
            let (ran, ended) = (at("EXECUTE"), at("JOB_TERMINATED"));
            assert_eq!(
                ran.len(),
                2,
                "{engine}: {node} exits non-zero, then 0: {log}"
            );
            // The log's times are whole seconds: a live run's 20.01 s may
            // span 21 of them.
            let slack = u64::from(engine == "live");
            for (r, e) in ran.iter().zip(&ended) {
                assert!(
                    (runtime..=runtime + slack).contains(&(e - r)),
                    "{engine}: {node}: {log}"
                );
            }
            assert_eq!(at("JOB_FAILURE").len(), 1, "{engine}: {log}");
        }
    }
    // Files for such a node are refused as the DAG is read.
    let dir = tempfile::tempdir().unwrap();
    let tb = dag_testbed(dir.path(), top, "", "scripts = \"run\"");
    let files = "[[file]]\nname = \"f\"\nsize = 1\n[[job]]\nname = \"S+X\"\noutputs = [\"f\"]\n";
    std::fs::write(dir.path().join("w.toml"), files).unwrap();
    let (code, _, err) = crate::common::run_testbed(&tb, &["--engine", "sim"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("job `S+X`: a node of sub-DAG S, which is read as the run goes")
            && err.contains("line 5"),
        "{err}"
    );
}

/// [`dag_testbed`] of `dag` whose scripts and jobs run (`jobs = "run"`),
/// no node's job told how to exit (its program says).
fn jobs_testbed(d: &Path, dag: &str) -> std::path::PathBuf {
    let tb = dag_testbed(d, dag, "", "scripts = \"run\"\njobs = \"run\"");
    std::fs::write(d.join("w.toml"), "").unwrap();
    tb
}

/// A node's job that queues several procs is a cluster: its exit is 0
/// when every proc exits 0 (A: `$(Process)` and `$(Step)` numbering
/// three procs over two `queue` statements), else the first failing
/// proc's (B: proc 0 exits 4; its POST script sees `$RETURN` 4). B's
/// other procs are removed: the live engine kills them (they would sleep
/// 10 s, then leave a mark; the test waits past that), the simulator never
/// starts them. DAGMan's log has each proc's end. Both engines.
#[test]
fn a_job_queueing_several_procs_is_a_cluster_that_fails_with_its_first_failing_proc() {
    let dag = "JOB A a.sub\nJOB B b.sub\n\
               SCRIPT DEBUG post.out STDOUT POST B echo.sh $JOB $RETURN\nPARENT A CHILD B\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = jobs_testbed(d, dag);
        std::fs::write(
            d.join("a.sub"),
            "executable = /bin/sh\narguments = \"-c 'echo $(Process).$(Step) >> a.out'\"\n\
             queue\nqueue 2\narguments = never\n",
        )
        .unwrap();
        std::fs::write(
            d.join("b.sub"),
            "executable = /bin/sh\narguments = \"-c 'exit 4'\"\nqueue\n\
             arguments = \"-c 'sleep 10; echo $(Process) >> b.out'\"\nqueue 2\n",
        )
        .unwrap();
        crate::common::executable(&d.join("echo.sh"), "#!/bin/sh\necho \"$1 $2\"\nexit 0\n");
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(
            code,
            Some(0),
            "{engine}: B's POST script rescues it: {out}{err}"
        );
        let mut a: Vec<String> = (std::fs::read_to_string(d.join("a.out")).unwrap().lines())
            .map(String::from)
            .collect();
        a.sort();
        assert_eq!(a, ["0.0", "1.0", "2.1"], "{engine}: A's three procs ran");
        let post =
            crate::common::script_output(&std::fs::read_to_string(d.join("post.out")).unwrap());
        assert_eq!(post, "B 4\n", "{engine}");
        if engine == "live" {
            // Past the 10 s a proc left running would take to leave its mark.
            std::thread::sleep(std::time::Duration::from_secs(12));
        }
        assert!(
            !d.join("b.out").exists(),
            "{engine}: B's other procs were removed"
        );
        let log = std::fs::read_to_string(d.join("w.dag.dagman.out")).unwrap();
        // Each proc's end, without its time stamps.
        let ends: Vec<&str> = (log.lines())
            .filter(|l| l.contains(" job proc (") || l.contains("ULOG_JOB_ABORTED"))
            .map(|l| l.get(18..).unwrap_or(l).split(" {").next().unwrap())
            .collect();
        let cluster = |i: usize| ends[i].split(['(', '.']).nth(1).unwrap_or("").to_string();
        let (a, b) = (cluster(0), cluster(3));
        assert_eq!(
            ends,
            [
                format!("Node A job proc ({a}.0.0) completed successfully."),
                format!("Node A job proc ({a}.1.0) completed successfully."),
                format!("Node A job proc ({a}.2.0) completed successfully."),
                format!("Node B job proc ({b}.0.0) failed with status 4."),
                format!("Event: ULOG_JOB_ABORTED for HTCondor Node B ({b}.1.0)"),
                format!("Event: ULOG_JOB_ABORTED for HTCondor Node B ({b}.2.0)"),
            ],
            "{engine}: {log}"
        );
    }
}

/// A submit description queueing over a list (`queue … in (…)`) queues
/// a proc for each item, its variable set; a DAGMan whose CONFIG sets
/// `DAGMAN_PROHIBIT_MULTI_JOBS` cannot submit such a job: the node fails
/// without its retries, its log says why, and its other nodes run. Both
/// engines.
#[test]
fn a_dagman_prohibiting_multi_proc_jobs_cannot_submit_one_queueing_over_a_list() {
    let sub = "executable = /bin/sh\narguments = \"-c 'echo $(word) >> $(JOB).out'\"\n\
               queue word in (x, y z)\n";
    for engine in ["sim", "live"] {
        for prohibit in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let dag = match prohibit {
                true => {
                    "CONFIG c.conf\nJOB A a.sub\nRETRY A 2\nJOB B a.sub\nPARENT A CHILD B\nJOB C c.sub\n"
                }
                false => "JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\nJOB C c.sub\n",
            };
            let tb = jobs_testbed(d, dag);
            std::fs::write(d.join("c.conf"), "DAGMAN_PROHIBIT_MULTI_JOBS = True\n").unwrap();
            std::fs::write(d.join("a.sub"), sub).unwrap();
            std::fs::write(
                d.join("c.sub"),
                "executable = /bin/sh\narguments = \"-c 'echo $(Item) >> C.out'\"\nqueue in (one)\n",
            )
            .unwrap();
            let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
            let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
            let sorted = |f: &str| {
                let mut lines: Vec<String> = read(f).lines().map(String::from).collect();
                lines.sort();
                lines
            };
            assert_eq!(sorted("C.out"), ["one"], "{engine}: one item, one proc");
            let log = read("w.dag.dagman.out");
            if !prohibit {
                assert_eq!(code, Some(0), "{engine}: {out}{err}");
                assert_eq!(sorted("A.out"), ["x", "y", "z"], "{engine}: a proc an item");
                assert_eq!(sorted("B.out"), ["x", "y", "z"], "{engine}");
                assert!(!log.contains("disallowed"), "{engine}");
                continue;
            }
            assert_eq!(code, Some(1), "{engine}: A fails: {out}{err}");
            assert!(
                !d.join("A.out").exists() && !d.join("B.out").exists(),
                "{engine}"
            );
            let why = "Submit generated multiple job procs; disallowed by \
                       DAGMAN_PROHIBIT_MULTI_JOBS setting (TotalProcs = 3)";
            assert_eq!(
                log.matches(why).count(),
                1,
                "{engine}: once, no retry: {log}"
            );
            assert!(
                log.contains("Shortcutting node A retries because of submit failure(s)"),
                "{engine}: {log}"
            );
        }
    }
}

/// `jobs = "run"`: each node's job runs the program its submit
/// description names (`executable`, `arguments` with the node's VARS and
/// `$(JOB)`), as it is submitted, and the program's exit is the job's, on
/// each attempt: A exits 0, B 3 (its POST script sees `$RETURN` 3 and
/// rescues it), C fails on its first attempt and succeeds on its RETRY,
/// D's submit file does not exist (its POST script sees a failed
/// submission's -1001 and fails it); a sub-DAG read as the run goes
/// runs its nodes' programs too. Both engines.
#[test]
fn jobs_that_run_their_programs_exit_as_their_programs_do_in_both_engines() {
    let dag = "SUBMIT-DESCRIPTION sh @=desc\n    executable = /bin/sh\n    \
               arguments = \"exit.sh $(code) $(JOB)\"\n@desc\n\
               JOB A sh\nVARS A code=\"0\"\nJOB B sh\nVARS B code=\"3\"\n\
               SCRIPT DEBUG post.out STDOUT POST B echo.sh $JOB $RETURN\n\
               JOB C flaky.sub\nRETRY C 1\nJOB D DNE.sub\n\
               SCRIPT DEBUG post.out STDOUT POST D echo.sh $JOB $RETURN\n\
               PARENT A CHILD C\nNODE_STATUS_FILE s.out\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = jobs_testbed(d, dag);
        // Each program leaves a mark, so that its runs can be counted.
        std::fs::write(d.join("exit.sh"), "echo \"$2\" >> ran.out\nexit \"$1\"\n").unwrap();
        std::fs::write(
            d.join("flaky.sub"),
            "executable = flaky.sh\ninitialdir = sub\nqueue\n",
        )
        .unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        crate::common::executable(
            &d.join("sub/flaky.sh"),
            "#!/bin/sh\necho C >> ../ran.out\n[ -e tried ] && exit 0\ntouch tried\nexit 1\n",
        );
        crate::common::executable(
            &d.join("echo.sh"),
            "#!/bin/sh\necho \"$1 $2\"\n[ \"$1\" = D ] && exit 1\nexit 0\n",
        );
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(1), "{engine}: D fails: {out}{err}");
        let mut ran: Vec<String> = std::fs::read_to_string(d.join("ran.out"))
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        ran.sort();
        assert_eq!(ran, ["A", "B", "C", "C"], "{engine}");
        let post =
            crate::common::script_output(&std::fs::read_to_string(d.join("post.out")).unwrap());
        let mut post: Vec<&str> = post.lines().collect();
        post.sort();
        assert_eq!(post, ["B 3", "D -1001"], "{engine}");
        let status = std::fs::read_to_string(d.join("s.out")).unwrap();
        for (node, state) in [("A", 5), ("B", 5), ("C", 5), ("D", 6)] {
            let at = status.find(&format!("Node = \"{node}\";")).unwrap();
            assert!(
                status[at..].contains(&format!("NodeStatus = {state};")),
                "{engine}: {node} in {status}"
            );
        }
        assert!(status.contains("RetryCount = 1;"), "{engine}: C retried");
    }
    // A sub-DAG's nodes run theirs too, read after its node's PRE script
    // as the run goes: X exits 3, so the sub-DAG fails, and so its node.
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let top = "JOB A sh.sub\nVARS A code=\"0\"\nSUBDAG EXTERNAL S inner.dag\n\
                   SCRIPT PRE S pre.sh\nPARENT A CHILD S\nNODE_STATUS_FILE s.out\n";
        let tb = jobs_testbed(d, top);
        std::fs::write(d.join("inner.dag"), "JOB X sh.sub\nVARS X code=\"3\"\n").unwrap();
        std::fs::write(
            d.join("sh.sub"),
            "executable = /bin/sh\narguments = \"-c 'exit $(code)'\"\nqueue\n",
        )
        .unwrap();
        crate::common::executable(&d.join("pre.sh"), "#!/bin/sh\nexit 0\n");
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(1), "{engine}: {out}{err}");
        let inner = metrics(&d.join("inner.dag.metrics"));
        assert_metrics(&inner, &[("exitcode", 1), ("nodes_failed", 1)], engine);
        let top = metrics(&d.join("w.dag.metrics"));
        let want = [("nodes_succeeded", 1), ("dag_nodes_failed", 1)];
        assert_metrics(&top, &want, engine);
    }
    // Jobs run beside the scripts, not without them.
    let dir = tempfile::tempdir().unwrap();
    let tb = dag_testbed(dir.path(), dag, "", "jobs = \"run\"");
    let (code, _, err) = crate::common::run_testbed(&tb, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("workflow.jobs") && err.contains("scripts = \"run\""),
        "{err}"
    );
}

/// A job that cannot be submitted (its submit file missing) fails as
/// DAGMan's submission does (HTCondor's `Dag::ProcessFailedSubmit`): it
/// never reaches the queue, and once DAGMan gives up the node's RETRY is
/// spent. With direct submission (the default) it gives up at once: E
/// fails, its child F is futile. Through `condor_submit`
/// (`DAGMAN_USE_DIRECT_SUBMIT = false`) it tries again, up to
/// `DAGMAN_MAX_SUBMIT_ATTEMPTS` times, after waits of 1 s, then 2 s: D
/// tries 3 times, then its POST script sees `$RETURN` -1001, once. Each
/// failed try is a `SUBMIT_FAILURE` in the jobstate log and in its
/// dagman.out. Both engines.
#[test]
fn a_job_that_cannot_be_submitted_fails_as_dagmans_submission_does_in_both_engines() {
    let cases = [
        (
            "JOB E DNE.sub\nRETRY E 1\nJOB F DNE.sub\nPARENT E CHILD F\n",
            "",
            vec![("E", 1)],
        ),
        (
            "CONFIG c.config\nJOB D DNE.sub\nRETRY D 2\n\
             SCRIPT DEBUG post.out STDOUT POST D echo.sh $JOB $RETURN\n",
            "DAGMAN_USE_DIRECT_SUBMIT = false\nDAGMAN_MAX_SUBMIT_ATTEMPTS = 3\n",
            vec![("D", 3)],
        ),
    ];
    for engine in ["sim", "live"] {
        for (dag, config, tries) in &cases {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let tb = jobs_testbed(
                d,
                &format!("{dag}JOBSTATE_LOG j.log\nNODE_STATUS_FILE s.out\n"),
            );
            std::fs::write(d.join("c.config"), config).unwrap();
            crate::common::executable(&d.join("echo.sh"), "#!/bin/sh\necho \"$1 $2\"\nexit 1\n");
            let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
            assert_eq!(code, Some(1), "{engine}: {out}{err}");
            let log = std::fs::read_to_string(d.join("j.log")).unwrap();
            let dagman = std::fs::read_to_string(d.join("w.dag.dagman.out")).unwrap();
            let status = std::fs::read_to_string(d.join("s.out")).unwrap();
            for &(node, n) in tries {
                let lines = |what: &str| {
                    log.lines()
                        .filter(|l| l.contains(&format!(" {node} {what} ")))
                        .count()
                };
                assert_eq!(lines("SUBMIT_FAILURE"), n, "{engine}: {log}");
                assert_eq!(lines("SUBMIT"), 0, "{engine}: never submitted: {log}");
                assert!(
                    dagman.contains(&format!("Node submit failed after {n} tr"))
                        && dagman.contains(&format!("Shortcutting node {node} retries")),
                    "{engine}: {dagman}"
                );
                // (D's POST script has the last word.)
                let details = match node {
                    "D" => "POST script failed with status 1",
                    _ => "Job submit failed",
                };
                let at = status.find(&format!("Node = \"{node}\";")).unwrap();
                assert!(
                    status[at..].contains(&format!("StatusDetails = \"{details}")),
                    "{engine}: {status}"
                );
            }
            if tries[0].0 == "D" {
                assert!(
                    dagman.contains("Job submit try 1/3 failed, will try again in >= 1 second.")
                );
                assert!(
                    dagman.contains("Job submit try 2/3 failed, will try again in >= 2 seconds.")
                );
                let post = std::fs::read_to_string(d.join("post.out")).unwrap();
                let post = crate::common::script_output(&post);
                assert_eq!(post.lines().collect::<Vec<_>>(), ["D -1001"], "{engine}");
            } else {
                let at = status.find("Node = \"F\";").unwrap();
                assert!(
                    status[at..].contains("NodeStatus = 7;"),
                    "{engine}: F futile: {status}"
                );
            }
        }
    }
}

/// With `jobs = "run"`, a job's submit description is read as DAGMan
/// submits it (B's is written by its PRE script), with the macros DAGMan
/// sets then: `$(JOB)`, `$(RETRY)`, `$(DAG_PARENT_NAMES)`,
/// `$(DAG_STATUS)` and `$(FAILED_COUNT)` (FINAL F sees D's failure, and
/// its success is the DAG's), and
/// the node's VARS (`job="x$(JOB)x"`, in any case the macro it names,
/// naming the value before it);
/// `$(name:default)` and `$CHOICE` as condor_submit expands them (C exits
/// 1, then 0 on its retry). Both engines.
#[test]
fn a_jobs_description_is_read_as_it_is_submitted_with_dagmans_macros_then() {
    let dag = "JOB A n.sub\nJOB B late.sub\nSCRIPT PRE B write.sh\n\
               VARS B job=\"x$(JOB)x\"\n\
               JOB C n.sub\nVARS C code=\"$CHOICE(RETRY, 1, 0)\"\nRETRY C 1\n\
               JOB D n.sub\nVARS D code=\"1\"\nFINAL F n.sub\n\
               PARENT A CHILD B C\nPARENT B C CHILD D\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = jobs_testbed(d, dag);
        std::fs::write(
            d.join("n.sub"),
            "executable = /bin/sh\narguments = \"-c 'echo $(JOB) $(RETRY) \
             $(DAG_PARENT_NAMES:none) $(DAG_STATUS) $(FAILED_COUNT) >> ran.out; \
             exit $(code:0)'\"\nqueue\n",
        )
        .unwrap();
        crate::common::executable(&d.join("write.sh"), "#!/bin/sh\ncp n.sub late.sub\n");
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(
            code,
            Some(0),
            "{engine}: FINAL's success is the DAG's: {out}{err}"
        );
        let mut ran: Vec<String> = std::fs::read_to_string(d.join("ran.out"))
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        ran.sort();
        let want = [
            "A 0 none 0 0",
            "C 0 A 0 0",
            "C 1 A 0 0",
            "D 0 B,C 0 0",
            "F 0 none 2 1",
            "xBx 0 A 0 0",
        ];
        assert_eq!(ran, want, "{engine}");
    }
}

/// A POST script's `$JOBID` is its job's HTCondor id, the one the
/// jobstate log gives the job's submission: A's, whose first attempt
/// fails (its POST script passes `$RETURN` on) and is retried, each
/// attempt's own, B's and C's; a PRE script gets it as written. Both
/// engines.
#[test]
fn a_post_scripts_jobid_is_the_id_the_jobstate_log_gives_its_job() {
    let dag = "JOB A n.sub\nJOB B n.sub\nJOB C n.sub\nRETRY A 1\nPARENT A CHILD B C\n\
               SCRIPT PRE A id.sh pre A $JOBID\nSCRIPT POST A id.sh post A $JOBID $RETURN\n\
               SCRIPT POST B id.sh post B $JOBID\nSCRIPT POST C id.sh post C $jobid\n\
               JOBSTATE_LOG j.log\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = dag_testbed(d, dag, "", "scripts = \"run\"");
        std::fs::write(d.join("w.toml"), "[[job]]\nname = \"A\"\nexit = [1, 0]\n").unwrap();
        crate::common::executable(
            &d.join("id.sh"),
            "#!/bin/sh\necho \"$1 $2 $3\" >> ids.out\nexit ${4:-0}\n",
        );
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let ids = std::fs::read_to_string(d.join("ids.out")).unwrap();
        let log = std::fs::read_to_string(d.join("j.log")).unwrap();
        // `time node SUBMIT id …`: each node's last submission.
        let submitted = |node: &str| {
            (log.lines().rev())
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|w| w.get(1) == Some(&node) && w.get(2) == Some(&"SUBMIT"))
                .map(|w| w[3].to_string())
                .unwrap_or_else(|| panic!("{engine}: no SUBMIT of {node} in {log}"))
        };
        assert!(
            ids.lines()
                .filter(|l| l.starts_with("pre "))
                .all(|l| l == "pre A $JOBID"),
            "{engine}: {ids}"
        );
        for node in ["A", "B", "C"] {
            let posts: Vec<&str> = ids
                .lines()
                .filter(|l| l.starts_with(&format!("post {node} ")))
                .collect();
            let last = posts.last().unwrap_or_else(|| panic!("{engine}: {ids}"));
            assert_eq!(
                *last,
                format!("post {node} {}", submitted(node)),
                "{engine}: {ids}{log}"
            );
        }
        let distinct: std::collections::BTreeSet<&str> = ids
            .lines()
            .filter(|l| l.starts_with("post"))
            .map(|l| &l[7..])
            .collect();
        assert_eq!(
            distinct.len(),
            4,
            "{engine}: each attempt its own id: {ids}"
        );
    }
}

/// A FINAL node of a DAG whose nodes on a cycle never ran (none failed)
/// sees DAGMan's `DAG_STATUS_CYCLE`, 5, in its job's and scripts' macros,
/// as HTCondor's `job_dagman_final-H` requires; the nodes before it see 0.
#[test]
fn final_after_a_cycle_sees_dag_status_5() {
    let dag = "JOB A n.sub\nJOB B1 n.sub\nJOB B2 n.sub\nFINAL C n.sub\n\
               SCRIPT PRE C pre.sh $DAG_STATUS\n\
               PARENT A CHILD B1\nPARENT B1 CHILD B2\nPARENT B2 CHILD B1\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = jobs_testbed(d, dag);
        std::fs::write(
            d.join("n.sub"),
            "executable = /bin/sh\narguments = \"-c 'echo $(JOB) $(DAG_STATUS) >> ran.out'\"\n",
        )
        .unwrap();
        crate::common::executable(&d.join("pre.sh"), "#!/bin/sh\necho pre $1 >> ran.out\n");
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: FINAL succeeded: {out}{err}");
        let ran = std::fs::read_to_string(d.join("ran.out")).unwrap();
        assert_eq!(ran, "A 0\npre 5\nC 5\n", "{engine}");
    }
}

/// `w.dag` (`a`, `b`, then the sub-DAG `s`: `inner.dag`, `x` then `y`)
/// whose jobs each append their name as their program sees it
/// (`$(dag_node_name)`) to `ran.out`; rescues `w.dag.rescue001..003`
/// (DONE a and b) and `inner.dag.rescue001..003` (DONE x) written
/// before, and `custom.rescue` (DONE a). Returns the testbed.
fn rescue_file_testbed(d: &Path) -> std::path::PathBuf {
    let top = "JOB a n.sub\nJOB b n.sub\nSUBDAG EXTERNAL s inner.dag\n\
               PARENT a b CHILD s\n";
    let tb = jobs_testbed(d, top);
    std::fs::write(
        d.join("inner.dag"),
        "JOB x n.sub\nJOB y n.sub\nPARENT x CHILD y\n",
    )
    .unwrap();
    std::fs::write(
        d.join("n.sub"),
        "executable = /bin/sh\narguments = \"-c 'echo $(dag_node_name) >> ran.out'\"\nqueue\n",
    )
    .unwrap();
    for n in 1..=3 {
        std::fs::write(d.join(format!("w.dag.rescue{n:03}")), "DONE a\nDONE b\n").unwrap();
        std::fs::write(d.join(format!("inner.dag.rescue{n:03}")), "DONE x\n").unwrap();
    }
    std::fs::write(d.join("custom.rescue"), "DONE a\n").unwrap();
    tb
}

/// condor_submit_dag's `-RescueFile` (`--rescue-file`), as HTCondor's
/// `test_dagman_specify_rescue.py` states it: a run starts from the file
/// named, the rescues after the number its name carries (all, for a name
/// that carries none) become `.old`, the metrics file reports the number,
/// and the sub-DAG gets `-DoRescueFrom` it (its own rescue of that number,
/// its later ones renamed; for 0, its newest). The sub-DAG's job sees its
/// name in its own DAGMan (`y`, not `s+y`), and runs only once the
/// sub-DAG starts though its parent is DONE in its rescue. Both engines.
#[test]
fn a_run_from_a_named_rescue_file_renames_the_later_ones_and_passes_its_number_down() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = rescue_file_testbed(d);
        let file = d.join("w.dag.rescue002");
        let args = ["--engine", engine, "--rescue-file", file.to_str().unwrap()];
        let (code, out, err) = crate::common::run_testbed(&tb, &args);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let ran = std::fs::read_to_string(d.join("ran.out")).unwrap();
        assert_eq!(ran, "y\n", "{engine}: a, b and x DONE");
        let exists = |name: &str| d.join(name).exists();
        for dag in ["w.dag", "inner.dag"] {
            assert!(exists(&format!("{dag}.rescue002")), "{engine}: {dag}");
            assert!(exists(&format!("{dag}.rescue003.old")), "{engine}: {dag}");
            assert!(!exists(&format!("{dag}.rescue003")), "{engine}: {dag}");
            let m = metrics(&d.join(format!("{dag}.metrics")));
            assert_metrics(&m, &[("exitcode", 0), ("rescue_dag_number", 2)], engine);
        }
        // A file whose name carries no number: every numbered rescue of
        // the DAG becomes `.old`; the sub-DAG starts from its newest.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = rescue_file_testbed(d);
        std::fs::remove_file(d.join("inner.dag.rescue003")).unwrap();
        let file = d.join("custom.rescue");
        let args = ["--engine", engine, "--rescue-file", file.to_str().unwrap()];
        let (code, out, err) = crate::common::run_testbed(&tb, &args);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        // y waits for the sub-DAG's start though x is DONE in its rescue.
        let ran = std::fs::read_to_string(d.join("ran.out")).unwrap();
        assert_eq!(ran, "b\ny\n", "{engine}");
        for n in 1..=3 {
            assert!(
                d.join(format!("w.dag.rescue{n:03}.old")).exists(),
                "{engine}: {n}"
            );
        }
        assert!(d.join("inner.dag.rescue002").exists(), "{engine}");
        let m = metrics(&d.join("w.dag.metrics"));
        assert_metrics(&m, &[("rescue_dag_number", 0)], engine);
        let m = metrics(&d.join("inner.dag.metrics"));
        assert_metrics(&m, &[("rescue_dag_number", 2)], engine);
        // `--rescue-from 3` where the sub-DAG has no rescue 3: its DAGMan
        // cannot start, so the node fails as the run reaches it.
        std::fs::write(d.join("w.dag.rescue003"), "DONE a\nDONE b\n").unwrap();
        let (code, out, err) =
            crate::common::run_testbed(&tb, &["--engine", engine, "--rescue-from", "3"]);
        assert_eq!(code, Some(1), "{engine}: {out}{err}");
        assert!(err.contains("no rescue DAG number 3"), "{engine}: {err}");
    }
    // Without scripts run: a sub-DAG node DONE in the top rescue needs
    // no rescue of its own, and one that is not fails as the run gets to
    // it, as condor_submit_dag refuses the sub-DAG then.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let top = "JOB a n.sub\nJOB b n.sub\nSUBDAG EXTERNAL s inner.dag\nPARENT a CHILD s\n";
    let tb = dag_testbed(d, top, "", "");
    std::fs::write(d.join("w.toml"), "").unwrap();
    std::fs::write(d.join("inner.dag"), "JOB x n.sub\n").unwrap();
    std::fs::write(d.join("w.dag.rescue001"), "DONE a\nDONE s\n").unwrap();
    let (code, out, err) = crate::common::run_testbed(&tb, &["--rescue-from", "1"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_metrics(
        &metrics(&d.join("w.dag.metrics")),
        &[("jobs_submitted", 1)],
        "sim",
    );
    std::fs::write(d.join("w.dag.rescue001"), "DONE a\n").unwrap();
    let (code, out, err) = crate::common::run_testbed(&tb, &["--rescue-from", "1"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("no rescue DAG number 1"), "{err}");
    // A rescue file that is not there is bad input.
    let dir = tempfile::tempdir().unwrap();
    let tb = rescue_file_testbed(dir.path());
    let missing = dir.path().join("w.dag.rescue009");
    let (code, _, err) =
        crate::common::run_testbed(&tb, &["--rescue-file", missing.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("w.dag.rescue009") && err.contains("no such rescue file"),
        "{err}"
    );
}

/// Each DAGMan's log, `<dag>.dagman.out`, in DAGMan's words
/// (`debug_printf` lines with its header; `DAGMAN_DEBUG = D_TEST D_CAT` from
/// the DAG's CONFIG tags each line and adds `CHECK CATEGORY`): a retry
/// after a job's failure, a NOOP node's faked job, a sub-DAG's recursive
/// submit and its own log, the exit; a failed run's log, and the rescue
/// run's appended to it. Both engines.
#[test]
fn each_dagman_writes_its_log_in_dagmans_words() {
    let header =
        regex_lite::Regex::new(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d \(D_(ALWAYS|TEST)\) ").unwrap();
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let top = "CONFIG w.config\nJOB a n.sub\nCATEGORY a cat\nMAXJOBS cat 1\n\
                   JOB b n.sub\nRETRY b 2\nJOB c n.sub NOOP\n\
                   SUBDAG EXTERNAL s inner.dag\nPARENT a CHILD c\nPARENT b c CHILD s\n";
        let tb = dag_testbed(d, top, "", "");
        std::fs::write(d.join("w.config"), "DAGMAN_DEBUG = D_TEST D_CAT\n").unwrap();
        std::fs::write(d.join("inner.dag"), "JOB x n.sub\n").unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let log = std::fs::read_to_string(d.join("w.dag.dagman.out")).unwrap();
        for l in log.lines() {
            assert!(header.is_match(l), "{engine}: `{l}`");
        }
        let at = |s: &str| {
            log.find(s)
                .unwrap_or_else(|| panic!("{engine}: no `{s}` in\n{log}"))
        };
        at("(D_TEST) CHECK CATEGORY cat 1 1");
        // b's first attempt exits 5 (the sidecar): it is retried once.
        let failed =
            regex_lite::Regex::new(r"Node b job proc \(\d+\.0\.0\) failed with status 5\.")
                .unwrap()
                .find(&log)
                .unwrap_or_else(|| panic!("{engine}: b's failure not logged"))
                .start();
        let retry = at("Retrying node b (retry #1 of 2)...");
        assert!(failed < retry, "{engine}");
        assert!(!log.contains("retry #2 of 2"), "{engine}");
        assert_eq!(
            log.matches("Event: ULOG_SUBMIT for HTCondor Node b ")
                .count(),
            2
        );
        // c is a NOOP node: DAGMan fakes its job, with no HTCondor id.
        at("Event: ULOG_SUBMIT for HTCondor Node c (0.2147483647.1)");
        at("Node c job proc (0.2147483647.1) completed successfully.");
        let recursive =
            at("Recursive submit command: <condor_submit_dag -no_submit -update_submit inner.dag>");
        assert!(recursive > retry, "{engine}: s after b");
        assert!(
            log.trim_end().ends_with("EXITING WITH STATUS 0"),
            "{engine}"
        );
        let inner = std::fs::read_to_string(d.join("inner.dag.dagman.out")).unwrap();
        assert!(inner.contains("Node x job proc ("), "{engine}: {inner}");
        assert!(
            inner.trim_end().ends_with("EXITING WITH STATUS 0"),
            "{engine}"
        );
        // b fails for good without its RETRY: the DAG exits 1, and the run
        // from its rescue DAG appends to the log.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = dag_testbed(d, "JOB a n.sub\nJOB b n.sub\nPARENT a CHILD b\n", "", "");
        for run in 1..=2 {
            let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
            assert_eq!(code, Some(1), "{engine} run {run}: {out}{err}");
        }
        let log = std::fs::read_to_string(d.join("w.dag.dagman.out")).unwrap();
        assert_eq!(log.matches("STARTING UP").count(), 2, "{engine}");
        // Each run's last table, its exit's, says a node failed.
        for run in log.split("STARTING UP").skip(1) {
            let last = run.rfind("DAG status: ").unwrap();
            assert!(run[last..].starts_with("DAG status: 2 (DAG_STATUS_NODE_FAILED)"));
        }
        assert_eq!(log.matches("EXITING WITH STATUS 1").count(), 2, "{engine}");
        let second = log.rfind("STARTING UP").unwrap();
        assert!(log[second..].contains(
            "Found rescue DAG number 1; running w.dag.rescue001 in combination with normal DAG file"
        ));
        assert!(
            !log[second..].contains("Node a job proc"),
            "{engine}: a DONE"
        );
        assert!(!log.contains("(D_ALWAYS)"), "{engine}: no D_CAT, no tags");
    }
}

/// DAGMan's `DAG status` tables as the run goes: one whenever a count
/// changed, each agreeing with the node events logged before it (an
/// oracle read from the log's own event lines, sharing no code with the
/// tables): done nodes are those whose job completed, failed ones those
/// whose job failed (no RETRY here), queued ones those submitted and not
/// yet terminated; a failure makes the status 2; the last table is the
/// exit's. `b` fails, `c` below it is futile, `a` and `d` end well.
/// Both engines.
#[test]
fn dagmans_status_tables_follow_the_nodes_as_they_go() {
    let row = regex_lite::Regex::new(r"^ *(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$")
        .unwrap();
    let event = regex_lite::Regex::new(
        r"(ULOG_SUBMIT|ULOG_JOB_TERMINATED) for HTCondor Node (\w+) |Node (\w+) job proc \([^)]*\) (completed successfully|failed with status)",
    )
    .unwrap();
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dag = "JOB a n.sub\nJOB b n.sub\nJOB c n.sub\nJOB d n.sub\nPARENT a CHILD d\nPARENT b CHILD c\n";
        let tb = dag_testbed(d, dag, "", "");
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(1), "{engine}: {out}{err}");
        let log = std::fs::read_to_string(d.join("w.dag.dagman.out")).unwrap();
        let lines: Vec<&str> = log
            .lines()
            .map(|l| l.splitn(3, ' ').nth(2).unwrap_or(""))
            .collect();
        let (mut submitted, mut terminated) = (Vec::new(), Vec::new());
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        let mut tables = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if let Some(c) = event.captures(l) {
                let node = c.get(2).or(c.get(3)).unwrap().as_str().to_string();
                let list = match c.get(1).or(c.get(4)).unwrap().as_str() {
                    "ULOG_SUBMIT" => &mut submitted,
                    "ULOG_JOB_TERMINATED" => &mut terminated,
                    "completed successfully" => &mut done,
                    _ => &mut failed,
                };
                list.push(node);
                continue;
            }
            let Some(c) = row.captures(l) else { continue };
            let n: Vec<usize> = (1..=8).map(|k| c[k].parse().unwrap()).collect();
            let status = lines[i - 4];
            assert_eq!(n.iter().sum::<usize>(), 4, "{engine}: {l}");
            let count = |v: &Vec<String>| v.iter().collect::<std::collections::BTreeSet<_>>().len();
            assert_eq!(n[0], count(&done), "{engine}: done in {l}\n{log}");
            assert_eq!(n[6], count(&failed), "{engine}: failed in {l}\n{log}");
            let queued = (submitted.iter().collect::<std::collections::BTreeSet<_>>())
                .into_iter()
                .filter(|s| !terminated.contains(s))
                .count();
            assert_eq!(n[2], queued, "{engine}: queued in {l}\n{log}");
            let want = if n[6] > 0 {
                "DAG status: 2 "
            } else {
                "DAG status: 0 "
            };
            assert!(status.starts_with(want), "{engine}: `{status}` over {l}");
            tables.push(n);
        }
        assert!(tables.len() >= 3, "{engine}: tables as the run goes\n{log}");
        let exit = tables.last().unwrap();
        assert_eq!(exit, &vec![2, 0, 0, 0, 0, 0, 1, 1], "{engine}: {log}");
        assert_eq!(
            &tables[tables.len() - 2],
            exit,
            "{engine}: the last before the exit's"
        );
        assert!(
            tables.iter().any(|n| n[2] == 2),
            "{engine}: a and b queued together"
        );
    }
}

/// A DAG DAGMan cannot parse: `gridbed run` fails on it as DAGMan does,
/// and leaves DAGMan's log of it (the error, `Failed to parse`, exit 1);
/// `gridbed check` leaves none.
#[test]
fn a_refused_dag_leaves_dagmans_log_of_its_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tb = dag_testbed(d, "JOB a n.sub\nJOB b+c n.sub\n", "", "");
    let log = d.join("w.dag.dagman.out");
    let (code, _, err) = crate::common::gridbed(&["check", tb.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!log.exists(), "check writes no DAGMan log");
    let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", "sim"]);
    assert_eq!(code, Some(2), "{out}{err}");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().map(|l| l.split_at(18).1).collect();
    assert!(
        lines.contains(
            &"ERROR: w.dag: line 2: JOB: node name `b+c` contains one or more illegal characters (`+` joins splice names)"
        ),
        "{text}"
    );
    let end = &lines[lines.len() - 3..];
    assert_eq!(end[0], "Failed to parse w.dag");
    assert_eq!(end[1], "Removing any/all submitted HTCondor jobs...");
    assert!(end[2].ends_with("EXITING WITH STATUS 1"), "{text}");
}

/// A job whose program runs (`jobs = "run"`) reads its `input` and writes
/// its `output` and `error` files, as condor_submit's description names
/// them (from its `initialdir`, macros substituted, made anew each run);
/// one file named for both gets both. Both engines.
#[test]
fn a_running_jobs_streams_go_to_the_files_its_description_names() {
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let run = "scripts = \"run\"\njobs = \"run\"";
        let tb = dag_testbed(d, "JOB a n.sub\nJOB both both.sub\n", "", run);
        std::fs::write(d.join("w.toml"), "").unwrap();
        std::fs::write(
            d.join("n.sub"),
            "executable = /bin/sh\narguments = \"-c 'cat; echo to-err >&2'\"\n\
             initialdir = out\ninput = ../in.txt\noutput = $(JOB).out\nerror = $(JOB).err\nqueue\n",
        )
        .unwrap();
        std::fs::write(
            d.join("both.sub"),
            "executable = /bin/sh\narguments = \"-c 'echo one; echo two >&2'\"\n\
             output = both.log\nerror = both.log\nqueue\n",
        )
        .unwrap();
        std::fs::create_dir(d.join("out")).unwrap();
        std::fs::write(d.join("in.txt"), "from stdin\n").unwrap();
        std::fs::write(
            d.join("out/a.out"),
            "an older run's, longer than this one's\n",
        )
        .unwrap();
        let (code, out, err) = crate::common::run_testbed(&tb, &["--engine", engine]);
        assert_eq!(code, Some(0), "{engine}: {out}{err}");
        let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
        assert_eq!(read("out/a.out"), "from stdin\n", "{engine}");
        assert_eq!(read("out/a.err"), "to-err\n", "{engine}");
        let both = read("both.log");
        assert!(
            both.contains("one\n") && both.contains("two\n"),
            "{engine}: {both}"
        );
    }
}

/// DAGMan reads a sub-DAG's file as it submits the node, so what ran
/// before may write it: A's POST script rewrites `inner.dag` (X alone) to
/// X then Y before S is submitted, and S runs both. A sub-DAG whose nodes
/// the sidecar gives data (D: P writes `f`, Q reads it) is read with the
/// DAG instead, as the data placement must know them ahead: its nodes are
/// in the workflow the run starts with, with their files. Both engines.
#[test]
fn a_subdag_is_read_as_its_node_is_submitted_after_what_ran_before_it() {
    let top = "JOB A n.sub\nSCRIPT POST A grow.sh\nSUBDAG EXTERNAL S inner.dag\n\
               SUBDAG EXTERNAL D data.dag\nPARENT A CHILD S D\n";
    let sidecar = "[[file]]\nname = \"f\"\nsize = 1000\n\
                   [[job]]\nname = \"D+P\"\noutputs = [\"f\"]\n\
                   [[job]]\nname = \"D+Q\"\ninputs = [\"f\"]\n";
    for engine in ["sim", "live"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let tb = dag_testbed(d, top, "", "scripts = \"run\"");
        std::fs::write(d.join("w.toml"), sidecar).unwrap();
        std::fs::write(d.join("inner.dag"), "JOB X n.sub\n").unwrap();
        std::fs::write(
            d.join("data.dag"),
            "JOB P n.sub\nJOB Q n.sub\nPARENT P CHILD Q\n",
        )
        .unwrap();
        let grow = format!(
            "#!/bin/sh\nprintf 'JOB X n.sub\\nJOB Y n.sub\\nPARENT X CHILD Y\\n' > {}\n",
            d.join("inner.dag").display()
        );
        crate::common::executable(&d.join("grow.sh"), &grow);
        let s = load(&tb);
        let run = match engine {
            "sim" => gridbed::sim::run(&s).unwrap().result,
            _ => gridbed::live::run(&s, Default::default()).unwrap().result,
        };
        assert!(run.succeeded, "{engine}: {:?}", run.counts);
        let at_start = |n: &str| s.workflow.jobs.iter().position(|j| j.name == n);
        assert_eq!(
            (at_start("S+X"), at_start("S+Y")),
            (None, None),
            "{engine}: S is read as it is submitted"
        );
        let job = |n: &str| run.workflow.jobs.iter().position(|j| j.name == n).unwrap();
        for n in ["S+X", "S+Y", "D+P", "D+Q"] {
            let a = &run.records.jobs[job(n)].attempts;
            assert_eq!(a.len(), 1, "{engine}: {n} ran once");
        }
        let (x, y) = (job("S+X"), job("S+Y"));
        assert!(
            run.records.jobs[x].attempts[0].ended
                <= Some(run.records.jobs[y].attempts[0].prescript),
            "{engine}: Y after X"
        );
        let p = at_start("D+P").expect("D is read with the DAG");
        let f = &s.workflow.files[s.workflow.jobs[p].outputs[0]];
        assert_eq!((f.name.as_str(), f.size), ("f", 1000), "{engine}");
    }
}
