//! The one network model of gridbed's simulators: flows over resources, each
//! flow's rate the max-min fair share over every resource it crosses (the
//! flow-level model of SimGrid's CM02, under WRENCH; OptorSim's and GridSim's
//! site links). A resource is a bandwidth: a site's network interface in one
//! direction (what it sends, what it receives), a shared link between sites,
//! the farm's store or an executor's local disk (seed 001). A flow is also
//! bounded by its own per-stream cap (seed 000: 1 MB/s a gridftp stream).
//!
//! Flows that cross the same resources under the same cap get the same rate
//! in the max-min allocation, so they are kept together as one [`Route`]:
//! a clock of "bytes served per flow since the route's start" and a heap of
//! the marks at which each flow ends. Starting or ending a flow re-rates
//! only the routes that share a limited resource with it (its connected
//! component), by progressive filling over their flow counts; each route
//! whose rate changed is reported, and the engine reschedules its next end.
//! A start or an end thus costs O(log n) in the flows of its route plus the
//! filling of its component, whatever the number of flows.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::Time;

/// Index of a resource (a limited bandwidth) of a [`Network`].
pub type ResourceId = u32;
/// Index of a route (resources crossed and a per-flow cap) of a [`Network`].
pub type RouteId = u32;

/// `f64` with a total order, for the heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark(f64);
impl Eq for Mark {}
impl PartialOrd for Mark {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Mark {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// Flows that cross the same limited resources under the same cap: they all
/// run at one rate.
#[derive(Debug)]
struct Route<K> {
    /// The limited resources crossed, each once.
    resources: SmallVec<[ResourceId; 6]>,
    /// Per-flow cap, bytes/s (∞: none).
    cap: f64,
    /// Each flow's rate now.
    rate: f64,
    /// Flows by the mark of `served` at which they end.
    active: BinaryHeap<Reverse<(Mark, K)>>,
    /// Bytes served per flow since the start (the route's virtual clock).
    served: f64,
    /// When `served` was last brought up to date.
    last: Time,
    /// Bumped by every [`Network::next_end`], so that an end scheduled before
    /// the route's rate or flows changed is recognised as stale.
    generation: u64,
}

impl<K: Ord + Copy> Route<K> {
    fn advance(&mut self, now: Time) {
        if self.rate.is_finite() && now > self.last {
            self.served += self.rate * (now - self.last);
        }
        self.last = now;
    }
}

/// A network of limited resources and the flows on them. See the module docs.
#[derive(Debug)]
pub struct Network<K> {
    capacity: Vec<f64>,
    /// Per resource: the routes with flows that cross it.
    crossing: Vec<Vec<RouteId>>,
    /// Per resource: what its capped flows would take at their caps, and
    /// how many flows have no cap.
    capped_demand: Vec<f64>,
    uncapped: Vec<u32>,
    routes: Vec<Route<K>>,
    index: FxHashMap<(SmallVec<[ResourceId; 6]>, u64), RouteId>,
    /// Routes whose rate or flows changed since [`Network::take_changed`].
    changed: Vec<RouteId>,
    /// Flow re-ratings done (a route's rate changed, times its flows).
    rerated: u64,
    scratch: Scratch,
}

/// The filling's working state, kept between calls (no allocation per event).
#[derive(Debug, Default)]
struct Scratch {
    epoch: u32,
    route_seen: Vec<u32>,
    resource_seen: Vec<u32>,
    routes: Vec<RouteId>,
    resources: Vec<ResourceId>,
    /// Per resource: capacity not yet given, and unfrozen flows crossing it.
    left: Vec<f64>,
    count: Vec<f64>,
    /// Per route: the rate it was frozen at (NaN: not yet).
    frozen: Vec<f64>,
    /// The component's capped routes by cap, smallest last.
    capped: Vec<RouteId>,
}

impl<K: Ord + Copy> Default for Network<K> {
    fn default() -> Self {
        Network {
            capacity: Vec::new(),
            crossing: Vec::new(),
            capped_demand: Vec::new(),
            uncapped: Vec::new(),
            routes: Vec::new(),
            index: FxHashMap::default(),
            changed: Vec::new(),
            rerated: 0,
            scratch: Scratch::default(),
        }
    }
}

impl<K: Ord + Copy> Network<K> {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// A resource of `bandwidth` bytes/s (∞: unlimited; it then bounds
    /// nothing and couples no flows).
    pub fn add_resource(&mut self, bandwidth: f64) -> ResourceId {
        self.capacity.push(bandwidth);
        self.crossing.push(Vec::new());
        self.scratch.resource_seen.push(0);
        self.scratch.left.push(0.0);
        self.scratch.count.push(0.0);
        self.capped_demand.push(0.0);
        self.uncapped.push(0);
        (self.capacity.len() - 1) as ResourceId
    }

    /// A resource's bandwidth.
    pub fn bandwidth(&self, r: ResourceId) -> f64 {
        self.capacity[r as usize]
    }

    /// The route of flows crossing `resources` (in any order, repeats
    /// counted once) each capped at `cap` bytes/s: the same id for the same
    /// limited resources and cap.
    pub fn route(&mut self, resources: &[ResourceId], cap: f64) -> RouteId {
        let mut key: SmallVec<[ResourceId; 6]> = resources
            .iter()
            .copied()
            .filter(|&r| self.capacity[r as usize].is_finite())
            .collect();
        key.sort_unstable();
        key.dedup();
        let cap = if cap > 0.0 { cap } else { f64::INFINITY };
        let k = (key, cap.to_bits());
        if let Some(&id) = self.index.get(&k) {
            return id;
        }
        let id = self.routes.len() as RouteId;
        self.routes.push(Route {
            resources: k.0.clone(),
            cap,
            rate: 0.0,
            active: BinaryHeap::new(),
            served: 0.0,
            last: 0.0,
            generation: 0,
        });
        self.scratch.route_seen.push(0);
        self.scratch.frozen.push(f64::NAN);
        self.index.insert(k, id);
        id
    }

    /// The limited resources `route` crosses, and its per-flow cap.
    pub fn route_of(&self, route: RouteId) -> (&[ResourceId], f64) {
        let r = &self.routes[route as usize];
        (&r.resources, r.cap)
    }

    /// Each flow's rate on `route` now (0 when it has none).
    pub fn rate(&self, route: RouteId) -> f64 {
        self.routes[route as usize].rate
    }

    /// Flows on `route`.
    pub fn flows(&self, route: RouteId) -> usize {
        self.routes[route as usize].active.len()
    }

    /// Flow re-ratings so far: each time a route's rate changed, its flows.
    pub fn rerated(&self) -> u64 {
        self.rerated
    }

    /// Flow `id` of `bytes` starts on `route` at `now`. Rates change: hand
    /// [`Network::take_changed`]'s routes to [`Network::next_end`].
    pub fn start(&mut self, now: Time, route: RouteId, id: K, bytes: f64) {
        let r = &mut self.routes[route as usize];
        r.advance(now);
        let mark = Mark(r.served + bytes);
        let was_idle = r.active.is_empty();
        r.active.push(Reverse((mark, id)));
        if was_idle {
            for &res in &r.resources {
                self.crossing[res as usize].push(route);
            }
        }
        self.demand(route, 1.0);
        self.rerate(now, route, 0);
    }

    /// Flow `id` leaves `route` at `now`, its bytes unsent (its source
    /// crashed); false when it was not there.
    pub fn remove(&mut self, now: Time, route: RouteId, id: K) -> bool {
        let r = &mut self.routes[route as usize];
        r.advance(now);
        let before = r.active.len();
        r.active.retain(|Reverse((_, k))| *k != id);
        let removed = before - r.active.len();
        if removed == 0 {
            return false;
        }
        self.demand(route, -(removed as f64));
        self.left_route(route);
        self.rerate(now, route, removed);
        true
    }

    /// When the first flow of `route` ends at today's rate, and the
    /// generation to hand back to [`Network::take_ended`] then; `None` when
    /// the route is idle. Any end computed earlier is stale from now on.
    pub fn next_end(&mut self, now: Time, route: RouteId) -> Option<(Time, u64)> {
        let r = &mut self.routes[route as usize];
        r.generation += 1;
        let Reverse((Mark(mark), _)) = *r.active.peek()?;
        r.advance(now);
        let dt = if r.rate.is_finite() && r.rate > 0.0 {
            ((mark - r.served) / r.rate).max(0.0)
        } else {
            0.0
        };
        Some((now + dt, r.generation))
    }

    /// The flows of `route` that ended by `now`, for the end scheduled as
    /// `generation`; `None` when that schedule is stale. At least the flow
    /// the schedule was for ends, so rounding never stalls a route. Rates
    /// change: see [`Network::take_changed`].
    pub fn take_ended(&mut self, now: Time, route: RouteId, generation: u64) -> Option<Vec<K>> {
        let r = &mut self.routes[route as usize];
        if generation != r.generation {
            return None;
        }
        r.advance(now);
        let unlimited = !r.rate.is_finite();
        let tolerance = 1e-9 * r.served.abs().max(1.0) + 1e-6;
        let mut done = Vec::new();
        while let Some(Reverse((Mark(mark), id))) = r.active.peek().copied() {
            if unlimited || mark <= r.served + tolerance || done.is_empty() {
                r.active.pop();
                done.push(id);
            } else {
                break;
            }
        }
        self.demand(route, -(done.len() as f64));
        self.left_route(route);
        self.rerate(now, route, done.len());
        Some(done)
    }

    /// The routes whose rate or flows changed since the last call (each
    /// once, in the order they changed), into `out`.
    pub fn take_changed(&mut self, out: &mut Vec<RouteId>) {
        out.clear();
        out.append(&mut self.changed);
    }

    /// A flow left `route`: an emptied route no longer couples its resources.
    fn left_route(&mut self, route: RouteId) {
        let r = &self.routes[route as usize];
        if !r.active.is_empty() {
            return;
        }
        for &res in &r.resources {
            let list = &mut self.crossing[res as usize];
            if let Some(p) = list.iter().position(|&x| x == route) {
                list.swap_remove(p);
            }
        }
    }

    /// `flows` more (or fewer, when negative) flows on `route`, in its
    /// resources' demand at caps.
    fn demand(&mut self, route: RouteId, flows: f64) {
        let r = &self.routes[route as usize];
        for &res in &r.resources {
            if r.cap.is_finite() {
                self.capped_demand[res as usize] += flows * r.cap;
            } else {
                self.uncapped[res as usize] = (self.uncapped[res as usize] as f64 + flows) as u32;
            }
        }
    }

    /// Re-rates after `seed`'s flows changed (`removed` of them ended, or
    /// one started) at `now`. When every resource of `seed` held its flows
    /// at their caps before and after the change, no rate but `seed`'s own
    /// could move, and it is its cap. Otherwise the component of `seed` (the
    /// routes that share a limited resource with it, transitively) is filled
    /// again.
    fn rerate(&mut self, now: Time, seed: RouteId, removed: usize) {
        let r = &self.routes[seed as usize];
        let before = removed as f64 * r.cap;
        let (uncapped, demand, capacity) = (&self.uncapped, &self.capped_demand, &self.capacity);
        if r.cap.is_finite()
            && r.resources
                .iter()
                .all(|&res| holds_at_caps(uncapped, demand, capacity, res, before))
        {
            let r = &mut self.routes[seed as usize];
            r.advance(now);
            let rate = if r.active.is_empty() { 0.0 } else { r.cap };
            if r.rate != rate {
                self.rerated += r.active.len() as u64;
                r.rate = rate;
            }
            self.changed.push(seed);
            return;
        }
        self.fill(now, seed);
    }

    /// Re-rates the component of `seed` by progressive filling, at `now`.
    fn fill(&mut self, now: Time, seed: RouteId) {
        let s = &mut self.scratch;
        s.epoch = s.epoch.wrapping_add(1);
        if s.epoch == 0 {
            s.route_seen.iter_mut().for_each(|x| *x = 0);
            s.resource_seen.iter_mut().for_each(|x| *x = 0);
            s.epoch = 1;
        }
        let epoch = s.epoch;
        s.routes.clear();
        s.resources.clear();
        s.capped.clear();
        s.routes.push(seed);
        s.route_seen[seed as usize] = epoch;
        // The component, breadth first over limited resources.
        let mut i = 0;
        while i < s.routes.len() {
            let route = s.routes[i];
            i += 1;
            for &res in &self.routes[route as usize].resources {
                if s.resource_seen[res as usize] == epoch {
                    continue;
                }
                s.resource_seen[res as usize] = epoch;
                s.resources.push(res);
                s.left[res as usize] = self.capacity[res as usize];
                s.count[res as usize] = 0.0;
                for &other in &self.crossing[res as usize] {
                    if s.route_seen[other as usize] != epoch {
                        s.route_seen[other as usize] = epoch;
                        s.routes.push(other);
                    }
                }
            }
        }
        // Unfrozen flows per resource; capped routes by cap.
        let mut unfrozen = 0usize;
        for &route in &s.routes {
            let r = &self.routes[route as usize];
            s.frozen[route as usize] = f64::NAN;
            let n = r.active.len();
            if n == 0 {
                s.frozen[route as usize] = 0.0;
                continue;
            }
            unfrozen += 1;
            for &res in &r.resources {
                s.count[res as usize] += n as f64;
            }
            if r.cap.is_finite() {
                s.capped.push(route);
            }
        }
        // Where every resource holds its flows at their caps (gridftp
        // streams of 1 MB/s into interfaces of 100 MB/s, as seed 000's
        // model has it), the caps are the allocation: no filling.
        let (uncapped, demand, capacity) = (&self.uncapped, &self.capped_demand, &self.capacity);
        if s.resources
            .iter()
            .all(|&res| holds_at_caps(uncapped, demand, capacity, res, 0.0))
        {
            for &route in &s.routes {
                if s.frozen[route as usize].is_nan() {
                    s.frozen[route as usize] = self.routes[route as usize].cap;
                }
            }
            unfrozen = 0;
        }
        let routes = &self.routes;
        s.capped
            .sort_unstable_by(|&a, &b| routes[b as usize].cap.total_cmp(&routes[a as usize].cap));
        // Progressive filling: the tightest resource's fair share (or the
        // smallest cap, when lower) freezes the flows it bounds.
        while unfrozen > 0 {
            while let Some(&c) = s.capped.last() {
                if s.frozen[c as usize].is_nan() {
                    break;
                }
                s.capped.pop();
            }
            let mut tightest: Option<(f64, ResourceId)> = None;
            for &res in &s.resources {
                let n = s.count[res as usize];
                if n > 0.0 {
                    let share = s.left[res as usize].max(0.0) / n;
                    if tightest.is_none_or(|(t, _)| share < t) {
                        tightest = Some((share, res));
                    }
                }
            }
            let cap = s.capped.last().map(|&c| (routes[c as usize].cap, c));
            let freeze_one = |s: &mut Scratch, route: RouteId, rate: f64| {
                s.frozen[route as usize] = rate;
                let r = &routes[route as usize];
                let n = r.active.len() as f64;
                for &res in &r.resources {
                    s.left[res as usize] -= n * rate;
                    s.count[res as usize] -= n;
                }
            };
            match (tightest, cap) {
                (_, Some((cap, c))) if tightest.is_none_or(|(t, _)| cap <= t) => {
                    freeze_one(s, c, cap);
                    s.capped.pop();
                    unfrozen -= 1;
                }
                (Some((share, res)), _) => {
                    let mut k = 0;
                    while k < self.crossing[res as usize].len() {
                        let route = self.crossing[res as usize][k];
                        k += 1;
                        if s.frozen[route as usize].is_nan() {
                            freeze_one(s, route, share);
                            unfrozen -= 1;
                        }
                    }
                    // Rounding may leave a sliver of flows: none cross it now.
                    s.count[res as usize] = 0.0;
                }
                (None, _) => {
                    // Only routes with no limited resource and no cap remain.
                    for &route in &s.routes {
                        if s.frozen[route as usize].is_nan() {
                            s.frozen[route as usize] = f64::INFINITY;
                        }
                    }
                    unfrozen = 0;
                }
            }
        }
        // Bring each clock to `now` at its old rate, then set the new one.
        for &route in &s.routes {
            let r = &mut self.routes[route as usize];
            let rate = s.frozen[route as usize];
            let same = r.rate == rate || (r.rate - rate).abs() <= 1e-12 * r.rate.abs();
            if route != seed && same {
                continue;
            }
            r.advance(now);
            if !same {
                self.rerated += r.active.len() as u64;
            }
            r.rate = rate;
            self.changed.push(route);
        }
    }
}

/// Whether resource `res` holds all its flows at their caps, with `extra`
/// bytes/s more: then it binds no flow (a resource that cannot saturate sets
/// no rate in the max-min allocation). `uncapped`, `demand` and `capacity`
/// are the network's per-resource counts.
fn holds_at_caps(
    uncapped: &[u32],
    demand: &[f64],
    capacity: &[f64],
    res: ResourceId,
    extra: f64,
) -> bool {
    let res = res as usize;
    uncapped[res] == 0 && demand[res] + extra <= capacity[res] * (1.0 + 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs every route to idle from `now`; each flow's end time.
    fn drain(net: &mut Network<u32>, mut now: Time) -> Vec<(u32, Time)> {
        let mut due: Vec<(Time, RouteId, u64)> = Vec::new();
        let mut changed = Vec::new();
        let mut ends = Vec::new();
        let reschedule = |net: &mut Network<u32>, due: &mut Vec<_>, changed: &mut Vec<_>, now| {
            net.take_changed(changed);
            for &r in changed.iter() {
                if let Some((at, g)) = net.next_end(now, r) {
                    due.push((at, r, g));
                }
            }
        };
        reschedule(net, &mut due, &mut changed, now);
        // Every route, in case it was set up before the first change.
        for r in 0..net.routes.len() as RouteId {
            if let Some((at, g)) = net.next_end(now, r) {
                due.push((at, r, g));
            }
        }
        while !due.is_empty() {
            let i = (0..due.len())
                .min_by(|&a, &b| due[a].0.total_cmp(&due[b].0))
                .unwrap();
            let (at, r, g) = due.swap_remove(i);
            now = at;
            if let Some(done) = net.take_ended(now, r, g) {
                ends.extend(done.into_iter().map(|id| (id, now)));
                reschedule(net, &mut due, &mut changed, now);
            }
        }
        ends.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        ends
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn a_single_resource_is_shared_fairly_and_each_flow_capped() {
        // 10 B/s shared, 4 B/s a flow: as the per-source link model did.
        let mut net = Network::new();
        let link = net.add_resource(10.0);
        let route = net.route(&[link], 4.0);
        net.start(0.0, route, 1, 40.0);
        net.start(0.0, route, 2, 80.0);
        assert_eq!(net.rate(route), 4.0);
        net.start(0.0, route, 3, 10.0);
        assert!(close(net.rate(route), 10.0 / 3.0));
        let ends = drain(&mut net, 0.0);
        let want = [(3, 3.0), (1, 10.5), (2, 20.5)];
        assert_eq!(ends.len(), 3);
        for ((id, t), (wid, wt)) in ends.iter().zip(want) {
            assert_eq!(*id, wid);
            assert!(close(*t, wt), "{id} ends at {t}, expected {wt}");
        }
    }

    /// Sites as (out, in) resources; the route from `a` to `b`.
    fn sites(net: &mut Network<u32>, rates: &[(f64, f64)]) -> Vec<(ResourceId, ResourceId)> {
        rates
            .iter()
            .map(|&(o, i)| (net.add_resource(o), net.add_resource(i)))
            .collect()
    }

    #[test]
    fn fan_in_is_bounded_by_the_receiver() {
        // 10 senders of 10 B/s each into one receiver of 10 B/s in: 1 B/s
        // each, so 10 B take 10 s, ten times one transfer alone.
        let mut net = Network::new();
        let s = sites(&mut net, &[(10.0, 10.0); 11]);
        for i in 0..10u32 {
            let r = net.route(&[s[i as usize].0, s[10].1], f64::INFINITY);
            net.start(0.0, r, i, 10.0);
            assert!(close(net.rate(r), 10.0 / (i + 1) as f64));
        }
        for (_, t) in drain(&mut net, 0.0) {
            assert!(close(t, 10.0));
        }
    }

    #[test]
    fn fan_out_is_bounded_by_the_sender() {
        let mut net = Network::new();
        let s = sites(&mut net, &[(20.0, 20.0); 5]);
        let routes: Vec<_> = (1..5)
            .map(|b| net.route(&[s[0].0, s[b].1], f64::INFINITY))
            .collect();
        for (i, &r) in routes.iter().enumerate() {
            net.start(0.0, r, i as u32, 50.0);
        }
        for &r in &routes {
            assert!(close(net.rate(r), 5.0));
        }
        for (_, t) in drain(&mut net, 0.0) {
            assert!(close(t, 10.0));
        }
    }

    #[test]
    fn a_bottleneck_link_leaves_the_rest_to_unconstrained_flows() {
        // A source of 30 B/s; two flows cross a 10 B/s link (5 each), the
        // third does not and takes the 20 left.
        let mut net = Network::new();
        let out = net.add_resource(30.0);
        let link = net.add_resource(10.0);
        let through = net.route(&[out, link], f64::INFINITY);
        let direct = net.route(&[out], f64::INFINITY);
        net.start(0.0, through, 1, 50.0);
        net.start(0.0, through, 2, 50.0);
        net.start(0.0, direct, 3, 200.0);
        assert!(close(net.rate(through), 5.0));
        assert!(close(net.rate(direct), 20.0));
        let ends = drain(&mut net, 0.0);
        // 1 and 2 end at 10 s; 3 has sent 200 by then.
        assert_eq!(ends.len(), 3);
        for (_, t) in ends {
            assert!(close(t, 10.0));
        }
    }

    #[test]
    fn rates_cascade_over_a_chain_of_bottlenecks() {
        // A chain: A (cap 1, via r1), B (via r1 and r2), C (via r2), with
        // r1 = 2 and r2 = 10. A is capped at 1, B gets the 1 left of r1, C
        // the 9 left of r2.
        let mut net = Network::new();
        let r1 = net.add_resource(2.0);
        let r2 = net.add_resource(10.0);
        let a = net.route(&[r1], 1.0);
        let b = net.route(&[r1, r2], f64::INFINITY);
        let c = net.route(&[r2], f64::INFINITY);
        net.start(0.0, a, 1, 1.0);
        net.start(0.0, b, 2, 10.0);
        net.start(0.0, c, 3, 90.0);
        assert!(close(net.rate(a), 1.0));
        assert!(close(net.rate(b), 1.0));
        assert!(close(net.rate(c), 9.0));
        // A ends at 1 s: B takes r1's 2, C 8. B has 9 left → 5.5 s;
        // C sent 9, has 81 left at 8 B/s until 5.5 s (36), then 10 B/s:
        // 45 left → 10 s.
        let ends = drain(&mut net, 0.0);
        let want = [(1, 1.0), (2, 5.5), (3, 10.0)];
        for ((id, t), (wid, wt)) in ends.iter().zip(want) {
            assert_eq!(*id, wid);
            assert!(close(*t, wt), "{id} ends at {t}, expected {wt}");
        }
    }

    #[test]
    fn only_the_changed_component_is_re_rated() {
        let mut net: Network<u32> = Network::new();
        let a = net.add_resource(10.0);
        let b = net.add_resource(10.0);
        let ra = net.route(&[a], f64::INFINITY);
        let rb = net.route(&[b], f64::INFINITY);
        net.start(0.0, ra, 1, 10.0);
        let mut changed = Vec::new();
        net.take_changed(&mut changed);
        assert_eq!(changed, vec![ra]);
        net.start(0.0, rb, 2, 10.0);
        net.take_changed(&mut changed);
        assert_eq!(changed, vec![rb], "a's flows do not share b");
        assert!(close(net.rate(ra), 10.0));
    }

    #[test]
    fn a_change_makes_the_scheduled_end_stale() {
        let mut net = Network::new();
        let link = net.add_resource(10.0);
        let r = net.route(&[link], f64::INFINITY);
        net.start(0.0, r, 1, 100.0);
        let (at, old) = net.next_end(0.0, r).unwrap();
        assert_eq!(at, 10.0);
        net.start(5.0, r, 2, 10.0);
        let (at, new) = net.next_end(5.0, r).unwrap();
        assert_eq!(at, 7.0, "50 B left of 1, 10 of 2, at 5 B/s each");
        assert_eq!(net.take_ended(at, r, old), None);
        assert_eq!(net.take_ended(at, r, new), Some(vec![2]));
    }

    #[test]
    fn unlimited_flows_end_at_once_and_removed_ones_free_their_share() {
        let mut net = Network::new();
        let free = net.add_resource(f64::INFINITY);
        let r = net.route(&[free], f64::INFINITY);
        net.start(1.0, r, 1, 5.0);
        net.start(1.0, r, 2, 7.0);
        let (at, g) = net.next_end(1.0, r).unwrap();
        assert_eq!(at, 1.0);
        assert_eq!(net.take_ended(at, r, g), Some(vec![1, 2]));
        assert_eq!(net.next_end(1.0, r), None);

        let link = net.add_resource(10.0);
        let l = net.route(&[link], f64::INFINITY);
        net.start(0.0, l, 3, 100.0);
        net.start(0.0, l, 4, 100.0);
        assert!(net.remove(2.0, l, 4));
        assert!(!net.remove(2.0, l, 4));
        assert!(close(net.rate(l), 10.0));
        let (at, _) = net.next_end(2.0, l).unwrap();
        assert!(close(at, 2.0 + 90.0 / 10.0));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// A flow: the resources it crosses (by index), its cap, and whether
        /// it stays (or is removed after all have started).
        type FlowSpec = (Vec<usize>, Option<f64>, bool);

        /// A random network: resources, and flows.
        fn network() -> impl Strategy<Value = (Vec<f64>, Vec<FlowSpec>)> {
            (1usize..7).prop_flat_map(|nres| {
                let caps = proptest::collection::vec(
                    prop_oneof![4 => 1.0f64..100.0, 1 => Just(f64::INFINITY)],
                    nres,
                );
                let flow = (
                    proptest::collection::vec(0..nres, 1..4),
                    proptest::option::weighted(0.3, 0.5f64..60.0),
                    proptest::bool::weighted(0.7),
                );
                (caps, proptest::collection::vec(flow, 1..25))
            })
        }

        proptest! {
            /// Every flow is bounded by its cap or by a saturated resource
            /// on its path where no flow gets more than it (max-min), after
            /// flows started one by one and some of them left.
            #[test]
            fn every_allocation_is_max_min((caps, all) in network()) {
                let mut net: Network<u32> = Network::new();
                let res: Vec<_> = caps.iter().map(|&c| net.add_resource(c)).collect();
                let mut started = Vec::new();
                for (i, (path, cap, _)) in all.iter().enumerate() {
                    let path: Vec<_> = path.iter().map(|&p| res[p]).collect();
                    let r = net.route(&path, cap.unwrap_or(f64::INFINITY));
                    net.start(0.0, r, i as u32, 1e6);
                    started.push((r, path));
                }
                let mut routes = Vec::new();
                let mut flows = Vec::new();
                for (i, ((r, path), flow)) in started.into_iter().zip(&all).enumerate() {
                    if flow.2 {
                        routes.push((r, path));
                        flows.push((flow.0.clone(), flow.1));
                    } else {
                        prop_assert!(net.remove(1.0, r, i as u32));
                    }
                }
                let rate = |i: usize| net.rate(routes[i].0);
                let mut load = vec![0.0; caps.len()];
                for (i, (_, path)) in routes.iter().enumerate() {
                    let mut p = path.clone();
                    p.sort_unstable();
                    p.dedup();
                    for &r in &p {
                        load[r as usize] += rate(i);
                    }
                }
                for (r, &c) in caps.iter().enumerate() {
                    prop_assert!(load[r] <= c * (1.0 + 1e-9) + 1e-9, "resource {r} over: {} > {c}", load[r]);
                }
                for (i, (path, cap)) in flows.iter().enumerate() {
                    let x = rate(i);
                    prop_assert!(x > 0.0);
                    if cap.is_some_and(|c| (x - c).abs() <= 1e-9 * c) {
                        continue;
                    }
                    if x.is_infinite() {
                        prop_assert!(path.iter().all(|&p| caps[p].is_infinite()) && cap.is_none());
                        continue;
                    }
                    let bottleneck = path.iter().any(|&p| {
                        let saturated = (load[p] - caps[p]).abs() <= 1e-9 * caps[p].max(1.0);
                        let largest = routes.iter().enumerate().all(|(j, (_, q))| {
                            !q.contains(&res[p]) || rate(j) <= x * (1.0 + 1e-9)
                        });
                        saturated && largest
                    });
                    prop_assert!(bottleneck, "flow {i} at {x} has no bottleneck");
                }
            }
        }
    }
}
