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

#[cfg(test)]
mod tests {
    #[test]
    fn a_small_network_churns_and_re_rates() {
        let f = super::network(200, 20, 4, 500).unwrap();
        assert!(f.value > 0.0, "{f:?}");
    }
}
