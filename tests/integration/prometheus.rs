//! The Grafana dashboard against a real Prometheus: a live run exports its
//! metrics, Prometheus (the Debian package, on loopback) scrapes them every
//! second, and every PromQL expression of every panel must return data.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gridbed::live::{self, LiveOptions};

use crate::common;

#[test]
fn the_dashboard_parses_and_every_panel_has_a_datasource_targets_and_a_unit() {
    let d = common::dashboard();
    assert_eq!(d["uid"], "gridbed-run", "a stable uid");
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(vars, ["run", "site"]);
    let panels = d["panels"].as_array().unwrap();
    assert!(panels.len() >= 14);
    let rows: Vec<&str> = panels
        .iter()
        .filter(|p| p["type"] == "row")
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert!(
        rows.iter().any(|r| r.starts_with("Data diffusion")),
        "a row of farm panels: {rows:?}"
    );
    for p in panels.iter().filter(|p| p["type"] != "row") {
        let title = p["title"].as_str().unwrap();
        assert_eq!(p["datasource"]["uid"], "gridbed-prometheus", "{title}");
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}: no targets");
        for t in targets {
            let expr = t["expr"].as_str().unwrap();
            assert!(
                expr.contains("run_id=\"$run\""),
                "{title}: {expr} ignores $run"
            );
        }
        let unit = p["fieldConfig"]["defaults"]["unit"].as_str().unwrap_or("");
        assert!(!unit.is_empty(), "{title}: no unit");
    }
    let provisioned = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("grafana/provisioning/datasources/prometheus.yml"),
    )
    .unwrap();
    assert!(provisioned.contains("uid: gridbed-prometheus"));
}

/// The `prometheus` binary, if installed (`.ci/run` installs it; the test
/// that needs it is ignored unless run with `--include-ignored`).
fn prometheus_binary() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
}

/// A port free on loopback now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the Prometheus child when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A plain HTTP/1.0 GET on loopback; the body.
fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.to_string())
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A farm of 4 executors that reads from peers, the store and its caches
/// for a few seconds.
fn small_farm() -> (
    gridbed::core::farm::FarmSpec,
    Vec<gridbed::core::farm::Task>,
) {
    use gridbed::diffusion::stream::{Arrivals, Popularity, generate};
    let spec = gridbed::core::farm::FarmSpec {
        executors: 4,
        drp: None,
        cpus: 2,
        cache: 100_000_000,
        eviction: "lru".into(),
        policy: "good-cache-compute".into(),
        files: 30,
        file_size: 10_000_000,
        compute: 0.1,
        dispatch: 0.0,
        store_bandwidth: 50e6,
        peer_bandwidth: 50e6,
        disk_bandwidth: f64::INFINITY,
        peer_latency: 0.0,
        caching: true,
        seed: 2,
        interval: 5.0,
    };
    let tasks = generate(
        400,
        30,
        1,
        &Arrivals::Constant(10.0),
        &Popularity::Uniform,
        2,
    );
    (spec, tasks)
}

const SCENARIO: &str = r#"
strategy = "round-robin"
replica_policy = "caching"
origin = "submit-host"
[emulation]
time_scale = 40
byte_scale = 1000
[manager]
maxpre = 6
# Prescripts spread over the run, so that transfers (and the quantiles of
# their durations) span several scrapes even on a loaded machine.
prescript_interval = 3
monit_interval = 2
max_idle = 20
[[site]]
name = "submit-host"
corrupt_responses = 2
[[site]]
name = "grid3-01"
cpus = 4
background = { model = "markov", mean_busy = 1.0, period = 30 }
[[site]]
name = "grid3-02"
cpus = 4
disk = "8 MB"
[[site]]
name = "grid3-03"
cpus = 4
[workflow]
generator = "pipeline"
levels = 2
width = 10
runtime = [60, 40]
file_size = "1 MB"
"#;

#[test]
#[ignore = "needs a prometheus binary (apt-get install prometheus)"]
fn every_panel_expression_returns_data_from_a_real_prometheus_scraping_a_live_run() {
    let prometheus = prometheus_binary()
        .expect("no `prometheus` binary on PATH or in /usr/bin: apt-get install prometheus");
    let dir = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: gridbed\n    static_configs:\n      - targets: [\"127.0.0.1:{metrics_port}\"]\n"
        ),
    )
    .unwrap();
    let _server = Server(
        Command::new(&prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let up = Instant::now();
    while get(prom_addr, "/-/ready").is_none() {
        assert!(
            up.elapsed() < Duration::from_secs(60),
            "Prometheus never got ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Prometheus hands new targets to its scrapers up to 5 s after it is
    // ready (longer on a loaded machine): wait until it has tried our
    // (not yet listening) endpoint once, so that it scrapes the whole run.
    let first_try = Instant::now();
    while !get(prom_addr, &format!("/api/v1/query?query={}", encode("up")))
        .is_some_and(|b| b.contains(&format!("127.0.0.1:{metrics_port}")))
    {
        assert!(
            first_try.elapsed() < Duration::from_secs(60),
            "Prometheus never tried its target"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_d, s) = common::scenario(SCENARIO);
    let run_id = "prometheus-test";
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let metrics_addr: SocketAddr = format!("127.0.0.1:{metrics_port}").parse().unwrap();
    let scraper = std::thread::spawn(move || {
        // A real scrape of /metrics during the lingering end of the run.
        let t = Instant::now();
        let mut last = None;
        while t.elapsed() < Duration::from_secs(120) {
            if let Some(body) = get(metrics_addr, "/metrics") {
                last = Some(body);
            } else if last.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        last
    });
    let r = live::run(
        &s,
        LiveOptions {
            metrics_addr: Some(metrics_addr),
            linger: Duration::from_secs(4),
            run_id: run_id.into(),
            ..Default::default()
        },
    )
    .expect("live run");
    assert!(r.succeeded);
    // The scraper stops once the run's /metrics is gone.
    let scraped = scraper.join().unwrap().expect("scraped /metrics over HTTP");
    // Then a live data-diffusion farm on the same address, for the farm row.
    let farm_run_id = "prometheus-test-farm";
    let farm_start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let (spec, tasks) = small_farm();
    let f = gridbed::live::farm::run(
        &spec,
        &tasks,
        gridbed::config::Emulation {
            time_scale: 5.0,
            byte_scale: 1000.0,
        },
        gridbed::live::farm::FarmOptions {
            run_id: farm_run_id.into(),
            metrics_addr: Some(metrics_addr),
            linger: Duration::from_secs(4),
            ..Default::default()
        },
    )
    .expect("live farm");
    assert_eq!(f.run.tasks, tasks.len());
    let end = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    // Names three ways: dashboard ⊆ live scrape = docs/metrics.md.
    let exported: BTreeSet<String> = scraped
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md"))
            .unwrap();
    let documented: BTreeSet<String> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|n| n.starts_with("gridbed_"))
        .map(str::to_string)
        .collect();
    assert_eq!(exported, documented, "scrape vs docs/metrics.md");
    let used = common::dashboard_metrics();
    assert!(
        used.is_subset(&exported),
        "dashboard uses {:?} not exported",
        used.difference(&exported).collect::<Vec<_>>()
    );
    assert!(scraped.contains(&format!("run_id=\"{run_id}\"")));

    // Let Prometheus take its last scrapes, then ask every panel.
    std::thread::sleep(Duration::from_secs(2));
    let mut missing = Vec::new();
    for (title, expr) in common::dashboard_exprs() {
        let (run_id, start) = if expr.contains("gridbed_farm_") {
            (farm_run_id, farm_start)
        } else {
            (run_id, start)
        };
        let q = expr
            .replace("$run", run_id)
            .replace("$site", ".*")
            // Grafana's $__rate_interval is 4 scrapes; a loaded CI machine
            // may scrape late, so the window is wider than that.
            .replace("$__rate_interval", "15s");
        let path = format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step=1",
            encode(&q)
        );
        let body = get(prom_addr, &path).unwrap_or_default();
        let v: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{title}: `{q}`: {e}: {body}"));
        assert_eq!(v["status"], "success", "{title}: `{q}`: {body}");
        let has_data = v["data"]["result"].as_array().is_some_and(|series| {
            series.iter().any(|s| {
                s["values"].as_array().is_some_and(|vals| {
                    vals.iter().any(|p| {
                        p[1].as_str()
                            .and_then(|x| x.parse::<f64>().ok())
                            .is_some_and(f64::is_finite)
                    })
                })
            })
        });
        if !has_data {
            missing.push(format!("{title}: `{q}`"));
        }
    }
    assert!(missing.is_empty(), "no data for:\n{}", missing.join("\n"));
}
