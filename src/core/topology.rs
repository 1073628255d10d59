//! Where a transfer's bytes go: the grid's network as both engines see it.
//! Every site has a network interface, full duplex (what it sends and what
//! it receives are each limited); named shared links join sites toward the
//! core of the grid, as Grid3's and OSG's campuses sat behind their uplinks.
//! Each site lists the links its traffic crosses toward the core (its
//! `path`), and the paths form a tree: a transfer from A to B crosses A's
//! out, A's links up to where the two paths meet, B's links down from there,
//! and B's in. The links both paths share from the meeting point on are not
//! crossed, so two sites of one campus meet below the campus uplink.
//!
//! The simulator turns these into resources of a
//! [`Network`](super::network::Network), the live engine into token-bucket
//! shapers and the netbed into qdiscs; which links a transfer crosses is
//! decided here, once.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::SiteId;
use super::network::{Network, ResourceId, RouteId};

/// A rate that may be unlimited (∞), as JSON: `null` for ∞, which JSON has
/// no number for.
pub mod unlimited {
    use serde::{Deserialize, Deserializer, Serializer};

    /// ∞ as `null`.
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match v.is_finite() {
            true => s.serialize_f64(*v),
            false => s.serialize_none(),
        }
    }

    /// `null` as ∞.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// Index of a shared link in [`Topology::links`].
pub type LinkId = usize;

/// A named link shared by the sites behind it, full duplex.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Its name in the testbed.
    pub name: String,
    /// Bytes/s in each direction (nominal; ∞: the kernel's to shape).
    #[serde(with = "unlimited")]
    pub bandwidth: f64,
    /// Seconds it adds before a transfer's first byte (nominal).
    pub latency: f64,
}

/// The shared links and every site's path toward the core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// The links.
    pub links: Vec<Link>,
    /// Per site: the links its traffic crosses toward the core, nearest
    /// first.
    pub paths: Vec<Vec<LinkId>>,
    /// The part of an interface's or a link's rate that carries a file's
    /// bytes, the rest being the protocols' headers (TCP/IP over Ethernet:
    /// 1,448 of every 1,514 bytes, 0.956). 1 unless a testbed sets it, as
    /// fitted by `gridbed validate --netbed`; it does not touch the
    /// per-stream cap, which is a rate of file bytes.
    #[serde(default = "whole")]
    pub protocol_efficiency: f64,
}

fn whole() -> f64 {
    1.0
}

impl Default for Topology {
    fn default() -> Self {
        Topology::flat(0)
    }
}

/// Why a set of paths is no tree.
#[derive(Debug, Clone, PartialEq)]
pub struct NotATree {
    /// The site whose path disagrees with an earlier one.
    pub site: SiteId,
    /// What disagrees.
    pub message: String,
}

impl Topology {
    /// No links: every site on its own interface only, for `sites` sites.
    pub fn flat(sites: usize) -> Topology {
        Topology {
            links: Vec::new(),
            paths: vec![Vec::new(); sites],
            protocol_efficiency: 1.0,
        }
    }

    /// Checks that the paths form a tree: a link appears once in a path,
    /// and every path that crosses a link goes on from it the same way.
    pub fn check(&self) -> Result<(), NotATree> {
        // The link each link leads to (None: the core), as first seen.
        let mut next: Vec<Option<(Option<LinkId>, SiteId)>> = vec![None; self.links.len()];
        for (site, path) in self.paths.iter().enumerate() {
            for (i, &l) in path.iter().enumerate() {
                if path[..i].contains(&l) {
                    return Err(NotATree {
                        site,
                        message: format!("link `{}` appears twice", self.links[l].name),
                    });
                }
                let after = path.get(i + 1).copied();
                match next[l] {
                    None => next[l] = Some((after, site)),
                    Some((seen, _)) if seen == after => {}
                    Some((seen, _)) => {
                        let name = |x: Option<LinkId>| {
                            x.map_or("the core".to_string(), |x| {
                                format!("`{}`", self.links[x].name)
                            })
                        };
                        return Err(NotATree {
                            site,
                            message: format!(
                                "link `{}` leads to {} here but to {} in an earlier site's path: \
                                 the paths must form a tree",
                                self.links[l].name,
                                name(after),
                                name(seen)
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The links a transfer from `from` to `to` crosses: `from`'s up to
    /// where the paths meet, then `to`'s down from there.
    pub fn crossed(&self, from: SiteId, to: SiteId) -> SmallVec<[LinkId; 6]> {
        let (up, down) = self.up_down(from, to);
        up.iter().chain(down.iter().rev()).copied().collect()
    }

    /// The links a transfer from `from` to `to` crosses going up (toward
    /// the core, `from`'s nearest first) and going down (`to`'s, nearest
    /// first): a link is full duplex, so the two directions are two
    /// bandwidths.
    pub fn up_down(&self, from: SiteId, to: SiteId) -> (&[LinkId], &[LinkId]) {
        let (a, b) = (&self.paths[from], &self.paths[to]);
        let meet_a = a.iter().position(|l| b.contains(l)).unwrap_or(a.len());
        let meet_b = b.iter().position(|l| a.contains(l)).unwrap_or(b.len());
        (&a[..meet_a], &b[..meet_b])
    }

    /// The seconds the links between `from` and `to` add before the first
    /// byte (nominal).
    pub fn latency(&self, from: SiteId, to: SiteId) -> f64 {
        self.crossed(from, to)
            .iter()
            .map(|&l| self.links[l].latency)
            .sum()
    }

    /// The topology of `keep`'s sites, in that order (a sweep's subset);
    /// `None` is a site on no link.
    pub fn subset(&self, keep: &[Option<SiteId>]) -> Topology {
        Topology {
            links: self.links.clone(),
            paths: keep
                .iter()
                .map(|s| s.map(|s| self.paths[s].clone()).unwrap_or_default())
                .collect(),
            protocol_efficiency: self.protocol_efficiency,
        }
    }
}

/// A site's network interface and file server as the grid's transfers see
/// it (nominal B/s, ∞: unlimited).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interface {
    /// What it sends, all streams together.
    pub out: f64,
    /// What it receives, all streams together.
    pub inbound: f64,
    /// Each stream it serves.
    pub stream_cap: f64,
}

/// The grid as resources of a [`Network`]: every site's out and in, every
/// link; a transfer's route found once per pair of sites.
#[derive(Debug)]
pub struct GridNetwork<K> {
    /// The flows and their rates.
    pub net: Network<K>,
    topology: Topology,
    out: Vec<ResourceId>,
    inbound: Vec<ResourceId>,
    caps: Vec<f64>,
    /// Per link: its up and its down direction.
    links: Vec<[ResourceId; 2]>,
    routes: FxHashMap<(SiteId, SiteId), (RouteId, f64)>,
}

impl<K: Ord + Copy> GridNetwork<K> {
    /// The network of `sites` (by site id) joined by `topology`.
    /// The interfaces' and links' rates carry file bytes at the topology's
    /// protocol efficiency.
    pub fn new(topology: &Topology, sites: &[Interface]) -> Self {
        let mut net = Network::new();
        let mut add = |rate: f64| net.add_resource(rate * topology.protocol_efficiency);
        let out = sites.iter().map(|s| add(s.out)).collect();
        let inbound = sites.iter().map(|s| add(s.inbound)).collect();
        let links = topology
            .links
            .iter()
            .map(|l| [add(l.bandwidth), add(l.bandwidth)])
            .collect();
        GridNetwork {
            net,
            topology: topology.clone(),
            out,
            inbound,
            caps: sites.iter().map(|s| s.stream_cap).collect(),
            links,
            routes: FxHashMap::default(),
        }
    }

    /// The route of a transfer from `from` to `to` (the source's out and
    /// stream cap, the links crossed, the receiver's in) and the seconds its
    /// links add before the first byte.
    pub fn route(&mut self, from: SiteId, to: SiteId) -> (RouteId, f64) {
        if let Some(&r) = self.routes.get(&(from, to)) {
            return r;
        }
        let (up, down) = self.topology.up_down(from, to);
        let mut resources: SmallVec<[ResourceId; 8]> = SmallVec::new();
        resources.push(self.out[from]);
        resources.extend(up.iter().map(|&l| self.links[l][0]));
        resources.extend(down.iter().map(|&l| self.links[l][1]));
        resources.push(self.inbound[to]);
        let route = self.net.route(&resources, self.caps[from]);
        let latency = self.topology.latency(from, to);
        self.routes.insert((from, to), (route, latency));
        (route, latency)
    }

    /// What resource `r` of [`GridNetwork::net`] is.
    pub fn resource(&self, r: ResourceId) -> Option<Resource> {
        let find = |v: &[ResourceId]| v.iter().position(|&x| x == r);
        find(&self.out)
            .map(Resource::Out)
            .or_else(|| find(&self.inbound).map(Resource::In))
            .or_else(|| {
                let l = self.links.iter().position(|d| d.contains(&r))?;
                Some(if self.links[l][0] == r {
                    Resource::Up(l)
                } else {
                    Resource::Down(l)
                })
            })
    }
}

/// A resource of a [`GridNetwork`], in the testbed's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// What a site sends.
    Out(SiteId),
    /// What a site receives.
    In(SiteId),
    /// A link toward the core.
    Up(LinkId),
    /// A link away from the core.
    Down(LinkId),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(name: &str) -> Link {
        Link {
            name: name.into(),
            bandwidth: 1.0,
            latency: 0.5,
        }
    }

    /// Two campuses behind one uplink, a third site at the core.
    fn campuses() -> Topology {
        Topology {
            links: ["campus-a", "campus-b", "uplink"]
                .into_iter()
                .map(link)
                .collect(),
            paths: vec![vec![0, 2], vec![0, 2], vec![1, 2], vec![]],
            protocol_efficiency: 1.0,
        }
    }

    #[test]
    fn paths_meet_where_they_join_and_share_nothing_beyond() {
        let t = campuses();
        t.check().unwrap();
        assert!(t.crossed(0, 1).is_empty(), "one campus: below its uplink");
        assert_eq!(t.crossed(0, 2).as_slice(), &[0, 1], "campus to campus");
        assert_eq!(t.crossed(0, 3).as_slice(), &[0, 2], "to the core");
        assert_eq!(t.crossed(3, 2).as_slice(), &[2, 1], "from the core down");
        assert_eq!(t.latency(3, 2), 1.0);
    }

    #[test]
    fn paths_that_are_no_tree_are_refused() {
        let mut t = campuses();
        t.paths[2] = vec![2, 0];
        let e = t.check().unwrap_err();
        assert_eq!(e.site, 2);
        assert!(
            e.message.contains("`uplink` leads to `campus-a`"),
            "{}",
            e.message
        );
        t.paths[2] = vec![1, 1];
        assert!(t.check().unwrap_err().message.contains("twice"));
    }

    #[test]
    fn a_link_is_full_duplex() {
        let t = campuses();
        let nic = Interface {
            out: f64::INFINITY,
            inbound: f64::INFINITY,
            stream_cap: f64::INFINITY,
        };
        let mut g: GridNetwork<u32> = GridNetwork::new(&t, &[nic; 4]);
        let (up, _) = g.route(0, 3);
        let (down, _) = g.route(3, 1);
        let (up_too, _) = g.route(1, 3);
        g.net.start(0.0, up, 0, 1.0);
        g.net.start(0.0, down, 1, 1.0);
        assert_eq!(g.net.rate(up), 1.0, "up and down do not share the uplink");
        assert_eq!(g.net.rate(down), 1.0);
        g.net.start(0.0, up_too, 2, 1.0);
        assert_eq!(g.net.rate(up), 0.5, "two up share it");
        let (uplink, _) = g.net.route_of(up);
        let named: Vec<_> = uplink.iter().filter_map(|&r| g.resource(r)).collect();
        assert_eq!(named, [Resource::Up(0), Resource::Up(2)]);
    }
}
