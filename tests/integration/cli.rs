//! Commands end to end through the binary: sweep, workflow stats, validate.

use crate::common::{catalog, gridbed, gridbed_ok, record_with_detail, run_testbed, write_testbed};
use std::path::Path;

const SMALL: &str = r#"
strategy = "random"
replica_policy = "delete"
origin = "submit-host"
[emulation]
time_scale = 1000
byte_scale = 1000
[workflow]
generator = "coadd"
ra = 16
dec = 3
filters = 1
[[site]]
name = "submit-host"
[[site]]
name = "grid3-01"
[[site]]
name = "grid3-02"
[[site]]
name = "grid3-03"
"#;

#[test]
fn sweep_writes_a_csv_row_per_run_and_the_charts() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("out");
    let (code, stdout, stderr) = gridbed(&[
        "sweep",
        tb.to_str().unwrap(),
        "--sites-file",
        catalog().to_str().unwrap(),
        "--strategies",
        "random,clustered",
        "--sites",
        "1,3",
        "--maxpre",
        "5,10",
        "--seeds",
        "1,2",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("clustered"));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 2 * 2, "{csv}");
    for m in [5, 10] {
        for kind in ["transfers", "makespan"] {
            let svg = std::fs::read_to_string(out.join(format!("{kind}-maxpre{m}.svg"))).unwrap();
            assert!(svg.contains("clustered") && svg.contains("random"));
        }
    }
    // Random moves every reference whatever the site count; SPCL fewer.
    let rows: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let transfers = |st: &str, sites: &str| -> u64 {
        rows.iter().find(|r| r[0] == st && r[1] == sites).unwrap()[7]
            .parse()
            .unwrap()
    };
    assert!(transfers("clustered", "3") < transfers("random", "3"));
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + 2 * 2 * 2, "{summary}");
    assert!(
        summary
            .lines()
            .skip(1)
            .all(|l| l.split(',').nth(3) == Some("2"))
    );
    for (n, m) in [(1, 5), (3, 10)] {
        let bars =
            std::fs::read_to_string(out.join(format!("makespan-bars-sites{n}-maxpre{m}.svg")))
                .unwrap();
        assert!(bars.contains("95% CI") && bars.contains("clustered"));
        assert!(out.join(format!("speedup-sites{n}-maxpre{m}.svg")).exists());
    }
}

#[test]
fn sweep_quotes_a_strategy_with_a_comma_and_refuses_a_full_out_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("out");
    let sites = catalog();
    let sweep = |extra: &[&str]| {
        let mut args = vec![
            "sweep",
            tb.to_str().unwrap(),
            "--sites-file",
            sites.to_str().unwrap(),
            "--strategies",
            "random,clustered[sequence=false, ra=4]",
            "--sites",
            "3",
            "--maxpre",
            "5",
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ];
        args.extend_from_slice(extra);
        gridbed(&args)
    };
    let (code, _, stderr) = sweep(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[2].starts_with("\"clustered[sequence=false, ra=4]\",3,5,1,"),
        "{csv}"
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary.contains("\"clustered[sequence=false, ra=4]\","),
        "{summary}"
    );
    // An earlier sweep's folder: refused before any run, its files kept.
    std::fs::write(out.join("stale-chart.svg"), "old").unwrap();
    let (code, _, stderr) = sweep(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--out") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(out.join("sweep.csv")).unwrap(), csv);
    // --force clears it first: the stale chart is gone.
    let (code, _, stderr) = sweep(&["--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!out.join("stale-chart.svg").exists());
    assert!(out.join("sweep.csv").exists());
    // A file where the folder should be: refused, naming the flag.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let (code, _, stderr) = gridbed(&[
        "sweep",
        tb.to_str().unwrap(),
        "--sites-file",
        catalog().to_str().unwrap(),
        "--sites",
        "3",
        "--out",
        file.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--out") && stderr.contains("is a file"),
        "{stderr}"
    );
}

#[test]
fn run_checks_its_outputs_and_address_before_the_first_job() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let sites = catalog();
    let missing = dir.path().join("no-such-folder/out");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let folder = dir.path().to_str().unwrap();
    for (flag, value, why) in [
        ("--trace", missing.with_extension("jsonl"), "does not exist"),
        (
            "--wfformat",
            missing.with_extension("json"),
            "does not exist",
        ),
        ("--json", missing.with_extension("json"), "does not exist"),
        ("--rescue", missing.with_extension("json"), "does not exist"),
        ("--db", folder.into(), "is a folder"),
        ("--metrics-addr", busy.clone().into(), "cannot listen there"),
    ] {
        let started = std::time::Instant::now();
        let (code, stdout, stderr) = gridbed(&[
            "run",
            tb.to_str().unwrap(),
            "--sites",
            sites.to_str().unwrap(),
            "--engine",
            "live",
            "-q",
            flag,
            value.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains(why),
            "{flag}: {stderr}"
        );
        assert!(!stdout.contains("jobs ended"), "{flag}: it ran: {stdout}");
        // Refused before the sites start (a live run takes seconds).
        assert!(started.elapsed().as_secs_f64() < 30.0, "{flag}");
    }
}

/// Issue 61: `farm` and `calibrate` refuse an output they could not write
/// (and `farm` a busy `--metrics-addr`) before any work, naming the flag.
#[test]
fn farm_and_calibrate_check_their_outputs_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder/out");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let farm = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion-small.toml");
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let json = missing.with_extension("json");
    let svg = missing.with_extension("svg");
    let csv = missing.with_extension("csv");
    let file = tb.to_str().unwrap();
    let farm = farm.to_str().unwrap();
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["farm", farm, "--json", json.to_str().unwrap()],
            "--json",
            "does not exist",
        ),
        (
            &["farm", farm, "--svg", svg.to_str().unwrap()],
            "--svg",
            "does not exist",
        ),
        (
            &["farm", farm, "--intervals", csv.to_str().unwrap()],
            "--intervals",
            "does not exist",
        ),
        (
            &["farm", farm, "--engine", "live", "--metrics-addr", &busy],
            "--metrics-addr",
            "cannot listen there",
        ),
        (
            &["farm", farm, "--experiments", file],
            "--experiments",
            "is a file",
        ),
        (
            &[
                "calibrate",
                "t.json",
                "--testbed",
                file,
                "--svg",
                svg.to_str().unwrap(),
            ],
            "--svg",
            "does not exist",
        ),
    ];
    for (args, flag, why) in cases {
        let (code, stdout, stderr) = gridbed(args);
        assert_eq!(code, Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains(why),
            "{flag}: {stderr}"
        );
        assert!(stdout.is_empty(), "{flag}: it worked: {stdout}");
    }
}

#[test]
fn sweep_repeat_runs_seeds_one_to_n() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("out");
    let (code, stdout, stderr) = gridbed(&[
        "sweep",
        tb.to_str().unwrap(),
        "--sites-file",
        catalog().to_str().unwrap(),
        "--strategies",
        "random,round-robin",
        "--sites",
        "3",
        "--maxpre",
        "5",
        "--repeat",
        "4",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("95% CI"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let seeds: std::collections::BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap())
        .collect();
    assert_eq!(
        seeds.into_iter().collect::<Vec<_>>(),
        vec!["1", "2", "3", "4"]
    );
}

#[test]
fn sweep_refuses_a_site_count_beyond_the_testbed() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let (code, _, stderr) = gridbed(&[
        "sweep",
        tb.to_str().unwrap(),
        "--sites-file",
        catalog().to_str().unwrap(),
        "--sites",
        "9",
        "-q",
    ]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--sites: 9"), "{stderr}");
}

#[test]
fn sweep_refuses_site_counts_that_drop_a_faulted_site_and_renumbers_its_faults() {
    let chaos = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/chaos.toml");
    let (code, _, stderr) = gridbed(&[
        "sweep",
        chaos.to_str().unwrap(),
        "--sites-file",
        catalog().to_str().unwrap(),
        "--sites",
        "1",
        "-q",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("site `grid3-02` has a timed fault (at 300 s)"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Without grid3-01, grid3-02 is site 1: its crash moves with it.
    let overrides = gridbed::config::Overrides {
        sites_file: Some(catalog()),
        ..Default::default()
    };
    let mut s = gridbed::config::load(&chaos, &overrides).unwrap();
    let (at, site, _) = s.faults.timed[0];
    assert_eq!((at, s.sites[site].info.name.as_str()), (300.0, "grid3-02"));
    let kept = vec![s.sites[0].clone(), s.sites[2].clone(), s.sites[3].clone()];
    s.replace_sites(kept).unwrap();
    assert!(
        s.faults
            .timed
            .iter()
            .all(|&(_, site, _)| s.sites[site].info.name == "grid3-02"),
        "{:?}",
        s.faults.timed
    );
    let run = gridbed::sim::run(&s).unwrap();
    assert!(run.succeeded);
}

#[test]
fn workflow_stats_prints_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let (code, stdout, stderr) = gridbed(&[
        "workflow",
        "stats",
        tb.to_str().unwrap(),
        "--sites",
        catalog().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["jobs"], 48);
    assert_eq!(v["edges"], 0);
    assert_eq!(v["critical_path"], 900.0);
}

#[test]
fn sim_runs_write_identical_records_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let run = |name: &str| {
        let json = dir.path().join(name);
        let (code, _, stderr) = gridbed(&[
            "run",
            tb.to_str().unwrap(),
            "--engine",
            "sim",
            "--sites",
            catalog().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
        // Each names its own control database (a.db, b.db).
        record.as_object_mut().unwrap().remove("db");
        record
    };
    assert_eq!(run("a.json"), run("b.json"));
}

#[test]
fn the_control_database_agrees_with_the_run_record_and_inspect_refuses_bad_files() {
    let body = SMALL
        .replace("strategy = \"random\"", "strategy = \"opportunistic\"")
        .replace(
            "[emulation]",
            "[manager]\nmonit_interval = 10\nmax_idle = 30\n[emulation]",
        )
        .replace("name = \"grid3-01\"", "name = \"grid3-01\"\ncpus = 1")
        .replace("name = \"grid3-02\"", "name = \"grid3-02\"\ncpus = 1");
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", &body);
    let json = dir.path().join("run.json");
    let (code, stdout, stderr) = gridbed(&[
        "run",
        tb.to_str().unwrap(),
        "--sites",
        catalog().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let db = dir.path().join("run.db");
    assert!(stdout.contains("control database written"), "{stdout}");
    let record = record_with_detail(&json);
    // A run that really queues and kills, so that no count agrees by being 0.
    let summary = &record["summary"];
    assert!(summary["kills"].as_u64().unwrap() > 0, "{summary}");
    assert!(
        summary["mean_queue_wait_s"].as_f64().unwrap() > 0.0,
        "{summary}"
    );
    let rows = gridbed::db::site_rows(&db).unwrap();
    let attempts: Vec<&serde_json::Value> = record["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["attempts"].as_array().unwrap())
        .collect();
    for site in record["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["cpus"] != 0)
    {
        let name = site["name"].as_str().unwrap();
        let row = rows.iter().find(|r| r.name == name).unwrap();
        let here = |field: &str| {
            attempts
                .iter()
                .filter(|a| a["site"] == name && !a[field].is_null())
                .count() as u64
        };
        assert_eq!(row.submitted, here("submitted"), "{name}");
        assert_eq!(row.started, here("started"), "{name}");
        assert_eq!(serde_json::json!(row.ended), site["jobs_ended"], "{name}");
        assert_eq!(serde_json::json!(row.killed), site["jobs_killed"], "{name}");
    }
    assert!(rows.iter().map(|r| r.killed).sum::<u64>() > 0);
    assert!(
        rows.iter().any(|r| r.submitted > r.started),
        "kills left attempts that never started"
    );
    for job in record["jobs"].as_array().unwrap() {
        let history = gridbed::db::job_history(&db, job["name"].as_str().unwrap()).unwrap();
        let attempts = job["attempts"].as_array().unwrap();
        assert_eq!(history.len(), attempts.len());
        for (h, a) in history.iter().zip(attempts) {
            assert_eq!(serde_json::json!(h.site), a["site"]);
            assert_eq!(serde_json::json!(h.outcome), a["outcome"]["kind"]);
        }
    }
    let (code, stdout, _) = gridbed(&["inspect", db.to_str().unwrap(), "--job", "coadd-0003-01-0"]);
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("ratio") && stdout.contains("attempt 0"),
        "{stdout}"
    );
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "not sqlite at all, just text").unwrap();
    for (path, says) in [
        (junk.to_str().unwrap(), "not a gridbed control database"),
        ("/nonexistent/x.db", "no such database file"),
    ] {
        let (code, _, stderr) = gridbed(&["inspect", path]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(says) && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

#[test]
fn report_draws_every_plot_of_a_sim_and_a_live_record_and_refuses_a_malformed_one() {
    let dir = tempfile::tempdir().unwrap();
    let testbed = write_testbed(dir.path(), "small.toml", SMALL);
    let testbed = testbed.to_str().unwrap();
    let sites = catalog();
    for engine in ["sim", "live"] {
        let record = dir.path().join(format!("{engine}.json"));
        let (code, _, stderr) = gridbed(&[
            "run",
            "--engine",
            engine,
            "-q",
            testbed,
            "--sites",
            sites.to_str().unwrap(),
            "--json",
            record.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        let out = dir.path().join(format!("report-{engine}"));
        let (code, stdout, stderr) = gridbed(&[
            "report",
            record.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        for (file, caption) in gridbed::report::run_report::PLOTS {
            let svg = std::fs::read_to_string(out.join(file)).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.contains(caption),
                "{engine}: {file}"
            );
            // Real plots, not the "nothing to show" placeholder.
            assert!(
                !svg.contains("nothing to show"),
                "{engine}: {file} is empty"
            );
            assert!(stdout.contains(file));
        }
        let html = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(html.contains("gantt.svg") && html.contains("makespan"));
        let gantt = std::fs::read_to_string(out.join("gantt.svg")).unwrap();
        assert!(
            gantt.contains("grid3-01"),
            "{engine}: site lanes are labelled"
        );
    }
    // The record and its database share the run's id; another run's
    // database with as many jobs is refused (issue 39).
    let sim_json = dir.path().join("sim.json");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sim_json).unwrap()).unwrap();
    let db_id: String = rusqlite::Connection::open(dir.path().join("sim.db"))
        .unwrap()
        .query_row("SELECT value FROM run WHERE key = 'run_id'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(record["run_id"], db_id.as_str());
    let live_db = dir.path().join("live.db");
    let (code, _, stderr) = gridbed(&[
        "report",
        sim_json.to_str().unwrap(),
        "--db",
        live_db.to_str().unwrap(),
        "--out",
        dir.path().join("mixed").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("is the control database of run"),
        "{stderr}"
    );
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"schema\": 1, \"engine\": 3}").unwrap();
    for (path, what) in [
        (junk.to_str().unwrap(), "not a gridbed run record"),
        ("/nonexistent/run.json", "cannot read"),
    ] {
        let (code, _, stderr) = gridbed(&["report", path, "--out", dir.path().to_str().unwrap()]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(what) && stderr.contains(path), "{stderr}");
        assert!(!stderr.contains("panicked"));
    }
}

#[test]
fn a_mid_size_record_holds_no_detail_and_report_and_inspect_read_it_from_the_database() {
    // Seed 000's 1,000-job live test, simulated: ~110,000 transfers.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let testbed = root.join("testbeds/spcl-live-10.toml");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let (code, stdout, stderr) = gridbed(&[
        "run",
        testbed.to_str().unwrap(),
        "--engine",
        "sim",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let text = std::fs::read_to_string(&json).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    let summary = &record["summary"];
    let transfers = summary["transfers"].as_u64().unwrap();
    assert!(transfers > 100_000, "{summary}");
    assert!(record.get("jobs").is_none() && record.get("transfers").is_none());
    assert_eq!(record["db"], "run.db", "named beside the record");
    // A per-transfer list would take ~200 bytes a transfer; what is left
    // (the timeline, at most 2,000 samples a site) does not grow with them.
    assert!(
        (text.len() as u64) < transfers * 20,
        "{} bytes for {transfers} transfers",
        text.len()
    );
    assert!(record["timeline"]["samples"].as_array().unwrap().len() > 10);

    // Moved together, record and database still find each other.
    let moved = dir.path().join("moved");
    std::fs::create_dir(&moved).unwrap();
    for f in ["run.json", "run.db"] {
        std::fs::rename(dir.path().join(f), moved.join(f)).unwrap();
    }
    let json = moved.join("run.json");
    let db = moved.join("run.db");
    let rec = gridbed::report::run_report::read_run(&json, None).unwrap();
    assert_eq!(rec.jobs.len() as u64, summary["jobs"].as_u64().unwrap());
    let failed = summary["transfer_failures"].as_u64().unwrap();
    assert_eq!(rec.transfers.len() as u64, transfers + failed);
    let bytes: u64 = rec
        .transfers
        .iter()
        .filter(|t| t.failure.is_none())
        .map(|t| t.bytes)
        .sum();
    assert_eq!(bytes, summary["bytes"].as_u64().unwrap());
    let ended = rec
        .jobs
        .iter()
        .filter(|j| {
            j.attempts
                .last()
                .is_some_and(|a| a.outcome == gridbed::core::records::Outcome::Ended)
        })
        .count() as u64;
    assert_eq!(ended, summary["jobs_done"].as_u64().unwrap());
    // The detail read back is what the run held in memory.
    let s = crate::common::load(&testbed);
    let run = gridbed::sim::run(&s).unwrap();
    let full = gridbed::report::RunRecord::from_run(&s, &run, "t", gridbed::report::Detail::Full);
    assert_eq!(rec.jobs, full.jobs);
    assert_eq!(rec.transfers, full.transfers);

    let out = dir.path().join("report");
    let (code, stdout, stderr) = gridbed(&[
        "report",
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    for (file, _) in gridbed::report::run_report::PLOTS {
        let svg = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(!svg.contains("nothing to show"), "{file}");
        assert!(stdout.contains(file));
    }
    let job = &rec.jobs[7];
    let (code, stdout, _) = gridbed(&["inspect", db.to_str().unwrap(), "--job", &job.name]);
    assert_eq!(code, Some(0));
    for (k, a) in job.attempts.iter().enumerate() {
        assert!(
            stdout.contains(&format!("attempt {k}")) && stdout.contains(&a.site),
            "{stdout}"
        );
    }

    // Without its database the record cannot be drawn, and says so.
    std::fs::remove_file(&db).unwrap();
    let (code, _, stderr) = gridbed(&[
        "report",
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("run.db") && stderr.contains("no such database file"),
        "{stderr}"
    );
}

#[test]
fn farm_runs_a_farm_testbed_and_refuses_bad_ones() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let paper = gridbed::config::farm::load(&root.join("testbeds/falkon-diffusion.toml")).unwrap();
    assert_eq!(
        (paper.tasks.len(), paper.spec.executors, paper.spec.cpus),
        (250_000, 64, 2)
    );
    assert_eq!(paper.spec.cache, 4_000_000_000);
    assert!(paper.spec.drp.is_some());
    assert_eq!(
        (paper.emulation.time_scale, paper.emulation.byte_scale),
        (1.0, 1000.0),
        "scaled for live: 10 MB files are 10 kB on disk"
    );

    let dir = tempfile::tempdir().unwrap();
    let body = r#"
name = "small-farm"
[farm]
executors = 4
cpus = 2
cache = "100 MB"
policy = "good-cache-compute"
store_bandwidth = "50 MB/s"
peer_bandwidth = "100 MB/s"
[stream]
tasks = 2000
files = 20
file_size = "5 MB"
compute = 0.05
arrivals = 50
"#;
    let path = write_testbed(dir.path(), "farm.toml", body);
    let (code, stdout, stderr) = gridbed(&["farm", path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("2000 tasks") && stdout.contains("makespan"),
        "{stdout}"
    );
    // Arrival times from a trace file beside the testbed.
    std::fs::write(dir.path().join("arrivals.csv"), "time\n0\n0.5\n0.5\n3\n").unwrap();
    let traced = write_testbed(
        dir.path(),
        "traced.toml",
        &body
            .replace("arrivals = 50", "arrivals = { trace = \"arrivals.csv\" }")
            .replace("tasks = 2000", "tasks = 4"),
    );
    let (code, stdout, stderr) = gridbed(&["farm", traced.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("4 tasks"), "{stdout}");
    std::fs::write(dir.path().join("arrivals.csv"), "0\nlater\n").unwrap();
    let (code, _, stderr) = gridbed(&["farm", traced.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("arrivals.csv:2:1: (arrival trace): expected an arrival time"),
        "{stderr}"
    );
    for (from, to, what) in [
        (
            "policy = \"good-cache-compute\"",
            "policy = \"fastest\"",
            "farm.policy",
        ),
        (
            "arrivals = 50",
            "arrivals = \"sometimes\"",
            "stream.arrivals",
        ),
        ("cpus = 2", "cpus = \"two\"", "bad.toml:5:8: farm.cpus"),
        (
            "arrivals = 50",
            "arrivals = { start = 0 }",
            "stream.arrivals: expected start, interval, max > 0",
        ),
        (
            "arrivals = 50",
            "arrivals = { begin = 1 }",
            "unknown field `begin`",
        ),
        (
            "arrivals = 50",
            "arrivals = 50\n[emulation]\ntime_scale = -1",
            "emulation: expected time_scale > 0",
        ),
    ] {
        let bad = write_testbed(dir.path(), "bad.toml", &body.replace(from, to));
        let (code, _, stderr) = gridbed(&["farm", bad.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(what), "expected `{what}` in {stderr}");
    }
}

#[test]
fn run_trace_writes_one_json_event_a_line_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let trace = dir.path().join("trace.jsonl");
    let json = dir.path().join("run.json");
    let (code, stdout, stderr) = gridbed(&[
        "run",
        tb.to_str().unwrap(),
        "--engine",
        "sim",
        "--sites",
        catalog().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("trace written to"), "{stdout}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let times: Vec<f64> = events.iter().map(|e| e["t"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    let record = record_with_detail(&json);
    let jobs = record["summary"]["jobs"].as_u64().unwrap() as usize;
    assert_eq!(count("ready"), jobs);
    assert!(count("ended") >= jobs);
    assert_eq!(
        count("transfer_started"),
        record["transfers"].as_array().unwrap().len()
    );
}

#[test]
fn bench_prints_its_figures_and_a_markdown_table_and_refuses_an_unknown_name() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("bench.md");
    let (code, stdout, stderr) = gridbed(&[
        "bench",
        "manager",
        "--shrink",
        "50",
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    for strategy in ["random", "round-robin", "data-present"] {
        assert!(
            stdout.contains(&format!("{strategy} (time in Manager::handle")),
            "{stdout}"
        );
    }
    let table = std::fs::read_to_string(&md).unwrap();
    assert_eq!(table.lines().count(), 2 + 3, "{table}");
    let (code, _, stderr) = gridbed(&["bench", "managr"]);
    assert_eq!(code, Some(2), "bad input: {stderr}");
    assert!(
        stderr.contains("invalid value 'managr'")
            && stderr.contains("possible values: sim, policy,"),
        "{stderr}"
    );
}

#[test]
fn db_replaces_only_its_own_files_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "precious notes, not a database").unwrap();
    let sites = catalog();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            tb.to_str().unwrap(),
            "--sites",
            sites.to_str().unwrap(),
            "--engine",
            "sim",
            "--db",
            db.to_str().unwrap(),
            "-q",
        ];
        args.extend(extra);
        gridbed(&args)
    };
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("not a gridbed control database"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        "precious notes, not a database",
        "left alone"
    );
    let (code, _, stderr) = run(&["--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!gridbed::db::site_rows(&db).unwrap().is_empty());
    // Its own database, from the run before, is replaced without --force.
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn the_control_database_survives_a_kill_9_of_a_live_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let testbed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gridbed"))
        .args(["run", testbed.to_str().unwrap(), "-q", "--db"])
        .arg(&db)
        // Its pools in the test's folder: a kill -9 leaves them behind.
        .arg("--pool-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until the first attempts are committed (the run takes about 25 s).
    let attempts = |db: &std::path::Path| -> i64 {
        rusqlite::Connection::open(db)
            .and_then(|c| c.query_row("SELECT count(*) FROM attempts", [], |r| r.get(0)))
            .unwrap_or(0)
    };
    let mut seen = 0;
    for _ in 0..240 {
        seen = attempts(&db);
        if seen >= 10 || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert!(seen >= 10, "no attempts committed within 60 s");
    child.kill().unwrap(); // SIGKILL: no destructor, no last commit
    child.wait().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    assert!(attempts(&db) >= seen, "what was committed is still there");
    let (code, stdout, stderr) = gridbed(&["inspect", db.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("grid3-01"), "{stdout}");
}

#[test]
fn audit_finds_a_live_runs_pools_agree_with_its_database_and_reports_each_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let tb = write_testbed(dir.path(), "small.toml", SMALL);
    let pools = dir.path().join("pools");
    std::fs::create_dir(&pools).unwrap();
    let db = dir.path().join("run.db");
    let (code, _, stderr) = run_testbed(
        &tb,
        &[
            "--keep-pools",
            pools.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = gridbed(&["audit", db.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("0 differences"), "{stdout}");
    // One file with a flipped byte, one gone, one stray.
    let origin = std::fs::read_dir(&pools)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .contains("submit-host")
        })
        .unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&origin)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut bytes = std::fs::read(&files[0]).unwrap();
    bytes[0] ^= 0xFF;
    std::fs::write(&files[0], bytes).unwrap();
    std::fs::remove_file(&files[1]).unwrap();
    std::fs::write(origin.join("stray"), "not a pool file").unwrap();
    let (code, stdout, _) = gridbed(&["audit", db.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stdout}");
    for part in [
        "does not match its sha256",
        "is registered but not on disk",
        "submit-host: `stray` is on disk but not registered",
        "3 differences",
    ] {
        assert!(stdout.contains(part), "`{part}` in {stdout}");
    }
    // A run that kept no pools cannot be audited, and says how.
    let sim_db = dir.path().join("sim.db");
    let (code, _, _) = run_testbed(&tb, &["--engine", "sim", "--db", sim_db.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    let (code, _, stderr) = gridbed(&["audit", sim_db.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--keep-pools DIR"), "{stderr}");
}

#[test]
fn measure_reports_a_commands_own_wall_time_and_peak_memory_and_its_failure() {
    let exe = env!("CARGO_BIN_EXE_gridbed");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let testbed = root.join("testbeds/quickstart.toml");
    let (code, stdout, stderr) = gridbed(&["measure", exe, "check", testbed.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let m: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let (wall, rss) = (m["wall"].as_f64().unwrap(), m["rss"].as_f64().unwrap());
    assert!(wall > 0.0 && wall < 60.0, "{m}");
    assert!(rss > 1e6 && rss < 1e9, "a real peak RSS in bytes: {m}");
    // A failing command fails the measurement, with its words.
    let (code, _, stderr) = gridbed(&["measure", exe, "check", "/nonexistent.toml"]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("nonexistent.toml"), "{stderr}");
}

/// The long options a `--help` text lists (`--help` and `--version` aside).
fn help_options(help: &str) -> std::collections::BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix('-')
                .filter(|r| !r.starts_with('-'))
                .map_or(l, |r| r.split_once(", ").map_or(r, |(_, rest)| rest));
            let name = l.strip_prefix("--")?;
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty() && name != "help" && name != "version").then_some(name)
        })
        .collect()
}

/// The long options a summary's text names (`[--engine live|sim]`).
fn mentioned_options(text: &str) -> std::collections::BTreeSet<String> {
    text.split("--")
        .skip(1)
        .map(|t| {
            t.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
        })
        .filter(|o| !o.is_empty())
        .collect()
}

/// The subcommands a `--help` text lists under `Commands:`.
fn help_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Issue 64: the README's command summary is the command line's own. Every
/// command `gridbed --help` lists (and each of its subcommands) has an
/// entry, each entry names exactly the options its `--help` lists, and
/// `bench`'s entry every benchmark its `--help` offers.
#[test]
fn the_readme_summary_lists_every_command_and_option_the_cli_has() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme
        .split("## The command line")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("README's command summary");
    // The options every entry with `[SCENARIO]` takes, defined at its end.
    let (block, scenario) = block
        .split_once("where SCENARIO is")
        .expect("the summary defines SCENARIO");
    // Each entry: the command's words, then its lines' long options.
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in block.lines().skip(1) {
        let line = line.replace("[SCENARIO]", scenario);
        match line.strip_prefix("gridbed ") {
            Some(rest) => {
                let words: Vec<&str> = rest
                    .split_whitespace()
                    .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                    .filter(|w| !w.starts_with('-'))
                    .collect();
                entries.push((words.join(" "), rest.to_string()));
            }
            None => entries.last_mut().expect("an entry first").1 += &line,
        }
    }
    let mut commands: Vec<String> = Vec::new();
    for top in help_commands(&gridbed_ok(&["--help"])) {
        let subs = help_commands(&gridbed_ok(&[top.as_str(), "--help"]));
        if subs.is_empty() {
            commands.push(top);
        } else {
            commands.extend(subs.iter().map(|s| format!("{top} {s}")));
        }
    }
    let mut problems = Vec::new();
    for command in &commands {
        let text: String = (entries.iter())
            .filter(|(c, _)| c == command)
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if text.is_empty() {
            problems.push(format!("`gridbed {command}` has no entry"));
            continue;
        }
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let help = gridbed_ok(&args);
        let listed = mentioned_options(&text);
        let has = help_options(&help);
        for o in has.difference(&listed) {
            problems.push(format!("`gridbed {command}`: --{o} is missing"));
        }
        for o in listed.difference(&has) {
            problems.push(format!("`gridbed {command}`: --{o} does not exist"));
        }
        if command == "bench" {
            let offered = help
                .split("[possible values: ")
                .nth(1)
                .and_then(|s| s.split(']').next())
                .expect("bench --help lists its benchmarks");
            for b in offered.split(", ") {
                if !text.contains(b) {
                    problems.push(format!("`gridbed bench`: benchmark {b} is missing"));
                }
            }
        }
    }
    for (c, _) in &entries {
        if !commands.contains(c) {
            problems.push(format!("the entry `gridbed {c}` is no command"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
