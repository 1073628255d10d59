//! A run that can make no more progress ends, saying why, rather than wait
//! for ever (issue 61): nothing is in flight (no job staging, queued or
//! running, no transfer, no script), the manager has nothing to wake for,
//! and jobs are left. Only something outside it could move it then (a
//! timed fault, a site coming back), which the engines know of and wait
//! out first. The jobs left ready fail for good with the reason, and their
//! descendants are blocked, so both engines end the same way, with the
//! same words, the record and database written.

use super::{JobState, Manager};
use crate::core::Command;

impl Manager {
    /// Names the site selector in what a stall says (`--strategy`'s name).
    pub fn set_selector_name(&mut self, name: &str) {
        self.grid.selector_name = name.to_string();
    }

    /// Why the run can make no more progress, when it cannot (see the
    /// module docs); `None` while it can.
    pub fn stalled(&self) -> Option<String> {
        let c = &self.dag.counts;
        if self.is_finished()
            || self.next_wakeup().is_some()
            || c.staging + c.queued + c.running > 0
            || self.transfers_in_flight() > 0
            || self.dag.prescripts_running > 0
        {
            return None;
        }
        let left = self.dag.state.len() - c.done - c.failed - c.blocked;
        let exec: Vec<bool> = self.sites.iter().map(|s| s.cpus > 0).collect();
        if exec
            .iter()
            .zip(&self.grid.pool.down)
            .all(|(&runs, &down)| !runs || down)
        {
            return Some(format!(
                "{left} jobs are left and no execution site is up"
            ));
        }
        if !self.dag.held.is_empty() {
            let name = if self.grid.selector_name.is_empty() {
                "site selector".to_string()
            } else {
                format!("site selector `{}`", self.grid.selector_name)
            };
            return Some(format!(
                "every ready job ({}) is held by the {name}, and no job runs or moves that could change its mind",
                self.dag.held.len()
            ));
        }
        Some(format!(
            "{left} jobs are left and none can start: no job runs, no file moves and nothing is due"
        ))
    }

    /// Ends what a stall leaves: each ready job (held or not; with none,
    /// each job left) fails for good, saying why, and its descendants are
    /// blocked; a FINAL node may then run. False when the run is not
    /// stalled.
    pub fn give_up_if_stalled(&mut self, out: &mut Vec<Command>) -> bool {
        let Some(why) = self.stalled() else {
            return false;
        };
        let why = format!("the run could make no more progress: {why}");
        self.dag.held.clear();
        let mut stuck: Vec<usize> = (0..self.dag.state.len())
            .filter(|&j| self.dag.state[j] == JobState::Ready)
            .collect();
        if stuck.is_empty() {
            stuck = (0..self.dag.state.len())
                .filter(|&j| self.dag.state[j] == JobState::Waiting)
                .collect();
        }
        for job in stuck {
            if matches!(self.dag.state[job], JobState::Ready | JobState::Waiting) {
                self.fail_for_good(job, why.clone());
            }
        }
        self.pump(out);
        true
    }
}
