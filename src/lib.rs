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
//!   [`core::site::Site`] is a site's rules and returns actions;
//!   [`core::farm::Dispatcher`] is the data-diffusion farm's dispatcher in
//!   the manager's shape; [`core::faults`] the testbed's faults and the
//!   seeded per-response schedules;
//!   [`core::events`] the one event queue; [`core::network`] the one
//!   max-min network model and [`core::topology`] which links a transfer
//!   crosses; [`core::seams`] the traits policies implement.
//! * [`policy`] holds the site selectors, eviction and dispatch policies, one
//!   file each, picked by name.
//! * [`sim`] is the discrete-event engine: the same core on a virtual clock,
//!   with the max-min transfer model; [`sim::farm`] simulates the
//!   farm.
//! * [`live`] is the live engine: each site an actix actor owning a
//!   capacity-limited temp-dir pool, plus a rate-limited HTTP file server on
//!   loopback; [`live::audit`] checks pools kept on disk against a control
//!   database.
//! * [`diffusion`] holds the data-diffusion farm's inputs (seed 001's task
//!   streams and farm testbeds); [`live::farm`] runs the farm live.
//! * [`config`] loads `sites.toml` and testbeds with precise errors;
//!   [`units`] reads sizes and rates; [`workflow`] generates and parses
//!   workflows; [`report`] prints, plots and validates run records;
//!   [`metrics`] exports Prometheus series; [`db`] is the control database;
//!   [`calibrate`] predicts real runs (WfCommons traces) and fits the WMS
//!   model's knobs to them.
//! * [`cli`] is the command line, one file per command (with `sweep` and
//!   `bench`); the binary's `main` only calls [`cli::main`].
#![warn(missing_docs)]

pub mod calibrate;
pub mod cli;
pub mod config;
pub mod core;
pub mod db;
pub mod diffusion;
pub mod live;
pub mod memo;
pub mod metrics;
pub mod netbed;
pub mod policy;
pub mod report;
pub mod sim;

pub mod units;
pub mod workflow;
