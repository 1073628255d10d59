//! HTCondor's own DAGMan regression tests as the oracle (issue 62): each
//! test of `../shared/reference/htcondor-dagman-tests/` (byte-exact from
//! HTCondor's `src/condor_tests/`) that gridbed can run is run in both
//! engines on its own DAG, submit files and PRE/POST scripts, and checked
//! as its own driver (`job_dagman_*.run`, `test_*.py`) checks DAGMan's run:
//! the exit value, the node status file's lines, the jobstate log's lines,
//! the files its scripts write, its rescue DAGs.
//!
//! Where a driver writes its DAG with Perl of its own (subs, or a block
//! of lines), the harness runs that Perl with the driver's settings; where it starts HTCondor's socket server for its
//! scripts to check in with, the harness makes the scripts from their
//! templates and starts the server as the driver does, and runs the
//! driver's own reader of the server's log.
//!
//! A pytest driver (`test_*.py`) runs as itself: its own fixtures write
//! its DAGs and files and its own test methods assert, with stand-ins for
//! HTCondor's test kit and Python bindings (`htcondor_py/`) in which
//! submitting a DAG runs `gridbed run` on it, each job running the
//! program its submit description names (`jobs = "run"`).
//!
//! What the drivers check is read from the drivers at run time (their
//! arrays of expected lines); what a driver checks and how each node's job
//! behaves is catalogued in `htcondor_suite.toml`, in our words: a test's
//! scripts run for real, and so do its jobs' programs where they end at
//! once (`run_jobs`: what they write is checked as the driver checks it);
//! other jobs are exit statuses and durations. The catalogue records for
//! each test whether gridbed agrees, and this test fails when a result
//! changes either way, so that the list in `docs/dagman.md` stays true.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gridbed::core::ScriptKind;
use gridbed::db::JobEntry;
use serde::Deserialize;

/// The catalogue: one entry per driver.
#[derive(Debug, Deserialize)]
struct Catalogue {
    test: Vec<Entry>,
}

/// One HTCondor test, as its driver runs and checks it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// The driver's file name.
    driver: String,
    /// The DAG it submits.
    #[serde(default)]
    dag: String,
    /// DAGMan arguments it passes.
    #[serde(default)]
    args: Vec<String>,
    /// `disabled` when HTCondor's own suite does not run it.
    #[serde(default)]
    suite: String,
    /// Whether gridbed can run it.
    runnable: bool,
    /// Why not, when it cannot.
    #[serde(default)]
    why: String,
    /// DAGMan's exit value the driver requires.
    exit: Option<i32>,
    /// DAGMan refuses the DAG as it reads it (exit 1, no node run), as
    /// gridbed refuses bad input (exit 2).
    #[serde(default)]
    refused: bool,
    /// Each node's job that does not exit 0 at once.
    #[serde(default)]
    jobs: BTreeMap<String, JobSpec>,
    /// The socket server its scripts check in with, when the driver
    /// starts one.
    server: Option<Server>,
    /// The driver's own Perl subs that write its DAG and files, the first
    /// called (after the driver's own settings, `$testname = …;`).
    #[serde(default)]
    emit: Vec<String>,
    /// The driver's own Perl lines that write its DAG: from the line
    /// starting with the first string to the one starting with the second
    /// (after its settings).
    #[serde(default)]
    emit_lines: Vec<String>,
    /// What the driver checks.
    #[serde(default)]
    check: Vec<Check>,
    /// gridbed's result as last recorded: `agrees`, or `differs: how`.
    #[serde(default)]
    result: String,
    /// A pytest driver run by its own fixtures and tests, with the
    /// stand-ins of `htcondor_py/` (HTCondor's test kit and bindings),
    /// its jobs running their programs: each of its tests must pass but
    /// those a `pytest` check marks not checkable.
    #[serde(default)]
    python: bool,
    /// Its nodes' jobs run the programs their submit descriptions name
    /// (`jobs = "run"`), as in HTCondor, rather than exiting as `jobs`
    /// says: for a test whose programs end at once and whose checks read
    /// what they write.
    #[serde(default)]
    run_jobs: bool,
    /// The nominal seconds each of its scripts takes in the simulator
    /// (the testbed's `script_time`; default 0), for a test whose scripts
    /// sleep: the simulator then overlaps them as DAGMan does, and waits
    /// for those that overlap at once.
    #[serde(default)]
    script_seconds: f64,
}

/// A node's job: its exit status per attempt (the last repeats) and its
/// duration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSpec {
    #[serde(default)]
    exit: Vec<i32>,
    #[serde(default)]
    seconds: Option<f64>,
}

/// A driver's socket server (`x_general_server.pl`), which logs each
/// message its scripts send (`x_general_client.pl`), and the scripts it
/// makes from templates naming the socket.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Server {
    /// The socket's name in the templates, as the driver's `$socketname`.
    socket: String,
    /// The server's log, in the test's folder.
    log: String,
    /// Each script made from `<name>.template` as `<name>.pl`.
    templates: Vec<String>,
}

/// One thing a driver checks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Check {
    kind: String,
    #[serde(default)]
    file: String,
    /// The driver's array holding the expected lines.
    #[serde(default)]
    array: String,
    /// Expected lines, where the driver has no array for them.
    #[serde(default)]
    lines: Vec<String>,
    /// `file-lines`: the driver's array of names, each checked in the
    /// file `file` names with `{}` the name (`{}.out`).
    #[serde(default)]
    each: String,
    /// `file-lines`: the names, where the driver has no array of them.
    #[serde(default)]
    names: Vec<String>,
    /// `file-contents`: the first names of `each` the driver shifts off
    /// before pairing the rest with its expected contents.
    #[serde(default)]
    skip: usize,
    /// `file-contents`: how each file's text is compared with what is
    /// expected of it: `line`, a line equals it; `pattern`, the pattern
    /// is found in it, `.` matching a newline too (Perl's `=~ /$p/s`);
    /// else it equals it.
    #[serde(default)]
    compare: String,
    /// `file-contents`: the file's last newline is dropped first, as
    /// Perl's `chomp`.
    #[serde(default)]
    chomp: bool,
    #[serde(default)]
    order: bool,
    #[serde(default)]
    exact: bool,
    /// `file-lines`: patterns no line may match.
    #[serde(default)]
    absent: Vec<String>,
    /// `file-lines`: only the lines matching this pattern are compared.
    #[serde(default)]
    filter: String,
    /// `file-lines`: the lines matching this pattern are left out first
    /// (those the driver skips).
    #[serde(default)]
    drop: String,
    #[serde(default = "yes")]
    checkable: bool,
    #[serde(default)]
    exists: Option<bool>,
    #[serde(default)]
    done: Vec<String>,
    #[serde(default)]
    not_done: Vec<String>,
    /// `order`: these nodes' jobs start in this order, each after the
    /// one before it ended.
    #[serde(default)]
    sequence: Vec<String>,
    /// `order`: these nodes' jobs never start.
    #[serde(default)]
    never: Vec<String>,
    /// `order`: each list's jobs start one after another, no other job
    /// starting between them.
    #[serde(default)]
    consecutive: Vec<Vec<String>>,
    /// `order`: `[child, parent…]`, the child's job starting after every
    /// parent's job ended.
    #[serde(default)]
    after: Vec<Vec<String>>,
    /// `order`: at most this many of `of` (`job`, `pre`, `post`) at once.
    #[serde(default)]
    at_most: Option<usize>,
    /// `server-log`: the driver's own reader of the server's log and its
    /// arguments after the log's path; it must print `0`, as the driver
    /// requires.
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    of: String,
    /// `pytest`: the id of the driver's test (or the start of the ids of
    /// several), `Class::method[case]`.
    #[serde(default)]
    test: String,
    #[serde(default)]
    note: String,
}

fn yes() -> bool {
    true
}

/// The reference folder, which a clone alone does not have.
fn folder() -> PathBuf {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/htcondor-dagman-tests");
    assert!(
        path.is_dir(),
        "{} is missing: this test needs ../shared/reference beside the repository",
        path.display()
    );
    path
}

/// The strings of the Perl array `@name = (…);` (or Python list
/// `name = […]`) in a driver, unescaped as Perl reads its quotes.
fn driver_array(driver: &str, name: &str) -> Option<Vec<String>> {
    let perl = format!("@{name}");
    let at = driver
        .find(&format!("{perl} ="))
        .or_else(|| driver.find(&format!("{perl}=")))
        .or_else(|| driver.find(&format!("{name} = [")))?;
    let body = &driver[at..];
    let open = body.find(['(', '['])?;
    let mut out = Vec::new();
    let mut chars = body[open + 1..].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ')' | ']' => return Some(out),
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' | '\'' => {
                let mut s = String::new();
                while let Some(d) = chars.next() {
                    if d == c {
                        break;
                    }
                    if d == '\\' {
                        match chars.next() {
                            // In double quotes `\\` is `\`, `\"` a quote,
                            // `\$` and `\@` themselves; in single quotes
                            // only `\\` and `\'` are.
                            Some(e) if e == c || e == '\\' => s.push(e),
                            Some(e @ ('$' | '@')) if c == '"' => s.push(e),
                            Some('n') if c == '"' => s.push('\n'),
                            Some('t') if c == '"' => s.push('\t'),
                            Some(e) => {
                                s.push('\\');
                                s.push(e);
                            }
                            None => {}
                        }
                    } else {
                        s.push(d);
                    }
                }
                out.push(s);
            }
            _ => {}
        }
    }
    None
}

/// Copies `from` into `to`, folders too.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
            // The repository's files are executable; the copy in the
            // reference folder kept their bytes, not their modes.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

/// A fresh copy of the reference folder, for one run: on tmpfs where the
/// machine has one that runs programs. Each of the suite's ~190 runs copies
/// the folder's 838 files, which took 0.54 s of system time on this
/// machine's ext4 and 0.05 s on its `/dev/shm` (`cp -r`, 5 copies each).
fn scratch() -> tempfile::TempDir {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let shm = (mounts.lines())
        .find(|l| l.split(' ').nth(1) == Some("/dev/shm"))
        .is_some_and(|l| !l.split(' ').nth(3).unwrap_or("").contains("noexec"));
    let dir = match shm {
        true => tempfile::tempdir_in("/dev/shm").or_else(|_| tempfile::tempdir()),
        false => tempfile::tempdir(),
    };
    let dir = dir.unwrap();
    copy_tree(&folder(), dir.path());
    dir
}

/// The testbed that runs `entry`'s DAG in `dir`: a submit host and one
/// site with a slot for every node (an HTCondor pool large enough for the
/// test), scripts run for real, each node's job as catalogued.
fn testbed(dir: &Path, entry: &Entry) -> PathBuf {
    let mut sidecar = String::new();
    for (node, job) in &entry.jobs {
        sidecar += &format!("[[job]]\nname = {node:?}\n");
        if !job.exit.is_empty() {
            sidecar += &format!("exit = {:?}\n", job.exit);
        }
        if let Some(s) = job.seconds {
            sidecar += &format!("runtime = {s}\n");
        }
    }
    std::fs::write(dir.join("gridbed-sidecar.toml"), sidecar).unwrap();
    let mut maxpre = 0;
    let mut args = entry.args.iter();
    while let Some(a) = args.next() {
        if a.eq_ignore_ascii_case("-MaxPre") {
            maxpre = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        }
    }
    let body = format!(
        r#"strategy = "round-robin"
origin = "submit-host"
[emulation]
time_scale = 20
byte_scale = 1
[manager]
maxpre = {maxpre}
prescript_interval = 0
script_time = {}
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 64
[workflow]
file = {:?}
sidecar = "gridbed-sidecar.toml"
default_runtime = 1
scripts = "run"
jobs = {:?}
"#,
        entry.script_seconds,
        entry.dag,
        if entry.run_jobs { "run" } else { "skip" },
    );
    let tb = dir.join("gridbed-testbed.toml");
    std::fs::write(&tb, body).unwrap();
    tb
}

/// The `gridbed run` flags for the DAGMan arguments a driver passes, or
/// the argument gridbed has no flag for.
fn flags(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_ascii_lowercase().as_str() {
            // What DAGMan prints, mails or submits does not change what
            // it runs; `-DontAlwaysRunPost` is gridbed's default (a
            // failed PRE script's node runs no POST script).
            "-verbose"
            | "-v"
            | "-force"
            | "-suppress_notification"
            | "-dont_suppress_notification"
            | "-usedagdir"
            | "-no_submit"
            | "-do_recurse"
            | "-dontalwaysrunpost"
            | "-allowlogerror"
            | "-allowversionmismatch"
            | "-update_submit" => {}
            // DAGMan's whole environment, where gridbed's scripts get
            // DAGMan's `getenv` list: only what a script reads differs,
            // and the test's checks would show it.
            "-import_env" => {}
            "-debug" | "-notification" | "-outfile_dir" => {
                it.next();
            }
            "-maxpre" => {
                it.next();
            }
            "-maxjobs" | "-maxidle" | "-maxpost" => {
                out.push(format!("--{}", &a.to_ascii_lowercase()[1..]));
                out.push(it.next().cloned().unwrap_or_default());
            }
            "-alwaysrunpost" => out.push("--always-run-post".into()),
            "-autorescue" => {
                if it.next().map(String::as_str) == Some("0") {
                    out.push("--no-rescue".into());
                }
            }
            "-dorescuefrom" => {
                out.push("--rescue-from".into());
                out.push(it.next().cloned().unwrap_or_default());
            }
            _ => return Err(format!("DAGMan argument `{a}`")),
        }
    }
    Ok(out)
}

/// `want` (regular expressions) found in `text`'s lines: in order when
/// `order` (each after the line the one before matched, as the drivers
/// shift their arrays), else each somewhere; with `exact`, the lines are
/// exactly these. Returns the first one missing.
fn find_lines(text: &str, want: &[String], order: bool, exact: bool) -> Result<(), String> {
    let res: Vec<regex_lite::Regex> = want
        .iter()
        .map(|w| regex_lite::Regex::new(w).map_err(|e| format!("pattern `{w}`: {e}")))
        .collect::<Result<_, _>>()?;
    let lines: Vec<&str> = text.lines().collect();
    if exact {
        for ((l, r), w) in lines.iter().zip(&res).zip(want) {
            if !r.is_match(l) {
                return Err(format!("line `{l}` is not `{w}`"));
            }
        }
        if lines.len() != res.len() {
            return Err(format!(
                "{} lines, not the {} expected",
                lines.len(),
                res.len()
            ));
        }
        return Ok(());
    }
    if order {
        let mut at = 0;
        for (w, r) in want.iter().zip(&res) {
            match lines[at..].iter().position(|l| r.is_match(l)) {
                Some(i) => at += i + 1,
                None => return Err(format!("`{w}` not found in order")),
            }
        }
    } else {
        for (w, r) in want.iter().zip(&res) {
            if !lines.iter().any(|l| r.is_match(l)) {
                return Err(format!("`{w}` not found"));
            }
        }
    }
    Ok(())
}

/// No line of `text` matches any of `patterns`; else the first that does.
fn find_none(text: &str, patterns: &[String]) -> Result<(), String> {
    for p in patterns {
        let r = regex_lite::Regex::new(p).map_err(|e| format!("pattern `{p}`: {e}"))?;
        if let Some(l) = text.lines().find(|l| r.is_match(l)) {
            return Err(format!("`{p}` found: `{l}`"));
        }
    }
    Ok(())
}

/// The HTCondor settings a driver asks of its pool (its
/// `CONDOR_TESTREQ_CONFIG` block), as the `_CONDOR_<NAME>` environment
/// variables that set them for a DAGMan started in it.
fn pool_config(driver: &str) -> Vec<(String, String)> {
    let Some(at) = driver.find("CONDOR_TESTREQ_CONFIG") else {
        return Vec::new();
    };
    let block = driver[at..].lines().skip(1);
    block
        .take_while(|l| !l.contains("CONDOR_TESTREQ_CONFIG") && !l.contains("\"\"\""))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (format!("_CONDOR_{}", k.trim()), v.trim().to_string()))
        .collect()
}

/// Each run of `job` that started: (start, end), the end being when the
/// site reported the program's end (or the node's, where it has none).
fn runs(job: &JobEntry) -> impl Iterator<Item = (f64, f64)> + '_ {
    job.attempts
        .iter()
        .filter_map(|a| Some((a.started?, a.finished.or(a.ended)?)))
}

/// The most of `spans` (start, end) that overlap at any instant; one that
/// ends when another starts does not overlap it.
fn peak(spans: &[(f64, f64)]) -> usize {
    let mut edges: Vec<(f64, i32)> = spans.iter().flat_map(|&(a, b)| [(a, 1), (b, -1)]).collect();
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// An `order` check on the run's jobs (read from its control database):
/// what the driver's own check (the order the jobs wrote their names in,
/// a socket server's flow log, the user log) asks of the run, as starts
/// and ends of jobs and scripts.
fn check_order(jobs: &[JobEntry], c: &Check) -> Result<(), String> {
    let job = |n: &str| {
        jobs.iter()
            .find(|j| j.name == n)
            .ok_or(format!("no node `{n}` in the run"))
    };
    let first_start = |n: &str| Ok::<_, String>(runs(job(n)?).map(|r| r.0).reduce(f64::min));
    let last_end = |n: &str| Ok::<_, String>(runs(job(n)?).map(|r| r.1).reduce(f64::max));
    let before = |a: &str, b: &str| -> Result<(), String> {
        match (last_end(a)?, first_start(b)?) {
            (Some(end), Some(start)) if start >= end => Ok(()),
            (Some(end), Some(start)) => Err(format!(
                "{b}'s job started at {start:.1} s, before {a}'s ended at {end:.1} s"
            )),
            _ => Err(format!("{a}'s or {b}'s job never ran")),
        }
    };
    if c.sequence.is_empty()
        && c.never.is_empty()
        && c.consecutive.is_empty()
        && c.after.is_empty()
        && c.at_most.is_none()
    {
        return Err(format!("an order the catalogue does not state: {}", c.note));
    }
    for n in &c.never {
        if first_start(n)?.is_some() {
            return Err(format!("{n}'s job ran"));
        }
    }
    for w in c.sequence.windows(2) {
        before(&w[0], &w[1])?;
    }
    for list in &c.after {
        let (child, parents) = list.split_first().ok_or("an empty `after`")?;
        for p in parents {
            before(p, child)?;
        }
    }
    if !c.consecutive.is_empty() {
        let mut starts: Vec<(f64, &str)> = jobs
            .iter()
            .flat_map(|j| runs(j).map(move |r| (r.0, j.name.as_str())))
            .collect();
        starts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let order: Vec<&str> = starts.into_iter().map(|s| s.1).collect();
        for list in &c.consecutive {
            let at = order
                .iter()
                .position(|n| list.first().is_some_and(|f| f == n))
                .ok_or(format!("{list:?}: the first never ran"))?;
            let got = &order[at..(at + list.len()).min(order.len())];
            if got != list.iter().map(String::as_str).collect::<Vec<_>>() {
                return Err(format!("jobs started {got:?}, not {list:?} in a row"));
            }
        }
    }
    if let Some(n) = c.at_most {
        let spans: Vec<(f64, f64)> = match c.of.as_str() {
            "job" => jobs.iter().flat_map(runs).collect(),
            kind @ ("pre" | "post") => jobs
                .iter()
                .flat_map(|j| &j.attempts)
                .flat_map(|a| &a.scripts)
                .filter(|s| (s.kind == ScriptKind::Pre) == (kind == "pre"))
                .filter_map(|s| Some((s.start, s.end?)))
                .collect(),
            other => return Err(format!("`at_most` of `{other}`")),
        };
        if spans.is_empty() {
            return Err(format!("no {} ran", c.of));
        }
        let most = peak(&spans);
        if most > n {
            return Err(format!("{most} {}s at once, more than {n}", c.of));
        }
    }
    Ok(())
}

/// One check of a driver on the run in `dir`; `Ok` when it agrees.
fn check(dir: &Path, driver: &str, c: &Check) -> Result<(), String> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{f}: {e}"));
    let expected = || -> Result<Vec<String>, String> {
        if c.array.is_empty() {
            Ok(c.lines.clone())
        } else {
            driver_array(driver, &c.array).ok_or(format!("no array @{} in the driver", c.array))
        }
    };
    match c.kind.as_str() {
        "exit" => Ok(()),
        "status-lines" | "jobstate-lines" => find_lines(&read(&c.file)?, &expected()?, true, false)
            .map_err(|e| format!("{}: {e}", c.file)),
        "file-lines" => {
            let names = match (c.each.as_str(), &c.names[..]) {
                ("", []) => vec!["{}".to_string()],
                ("", names) => names.to_vec(),
                (each, _) => {
                    driver_array(driver, each).ok_or(format!("no array @{each} in the driver"))?
                }
            };
            let filter = match c.filter.as_str() {
                "" => None,
                f => Some(regex_lite::Regex::new(f).map_err(|e| format!("filter `{f}`: {e}"))?),
            };
            let drop = match c.drop.as_str() {
                "" => None,
                d => Some(regex_lite::Regex::new(d).map_err(|e| format!("drop `{d}`: {e}"))?),
            };
            let want = expected()?;
            for name in names {
                let file = c.file.replace("{}", &name);
                let text = read(&file)?;
                let text: String = (text.lines())
                    .filter(|l| filter.as_ref().is_none_or(|f| f.is_match(l)))
                    .filter(|l| drop.as_ref().is_none_or(|d| !d.is_match(l)))
                    .map(|l| format!("{l}\n"))
                    .collect();
                find_lines(&text, &want, c.order, c.exact)
                    .and_then(|()| find_none(&text, &c.absent))
                    .map_err(|e| format!("{file}: {e}"))?;
            }
            Ok(())
        }
        "file-contents" => {
            let files = driver_array(driver, &c.each).ok_or(format!("no array @{}", c.each))?;
            let want = expected()?;
            let files = files.get(c.skip..).unwrap_or_default();
            if files.len() != want.len() {
                return Err(format!("{} files, {} contents", files.len(), want.len()));
            }
            for (file, want) in files.iter().zip(&want) {
                let text = read(file)?;
                let got = match c.chomp {
                    true => text.strip_suffix('\n').unwrap_or(&text),
                    false => &text,
                };
                let found = match c.compare.as_str() {
                    "line" => got.lines().any(|l| l == want),
                    "pattern" => regex_lite::Regex::new(&format!("(?s){want}"))
                        .map_err(|e| format!("pattern `{want}`: {e}"))?
                        .is_match(got),
                    _ => got == want,
                };
                match (found, c.compare.as_str()) {
                    (true, _) => {}
                    (false, "pattern") => return Err(format!("{file}: no match of `{want}`")),
                    (false, _) => return Err(format!("{file}: {got:?}, not {want:?}")),
                }
            }
            Ok(())
        }
        "absent" => match dir.join(&c.file).exists() {
            false => Ok(()),
            true => Err(format!("{} exists", c.file)),
        },
        "rescue" => {
            let path = dir.join(&c.file);
            match (c.exists.unwrap_or(true), path.exists()) {
                (false, false) => return Ok(()),
                (false, true) => return Err(format!("{} written", c.file)),
                (true, false) => return Err(format!("no {}", c.file)),
                (true, true) => {}
            }
            let text = read(&c.file)?;
            let done: Vec<&str> = text
                .lines()
                .filter_map(|l| l.trim().strip_prefix("DONE "))
                .map(str::trim)
                .collect();
            for n in &c.done {
                if !done.contains(&n.as_str()) {
                    return Err(format!("{}: {n} not DONE", c.file));
                }
            }
            for n in &c.not_done {
                if done.contains(&n.as_str()) {
                    return Err(format!("{}: {n} DONE", c.file));
                }
            }
            Ok(())
        }
        "order" => {
            let detail = gridbed::db::run_detail(&dir.join("gridbed-run.db"))
                .map_err(|e| format!("the run's control database: {e}"))?;
            check_order(&detail.jobs, c)
        }
        "server-log" => {
            let (reader, args) = c.command.split_first().ok_or("no reader named")?;
            let out = std::process::Command::new("perl")
                .arg(dir.join(reader))
                .arg(dir.join(&c.file))
                .args(args)
                .env("PERL5LIB", shim())
                .current_dir(dir)
                .output()
                .map_err(|e| format!("{reader}: {e}"))?;
            match String::from_utf8_lossy(&out.stdout).trim() {
                "0" => Ok(()),
                got => Err(format!(
                    "{reader} {}: printed `{got}`, not 0",
                    args.join(" ")
                )),
            }
        }
        other => Err(format!("check `{other}` not carried out: {}", c.note)),
    }
}

/// The text of the Perl sub `name` in `driver`, braces matched.
fn perl_sub<'a>(driver: &'a str, name: &str) -> Option<&'a str> {
    let start = driver.find(&format!("\nsub {name} {{"))? + 1;
    let mut depth = 0;
    for (i, c) in driver[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => return Some(&driver[start..start + i + 1]),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The driver's own settings: its top-level assignments of a literal
/// (`$testname = "…";`, `$max_splices = 10000;`).
fn perl_settings(driver: &str) -> String {
    let literal = regex_lite::Regex::new(r#"^\$\w+\s*=\s*("[^"]*"|'[^']*'|\d+)\s*;\s*$"#).unwrap();
    (driver.lines())
        .filter(|l| literal.is_match(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The driver's lines from the one starting with `from` to the one
/// starting with `to`, both kept.
fn perl_lines<'a>(driver: &'a str, from: &str, to: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = driver.lines().collect();
    let start = lines.iter().position(|l| l.starts_with(from))?;
    let end = start + lines[start..].iter().position(|l| l.starts_with(to))?;
    Some(lines[start..=end].to_vec())
}

/// Runs in `dir` the driver's own Perl that writes its DAG and files
/// (`entry`'s subs, the first called, or its lines), after its settings.
fn emit_files(dir: &Path, driver: &str, entry: &Entry) -> Result<(), String> {
    let mut program = format!("use CondorUtils;\n{}", perl_settings(driver));
    for name in &entry.emit {
        program += perl_sub(driver, name).ok_or(format!("no sub {name} in the driver"))?;
        program += "\n";
    }
    if let Some(first) = entry.emit.first() {
        program += &format!("{first}();\n");
    }
    match &entry.emit_lines[..] {
        [] => {}
        [from, to] => {
            let lines = perl_lines(driver, from, to).ok_or(format!("no lines {from}…{to}"))?;
            program += &lines.join("\n");
            program += "\n";
        }
        other => return Err(format!("emit_lines names {} lines, not 2", other.len())),
    }
    let out = std::process::Command::new("perl")
        .args(["-e", &program])
        .env("PERL5LIB", shim())
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("perl: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "the driver's Perl writing its files: {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// Where the scripts that load HTCondor's test library find gridbed's
/// stand-in (DAGMan passes PERL* variables on to its scripts).
fn shim() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/htcondor_shim")
}

/// `template` with, in each line naming `socket`, its last mention made
/// `path`: the drivers' `s/(^\s*.*)$socketname(.*$)/$1$newsocketname$2/`.
fn with_socket(template: &str, socket: &str, path: &str) -> String {
    template
        .lines()
        .map(|line| match line.rfind(socket) {
            Some(at) => format!("{}{path}{}\n", &line[..at], &line[at + socket.len()..]),
            None => format!("{line}\n"),
        })
        .collect()
}

/// A driver's socket server, running while the value lives; its scripts
/// made as the driver makes them.
struct SocketServer(std::process::Child);

impl SocketServer {
    /// Makes `server`'s scripts in `dir` and starts it there, as the
    /// driver does: in each template line naming the socket, its last
    /// mention becomes the socket's path (the driver's substitution).
    fn start(dir: &Path, server: &Server) -> Result<Self, String> {
        let socket = dir.join(&server.socket);
        for name in &server.templates {
            let template = std::fs::read_to_string(dir.join(format!("{name}.template")))
                .map_err(|e| format!("{name}.template: {e}"))?;
            let script = with_socket(&template, &server.socket, &socket.display().to_string());
            let path = dir.join(format!("{name}.pl"));
            std::fs::write(&path, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let child = std::process::Command::new("perl")
            .arg(dir.join("x_general_server.pl"))
            .arg(&socket)
            .arg(dir.join(&server.log))
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("x_general_server.pl: {e}"))?;
        let server = SocketServer(child);
        // It binds the socket as it starts: wait for it (at most 10 s).
        for _ in 0..200 {
            if socket.exists() {
                return Ok(server);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Err(format!("x_general_server.pl made no {}", socket.display()))
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the pytest driver `entry` on `engine` with `htcondor_py/runner.py`
/// in a copy of the folder: `Ok` when each of its tests passes (or skips
/// itself) but those it does not count, and at least one passes.
fn run_python(entry: &Entry, engine: &str) -> Result<(), String> {
    let dir = scratch();
    let runner =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/htcondor_py/runner.py");
    let out = std::process::Command::new("python3")
        .arg(runner)
        .arg(dir.path().join(&entry.driver))
        .arg(dir.path())
        .env("GRIDBED_BIN", env!("CARGO_BIN_EXE_gridbed"))
        .env("GRIDBED_SITES", crate::common::catalog())
        .env("GRIDBED_ENGINE", engine)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(pool_config(
            &std::fs::read_to_string(folder().join(&entry.driver)).unwrap_or_default(),
        ))
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    let uncounted = |id: &str| {
        (entry.check.iter()).any(|c| c.kind == "pytest" && !c.checkable && id.starts_with(&c.test))
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<serde_json::Value> = (stdout.lines())
        .filter(|l| l.starts_with("{\"test\""))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let (mut passed, mut differs) = (0, Vec::new());
    for r in &results {
        let (id, outcome) = (r["test"].as_str().unwrap_or(""), r["outcome"].as_str());
        match outcome {
            _ if uncounted(id) => {}
            Some("passed") => passed += 1,
            Some("skipped") => {}
            _ => differs.push(format!("{id}: {}", r["why"].as_str().unwrap_or(""))),
        }
    }
    if passed == 0 {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        differs.push(format!(
            "no test of the driver passed ({} ran): {}",
            results.len(),
            tail.join(" / ")
        ));
    }
    match differs.is_empty() {
        true => Ok(()),
        false => Err(differs.join("; ")),
    }
}

/// Runs `entry` on `engine`: `Ok` when every check gridbed can make
/// agrees, else what differs.
fn run_one(entry: &Entry, engine: &str) -> Result<(), String> {
    if entry.python {
        return run_python(entry, engine);
    }
    let src = folder();
    let dir = scratch();
    if !entry.emit.is_empty() || !entry.emit_lines.is_empty() {
        let driver = std::fs::read_to_string(src.join(&entry.driver)).unwrap();
        emit_files(dir.path(), &driver, entry)?;
    }
    if !dir.path().join(&entry.dag).is_file() {
        return Err(format!(
            "cannot: the driver writes {} (not in the folder)",
            entry.dag
        ));
    }
    if entry.run_jobs && entry.jobs.values().any(|j| !j.exit.is_empty()) {
        return Err("a job that runs its program exits as the program does: no `exit`".into());
    }
    let flags = flags(&entry.args)?;
    let _server = (entry.server.as_ref())
        .map(|server| SocketServer::start(dir.path(), server))
        .transpose()?;
    let tb = testbed(dir.path(), entry);
    let json = dir.path().join("gridbed-run.json");
    let db = dir.path().join("gridbed-run.db");
    let mut args = vec![
        "--engine",
        engine,
        "--json",
        json.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    args.extend(flags.iter().map(String::as_str));
    let driver = std::fs::read_to_string(src.join(&entry.driver)).unwrap_or_default();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", tb.to_str().unwrap(), "--sites"])
        .arg(crate::common::catalog())
        .arg("-q")
        .args(&args)
        .env("PERL5LIB", shim())
        .envs(pool_config(&driver))
        .output()
        .unwrap();
    let (code, err) = (out.status.code(), String::from_utf8_lossy(&out.stderr));
    let mut differs = Vec::new();
    // gridbed exits 1 for a failed run and 2 for a DAG it refuses, where
    // DAGMan exits 1 for both; the run record has DAGMan's own value.
    let record: Option<serde_json::Value> =
        std::fs::read_to_string(dir.path().join("gridbed-run.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
    let dag_exit = record
        .as_ref()
        .and_then(|r| r["summary"]["dag_exit"].as_i64());
    if let Some(want) = entry.exit {
        let agrees = match dag_exit {
            Some(got) => got == i64::from(want) && (code == Some(0)) == (want == 0),
            None => want != 0 && code == Some(2) && entry.refused,
        };
        if !agrees {
            let why = err.lines().last().unwrap_or_default();
            differs.push(format!(
                "exit {code:?} (DAG {dag_exit:?}), DAGMan {want} ({why})"
            ));
        }
    }
    // `other` checks are not carried out (what they read gridbed does not
    // write, such as the jobs' own output): the catalogue says what they
    // ask.
    let carried_out = |c: &&Check| c.checkable && c.kind != "other";
    for c in entry.check.iter().filter(carried_out) {
        if let Err(e) = check(dir.path(), &driver, c) {
            differs.push(e);
        }
    }
    match differs.is_empty() {
        true => Ok(()),
        false => Err(differs.join("; ")),
    }
}

fn catalogue() -> Catalogue {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/htcondor_suite.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every runnable test of the catalogue in both engines at once, on two
/// threads, those whose scripts sleep first (`HTCONDOR_ONLY` picks some by
/// name);
/// the table of results is printed, and the test fails where a result is
/// not the one the catalogue records.
#[test]
#[ignore = "needs ../shared/reference"]
fn htcondors_dagman_tests_agree_where_the_catalogue_says() {
    let cat = catalogue();
    // `HTCONDOR_ONLY=part` runs only the drivers whose names contain it.
    let only = std::env::var("HTCONDOR_ONLY").unwrap_or_default();
    let mut runnable: Vec<&Entry> = (cat.test.iter())
        .filter(|e| e.runnable && e.driver.contains(&only))
        .collect();
    // Their scripts' sleeps hold each of those for minutes (two of them,
    // 20 POST or PRE scripts of 15 s four at a time): started last, the
    // suite would wait for them alone.
    runnable.sort_by(|a, b| b.script_seconds.total_cmp(&a.script_seconds));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(e) = runnable.get(i) else { break };
                    let started = std::time::Instant::now();
                    // Each engine in its own copy of the folder.
                    let got: Vec<String> = std::thread::scope(|s| {
                        let runs =
                            ["sim", "live"].map(|eng| s.spawn(move || (eng, run_one(e, eng))));
                        (runs.into_iter())
                            .filter_map(|r| match r.join().unwrap() {
                                (eng, Err(d)) => Some(format!("{eng}: {d}")),
                                (_, Ok(())) => None,
                            })
                            .collect()
                    });
                    let got = match got.is_empty() {
                        true => "agrees".to_string(),
                        false => format!("differs: {}", got.join(" | ")),
                    };
                    let took = started.elapsed().as_secs_f64();
                    (results.lock().unwrap()).push((e.driver.clone(), e.result.clone(), got, took));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let counted = |d: &str| {
        cat.test
            .iter()
            .any(|e| e.driver == d && e.suite != "disabled")
    };
    let ran = results.iter().filter(|r| counted(&r.0)).count();
    let agree = (results.iter())
        .filter(|r| counted(&r.0) && r.2 == "agrees")
        .count();
    println!(
        "HTCondor's DAGMan tests: {} drivers; of those HTCondor runs, gridbed runs {ran} and \
         agrees with {agree} in both engines ({:.0}%)",
        cat.test.len(),
        100.0 * agree as f64 / ran.max(1) as f64
    );
    for e in cat.test.iter().filter(|e| !e.runnable) {
        println!("{}: cannot: {}", e.driver, e.why);
    }
    let mut changed = Vec::new();
    for (driver, recorded, got, took) in &results {
        println!("{driver}: {got} ({took:.1} s, both engines)");
        let was_agree = recorded == "agrees";
        if was_agree != (got == "agrees") {
            changed.push(format!("{driver}: recorded `{recorded}`, now `{got}`"));
        }
    }
    assert!(
        changed.is_empty(),
        "results changed (record them in htcondor_suite.toml and docs/dagman.md):\n{}",
        changed.join("\n")
    );
}

#[test]
fn a_drivers_subs_and_socket_are_found_as_perl_and_the_driver_find_them() {
    let driver = "$x = 1;\nsub emit_file {\n  my $f = \"${testname}.dag\";\n  if (1) { print $f; }\n}\nsub other { }\n";
    assert_eq!(
        perl_sub(driver, "emit_file"),
        Some("sub emit_file {\n  my $f = \"${testname}.dag\";\n  if (1) { print $f; }\n}")
    );
    assert_eq!(perl_sub(driver, "emit"), None);
    assert_eq!(perl_settings(driver), "$x = 1;\n");
    assert_eq!(
        perl_lines(driver, "sub emit", "}"),
        Some(vec![
            "sub emit_file {",
            "  my $f = \"${testname}.dag\";",
            "  if (1) { print $f; }",
            "}"
        ])
    );
    let template = "a\n  system(\"./client.pl sock open sock\");\nsocks\n";
    assert_eq!(
        with_socket(template, "sock", "/t/sock"),
        "a\n  system(\"./client.pl sock open /t/sock\");\n/t/socks\n"
    );
}

#[test]
fn perl_arrays_are_read_as_perl_reads_their_quotes() {
    let driver = "@statuslines = (\"DagStatus = 5;.*STATUS_DONE \\\\(success\\\\)\",\n\
                  # a comment, \"not a line\"\n  'a\\'b', \"q\\\"x\", \"\\$1 \\@a\", '\\$');\n";
    assert_eq!(
        driver_array(driver, "statuslines").unwrap(),
        [
            "DagStatus = 5;.*STATUS_DONE \\(success\\)",
            "a'b",
            "q\"x",
            "$1 @a",
            "\\$"
        ]
    );
    assert!(driver_array(driver, "outlines").is_none());
}

#[test]
fn lines_are_found_in_order_as_the_drivers_find_them() {
    let text = "a 1\nb 2\na 3\n";
    let want = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(find_lines(text, &want(&["^a", "^b", "^a 3$"]), true, false).is_ok());
    assert!(find_lines(text, &want(&["^b", "^a 1"]), true, false).is_err());
    assert!(find_lines(text, &want(&["^b", "^a 1"]), false, false).is_ok());
    assert!(find_lines(text, &want(&["a", "b", "a"]), false, true).is_ok());
    assert!(find_lines(text, &want(&["a", "b"]), false, true).is_err());
}

/// The order checks on a hand-made run: A 1–2 s, B 2–3 s, C 2.5–4 s (a
/// POST script each, running 0.5 s after its job), D never started.
#[test]
fn order_checks_read_starts_and_ends_as_the_drivers_read_their_logs() {
    let job = |name: &str, run: Option<(f64, f64)>| -> JobEntry {
        let attempts = match run {
            Some((a, b)) => serde_json::json!([{
                "site": "grid3-01", "prescript": 0.0, "submitted": a, "started": a,
                "finished": b, "ended": b + 0.5, "outcome": {"kind": "ended"},
                "transfers": 0, "scripts": [{"kind": "post", "start": b, "end": b + 0.5}],
            }]),
            None => serde_json::json!([]),
        };
        serde_json::from_value(
            serde_json::json!({"name": name, "ready": null, "attempts": attempts}),
        )
        .unwrap()
    };
    let jobs = [
        job("A", Some((1.0, 2.0))),
        job("B", Some((2.0, 3.0))),
        job("C", Some((2.5, 4.0))),
        job("D", None),
    ];
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let order = |set: &dyn Fn(&mut Check)| {
        let mut c: Check = toml::from_str("kind = \"order\"").unwrap();
        set(&mut c);
        check_order(&jobs, &c)
    };
    assert!(order(&|_| {}).is_err(), "an order stated nowhere passes");
    assert!(order(&|c| c.sequence = strings(&["A", "B"])).is_ok());
    assert!(order(&|c| c.sequence = strings(&["B", "A"])).is_err());
    assert!(order(&|c| c.sequence = strings(&["B", "C"])).is_err());
    assert!(order(&|c| c.sequence = strings(&["A", "D"])).is_err());
    assert!(order(&|c| c.never = strings(&["D"])).is_ok());
    assert!(order(&|c| c.never = strings(&["C"])).is_err());
    assert!(order(&|c| c.never = strings(&["E"])).is_err());
    assert!(order(&|c| c.consecutive = vec![strings(&["A", "B"])]).is_ok());
    assert!(order(&|c| c.consecutive = vec![strings(&["A", "C"])]).is_err());
    assert!(order(&|c| c.after = vec![strings(&["C", "A"])]).is_ok());
    assert!(order(&|c| c.after = vec![strings(&["C", "A", "B"])]).is_err());
    // A ends as B starts: two at once at most (B and C), never three.
    let at_most = |n: usize, of: &str| {
        order(&|c| {
            c.at_most = Some(n);
            c.of = of.into();
        })
    };
    assert!(at_most(1, "job").is_err());
    assert!(at_most(2, "job").is_ok());
    assert!(at_most(1, "post").is_ok());
    assert!(at_most(1, "pre").is_err(), "no PRE script ran");
    assert_eq!(peak(&[(0.0, 1.0), (1.0, 2.0), (0.5, 1.5)]), 2);
}

proptest::proptest! {
    /// `peak` against counting, at every span's start, the spans that hold
    /// that instant (half open: one ending as another starts is not
    /// counted); integer ends in a short range make ties and empty spans
    /// common.
    #[test]
    fn peak_is_the_most_spans_holding_one_instant(
        ends in proptest::collection::vec((0u8..6, 0u8..4), 0..12)
    ) {
        let spans: Vec<(f64, f64)> = ends
            .iter()
            .map(|&(a, d)| (f64::from(a), f64::from(a + d)))
            .collect();
        let holding = |t: f64| spans.iter().filter(|&&(a, b)| a <= t && t < b).count();
        let most = spans.iter().map(|&(a, _)| holding(a)).max().unwrap_or(0);
        proptest::prop_assert_eq!(peak(&spans), most);
    }
}
