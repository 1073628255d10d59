//! A site selector of your own, registered through the library and run on
//! the quickstart testbed in both engines beside the built-in round-robin.
//!
//! `least-loaded` sends each job to the eligible site with the most free
//! slots (ties to the lower site id): the greedy baseline of many
//! scheduling papers, in a dozen lines.
//!
//! ```text
//! cargo run --release --example custom_selector
//! ```

use std::path::Path;
use std::sync::Arc;

use gridbed::config::{self, Overrides};
use gridbed::core::{JobId, SiteId};
use gridbed::policy::{GridView, Registry, SiteSelector};

/// The eligible site with the most free slots.
struct LeastLoaded;

impl SiteSelector for LeastLoaded {
    fn select(&mut self, _job: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
        let free = |s: SiteId| view.sites[s].cpus.saturating_sub(view.claimed[s]);
        // max_by_key keeps the last of equals: reversed, ties go to the lower id.
        *eligible
            .iter()
            .rev()
            .max_by_key(|&&s| free(s))
            .expect("never empty")
    }
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    compare(&["round-robin", "least-loaded"])
}

/// Runs each of `policies` in both engines and prints the two side by side.
pub fn compare(policies: &[&str]) -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::builtin();
    registry.register_selector("least-loaded", |_| Ok(Box::new(LeastLoaded)))?;
    let registry = Arc::new(registry);
    let testbed = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml");
    println!("quickstart (102 jobs): makespan in nominal seconds");
    for &strategy in policies {
        let overrides = Overrides {
            strategy: Some(strategy.into()),
            ..Default::default()
        };
        let scenario = config::load_with(&testbed, &overrides, registry.clone())?;
        let sim = gridbed::sim::run(&scenario)?;
        let live = gridbed::live::run(&scenario, Default::default())?;
        println!(
            "  {strategy:<14} sim {:>8.1}   live {:>8.1}",
            sim.makespan, live.makespan
        );
        if !(sim.succeeded && live.succeeded) {
            return Err(format!("{strategy}: not every job ended").into());
        }
    }
    Ok(())
}
