//! Pegasus's three data configurations (`pegasus.data.configuration`), as
//! the testbed settings that give each one's data path in both engines.
//! None is new to the model; the choice lays out a trace's machines and
//! sets where their data goes:
//!
//! - `condorio`: HTCondor's own file transfer. Every job's inputs come from
//!   the submit host and its outputs go back there before its node ends, a
//!   private copy per job (`replica_policy = "return"`, seed 003 §3). The
//!   submit host's interface carries every byte every job reads.
//! - `nonsharedfs`: the same path through a staging site: jobs read private
//!   copies from it and write their outputs to it (PegasusLite). The
//!   staging site is the testbed's first storage site other than its
//!   origin, where the workflow's inputs are then taken to start (what
//!   Pegasus's stage-in jobs did before); without one it is the submit
//!   host, and the path is `condorio`'s.
//! - `sharedfs`: the machines share one file system that every job reads
//!   and writes in place. They are one site with all their slots and one
//!   pool; a file crosses the network once, from where it starts to the
//!   shared file system (`replica_policy = "caching"`), and a job's reads
//!   from the file system are part of its recorded runtime.

use serde::Serialize;

use crate::config::Scenario;
use crate::core::ReplicaPolicy;

/// A data configuration of Pegasus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Staging {
    /// HTCondor's file transfer from and to the submit host.
    Condorio,
    /// Private copies from and to a staging site.
    Nonsharedfs,
    /// One shared file system, no copies per job.
    Sharedfs,
}

impl Staging {
    /// The three.
    pub const ALL: [Staging; 3] = [Staging::Condorio, Staging::Nonsharedfs, Staging::Sharedfs];

    /// Its name in Pegasus's properties.
    pub fn name(self) -> &'static str {
        match self {
            Staging::Condorio => "condorio",
            Staging::Nonsharedfs => "nonsharedfs",
            Staging::Sharedfs => "sharedfs",
        }
    }

    /// The data path it gives on `scenario`'s sites, in a few words.
    pub fn path(self, scenario: &Scenario) -> String {
        let origin = &scenario.sites[scenario.origin].info.name;
        match self {
            Staging::Condorio => format!("a private copy per job from and to `{origin}`"),
            Staging::Nonsharedfs => match staging_site(scenario) {
                Some(s) => format!(
                    "a private copy per job from and to the staging site `{}`",
                    scenario.sites[s].info.name
                ),
                None => {
                    format!("no storage site besides `{origin}`: staged through it, as condorio")
                }
            },
            Staging::Sharedfs => "one file system shared by the machines, a copy per file".into(),
        }
    }

    /// Sets the data path on a trace's scenario whose machines are laid
    /// out (see [`merges_machines`](Self::merges_machines)).
    pub(super) fn apply(self, scenario: &mut Scenario) {
        scenario.manager.replica_policy = match self {
            Staging::Condorio | Staging::Nonsharedfs => ReplicaPolicy::Return,
            Staging::Sharedfs => ReplicaPolicy::Caching,
        };
        if self == Staging::Nonsharedfs
            && let Some(s) = staging_site(scenario)
        {
            scenario.origin = s;
            for sub in &mut scenario.submissions.list {
                sub.origin = s;
            }
        }
    }

    /// The configuration whose data path this one gives on `scenario`:
    /// `nonsharedfs` with no staging site is `condorio`.
    pub fn effective(self, scenario: &Scenario) -> Staging {
        match self {
            Staging::Nonsharedfs if staging_site(scenario).is_none() => Staging::Condorio,
            other => other,
        }
    }

    /// Whether the trace's machines are one site (a shared file system).
    pub(super) fn merges_machines(self) -> bool {
        self == Staging::Sharedfs
    }

    /// By name.
    pub fn from_name(name: &str) -> Option<Staging> {
        Staging::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The staging site of `nonsharedfs`: the first storage site that is not
/// the origin.
fn staging_site(scenario: &Scenario) -> Option<usize> {
    scenario
        .sites
        .iter()
        .enumerate()
        .position(|(i, s)| s.storage && i != scenario.origin)
}
