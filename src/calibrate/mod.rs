//! Real runs as the yardstick: WfCommons traces of real Pegasus/HTCondor runs
//! predicted by the simulator, and the model's knobs fitted to them by least
//! squares: the WMS's latencies ([`crate::core::wms`] and the per-job
//! latencies of `[manager]`) and the platform's data path (the rates of the
//! max-min network and Pegasus's data configuration, [`Staging`]).
//!
//! A trace is a WfFormat instance with an `execution` section: the recorded
//! makespan, the machines (name and cores) and each task's runtime. It runs
//! on a testbed whose execution sites are replaced by the trace's machines
//! (the testbed's first execution site lends them its links, speed and disk),
//! so that one testbed describes a platform's WMS and the traces its runs.
//! `gridbed calibrate` fits the chosen knobs to the makespans of one or more
//! traces of one platform and predicts others with the fit; `gridbed
//! validate --trace` sets one prediction beside its record.

mod choose;
mod cross;
mod fit;
mod knob;
mod ranges;
mod search;
mod staging;
mod trace;

#[cfg(test)]
mod tests;

pub use choose::{Choice, choose};
pub use cross::{CrossValidated, Interval, LEAST_TRACES, LEVEL, LeftOut};
pub use fit::{Candidate, CandidateFit, Fit, Fitted, calibrate, fitted_table, select};
pub use knob::{Knob, Unit, show_rate};
pub use ranges::{Confidence, KnobRange, MODEL_ERROR, Ranges, TOLERANCE};
pub use search::{Method, SIMPLEX_UP_TO};
pub use staging::Staging;
pub use trace::{
    LevelFinish, Machine, Prediction, Trace, TraceError, evidence, one_platform, placed, predict,
    replay, scenario_for, testbed_for,
};
