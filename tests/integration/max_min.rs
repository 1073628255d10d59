//! The max-min network model (`core/network.rs`) against an independent
//! reference on random grids (issue 60): the textbook progressive filling,
//! recomputed from scratch at every start and end, slow and obviously right,
//! sharing no code with the model. Flows are replayed as `gridbed flows
//! replay` replays them ([`gridbed::sim::flows::replay`]).
//!
//! The grids are random trees of links (random depth and fan-out) with
//! sites hanging from their nodes; every bandwidth and cap is drawn from a
//! few values, so that two resources often give the same fair share (the
//! ties that once ended a flow early), starts often coincide, and sizes go
//! from one byte to gigabytes.
//!
//! `GRIDBED_MAXMIN_CASES` sets how many grids a run tries (default 256; a
//! quarter as many fan-ins).

use gridbed::sim::flows::{FlowTrace, TraceFlow, TraceResource, replay};
use proptest::prelude::*;

/// A flow of a reference problem: its limited resources (each once), its
/// cap (∞: none), when it starts and its bytes.
#[derive(Debug, Clone)]
struct Flow {
    resources: Vec<usize>,
    cap: f64,
    start: f64,
    bytes: f64,
}

/// The max-min fair rates of `open` flows over resources of `capacity`:
/// raise every unfrozen flow's rate together; when a resource is full or a
/// cap is reached, the flows it holds freeze there. Ties (a resource full
/// and a cap reached at the same level, or two resources full at once)
/// freeze together.
fn fair_rates(capacity: &[f64], flows: &[&Flow]) -> Vec<f64> {
    let mut rate = vec![f64::NAN; flows.len()];
    let mut left = capacity.to_vec();
    loop {
        let unfrozen: Vec<usize> = (0..flows.len()).filter(|&i| rate[i].is_nan()).collect();
        if unfrozen.is_empty() {
            return rate;
        }
        let mut crossing = vec![0usize; capacity.len()];
        for &i in &unfrozen {
            for &r in &flows[i].resources {
                crossing[r] += 1;
            }
        }
        let fair = |r: usize| left[r].max(0.0) / crossing[r] as f64;
        let mut level = f64::INFINITY;
        for (r, &n) in crossing.iter().enumerate() {
            if n > 0 {
                level = level.min(fair(r));
            }
        }
        for &i in &unfrozen {
            level = level.min(flows[i].cap);
        }
        let near = |x: f64| x <= level * (1.0 + 1e-12);
        let freeze: Vec<usize> = unfrozen
            .iter()
            .copied()
            .filter(|&i| {
                level.is_infinite()
                    || near(flows[i].cap)
                    || flows[i].resources.iter().any(|&r| near(fair(r)))
            })
            .collect();
        for i in freeze {
            rate[i] = level;
            for &r in &flows[i].resources {
                left[r] -= level;
            }
        }
    }
}

/// Each flow's end: from one start or end to the next, every active flow
/// runs at the rates [`fair_rates`] gives for the flows active then.
fn reference_ends(capacity: &[f64], flows: &[Flow]) -> Vec<f64> {
    let mut left: Vec<f64> = flows.iter().map(|f| f.bytes).collect();
    let mut end = vec![f64::NAN; flows.len()];
    let mut now = 0.0f64;
    loop {
        for (i, f) in flows.iter().enumerate() {
            if f.start <= now && f.bytes == 0.0 && end[i].is_nan() {
                end[i] = f.start;
            }
        }
        let active: Vec<usize> = (0..flows.len())
            .filter(|&i| flows[i].start <= now && end[i].is_nan())
            .collect();
        let rates = fair_rates(
            capacity,
            &active.iter().map(|&i| &flows[i]).collect::<Vec<_>>(),
        );
        let until: Vec<f64> = active
            .iter()
            .zip(&rates)
            .map(|(&i, &x)| now + left[i] / x)
            .collect();
        let next_start = flows
            .iter()
            .map(|f| f.start)
            .filter(|&t| t > now)
            .fold(f64::INFINITY, f64::min);
        let next = until.iter().copied().fold(next_start, f64::min);
        if next.is_infinite() {
            return end;
        }
        for ((&i, &x), &t) in active.iter().zip(&rates).zip(&until) {
            if t <= next * (1.0 + 1e-13) {
                end[i] = next;
            } else {
                left[i] -= x * (next - now);
            }
        }
        now = next;
    }
}

/// A random grid: `parent[i]` of tree node `i + 1` (node 0 is the root),
/// each node's link bandwidth up and down, sites as (node, out, in), and
/// flows as (from, to, cap, start, bytes) with sites taken modulo their
/// number.
type Grid = (
    Vec<usize>,
    Vec<(f64, f64)>,
    Vec<(usize, f64, f64)>,
    Vec<(usize, usize, f64, f64, f64)>,
);

/// Bandwidths of a few values (MB/s), so that fair shares tie often.
fn bandwidth() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(5e6),
        Just(10e6),
        Just(10e6),
        Just(20e6),
        Just(25e6),
        Just(40e6),
        Just(200e6),
    ]
}

fn grid() -> impl Strategy<Value = Grid> {
    // Now and then enough flows that a filling takes its whole component.
    let flows = prop_oneof![5 => 1usize..40, 1 => 40usize..90];
    (1usize..9, 2usize..12, flows).prop_flat_map(|(nodes, sites, flows)| {
        let parents: Vec<std::ops::Range<usize>> = (1..nodes).map(|i| 0..i).collect();
        let link = prop_oneof![3 => bandwidth(), 1 => Just(f64::INFINITY)];
        let cap = prop_oneof![
            4 => Just(f64::INFINITY),
            1 => Just(2e6),
            1 => Just(5e6),
            1 => Just(10e6),
        ];
        let start = prop_oneof![
            2 => Just(0.0),
            3 => (0u32..16).prop_map(|k| k as f64 * 0.125),
            2 => 0.0f64..30.0,
        ];
        let bytes = prop_oneof![
            1 => Just(0.0),
            1 => (1u32..1000).prop_map(f64::from),
            4 => (1u32..400).prop_map(|k| k as f64 * 0.5e6),
            3 => (0.0f64..9.0).prop_map(|e| 10f64.powf(e)),
            1 => (1u32..5).prop_map(|k| k as f64 * 1e9),
        ];
        (
            parents,
            proptest::collection::vec((link.clone(), link), nodes),
            proptest::collection::vec((0..nodes, bandwidth(), bandwidth()), sites),
            proptest::collection::vec((0..sites, 1..sites, cap, start, bytes), flows),
        )
    })
}

/// The grid's limited resources (each site's out and in, each node's link
/// up and down where limited) and its flows over them, each crossing the
/// sender's out, the links up to the two sites' common ancestor, the links
/// down from it and the receiver's in.
fn problem((parent, links, sites, flows): &Grid) -> (Vec<f64>, Vec<Flow>) {
    let mut capacity = Vec::new();
    let mut add = |bw: f64| {
        bw.is_finite().then(|| {
            capacity.push(bw);
            capacity.len() - 1
        })
    };
    let site_res: Vec<(usize, usize)> = sites
        .iter()
        .map(|&(_, o, i)| (add(o).unwrap(), add(i).unwrap()))
        .collect();
    let link_res: Vec<(Option<usize>, Option<usize>)> =
        links.iter().map(|&(u, d)| (add(u), add(d))).collect();
    let ancestry = |mut n: usize| {
        let mut chain = vec![n];
        while n != 0 {
            n = parent[n - 1];
            chain.push(n);
        }
        chain
    };
    let flows = flows
        .iter()
        .map(|&(from, to, cap, start, bytes)| {
            let (a, b) = (from % sites.len(), (from + to) % sites.len());
            let (up, down) = (ancestry(sites[a].0), ancestry(sites[b].0));
            let common = up.iter().find(|n| down.contains(n)).copied().unwrap();
            let mut resources = vec![site_res[a].0];
            resources.extend(
                up.iter()
                    .take_while(|&&n| n != common)
                    .filter_map(|&n| link_res[n].0),
            );
            resources.extend(
                down.iter()
                    .take_while(|&&n| n != common)
                    .filter_map(|&n| link_res[n].1),
            );
            resources.push(site_res[b].1);
            Flow {
                resources,
                cap,
                start,
                bytes,
            }
        })
        .collect();
    (capacity, flows)
}

/// A fan-in: 64 to 80 senders, each its own out bandwidth and cap, into a
/// receiver that most flows go to and a second one that some go to, as
/// (capacities, flows): senders `0..n`, receivers `n` and `n + 1`. Flows
/// from one sender share its interface; a sender sending to both receivers
/// couples them, so the model's water-filling at one receiver (past 64
/// senders on it) is set up and dropped as such flows come and go.
fn fan_in() -> impl Strategy<Value = (Vec<f64>, Vec<Flow>)> {
    (64usize..80, 200usize..320).prop_flat_map(|(senders, flows)| {
        let cap = prop_oneof![
            6 => Just(f64::INFINITY),
            1 => Just(100e3),
            1 => Just(200e3),
            1 => Just(1e6),
        ];
        // Senders slower and faster than a receiver's fair share, in few
        // values so that limits tie with the level.
        let out = prop_oneof![Just(100e3), Just(200e3), Just(250e3), Just(1e6), Just(10e6),];
        let start = prop_oneof![
            8 => Just(0.0),
            2 => (0u32..16).prop_map(|k| k as f64 * 0.5),
            2 => 0.0f64..60.0,
        ];
        let bytes = prop_oneof![
            1 => Just(0.0),
            1 => (1u32..1000).prop_map(f64::from),
            4 => (1u32..100).prop_map(|k| k as f64 * 0.5e6),
            3 => (0.0f64..8.0).prop_map(|e| 10f64.powf(e)),
        ];
        let to = prop_oneof![59 => Just(0usize), 1 => Just(1)];
        (
            proptest::collection::vec((out, cap), senders),
            (bandwidth(), bandwidth()),
            proptest::collection::vec((0..senders, to, start, bytes), flows),
        )
            .prop_map(move |(out, (r0, r1), flows)| {
                let mut capacity: Vec<f64> = out.iter().map(|&(bw, _)| bw).collect();
                capacity.extend([r0, r1]);
                let flows = flows
                    .into_iter()
                    .map(|(from, to, start, bytes)| Flow {
                        resources: vec![from, senders + to],
                        cap: out[from].1,
                        start,
                        bytes,
                    })
                    .collect();
                (capacity, flows)
            })
    })
}

/// The model's ends for `flows`, replayed as `gridbed flows replay` does.
fn model_ends(capacity: &[f64], flows: &[Flow]) -> Vec<f64> {
    let trace = FlowTrace {
        resources: capacity
            .iter()
            .enumerate()
            .map(|(i, &bandwidth)| TraceResource {
                name: format!("r{i}"),
                bandwidth,
            })
            .collect(),
        flows: flows
            .iter()
            .enumerate()
            .map(|(i, f)| TraceFlow {
                name: format!("f{i}"),
                start: f.start,
                bytes: f.bytes,
                resources: f.resources.iter().map(|&r| r as u32).collect(),
                cap: f.cap.is_finite().then_some(f.cap),
                end: None,
            })
            .collect(),
    };
    replay(&trace).expect("a valid trace")
}

/// Where the model's ends differ from the reference's by more than 1e-9
/// of the reference's (or 1e-9 s, for ends before 1 s).
fn disagreements(capacity: &[f64], flows: &[Flow]) -> Vec<String> {
    let want = reference_ends(capacity, flows);
    let got = model_ends(capacity, flows);
    (0..flows.len())
        .filter(|&i| (got[i] - want[i]).abs() > 1e-9 * want[i].max(1.0))
        .map(|i| {
            format!(
                "flow {i} ends at {} where the reference has {}",
                got[i], want[i]
            )
        })
        .collect()
}

#[test]
fn the_issue_60_tie_ends_each_flow_at_its_closed_form() {
    // s out 10 MB/s, r in 5, l a 200 link, q in 25: at 12.975 s f5 ends
    // and f0 moves between two resources that give the same share; f0
    // still has 1.83 MB to send.
    let mb = 1e6;
    let capacity = [10.0 * mb, 5.0 * mb, 200.0 * mb, 25.0 * mb];
    let (s, r, l, q) = (0, 1, 2, 3);
    let flow = |start: f64, bytes: f64, resources: &[usize]| Flow {
        resources: resources.to_vec(),
        cap: f64::INFINITY,
        start,
        bytes: bytes * mb,
    };
    let flows = [
        flow(0.0, 80.0, &[s]),
        flow(3.0, 600.0, &[s]),
        flow(6.0, 180.0, &[r, l]),
        flow(10.5, 50.0, &[l, q]),
        flow(12.25, 200.0, &[s]),
        flow(12.375, 1.5, &[s, r]),
    ];
    let closed_form = [13.525, 88.15, 42.3, 12.5, 52.775, 12.975];
    for (name, ends) in [
        ("reference", reference_ends(&capacity, &flows)),
        ("model", model_ends(&capacity, &flows)),
    ] {
        for (i, (&got, &want)) in ends.iter().zip(&closed_form).enumerate() {
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "{name}: f{i} ends at {got}, by hand at {want}"
            );
        }
    }
}

#[test]
fn the_reference_shares_a_tie_between_a_cap_and_a_resource() {
    // Two flows through 10 MB/s, one capped at 5: both at 5 MB/s, and once
    // the capped one ends the other takes all 10.
    let flows = [
        Flow {
            resources: vec![0],
            cap: 5e6,
            start: 0.0,
            bytes: 10e6,
        },
        Flow {
            resources: vec![0],
            cap: f64::INFINITY,
            start: 0.0,
            bytes: 30e6,
        },
    ];
    assert_eq!(reference_ends(&[10e6], &flows), vec![2.0, 4.0]);
}

fn cases() -> u32 {
    std::env::var("GRIDBED_MAXMIN_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Every flow of a random grid ends where the from-scratch reference
    /// has it end, within 1e-9 relative.
    #[test]
    fn every_flow_ends_where_a_from_scratch_filling_ends_it(g in grid()) {
        let (capacity, flows) = problem(&g);
        let wrong = disagreements(&capacity, &flows);
        prop_assert!(wrong.is_empty(), "{}\ncapacities {capacity:?}\nflows {flows:?}", wrong.join("\n"));
    }
}

proptest! {
    // A fan-in case replays some 300 flows: a quarter as many cases.
    #![proptest_config(ProptestConfig { cases: cases().div_ceil(4), ..ProptestConfig::default() })]

    /// The same for a fan-in of many senders into one receiver.
    #[test]
    fn every_flow_of_a_fan_in_ends_where_a_from_scratch_filling_ends_it((capacity, flows) in fan_in()) {
        let wrong = disagreements(&capacity, &flows);
        prop_assert!(wrong.is_empty(), "{}\ncapacities {capacity:?}\nflows {flows:?}", wrong.join("\n"));
    }
}
