//! Real runs as the yardstick: WfCommons traces of real Pegasus/HTCondor runs
//! predicted by the simulator, and the WMS model's knobs ([`crate::core::wms`]
//! and the per-job latencies of `[manager]`) fitted to them by least squares.
//!
//! A trace is a WfFormat instance with an `execution` section: the recorded
//! makespan, the machines (name and cores) and each task's runtime. It runs
//! on a testbed whose execution sites are replaced by the trace's machines
//! (the testbed's first execution site lends them its links, speed and disk),
//! so that one testbed describes a platform's WMS and the traces its runs.
//! `gridbed calibrate` fits the chosen knobs to the makespans of one or more
//! traces and predicts others with the fit; `gridbed validate --trace` sets one
//! prediction beside its record.

mod fit;
mod trace;

pub use fit::{Fit, Knob, calibrate, fitted_table};
pub use trace::{LevelFinish, Prediction, Trace, TraceError, predict, scenario_for};
