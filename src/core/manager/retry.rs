//! How a job goes back to the prescript after an attempt that did not
//! end well: the words both rooms use when they say so (a PRE script's
//! end, a staging that failed), and which the manager carries out
//! (`Manager::retry`).

use crate::core::FileId;

/// How a job goes back to the prescript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// At once, not its fault (an input vanished, a site that can never fit).
    Now,
    /// After a growing back-off, not its fault (no room now); gives up only
    /// when no job anywhere ends meanwhile (see `grid::replan::MAX_STALLS`).
    Later,
    /// After `replan_backoff`, counted against `max_retries`.
    Counted,
    /// Never: the node fails for good (DAGMan's `RETRY … UNLESS-EXIT`).
    Never,
    /// After a growing back-off, not its fault: every site that could run it
    /// is down; as [`Retry::Later`], it gives up only when no job anywhere
    /// ends meanwhile.
    SitesDown,
    /// When this file, whose every replica was lost, is registered again
    /// (its producer ran again), or its producer fails for good: not a try
    /// every back-off while the producer runs.
    Remade(FileId),
}
