//! max-cache-hit (seed 001 §3.2, §4.1): the task goes to the executor caching
//! most of its data; if that executor is busy, the task waits for it. A
//! pick-up takes only tasks the executor has data for — none, and it goes
//! back to the free pool. Most cache hits, at the price of idle CPUs.

use super::{DispatchPolicy, FarmView, NextFree, TaskQueue, notify_cache_hit, pick_by_hits};
use crate::core::FileId;
use crate::core::cache_index::ExecId;

/// Data first, CPUs second.
#[derive(Debug, Clone, Copy)]
pub struct MaxCacheHit {
    window: usize,
    next: NextFree,
}

impl MaxCacheHit {
    /// With a scheduling window of `window` tasks.
    pub fn new(window: usize) -> Self {
        MaxCacheHit {
            window,
            next: NextFree::default(),
        }
    }
}

impl DispatchPolicy for MaxCacheHit {
    fn notify(&mut self, files: &[FileId], view: &FarmView<'_>) -> Option<ExecId> {
        notify_cache_hit(files, view, &mut self.next)
    }

    fn pick_up(
        &mut self,
        e: ExecId,
        queue: &dyn TaskQueue,
        max: usize,
        view: &FarmView<'_>,
    ) -> Vec<usize> {
        pick_by_hits(e, queue, self.window, max, view, false, &|_| true)
    }
}
