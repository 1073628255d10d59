//! What a run shows: the progress display while it runs, the run record
//! (`--json`, schema in `docs/run-record.md`) and the summary table at the end.

mod progress;
pub mod record;
pub mod run_report;
pub mod validate;
internal!(farm_view, plot, wfinstance);

pub use progress::Progress;
pub use record::{Detail, RunRecord};

use crate::core::trace::TraceEvent;

/// Writes a run's trace as JSON Lines, one event a line (`gridbed run
/// --trace`): the same events, in the same words, whichever engine ran it.
pub fn write_trace(path: &std::path::Path, trace: &[TraceEvent<'_>]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for e in trace {
        serde_json::to_writer(&mut out, e)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
