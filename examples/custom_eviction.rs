//! An eviction policy of your own, registered through the library and run
//! on the quickstart testbed with 60 MB pools (so that the busy sites
//! evict) in both engines, beside the built-in LRU.
//!
//! `mru` makes room by evicting the most recently used file first: the
//! classic answer to a scan that LRU handles worst. A policy ranks files by
//! a key; the smallest goes first.
//!
//! ```text
//! cargo run --release --example custom_eviction
//! ```

use std::path::Path;
use std::sync::Arc;

use gridbed::config::{self, Overrides};
use gridbed::policy::{Candidate, EvictionPolicy, Registry};

/// The most recently used file first.
struct Mru;

impl EvictionPolicy for Mru {
    fn key(&mut self, c: &Candidate) -> u64 {
        u64::MAX - c.last_access
    }
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    compare(&["lru", "mru"])
}

/// Runs each of `policies` in both engines and prints the two side by side.
pub fn compare(policies: &[&str]) -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::builtin();
    registry.register_eviction("mru", |_| Ok(Box::new(Mru)))?;
    let registry = Arc::new(registry);
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml");
    let text =
        std::fs::read_to_string(&quickstart)?.replace("cpus = ", "disk = \"60 MB\"\ncpus = ");
    let dir = tempfile::tempdir()?;
    println!("quickstart with 60 MB pools: makespan (nominal s), evictions");
    for &eviction in policies {
        let testbed = dir.path().join(format!("{eviction}.toml"));
        let body = text.replace("eviction = \"lru\"", &format!("eviction = \"{eviction}\""));
        std::fs::write(&testbed, body)?;
        let overrides = Overrides {
            sites_file: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("sites.toml")),
            ..Default::default()
        };
        let scenario = config::load_with(&testbed, &overrides, registry.clone())?;
        let sim = gridbed::sim::run(&scenario)?;
        let live = gridbed::live::run(&scenario, Default::default())?;
        let evicted = |e: &[u64]| e.iter().sum::<u64>();
        println!(
            "  {eviction:<14} sim {:>8.1} ({:>3} evictions)   live {:>8.1} ({:>3} evictions)",
            sim.makespan,
            evicted(&sim.evictions),
            live.makespan,
            evicted(&live.evictions)
        );
        if !(sim.succeeded && live.succeeded) || evicted(&sim.evictions) == 0 {
            return Err(format!("{eviction}: a run failed or evicted nothing").into());
        }
    }
    Ok(())
}
