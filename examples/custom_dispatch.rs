//! A data-diffusion dispatch policy of your own (seed 001 §3.2), registered
//! through the library and run on the small Falkon farm in both engines
//! beside the built-in first-available.
//!
//! `cache-affine` notifies the free executor that caches the most of the
//! head task's files (the first free one when none does) and lets it take
//! no more tasks from the window: max-cache-hit's first part alone.
//!
//! ```text
//! cargo run --release --example custom_dispatch
//! ```

use std::path::Path;
use std::sync::Arc;

use gridbed::core::FileId;
use gridbed::core::cache_index::ExecId;
use gridbed::policy::Registry;
use gridbed::policy::dispatch::{DispatchPolicy, FarmView, TaskQueue};

/// The free executor caching most of the task's files.
struct CacheAffine;

impl DispatchPolicy for CacheAffine {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        let cached = |e: ExecId| files.iter().filter(|&&f| view.index.cached(f, e)).count();
        let free = (0..view.free.len()).filter(|&e| view.free[e]);
        // Most cached; among equals the lowest id (max_by_key keeps the last).
        free.rev().max_by_key(|&e| cached(e))
    }

    fn pick_up(&mut self, _: ExecId, _: &dyn TaskQueue, _: usize, _: &FarmView<'_>) -> Vec<usize> {
        Vec::new()
    }
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    compare(&["first-available", "cache-affine"])
}

/// Runs each of `policies` in both engines and prints the two side by side.
pub fn compare(policies: &[&str]) -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::builtin();
    registry.register_dispatch("cache-affine", |_| Ok(Box::new(CacheAffine)))?;
    let registry = Arc::new(registry);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/falkon-diffusion-small.toml");
    println!("falkon-diffusion-small (3,000 tasks): makespan (nominal s), cache hit ratio");
    for &policy in policies {
        let mut farm = gridbed::config::farm::load_with(&path, &registry)?;
        farm.spec.policy = policy.into();
        let sim = gridbed::sim::farm::run_with(&farm.spec, &farm.tasks, registry.clone())?;
        let opts = gridbed::live::farm::FarmOptions {
            registry: Some(registry.clone()),
            ..Default::default()
        };
        let live = gridbed::live::farm::run(&farm.spec, &farm.tasks, farm.emulation, opts)?;
        let hits = |r: &gridbed::core::farm::FarmRun| {
            (r.local_hits + r.global_hits) as f64 / r.tasks.max(1) as f64
        };
        println!(
            "  {policy:<16} sim {:>7.1} ({:.2})   live {:>7.1} ({:.2})",
            sim.makespan,
            hits(&sim),
            live.run.makespan,
            hits(&live.run)
        );
        if sim.tasks != farm.tasks.len() || live.run.tasks != farm.tasks.len() {
            return Err(format!("{policy}: not every task ran").into());
        }
    }
    Ok(())
}
