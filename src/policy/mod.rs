//! Scheduling policies, one file each behind a trait, picked by name.
//!
//! A policy gets a read-only view and returns a choice; it never does I/O and
//! never sees an engine, so the sim and live engines run the same code (the
//! dslab `Scheduler` habit, without handing over the engine's context).
//! Policies are found by name in a [`Registry`]: the built-ins are
//! registered in it like a library user's own, and `external[cmd=…]` runs a
//! program in any language that answers over a pipe ([`external`]). Adding
//! a built-in is one new file plus one line in its `builtin_*` table.

pub mod dispatch;
pub mod eviction;
pub mod external;
mod registry;
pub mod selector;

use std::sync::Arc;

use registry::Table;
pub use registry::{
    Context, Ctor, PolicyError, Registry, RegistryError, RunPolicies, UnknownPolicy,
};

pub use crate::core::seams::{
    CacheWorth, CachedFile, Candidate, EvictionPolicy, GridView, Offer, SiteSelector,
};

/// The `rand` crate whose traits a policy's generator is used through
/// (`use gridbed::policy::rand::Rng` for `random_range`), and the
/// generator [`Context::rng`] returns: re-exported so that a policy's crate
/// depends on gridbed alone, at the versions gridbed seeds.
pub use rand;
pub use rand_chacha::ChaCha8Rng;

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

/// Splits `name[k=v,k2=v2]` into the name and its parameters. A value in
/// double quotes may hold commas, brackets and `=` (`external[cmd="python3
/// p.py --a=1"]`); `\"` and `\\` in it stand for `"` and `\`.
fn parse_spec(spec: &str) -> Result<(&str, Params), String> {
    let Some((name, rest)) = spec.split_once('[') else {
        return Ok((spec.trim(), Params::default()));
    };
    let body = rest
        .trim_end()
        .strip_suffix(']')
        .ok_or_else(|| "expected `name[key=value, …]`".to_string())?;
    let mut pairs = Vec::new();
    for item in split_quoted(body)?.iter().map(|i| i.trim()) {
        if item.is_empty() {
            continue;
        }
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("expected `key=value`, found `{item}`"))?;
        let (k, v) = (k.trim(), v.trim());
        let value = match v.strip_prefix('"') {
            Some(quoted) => {
                let mut value = String::new();
                let mut chars = quoted.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '"' if chars.as_str().trim().is_empty() => break,
                        '"' => {
                            return Err(format!("parameter `{k}`: text after the closing quote"));
                        }
                        '\\' => value.extend(chars.next()),
                        c => value.push(c),
                    }
                }
                value
            }
            None => v.to_string(),
        };
        pairs.push((k.to_string(), value));
    }
    Ok((
        name.trim(),
        Params {
            pairs,
            used: Default::default(),
        },
    ))
}

/// A comma-separated list of policies (`--strategies`), split at the commas
/// outside brackets and double quotes: `clustered[sequence=false, ra=4]`
/// and `external[cmd="a, b"]` stay whole.
pub fn split_policy_list(list: &str) -> Result<Vec<String>, String> {
    let (mut items, mut from, mut depth, mut quoted, mut escaped) =
        (Vec::new(), 0, 0i32, false, false);
    for (i, c) in list.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '[' if !quoted => depth += 1,
            ']' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                items.push(list[from..i].trim().to_string());
                from = i + 1;
            }
            _ => {}
        }
    }
    if quoted || depth != 0 {
        return Err("a quote or a bracket is not closed".into());
    }
    items.push(list[from..].trim().to_string());
    items.retain(|i| !i.is_empty());
    Ok(items)
}

/// `body` split at the commas outside double quotes.
fn split_quoted(body: &str) -> Result<Vec<&str>, String> {
    let (mut items, mut from, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&body[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return Err("a quote is not closed".into());
    }
    items.push(&body[from..]);
    Ok(items)
}

/// Falkon's dispatch policies (seed 001 §3.2); `window` is the scheduling
/// window W (default 3,200, the paper's), `threshold` the CPU utilization
/// at which good-cache-compute turns to cache hits (default 0.8) and
/// `replicas` its maximum replication factor (default 0: none).
fn builtin_dispatchers(
    t: Table<dyn dispatch::DispatchPolicy>,
) -> Table<dyn dispatch::DispatchPolicy> {
    t.builtin("first-available", |_| {
        Ok(Box::new(dispatch::FirstAvailable))
    })
    .builtin("max-cache-hit", |c| {
        let window = c.params().get("window", 3200)?;
        Ok(Box::new(dispatch::MaxCacheHit::new(window)))
    })
    .builtin("max-compute-util", |c| {
        let window = c.params().get("window", 3200)?;
        Ok(Box::new(dispatch::MaxComputeUtil::new(window)))
    })
    .builtin("good-cache-compute", |c| {
        let p = c.params();
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
    })
    .builtin("external", |c| external::ExternalDispatch::build(c))
}

/// The built-in site selectors.
fn builtin_selectors(t: Table<dyn SiteSelector>) -> Table<dyn SiteSelector> {
    t.builtin("random", |c| Ok(Box::new(selector::Random::new(c.rng()))))
        .builtin("round-robin", |_| {
            Ok(Box::new(selector::RoundRobin::default()))
        })
        .builtin("data-present", |c| {
            let caching = c.params().get("caching", true)?;
            Ok(Box::new(
                selector::DataPresent::new(c.rng()).caching(caching),
            ))
        })
        .builtin("random-caching", |c| {
            Ok(Box::new(selector::RandomCaching::new(c.rng())))
        })
        .builtin("clustered", |c| {
            Ok(Box::new(selector::Clustered::with_params(c.params())?))
        })
        .builtin("weighted-linear-random", |c| {
            Ok(Box::new(selector::WeightedLinearRandom::new(c.rng())))
        })
        .builtin("last-recent-used", |_| {
            Ok(Box::new(selector::LastRecentUsed::default()))
        })
        .builtin("opportunistic", |_| {
            Ok(Box::new(selector::Opportunistic::default()))
        })
        .builtin("orig", |_| Ok(Box::new(selector::Orig)))
        .builtin("job-c", |_| Ok(Box::new(selector::JobC::default())))
        .builtin("dag-c", |c| {
            Ok(Box::new(selector::DagC::with_params(c.params())?))
        })
        .builtin("recorded", |_| Ok(Box::new(selector::Recorded::default())))
        .builtin("external", |c| external::ExternalSelector::build(c))
}

/// The built-in eviction policies.
fn builtin_evictions(t: Table<dyn EvictionPolicy>) -> Table<dyn EvictionPolicy> {
    t.builtin("lru", |_| Ok(Box::new(eviction::Lru)))
        .builtin("fifo", |_| Ok(Box::new(eviction::Fifo)))
        .builtin("lfu", |_| Ok(Box::new(eviction::Lfu)))
        .builtin("random", |c| Ok(Box::new(eviction::Random::new(c.rng()))))
        .builtin("worth", |c| {
            Ok(Box::new(eviction::Worth::with_params(c.params())?))
        })
        .builtin("external", |c| external::ExternalEviction::build(c))
}

/// The eviction policies that also rank a site's cache for the manager's
/// cache maintenance (seed 003 §6.1).
fn builtin_worths(t: Table<dyn CacheWorth>) -> Table<dyn CacheWorth> {
    t.builtin("lru", |_| Ok(Box::new(eviction::Lru)))
        .builtin("lfu", |_| Ok(Box::new(eviction::Lfu)))
        .builtin("worth", |c| {
            Ok(Box::new(eviction::Worth::with_params(c.params())?))
        })
}

/// Builds the built-in site selector `spec` (a name, optionally with inline
/// parameters such as `clustered[sequence=false]`), seeded with `seed`.
pub fn site_selector(spec: &str, seed: u64) -> Result<Box<dyn SiteSelector>, UnknownPolicy> {
    Registry::shared_builtin().site_selector(spec, seed)
}

/// Builds the built-in cache-maintenance ranking of eviction policy `spec`.
pub fn cache_worth(spec: &str) -> Result<Box<dyn CacheWorth>, UnknownPolicy> {
    Registry::shared_builtin().cache_worth(spec)
}

/// Builds the built-in eviction policy `spec`, seeded with `seed`.
pub fn eviction_policy(spec: &str, seed: u64) -> Result<Box<dyn EvictionPolicy>, UnknownPolicy> {
    Registry::shared_builtin().eviction_policy(spec, seed)
}

/// Builds the built-in dispatch policy `spec`, e.g.
/// `good-cache-compute[threshold=0.9]`.
pub fn dispatch_policy(
    spec: &str,
    seed: u64,
) -> Result<Box<dyn dispatch::DispatchPolicy>, UnknownPolicy> {
    Registry::shared_builtin().dispatch_policy(spec, seed)
}

/// Falkon's dispatcher for `tasks` on the farm `spec`, with the spec's
/// dispatch policy and each executor's eviction policy built by `policies`
/// (executor `e`'s seeded with `seed ^ (e + 1)`, so that executors differ).
pub fn farm_dispatcher<'a>(
    spec: &'a FarmSpec,
    tasks: &'a [Task],
    policies: &Arc<RunPolicies>,
) -> Result<Dispatcher<'a>, PolicyError> {
    let policy = policies.dispatch(&spec.policy)?;
    let name = spec.eviction.clone();
    let run = policies.clone();
    let per_exec = move |e: ExecId| run.eviction(&name, e);
    // Resolved once here, so that the factory below cannot fail.
    per_exec(0)?;
    policies.start()?;
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

    #[test]
    fn a_list_of_policies_splits_outside_brackets_and_quotes() {
        let list = r#"random, clustered[sequence=false, ra=4],external[cmd="a, b", timeout=2]"#;
        assert_eq!(
            split_policy_list(list).unwrap(),
            [
                "random",
                "clustered[sequence=false, ra=4]",
                r#"external[cmd="a, b", timeout=2]"#
            ]
        );
        assert!(split_policy_list("clustered[a=1").is_err());
    }

    #[test]
    fn a_quoted_value_keeps_commas_brackets_and_equals() {
        let (name, p) =
            parse_spec(r#"external[cmd="python3 p.py --a=1,b [x]", timeout=2]"#).unwrap();
        assert_eq!(name, "external");
        assert_eq!(
            p.get("cmd", String::new()).unwrap(),
            "python3 p.py --a=1,b [x]"
        );
        assert_eq!(p.get("timeout", 0.0).unwrap(), 2.0);
        let (_, p) = parse_spec(r#"x[cmd="say \"hi\" \\ there"]"#).unwrap();
        assert_eq!(p.get("cmd", String::new()).unwrap(), r#"say "hi" \ there"#);
        assert!(
            parse_spec(r#"x[cmd="open]"#)
                .unwrap_err()
                .contains("not closed")
        );
        assert!(
            parse_spec(r#"x[cmd="a" b]"#)
                .unwrap_err()
                .contains("after the closing quote")
        );
        assert!(
            parse_spec("x[a]")
                .unwrap_err()
                .contains("expected `key=value`, found `a`")
        );
    }
}
