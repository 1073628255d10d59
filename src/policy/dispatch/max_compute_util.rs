//! max-compute-util (seed 001 §3.2, §4.1): a task always goes to a free
//! executor, the one caching most of its data among the free ones; a pick-up
//! prefers tasks with local hits and fills up from the head of the queue.
//! Full CPUs, at the price of more data movement.

use super::{DispatchPolicy, FarmView, NextFree, TaskQueue, notify_compute_util, pick_by_hits};
use crate::core::FileId;
use crate::core::cache_index::ExecId;

/// CPUs first, data second.
#[derive(Debug, Clone, Copy)]
pub struct MaxComputeUtil {
    window: usize,
    next: NextFree,
}

impl MaxComputeUtil {
    /// With a scheduling window of `window` tasks.
    pub fn new(window: usize) -> Self {
        MaxComputeUtil {
            window,
            next: NextFree::default(),
        }
    }
}

impl DispatchPolicy for MaxComputeUtil {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        notify_compute_util(files, view, &mut self.next)
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        pick_by_hits(e, queue, self.window, max, view, true, &|_| true)
    }
}
