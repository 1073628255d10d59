//! Policies by name, registered at run time: a [`Registry`] maps a name to a
//! constructor for each kind of policy (site selector, eviction, cache
//! maintenance ranking, farm dispatch). The built-ins are registered in it
//! the same way a user's are ([`Registry::builtin`]); a run resolves its
//! names through the registry it was given, so a library user adds a policy
//! without touching the crate, and a name the built-ins hold cannot be taken.
//!
//! One run's policies come from one [`RunPolicies`]: every external program
//! (`external[cmd=…]`) that the run's policies name is started once for the
//! run and shared by all of them (the selector and every site's eviction).

use std::sync::{Arc, OnceLock};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::external::{ProgramFailure, Programs, SiteSummary};
use super::{CacheWorth, EvictionPolicy, Params, SiteSelector, dispatch::DispatchPolicy};
use crate::core::SiteId;

/// What a constructor gets: the run's seed for this policy, its inline
/// parameters (`name[key=value, …]`) and, for external programs, the run's
/// program table.
pub struct Context<'a> {
    seed: u64,
    params: &'a Params,
    site: Option<SiteId>,
    pub(super) programs: &'a Programs,
}

impl Context<'_> {
    /// A generator seeded for this policy: the run's seed (a site's eviction
    /// policy gets `seed ^ (site + 1)`, so that sites differ).
    pub fn rng(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed)
    }

    /// The seed [`rng`](Self::rng) starts from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The inline parameters; every one must be read with
    /// [`Params::get`], or the name is refused as taking an unknown one.
    pub fn params(&self) -> &Params {
        self.params
    }

    /// The site whose pool this eviction policy serves (`None` for the
    /// other kinds).
    pub fn site(&self) -> Option<SiteId> {
        self.site
    }
}

/// A constructor of a policy of kind `T`.
pub type Ctor<T> = Arc<dyn Fn(&Context<'_>) -> Result<Box<T>, String> + Send + Sync>;

/// One kind's names and constructors.
pub(super) struct Table<T: ?Sized> {
    /// How errors name the kind ("strategy", "eviction", …).
    kind: &'static str,
    entries: Vec<(String, Ctor<T>)>,
    /// How many of `entries` (the first) are built-ins.
    builtins: usize,
}

impl<T: ?Sized> Clone for Table<T> {
    fn clone(&self) -> Self {
        Table {
            kind: self.kind,
            entries: self.entries.clone(),
            builtins: self.builtins,
        }
    }
}

impl<T: ?Sized> Table<T> {
    fn new(kind: &'static str) -> Self {
        Table {
            kind,
            entries: Vec::new(),
            builtins: 0,
        }
    }

    pub(super) fn builtin(
        mut self,
        name: &str,
        f: impl Fn(&Context<'_>) -> Result<Box<T>, String> + Send + Sync + 'static,
    ) -> Self {
        self.entries.push((name.to_string(), Arc::new(f)));
        self.builtins = self.entries.len();
        self
    }

    fn register(&mut self, name: &str, ctor: Ctor<T>) -> Result<(), RegistryError> {
        let refuse = |why: String| {
            Err(RegistryError {
                kind: self.kind,
                name: name.to_string(),
                why,
            })
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return refuse("expected letters, digits, `-`, `_` or `.`".into());
        }
        match self.entries.iter().position(|(n, _)| n == name) {
            Some(i) if i < self.builtins => {
                refuse("a built-in policy has this name; choose another".into())
            }
            Some(_) => refuse("already registered".into()),
            None => {
                self.entries.push((name.to_string(), ctor));
                Ok(())
            }
        }
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        names.join(", ")
    }

    fn build(
        &self,
        spec: &str,
        seed: u64,
        site: Option<SiteId>,
        programs: &Programs,
    ) -> Result<Box<T>, UnknownPolicy> {
        let bad = |why: String| UnknownPolicy {
            kind: self.kind,
            name: spec.to_string(),
            valid: why,
        };
        let (name, params) = super::parse_spec(spec).map_err(bad)?;
        let (_, ctor) = self
            .entries
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| bad(self.names()))?;
        let context = Context {
            seed,
            params: &params,
            site,
            programs,
        };
        let policy = ctor(&context).map_err(bad)?;
        params.check_all_used().map_err(bad)?;
        Ok(policy)
    }
}

/// A policy name that is unknown, or parameters it does not take.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown {kind} `{name}`; expected one of: {valid}")]
pub struct UnknownPolicy {
    /// "strategy", "eviction", "cache maintenance eviction" or "dispatch policy".
    pub kind: &'static str,
    /// What was asked for.
    pub name: String,
    /// Comma-separated valid names, or what was wrong with the parameters.
    pub valid: String,
}

/// A name that cannot be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot register {kind} `{name}`: {why}")]
pub struct RegistryError {
    /// The kind of policy.
    pub kind: &'static str,
    /// The name asked for.
    pub name: String,
    /// Why not.
    pub why: String,
}

/// Why a run's policies could not be built or stopped the run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A name or its parameters.
    #[error(transparent)]
    Unknown(#[from] UnknownPolicy),
    /// An external program failed: missing, exited, answered garbage or
    /// an impossible choice, or too late.
    #[error(transparent)]
    Program(#[from] ProgramFailure),
}

/// Names of every kind of policy, each bound to a constructor.
#[derive(Clone)]
pub struct Registry {
    selectors: Table<dyn SiteSelector>,
    evictions: Table<dyn EvictionPolicy>,
    worths: Table<dyn CacheWorth>,
    dispatchers: Table<dyn DispatchPolicy>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("selectors", &self.selectors.names())
            .field("evictions", &self.evictions.names())
            .field("cache_worths", &self.worths.names())
            .field("dispatchers", &self.dispatchers.names())
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::builtin()
    }
}

impl Registry {
    /// The built-in policies, and nothing else.
    pub fn builtin() -> Registry {
        Registry {
            selectors: super::builtin_selectors(Table::new("strategy")),
            evictions: super::builtin_evictions(Table::new("eviction")),
            worths: super::builtin_worths(Table::new("cache maintenance eviction")),
            dispatchers: super::builtin_dispatchers(Table::new("dispatch policy")),
        }
    }

    /// The built-ins, shared (what a run gets when nobody registered more).
    pub fn shared_builtin() -> Arc<Registry> {
        static BUILTIN: OnceLock<Arc<Registry>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Arc::new(Registry::builtin()))
            .clone()
    }

    /// Registers a site selector under `name` (a testbed's `strategy`,
    /// `--strategy`, `sweep`'s strategy lists). A built-in's name or one
    /// registered before is refused.
    pub fn register_selector(
        &mut self,
        name: &str,
        ctor: impl Fn(&Context<'_>) -> Result<Box<dyn SiteSelector>, String> + Send + Sync + 'static,
    ) -> Result<&mut Self, RegistryError> {
        self.selectors.register(name, Arc::new(ctor))?;
        Ok(self)
    }

    /// Registers an eviction policy under `name` (a testbed's `eviction`,
    /// a farm's `eviction`); built once per pool.
    pub fn register_eviction(
        &mut self,
        name: &str,
        ctor: impl Fn(&Context<'_>) -> Result<Box<dyn EvictionPolicy>, String> + Send + Sync + 'static,
    ) -> Result<&mut Self, RegistryError> {
        self.evictions.register(name, Arc::new(ctor))?;
        Ok(self)
    }

    /// Registers a cache-maintenance ranking (seed 003 §6.1) under `name`,
    /// used when a testbed sets `cache_bound` with `eviction = name`.
    pub fn register_cache_worth(
        &mut self,
        name: &str,
        ctor: impl Fn(&Context<'_>) -> Result<Box<dyn CacheWorth>, String> + Send + Sync + 'static,
    ) -> Result<&mut Self, RegistryError> {
        self.worths.register(name, Arc::new(ctor))?;
        Ok(self)
    }

    /// Registers a farm dispatch policy under `name` (a farm's `policy`,
    /// `gridbed farm --policy`).
    pub fn register_dispatch(
        &mut self,
        name: &str,
        ctor: impl Fn(&Context<'_>) -> Result<Box<dyn DispatchPolicy>, String> + Send + Sync + 'static,
    ) -> Result<&mut Self, RegistryError> {
        self.dispatchers.register(name, Arc::new(ctor))?;
        Ok(self)
    }

    /// Builds site selector `spec` on its own (checks a name; a run builds
    /// through [`RunPolicies`]).
    pub fn site_selector(
        &self,
        spec: &str,
        seed: u64,
    ) -> Result<Box<dyn SiteSelector>, UnknownPolicy> {
        self.selectors.build(spec, seed, None, &Programs::default())
    }

    /// Builds eviction policy `spec` on its own.
    pub fn eviction_policy(
        &self,
        spec: &str,
        seed: u64,
    ) -> Result<Box<dyn EvictionPolicy>, UnknownPolicy> {
        self.evictions.build(spec, seed, None, &Programs::default())
    }

    /// Builds cache-maintenance ranking `spec` on its own.
    pub fn cache_worth(&self, spec: &str) -> Result<Box<dyn CacheWorth>, UnknownPolicy> {
        self.worths.build(spec, 0, None, &Programs::default())
    }

    /// Builds dispatch policy `spec` on its own.
    pub fn dispatch_policy(
        &self,
        spec: &str,
        seed: u64,
    ) -> Result<Box<dyn DispatchPolicy>, UnknownPolicy> {
        self.dispatchers
            .build(spec, seed, None, &Programs::default())
    }
}

/// The policies of one run, built from one registry: external programs are
/// started once for the run ([`start`](Self::start)) and shared by every
/// policy that names them; a program's failure is kept here for the engine
/// to end the run with ([`failure`](Self::failure)).
pub struct RunPolicies {
    registry: Arc<Registry>,
    seed: u64,
    programs: Programs,
}

impl RunPolicies {
    /// The policies of a run seeded with `seed` on `sites` (what an
    /// external program's handshake describes).
    pub fn new(registry: Arc<Registry>, seed: u64, sites: Vec<SiteSummary>) -> RunPolicies {
        RunPolicies {
            registry,
            seed,
            programs: Programs::new(seed, sites),
        }
    }

    /// The run's site selector.
    pub fn selector(&self, spec: &str) -> Result<Box<dyn SiteSelector>, UnknownPolicy> {
        let t = &self.registry.selectors;
        t.build(spec, self.seed, None, &self.programs)
    }

    /// The eviction policy of `site`'s pool, seeded `seed ^ (site + 1)`.
    pub fn eviction(
        &self,
        spec: &str,
        site: SiteId,
    ) -> Result<Box<dyn EvictionPolicy>, UnknownPolicy> {
        let seed = self.seed ^ (site as u64 + 1);
        let t = &self.registry.evictions;
        t.build(spec, seed, Some(site), &self.programs)
    }

    /// The manager's cache-maintenance ranking.
    pub fn cache_worth(&self, spec: &str) -> Result<Box<dyn CacheWorth>, UnknownPolicy> {
        let t = &self.registry.worths;
        t.build(spec, self.seed, None, &self.programs)
    }

    /// The farm's dispatch policy.
    pub fn dispatch(&self, spec: &str) -> Result<Box<dyn DispatchPolicy>, UnknownPolicy> {
        let t = &self.registry.dispatchers;
        t.build(spec, self.seed, None, &self.programs)
    }

    /// Starts every external program the policies built so far name, and
    /// checks its handshake; call it once they are all built.
    pub fn start(&self) -> Result<(), PolicyError> {
        Ok(self.programs.start_all()?)
    }

    /// The external program's failure that must end the run, if one failed.
    pub fn failure(&self) -> Option<ProgramFailure> {
        self.programs.failure()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_name_cannot_be_taken_and_a_new_one_resolves() {
        let mut r = Registry::builtin();
        let e = r
            .register_selector("round-robin", |_| {
                Ok(Box::new(crate::policy::selector::Orig))
            })
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "cannot register strategy `round-robin`: a built-in policy has this name; choose another"
        );
        assert!(
            r.register_eviction("lru", |_| Ok(Box::new(crate::policy::eviction::Lru)))
                .is_err()
        );
        r.register_selector("mine", |c| {
            let n: usize = c.params().get("n", 1)?;
            assert_eq!(n, 3);
            Ok(Box::new(crate::policy::selector::Orig))
        })
        .unwrap();
        assert!(r.site_selector("mine[n=3]", 1).is_ok());
        let again = r.register_selector("mine", |_| Ok(Box::new(crate::policy::selector::Orig)));
        assert!(
            again
                .err()
                .unwrap()
                .to_string()
                .contains("already registered")
        );
        assert!(
            r.register_selector("my policy", |_| Ok(Box::new(crate::policy::selector::Orig)))
                .is_err()
        );
        // The shared built-ins do not see it.
        let e = Registry::shared_builtin()
            .site_selector("mine", 1)
            .err()
            .unwrap();
        assert!(e.to_string().contains("unknown strategy `mine`"), "{e}");
    }
}
