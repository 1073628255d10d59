//! The grid's data placement, the manager's other room (seed 000 §4–5,
//! seed 003 §3–6): where each job goes (`site_choice`), its prescript's
//! staging (`stage_in`), the replica catalogues (`replicas`), the
//! transfers in flight (`transfers`), the pool's schedd (`schedd`), disk
//! room (`room`), re-planning
//! with back-off (`replan`), stage-out (`stage_out`), cache maintenance
//! (`maintenance`), memoization (`memo`) and what the end of a transfer
//! that is no stage-in means (`flight_ends`). Its state is one
//! [`placement::Placement`]; it says what it needs done as
//! [`placement::GridStep`]s, which the manager routes.


// What the room reads from outside it, for its files' `use super::*`.
use super::life::node_life::JobState;
use super::retry::Retry;
use super::timer::Timer;
use replicas::ReplicaPolicy;
use crate::core::{Command, FileId, JobId, SiteId, SiteInfo, Time, TransferFailure, RunDag};
use placement::Placement;
use rustc_hash::FxHashMap as HashMap;

pub(crate) mod flight_ends;
pub(crate) mod maintenance;
pub(crate) mod memo;
pub(crate) mod placement;
pub(crate) mod replan;
pub(crate) mod replicas;
pub(crate) mod room;
pub(crate) mod schedd;
pub(crate) mod site_choice;
pub(crate) mod stage_in;
pub(crate) mod stage_out;
pub(crate) mod transfers;
