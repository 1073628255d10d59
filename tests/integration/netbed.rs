//! The netbed: every site a daemon in its own network namespace, links
//! shaped by the kernel. Needs root and iproute2 (CI has both).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// Four sites, each link 20 ms and 50 Mbit/s; three jobs one after the
/// other, each pulling its own 20 MB input from the store (one transfer on
/// the store's link at a time).
const WAN4: &str = r#"
strategy = "round-robin"
replica_policy = "delete"
origin = "store"
seed = 7
[emulation]
time_scale = 1
byte_scale = 1
[workflow]
generator = "inline"
"#;

fn testbed() -> String {
    let mut t = WAN4.to_string();
    for (name, cpus) in [("store", 0), ("a", 1), ("b", 1), ("c", 1)] {
        t += &format!(
            "[[site]]\nname = \"{name}\"\nnew = true\ncpus = {cpus}\nstorage = {}\ndisk = \"10 GB\"\n\
             bandwidth = \"50 Mbit/s\"\nstream_cap = \"unlimited\"\nlatency = 0.02\n",
            cpus == 0
        );
    }
    let mut parent: Option<String> = None;
    for j in ["a", "b", "c"] {
        t += &format!("[[workflow.file]]\nname = \"in-{j}\"\nsize = \"20 MB\"\n");
        t += &format!("[[workflow.job]]\nname = \"j{j}\"\nruntime = 0\ninputs = [\"in-{j}\"]\n");
        if let Some(p) = &parent {
            t += &format!("parents = [\"{p}\"]\n");
        }
        parent = Some(format!("j{j}"));
    }
    t
}

/// Takes the netbed in `dir` down when dropped, whatever the test did.
struct Down(PathBuf, Option<String>);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = common::gridbed(&["netbed", "down", "--dir", self.0.to_str().unwrap()]);
        // A state file that never got written: remove by name.
        if let Some(prefix) = &self.1 {
            let left = gridbed::netbed::leftovers(prefix);
            for l in left.links {
                let _ = Command::new("ip").args(["link", "del", &l]).status();
            }
            for n in left.namespaces {
                let _ = Command::new("ip").args(["netns", "del", &n]).status();
            }
        }
    }
}

fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `tc WHAT show dev DEV` in namespace `netns`, or the root one.
fn tc_show(netns: Option<&str>, what: &str, dev: &str) -> String {
    let tc = ["tc", what, "show", "dev", dev];
    match netns {
        Some(ns) => ip(&[&["netns", "exec", ns][..], &tc].concat()),
        None => {
            let out = Command::new("tc").args(&tc[1..]).output().expect("tc");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    }
}

/// HTB classes of a shaped direction: all of them ceiled at `rate`, one
/// leaf per peer site (`peers`) besides the root, the default leaf and the
/// leaf ahead of them (small packets, the manager's traffic).
fn assert_fair(classes: &str, rate: &str, peers: usize) {
    let htb: Vec<&str> = classes
        .lines()
        .filter(|l| l.contains("class htb"))
        .collect();
    assert_eq!(htb.len(), peers + 3, "{classes}");
    let ahead = htb
        .iter()
        .find(|l| l.contains(":3 "))
        .expect("the leaf ahead");
    assert!(ahead.contains("prio 0"), "{classes}");
    assert!(
        htb.iter().all(|l| l.contains(&format!("ceil {rate}"))),
        "{classes}"
    );
}

fn prefix_of(dir: &Path) -> String {
    gridbed::netbed::State::read(dir).unwrap().prefix
}

/// `gridbed netbed up` of `tb` in `dir`/netbed with daemons on `port`: the
/// state folder, and the guard that takes it down.
fn up(tb: &Path, dir: &Path, port: u16) -> (PathBuf, Down) {
    let state = dir.join("netbed");
    let mut guard = Down(state.clone(), None);
    let catalog = common::catalog();
    let (code, out, err) = common::gridbed(&[
        "netbed",
        "up",
        tb.to_str().unwrap(),
        "--sites",
        catalog.to_str().unwrap(),
        "--dir",
        state.to_str().unwrap(),
        "--port",
        &port.to_string(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    guard.1 = Some(prefix_of(&state));
    (state, guard)
}

/// `gridbed run` of `tb` on the netbed in `state`: its record with detail.
fn run_on(tb: &Path, state: &Path, dir: &Path) -> serde_json::Value {
    let json = dir.join("run.json");
    let catalog = common::catalog();
    let (code, out, err) = common::gridbed(&[
        "run",
        tb.to_str().unwrap(),
        "--sites",
        catalog.to_str().unwrap(),
        "--netbed",
        state.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    common::record_with_detail(&json)
}

#[test]
#[ignore = "needs root and iproute2 (ip, tc): run by .ci/run"]
fn four_sites_in_four_namespaces_move_bytes_at_the_modelled_time_and_down_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tb = common::write_testbed(dir.path(), "wan4.toml", &testbed());
    let (state, _guard) = up(&tb, dir.path(), 7100);
    let prefix = prefix_of(&state);
    let net = gridbed::netbed::State::read(&state).unwrap();

    // Four namespaces, each with its site's end of a veth holding what it
    // sends to 50 Mbit/s, shared among the other sites and the manager (an
    // HTB leaf each;
    // netem's 20 ms above it where the kernel has netem).
    let namespaces: Vec<String> = ip(&["netns", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .map(str::to_string)
        .collect();
    assert_eq!(namespaces.len(), 4, "{namespaces:?}");
    for site in &net.sites {
        let show = |what| tc_show(Some(&site.netns), what, &site.site_if);
        let qdiscs = show("qdisc");
        assert_eq!(net.netem, qdiscs.contains("netem"), "{qdiscs}");
        assert_fair(&show("class"), "50Mbit", 3);
        assert!(site.url.starts_with("http://10.201."), "{}", site.url);
        // What the site receives: the same on the bridge's end of its veth.
        assert_fair(&tc_show(None, "class", &site.host_if), "50Mbit", 3);
    }

    let rec = run_on(&tb, &state, dir.path());
    let transfers = rec["transfers"].as_array().unwrap();
    assert_eq!(transfers.len(), 3);
    // The model: 20 ms, then 20 MB at 50 Mbit/s. The kernel counts the
    // headers too (TCP/IP: a few percent), which is part of what it models.
    let model = 0.02 + 20e6 / (50e6 / 8.0);
    for t in transfers {
        let took = t["end"].as_f64().unwrap() - t["start"].as_f64().unwrap();
        let off = took / model - 1.0;
        assert!(
            off.abs() <= 0.10,
            "transfer of {} took {took:.3} s, the model {model:.3} s ({:+.1}%)",
            t["file"],
            off * 100.0
        );
    }

    common::gridbed_ok(&["netbed", "down", "--dir", state.to_str().unwrap()]);
    let left = gridbed::netbed::leftovers(&prefix);
    assert_eq!(
        left,
        gridbed::netbed::Leftovers::default(),
        "left behind: {left:?}"
    );
    let qdiscs = ip(&["-o", "link", "show"]);
    assert!(!qdiscs.contains(&prefix), "{qdiscs}");
    for site in &net.sites {
        let pid = site.pid.unwrap() as i32;
        assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "daemon {pid} still runs");
    }
}

#[test]
#[ignore = "needs root and iproute2 (ip, tc): run by .ci/run"]
fn four_sources_into_one_receiver_share_its_in_on_the_kernel_as_in_the_simulator() {
    // Four sources of 1 GB/s, a receiver of 10 MB/s in, unscaled (TCP
    // shares a tbf over seconds, not over the few round trips of a 100 kB
    // file): each 10 MB file takes 4 s in the simulator, and the kernel's
    // tbf on the receiver's side of the bridge holds the four TCP flows to
    // the same rate.
    let body = crate::network::fan_in(4, "bandwidth = \"10 MB/s\"", "bandwidth = \"1 GB/s\"", "")
        .replacen(
            "time_scale = 2\nbyte_scale = 100",
            "time_scale = 1\nbyte_scale = 1",
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let tb = common::write_testbed(dir.path(), "fan-in.toml", &body);
    let scenario = common::load(&tb);
    let sink = scenario.sites.iter().position(|s| s.info.name == "sink");
    let sim = gridbed::sim::run(&scenario).unwrap();
    let sink = sink.unwrap();
    let model: Vec<f64> = sim
        .records
        .transfers
        .iter()
        .filter(|t| t.to == sink)
        .map(|t| t.end.unwrap() - t.start)
        .collect();
    assert_eq!(model.len(), 4);
    let (state, _guard) = up(&tb, dir.path(), 7150);
    let rec = run_on(&tb, &state, dir.path());
    let kernel: Vec<f64> = rec["transfers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["to"].as_str() == Some("sink"))
        .map(|t| t["end"].as_f64().unwrap() - t["start"].as_f64().unwrap())
        .collect();
    assert_eq!(kernel.len(), 4, "{kernel:?}");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let off = mean(&kernel) / mean(&model) - 1.0;
    eprintln!(
        "fan-in 4→1: kernel {kernel:?}, simulator {model:?} ({:+.1}%)",
        off * 100.0
    );
    assert!(
        off.abs() <= 0.10,
        "kernel {kernel:?} against the simulator's {model:?} ({:+.1}%)",
        off * 100.0
    );
}

#[test]
#[ignore = "needs root and iproute2 (ip, tc): run by .ci/run"]
fn two_sources_behind_one_shared_link_share_it_on_the_kernel_as_in_the_simulator() {
    // src0 and src1 sit behind a 10 MB/s campus link, src2 at the core with
    // a 10 MB/s interface of its own; each sends a 10 MB file to the sink
    // at once, unscaled. The link is a bridge of its own joined to the
    // core's by a veth pair shaped both ways: src0's and src1's files share
    // it (2 s each in the simulator), src2's does not cross it (1 s).
    let mut body = crate::network::fan_in(
        3,
        "bandwidth = \"1 GB/s\"",
        "#SRC",
        "[[link]]\nname = \"campus\"\nbandwidth = \"10 MB/s\"\n",
    )
    .replacen(
        "time_scale = 2\nbyte_scale = 100",
        "time_scale = 1\nbyte_scale = 1",
        1,
    );
    for src in [
        "bandwidth = \"1 GB/s\"\npath = [\"campus\"]",
        "bandwidth = \"1 GB/s\"\npath = [\"campus\"]",
        "bandwidth = \"10 MB/s\"",
    ] {
        body = body.replacen("#SRC", src, 1);
    }
    let dir = tempfile::tempdir().unwrap();
    let tb = common::write_testbed(dir.path(), "campus.toml", &body);
    let scenario = common::load(&tb);
    let sim = gridbed::sim::run(&scenario).unwrap();
    let took = |from: &str, transfers: &[(String, f64)]| -> f64 {
        let v: Vec<f64> = transfers
            .iter()
            .filter(|(f, _)| f == from)
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(v.len(), 1, "{from}: {transfers:?}");
        v[0]
    };
    let model: Vec<(String, f64)> = sim
        .records
        .transfers
        .iter()
        .map(|t| {
            (
                scenario.sites[t.from].info.name.clone(),
                t.end.unwrap() - t.start,
            )
        })
        .collect();
    assert!((took("src0", &model) - 2.0).abs() < 1e-9, "{model:?}");
    assert!((took("src2", &model) - 1.0).abs() < 1e-9, "{model:?}");
    let (state, guard) = up(&tb, dir.path(), 7160);
    let prefix = prefix_of(&state);
    let netbed = gridbed::netbed::State::read(&state).unwrap();
    assert_eq!(netbed.links.len(), 1);
    let link = &netbed.links[0];
    // Up and down, shared among the two sites behind it.
    for dev in [&link.up_if, &link.down_if] {
        assert_fair(&tc_show(None, "class", dev), "80Mbit", 2);
    }
    let rec = run_on(&tb, &state, dir.path());
    let kernel: Vec<(String, f64)> = rec["transfers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["to"].as_str() == Some("sink"))
        .map(|t| {
            (
                t["from"].as_str().unwrap().to_string(),
                t["end"].as_f64().unwrap() - t["start"].as_f64().unwrap(),
            )
        })
        .collect();
    eprintln!("one shared link: kernel {kernel:?}, simulator {model:?}");
    // Within a tenth of the model, and a tenth of a second more for what
    // it does not count: the connection and HTTP exchange, the sending
    // process's start on a loaded machine (a 1 s transfer took 1.16 s once).
    for (pair, want) in [(["src0", "src1"], 2.0), (["src2", "src2"], 1.0)] {
        let got = (took(pair[0], &kernel) + took(pair[1], &kernel)) / 2.0;
        assert!(
            (got - want).abs() <= 0.10 * want + 0.1,
            "{pair:?}: kernel {got:.3} s against the simulator's {want} s ({kernel:?})"
        );
    }
    drop(guard);
    assert_eq!(
        gridbed::netbed::leftovers(&prefix),
        gridbed::netbed::Leftovers::default()
    );
}
