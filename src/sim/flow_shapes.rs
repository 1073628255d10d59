//! Flow traces of the shapes that cost the max-min model most (issue 60),
//! made from a seed: what `gridbed bench network` replays and
//! `gridbed flows shape` writes for `benches/simgrid_network.py`, so that
//! gridbed and SimGrid are timed on the same flows.
//!
//! * **Sender-limited fan-in**: every flow limited by its own sender, each
//!   at a rate of its own, into one receiver they do not fill: a start or
//!   an end changes no other flow's rate.
//! * **Receiver-limited fan-in**: fast senders into one slow receiver: a
//!   start or an end changes every flow's rate (to one new value).
//! * **Mixed tree**: 200 sites under campus, regional and WAN links, flows
//!   between random sites at staggered starts, some with a per-stream cap:
//!   senders, receivers and links all bound some flows.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::flows::{FlowTrace, TraceFlow, TraceResource};

/// A shape of flows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Each flow limited by its own sender; the receiver not filled.
    SenderFanIn,
    /// Fast senders into one receiver that they fill.
    ReceiverFanIn,
    /// Random sites of a three-level tree of links.
    MixedTree,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 3] = [Shape::SenderFanIn, Shape::ReceiverFanIn, Shape::MixedTree];

    /// Its name, as the command line takes it.
    pub fn name(self) -> &'static str {
        match self {
            Shape::SenderFanIn => "sender-fan-in",
            Shape::ReceiverFanIn => "receiver-fan-in",
            Shape::MixedTree => "mixed-tree",
        }
    }
}

impl std::str::FromStr for Shape {
    type Err = String;

    fn from_str(name: &str) -> Result<Shape, String> {
        Shape::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Shape::ALL.iter().map(|s| s.name()).collect();
                format!("unknown shape `{name}`: expected one of {}", names.join(", "))
            })
    }
}

/// `flows` flows of `shape`, drawn from `seed`.
pub fn trace(shape: Shape, flows: usize, seed: u64) -> FlowTrace {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match shape {
        Shape::SenderFanIn | Shape::ReceiverFanIn => fan_in(shape, flows, &mut rng),
        Shape::MixedTree => mixed_tree(flows, &mut rng),
    }
}

fn resource(name: String, bandwidth: f64) -> TraceResource {
    TraceResource { name, bandwidth }
}

/// `n` senders into one receiver, all starting at 0 with 1 to 100 MB.
/// Sender-limited: sender `i` sends 1 MB/s plus `i` thousandths of that
/// (no two alike), the receiver takes twice what they all send.
/// Receiver-limited: senders of 1 GB/s into a receiver of 10 MB/s.
fn fan_in(shape: Shape, n: usize, rng: &mut ChaCha8Rng) -> FlowTrace {
    let sender = |i: usize| match shape {
        Shape::SenderFanIn => 1e6 * (1.0 + i as f64 / n as f64),
        _ => 1e9,
    };
    let sink = match shape {
        Shape::SenderFanIn => 2.0 * (0..n).map(sender).sum::<f64>(),
        _ => 1e7,
    };
    let mut resources = vec![resource("in:sink".into(), sink)];
    let mut flows = Vec::with_capacity(n);
    for i in 0..n {
        resources.push(resource(format!("out:src{i}"), sender(i)));
        flows.push(TraceFlow {
            name: format!("f{i}:src{i}->sink"),
            start: 0.0,
            bytes: (rng.random_range(1.0..100.0) * 1e6f64).round(),
            resources: vec![i as u32 + 1, 0],
            cap: None,
            end: None,
        });
    }
    FlowTrace { resources, flows }
}

/// 200 sites, ten on each of 20 campus links, five campuses on each of four
/// regional links under a WAN: each site's out and in, each link up and
/// down. Flows between random sites start within 10 s, of 1 MB to 1 GB
/// (log-uniform), one in five capped at 50 MB/s a stream.
fn mixed_tree(n: usize, rng: &mut ChaCha8Rng) -> FlowTrace {
    const SITES: usize = 200;
    const PER_CAMPUS: usize = 10;
    const PER_REGION: usize = 5;
    let mut resources = Vec::new();
    let mut add = |name: String, bandwidth: f64| {
        resources.push(resource(name, bandwidth));
        (resources.len() - 1) as u32
    };
    let nic = [125e6, 125e6, 250e6, 1.25e9];
    let sites: Vec<(u32, u32)> = (0..SITES)
        .map(|s| {
            let bw = nic[s % nic.len()];
            (add(format!("out:site{s}"), bw), add(format!("in:site{s}"), bw))
        })
        .collect();
    let link = |add: &mut dyn FnMut(String, f64) -> u32, name: String, bw: f64| {
        (add(format!("up:{name}"), bw), add(format!("down:{name}"), bw))
    };
    let campuses: Vec<(u32, u32)> = (0..SITES / PER_CAMPUS)
        .map(|c| link(&mut add, format!("campus{c}"), [1.25e9, 2.5e9][c % 2]))
        .collect();
    let regions: Vec<(u32, u32)> = (0..SITES / PER_CAMPUS / PER_REGION)
        .map(|r| link(&mut add, format!("region{r}"), [5e9, 1e10][r % 2]))
        .collect();
    let mut flows = Vec::with_capacity(n);
    for i in 0..n {
        let a = rng.random_range(0..SITES);
        let b = (a + rng.random_range(1..SITES)) % SITES;
        let (ca, cb) = (a / PER_CAMPUS, b / PER_CAMPUS);
        let (ra, rb) = (ca / PER_REGION, cb / PER_REGION);
        let mut crossed = vec![sites[a].0];
        if ca != cb {
            crossed.push(campuses[ca].0);
            if ra != rb {
                crossed.extend([regions[ra].0, regions[rb].1]);
            }
            crossed.push(campuses[cb].1);
        }
        crossed.push(sites[b].1);
        flows.push(TraceFlow {
            name: format!("f{i}:site{a}->site{b}"),
            start: rng.random_range(0.0..10.0),
            bytes: 10f64.powf(rng.random_range(6.0..9.0)).round(),
            resources: crossed,
            cap: rng.random_bool(0.2).then_some(50e6),
            end: None,
        });
    }
    flows.sort_by(|a, b| a.start.total_cmp(&b.start));
    FlowTrace { resources, flows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::flows::replay;

    #[test]
    fn a_shape_is_read_by_its_name() {
        for shape in Shape::ALL {
            assert_eq!(shape.name().parse::<Shape>(), Ok(shape));
        }
        let e = "fan-in".parse::<Shape>().unwrap_err();
        assert!(e.contains("sender-fan-in, receiver-fan-in, mixed-tree"), "{e}");
    }

    #[test]
    fn each_shape_replays_and_binds_where_it_says() {
        for shape in Shape::ALL {
            let t = trace(shape, 50, 1);
            assert_eq!(t.flows.len(), 50);
            let ends = replay(&t).unwrap();
            assert!(ends.iter().all(|e| e.is_finite()), "{shape:?}");
        }
        // Sender-limited: each flow ends as if alone, at its sender's rate.
        let t = trace(Shape::SenderFanIn, 50, 1);
        for (f, end) in t.flows.iter().zip(replay(&t).unwrap()) {
            let alone = f.bytes / t.resources[f.resources[0] as usize].bandwidth;
            assert!((end - alone).abs() <= 1e-9 * alone, "{} at {end}, alone {alone}", f.name);
        }
        // Receiver-limited: the receiver is busy until every byte is in.
        let t = trace(Shape::ReceiverFanIn, 50, 1);
        let last = replay(&t).unwrap().into_iter().fold(0.0, f64::max);
        let bytes: f64 = t.flows.iter().map(|f| f.bytes).sum();
        assert!((last - bytes / 1e7).abs() <= 1e-9 * last);
    }
}
