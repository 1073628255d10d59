//! Each kind of bad input gives its message (file, line, field) and exit code 2,
//! checked through the binary.

use std::process::Command;

use crate::common::{catalog, write_testbed};

const BASE: &str = r#"strategy = "random"
origin = "submit-host"
[emulation]
time_scale = 100
byte_scale = 100
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[workflow]
generator = "inline"
[[workflow.file]]
name = "a"
size = "1 MB"
[[workflow.job]]
name = "x"
runtime = 10
inputs = ["a"]
[[workflow.job]]
name = "y"
parents = ["x"]
"#;

/// Runs `gridbed check` on BASE with `from` replaced by `to`; returns stderr.
fn check(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    check_body(&BASE.replacen(from, to, 1))
}

/// Runs `gridbed check` on `body` as `bad.toml`, which must fail with exit
/// code 2 and no panic; returns stderr.
fn check_body(body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write_testbed(dir.path(), "bad.toml", body);
    let out = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .arg("check")
        .arg(&path)
        .arg("--sites")
        .arg(catalog())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn expect(stderr: &str, parts: &[&str]) {
    for p in parts {
        assert!(stderr.contains(p), "expected `{p}` in: {stderr}");
    }
}

#[test]
fn the_base_testbed_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_testbed(dir.path(), "ok.toml", BASE);
    let out = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["check"])
        .arg(&path)
        .arg("--sites")
        .arg(catalog())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unknown_field() {
    let e = check(
        "strategy = \"random\"\n",
        "strategy = \"random\"\ncolour = \"blue\"\n",
    );
    expect(&e, &["bad.toml:2:1", "colour", "unknown field"]);
}

#[test]
fn wrong_type() {
    let e = check("time_scale = 100", "time_scale = \"fast\"");
    expect(
        &e,
        &["bad.toml:4:14", "emulation.time_scale", "expected f64"],
    );
}

#[test]
fn zero_cpus_on_an_execution_site() {
    let e = check("name = \"grid3-01\"\n", "name = \"grid3-01\"\ncpus = 0\n");
    expect(
        &e,
        &[
            "bad.toml:10:8",
            "site[1].cpus",
            "zero CPUs",
            "storage = true",
        ],
    );
}

#[test]
fn negative_size() {
    let e = check("size = \"1 MB\"", "size = -5");
    expect(
        &e,
        &["bad.toml:14:8", "workflow.file[0].size", "non-negative"],
    );
}

#[test]
fn time_scale_not_positive() {
    let e = check("time_scale = 100", "time_scale = 0");
    expect(
        &e,
        &["bad.toml:4:14", "emulation.time_scale", "from 1e-9 to 1e9"],
    );
    let e = check("time_scale = 100", "time_scale = -3.5");
    expect(&e, &["bad.toml:4:14", "from 1e-9 to 1e9"]);
}

#[test]
fn unknown_site() {
    let e = check("name = \"grid3-01\"", "name = \"grid3-99\"");
    expect(
        &e,
        &[
            "bad.toml:9:8",
            "site[1].name",
            "unknown site `grid3-99`",
            "new = true",
        ],
    );
}

#[test]
fn duplicate_site() {
    let e = check("name = \"grid3-01\"", "name = \"submit-host\"");
    expect(&e, &["bad.toml:9:8", "duplicate site `submit-host`"]);
}

#[test]
fn unknown_strategy_lists_the_valid_names() {
    let e = check("strategy = \"random\"", "strategy = \"fastest\"");
    expect(
        &e,
        &[
            "bad.toml:1:12",
            "strategy",
            "random, round-robin, data-present",
        ],
    );
}

#[test]
fn workflow_cycle() {
    let e = check("name = \"x\"\n", "name = \"x\"\nparents = [\"y\"]\n");
    expect(&e, &["bad.toml:15:1", "workflow.job[0]", "cycle"]);
}

#[test]
fn workflow_missing_parent() {
    let e = check("parents = [\"x\"]", "parents = [\"ghost\"]");
    expect(
        &e,
        &["bad.toml:19:1", "workflow.job[1]", "missing parent `ghost`"],
    );
}

#[test]
fn unknown_strategy_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_testbed(dir.path(), "ok.toml", BASE);
    let out = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .arg("run")
        .arg(&path)
        .args(["--strategy", "nope", "--sites"])
        .arg(catalog())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    expect(&e, &["--strategy", "unknown strategy `nope`"]);
}

#[test]
fn garbage_and_missing_files_do_not_panic() {
    for body in [
        "\u{0}\u{1}garbage [[[",
        "strategy = ",
        "",
        "[workflow]\ngenerator = 3",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = write_testbed(dir.path(), "junk.toml", body);
        let out = Command::new(env!("CARGO_BIN_EXE_gridbed"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{body:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("junk.toml") && !e.contains("panicked"), "{e}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["check", "/nonexistent/testbed.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn background_models() {
    let site = "name = \"grid3-01\"\n";
    let e = check(
        site,
        "name = \"grid3-01\"\nbackground = { model = \"poisson\" }\n",
    );
    expect(
        &e,
        &[
            "bad.toml:10:24",
            "unknown background model `poisson`",
            "markov, trace",
        ],
    );
    let e = check(
        site,
        "name = \"grid3-01\"\nbackground = { model = \"markov\", period = 60 }\n",
    );
    expect(&e, &["bad.toml:10:14", "needs `mean_busy`"]);
    let e = check(
        site,
        "name = \"grid3-01\"\nbackground = { model = \"markov\", mean_busy = 1.5, period = 60 }\n",
    );
    expect(&e, &["bad.toml:10:46", "[0, 1]"]);
    let e = check(
        site,
        "name = \"grid3-01\"\nbackground = { model = \"trace\" }\n",
    );
    expect(&e, &["bad.toml:10:14", "needs `file`"]);
    let e = check(
        site,
        "name = \"grid3-01\"\nbackground = { model = \"trace\", file = \"busy.csv\", period = 5 }\n",
    );
    expect(&e, &["`period` does not apply to the `trace` model"]);
    let e = check(
        site,
        "name = \"grid3-01\"\nbackground = { model = \"trace\", file = \"none.csv\" }\n",
    );
    expect(&e, &["bad.toml:10:40", "cannot read trace", "none.csv"]);
}

#[test]
fn a_bad_background_trace_names_its_own_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("busy.csv"), "time,busy\n0, 4\n60, many\n").unwrap();
    let body = BASE.replacen(
        "name = \"grid3-01\"\n",
        "name = \"grid3-01\"\nbackground = { model = \"trace\", file = \"busy.csv\" }\n",
        1,
    );
    let path = write_testbed(dir.path(), "t.toml", &body);
    let (code, _, stderr) = crate::common::gridbed(&[
        "check".as_ref(),
        path.as_os_str(),
        "--sites".as_ref(),
        catalog().as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    expect(
        &stderr,
        &["busy.csv:3", "whole number of busy slots", "60, many"],
    );
}

#[test]
fn a_fault_probability_outside_zero_to_one() {
    let e = check(
        "name = \"grid3-01\"\n",
        "name = \"grid3-01\"\ncorrupt_probability = 1.5\n",
    );
    expect(&e, &["bad.toml:10:23", "corrupt_probability in [0, 1]"]);
}

/// A pipeline testbed for the numeric extremes below.
const PIPELINE: &str = r#"strategy = "data-present"
origin = "submit-host"
[emulation]
time_scale = 100
byte_scale = 100
[manager]
prescript_interval = 1.0
transfer_backoff = 2.0
[workflow]
generator = "pipeline"
levels = 2
width = 3
runtime = [300, 60]
file_size = "1 MB"
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
cpus = 2
"#;

#[test]
fn no_numeric_extreme_panics_it_runs_or_is_refused_with_its_field() {
    // (replace, with, exit code of `check` and of a simulated run).
    let cases: &[(&str, &str, i32)] = &[
        ("time_scale = 100", "time_scale = 1e300", 2),
        ("time_scale = 100", "time_scale = 1e-300", 2),
        ("time_scale = 100", "time_scale = 1e9", 0),
        ("byte_scale = 100", "byte_scale = 1e-300", 2),
        ("runtime = [300, 60]", "runtime = [1e300, 1e-300]", 2),
        ("runtime = [300, 60]", "runtime = [1e9, 1e-300]", 0),
        ("cpus = 2", "cpus = 2\nspeed = 1e-300", 2),
        ("cpus = 2", "cpus = 2\nspeed = 1e-9", 0),
        ("cpus = 2", "cpus = 2\nspeed = 1e300", 2),
        ("cpus = 2", "cpus = 2\nspeed = 1e9", 0),
        ("cpus = 2", "cpus = 2\noverhead = 1e300", 2),
        ("cpus = 2", "cpus = 2\noverhead = 1e9", 0),
        ("cpus = 2", "cpus = 2\nlatency = 1e300", 2),
        ("cpus = 2", "cpus = 2\nbandwidth = \"1e-300 B/s\"", 2),
        ("cpus = 2", "cpus = 2\nbandwidth = \"1 B/s\"", 0),
        ("cpus = 2", "cpus = 2\nbandwidth = \"2 PB/s\"", 2),
        ("cpus = 2", "cpus = 2\nbandwidth = \"unlimited\"", 0),
        ("cpus = 2", "cpus = 1000000000000", 0),
        ("cpus = 2", "cpus = 2\ndisk = \"1e30 TB\"", 0),
        ("prescript_interval = 1.0", "prescript_interval = 1e300", 2),
        ("transfer_backoff = 2.0", "transfer_backoff = 1e300", 2),
        ("transfer_backoff = 2.0", "transfer_backoff = 1e9", 0),
        ("[manager]", "[manager]\nmax_retries = 4000000000", 2),
        ("[manager]", "[manager]\nmax_retries = 100000", 0),
        ("[manager]", "[manager]\ntransfer_retries = 100001", 2),
        ("[manager]", "[manager]\nmaxpre = 100000000000000000000", 2),
        ("width = 3", "width = 100000000000", 2),
        ("file_size = \"1 MB\"", "file_size = \"1e30 TB\"", 2),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (from, to, want) in cases {
        assert!(PIPELINE.contains(from), "{from}");
        let path = write_testbed(dir.path(), "x.toml", &PIPELINE.replacen(from, to, 1));
        let sites = catalog();
        for args in [
            vec!["check", path.to_str().unwrap()],
            vec!["run", path.to_str().unwrap(), "--engine", "sim", "-q"],
        ] {
            let mut args = args.clone();
            args.extend(["--sites", sites.to_str().unwrap()]);
            let (code, _, stderr) = crate::common::gridbed(&args);
            assert!(!stderr.contains("panicked"), "{to}: {stderr}");
            assert_eq!(code, Some(*want), "{to} ({}): {stderr}", args[0]);
            if *want == 2 {
                assert!(stderr.contains("x.toml:"), "{to}: where: {stderr}");
            }
        }
    }
    // Live: real bytes beyond any disk are refused before a file is written.
    let path = write_testbed(
        dir.path(),
        "x.toml",
        &PIPELINE.replacen("byte_scale = 100", "byte_scale = 1e-9", 1),
    );
    let sites = catalog();
    let (code, _, stderr) = crate::common::gridbed(&[
        "run",
        path.to_str().unwrap(),
        "--sites",
        sites.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("real bytes") && !stderr.contains("panicked"),
        "{stderr}"
    );
    for linger in ["inf", "NaN", "-1", "1e300"] {
        let flag = format!("--linger={linger}");
        let (code, _, stderr) = crate::common::gridbed(&["run", path.to_str().unwrap(), &flag]);
        assert_eq!(code, Some(2), "--linger {linger}: {stderr}");
        assert!(stderr.contains("--linger"), "{stderr}");
    }
}

#[test]
fn bad_fault_entries_say_which_and_why() {
    let site = "name = \"grid3-01\"\n";
    let fault = |body: &str| format!("{site}[[fault]]\n{body}\n");
    for (body, parts) in [
        (
            "kind = \"meteor\"\nsite = \"grid3-01\"",
            &[
                "bad.toml:11:8",
                "unknown fault kind `meteor`",
                "crash, reset",
            ][..],
        ),
        (
            "kind = \"crash\"\nsite = \"grid3-09\"\nat = 5",
            &[
                "bad.toml:12:8",
                "unknown site `grid3-09`",
                "submit-host, grid3-01",
            ],
        ),
        (
            "kind = \"crash\"\nat = 5",
            &["bad.toml:10:1", "a `crash` fault needs a `site`"],
        ),
        (
            "kind = \"crash\"\nsite = \"grid3-01\"\nat = 50\nrecover = 20",
            &["bad.toml:14:11", "expected recover > at (50 s)"],
        ),
        (
            "kind = \"crash\"\nsite = \"grid3-01\"\nat = 5\npool = \"gone\"",
            &[
                "bad.toml:14:8",
                "unknown pool `gone`; expected lost or kept",
            ],
        ),
        (
            "kind = \"reset\"\nprobability = 1.5",
            &["bad.toml:12:15", "expected probability in [0, 1]"],
        ),
        (
            "kind = \"reset\"",
            &["a `reset` fault needs `probability` > 0 or `first` > 0"],
        ),
        (
            "kind = \"stall\"\nprobability = 0.1",
            &["a `stall` fault needs `seconds`"],
        ),
        (
            "kind = \"reset\"\nprobability = 0.1\nat = 5",
            &["a `reset` fault takes no `at`; expected probability, first"],
        ),
        (
            "kind = \"slow\"\nsite = \"grid3-01\"\nfrom = 5\nfactor = 0",
            &["bad.toml:14:10", "expected factor > 0"],
        ),
        (
            "kind = \"shrink\"\nsite = \"grid3-01\"\nat = 5\ndisk = \"-3 GB\"",
            &["bad.toml:14", "disk"],
        ),
        (
            "kind = \"crash\"\nsite = \"grid3-01\"\nat = -1",
            &["bad.toml:13", "expected seconds from 0 to 1e9, found -1"],
        ),
    ] {
        let e = check(site, &fault(body));
        expect(&e, parts);
    }
}

/// Whether an edited text asks for a workflow too large to generate in a
/// test (a run of 5 or more digits: 10,000+ pipelines or levels).
fn huge(text: &str) -> bool {
    text.as_bytes()
        .windows(5)
        .any(|w| w.iter().all(u8::is_ascii_digit))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 192, ..Default::default() })]

    /// Fuzzing (proptest): any edits of a testbed (with `[[fault]]`s, a
    /// `[manager]`, sites with background load) or of the site catalogue
    /// give a scenario or an error, never a panic.
    #[test]
    fn no_edit_of_a_testbed_or_the_catalogue_panics_the_loader(
        which in 0usize..4,
        edits in proptest::collection::vec((0usize..4, proptest::prelude::any::<proptest::sample::Index>(), ".{0,12}"), 1..6),
    ) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = tempfile::tempdir().unwrap();
        let (testbed, catalogue) = if which < 3 {
            let name = ["quickstart.toml", "osg-12-pipeline.toml", "chaos.toml"][which];
            let text = std::fs::read_to_string(root.join("testbeds").join(name)).unwrap();
            (crate::common::edit(&text, edits), std::fs::read_to_string(catalog()).unwrap())
        } else {
            let text = std::fs::read_to_string(root.join("testbeds/quickstart.toml")).unwrap();
            (text, crate::common::edit(&std::fs::read_to_string(catalog()).unwrap(), edits))
        };
        if !huge(&testbed) && !huge(&catalogue) {
            let path = write_testbed(dir.path(), "t.toml", &testbed);
            let sites = write_testbed(dir.path(), "sites.toml", &catalogue);
            let overrides = gridbed::config::Overrides {
                sites_file: Some(sites),
                ..Default::default()
            };
            let _ = gridbed::config::load(&path, &overrides);
        }
    }

    /// The same for a run record read by `gridbed report`: a record or an
    /// error, and for a record, its pictures or an error.
    #[test]
    fn no_edit_of_a_run_record_panics_the_report(
        edits in proptest::collection::vec((0usize..4, proptest::prelude::any::<proptest::sample::Index>(), ".{0,12}"), 1..6),
    ) {
        let text = crate::common::edit(record_text(), edits);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, text).unwrap();
        if let Ok(rec) = gridbed::report::run_report::read_record(&path) {
            let _ = gridbed::report::run_report::write_report(&rec, &dir.path().join("out"));
        }
    }
}

/// The run record of a small simulated run with faults, made once.
fn record_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let body = BASE.to_string()
            + "[[fault]]\nkind = \"corrupt\"\nfirst = 1\n[[fault]]\nkind = \"crash\"\nsite = \"grid3-01\"\nat = 5\nrecover = 8\n";
        let (_d, s) = crate::common::scenario(&body);
        let run = gridbed::sim::run(&s).unwrap();
        let rec = gridbed::report::RunRecord::from_run(&s, &run, "fuzz", gridbed::report::Detail::Full);
        serde_json::to_string_pretty(&rec).unwrap()
    })
}

#[test]
fn bad_latencies_and_wms_knobs() {
    let manager = "[workflow]\ngenerator";
    let with = |table: &str| check(manager, &format!("{table}\n[workflow]\ngenerator"));
    expect(
        &with("[manager]\npostscript_overhead = { dist = \"gamma\", mean = 3 }"),
        &["bad.toml:", "postscript_overhead", "unknown dist `gamma`"],
    );
    expect(
        &with("[manager]\nsubmit_overhead = { dist = \"uniform\", min = 5, max = 1 }"),
        &["submit_overhead", "0 ≤ min ≤ max"],
    );
    expect(
        &with("[manager]\nrelease_overhead = { dist = \"lognormal\", mean = 3 }"),
        &["release_overhead", "missing `sd`"],
    );
    expect(
        &with("[manager]\nrelease_overhead = { dist = \"fixed\", value = 3, sd = 1 }"),
        &["unknown field `sd` of a fixed latency"],
    );
    expect(
        &with("[manager.wms]\nnegotiator_interval = -1"),
        &[
            "negotiator_interval",
            "expected seconds from 0 to 1e9, found -1",
        ],
    );
    expect(
        &with("[manager.wms]\njob_start_count = 0"),
        &["job_start_count"],
    );
    expect(
        &with("[manager.wms]\nnegotiator_cycle = 20"),
        &["unknown field `negotiator_cycle`"],
    );
}

#[test]
fn cache_maintenance_needs_a_ranking_eviction_and_k_needs_a_bound() {
    let e = check(
        "origin = \"submit-host\"",
        "origin = \"submit-host\"\neviction = \"fifo\"\n[manager]\ncache_bound = \"1 GB\"",
    );
    expect(&e, &["bad.toml:5", "cache_bound", "lru, lfu or worth"]);
    let e = check(
        "origin = \"submit-host\"",
        "origin = \"submit-host\"\n[manager]\nreplicas = 2",
    );
    expect(&e, &["bad.toml", "manager", "set cache_bound too"]);
    let e = check(
        "origin = \"submit-host\"",
        "origin = \"submit-host\"\neviction = \"worth[lambda=2]\"",
    );
    expect(&e, &["bad.toml", "lambda: expected 0 to 1, found 2"]);
}

#[test]
fn submissions_take_whole_dags_that_exist_from_known_submit_machines() {
    let last = r#"parents = ["x"]"#;
    let e = check(last, &format!("{last}\n[[submission]]\ndags = 2"));
    expect(
        &e,
        &[
            "bad.toml:",
            "submission[0].dags",
            "asks for 2 DAGs but the workflow has 1 DAGs",
        ],
    );
    let e = check(
        last,
        &format!("{last}\n[[submission]]\norigin = \"submit-host\"\n[[submission]]\narrival = 60"),
    );
    expect(
        &e,
        &[
            "submission[0].dags",
            "only the last submission takes the DAGs left",
        ],
    );
    let e = check(
        last,
        &format!("{last}\n[[submission]]\norigin = \"nowhere\""),
    );
    expect(&e, &["bad.toml:", "unknown site `nowhere`"]);
    let e = check(last, &format!("{last}\n[[submission]]\nshare = 0"));
    expect(&e, &["bad.toml:", "share"]);
}

#[test]
fn no_memoize_names_jobs_or_programs_of_the_workflow() {
    let e = check(
        "origin = \"submit-host\"",
        "origin = \"submit-host\"\nno_memoize = [\"x\", \"nobody\"]",
    );
    expect(
        &e,
        &["bad.toml:3", "no_memoize", "`nobody` is no job or program"],
    );
}

#[test]
fn a_site_daemon_url_must_be_http_with_a_host_and_its_token_file_readable() {
    let site = "name = \"grid3-01\"\n";
    let e = check(site, "name = \"grid3-01\"\nurl = \"grid3-01:7100\"\n");
    expect(
        &e,
        &[
            "bad.toml:10:7",
            "site[1].url",
            "http://host:port",
            "grid3-01:7100",
        ],
    );
    let e = check(
        site,
        "name = \"grid3-01\"\nurl = \"http://127.0.0.1:7100\"\ntoken_file = \"no-such-token\"\n",
    );
    expect(
        &e,
        &[
            "bad.toml:11:14",
            "cannot read the token file",
            "no-such-token",
        ],
    );
    let e = check(site, "name = \"grid3-01\"\ntoken_file = \"token\"\n");
    expect(&e, &["bad.toml:10:14", "give its `url` too"]);
}

/// BASE with shared links before its workflow.
fn with_links(links: &str) -> (&'static str, String) {
    ("[workflow]\n", format!("{links}[workflow]\n"))
}

#[test]
fn a_path_through_an_unknown_link_names_the_link_and_the_site() {
    let e = check(
        "name = \"grid3-01\"\n",
        "name = \"grid3-01\"\npath = [\"wan\"]\n",
    );
    expect(
        &e,
        &[
            "bad.toml:10:9",
            "site[1].path",
            "unknown link `wan`",
            "grid3-01",
            "none is defined",
        ],
    );
}

#[test]
fn zero_or_negative_bandwidths_of_links_and_interfaces_are_refused() {
    let (from, to) = with_links("[[link]]\nname = \"wan\"\nbandwidth = 0\n");
    let e = check(from, &to);
    expect(&e, &["bad.toml:", "link[0].bandwidth", "rate ≤ 0"]);
    let e = check(
        "name = \"grid3-01\"\n",
        "name = \"grid3-01\"\nbandwidth_in = \"-5 MB/s\"\n",
    );
    expect(
        &e,
        &["bad.toml:10:16", "site[1].bandwidth_in", "non-negative"],
    );
    let e = check(
        "name = \"grid3-01\"\n",
        "name = \"grid3-01\"\nbandwidth_out = 0\n",
    );
    expect(&e, &["bad.toml:10:", "site[1].bandwidth_out", "rate ≤ 0"]);
}

#[test]
fn a_protocol_efficiency_outside_zero_to_one_or_an_unknown_network_key_is_refused() {
    for bad in ["0", "1.2", "-0.5"] {
        let (from, to) = with_links(&format!("[network]\nprotocol_efficiency = {bad}\n"));
        let e = check(from, &to);
        expect(
            &e,
            &[
                "bad.toml:11:23",
                "network.protocol_efficiency",
                "expected a fraction in (0, 1]",
                bad,
            ],
        );
    }
    let (from, to) = with_links("[network]\nefficiency = 0.9\n");
    let e = check(from, &to);
    expect(
        &e,
        &[
            "bad.toml:11:1",
            "unknown field `efficiency`",
            "protocol_efficiency",
        ],
    );
}

#[test]
fn a_link_named_twice_or_paths_that_are_no_tree_are_refused() {
    let (from, to) = with_links(
        "[[link]]\nname = \"wan\"\nbandwidth = \"1 GB/s\"\n\
         [[link]]\nname = \"wan\"\nbandwidth = \"2 GB/s\"\n",
    );
    let e = check(from, &to);
    expect(
        &e,
        &["bad.toml:14:8", "link[1].name", "link `wan` is named twice"],
    );
    for blank in ["", "  "] {
        let (from, to) = with_links(&format!(
            "[[link]]\nname = \"{blank}\"\nbandwidth = \"1 GB/s\"\n"
        ));
        let e = check(from, &to);
        expect(&e, &["bad.toml:11:8", "link[0].name", "`name` is empty"]);
    }

    let links = "[[link]]\nname = \"a\"\nbandwidth = \"1 GB/s\"\n\
                 [[link]]\nname = \"b\"\nbandwidth = \"1 GB/s\"\n";
    let tb = BASE
        .replacen(
            "name = \"submit-host\"\n",
            "name = \"submit-host\"\npath = [\"a\", \"b\"]\n",
            1,
        )
        .replacen(
            "name = \"grid3-01\"\n",
            "name = \"grid3-01\"\npath = [\"b\", \"a\"]\n",
            1,
        )
        .replacen("[workflow]\n", &format!("{links}[workflow]\n"), 1);
    let e = check_body(&tb);
    expect(&e, &["bad.toml:11:", "site `grid3-01`.path", "form a tree"]);
}

#[test]
fn a_runtime_or_size_beyond_its_limit_is_refused_wherever_the_workflow_comes_from() {
    // Inline: 1e308 s once made the makespan ∞ and a live run endless.
    let e = check("runtime = 10", "runtime = 1e308");
    expect(
        &e,
        &["bad.toml", "job `x`: runtime", "from 0 to 1e9", "1e308"],
    );
    let e = check("size = \"1 MB\"", "size = 2_000_000_000_000_000");
    expect(&e, &["file `a`: size", "at most", "(1 PB)"]);
    // A WfFormat file: the error names it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.json"),
        r#"{"name": "w", "schemaVersion": "1.5",
            "workflow": {"specification": {"tasks": [
                {"name": "t", "id": "t", "children": [], "parents": [],
                 "inputFiles": [], "outputFiles": []}], "files": []},
             "execution": {"makespanInSeconds": 1, "executedAt": "20260101T000000+0000",
                "tasks": [{"id": "t", "runtimeInSeconds": 1e300}]}}}"#,
    )
    .unwrap();
    let body =
        BASE.split("[workflow]").next().unwrap().to_string() + "[workflow]\nfile = \"w.json\"\n";
    let path = write_testbed(dir.path(), "bad.toml", &body);
    let out = Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .arg("check")
        .arg(&path)
        .arg("--sites")
        .arg(catalog())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    expect(&stderr, &["w.json", "job `t`: runtime", "1e300"]);
}
