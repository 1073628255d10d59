//! What a run shows: the progress display while it runs, the run record
//! (`--json`, schema in `docs/run-record.md`) and the summary table at the end.

pub mod farm_view;
pub mod plot;
mod progress;
pub mod record;
pub mod run_report;
pub mod validate;

pub use progress::Progress;
pub use record::{Detail, RunRecord};
