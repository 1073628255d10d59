//! Scheduling policies, one file each behind a trait, picked by name.
//!
//! A policy gets a read-only view and returns a choice; it never does I/O and
//! never sees an engine, so the sim and live engines run the same code (the
//! dslab `Scheduler` habit, without handing over the engine's context).
//! Adding a policy is one new file plus one line in [`SELECTORS`] or
//! [`EVICTIONS`].

pub mod dispatch;
pub mod eviction;
pub mod selector;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use crate::core::seams::{
    CacheWorth, CachedFile, Candidate, EvictionPolicy, GridView, SiteSelector,
};

use crate::core::cache_index::ExecId;
use crate::core::farm::{Dispatcher, FarmSpec, Task};

/// Inline parameters of a policy, as in `clustered[sequence=false]`.
#[derive(Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
    used: std::cell::RefCell<Vec<String>>,
}

impl Params {
    /// A parameter's value parsed as `T`, or `default` when absent.
    pub fn get<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        self.used.borrow_mut().push(key.to_string());
        match self.pairs.iter().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, v)) => v
                .parse()
                .map_err(|_| format!("parameter `{key}`: cannot use `{v}`")),
        }
    }

    /// Fails on a parameter no `get` asked for.
    fn check_all_used(&self) -> Result<(), String> {
        let used = self.used.borrow();
        match self.pairs.iter().find(|(k, _)| !used.contains(k)) {
            Some((k, _)) if used.is_empty() => Err(format!("takes no parameters, found `{k}`")),
            Some((k, _)) => Err(format!(
                "unknown parameter `{k}`; expected one of: {}",
                used.join(", ")
            )),
            None => Ok(()),
        }
    }
}

/// Splits `name[k=v,k2=v2]` into the name and its parameters.
fn parse_spec(spec: &str) -> Result<(&str, Params), String> {
    let Some((name, rest)) = spec.split_once('[') else {
        return Ok((spec.trim(), Params::default()));
    };
    let body = rest
        .strip_suffix(']')
        .ok_or_else(|| "expected `name[key=value, …]`".to_string())?;
    let mut pairs = Vec::new();
    for item in body.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("expected `key=value`, found `{item}`"))?;
        pairs.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok((
        name.trim(),
        Params {
            pairs,
            used: Default::default(),
        },
    ))
}

/// A named constructor of a policy of kind `T`, fed a seeded generator and its
/// inline parameters.
type Ctor<T> = fn(ChaCha8Rng, &Params) -> Result<Box<T>, String>;
type SelectorCtor = Ctor<dyn SiteSelector>;
type EvictionCtor = Ctor<dyn EvictionPolicy>;
type DispatchCtor = Ctor<dyn dispatch::DispatchPolicy>;

/// Falkon's dispatch policies by name (seed 001 §3.2); `window` is the
/// scheduling window W (default 3,200, the paper's), `threshold` the CPU
/// utilization at which good-cache-compute turns to cache hits (default 0.8)
/// and `replicas` its maximum replication factor (default 0: none).
pub const DISPATCHERS: &[(&str, DispatchCtor)] = &[
    ("first-available", |_, _| {
        Ok(Box::new(dispatch::FirstAvailable))
    }),
    ("max-cache-hit", |_, p| {
        Ok(Box::new(dispatch::MaxCacheHit::new(p.get("window", 3200)?)))
    }),
    ("max-compute-util", |_, p| {
        Ok(Box::new(dispatch::MaxComputeUtil::new(
            p.get("window", 3200)?,
        )))
    }),
    ("good-cache-compute", |_, p| {
        let window = p.get("window", 3200)?;
        let threshold: f64 = p.get("threshold", 0.8)?;
        if !(0.0..=1.0).contains(&threshold) {
            return Err(format!(
                "threshold {threshold}: expected a fraction in [0, 1]"
            ));
        }
        let replicas = p.get("replicas", 0)?;
        Ok(Box::new(dispatch::GoodCacheCompute::new(
            window, threshold, replicas,
        )))
    }),
];

/// Site selectors by name.
pub const SELECTORS: &[(&str, SelectorCtor)] = &[
    ("random", |rng, _| Ok(Box::new(selector::Random::new(rng)))),
    ("round-robin", |_, _| {
        Ok(Box::new(selector::RoundRobin::default()))
    }),
    ("data-present", |rng, p| {
        let caching = p.get("caching", true)?;
        Ok(Box::new(selector::DataPresent::new(rng).caching(caching)))
    }),
    ("random-caching", |rng, _| {
        Ok(Box::new(selector::RandomCaching::new(rng)))
    }),
    ("clustered", |_, p| {
        Ok(Box::new(selector::Clustered::with_params(p)?))
    }),
    ("weighted-linear-random", |rng, _| {
        Ok(Box::new(selector::WeightedLinearRandom::new(rng)))
    }),
    ("last-recent-used", |_, _| {
        Ok(Box::new(selector::LastRecentUsed::default()))
    }),
    ("opportunistic", |_, _| {
        Ok(Box::new(selector::Opportunistic::default()))
    }),
    ("orig", |_, _| Ok(Box::new(selector::Orig))),
    ("job-c", |_, _| Ok(Box::new(selector::JobC::default()))),
    ("dag-c", |_, p| {
        Ok(Box::new(selector::DagC::with_params(p)?))
    }),
    ("recorded", |_, _| {
        Ok(Box::new(selector::Recorded::default()))
    }),
];

/// Eviction policies by name.
pub const EVICTIONS: &[(&str, EvictionCtor)] = &[
    ("lru", |_, _| Ok(Box::new(eviction::Lru))),
    ("fifo", |_, _| Ok(Box::new(eviction::Fifo))),
    ("lfu", |_, _| Ok(Box::new(eviction::Lfu))),
    ("random", |rng, _| Ok(Box::new(eviction::Random::new(rng)))),
    ("worth", |_, p| {
        Ok(Box::new(eviction::Worth::with_params(p)?))
    }),
];

/// The eviction policies that also rank a site's cache for the manager's
/// cache maintenance (seed 003 §6.1), by name.
pub const CACHE_WORTHS: &[(&str, Ctor<dyn CacheWorth>)] = &[
    ("lru", |_, _| Ok(Box::new(eviction::Lru))),
    ("lfu", |_, _| Ok(Box::new(eviction::Lfu))),
    ("worth", |_, p| {
        Ok(Box::new(eviction::Worth::with_params(p)?))
    }),
];

/// A policy name that is unknown, or parameters it does not take.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown {kind} `{name}`; expected one of: {valid}")]
pub struct UnknownPolicy {
    /// "strategy" or "eviction".
    pub kind: &'static str,
    /// What was asked for.
    pub name: String,
    /// Comma-separated valid names, or what was wrong with the parameters.
    pub valid: String,
}

fn resolve<T: ?Sized>(
    kind: &'static str,
    table: &[(&str, Ctor<T>)],
    spec: &str,
    seed: u64,
) -> Result<Box<T>, UnknownPolicy> {
    let bad = |why: String| UnknownPolicy {
        kind,
        name: spec.to_string(),
        valid: why,
    };
    let (name, params) = parse_spec(spec).map_err(bad)?;
    let (_, ctor) = table
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| UnknownPolicy {
            kind,
            name: spec.to_string(),
            valid: table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        })?;
    let policy = ctor(ChaCha8Rng::seed_from_u64(seed), &params).map_err(bad)?;
    params.check_all_used().map_err(bad)?;
    Ok(policy)
}

/// Builds the site selector `spec` (a name, optionally with inline parameters
/// such as `clustered[sequence=false]`), seeded with `seed`.
pub fn site_selector(spec: &str, seed: u64) -> Result<Box<dyn SiteSelector>, UnknownPolicy> {
    resolve("strategy", SELECTORS, spec, seed)
}

/// Builds the cache-maintenance ranking of eviction policy `spec`.
pub fn cache_worth(spec: &str) -> Result<Box<dyn CacheWorth>, UnknownPolicy> {
    resolve("cache maintenance eviction", CACHE_WORTHS, spec, 0)
}

/// Builds the eviction policy `spec`, seeded with `seed`.
pub fn eviction_policy(spec: &str, seed: u64) -> Result<Box<dyn EvictionPolicy>, UnknownPolicy> {
    resolve("eviction", EVICTIONS, spec, seed)
}

/// Resolves a dispatch policy, e.g. `good-cache-compute[threshold=0.9]`.
pub fn dispatch_policy(
    spec: &str,
    seed: u64,
) -> Result<Box<dyn dispatch::DispatchPolicy>, UnknownPolicy> {
    resolve("dispatch policy", DISPATCHERS, spec, seed)
}

/// Falkon's dispatcher for `tasks` on the farm `spec`, with the spec's
/// dispatch policy and each executor's eviction policy resolved (executor
/// `e`'s seeded with `seed ^ (e + 1)`, so that executors differ).
pub fn farm_dispatcher<'a>(
    spec: &'a FarmSpec,
    tasks: &'a [Task],
) -> Result<Dispatcher<'a>, UnknownPolicy> {
    let policy = dispatch_policy(&spec.policy, spec.seed)?;
    let (name, seed) = (spec.eviction.clone(), spec.seed);
    let per_exec = move |e: ExecId| eviction_policy(&name, seed ^ (e as u64 + 1));
    // Resolved once here, so that the factory below cannot fail.
    per_exec(0)?;
    let eviction =
        Box::new(move |e: ExecId| per_exec(e).expect("an eviction policy resolved once"));
    Ok(Dispatcher::new(spec, tasks, policy, eviction))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_lists_valid_names() {
        assert!(site_selector("round-robin", 1).is_ok());
        let err = site_selector("fastest", 1).err().unwrap();
        assert!(
            err.to_string()
                .contains("random, round-robin, data-present, random-caching, clustered")
        );
        assert!(eviction_policy("lru", 0).is_ok());
        assert!(site_selector("clustered[sequence=false, ra=4]", 0).is_ok());
        let e = site_selector("clustered[colour=red]", 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("unknown parameter `colour`") && e.contains("sequence"),
            "{e}"
        );
        let e = site_selector("random[x=1]", 0).err().unwrap().to_string();
        assert!(e.contains("takes no parameters"), "{e}");
        assert!(site_selector("clustered[sequence=maybe]", 0).is_err());
        assert!(site_selector("clustered[sequence", 0).is_err());
    }
}
