//! Policies from outside the crate (issue 38): registered through the
//! library, and `external[cmd=…]` programs over a pipe. The Python
//! re-implementations of Data-Present, LRU and first-available
//! (`examples/python/`) equal the built-ins: whole runs in the simulator,
//! every selection, eviction and farm dispatch decision live (live
//! runs differ from run to run for the built-ins too, so a live run asks
//! both and compares each answer). Every bad program ends the run with
//! exit 2 and a message naming the program and the decision.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gridbed::config::{self, Overrides};
use gridbed::core::cache_index::ExecId;
use gridbed::core::{FileId, JobId, SiteId};
use gridbed::policy::dispatch::{DispatchPolicy, FarmView, TaskQueue};
use gridbed::policy::{Candidate, EvictionPolicy, GridView, Registry, SiteSelector};

use super::common::{self, catalog, gridbed, record_with_detail};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn python(example: &str) -> String {
    format!(
        "external[cmd=\"python3 {}\"]",
        repo(&format!("examples/python/{example}.py")).display()
    )
}

/// A run's record (detail from its database) without what differs between
/// two runs of the same schedule: wall times and the policies' names.
fn record(dir: &Path, testbed: &Path, name: &str, args: &[&str]) -> (serde_json::Value, String) {
    let (json, db) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.db")),
    );
    let sites = catalog();
    let mut all = vec![
        "run",
        testbed.to_str().unwrap(),
        "--sites",
        sites.to_str().unwrap(),
        "--engine",
        "sim",
        "--json",
        json.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = gridbed(&all);
    assert_eq!(code, Some(0), "{name}: {stderr}");
    let mut rec = record_with_detail(&json);
    for key in ["wall_s", "setup_wall_s"] {
        rec["summary"].as_object_mut().unwrap().remove(key);
    }
    // What names the run and its policies differs; what it did must not.
    for key in ["run_id", "strategy", "eviction", "db", "testbed_path"] {
        rec.as_object_mut().unwrap().remove(key);
    }
    let table: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            !["wall", "strategy", "written to"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    (rec, table.join("\n"))
}

/// Runs `builtin` and `external` (testbed, arguments) and asserts that
/// their tables and records are the same; the built-in's table.
fn assert_same(
    dir: &Path,
    what: &str,
    builtin: (&Path, &[&str]),
    external: (&Path, &[&str]),
) -> String {
    let (a, table) = record(dir, builtin.0, &format!("{what}-builtin"), builtin.1);
    let (b, ext_table) = record(dir, external.0, &format!("{what}-external"), external.1);
    assert_eq!(table, ext_table, "{what}: the tables differ");
    assert_eq!(a, b, "{what}: the records differ");
    table
}

#[test]
#[ignore = "needs python3"]
fn python_data_present_and_lru_equal_the_builtins_in_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let strategy = python("data_present");
    let external = ["--strategy", strategy.as_str()];
    // The quickstart: Data-Present with caching (the testbed sets it).
    let quickstart = repo("testbeds/quickstart.toml");
    assert_same(
        dir.path(),
        "qs",
        (&quickstart, &[]),
        (&quickstart, &external),
    );

    // SPCL's Grid3 testbed, 2,220 jobs: Data-Present leaving the replica
    // policy to the testbed (`delete`); then its own clustered strategy
    // with LRU making room 128,714 times (149,127 before storage-aware release
    // kept jobs off disks without room).
    let spcl = repo("testbeds/spcl-live-4.toml");
    let dp = ["--strategy", "data-present[caching=false]"];
    assert_same(dir.path(), "spcl-dp", (&spcl, &dp), (&spcl, &external));
    let text = std::fs::read_to_string(&spcl).unwrap();
    let lru = python("lru");
    let with_lru = text.replace("eviction = \"lru\"", &format!("eviction = '{lru}'"));
    assert_ne!(with_lru, text);
    let spcl_lru = dir.path().join("spcl-lru.toml");
    std::fs::write(&spcl_lru, &with_lru).unwrap();
    let table = assert_same(dir.path(), "spcl-lru", (&spcl, &[]), (&spcl_lru, &[]));
    assert!(table.contains("evictions 128714"), "{table}");

    // The small Falkon farm, first-available: the farm's report is the same.
    let farm = repo("testbeds/falkon-diffusion-small.toml");
    let dispatch = format!(
        "external[cmd=\"python3 {}\", window=16]",
        repo("examples/python/first_available.py").display()
    );
    let report = |policy: &str| {
        let (code, stdout, stderr) = gridbed(&[
            "farm",
            farm.to_str().unwrap(),
            "--engine",
            "sim",
            "--policy",
            policy,
        ]);
        assert_eq!(code, Some(0), "{policy}: {stderr}");
        // Past the title (the policy's name) and the wall time.
        stdout.lines().skip(2).collect::<Vec<_>>().join("\n")
    };
    let builtin = report("first-available");
    assert!(builtin.contains("3000 tasks"), "{builtin}");
    assert_eq!(builtin, report(&dispatch));
}

/// Asks the built-in and the program every placement, takes the program's
/// and counts where they differ.
struct TwinSelector {
    builtin: Box<dyn SiteSelector>,
    external: Box<dyn SiteSelector>,
    asked: Arc<AtomicUsize>,
    differed: Arc<AtomicUsize>,
}

impl SiteSelector for TwinSelector {
    fn select(&mut self, job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let b = self.builtin.select(job, view, eligible);
        let e = self.external.place(job, view, eligible);
        self.asked.fetch_add(1, Ordering::Relaxed);
        if e != Some(b) {
            self.differed.fetch_add(1, Ordering::Relaxed);
        }
        e.unwrap_or(b)
    }
}

/// LRU's choice beside the program's, on the same pool.
struct TwinEviction {
    external: Box<dyn EvictionPolicy>,
    /// (last access, file) of every evictable file, and sizes.
    lru: BTreeSet<(u64, FileId)>,
    sizes: std::collections::HashMap<FileId, (u64, u64)>,
    asked: Arc<AtomicUsize>,
    differed: Arc<AtomicUsize>,
}

impl EvictionPolicy for TwinEviction {
    fn key(&mut self, c: &Candidate) -> u64 {
        self.forget_here(c.file);
        self.lru.insert((c.last_access, c.file));
        self.sizes.insert(c.file, (c.last_access, c.size));
        self.external.key(c)
    }
    fn forget(&mut self, file: FileId) {
        self.forget_here(file);
        self.external.forget(file);
    }
    fn chooses(&self) -> bool {
        true
    }
    fn victims(&mut self, need: u64) -> Option<Vec<FileId>> {
        let (mut freed, mut lru) = (0, Vec::new());
        for &(_, f) in &self.lru {
            if freed >= need {
                break;
            }
            freed += self.sizes[&f].1;
            lru.push(f);
        }
        let e = self.external.victims(need);
        self.asked.fetch_add(1, Ordering::Relaxed);
        if e.as_ref() != Some(&lru) {
            self.differed.fetch_add(1, Ordering::Relaxed);
        }
        e.or(Some(lru))
    }
}

impl TwinEviction {
    fn forget_here(&mut self, file: FileId) {
        if let Some((last, _)) = self.sizes.remove(&file) {
            self.lru.remove(&(last, file));
        }
    }
}

/// The built-in first-available's two answers beside the program's, on
/// the same farm.
struct TwinDispatch {
    builtin: Box<dyn DispatchPolicy>,
    external: Box<dyn DispatchPolicy>,
    asked: Arc<AtomicUsize>,
    differed: Arc<AtomicUsize>,
}

impl TwinDispatch {
    fn count<T: PartialEq>(&self, b: &T, e: &T) {
        self.asked.fetch_add(1, Ordering::Relaxed);
        if b != e {
            self.differed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl DispatchPolicy for TwinDispatch {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        let b = self.builtin.notify(files, view);
        let e = self.external.notify(files, view);
        self.count(&b, &e);
        e
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        let b = self.builtin.pick_up(e, queue, max, view);
        let x = self.external.pick_up(e, queue, max, view);
        self.count(&b, &x);
        x
    }
}

#[test]
#[ignore = "needs python3"]
fn python_first_available_answers_as_the_builtin_on_a_live_farm() {
    let (asked, differed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut registry = Registry::builtin();
    let (a, d) = (asked.clone(), differed.clone());
    registry
        .register_dispatch("twin-first-available", move |c| {
            let builtin = Registry::shared_builtin().dispatch_policy("first-available", c.seed());
            let program = python("first_available").replace("\"]", "\", window=16]");
            let external = Registry::shared_builtin().dispatch_policy(&program, c.seed());
            Ok(Box::new(TwinDispatch {
                builtin: builtin.map_err(|e| e.to_string())?,
                external: external.map_err(|e| e.to_string())?,
                asked: a.clone(),
                differed: d.clone(),
            }))
        })
        .unwrap();
    let registry = Arc::new(registry);
    let path = repo("testbeds/falkon-diffusion-small.toml");
    let mut farm = gridbed::config::farm::load_with(&path, &registry).unwrap();
    farm.spec.policy = "twin-first-available".into();
    // The twins are compared decision by decision, whatever the clock: a
    // clock 4× the testbed's asks the same of them in a quarter of the time.
    farm.emulation.time_scale *= 4.0;
    let opts = gridbed::live::farm::FarmOptions {
        registry: Some(registry.clone()),
        ..Default::default()
    };
    let live = gridbed::live::farm::run(&farm.spec, &farm.tasks, farm.emulation, opts).unwrap();
    assert_eq!(live.run.tasks, farm.tasks.len(), "every task ran");
    let asked = asked.load(Ordering::Relaxed);
    assert!(asked >= farm.tasks.len(), "asked {asked} decisions");
    assert_eq!(differed.load(Ordering::Relaxed), 0, "of {asked} decisions");
}

/// A Condor-like selector: the eligible site with a free slot holding the
/// most input bytes, or hold the job while none is free. Served in batches
/// of `sys.argv[1]` offers; every request it gets is logged to `sys.argv[2]`.
const FREE_OR_HOLD: &str = r#"
import json, sys
sys.path.insert(0, sys.argv[3])
import gridbed as gp

def select(request):
    free = [s for s in request["eligible"] if request["sites"][s]["free"] > 0]
    if not free:
        return None
    present = {}
    for f in request["job"]["inputs"]:
        for site in f["holders"]:
            present[site] = present.get(site, 0) + f["size"]
    best = max(present.get(s, 0) for s in free)
    tied = [s for s in free if present.get(s, 0) == best]
    return tied[gp.pick(request["draw"], len(tied))]

class Logged:
    def __init__(self, log):
        self.log = log
    def __iter__(self):
        for line in sys.stdin:
            self.log.write(line)
            yield line

with open(sys.argv[2], "w") as log:
    gp.serve(select=select, batch=int(sys.argv[1]), stdin=Logged(log))
"#;

#[test]
#[ignore = "needs python3"]
fn a_program_answering_a_round_at_a_time_runs_as_one_asked_each_job_alone() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("free_or_hold.py");
    std::fs::write(&program, FREE_OR_HOLD).unwrap();
    // The quickstart without its prescript interval: a round places as
    // many jobs as there are free slots, then holds the rest.
    let text = std::fs::read_to_string(repo("testbeds/quickstart.toml")).unwrap();
    let unspaced = text.replace("prescript_interval = 1.0", "prescript_interval = 0");
    assert_ne!(unspaced, text);
    let quickstart = dir.path().join("quickstart-unspaced.toml");
    std::fs::write(&quickstart, unspaced).unwrap();
    let strategy = |batch: usize| {
        format!(
            "external[cmd=\"python3 {} {batch} {} {}\"]",
            program.display(),
            dir.path().join(format!("requests-{batch}")).display(),
            repo("python").display()
        )
    };
    let (round, alone) = (strategy(1024), strategy(1));
    // Each placement takes a slot the offers after it see taken.
    assert_same(
        dir.path(),
        "batch",
        (&quickstart, &["--strategy", &alone]),
        (&quickstart, &["--strategy", &round]),
    );
    let offers = |batch: usize| -> Vec<usize> {
        let log = std::fs::read_to_string(dir.path().join(format!("requests-{batch}"))).unwrap();
        log.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["type"] == "select")
            .map(|r| r["offers"].as_array().map_or(1, Vec::len))
            .collect()
    };
    let (round, alone) = (offers(1024), offers(1));
    assert!(alone.iter().all(|&n| n == 1), "batch=1 got several offers");
    assert!(
        round.len() * 2 < alone.len() && round.iter().any(|&n| n > 4),
        "{} requests answered {} decisions: expected rounds in fewer requests",
        round.len(),
        alone.len()
    );
}

#[test]
#[ignore = "needs python3"]
fn python_data_present_and_lru_answer_as_the_builtins_in_a_live_run() {
    let counts: [Arc<AtomicUsize>; 4] = Default::default();
    let mut registry = Registry::builtin();
    let [asked, differed, evictions, evictions_differed] = counts.clone();
    registry
        .register_selector("twin-data-present", move |c| {
            let builtin = Registry::shared_builtin().site_selector("data-present", c.seed());
            let external =
                Registry::shared_builtin().site_selector(&python("data_present"), c.seed());
            Ok(Box::new(TwinSelector {
                builtin: builtin.map_err(|e| e.to_string())?,
                external: external.map_err(|e| e.to_string())?,
                asked: asked.clone(),
                differed: differed.clone(),
            }))
        })
        .unwrap()
        .register_eviction("twin-lru", move |c| {
            let external = Registry::shared_builtin().eviction_policy(&python("lru"), c.seed());
            Ok(Box::new(TwinEviction {
                external: external.map_err(|e| e.to_string())?,
                lru: BTreeSet::new(),
                sizes: Default::default(),
                asked: evictions.clone(),
                differed: evictions_differed.clone(),
            }))
        })
        .unwrap();
    // The quickstart with pools of 30 MB: the busy sites evict as they go
    // (120 evictions and 35 re-plans in the simulator).
    let text = std::fs::read_to_string(repo("testbeds/quickstart.toml"))
        .unwrap()
        .replace(
            "strategy = \"data-present\"",
            "strategy = \"twin-data-present\"",
        )
        .replace("eviction = \"lru\"", "eviction = \"twin-lru\"")
        .replace("cpus = ", "disk = \"30 MB\"\ncpus = ");
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_testbed(dir.path(), "twins.toml", &text);
    let overrides = Overrides {
        sites_file: Some(catalog()),
        ..Default::default()
    };
    let scenario = config::load_with(&path, &overrides, Arc::new(registry)).unwrap();
    let run = gridbed::live::run(&scenario, Default::default()).unwrap();
    assert!(run.succeeded, "the run failed");
    let n = |i: usize| counts[i].load(Ordering::Relaxed);
    assert!(n(0) >= 102, "at least one placement per job: {}", n(0));
    assert!(n(2) > 10, "evictions asked: {}", n(2));
    assert_eq!((n(1), n(3)), (0, 0), "placements and evictions that differ");
    assert!(run.evictions.iter().sum::<u64>() as usize >= n(2));
}

/// `gridbed run quickstart --engine sim --db DIR/run.db --strategy
/// POLICY`, with a shell program written in DIR: (exit code, stderr, DIR).
fn run_with_program(
    script: &str,
    policy: impl Fn(&str) -> String,
) -> (Option<i32>, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("policy.sh");
    std::fs::write(&prog, script).unwrap();
    let spec = policy(&format!("sh {}", prog.display()));
    let db = dir.path().join("run.db");
    let (quickstart, sites) = (repo("testbeds/quickstart.toml"), catalog());
    let (code, _, stderr) = gridbed(&[
        "run",
        quickstart.to_str().unwrap(),
        "--sites",
        sites.to_str().unwrap(),
        "--engine",
        "sim",
        "-q",
        "--db",
        db.to_str().unwrap(),
        "--strategy",
        &spec,
    ]);
    (code, stderr, dir)
}

/// The handshake a shell program answers, serving `select`.
const HELLO: &str = "read l; echo '{\"type\":\"hello\",\"protocol\":1,\"serves\":[\"select\"]}'\n";

/// Answers every request with `answer` (`ID` replaced by the request's id).
fn answering(answer: &str) -> String {
    format!(
        "{HELLO}while read l; do id=$(echo \"$l\" | sed 's/^{{\"id\":\\([0-9]*\\),.*/\\1/'); echo '{}' | sed \"s/ID/$id/\"; done\n",
        answer
    )
}

#[test]
fn every_bad_program_ends_the_run_with_exit_2_naming_the_program_and_the_decision() {
    let select = |cmd: &str| format!("external[cmd=\"{cmd}\"]");
    let quick = |cmd: &str| format!("external[cmd=\"{cmd}\", timeout=0.5]");
    let missing = |_: &str| select("/nonexistent/policy");
    type Spec<'a> = &'a dyn Fn(&str) -> String;
    let cases: Vec<(&str, String, Spec, &str)> = vec![
        ("missing", String::new(), &missing, "handshake: it exited"),
        (
            "exits",
            "exit 3\n".into(),
            &select,
            "handshake: it exited (exit status: 3)",
        ),
        (
            "garbage",
            "read l; echo hello; cat\n".into(),
            &select,
            "answered `hello`, which is not a JSON object",
        ),
        (
            "old protocol",
            "read l; echo '{\"type\":\"hello\",\"protocol\":2,\"serves\":[\"select\"]}'; cat\n"
                .into(),
            &select,
            "it speaks protocol 2, this gridbed speaks 1",
        ),
        (
            "serves another decision",
            "read l; echo '{\"type\":\"hello\",\"protocol\":1,\"serves\":[\"evict\"]}'; cat\n"
                .into(),
            &select,
            "it does not serve `select`",
        ),
        (
            "no such site",
            answering("{\"id\":ID,\"site\":99}"),
            &select,
            "answered site 99, which cannot run it",
        ),
        (
            "a site that cannot run jobs",
            answering("{\"id\":ID,\"site\":\"submit-host\"}"),
            &select,
            "answered site \"submit-host\", which cannot run it",
        ),
        (
            "wrong id",
            answering("{\"id\":7777,\"site\":1}"),
            &select,
            "expected its `id` repeated",
        ),
        (
            "reports an error",
            answering("{\"id\":ID,\"error\":\"boom\"}"),
            &select,
            "it reported an error: boom",
        ),
        (
            "a batch answered short",
            answering("{\"id\":ID,\"answers\":[]}").replacen(
                "\"serves\":[\"select\"]",
                "\"serves\":[\"select\"],\"batch\":4",
                1,
            ),
            &select,
            "with one answer for each of the",
        ),
        (
            "a batch of none",
            "read l; echo '{\"type\":\"hello\",\"protocol\":1,\"serves\":[\"select\"],\"batch\":0}'; cat\n"
                .into(),
            &select,
            "expected a whole number of offers, at least 1",
        ),
        (
            "dies mid-run",
            format!("{HELLO}read l; echo oops >&2; exit 1\n"),
            &select,
            "its stderr ended with: oops",
        ),
        (
            "hangs",
            format!("{HELLO}sleep 30\n"),
            &quick,
            "no answer within 0.5 s",
        ),
    ];
    for (what, script, policy, expected) in cases {
        let started = std::time::Instant::now();
        let (code, stderr, _) = run_with_program(&script, policy);
        assert_eq!(code, Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains("external policy `") && stderr.contains(expected),
            "{what}: expected `{expected}` in: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            started.elapsed().as_secs() < 20,
            "{what}: took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_failed_program_leaves_the_jobs_that_ran_in_the_database() {
    // Places three jobs, then answers garbage.
    let script = format!(
        "{HELLO}for k in 1 2 3; do read l; id=$(echo \"$l\" | sed 's/^{{\"id\":\\([0-9]*\\),.*/\\1/'); echo \"{{\\\"id\\\":$id,\\\"site\\\":1}}\"; done; read l; echo nonsense\n"
    );
    let (code, stderr, dir) = run_with_program(&script, |cmd| format!("external[cmd=\"{cmd}\"]"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("answered `nonsense`"), "{stderr}");
    let conn = rusqlite::Connection::open(dir.path().join("run.db")).unwrap();
    let placed: i64 = conn
        .query_row("SELECT COUNT(DISTINCT job) FROM attempts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(placed, 3, "the three jobs placed before the failure");
}

// The library's examples, compiled in here from `examples/`: each
// registers its own policy, runs a shipped testbed in both engines (beside a
// built-in, as a user runs it) and fails when a run did not do what it shows.
// Their `main`s (`cargo run --example`) are not called here.
#[path = "../../examples/custom_dispatch.rs"]
#[allow(dead_code)]
mod custom_dispatch;
#[path = "../../examples/custom_eviction.rs"]
#[allow(dead_code)]
mod custom_eviction;
#[path = "../../examples/custom_selector.rs"]
#[allow(dead_code)]
mod custom_selector;

#[test]
fn example_a_custom_selector_runs_in_both_engines() {
    // The example's own policy alone: its built-in baseline is checked
    // in both engines elsewhere.
    custom_selector::compare(&["least-loaded"]).unwrap();
}

#[test]
fn example_a_custom_eviction_runs_in_both_engines() {
    // The example's own policy alone: its built-in baseline is checked
    // in both engines elsewhere.
    custom_eviction::compare(&["mru"]).unwrap();
}

#[test]
fn example_a_custom_dispatch_runs_in_both_engines() {
    // The example's own policy alone: its built-in baseline is checked
    // in both engines elsewhere.
    custom_dispatch::compare(&["cache-affine"]).unwrap();
}

/// Issue 61: a selector that holds every job leaves the run nothing to do.
/// Both engines end it (exit 1) saying why, in the same words, the record
/// and the database written, rather than wait for ever.
#[test]
fn a_run_held_by_its_selector_ends_saying_why_in_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("hold.py");
    std::fs::write(
        &program,
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport gridbed\ngridbed.serve(select=lambda r: None)\n",
            repo("python").display().to_string()
        ),
    )
    .unwrap();
    let strategy = format!("external[cmd=\"python3 {}\"]", program.display());
    let testbed = repo("testbeds/quickstart.toml");
    let sites = catalog();
    let mut said = Vec::new();
    for engine in ["sim", "live"] {
        let (json, db) = (
            dir.path().join(format!("{engine}.json")),
            dir.path().join(format!("{engine}.db")),
        );
        let (code, stdout, stderr) = gridbed(&[
            "run",
            testbed.to_str().unwrap(),
            "--sites",
            sites.to_str().unwrap(),
            "--engine",
            engine,
            "--strategy",
            &strategy,
            "--json",
            json.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(code, Some(1), "{engine}: {stderr}");
        assert!(stderr.contains("0 of 102 jobs ended"), "{engine}: {stderr}");
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let why = record["summary"]["failures"][0]["failure"]
            .as_str()
            .or_else(|| record["summary"]["failures"][0]["reason"].as_str())
            .map(String::from)
            .unwrap_or_else(|| record["summary"]["failures"][0].to_string());
        assert!(
            why.contains("could make no more progress")
                && why.contains(&format!("held by the site selector `{strategy}`")),
            "{engine}: {why}\n{stdout}"
        );
        assert!(db.exists(), "{engine}: no database");
        said.push(why);
    }
    assert_eq!(said[0], said[1], "the same reason from both engines");
}
