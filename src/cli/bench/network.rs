//! `gridbed bench network`: the max-min model's cost where it is largest
//! (issue 37): 10,000 flows at once between 100 sites of which every ten
//! sit behind one of 10 shared links, each transfer's end replaced by a new
//! transfer between two random sites, so that a start or an end re-rates a
//! component of thousands of flows. It reports the flows re-rated per
//! second and the starts and ends per second.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Failure, Figure};
use crate::core::events::EventQueue;
use crate::core::network::ShareId;
use crate::core::topology::{GridNetwork, Interface, Link, Topology};
use crate::sim::flow_shapes::{self, Shape};
use crate::sim::flows;

/// `flows` concurrent flows over `sites` sites behind `links` links, for
/// `ends` transfer ends (each followed by a new start).
pub(super) fn network(
    flows: usize,
    sites: usize,
    links: usize,
    ends: u64,
) -> Result<Figure, Failure> {
    let topology = Topology {
        links: (0..links)
            .map(|i| Link {
                name: format!("campus-{i}"),
                bandwidth: 1e9,
                latency: 0.0,
            })
            .collect(),
        paths: (0..sites)
            .map(|s| if links == 0 { vec![] } else { vec![s % links] })
            .collect(),
        protocol_efficiency: 1.0,
    };
    let nic = Interface {
        out: 125e6,
        inbound: 125e6,
        stream_cap: f64::INFINITY,
    };
    let mut grid: GridNetwork<u64> = GridNetwork::new(&topology, &vec![nic; sites]);
    let mut rng = ChaCha8Rng::seed_from_u64(37);
    let mut due: EventQueue<(ShareId, u64)> = EventQueue::new();
    let mut next_id = 0u64;
    let mut start = |grid: &mut GridNetwork<u64>, rng: &mut ChaCha8Rng, now: f64| {
        let from = rng.random_range(0..sites);
        let to = (from + rng.random_range(1..sites)) % sites;
        let (route, _) = grid.route(from, to);
        let bytes = rng.random_range(1e6..1e8);
        grid.net.start(now, route, next_id, bytes);
        next_id += 1;
    };
    for _ in 0..flows {
        start(&mut grid, &mut rng, 0.0);
    }
    grid.net
        .schedule_changed(0.0, |at, r, g| due.push(at, (r, g)));
    let before = grid.net.rerated();
    let began = Instant::now();
    let mut ended = 0u64;
    while ended < ends {
        let Some((now, (share, generation))) = due.pop() else {
            return Err("the flows ran out".into());
        };
        let Some(done) = grid.net.take_ended(now, share, generation) else {
            continue;
        };
        grid.net
            .schedule_changed(now, |at, r, g| due.push(at, (r, g)));
        for _ in &done {
            start(&mut grid, &mut rng, now);
            grid.net
                .schedule_changed(now, |at, r, g| due.push(at, (r, g)));
        }
        ended += done.len() as u64;
    }
    let wall = began.elapsed().as_secs_f64();
    let rerated = (grid.net.rerated() - before) as f64 / wall;
    let changes = 2.0 * ended as f64 / wall;
    Ok(Figure {
        name: format!(
            "sim network: {flows} flows over {sites} sites and {links} shared links, \
             {ended} ends and as many starts, {changes:.0} starts+ends/s"
        ),
        value: rerated,
        unit: "flows re-rated/s".into(),
        goal: None,
        met: true,
    })
}

/// Issue 60's goals, in seconds for all the flows of a shape to start and
/// end: (shape, flows, goal).
const GOALS: [(Shape, usize, f64); 4] = [
    (Shape::SenderFanIn, 10_000, 1.0),
    (Shape::SenderFanIn, 100_000, 15.0),
    (Shape::ReceiverFanIn, 100_000, 15.0),
    (Shape::MixedTree, 100_000, 15.0),
];

/// Each shape of [`flow_shapes`] replayed at each of `sizes` (ascending):
/// the seconds for all its flows to start and end, as `gridbed flows
/// replay` times them (the quickest of three replays, when under 2 s), and
/// the cost per start or end at the largest size
/// over that at the one before. A size is not run where the growth of the
/// sizes before puts it over `budget` seconds (its goal is then unmet).
pub(super) fn shapes(sizes: &[usize], budget: f64) -> Result<Vec<Figure>, Failure> {
    let mut figures = Vec::new();
    for shape in Shape::ALL {
        let mut per_event: Vec<(usize, f64)> = Vec::new();
        for &n in sizes {
            let goal = GOALS
                .iter()
                .find(|g| g.0 == shape && g.1 == n)
                .map(|g| g.2);
            let name = format!("network {}: {n} flows start and end", shape.name());
            // Grown from the size before as it grew from the one before that
            // (at least in proportion, at most as the square: a shape that
            // saturates between two sizes grows faster once), this one
            // would take about this long.
            let expected = match per_event[..] {
                [] => 0.0,
                [(_, cost)] => cost * 2.0 * n as f64,
                [.., (l, a), (m, b)] => {
                    let (took, before) = (b * 2.0 * m as f64, a * 2.0 * l as f64);
                    let k = ((took / before).ln() / (m as f64 / l as f64).ln()).clamp(1.0, 2.0);
                    took * (n as f64 / m as f64).powf(k)
                }
            };
            if expected > budget {
                let &(before, cost) = per_event.last().expect("a size before");
                let took = cost * 2.0 * before as f64;
                figures.push(Figure {
                    name: format!(
                        "{name} (not run: {before} took {took:.1} s, so about {expected:.0} s)"
                    ),
                    value: f64::NAN,
                    unit: "s".into(),
                    goal: goal.map(|g| format!("≤ {g}")),
                    met: goal.is_none(),
                });
                break;
            }
            let trace = flow_shapes::trace(shape, n, 60);
            // The quickest of up to three replays (while they are short):
            // the machine's other work only ever adds.
            let mut wall = f64::INFINITY;
            for _ in 0..3 {
                let began = Instant::now();
                let ends = flows::replay(&trace).map_err(|e| e.to_string())?;
                wall = wall.min(began.elapsed().as_secs_f64());
                if ends.iter().any(|e| !e.is_finite()) {
                    return Err(format!("{name}: a flow never ended").into());
                }
                if wall > 2.0 {
                    break;
                }
            }
            per_event.push((n, wall / (2.0 * n as f64)));
            figures.push(Figure {
                name,
                value: wall,
                unit: "s".into(),
                goal: goal.map(|g| format!("≤ {g}")),
                met: goal.is_none_or(|g| wall <= g),
            });
        }
        if let [.., (a, ca), (b, cb)] = per_event[..] {
            let ratio = cb / ca;
            figures.push(Figure {
                name: format!(
                    "network {}: cost per start or end, {b} flows over {a}",
                    shape.name()
                ),
                value: ratio,
                unit: "x".into(),
                goal: (a == 10_000 && b == 100_000).then(|| "≤ 1.5".into()),
                met: !(a == 10_000 && b == 100_000) || ratio <= 1.5,
            });
        }
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_small_network_churns_and_re_rates() {
        let f = super::network(200, 20, 4, 500).unwrap();
        assert!(f.value > 0.0, "{f:?}");
    }

    #[test]
    fn the_shapes_run_and_stop_growing_past_the_budget() {
        let figures = super::shapes(&[100, 300], 60.0).unwrap();
        assert_eq!(figures.len(), 9, "two sizes and a ratio a shape: {figures:?}");
        let figures = super::shapes(&[100, 300], 0.0).unwrap();
        assert!(figures.iter().all(|f| f.name.contains("100 flows") || f.name.contains("not run")));
    }
}
