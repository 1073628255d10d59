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
//!   Manager state machine (DAGMan semantics), RLS, control records,
//!   storage accounting; policy: site selectors and eviction
//! ```
//!
//! * [`core`] is sans-IO: the [`core::Manager`] takes events stamped with the
//!   nominal time and returns commands. It never sleeps, spawns or does I/O.
//! * [`policy`] holds the site selectors and eviction policies, one file each,
//!   picked by name.
//! * [`sim`] is the discrete-event engine: a virtual clock, the same core and
//!   policies, and the live engine's transfer, queue and storage models.
//! * [`live`] is the live engine: each site is an actix actor owning a
//!   capacity-limited temp-dir pool, CPU slots and a FIFO queue, plus a
//!   rate-limited HTTP file server on loopback.
//! * [`config`] loads `sites.toml` and testbeds with precise errors;
//!   [`workflow`] generates the papers' workflows; [`report`] prints and
//!   writes run records; [`metrics`] exports Prometheus series.
#![warn(missing_docs)]

pub mod bench;
pub mod config;
pub mod core;
pub mod db;
pub mod diffusion;
pub mod live;
pub mod metrics;
pub mod policy;
pub mod report;
pub mod sim;
pub mod sweep;
pub mod workflow;
