//! Water-filling at a resource that its routes share with no other route
//! (a star: a fan-in of senders into one receiver, each sender alone on its
//! interface, or a fan-out from one sender). There, max-min is one level:
//! each route runs at the smaller of its own limit (its cap, or its
//! resources that no other route crosses, shared among its flows) and the
//! level at which the routes fill the resource. A start or an end moves the
//! level, and the routes whose limit it crosses move between the two sides
//! of it: with the routes above the level in a min-heap and those below in a
//! max-heap by their limit, that costs a logarithm per route that moves, not
//! a filling over every route on the resource (a receiver limiting 100,000
//! senders re-rates one clock, [`super::Share`], per start or end).
//!
//! The routes above the level run on the resource's share and are not
//! re-rated one by one, so their `rate` in the resources' `load` lags: only
//! the resource itself (which binds, so its load is not read) and the
//! resources each route crosses alone (which no filling reads either: they
//! enter it with the one route's own rate given back) count it. When another
//! route comes to share one of them, or a filling takes the routes, the star
//! is dropped and their rates booked first ([`Network::drop_star`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Mark, Network, ResourceId, RouteId, Time};

/// Routes on one resource shared with no other (see the module docs) from
/// at least this many: below it, a filling costs no more.
pub(super) const STAR_MIN: usize = 64;

/// No star: [`Place::star`] of a route in none.
const NONE: ResourceId = ResourceId::MAX;

/// The water-filling state of a star resource.
#[derive(Debug, Default)]
pub(super) struct Star {
    /// Whether it is in use: a route's [`Place`] counts only then and at
    /// the same `generation`.
    live: bool,
    generation: u32,
    /// Routes above the level (running at it), by limit, smallest first;
    /// entries whose route has moved since are stale ([`Place::version`]).
    above: BinaryHeap<Reverse<(Mark, RouteId, u32)>>,
    /// Routes at their limit, by limit, largest first.
    below: BinaryHeap<(Mark, RouteId, u32)>,
    /// Flows above the level, and what the flows below take.
    above_flows: f64,
    below_load: f64,
    /// Updates since the sums were last made anew (rounding in them is
    /// bounded by rebuilding once they are as many as the routes).
    updates: usize,
}

/// A route's registration in a star: the flows and limit it counts for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    star: ResourceId,
    generation: u32,
    version: u32,
    above: bool,
    flows: f64,
    limit: f64,
}

impl Default for Place {
    fn default() -> Self {
        Place {
            star: NONE,
            generation: 0,
            version: 0,
            above: false,
            flows: 0.0,
            limit: 0.0,
        }
    }
}

impl Star {
    /// The level that the flows above it get of `capacity`: ∞ when the
    /// flows below leave room and none is above (the resource binds none),
    /// -∞ when they overfill it with none above.
    fn level(&self, capacity: f64) -> f64 {
        let room = capacity - self.below_load;
        if self.above_flows > 0.0 {
            room / self.above_flows
        } else if room >= 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    }
}

impl<K: Ord + Copy> Network<K> {
    /// The star that must re-rate `route` after its flows changed: the one
    /// it is registered in, or one on a resource it crosses (a star counts
    /// every route on its resource, so a route coming to it joins it).
    pub(super) fn star_of(&self, route: RouteId) -> Option<ResourceId> {
        if let Some(res) = self.registered(route) {
            return Some(res);
        }
        self.routes[route as usize]
            .resources
            .iter()
            .copied()
            .find(|&res| self.stars[res as usize].live)
    }

    /// The star worth building for `route`: the one resource other routes
    /// cross with it (or crossed, for a route that has just emptied), when
    /// no route there shares another and they are many enough.
    pub(super) fn star_to_build(&self, route: RouteId) -> Option<ResourceId> {
        let r = &self.routes[route as usize];
        let itself = usize::from(r.coupled);
        let mut shared = r
            .resources
            .iter()
            .filter(|&&res| self.crossing[res as usize].len() > itself);
        let res = *shared.next()?;
        let others = self.crossing[res as usize].len() - itself;
        (shared.next().is_none() && self.entangled[res as usize] == 0 && others >= STAR_MIN)
            .then_some(res)
    }

    /// The live star `route` is registered in.
    pub(super) fn registered(&self, route: RouteId) -> Option<ResourceId> {
        let p = &self.routes[route as usize].place;
        let star = self.stars.get(p.star as usize)?;
        (star.live && star.generation == p.generation).then_some(p.star)
    }

    /// Re-rates `seed` at `now` by the water-filling of star `res`, and
    /// every route whose side of the level it moves.
    pub(super) fn star_rerate(&mut self, now: Time, res: ResourceId, seed: RouteId) {
        self.unregister(res, seed);
        let emptied = self.routes[seed as usize].active.is_empty();
        if emptied {
            let own = self.routes[seed as usize].own;
            self.set_rate(now, seed, own, 0.0);
        }
        if self.crossing[res as usize].is_empty() {
            // Its last route left: a route that comes alone is no star.
            self.drop_star(res);
            return;
        }
        let star = &self.stars[res as usize];
        if !star.live || star.updates > self.crossing[res as usize].len() + STAR_MIN {
            self.build_star(now, res);
            return;
        }
        let mut moved = std::mem::take(&mut self.moved);
        moved.clear();
        if !emptied {
            self.register(res, seed);
            moved.push(seed);
        }
        self.balance(res, &mut moved);
        self.stars[res as usize].updates += moved.len().max(1);
        self.apply_star(now, res, &moved);
        self.moved = moved;
    }

    /// Makes star `res` anew from every route on it, at `now`.
    fn build_star(&mut self, now: Time, res: ResourceId) {
        let star = &mut self.stars[res as usize];
        star.live = true;
        star.generation = star.generation.wrapping_add(1);
        star.above.clear();
        star.below.clear();
        star.above_flows = 0.0;
        star.below_load = 0.0;
        star.updates = 0;
        let mut moved = std::mem::take(&mut self.moved);
        moved.clear();
        moved.extend_from_slice(&self.crossing[res as usize]);
        for &route in &moved {
            self.register(res, route);
        }
        self.balance(res, &mut Vec::new());
        self.apply_star(now, res, &moved);
        self.moved = moved;
    }

    /// `route`'s flows and limit counted in star `res`: below the level,
    /// or above it when nothing else limits it (so that no infinite limit
    /// enters the sums).
    fn register(&mut self, res: ResourceId, route: RouteId) {
        let (limit, _) = self.limit(res, route);
        let star = &mut self.stars[res as usize];
        let r = &mut self.routes[route as usize];
        let flows = r.flows();
        let above = limit.is_infinite();
        r.place = Place {
            star: res,
            generation: star.generation,
            version: r.place.version.wrapping_add(1),
            above,
            flows,
            limit,
        };
        if above {
            star.above_flows += flows;
            star.above
                .push(Reverse((Mark(limit), route, r.place.version)));
        } else {
            star.below_load += flows * limit;
            star.below.push((Mark(limit), route, r.place.version));
        }
    }

    /// `route` no longer counted in star `res` (when it was).
    fn unregister(&mut self, res: ResourceId, route: RouteId) {
        if self.registered(route) != Some(res) {
            return;
        }
        let star = &mut self.stars[res as usize];
        let p = &mut self.routes[route as usize].place;
        if p.above {
            star.above_flows -= p.flows;
        } else {
            star.below_load -= p.flows * p.limit;
        }
        *p = Place {
            version: p.version.wrapping_add(1),
            ..Place::default()
        };
    }

    /// What limits `route`'s flows besides star `res`: its cap, or a
    /// resource it crosses alone shared among them, whichever is lower (the
    /// cap at a tie, as a filling freezes it), and the share that is.
    fn limit(&self, res: ResourceId, route: RouteId) -> (f64, super::ShareId) {
        let r = &self.routes[route as usize];
        let n = r.flows();
        let mut best = (r.cap, r.own);
        for &other in &r.resources {
            let fair = self.capacity[other as usize] / n;
            if other != res && fair < best.0 {
                best = (fair, self.resource_share[other as usize]);
            }
        }
        best
    }

    /// Moves routes across the level until each above it has a higher
    /// limit and each below a limit no higher; the routes moved are added
    /// to `moved`. Both moves raise the level, so a route moves at most
    /// twice.
    fn balance(&mut self, res: ResourceId, moved: &mut Vec<RouteId>) {
        let capacity = self.capacity[res as usize];
        let star = &mut self.stars[res as usize];
        let routes = &mut self.routes;
        let generation = star.generation;
        let current = |routes: &[super::Route<K>], route: RouteId, version: u32, above: bool| {
            let p = &routes[route as usize].place;
            p.version == version && p.generation == generation && p.above == above
        };
        let mut bound = 2 * (star.above.len() + star.below.len()) + 4;
        while bound > 0 {
            bound -= 1;
            let level = star.level(capacity);
            while let Some(&Reverse((_, route, version))) = star.above.peek() {
                if current(routes, route, version, true) {
                    break;
                }
                star.above.pop();
            }
            if let Some(&Reverse((Mark(limit), route, _))) = star.above.peek()
                && limit <= level
            {
                star.above.pop();
                let p = &mut routes[route as usize].place;
                p.above = false;
                p.version = p.version.wrapping_add(1);
                star.above_flows -= p.flows;
                star.below_load += p.flows * p.limit;
                star.below.push((Mark(limit), route, p.version));
                moved.push(route);
                continue;
            }
            while let Some(&(_, route, version)) = star.below.peek() {
                if current(routes, route, version, false) {
                    break;
                }
                star.below.pop();
            }
            // Rounding must not carry a route across at a tie and back.
            let over = if level.is_finite() {
                level + level.abs() * 1e-12
            } else {
                level
            };
            if let Some(&(Mark(limit), route, _)) = star.below.peek()
                && limit > over
            {
                star.below.pop();
                let p = &mut routes[route as usize].place;
                p.above = true;
                p.version = p.version.wrapping_add(1);
                star.below_load -= p.flows * p.limit;
                star.above_flows += p.flows;
                star.above.push(Reverse((Mark(limit), route, p.version)));
                moved.push(route);
                continue;
            }
            break;
        }
    }

    /// Star `res`'s level onto its share, and each of `moved` onto the
    /// share of its side at its rate.
    fn apply_star(&mut self, now: Time, res: ResourceId, moved: &[RouteId]) {
        let star = &self.stars[res as usize];
        let level = star.level(self.capacity[res as usize]);
        let above = star.above_flows;
        let share = self.resource_share[res as usize];
        if above > 0.0 {
            let s = &mut self.shares[share as usize];
            if s.rate != level {
                s.advance(now);
                s.rate = level;
                self.rerated += above as u64;
                self.mark_changed(share);
            }
        }
        for &route in moved {
            let p = self.routes[route as usize].place;
            if p.above {
                self.set_rate(now, route, share, level);
            } else {
                let (limit, at) = self.limit(res, route);
                self.set_rate(now, route, at, limit);
            }
        }
    }

    /// Star `res` is dropped (another route shares what its routes crossed
    /// alone, or a filling takes them): the routes above its level have
    /// their rate booked in their resources' load first.
    pub(super) fn drop_star(&mut self, res: ResourceId) {
        let star = &mut self.stars[res as usize];
        if !star.live {
            return;
        }
        let level = star.level(self.capacity[res as usize]);
        let generation = star.generation;
        star.live = false;
        star.generation = generation.wrapping_add(1);
        star.above.clear();
        star.below.clear();
        for i in 0..self.crossing[res as usize].len() {
            let route = self.crossing[res as usize][i];
            let r = &mut self.routes[route as usize];
            if r.place.star != res || r.place.generation != generation || !r.place.above {
                continue;
            }
            let more = r.flows() * (level - r.rate);
            r.rate = level;
            for &other in &r.resources {
                self.load[other as usize] += more;
            }
        }
    }
}
