//! Both ends of every transfer, in both engines: a receiver's in bounds what
//! it takes, fan-in shares it, a shared link on the path shares its
//! bandwidth, and the simulator's max-min times hold live on real bytes.

use gridbed::config::Scenario;
use gridbed::core::SiteId;
use gridbed::core::topology::{GridNetwork, Interface, Link, Topology};
use gridbed::live::{self, LiveOptions};
use gridbed::sim;

use crate::common;

/// `n` producers, one on each site `src0`.. (each writing a 10 MB file at
/// once), and a consumer on `sink` reading them all: its prescript stages
/// the `n` files at once, each from its own site. `sink` and `links` are
/// written into the testbed as given.
pub(crate) fn fan_in(n: usize, sink: &str, source: &str, links: &str) -> String {
    let mut tb = format!(
        r#"
strategy = "round-robin"
origin = "store"
[emulation]
time_scale = 2
byte_scale = 100
[manager]
maxpre = 0
prescript_interval = 0
prescript_streams = {n}
{links}
[[site]]
name = "store"
new = true
storage = true
cpus = 0
disk = "1 GB"
"#
    );
    for i in 0..n {
        tb.push_str(&format!(
            "[[site]]\nname = \"src{i}\"\nnew = true\ncpus = 1\ndisk = \"1 GB\"\nstream_cap = \"unlimited\"\n{source}\n"
        ));
    }
    tb.push_str(&format!(
        "[[site]]\nname = \"sink\"\nnew = true\ncpus = 1\ndisk = \"1 GB\"\n{sink}\n\
         [workflow]\ngenerator = \"inline\"\n"
    ));
    for i in 0..n {
        tb.push_str(&format!(
            "[[workflow.file]]\nname = \"f{i}\"\nsize = \"10 MB\"\n\
             [[workflow.job]]\nname = \"p{i}\"\nruntime = 0\noutputs = [\"f{i}\"]\n"
        ));
    }
    let inputs: Vec<String> = (0..n).map(|i| format!("\"f{i}\"")).collect();
    let parents: Vec<String> = (0..n).map(|i| format!("\"p{i}\"")).collect();
    tb.push_str(&format!(
        "[[workflow.job]]\nname = \"consumer\"\nruntime = 0\ninputs = [{}]\nparents = [{}]\n",
        inputs.join(", "),
        parents.join(", ")
    ));
    tb
}

/// The nominal seconds each transfer into `to` took.
fn into(run: &gridbed::core::result::RunResult, to: SiteId) -> Vec<f64> {
    run.records
        .transfers
        .iter()
        .filter(|t| t.to == to && t.failure.is_none())
        .map(|t| t.end.expect("ended") - t.start)
        .collect()
}

fn sink_of(s: &Scenario) -> SiteId {
    s.sites.iter().position(|x| x.info.name == "sink").unwrap()
}

/// Each engine's transfer times into the sink.
fn both_engines(body: &str) -> (Vec<f64>, Vec<f64>) {
    let (_dir, s) = common::scenario(body);
    let sink = sink_of(&s);
    let sim = sim::run(&s).unwrap();
    assert!(sim.succeeded);
    let live = live::run(&s, LiveOptions::default()).unwrap();
    assert!(live.succeeded);
    (into(&sim, sink), into(&live, sink))
}

/// Their mean within `tolerance` of `want`, and each within twice that (a
/// live stream may start a few milliseconds before the others, and streams
/// sharing a bucket end over its last round of chunks).
fn assert_near(got: &[f64], want: f64, tolerance: f64, what: &str) {
    assert_near_within(got, want, tolerance, 0.0, what);
}

/// A shared 2-core machine may hold a live run's process off the CPU for
/// tens of milliseconds: a live transfer's time may be off by this much
/// (s) beside its tolerance (a 1 s transfer took 1.065 s in one CI run).
const LIVE_NOISE: f64 = 0.1;

/// [`assert_near`] for a live run's times, allowing [`LIVE_NOISE`].
fn assert_live_near(got: &[f64], want: f64, tolerance: f64, what: &str) {
    assert_near_within(got, want, tolerance, LIVE_NOISE, what);
}

/// [`assert_near`], `noise` seconds allowed beside the tolerance.
fn assert_near_within(got: &[f64], want: f64, tolerance: f64, noise: f64, what: &str) {
    assert!(!got.is_empty(), "{what}: no transfer");
    let mean = got.iter().sum::<f64>() / got.len() as f64;
    assert!(
        (mean - want).abs() <= tolerance * want + noise,
        "{what}: transfers took {mean:.3} s on average, expected {want} s ± {:.0}%: {got:?}",
        tolerance * 100.0
    );
    for &t in got {
        assert!(
            (t - want).abs() <= 2.0 * tolerance * want + noise,
            "{what}: a transfer took {t:.3} s, expected {want} s ± {:.0}%: {got:?}",
            200.0 * tolerance
        );
    }
}

#[test]
fn ten_sources_into_one_receiver_take_ten_times_one_transfer_in_both_engines() {
    let sink = "bandwidth = \"10 MB/s\"";
    let source = "bandwidth = \"1 GB/s\"";
    let (sim_one, live_one) = both_engines(&fan_in(1, sink, source, ""));
    let (sim_ten, live_ten) = both_engines(&fan_in(10, sink, source, ""));
    // 10 MB at the receiver's 10 MB/s alone; ten at once share it.
    assert_near(&sim_one, 1.0, 1e-9, "sim alone");
    assert_near(&sim_ten, 10.0, 1e-9, "sim fan-in");
    assert_eq!(sim_ten.len(), 10);
    assert_live_near(&live_one, 1.0, 0.05, "live alone");
    assert_live_near(&live_ten, 10.0, 0.05, "live fan-in");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let ratio = mean(&live_ten) / mean(&live_one);
    assert!(
        (ratio - 10.0).abs() <= 0.5,
        "live fan-in / alone = {ratio:.2}"
    );
}

#[test]
fn the_protocol_efficiency_takes_its_part_of_every_rate_in_both_engines_but_not_of_a_stream_cap() {
    let efficiency = "[network]\nprotocol_efficiency = 0.8";
    let sink = "bandwidth = \"10 MB/s\"";
    let (sim, live) = both_engines(&fan_in(4, sink, "bandwidth = \"1 GB/s\"", efficiency));
    // 4 × 10 MB through the receiver's 10 MB/s, of which 8 carry files.
    assert_near(&sim, 5.0, 1e-9, "sim");
    assert_live_near(&live, 5.0, 0.05, "live");
    // A stream cap is a rate of file bytes already: 10 MB at 2 MB/s.
    let fast = "bandwidth = \"1 GB/s\"";
    let capped = fan_in(1, fast, fast, efficiency).replace("\"unlimited\"", "\"2 MB/s\"");
    let (_dir, s) = common::scenario(&capped);
    assert_eq!(s.topology.protocol_efficiency, 0.8);
    let run = sim::run(&s).unwrap();
    assert_near(&into(&run, sink_of(&s)), 5.0, 1e-9, "sim, capped");
}

#[test]
fn staging_into_a_site_is_bounded_by_its_in_when_lower_than_its_out() {
    // The sink sends at 100 MB/s but takes in 5 MB/s: 10 MB take 2 s.
    let sink = "bandwidth = \"100 MB/s\"\nbandwidth_in = \"5 MB/s\"";
    let (sim, live) = both_engines(&fan_in(1, sink, "bandwidth = \"1 GB/s\"", ""));
    assert_near(&sim, 2.0, 1e-9, "sim");
    assert_live_near(&live, 2.0, 0.05, "live");
    // The same site as a sender is held to its out, not its in.
    let (_d, s) = common::scenario(&fan_in(1, sink, "", ""));
    assert_eq!(s.sites[sink_of(&s)].bandwidth_out, 100e6);
    assert_eq!(s.sites[sink_of(&s)].bandwidth_in, 5e6);
}

#[test]
fn sources_behind_one_shared_link_share_it_in_both_engines() {
    // Four sources of 1 GB/s behind a 10 MB/s WAN link, a receiver of
    // 1 GB/s at the core: the link is the bottleneck, 2.5 MB/s each.
    let links = "[[link]]\nname = \"wan\"\nbandwidth = \"10 MB/s\"\n";
    let source = "bandwidth = \"1 GB/s\"\npath = [\"wan\"]";
    let (sim, live) = both_engines(&fan_in(4, "bandwidth = \"1 GB/s\"", source, links));
    assert_near(&sim, 4.0, 1e-9, "sim");
    assert_live_near(&live, 4.0, 0.05, "live");
}

/// Two campuses behind one uplink, and a site at the core.
fn campuses() -> Topology {
    let link = |name: &str, bandwidth: f64| Link {
        name: name.into(),
        bandwidth,
        latency: 0.0,
    };
    Topology {
        links: vec![
            link("campus-a", 100.0),
            link("campus-b", 100.0),
            link("uplink", 10.0),
        ],
        // a1, a2 on campus a; b1 on campus b; the core site.
        paths: vec![vec![0, 2], vec![0, 2], vec![1, 2], vec![]],
        protocol_efficiency: 1.0,
    }
}

#[test]
fn two_campuses_share_their_uplink_to_the_rest_but_not_within_or_between_them() {
    let t = campuses();
    let nic = Interface {
        out: 1000.0,
        inbound: 1000.0,
        stream_cap: f64::INFINITY,
    };
    let mut grid: GridNetwork<u32> = GridNetwork::new(&t, &[nic; 4]);
    let (core, a1, a2, b1) = (3, 0, 1, 2);
    // To the rest of the grid: both campuses' uploads cross the uplink up
    // (10), 5 each; a download crosses it down, full duplex: 10 alone.
    let (a_up, _) = grid.route(a1, core);
    let (b_up, _) = grid.route(b1, core);
    let (down, _) = grid.route(core, a2);
    grid.net.start(0.0, a_up, 1, 100.0);
    grid.net.start(0.0, b_up, 2, 100.0);
    grid.net.start(0.0, down, 3, 100.0);
    assert_eq!((grid.net.rate(a_up), grid.net.rate(b_up)), (5.0, 5.0));
    assert_eq!(grid.net.rate(down), 10.0);
    // Within a campus: no shared link at all, only a1's out (less the 5 of
    // a1→core) and a2's in (less the 10 of core→a2).
    let (within, _) = grid.route(a1, a2);
    grid.net.start(0.0, within, 4, 100.0);
    assert_eq!(grid.net.rate(within), 990.0);
    // Between the campuses: campus-a up (100 less a1→core's 5) and
    // campus-b down, not the uplink.
    let (between, _) = grid.route(a2, b1);
    grid.net.start(0.0, between, 5, 100.0);
    assert_eq!(grid.net.rate(between), 95.0);
    assert_eq!((grid.net.rate(a_up), grid.net.rate(b_up)), (5.0, 5.0));
    assert_eq!(grid.net.rate(down), 10.0);
}

#[test]
fn a_testbed_s_links_and_paths_read_into_the_tree_the_engines_use() {
    let body = fan_in(
        2,
        "path = [\"campus\"]",
        "path = [\"campus\", \"uplink\"]",
        "[[link]]\nname = \"uplink\"\nbandwidth = \"1 Gbit/s\"\nlatency = 0.02\n\
         [[link]]\nname = \"campus\"\nbandwidth = \"10 Gbit/s\"\n",
    );
    // The sink's path [campus] and the sources' [campus, uplink] would not
    // be a tree (campus leads to the core and to the uplink).
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_testbed(dir.path(), "t.toml", &body);
    let overrides = gridbed::config::Overrides {
        sites_file: Some(common::catalog()),
        ..Default::default()
    };
    let err = gridbed::config::load(&path, &overrides).unwrap_err();
    assert!(err.message.contains("form a tree"), "{err}");
    let body = body.replace("path = [\"campus\"]", "path = [\"campus\", \"uplink\"]");
    let (_d, s) = common::scenario(&body);
    let t = &s.topology;
    assert_eq!(t.links[0].name, "uplink");
    assert_eq!(t.links[0].bandwidth, 125e6);
    assert_eq!(t.links[0].latency, 0.02);
    let (src0, sink) = (1, sink_of(&s));
    assert!(t.crossed(src0, sink).is_empty(), "one campus");
    assert_eq!(t.crossed(0, sink).as_slice(), &[0, 1], "from the core down");
    assert_eq!(t.latency(0, sink), 0.02);
}

#[test]
fn the_shipped_transfer_patterns_simulate_to_their_closed_forms() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/network");
    // (testbed, transfers, seconds each): 25 × 10 MB into 25 MB/s; 25 ×
    // 10 MB out of 25 MB/s; nine 50 MB files into each 50 MB/s site.
    for (name, count, each) in [
        ("fan-in", 25, 10.0),
        ("fan-out", 25, 10.0),
        ("all-to-all", 90, 9.0),
    ] {
        let s = common::load(&dir.join(format!("{name}.toml")));
        let run = sim::run(&s).unwrap();
        assert!(run.succeeded, "{name}");
        let times: Vec<f64> = run
            .records
            .transfers
            .iter()
            .map(|t| t.end.unwrap() - t.start)
            .collect();
        assert_eq!(times.len(), count, "{name}");
        assert_near(&times, each, 1e-9, name);
    }
    // Campuses: a1's reads from r1 and r2 come down the 20 MB/s uplink with
    // every other core-to-campus transfer (8 × 2.5 MB/s), so they are the
    // slowest; its reads within its campus and from the other one cross no
    // uplink and share what is left of a1's 50 MB/s in (3 × 15 MB/s).
    let s = common::load(&dir.join("campuses.toml"));
    let run = sim::run(&s).unwrap();
    let site = |n: &str| s.sites.iter().position(|x| x.info.name == n).unwrap();
    let took = |from: &str, to: &str| {
        let t = run
            .records
            .transfers
            .iter()
            .find(|t| t.from == site(from) && t.to == site(to))
            .unwrap();
        t.end.unwrap() - t.start
    };
    assert_near(&[took("r1", "a1"), took("a1", "r1")], 4.0, 1e-9, "uplink");
    assert_near(
        &[took("a2", "a1"), took("b1", "a1")],
        10.0 / 15.0,
        1e-9,
        "in",
    );
}

#[test]
fn a_run_s_flows_export_and_replay_to_the_simulator_s_own_ends() {
    let dir = tempfile::tempdir().unwrap();
    let patterns = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/network");
    for name in ["campuses", "mixed"] {
        let (trace, replayed) = (dir.path().join("t.json"), dir.path().join("r.json"));
        let tb = patterns.join(format!("{name}.toml"));
        let (tb, trace_s, replayed_s) = (
            tb.to_str().unwrap(),
            trace.to_str().unwrap(),
            replayed.to_str().unwrap(),
        );
        common::gridbed_ok(&["flows", "export", tb, "--out", trace_s]);
        let stdout = common::gridbed_ok(&["flows", "replay", trace_s, "--out", replayed_s]);
        assert!(stdout.contains("flows replayed in"), "{stdout}");
        let read = |p: &std::path::Path| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        };
        let (sim, replay) = (read(&trace), read(&replayed));
        let flows = sim["flows"].as_array().unwrap();
        assert!(flows.len() >= 5, "{name}");
        for (a, b) in flows.iter().zip(replay["flows"].as_array().unwrap()) {
            let (ea, eb) = (a["end"].as_f64().unwrap(), b["end"].as_f64().unwrap());
            assert!((ea - eb).abs() <= 1e-9 * ea, "{name}: {a} against {b}");
        }
        if name == "campuses" {
            let names: Vec<&str> = sim["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap())
                .collect();
            for want in ["up:uplink", "down:uplink", "in:a1", "out:r1"] {
                assert!(names.contains(&want), "{names:?}");
            }
        }
    }
    // A simulated run is the model on its own starts.
    let s = common::load(&patterns.join("mixed.toml"));
    let run = sim::run(&s).unwrap();
    let pairs = sim::flows::own_starts(&s, &run).unwrap();
    assert_eq!(pairs.len(), run.records.transfers.len());
    for (model, own) in pairs {
        assert!(
            model > 0.0 && (model - own).abs() <= 1e-9 * model,
            "{model} against {own}"
        );
    }
    // A trace that makes no sense is refused with its flow named.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"resources":[{"name":"in:x","bandwidth":1}],"flows":[{"name":"f","start":0,"bytes":1,"resources":[7]}]}"#,
    )
    .unwrap();
    let (code, _, stderr) = common::gridbed(&["flows", "replay", bad.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("flow 0 (`f`): resource 7"), "{stderr}");
}
