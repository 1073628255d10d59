//! The DAGMan node life cycle, one of the manager's two rooms: each node's
//! state and counts, its release when its parents are over (`release`),
//! the per-DAGMan limits and ready queue lanes (`dagmans`,
//! `dagman_limits`), the sub-DAGs' gates and FINAL nodes (`subdag`),
//! SERVICE nodes (`service`), what a job's, a PRE and a POST script's end
//! mean (`ends`), `RETRY` and failure for good (`failure`), the DAG's stop
//! (`stop`), the script macros (`macros`) and whether the run stalled
//! (`stall`). Its rules run against a [`node_life::LifePort`], through
//! which it tells the manager of each move.


// What the room reads from outside it, for its files' `use super::*`.
use super::retry::Retry;
use crate::core::nodes::NodeSettings;
use crate::core::records::{Outcome, Records};
use crate::core::{JobId, RunDag, ScriptKind, ScriptMacros, Time};
use node_life::{JobState, LifePort, NodeLife, StateCounts};
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use stop::DagAbort;

pub(crate) mod dagman_limits;
pub(crate) mod dagmans;
pub(crate) mod ends;
pub(crate) mod failure;
pub(crate) mod macros;
pub(crate) mod node_life;
pub(crate) mod release;
pub(crate) mod service;
pub(crate) mod stall;
pub(crate) mod stop;
pub(crate) mod subdag;
