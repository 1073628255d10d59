//! max-compute-util (seed 001 §3.2, §4.1): a task always goes to a free
//! executor, the one caching most of its data among the free ones; a pick-up
//! prefers tasks with local hits and fills up from the head of the queue.
//! Full CPUs, at the price of more data movement.

use super::{DispatchPolicy, FarmView, TaskQueue, best_free_candidate, first_free, pick_by_hits};
use crate::core::FileId;
use crate::diffusion::index::ExecId;

/// CPUs first, data second.
#[derive(Debug, Clone, Copy)]
pub struct MaxComputeUtil {
    window: usize,
}

impl MaxComputeUtil {
    /// With a scheduling window of `window` tasks.
    pub fn new(window: usize) -> Self {
        MaxComputeUtil { window }
    }
}

impl DispatchPolicy for MaxComputeUtil {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        match best_free_candidate(files, view) {
            Ok(Some(e)) => Some(e),
            _ => first_free(view),
        }
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        pick_by_hits(e, queue, self.window, max, view, true)
    }
}
