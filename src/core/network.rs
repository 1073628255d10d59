//! The one network model of gridbed's simulators: flows over resources, each
//! flow's rate the max-min fair share over every resource it crosses (the
//! flow-level model of SimGrid's CM02, under WRENCH; OptorSim's and GridSim's
//! site links). A resource is a bandwidth: a site's network interface in one
//! direction (what it sends, what it receives), a shared link between sites,
//! the farm's store or an executor's local disk (seed 001). A flow is also
//! bounded by its own per-stream cap (seed 000: 1 MB/s a gridftp stream).
//!
//! Flows that cross the same resources under the same cap get the same rate
//! in the max-min allocation, so they are kept together as one [`Route`],
//! with a heap of the bytes served at which each of its flows ends. Routes
//! bounded at the same saturated resource also get the same rate, so they
//! run on one [`Share`]: a clock of bytes served per flow and a heap of its
//! routes' first ends. When a start or an end changes the rate at a
//! resource, that is one update of its share, however many routes it
//! bounds (a fan-in of a thousand streams into one receiver re-rates one
//! clock); only a route whose
//! bottleneck moves changes share. Starting or ending flows re-rates only
//! the routes whose rate it can move: their own, and those coupled to them
//! through resources that bound a flow before or after (a resource that
//! bounds no flow sets no max-min rate, so the routes beyond it keep
//! theirs), by progressive filling over flow counts, once per instant
//! however many flows started or ended in it; each share whose rate or
//! routes changed (those a route left included) is reported, and the
//! engine reschedules its next end. Where many routes share one resource
//! and nothing else (a fan-in of senders, each alone on its interface,
//! into one receiver), max-min there is a water level kept in two heaps
//! (`network/star.rs`): a start or an end costs a logarithm, not a
//! filling.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::Time;

mod star;

/// Index of a resource (a limited bandwidth) of a [`Network`].
pub type ResourceId = u32;
/// Index of a route (resources crossed and a per-flow cap) of a [`Network`].
pub type RouteId = u32;
/// Index of a share (one rate's clock) of a [`Network`].
pub type ShareId = u32;

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
    /// Where the route stands in each of its resources' `crossing` lists
    /// while it has flows (so that leaving one costs no search).
    slots: SmallVec<[u32; 6]>,
    /// Whether it is in its resources' `crossing` lists.
    coupled: bool,
    /// While it is: how many of its resources another route crosses too.
    shared: u8,
    /// Its registration in a star ([`star`]).
    place: star::Place,
    /// The rate its flows count for in their resources' `load`.
    rate: f64,
    /// Per-flow cap, bytes/s (∞: none).
    cap: f64,
    /// Flows by the bytes each flow of the route has been served when they
    /// end (the route's clock, see `offset`).
    active: BinaryHeap<Reverse<(Mark, K)>>,
    /// The share whose clock the route runs on: its flows have been served
    /// `share.served - offset` bytes each since the route began.
    share: ShareId,
    offset: f64,
    /// Bumped whenever the route's entry in its share's heap is replaced,
    /// so that older entries are recognised as stale.
    version: u32,
    /// The share of its own, for when its cap (or nothing, or being idle)
    /// sets its rate.
    own: ShareId,
}

impl<K: Ord + Copy> Route<K> {
    fn flows(&self) -> f64 {
        self.active.len() as f64
    }
}

/// A clock of bytes served per flow, shared by every route whose flows run
/// at one rate for one reason: frozen at the same saturated resource, or a
/// route alone (at its cap). A rate change at a resource is then one
/// update, however many routes it bounds, and only a route that changes
/// bottleneck moves (seed 000's streams into one receiver all wait on it).
#[derive(Debug)]
struct Share {
    /// Each flow's rate now.
    rate: f64,
    /// Bytes served per flow since the share began.
    served: f64,
    /// When `served` was last brought up to date.
    last: Time,
    /// Its routes, by the value of `served` at which their first flow ends
    /// (stale entries are skipped: see [`Route::version`]).
    ends: BinaryHeap<Reverse<(Mark, RouteId, u32)>>,
    /// Bumped by every [`Network::next_end`], so that an end scheduled before
    /// the share's rate or routes changed is recognised as stale.
    generation: u64,
    /// The batch in which it last went into `changed`.
    changed_in: u64,
    /// `ends`'s length after stale entries were last dropped: once it has
    /// doubled, they are dropped again (a share whose first end stays put
    /// while its routes come and go would keep them all).
    compacted: usize,
    /// Routes on it: a resource's share with none binds no flow there.
    members: u32,
}

impl Share {
    fn new() -> Self {
        Share {
            rate: 0.0,
            served: 0.0,
            last: 0.0,
            ends: BinaryHeap::new(),
            generation: 0,
            changed_in: u64::MAX,
            compacted: 0,
            members: 0,
        }
    }

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
    /// Per resource: what its flows take now, at their routes' `rate`.
    load: Vec<f64>,
    /// Per resource: the share of the routes it bounds.
    resource_share: Vec<ShareId>,
    /// Per resource: routes crossing it that share another resource too
    /// with some route; with none, it may be run as a star.
    entangled: Vec<u32>,
    /// Per resource: its water-filling when it is run as a star.
    stars: Vec<star::Star>,
    /// A star's buffer of routes that moved, kept between calls.
    moved: Vec<RouteId>,
    routes: Vec<Route<K>>,
    shares: Vec<Share>,
    index: FxHashMap<(SmallVec<[ResourceId; 6]>, u64), RouteId>,
    /// Routes whose flows changed in a way only a filling can re-rate, since
    /// `pending_at`: filled together at the next [`Network::take_changed`]
    /// (or any call at a later time), so that flows starting at one instant
    /// cost one filling.
    pending: Vec<RouteId>,
    pending_at: Time,
    /// Shares whose rate or routes changed since [`Network::take_changed`].
    changed: Vec<ShareId>,
    /// [`Network::schedule_changed`]'s buffer, kept between calls.
    taken: Vec<ShareId>,
    batch: u64,
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
    /// Per route: the rate it was frozen at (NaN: not yet), and the share
    /// that rate is of.
    frozen: Vec<f64>,
    frozen_share: Vec<ShareId>,
    /// The filling's capped routes by cap, smallest last.
    capped: Vec<RouteId>,
    /// Per route: the last settling round whose filling covered it.
    settled: Vec<u64>,
    round: u64,
    /// Per resource: the epoch in which all its routes joined the filling.
    expanded: Vec<u32>,
    /// The resources by fair share, tightest first (stale entries skipped).
    heap: BinaryHeap<Reverse<(Mark, ResourceId)>>,
}

impl<K: Ord + Copy> Default for Network<K> {
    fn default() -> Self {
        Network {
            capacity: Vec::new(),
            crossing: Vec::new(),
            load: Vec::new(),
            resource_share: Vec::new(),
            entangled: Vec::new(),
            stars: Vec::new(),
            moved: Vec::new(),
            routes: Vec::new(),
            shares: Vec::new(),
            index: FxHashMap::default(),
            pending: Vec::new(),
            pending_at: 0.0,
            changed: Vec::new(),
            batch: 0,
            rerated: 0,
            taken: Vec::new(),
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
        self.scratch.expanded.push(0);
        self.load.push(0.0);
        self.entangled.push(0);
        self.stars.push(star::Star::default());
        self.resource_share.push(self.shares.len() as ShareId);
        self.shares.push(Share::new());
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
        let own = self.shares.len() as ShareId;
        self.shares.push(Share {
            members: 1,
            ..Share::new()
        });
        self.routes.push(Route {
            slots: k.0.iter().map(|_| 0).collect(),
            coupled: false,
            shared: 0,
            place: star::Place::default(),
            resources: k.0.clone(),
            rate: 0.0,
            cap,
            active: BinaryHeap::new(),
            share: own,
            offset: 0.0,
            version: 0,
            own,
        });
        self.scratch.route_seen.push(0);
        self.scratch.frozen.push(f64::NAN);
        self.scratch.frozen_share.push(own);
        self.scratch.settled.push(0);
        self.index.insert(k, id);
        id
    }

    /// The limited resources `route` crosses, and its per-flow cap.
    pub fn route_of(&self, route: RouteId) -> (&[ResourceId], f64) {
        let r = &self.routes[route as usize];
        (&r.resources, r.cap)
    }

    /// Each flow's rate on `route` now (0 when it has none).
    pub fn rate(&mut self, route: RouteId) -> f64 {
        self.settle();
        let r = &self.routes[route as usize];
        if r.active.is_empty() {
            0.0
        } else {
            self.shares[r.share as usize].rate
        }
    }

    /// Bytes each flow of `route` has been served at `now` since the route
    /// began: a flow's own progress is this less its value when the flow
    /// started. The rate changes between two readings are integrated
    /// exactly, which is what lets an engine that reads it now and then
    /// (the live one's pullers) follow the model.
    pub fn clock(&mut self, now: Time, route: RouteId) -> f64 {
        self.settle();
        self.served(route, now)
    }

    /// Flows on `route`.
    pub fn flows(&self, route: RouteId) -> usize {
        self.routes[route as usize].active.len()
    }

    /// The share `route` runs on now, whose ends [`Network::next_end`] gives.
    pub fn share_of(&mut self, route: RouteId) -> ShareId {
        self.settle();
        self.routes[route as usize].share
    }

    /// Flow re-ratings so far: each time a route's rate changed, its flows.
    pub fn rerated(&self) -> u64 {
        self.rerated
    }

    /// Flow `id` of `bytes` starts on `route` at `now`. Rates change: hand
    /// [`Network::take_changed`]'s shares to [`Network::next_end`].
    pub fn start(&mut self, now: Time, route: RouteId, id: K, bytes: f64) {
        self.settle_before(now);
        let served = self.served(route, now);
        let r = &mut self.routes[route as usize];
        let was_idle = r.active.is_empty();
        let first = r.active.peek().map(|Reverse((m, _))| m.0);
        r.active.push(Reverse((Mark(served + bytes), id)));
        if was_idle {
            self.entered_route(route);
        }
        if first.is_none_or(|m| served + bytes < m) {
            self.push_end(route);
        }
        self.count_flows(route, 1.0);
        self.rerate(now, route);
    }

    /// Flow `id` leaves `route` at `now`, its bytes unsent (its source
    /// crashed); false when it was not there.
    pub fn remove(&mut self, now: Time, route: RouteId, id: K) -> bool {
        self.settle_before(now);
        let r = &mut self.routes[route as usize];
        let before = r.active.len();
        r.active.retain(|Reverse((_, k))| *k != id);
        let removed = before - r.active.len();
        if removed == 0 {
            return false;
        }
        self.push_end(route);
        self.count_flows(route, -(removed as f64));
        self.left_route(route);
        self.rerate(now, route);
        true
    }

    /// When the first flow of `share` ends at today's rate, and the
    /// generation to hand back to [`Network::take_ended`] then; `None` when
    /// the share has no flow. Any end computed earlier is stale from now on.
    pub fn next_end(&mut self, now: Time, share: ShareId) -> Option<(Time, u64)> {
        self.settle();
        let mark = self.first_end(share)?;
        let s = &mut self.shares[share as usize];
        s.generation += 1;
        s.advance(now);
        let dt = if s.rate.is_finite() && s.rate > 0.0 {
            ((mark - s.served) / s.rate).max(0.0)
        } else {
            0.0
        };
        Some((now + dt, s.generation))
    }

    /// The flows of `share` that ended by `now`, for the end scheduled as
    /// `generation`; `None` when that schedule is stale. At least the flow
    /// the schedule was for ends, so rounding never stalls a share. Rates
    /// change: see [`Network::take_changed`].
    pub fn take_ended(&mut self, now: Time, share: ShareId, generation: u64) -> Option<Vec<K>> {
        self.settle_before(now);
        if generation != self.shares[share as usize].generation {
            return None;
        }
        let s = &mut self.shares[share as usize];
        s.advance(now);
        let unlimited = !s.rate.is_finite();
        let reached = s.served + 1e-9 * s.served.abs().max(1.0) + 1e-6;
        let mut done = Vec::new();
        let mut touched: SmallVec<[(RouteId, usize); 4]> = SmallVec::new();
        while let Some(mark) = self.first_end(share) {
            if !(unlimited || mark <= reached || done.is_empty()) {
                break;
            }
            let Reverse((_, route, _)) = self.shares[share as usize].ends.pop().expect("peeked");
            let r = &mut self.routes[route as usize];
            let before = done.len();
            while let Some(Reverse((Mark(m), id))) = r.active.peek().copied() {
                if unlimited || m + r.offset <= reached || done.len() == before {
                    r.active.pop();
                    done.push(id);
                } else {
                    break;
                }
            }
            touched.push((route, done.len() - before));
            self.push_end(route);
        }
        for (route, n) in touched {
            self.count_flows(route, -(n as f64));
            self.left_route(route);
            self.rerate(now, route);
        }
        Some(done)
    }

    /// The shares whose rate or routes changed since the last call (each
    /// once, in the order they changed), into `out`: fills what is pending
    /// first.
    pub fn take_changed(&mut self, out: &mut Vec<ShareId>) {
        self.settle();
        out.clear();
        out.append(&mut self.changed);
        self.batch += 1;
    }

    /// What an engine does after its starts and ends at `now`: hands the
    /// next end of every share re-rated since the last call
    /// ([`Network::take_changed`], [`Network::next_end`]) to `schedule` as
    /// (time, share, generation), for [`Network::take_ended`] then.
    pub fn schedule_changed(&mut self, now: Time, mut schedule: impl FnMut(Time, ShareId, u64)) {
        let mut taken = std::mem::take(&mut self.taken);
        self.take_changed(&mut taken);
        for &share in &taken {
            if let Some((at, generation)) = self.next_end(now, share) {
                schedule(at, share, generation);
            }
        }
        self.taken = taken;
    }

    /// The clock value at which the first flow of `share` ends, stale heap
    /// entries dropped.
    fn first_end(&mut self, share: ShareId) -> Option<f64> {
        let s = &mut self.shares[share as usize];
        while let Some(&Reverse((Mark(m), route, version))) = s.ends.peek() {
            let r = &self.routes[route as usize];
            if r.version == version && r.share == share && !r.active.is_empty() {
                return Some(m);
            }
            s.ends.pop();
        }
        None
    }

    /// Bytes each flow of `route` has been served by `now`.
    fn served(&mut self, route: RouteId, now: Time) -> f64 {
        let r = &self.routes[route as usize];
        let s = &mut self.shares[r.share as usize];
        s.advance(now);
        s.served - r.offset
    }

    /// (Re)places `route`'s entry in its share's heap, after its first flow
    /// or its share changed.
    fn push_end(&mut self, route: RouteId) {
        let r = &mut self.routes[route as usize];
        r.version = r.version.wrapping_add(1);
        if let Some(&Reverse((Mark(m), _))) = r.active.peek() {
            let share = r.share;
            let s = &mut self.shares[share as usize];
            s.ends.push(Reverse((Mark(m + r.offset), route, r.version)));
            if s.ends.len() > 2 * s.compacted + 64 {
                let routes = &self.routes;
                s.ends.retain(|&Reverse((_, route, version))| {
                    let r = &routes[route as usize];
                    r.version == version && r.share == share && !r.active.is_empty()
                });
                s.compacted = s.ends.len();
            }
            self.mark_changed(share);
        }
    }

    fn mark_changed(&mut self, share: ShareId) {
        let s = &mut self.shares[share as usize];
        if s.changed_in != self.batch {
            s.changed_in = self.batch;
            self.changed.push(share);
        }
    }

    /// `route` runs at `rate` on `share` from `now` on.
    fn set_rate(&mut self, now: Time, route: RouteId, share: ShareId, rate: f64) {
        let r = &self.routes[route as usize];
        let old = if r.active.is_empty() {
            0.0
        } else {
            self.shares[r.share as usize].rate
        };
        let flows = r.active.len() as u64;
        if r.share != share {
            // The share left behind had this route's end scheduled, maybe
            // as its first: rescheduled, so that the end it had does not
            // end another route's flow early (at a tie, a route moves
            // between two shares at an unchanged rate).
            let old_share = r.share;
            if !r.active.is_empty() {
                self.mark_changed(old_share);
            }
            let served = self.served(route, now);
            self.shares[old_share as usize].members -= 1;
            let s = &mut self.shares[share as usize];
            s.advance(now);
            s.members += 1;
            let r = &mut self.routes[route as usize];
            r.share = share;
            r.offset = self.shares[share as usize].served - served;
            self.push_end(route);
        }
        let r = &mut self.routes[route as usize];
        if r.rate != rate {
            let more = r.flows() * (rate - r.rate);
            r.rate = rate;
            if more != 0.0 {
                for &res in &r.resources {
                    self.load[res as usize] += more;
                }
            }
        }
        let s = &mut self.shares[share as usize];
        if s.rate != rate {
            s.advance(now);
            s.rate = rate;
            self.mark_changed(share);
        }
        if old != rate && (old - rate).abs() > 1e-12 * old.abs() {
            self.rerated += flows;
        }
    }

    /// Fills what is pending, at the time it became pending.
    fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let now = self.pending_at;
        let mut pending = std::mem::take(&mut self.pending);
        self.scratch.round += 1;
        for &seed in &pending {
            // A filling covers its whole component: seeds it reached are done.
            if self.scratch.settled[seed as usize] != self.scratch.round {
                self.fill(now, seed);
            }
        }
        pending.clear();
        self.pending = pending;
    }

    /// Fills what is pending from before `now`: its rates held until `now`.
    fn settle_before(&mut self, now: Time) {
        if !self.pending.is_empty() && now > self.pending_at {
            self.settle();
        }
    }

    /// `route` has its first flow: it couples its resources.
    fn entered_route(&mut self, route: RouteId) {
        let r = &mut self.routes[route as usize];
        if r.coupled {
            return;
        }
        r.coupled = true;
        for (&res, slot) in r.resources.iter().zip(r.slots.iter_mut()) {
            let list = &mut self.crossing[res as usize];
            *slot = list.len() as u32;
            list.push(route);
        }
        let mut shared = 0;
        for i in 0..self.routes[route as usize].resources.len() {
            let list = &self.crossing[self.routes[route as usize].resources[i] as usize];
            let (len, first) = (list.len(), list[0]);
            if len == 2 {
                self.share_more(first, 1);
            }
            shared += u8::from(len >= 2);
        }
        self.share_more(route, shared as i8);
    }

    /// `route` shares `more` more (or fewer) of its resources with other
    /// routes; as it comes to share two or more, or fewer, it entangles its
    /// resources or no longer does.
    fn share_more(&mut self, route: RouteId, more: i8) {
        let r = &mut self.routes[route as usize];
        let was = r.shared >= 2;
        r.shared = r.shared.wrapping_add_signed(more);
        let is = r.shared >= 2;
        if was == is {
            return;
        }
        for i in 0..r.resources.len() {
            let res = self.routes[route as usize].resources[i] as usize;
            if is {
                self.entangled[res] += 1;
                if self.entangled[res] == 1 {
                    self.drop_star(res as ResourceId);
                }
            } else {
                self.entangled[res] -= 1;
            }
        }
    }

    /// A flow left `route`: an emptied route no longer couples its resources.
    fn left_route(&mut self, route: RouteId) {
        let r = &mut self.routes[route as usize];
        if !r.active.is_empty() || !r.coupled {
            return;
        }
        let shared = r.shared as i8;
        self.share_more(route, -shared);
        let r = &mut self.routes[route as usize];
        r.coupled = false;
        for i in 0..r.resources.len() {
            let (res, slot) = (
                self.routes[route as usize].resources[i],
                self.routes[route as usize].slots[i],
            );
            let list = &mut self.crossing[res as usize];
            list.swap_remove(slot as usize);
            if let Some(&moved) = list.get(slot as usize) {
                let m = &mut self.routes[moved as usize];
                let k = m
                    .resources
                    .iter()
                    .position(|&x| x == res)
                    .expect("crosses it");
                m.slots[k] = slot;
            }
            if list.len() == 1 {
                let alone = list[0];
                self.share_more(alone, -1);
            }
        }
    }

    /// `flows` more (or fewer, when negative) flows on `route`, in its
    /// resources' load at the route's rate.
    fn count_flows(&mut self, route: RouteId, flows: f64) {
        let r = &self.routes[route as usize];
        let more = flows * r.rate;
        if more != 0.0 {
            for &res in &r.resources {
                self.load[res as usize] += more;
            }
        }
    }

    /// Whether a flow crossing `res` is bounded there: some route runs on
    /// its share.
    fn binds(&self, res: ResourceId) -> bool {
        self.shares[self.resource_share[res as usize] as usize].members > 0
    }

    /// Re-rates after `seed`'s flows changed at `now`. Where none of its
    /// resources bounds a flow and its flows fit at their cap (or it has
    /// none left), no other rate moves and its own is its cap (or 0): set
    /// at once (seed 000's 1 MB/s gridftp streams into 100 MB/s
    /// interfaces). Otherwise it is filled with whatever else changes at
    /// `now`, at the next reading.
    fn rerate(&mut self, now: Time, seed: RouteId) {
        if let Some(res) = self.star_of(seed) {
            self.star_rerate(now, res, seed);
            return;
        }
        let r = &self.routes[seed as usize];
        let rate = if r.active.is_empty() { 0.0 } else { r.cap };
        let more = r.flows() * (rate - r.rate);
        if rate.is_finite()
            && r.resources.iter().all(|&res| {
                let i = res as usize;
                !self.binds(res) && self.load[i] + more <= self.capacity[i] * (1.0 - MARGIN)
            })
        {
            let own = r.own;
            self.set_rate(now, seed, own, rate);
            self.mark_changed(own);
            return;
        }
        if let Some(res) = self.star_to_build(seed) {
            self.star_rerate(now, res, seed);
            return;
        }
        self.pending_at = now;
        self.pending.push(seed);
    }

    /// Re-rates, at `now`, the routes a change of `seed`'s flows can move,
    /// by progressive filling. Those are `seed` and, transitively, every
    /// route on a resource that bounds a flow: before the change (its share
    /// has routes) or after it (the filling fills it). A resource that
    /// bounds no flow couples none: the routes beyond it keep their rates
    /// (a max-min rate is set only where it is bounded), and it enters the
    /// filling with what they leave of it. Should the filling fill it after
    /// all, its routes join and the filling starts again. A thousand
    /// senders each limited by its own interface, into a receiver they do
    /// not fill, so re-rate one route per start or end, not a thousand.
    fn fill(&mut self, now: Time, seed: RouteId) {
        let mut s = std::mem::take(&mut self.scratch);
        s.epoch = s.epoch.wrapping_add(1);
        if s.epoch == 0 {
            s.route_seen.iter_mut().for_each(|x| *x = 0);
            s.resource_seen.iter_mut().for_each(|x| *x = 0);
            s.expanded.iter_mut().for_each(|x| *x = 0);
            s.epoch = 1;
        }
        s.routes.clear();
        s.resources.clear();
        s.routes.push(seed);
        s.route_seen[seed as usize] = s.epoch;
        let mut grown = 0;
        // Routes filled over the passes so far, and whether the filling has
        // taken its whole component.
        let (mut filled, mut whole) = (0, false);
        loop {
            // The resources of the routes taken; all the routes of those
            // that bound a flow.
            while grown < s.routes.len() {
                let route = s.routes[grown];
                grown += 1;
                for &res in &self.routes[route as usize].resources {
                    if s.resource_seen[res as usize] == s.epoch {
                        continue;
                    }
                    s.resource_seen[res as usize] = s.epoch;
                    s.resources.push(res);
                    if whole || self.binds(res) {
                        s.take_all(&self.crossing, res);
                    }
                }
            }
            // Being selective pays while the routes taken are few (a sender
            // alone on its interface). Past that, the filling takes its
            // whole component at once: with that many routes bound together,
            // a pass would likely find a resource it fills after all and
            // start again.
            if !whole && filled + s.routes.len() > SELECTIVE {
                whole = true;
                for i in 0..s.resources.len() {
                    let res = s.resources[i];
                    if s.expanded[res as usize] != s.epoch {
                        s.take_all(&self.crossing, res);
                    }
                }
                continue;
            }
            filled += s.routes.len();
            let Some(res) = s.progressive_filling(self) else {
                break;
            };
            s.take_all(&self.crossing, res);
        }
        // The stars of the routes re-rated are no longer run as such.
        for &route in &s.routes {
            if let Some(res) = self.registered(route) {
                self.drop_star(res);
            }
        }
        // Each route onto the share it froze at, at its rate.
        for &route in &s.routes {
            let (share, rate) = (s.frozen_share[route as usize], s.frozen[route as usize]);
            self.set_rate(now, route, share, rate);
        }
        // Where every route was re-rated, the load is summed anew, so that
        // rounding does not pile up in it.
        for &res in &s.resources {
            if s.expanded[res as usize] == s.epoch {
                self.load[res as usize] = self.crossing[res as usize]
                    .iter()
                    .map(|&r| self.routes[r as usize].flows() * self.routes[r as usize].rate)
                    .sum();
            }
        }
        self.scratch = s;
    }
}

/// How many routes, over its passes, a filling takes selectively before it
/// takes its whole component.
const SELECTIVE: usize = 64;

/// What is left of a resource that bounds no flow, kept back from the
/// routes of a filling: a resource they would fill to within this share of
/// its bandwidth (rounding in its load included) joins the filling whole.
const MARGIN: f64 = 1e-9;

impl Scratch {
    /// Every route on `res` joins the filling.
    fn take_all(&mut self, crossing: &[Vec<RouteId>], res: ResourceId) {
        self.expanded[res as usize] = self.epoch;
        for &other in &crossing[res as usize] {
            if self.route_seen[other as usize] != self.epoch {
                self.route_seen[other as usize] = self.epoch;
                self.routes.push(other);
            }
        }
    }

    /// Progressive filling of `self.routes` over `self.resources`: the
    /// tightest resource's fair share (or the smallest cap, when lower)
    /// freezes the flows it bounds. A resource not taken whole gives what
    /// the routes beyond the filling leave of it; when it is the tightest,
    /// the filling stops and names it.
    fn progressive_filling<K: Ord + Copy>(&mut self, net: &Network<K>) -> Option<ResourceId> {
        let routes = &net.routes;
        let epoch = self.epoch;
        for &res in &self.resources {
            let (i, cap) = (res as usize, net.capacity[res as usize]);
            self.left[i] = if self.expanded[i] == epoch {
                cap
            } else {
                cap * (1.0 - MARGIN) - net.load[i]
            };
            self.count[i] = 0.0;
        }
        let mut unfrozen = 0usize;
        self.capped.clear();
        for &route in &self.routes {
            let r = &routes[route as usize];
            self.settled[route as usize] = self.round;
            self.frozen[route as usize] = f64::NAN;
            self.frozen_share[route as usize] = r.own;
            let n = r.flows();
            if n == 0.0 {
                self.frozen[route as usize] = 0.0;
                continue;
            }
            unfrozen += 1;
            for &res in &r.resources {
                self.count[res as usize] += n;
                if self.expanded[res as usize] != epoch {
                    self.left[res as usize] += n * r.rate;
                }
            }
            if r.cap.is_finite() {
                self.capped.push(route);
            }
        }
        self.capped
            .sort_unstable_by(|&a, &b| routes[b as usize].cap.total_cmp(&routes[a as usize].cap));
        let fair =
            |s: &Scratch, res: ResourceId| s.left[res as usize].max(0.0) / s.count[res as usize];
        let mut heap: Vec<Reverse<(Mark, ResourceId)>> = std::mem::take(&mut self.heap).into_vec();
        heap.clear();
        heap.extend(
            self.resources
                .iter()
                .filter(|&&res| self.count[res as usize] > 0.0)
                .map(|&res| Reverse((Mark(fair(self, res)), res))),
        );
        let mut heap = BinaryHeap::from(heap);
        let mut found = None;
        while unfrozen > 0 {
            while let Some(&c) = self.capped.last() {
                if self.frozen[c as usize].is_nan() {
                    break;
                }
                self.capped.pop();
            }
            // A resource's fair share only grows as flows freeze (at the
            // lowest level there is): an entry found below it is put back
            // at it, one entry a resource.
            let tightest = loop {
                let Some(&Reverse((Mark(was), res))) = heap.peek() else {
                    break None;
                };
                if self.count[res as usize] <= 0.0 {
                    heap.pop();
                    continue;
                }
                let share = fair(self, res);
                if share > was {
                    heap.pop();
                    heap.push(Reverse((Mark(share), res)));
                    continue;
                }
                break Some((share, res));
            };
            let cap = self.capped.last().map(|&c| (routes[c as usize].cap, c));
            match (tightest, cap) {
                (_, Some((cap, c))) if tightest.is_none_or(|(t, _)| cap <= t) => {
                    self.freeze(routes, c, cap, routes[c as usize].own);
                    self.capped.pop();
                    unfrozen -= 1;
                }
                (Some((share, res)), _) => {
                    if self.expanded[res as usize] != epoch {
                        found = Some(res);
                        break;
                    }
                    heap.pop();
                    let at = net.resource_share[res as usize];
                    for &route in &net.crossing[res as usize] {
                        if self.frozen[route as usize].is_nan() {
                            self.freeze(routes, route, share, at);
                            unfrozen -= 1;
                        }
                    }
                    // Rounding may leave a sliver of flows: none cross it now.
                    self.count[res as usize] = 0.0;
                }
                (None, _) => {
                    // Only routes with no limited resource and no cap remain.
                    for &route in &self.routes {
                        if self.frozen[route as usize].is_nan() {
                            self.frozen[route as usize] = f64::INFINITY;
                        }
                    }
                    unfrozen = 0;
                }
            }
        }
        self.heap = heap;
        found
    }

    /// `route`'s flows run at `rate` on `share`: what they take is no longer
    /// left to the others on its resources.
    fn freeze<K>(&mut self, routes: &[Route<K>], route: RouteId, rate: f64, share: ShareId) {
        self.frozen[route as usize] = rate;
        self.frozen_share[route as usize] = share;
        let r = &routes[route as usize];
        let n = r.active.len() as f64;
        for &res in &r.resources {
            let i = res as usize;
            self.left[i] -= n * rate;
            self.count[i] -= n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs every route to idle from `now`; each flow's end time.
    fn drain(net: &mut Network<u32>, mut now: Time) -> Vec<(u32, Time)> {
        let mut due: Vec<(Time, ShareId, u64)> = Vec::new();
        let mut ends = Vec::new();
        net.schedule_changed(now, |at, r, g| due.push((at, r, g)));
        // Every share, in case it was set up before the first change.
        for r in 0..net.shares.len() as ShareId {
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
                net.schedule_changed(now, |at, r, g| due.push((at, r, g)));
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

    #[test]
    fn a_routes_clock_integrates_every_rate_it_ran_at() {
        // 100 B/s: alone for 1 s, shared by two on other routes for 2 s
        // (moving share as the second flow comes), then alone again.
        let mut net = Network::new();
        let out = net.add_resource(100.0);
        let (a, b) = (net.add_resource(1e9), net.add_resource(1e9));
        let (ra, rb) = (
            net.route(&[out, a], f64::INFINITY),
            net.route(&[out, b], 1e9),
        );
        net.start(0.0, ra, 1, 1000.0);
        let c0 = net.clock(0.0, ra);
        assert!(close(net.clock(1.0, ra) - c0, 100.0));
        net.start(1.0, rb, 2, 100.0);
        assert!(close(net.clock(2.0, ra) - c0, 150.0));
        assert!(net.remove(3.0, rb, 2));
        assert!(close(net.clock(3.0, ra) - c0, 200.0));
        assert!(close(net.clock(4.5, ra) - c0, 350.0));
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
    fn a_receiver_of_many_senders_is_water_filled() {
        // 50 senders of 0.2 B/s and 50 of 100 B/s into 65 B/s: the slow
        // ones at their interface, the fast ones at (65 - 10) / 50 = 1.1
        // B/s; with a fast one capped at 0.5 a flow, the others at 1.11.
        // A second flow on a slow sender halves its limit to 0.1; then the
        // slow ones end, and the fast ones share what the capped leaves.
        let mut net = Network::new();
        let sink = net.add_resource(65.0);
        let routes: Vec<RouteId> = (0..100)
            .map(|i| {
                let out = net.add_resource(if i < 50 { 0.2 } else { 100.0 });
                net.route(&[out, sink], f64::INFINITY)
            })
            .collect();
        for (i, &r) in routes.iter().enumerate() {
            net.start(0.0, r, i as u32, 1e6);
        }
        assert!(close(net.rate(routes[0]), 0.2));
        assert!(close(net.rate(routes[99]), 1.1));
        let out = net.route_of(routes[98]).0[0];
        let capped = net.route(&[out, sink], 0.5);
        net.start(0.0, capped, 2000, 1e6);
        assert!(close(net.rate(capped), 0.5));
        assert!(close(net.rate(routes[99]), (55.0 - 0.5) / 50.0));
        net.start(0.0, routes[0], 1000, 1e6);
        assert!(close(net.rate(routes[0]), 0.1));
        assert!(close(net.rate(routes[99]), (55.0 - 0.5) / 50.0));
        for (i, &r) in routes.iter().enumerate().take(50) {
            assert!(net.remove(0.0, r, i as u32));
        }
        assert!(net.remove(0.0, routes[0], 1000));
        assert!(net.remove(0.0, capped, 2000));
        assert!(close(net.rate(routes[99]), 65.0 / 50.0));
        // Every fast flow ends at once, 1e6 / 1.3 s on.
        let ends = drain(&mut net, 0.0);
        assert_eq!(ends.len(), 50);
        assert!(ends.iter().all(|&(_, t)| close(t, 1e6 / 1.3)), "{ends:?}");
    }

    #[test]
    fn a_route_that_moves_share_at_a_tie_ends_no_other_flow() {
        // Issue 60's case (MB, MB/s): when f5 ends at 12.975 s, f0 moves
        // from r's share to s's at the same rate; the end r's share had
        // scheduled must not end f0, which still has 1.83 MB to send.
        let mut net = Network::new();
        let (s, r, l, q) = (
            net.add_resource(10.0),
            net.add_resource(5.0),
            net.add_resource(200.0),
            net.add_resource(25.0),
        );
        let flows: [(f64, f64, &[ResourceId]); 6] = [
            (0.0, 80.0, &[s]),
            (3.0, 600.0, &[s]),
            (6.0, 180.0, &[r, l]),
            (10.5, 50.0, &[l, q]),
            (12.25, 200.0, &[s]),
            (12.375, 1.5, &[s, r]),
        ];
        let mut due: Vec<(Time, ShareId, u64)> = Vec::new();
        let mut ends = [f64::NAN; 6];
        let mut next = 0;
        while next < flows.len() || !due.is_empty() {
            let first = (0..due.len()).min_by(|&a, &b| due[a].0.total_cmp(&due[b].0));
            match first {
                Some(d) if next == flows.len() || due[d].0 < flows[next].0 => {
                    let (at, share, g) = due.swap_remove(d);
                    for id in net.take_ended(at, share, g).unwrap_or_default() {
                        ends[id as usize] = at;
                    }
                    net.schedule_changed(at, |t, sh, g| due.push((t, sh, g)));
                }
                _ => {
                    let (at, bytes, path) = flows[next];
                    let route = net.route(path, f64::INFINITY);
                    net.start(at, route, next as u32, bytes);
                    net.schedule_changed(at, |t, sh, g| due.push((t, sh, g)));
                    next += 1;
                }
            }
        }
        let by_hand = [13.525, 88.15, 42.3, 12.5, 52.775, 12.975];
        for (i, (&got, &want)) in ends.iter().zip(&by_hand).enumerate() {
            assert!(close(got, want), "f{i} ends at {got}, by hand at {want}");
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
        assert!(changed.contains(&net.share_of(ra)), "{changed:?}");
        net.start(0.0, rb, 2, 10.0);
        net.take_changed(&mut changed);
        assert!(changed.contains(&net.share_of(rb)), "{changed:?}");
        assert!(
            !changed.contains(&net.share_of(ra)),
            "a's flows do not share b"
        );
        assert!(close(net.rate(ra), 10.0));
    }

    #[test]
    fn flows_bounded_at_one_resource_run_on_one_share() {
        // Ten sources into one receiver: one share, one update per change.
        let mut net: Network<u32> = Network::new();
        let sink = net.add_resource(10.0);
        let routes: Vec<RouteId> = (0..10)
            .map(|_| {
                let src = net.add_resource(100.0);
                net.route(&[src, sink], f64::INFINITY)
            })
            .collect();
        for (i, &r) in routes.iter().enumerate() {
            net.start(0.0, r, i as u32, 10.0 * (i + 1) as f64);
        }
        let mut changed = Vec::new();
        net.take_changed(&mut changed);
        let share = net.share_of(routes[0]);
        assert!(routes.iter().all(|&r| net.share_of(r) == share));
        let (at, g) = net.next_end(0.0, share).unwrap();
        assert!(close(at, 10.0), "10 B at 1 B/s each");
        assert_eq!(net.take_ended(at, share, g), Some(vec![0]));
        net.take_changed(&mut changed);
        assert_eq!(changed, vec![share], "the other nine: one share's rate");
        let (at, _) = net.next_end(at, share).unwrap();
        assert!(close(at, 10.0 + 10.0 * 9.0 / 10.0), "10 B more at 10/9 B/s");
    }

    #[test]
    fn a_change_makes_the_scheduled_end_stale() {
        let mut net = Network::new();
        let link = net.add_resource(10.0);
        let r = net.route(&[link], f64::INFINITY);
        net.start(0.0, r, 1, 100.0);
        let share = net.share_of(r);
        let (at, old) = net.next_end(0.0, share).unwrap();
        assert_eq!(at, 10.0);
        net.start(5.0, r, 2, 10.0);
        let (at, new) = net.next_end(5.0, share).unwrap();
        assert_eq!(at, 7.0, "50 B left of 1, 10 of 2, at 5 B/s each");
        assert_eq!(net.take_ended(at, share, old), None);
        assert_eq!(net.take_ended(at, share, new), Some(vec![2]));
    }

    #[test]
    fn unlimited_flows_end_at_once_and_removed_ones_free_their_share() {
        let mut net = Network::new();
        let free = net.add_resource(f64::INFINITY);
        let r = net.route(&[free], f64::INFINITY);
        net.start(1.0, r, 1, 5.0);
        net.start(1.0, r, 2, 7.0);
        let share = net.share_of(r);
        let (at, g) = net.next_end(1.0, share).unwrap();
        assert_eq!(at, 1.0);
        assert_eq!(net.take_ended(at, share, g), Some(vec![1, 2]));
        assert_eq!(net.next_end(1.0, share), None);

        let link = net.add_resource(10.0);
        let l = net.route(&[link], f64::INFINITY);
        net.start(0.0, l, 3, 100.0);
        net.start(0.0, l, 4, 100.0);
        assert!(net.remove(2.0, l, 4));
        assert!(!net.remove(2.0, l, 4));
        assert!(close(net.rate(l), 10.0));
        let share = net.share_of(l);
        let (at, _) = net.next_end(2.0, share).unwrap();
        assert!(close(at, 2.0 + 90.0 / 10.0));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// A flow: the resources it crosses (by index), its cap, and whether
        /// it stays (or is removed after all have started).
        type FlowSpec = (Vec<usize>, Option<f64>, bool);

        /// `n` resources' capacities, one in five unlimited.
        fn capacities(n: usize) -> impl Strategy<Value = Vec<f64>> {
            proptest::collection::vec(prop_oneof![4 => 1.0f64..100.0, 1 => Just(f64::INFINITY)], n)
        }

        /// A random network: resources, and flows.
        fn network() -> impl Strategy<Value = (Vec<f64>, Vec<FlowSpec>)> {
            (1usize..7).prop_flat_map(|nres| {
                let flow = (
                    proptest::collection::vec(0..nres, 1..4),
                    proptest::option::weighted(0.3, 0.5f64..60.0),
                    proptest::bool::weighted(0.7),
                );
                (capacities(nres), proptest::collection::vec(flow, 1..25))
            })
        }

        /// A flow with a start time: resources, cap, start, bytes.
        type Timed = (Vec<usize>, Option<f64>, f64, f64);

        fn timed() -> impl Strategy<Value = (Vec<f64>, Vec<Timed>)> {
            (1usize..6).prop_flat_map(|nres| {
                let flow = (
                    proptest::collection::vec(0..nres, 1..4),
                    proptest::option::weighted(0.3, 0.5f64..60.0),
                    prop_oneof![1 => Just(0.0), 2 => 0.0f64..20.0],
                    1.0f64..500.0,
                );
                (capacities(nres), proptest::collection::vec(flow, 1..20))
            })
        }

        /// The max-min rates of `flows` (by resources and cap) from
        /// scratch, by progressive filling one level at a time.
        fn max_min(caps: &[f64], flows: &[(Vec<usize>, f64)]) -> Vec<f64> {
            let mut rate = vec![f64::NAN; flows.len()];
            let mut left = caps.to_vec();
            loop {
                let open: Vec<usize> = (0..flows.len()).filter(|&i| rate[i].is_nan()).collect();
                if open.is_empty() {
                    return rate;
                }
                // The level where the next resource saturates or cap binds.
                let mut level = f64::INFINITY;
                for (r, &l) in left.iter().enumerate() {
                    let n = open.iter().filter(|&&i| flows[i].0.contains(&r)).count();
                    if n > 0 && caps[r].is_finite() {
                        level = level.min(l.max(0.0) / n as f64);
                    }
                }
                for &i in &open {
                    level = level.min(flows[i].1);
                }
                for &i in &open {
                    let bound_here = flows[i].1 <= level
                        || flows[i].0.iter().any(|&r| {
                            let n = open.iter().filter(|&&j| flows[j].0.contains(&r)).count();
                            caps[r].is_finite()
                                && left[r].max(0.0) / n as f64 <= level * (1.0 + 1e-12)
                        });
                    if bound_here || level.is_infinite() {
                        rate[i] = level;
                    }
                }
                for &i in &open {
                    if !rate[i].is_nan() {
                        for &r in &flows[i].0 {
                            left[r] -= rate[i];
                        }
                    }
                }
            }
        }

        /// Every flow's end by a from-scratch re-allocation at each event.
        fn reference(caps: &[f64], all: &[Timed]) -> Vec<f64> {
            let mut left: Vec<f64> = all.iter().map(|f| f.3).collect();
            let mut end = vec![f64::NAN; all.len()];
            let mut now = 0.0;
            loop {
                let active: Vec<usize> = (0..all.len())
                    .filter(|&i| all[i].2 <= now && end[i].is_nan())
                    .collect();
                let specs: Vec<(Vec<usize>, f64)> = active
                    .iter()
                    .map(|&i| {
                        let mut p = all[i].0.clone();
                        p.sort_unstable();
                        p.dedup();
                        (p, all[i].1.unwrap_or(f64::INFINITY))
                    })
                    .collect();
                let rates = max_min(caps, &specs);
                let next_start = all
                    .iter()
                    .map(|f| f.2)
                    .filter(|&t| t > now)
                    .fold(f64::INFINITY, f64::min);
                let next_end = active
                    .iter()
                    .zip(&rates)
                    .map(|(&i, &x)| now + left[i] / x)
                    .fold(f64::INFINITY, f64::min);
                let next = next_start.min(next_end);
                if next.is_infinite() {
                    return end;
                }
                for (&i, &x) in active.iter().zip(&rates) {
                    left[i] -= x * (next - now);
                    if left[i] <= 1e-9 * all[i].3 || x.is_infinite() {
                        end[i] = next;
                    }
                }
                now = next;
            }
        }

        proptest! {
            /// Flows that start at random times end when an allocation
            /// made from scratch at every start and end has them end.
            #[test]
            fn ends_agree_with_a_from_scratch_allocation((caps, all) in timed()) {
                let mut net: Network<u32> = Network::new();
                let res: Vec<_> = caps.iter().map(|&c| net.add_resource(c)).collect();
                let routes: Vec<RouteId> = all
                    .iter()
                    .map(|(path, cap, _, _)| {
                        let path: Vec<_> = path.iter().map(|&p| res[p]).collect();
                        net.route(&path, cap.unwrap_or(f64::INFINITY))
                    })
                    .collect();
                let mut order: Vec<usize> = (0..all.len()).collect();
                order.sort_by(|&a, &b| all[a].2.total_cmp(&all[b].2));
                let mut due: Vec<(Time, ShareId, u64)> = Vec::new();
                let mut ends = vec![f64::NAN; all.len()];
                let mut next = 0;
                loop {
                    let start = order.get(next).map(|&i| all[i].2);
                    let first = (0..due.len()).min_by(|&a, &b| due[a].0.total_cmp(&due[b].0));
                    let now = match (start, first) {
                        (None, None) => break,
                        (Some(s), Some(d)) if s <= due[d].0 => s,
                        (Some(s), None) => s,
                        (_, Some(d)) => {
                            let (at, share, g) = due.swap_remove(d);
                            for id in net.take_ended(at, share, g).unwrap_or_default() {
                                ends[id as usize] = at;
                            }
                            net.schedule_changed(at, |t, sh, g| due.push((t, sh, g)));
                            continue;
                        }
                    };
                    while order.get(next).is_some_and(|&i| all[i].2 <= now) {
                        let i = order[next];
                        next += 1;
                        net.start(now, routes[i], i as u32, all[i].3);
                    }
                    net.schedule_changed(now, |t, sh, g| due.push((t, sh, g)));
                }
                let want = reference(&caps, &all);
                for (i, (&got, &w)) in ends.iter().zip(&want).enumerate() {
                    prop_assert!(
                        (got - w).abs() <= 1e-6 * w.max(1.0),
                        "flow {i} ends at {got}, from scratch at {w}: {all:?}"
                    );
                }
            }

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
                let rates: Vec<f64> = routes.iter().map(|(r, _)| net.rate(*r)).collect();
                let rate = |i: usize| rates[i];
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
