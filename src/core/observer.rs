//! Who watches a run while it goes: an engine reports its progress to an
//! [`Observer`] handed in by its caller (a bar on a terminal, log lines, or
//! nobody), so that engines depend on no display code.

use super::Time;
use super::manager::StateCounts;

/// Watches a run's progress.
pub trait Observer {
    /// `ended` of the run's items (jobs, tasks) have ended; `msg` says how
    /// the rest stand.
    fn show(&mut self, ended: usize, msg: &str);

    /// The run has `total` items now: a sub-DAG read as the run goes adds
    /// its nodes.
    fn total(&mut self, _total: usize) {}

    /// The run is over.
    fn finish(&mut self) {}

    /// The manager's counts at nominal time `now`, with `transfers` in
    /// flight.
    fn manager_state(&mut self, c: StateCounts, transfers: usize, now: Time) {
        let ended = c.done + c.failed + c.blocked;
        self.total(ended + c.waiting + c.ready + c.staging + c.queued + c.running);
        let msg = format!(
            "{} running, {} queued, {} staging, {transfers} transfers, t = {now:.0} s nominal",
            c.running, c.queued, c.staging
        );
        self.show(ended, &msg);
    }
}

/// Nobody watches (tests, benchmarks, `--quiet`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Unobserved;

impl Observer for Unobserved {
    fn show(&mut self, _: usize, _: &str) {}
}

/// What an engine reports to: `Unobserved` unless the caller hands one in.
pub type BoxedObserver = Box<dyn Observer + Send>;

/// Nobody watches unless the caller says who does.
impl Default for BoxedObserver {
    fn default() -> Self {
        Box::new(Unobserved)
    }
}
