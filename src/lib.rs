//! # gridbed — a live grid emulator with real transfers
//!
//! gridbed stands up a mock grid on one machine and runs a scientific workflow
//! across it the way a grid workflow manager (Condor DAGMan plus a site
//! selector) would, moving every byte of the schedule for real.
//!
//! ```text
//!      testbed.toml ──► config::Scenario (sites + workflow + manager + seed)
//!                              │
//!                ┌─────────────┴─────────────┐
//!                ▼                           ▼
//!         sim engine (virtual clock)   live engine (actix actors,
//!                │                    actix-web "gridftp", reqwest)
//!                └──────► core ◄─────────────┘
//!   Manager (DAGMan semantics) · Site (queue, slots, pool) · faults ·
//!   farm Dispatcher · event queue · links · RLS · control records ·
//!   results and traces · the seams policies plug into
//! ```
//!
//! Every rule of the emulated world lives once in [`core`]; the engines only
//! carry out its decisions. The rooms import each other without a loop
//! (checked by a test over `src/`):
//!
//! * [`core`] is sans-IO and imports no other room: the [`core::Manager`]
//!   takes events stamped with the nominal time and returns commands;
//!   `core::site::Site` is a site's rules and returns actions;
//!   [`core::farm::Dispatcher`] is the data-diffusion farm's dispatcher in
//!   the manager's shape; [`core::faults`] the testbed's faults and the
//!   seeded per-response schedules;
//!   `core::events` the one event queue; [`core::network`] the one
//!   max-min network model and [`core::topology`] which links a transfer
//!   crosses; [`core::seams`] the traits policies implement.
//! * [`policy`] holds the site selectors, eviction and dispatch policies, one
//!   file each, found by name in a [`policy::Registry`]; `external[cmd=…]`
//!   asks a program in any language over a pipe ([`policy::external`]).
//! * [`sim`] is the discrete-event engine: the same core on a virtual clock,
//!   with the max-min transfer model; [`sim::farm`] simulates the
//!   farm.
//! * [`live`] is the live engine: each site an actix actor owning a
//!   capacity-limited temp-dir pool, plus a rate-limited HTTP file server on
//!   loopback; `live::audit` checks pools kept on disk against a control
//!   database.
//! * [`diffusion`] holds the data-diffusion farm's inputs (seed 001's task
//!   streams and farm testbeds); [`live::farm`] runs the farm live.
//! * [`config`] loads `sites.toml` and testbeds with precise errors;
//!   [`units`] reads sizes and rates; [`workflow`] generates and parses
//!   workflows; [`report`] prints, plots and validates run records;
//!   `metrics` exports Prometheus series; `db` is the control database;
//!   [`calibrate`] predicts real runs (WfCommons traces) and fits the WMS
//!   model's knobs to them.
//! * `cli` is the command line, one file per command (with `sweep` and
//!   `bench`); the binary's `main` only calls it.
//!
//! What a user of the library sees is the modules linked above; the rest
//! (the command line, the control database, the metrics, the netbed, the
//! live engine's actors and servers, the manager's and the sites'
//! machinery) is the crate's own. gridbed's integration tests reach it
//! through the `internals` feature, which nothing else should turn on.
//!
//! ## Using gridbed as a library
//!
//! Load a testbed, register your own policies under names (the built-ins
//! are registered the same way, and their names cannot be taken), run it in
//! either engine, read the result. `docs/write-a-policy.md` has the three
//! routes to a policy (a file in the tree, the library, a program in any
//! language over a pipe) and `examples/` a selector, an eviction and a
//! farm dispatch policy run in both engines.
//!
//! ```
//! use std::sync::Arc;
//! use gridbed::config::{self, Overrides};
//! use gridbed::core::{JobId, SiteId};
//! use gridbed::policy::{GridView, Registry, SiteSelector};
//!
//! /// Every job on the eligible site with the most free slots.
//! struct LeastLoaded;
//!
//! impl SiteSelector for LeastLoaded {
//!     fn select(&mut self, _: JobId, view: &GridView<'_>, eligible: &[SiteId]) -> SiteId {
//!         let free = |s: SiteId| view.sites[s].cpus.saturating_sub(view.claimed[s]);
//!         *eligible.iter().rev().max_by_key(|&&s| free(s)).unwrap()
//!     }
//! }
//!
//! let mut registry = Registry::builtin();
//! registry.register_selector("least-loaded", |_| Ok(Box::new(LeastLoaded)))?;
//! assert!(registry.register_selector("random", |_| Ok(Box::new(LeastLoaded))).is_err());
//!
//! let testbed = concat!(env!("CARGO_MANIFEST_DIR"), "/testbeds/quickstart.toml");
//! let overrides = Overrides { strategy: Some("least-loaded".into()), ..Default::default() };
//! let scenario = config::load_with(testbed.as_ref(), &overrides, Arc::new(registry))?;
//! let run = gridbed::sim::run(&scenario)?; // or gridbed::live::run(&scenario, Default::default())
//! assert!(run.succeeded);
//! println!("makespan {:.0} s, {} transfers", run.makespan, run.transfers);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

/// Declares modules internal to gridbed: the crate's own, and public
/// (hidden from the docs) only with the `internals` feature, which gridbed's own
/// integration tests turn on so that they can reach what users cannot.
macro_rules! internal {
    ($($m:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $m;
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $m;
    )*};
}

pub mod calibrate;
pub mod config;
pub mod core;
pub mod diffusion;
pub mod interrupt;
pub mod live;
pub mod policy;
pub mod report;
pub mod sim;
pub mod units;
pub mod workflow;

internal!(cli, db, memo, metrics, netbed);

/// `docs/write-a-policy.md`'s Rust, compiled as doctests so that the
/// library route it shows builds as written.
#[cfg(doctest)]
#[doc = include_str!("../docs/write-a-policy.md")]
pub struct WriteAPolicyDoc;

/// The `gridbed` command line: what the binary runs.
#[doc(hidden)]
pub fn command_line() -> std::process::ExitCode {
    cli::main()
}
