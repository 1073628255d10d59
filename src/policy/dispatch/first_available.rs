//! first-available (seed 001 §3.2): the first free executor, told nothing of
//! where data is; it takes tasks from the head of the queue.

use super::{DispatchPolicy, FarmView, TaskQueue, first_free};
use crate::core::FileId;
use crate::core::cache_index::ExecId;

/// Load balancing without data awareness: O(1) per decision.
#[derive(Debug, Clone, Copy, Default)]
pub struct FirstAvailable;

impl DispatchPolicy for FirstAvailable {
    fn notify(&mut self, _: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        first_free(view)
    }

    fn pick_up(
        &mut self,
        _: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        _: &FarmView<'_>,
    ) -> Vec<usize> {
        (0..queue.len().min(max)).collect()
    }
}
