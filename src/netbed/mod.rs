//! The netbed (issue 18): a testbed's sites as `gridbed site` daemons, each in
//! its own Linux network namespace, joined to a bridge by a veth pair whose
//! site end the kernel shapes from the testbed — the site's `bandwidth_out`,
//! `netem` for its latency — and whose bridge end holds what the site
//! receives to its `bandwidth_in`, the way Mininet and Kollaps emulate WAN
//! links, instead of gridbed's token buckets ([`crate::live::shaping`]).
//! Each rate is an HTB class with a leaf per peer (see `rate_lines`), so
//! that TCP streams share it as the model's flows do.
//!
//! A shared `[[link]]` (issue 37) is a bridge of its own for the sites (and
//! links) behind it, joined to the bridge of the next link on their path
//! (or the core's) by a veth pair: its child end sends up, its parent end
//! sends down, each shaped to the link's bandwidth (and `netem` of its
//! latency), so a link is full duplex and only traffic that leaves the
//! subtree crosses it, as [`crate::core::topology`] has it.
//!
//! ```text
//!   root namespace: manager (gridbed run --netbed DIR), bridge PREFIXbr 10.201.N.254
//!      ├─ veth PREFIXhI ══ PREFIXsI (netns PREFIX-I, 10.201.N.(I+1)): gridbed site, qdiscs
//!      ├─ veth PREFIXdL ══ PREFIXuL ─ bridge PREFIXbL (link L): sites behind it
//!      └─ …
//! ```
//!
//! `up` records everything it makes in a state directory as it goes, so
//! `down` removes exactly that (and anything else named with the prefix),
//! even after a failed `up`. Needs root, `ip` and `tc` (iproute2).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::config::{Daemon, KernelShaping, Scenario};

/// Why the netbed could not be made, used or removed.
#[derive(Debug, thiserror::Error)]
pub enum NetbedError {
    /// Namespaces and qdiscs need root.
    #[error("the netbed needs root (network namespaces, veth pairs, qdiscs); run it as root")]
    NotRoot,
    /// A command failed.
    #[error("`{command}` failed: {message}")]
    Command {
        /// The command line.
        command: String,
        /// What it said.
        message: String,
    },
    /// The state directory.
    #[error("netbed state {}: {message}", path.display())]
    State {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A site daemon did not come up.
    #[error("the daemon of site `{site}` did not start: {message}")]
    Daemon {
        /// The site.
        site: String,
        /// What happened (its log's last lines).
        message: String,
    },
}

/// One site of the netbed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetSite {
    /// The testbed's site name.
    pub name: String,
    /// Its namespace.
    pub netns: String,
    /// The veth end on the bridge (root namespace).
    pub host_if: String,
    /// The veth end in the namespace.
    pub site_if: String,
    /// Its address.
    pub addr: String,
    /// The daemon's control API.
    pub url: String,
    /// The daemon's process id, once started.
    pub pid: Option<u32>,
    /// Egress rate the kernel holds it to (bit/s), if any.
    pub rate_bits: Option<u64>,
    /// Ingress rate the kernel holds it to (bit/s), if any: a `tbf` on the
    /// bridge's end of its veth, which is what the site receives.
    #[serde(default)]
    pub rate_in_bits: Option<u64>,
    /// One-way delay the kernel adds to its egress (ms), if any.
    pub delay_ms: Option<f64>,
}

/// One shared link of the netbed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetLink {
    /// The testbed's link name.
    pub name: String,
    /// The bridge of what is behind it.
    pub bridge: String,
    /// The veth end on its own bridge: what it sends goes up.
    pub up_if: String,
    /// The veth end on the bridge it leads to: what it sends goes down.
    pub down_if: String,
    /// The bridge it leads to.
    pub parent: String,
    /// The rate the kernel holds each direction to (bit/s), if any.
    pub rate_bits: Option<u64>,
    /// One-way delay the kernel adds to each direction (ms), if any.
    pub delay_ms: Option<f64>,
}

/// What a netbed made, as its state file (`DIR/netbed.json`) records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct State {
    /// Prefix of every name it made.
    pub prefix: String,
    /// The bridge.
    pub bridge: String,
    /// The manager's address on the bridge.
    pub manager_addr: String,
    /// The testbed it was made from.
    pub testbed: PathBuf,
    /// Whether the kernel has netem: without it latency stays with the
    /// daemons' endpoints and only the rate is the kernel's.
    pub netem: bool,
    /// The sites, in testbed order.
    pub sites: Vec<NetSite>,
    /// The shared links, in testbed order.
    #[serde(default)]
    pub links: Vec<NetLink>,
}

impl State {
    /// The state file in `dir`.
    pub fn file(dir: &Path) -> PathBuf {
        dir.join("netbed.json")
    }

    /// Reads the state of the netbed in `dir`.
    pub fn read(dir: &Path) -> Result<State, NetbedError> {
        let path = State::file(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| NetbedError::State {
            path: path.clone(),
            message: format!("{e} (is there a netbed made with `gridbed netbed up`?)"),
        })?;
        serde_json::from_str(&text).map_err(|e| NetbedError::State {
            path,
            message: e.to_string(),
        })
    }

    fn write(&self, dir: &Path) -> Result<(), NetbedError> {
        let path = State::file(dir);
        let text = serde_json::to_string_pretty(self).expect("a netbed state serializes");
        std::fs::write(&path, text).map_err(|e| NetbedError::State {
            path,
            message: e.to_string(),
        })
    }

    /// Runs `scenario`'s sites on this netbed's daemons: each site by name
    /// gets its daemon's URL and token, and leaves to the kernel what the
    /// kernel shapes. Every site of the scenario must be in the netbed.
    pub fn apply(&self, scenario: &mut Scenario, dir: &Path) -> Result<(), NetbedError> {
        let token = crate::config::read_token(&dir.join("token")).map_err(|message| {
            NetbedError::State {
                path: dir.join("token"),
                message,
            }
        })?;
        for site in &mut scenario.sites {
            let net = self
                .sites
                .iter()
                .find(|n| n.name == site.info.name)
                .ok_or_else(|| NetbedError::State {
                    path: State::file(dir),
                    message: format!(
                        "site `{}` of the testbed is not in this netbed (made from {})",
                        site.info.name,
                        self.testbed.display()
                    ),
                })?;
            site.daemon = Some(Daemon {
                url: net.url.clone(),
                token: Some(token.clone()),
                // The kernel holds every finite rate of the netbed, and
                // every latency where it has netem.
                kernel: KernelShaping {
                    rate: true,
                    delay: self.netem,
                },
            });
        }
        Ok(())
    }
}

/// Runs `program args…`, its error worded with the command line.
fn run(program: &str, args: &[&str]) -> Result<String, NetbedError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| NetbedError::Command {
            command: format!("{program} {}", args.join(" ")),
            message: e.to_string(),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(NetbedError::Command {
            command: format!("{program} {}", args.join(" ")),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// `ip args…`.
fn ip(args: &[&str]) -> Result<String, NetbedError> {
    run("ip", args)
}

/// `tc args…` inside `netns`.
fn tc_in(netns: &str, args: &[&str]) -> Result<String, NetbedError> {
    let mut all = vec!["netns", "exec", netns, "tc"];
    all.extend_from_slice(args);
    ip(&all)
}

/// Whether this kernel has the netem qdisc: tried on a throwaway veth in a
/// throwaway namespace.
pub fn kernel_has_netem(prefix: &str) -> bool {
    let ns = format!("{prefix}-probe");
    let (a, b) = (format!("{prefix}pa"), format!("{prefix}pb"));
    let made = ip(&["netns", "add", &ns]).is_ok()
        && ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]).is_ok()
        && ip(&["link", "set", &b, "netns", &ns]).is_ok();
    let netem = made
        && tc_in(
            &ns,
            &["qdisc", "add", "dev", &b, "root", "netem", "delay", "1ms"],
        )
        .is_ok();
    let _ = ip(&["link", "del", &a]);
    let _ = ip(&["netns", "del", &ns]);
    netem
}

/// A prefix for this netbed's names: short (interface names have 15
/// bytes), and different for netbeds made at once.
pub fn new_prefix() -> String {
    let n: u16 = rand::random();
    format!("gb{n:04x}")
}

/// What `up` is asked.
pub struct UpOptions<'a> {
    /// The testbed, loaded.
    pub scenario: &'a Scenario,
    /// Where the state, token, logs and pools go (made if missing).
    pub dir: &'a Path,
    /// The gridbed binary the daemons run.
    pub gridbed: &'a Path,
    /// Port of every daemon's control API.
    pub port: u16,
}

/// Makes the netbed: namespaces, bridge, veths, addresses, qdiscs, a token
/// and a daemon in every namespace; writes the state as it goes. On error,
/// what was made is removed again.
pub fn up(o: &UpOptions<'_>) -> Result<State, NetbedError> {
    if unsafe { libc::geteuid() } != 0 {
        return Err(NetbedError::NotRoot);
    }
    std::fs::create_dir_all(o.dir).map_err(|e| NetbedError::State {
        path: o.dir.to_path_buf(),
        message: e.to_string(),
    })?;
    if State::file(o.dir).exists() {
        return Err(NetbedError::State {
            path: State::file(o.dir),
            message: "a netbed is up here already: `gridbed netbed down` it first".into(),
        });
    }
    let prefix = new_prefix();
    // 10.201.N.0/24, N from the prefix: netbeds made at once stay apart.
    let net = u16::from_str_radix(&prefix[2..], 16).unwrap_or(0) % 250;
    let mut state = State {
        bridge: format!("{prefix}br"),
        manager_addr: format!("10.201.{net}.254"),
        prefix: prefix.clone(),
        testbed: o.scenario.path.clone(),
        netem: kernel_has_netem(&prefix),
        sites: Vec::new(),
        links: Vec::new(),
    };
    state.write(o.dir)?;
    match build(o, &mut state, net) {
        Ok(()) => Ok(state),
        Err(e) => {
            let _ = down(o.dir);
            Err(e)
        }
    }
}

fn build(o: &UpOptions<'_>, state: &mut State, net: u16) -> Result<(), NetbedError> {
    let token = format!("{:032x}", rand::random::<u128>());
    let token_file = o.dir.join("token");
    std::fs::write(&token_file, format!("{token}\n")).map_err(|e| NetbedError::State {
        path: token_file.clone(),
        message: e.to_string(),
    })?;
    let br = state.bridge.clone();
    ip(&["link", "add", &br, "type", "bridge"])?;
    ip(&[
        "addr",
        "add",
        &format!("{}/24", state.manager_addr),
        "dev",
        &br,
    ])?;
    ip(&["link", "set", &br, "up"])?;
    let em = o.scenario.emulation;
    let bits = |rate: f64| {
        rate.is_finite()
            .then(|| (em.real_rate(rate) * 8.0).round().max(8000.0) as u64)
    };
    let (prefix, netem) = (state.prefix.clone(), state.netem);
    let delay = |latency: f64| (netem && latency > 0.0).then(|| em.real_secs(latency) * 1000.0);
    let topology = &o.scenario.topology;
    let addr_of = |i: usize| format!("10.201.{net}.{}", i + 1);
    // Every site's address, and those behind each link: whom each shaped
    // direction is shared among (the manager's orders and events go
    // ahead: see `rate_lines`).
    let everyone: Vec<String> = (0..o.scenario.sites.len()).map(addr_of).collect();
    let control = state.manager_addr.as_str();
    let behind = |l: usize| -> Vec<String> {
        (0..o.scenario.sites.len())
            .filter(|&i| topology.paths[i].contains(&l))
            .map(addr_of)
            .collect()
    };
    // Each link's bridge, made before the links and sites behind it: a
    // link leads to the next link of any path through it (the paths are a
    // tree), or to the core.
    let bridge_of = |l: usize| format!("{prefix}b{l}");
    for (l, link) in topology.links.iter().enumerate() {
        let parent = topology
            .paths
            .iter()
            .find_map(|p| {
                p.iter()
                    .position(|&x| x == l)
                    .map(|i| p.get(i + 1).copied())
            })
            .flatten();
        let net = NetLink {
            name: link.name.clone(),
            bridge: bridge_of(l),
            up_if: format!("{prefix}u{l}"),
            down_if: format!("{prefix}d{l}"),
            parent: parent.map_or(br.clone(), bridge_of),
            rate_bits: bits(link.bandwidth),
            delay_ms: delay(link.latency),
        };
        state.links.push(net);
        state.write(o.dir)?;
        ip(&["link", "add", &bridge_of(l), "type", "bridge"])?;
    }
    for (l, net) in state.links.iter().enumerate() {
        let (b, u, d) = (&net.bridge, &net.up_if, &net.down_if);
        ip(&["link", "add", u, "type", "veth", "peer", "name", d])?;
        ip(&["link", "set", u, "master", b])?;
        ip(&["link", "set", d, "master", &net.parent])?;
        for dev in [b, u, d] {
            ip(&["link", "set", dev, "up"])?;
        }
        // Up: the senders behind it share it; down: the receivers.
        let peers = behind(l);
        for (dev, field) in [(u, "src"), (d, "dst")] {
            let fair = Fair {
                field,
                peers: &peers,
                control,
            };
            shape_egress(None, dev, net.delay_ms, net.rate_bits, fair)?;
        }
    }
    for (i, s) in o.scenario.sites.iter().enumerate() {
        let p = &state.prefix;
        let addr = addr_of(i);
        let site = NetSite {
            name: s.info.name.clone(),
            netns: format!("{p}-{i}"),
            host_if: format!("{p}h{i}"),
            site_if: format!("{p}s{i}"),
            url: format!("http://{addr}:{}", o.port),
            addr,
            pid: None,
            rate_bits: bits(s.bandwidth_out),
            rate_in_bits: bits(s.bandwidth_in),
            delay_ms: delay(s.latency),
        };
        let attach = topology.paths[i]
            .first()
            .map_or(br.clone(), |&l| bridge_of(l));
        state.sites.push(site.clone());
        state.write(o.dir)?;
        let (ns, h, v) = (&site.netns, &site.host_if, &site.site_if);
        ip(&["netns", "add", ns])?;
        ip(&["link", "add", h, "type", "veth", "peer", "name", v])?;
        ip(&["link", "set", v, "netns", ns])?;
        ip(&["link", "set", h, "master", &attach])?;
        ip(&["link", "set", h, "up"])?;
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{}/24", site.addr),
            "dev",
            v,
        ])?;
        ip(&["-n", ns, "link", "set", v, "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        let peers: Vec<String> = everyone
            .iter()
            .filter(|a| **a != site.addr)
            .cloned()
            .collect();
        shape(&site, &peers, control)?;
        let pid = start_daemon(o, &site, &token_file)?;
        state.sites.last_mut().expect("just pushed").pid = Some(pid);
        state.write(o.dir)?;
    }
    for site in &state.sites {
        wait_for_daemon(o.dir, site)?;
    }
    Ok(())
}

/// Whom a shaped direction is shared among: the peers' addresses, matched
/// on the packets' source (what a site receives, what goes up a link) or
/// destination (what a site sends, what comes down a link); and the
/// manager's address, whose traffic goes ahead of theirs.
#[derive(Clone, Copy)]
struct Fair<'a> {
    field: &'static str,
    peers: &'a [String],
    control: &'a str,
}

/// `tc -batch` lines that hold what `dev` sends to `rate` bit/s, the qdisc
/// at `parent` with handle `major:`. TCP streams through one FIFO do not
/// share it max-min (a fan-in of 25 streams through a tbf: 5.7% mean and
/// 30% p95 off the model per transfer), so the rate is an HTB class with a
/// leaf per peer of `fair`, each guaranteed an equal part and borrowing up
/// to the whole: backlogged peers share what is left round-robin, as the
/// model's flows do (2.8% / 4.6%). Ahead of the peers (HTB priority 0), a
/// leaf for what the model does not count: small packets (a pure ACK
/// waiting behind a peer's data the other way stretches its stream's round
/// trip and starves it where both directions carry data, all-to-all 12.5% /
/// 34.7% off the model without it, 4.3% / 6.5% with it) and the manager's
/// orders and events (which wait behind a link's data otherwise, 0.1 s a
/// transfer). Without peers it is a plain tbf. The burst is at least one
/// timer tick of bytes (and a few packets).
fn rate_lines(dev: &str, parent: &str, major: u32, rate: u64, fair: Fair<'_>) -> Vec<String> {
    let burst = (rate / 8 / 250).max(16 * 1514);
    if fair.peers.is_empty() {
        let limit = (rate / 8 / 10).max(burst * 2);
        return vec![format!(
            "qdisc add dev {dev} {parent} handle {major}: tbf rate {rate}bit burst {burst} limit {limit}"
        )];
    }
    let class = |id: &str, under: &str, guaranteed: u64, prio: u8| {
        format!(
            "class add dev {dev} parent {major}:{under} classid {major}:{id} htb rate {guaranteed}bit \
             ceil {rate}bit burst {burst} cburst {burst} quantum 3028 prio {prio}"
        )
    };
    let ahead = |what: &str| {
        format!(
            "filter add dev {dev} parent {major}: protocol ip prio 1 u32 {what} flowid {major}:3"
        )
    };
    // The default leaf takes what matches nothing (ARP).
    let part = (rate / (fair.peers.len() as u64 + 2)).max(8);
    let mut lines = vec![
        format!("qdisc add dev {dev} {parent} handle {major}: htb default 2"),
        class("1", "", rate, 0),
        class("2", "1", part, 1),
        class("3", "1", part, 0),
        ahead("match u16 0 0xff80 at 2"),
        ahead(&format!("match ip src {}/32", fair.control)),
        ahead(&format!("match ip dst {}/32", fair.control)),
    ];
    for (k, addr) in fair.peers.iter().enumerate() {
        let id = format!("{:x}", 16 + k);
        lines.push(class(&id, "1", part, 1));
        lines.push(format!(
            "filter add dev {dev} parent {major}: protocol ip prio 2 u32 match ip {} {addr}/32 \
             flowid {major}:{id}",
            fair.field
        ));
    }
    lines
}

/// Runs `tc -batch` of `lines` in `netns` (or the root namespace).
fn tc_batch(netns: Option<&str>, lines: &[String]) -> Result<(), NetbedError> {
    use std::io::Write as _;
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "tc"]);
            c
        }
        None => Command::new("tc"),
    };
    let command = format!("tc -batch - ({} lines, first: {})", lines.len(), lines[0]);
    let failed = |message: String| NetbedError::Command {
        command: command.clone(),
        message,
    };
    let mut child = cmd
        .args(["-batch", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    let mut stdin = child.stdin.take().expect("piped");
    stdin
        .write_all((lines.join("\n") + "\n").as_bytes())
        .map_err(|e| failed(e.to_string()))?;
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

/// The site's qdiscs: on its end of the veth, what it sends (netem's delay
/// over the rate, or either alone), shared among the destinations; on the
/// bridge's end, what it receives, shared among the sources. `peers` are
/// the other sites' addresses, `control` the manager's.
fn shape(site: &NetSite, peers: &[String], control: &str) -> Result<(), NetbedError> {
    if let Some(r) = site.rate_in_bits {
        let fair = Fair {
            field: "src",
            peers,
            control,
        };
        shape_egress(None, &site.host_if, None, Some(r), fair)?;
    }
    let fair = Fair {
        field: "dst",
        peers,
        control,
    };
    shape_egress(
        Some(&site.netns),
        &site.site_if,
        site.delay_ms,
        site.rate_bits,
        fair,
    )
}

/// What `dev` (in `netns`, or the root namespace) sends: netem's delay over
/// the rate, or either alone.
fn shape_egress(
    netns: Option<&str>,
    dev: &str,
    delay_ms: Option<f64>,
    rate_bits: Option<u64>,
    fair: Fair<'_>,
) -> Result<(), NetbedError> {
    let mut lines = Vec::new();
    match (delay_ms, rate_bits) {
        (Some(d), rate) => {
            lines.push(format!(
                "qdisc add dev {dev} root handle 1: netem delay {d:.3}ms limit 100000"
            ));
            if let Some(r) = rate {
                lines.extend(rate_lines(dev, "parent 1:", 10, r, fair));
            }
        }
        (None, Some(r)) => lines.extend(rate_lines(dev, "root", 1, r, fair)),
        (None, None) => return Ok(()),
    }
    tc_batch(netns, &lines)
}

fn start_daemon(o: &UpOptions<'_>, site: &NetSite, token: &Path) -> Result<u32, NetbedError> {
    let log = o.dir.join(format!("{}.log", site.name));
    let pools = o.dir.join("pools").join(&site.name);
    std::fs::create_dir_all(&pools).map_err(|e| NetbedError::State {
        path: pools.clone(),
        message: e.to_string(),
    })?;
    let out = std::fs::File::create(&log).map_err(|e| NetbedError::State {
        path: log.clone(),
        message: e.to_string(),
    })?;
    let err = out.try_clone().map_err(|e| NetbedError::State {
        path: log.clone(),
        message: e.to_string(),
    })?;
    let listen = format!("{}:{}", site.addr, o.port);
    let child = Command::new("ip")
        .args(["netns", "exec", &site.netns])
        .arg(o.gridbed)
        .args(["site", "--listen", &listen, "--token-file"])
        .arg(token)
        .arg("--pool-dir")
        .arg(&pools)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| NetbedError::Daemon {
            site: site.name.clone(),
            message: e.to_string(),
        })?;
    // `ip netns exec` execs the program: the pid is the daemon's.
    Ok(child.id())
}

/// Waits (at most 30 s) for the daemon to say it listens.
fn wait_for_daemon(dir: &Path, site: &NetSite) -> Result<(), NetbedError> {
    let log = dir.join(format!("{}.log", site.name));
    for _ in 0..300 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("listening on") {
            return Ok(());
        }
        let gone = site
            .pid
            .is_some_and(|p| unsafe { libc::kill(p as i32, 0) } != 0);
        if gone {
            return Err(NetbedError::Daemon {
                site: site.name.clone(),
                message: text.lines().rev().take(5).collect::<Vec<_>>().join(" / "),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(NetbedError::Daemon {
        site: site.name.clone(),
        message: "it did not say it listens within 30 s".into(),
    })
}

/// Removes the netbed in `dir`: its daemons stopped, its namespaces (and
/// the veths and qdiscs in them), its bridge, and any leftover interface or
/// namespace named with its prefix; then the state directory's netbed
/// files. What could not be removed is returned as an error, after trying
/// everything.
pub fn down(dir: &Path) -> Result<State, NetbedError> {
    let state = State::read(dir)?;
    let mut failures = Vec::new();
    for s in &state.sites {
        if let Some(pid) = s.pid {
            // SAFETY: a plain signal to a process this netbed started.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
        }
    }
    for s in &state.sites {
        if let Some(pid) = s.pid {
            for _ in 0..50 {
                if unsafe { libc::kill(pid as i32, 0) } != 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
    }
    // A veth goes with its peer, and a namespace's interfaces with it (the
    // kernel may take a moment): what is already gone is not a failure.
    let gone = |e: &NetbedError| {
        let t = e.to_string();
        t.contains("Cannot find device") || t.contains("No such file")
    };
    let now = leftovers(&state.prefix);
    let links = now.links.iter().map(|n| ["link", "del", n.as_str()]);
    let namespaces = now.namespaces.iter().map(|n| ["netns", "del", n.as_str()]);
    for args in links.chain(namespaces) {
        if let Err(e) = ip(&args)
            && !gone(&e)
        {
            failures.push(e.to_string());
        }
    }
    let mut left = leftovers(&state.prefix);
    for _ in 0..50 {
        if left == Leftovers::default() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = leftovers(&state.prefix);
    }
    if left != Leftovers::default() {
        failures.push(format!("still there after 5 s: {left:?}"));
    }
    let _ = std::fs::remove_file(State::file(dir));
    let _ = std::fs::remove_file(dir.join("token"));
    let _ = std::fs::remove_dir_all(dir.join("pools"));
    if failures.is_empty() {
        Ok(state)
    } else {
        Err(NetbedError::Command {
            command: "netbed down".into(),
            message: failures.join("; "),
        })
    }
}

/// Namespaces and interfaces named with a netbed's prefix.
#[derive(Debug, Default, PartialEq)]
pub struct Leftovers {
    /// Network namespaces.
    pub namespaces: Vec<String>,
    /// Interfaces in the root namespace (bridge, veth ends).
    pub links: Vec<String>,
}

/// What of the netbed `prefix` exists now.
pub fn leftovers(prefix: &str) -> Leftovers {
    let namespaces = ip(&["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .map(str::to_string)
        .collect();
    let links = ip(&["-o", "link", "show"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n))
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect();
    Leftovers { namespaces, links }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shaped_direction_is_an_htb_leaf_per_peer_or_a_tbf_alone() {
        let peers = ["10.201.0.2".to_string(), "10.201.0.3".to_string()];
        let fair = Fair {
            field: "src",
            peers: &peers,
            control: "10.201.0.254",
        };
        let lines = rate_lines("h0", "root", 1, 80_000_000, fair);
        assert_eq!(lines[0], "qdisc add dev h0 root handle 1: htb default 2");
        // The root class, the default leaf, the leaf ahead and its three
        // filters (small packets, from and to the manager), and a leaf and
        // a filter per peer.
        assert_eq!(lines.len(), 7 + 2 * peers.len());
        let leaves: Vec<&String> = lines.iter().filter(|l| l.contains("parent 1:1 ")).collect();
        assert_eq!(leaves.len(), 4);
        assert!(
            leaves
                .iter()
                .all(|l| l.contains("rate 20000000bit ceil 80000000bit")),
            "{leaves:?}"
        );
        let ahead: Vec<&String> = lines.iter().filter(|l| l.ends_with("flowid 1:3")).collect();
        assert_eq!(ahead.len(), 3, "{lines:?}");
        assert!(
            ahead[2].contains("match ip dst 10.201.0.254/32"),
            "{}",
            ahead[2]
        );
        assert!(
            lines[3].ends_with("prio 0") && lines[7].ends_with("prio 1"),
            "{lines:?}"
        );
        assert!(
            lines[8].ends_with("match ip src 10.201.0.2/32 flowid 1:10"),
            "{}",
            lines[8]
        );
        // Under netem, and with no one to share with: a tbf.
        let alone = Fair {
            field: "dst",
            peers: &[],
            control: "10.201.0.254",
        };
        let lines = rate_lines("s0", "parent 1:", 10, 8_000_000, alone);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("qdisc add dev s0 parent 1: handle 10: tbf rate 8000000bit"),
            "{}",
            lines[0]
        );
    }
}
