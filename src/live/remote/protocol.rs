//! The site daemon's wire protocol: JSON over HTTP, one session a run.
//!
//! ```text
//!   POST   /v1/session    Attach → Attached   pool made, inputs written, gridftp up
//!   POST   /v1/start      Start               every site's endpoint known: the site runs
//!   GET    /v1/events     → NDJSON Line…      the site's events, in order, and its status
//!   POST   /v1/orders     [Order…]            the manager's orders, in order
//!   GET    /v1/status     → Status
//!   GET    /v1/inventory  → SiteReport        every file re-read from disk
//!   DELETE /v1/session                        the pool goes, the endpoint stops
//!   GET    /metrics                           the daemon's Prometheus metrics
//! ```
//!
//! Every request but `/metrics` carries `Authorization: Bearer TOKEN` when the
//! daemon was given a token (always, when it listens beyond loopback).

use serde::{Deserialize, Serialize};

use crate::config::{Emulation, SiteConfig};
use crate::core::{Event, File, FileId, Job, SiteId};
use crate::live::messages::{
    AddJobs,
    Cleanup, Delete, Fetch, Kill, Pin, Release, Remove, RunScript, SiteFault, Submit,
};
use crate::workflow::formats::dagman::NodeScripts;

/// Manager → daemon: the run's site this daemon is to be, with everything
/// it needs to run it as the in-process engine would.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attach {
    /// The run (a label of the daemon's metrics).
    pub run_id: String,
    /// The site's id in the run.
    pub site: SiteId,
    /// The site.
    pub config: SiteConfig,
    /// Every site's name, by id (labels of transfer metrics).
    pub site_names: Vec<String>,
    /// The workflow's files, by id.
    pub files: Vec<File>,
    /// The workflow's jobs, by id.
    pub jobs: Vec<Job>,
    /// Per file, the file whose name its bytes derive from (empty: itself).
    pub content: Vec<FileId>,
    /// The run seed.
    pub seed: u64,
    /// Emulation factors.
    pub emulation: Emulation,
    /// The eviction policy.
    pub eviction: String,
    /// DAGMan PRE/POST scripts by job id (empty when none run).
    #[serde(default)]
    pub scripts: Vec<Option<NodeScripts>>,
    /// Workflow inputs that start at this site.
    pub inputs: Vec<FileId>,
    /// Outputs an interrupted run left at this site.
    #[serde(default)]
    pub resumed: Vec<FileId>,
    /// The shared links and every site's path over them (the daemon
    /// shapes its own pulls over them).
    #[serde(default)]
    pub topology: crate::core::topology::Topology,
}

/// Daemon → manager: the site is made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attached {
    /// Base URL of the site's gridftp endpoint.
    pub gridftp: String,
    /// Its pool directory, on the daemon's host.
    pub pool_dir: String,
}

/// Manager → daemon: every site's gridftp endpoint, by site id; the site
/// starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Start {
    /// Base URLs by site id.
    pub urls: Vec<String>,
}

/// One order of the manager (or of the engine, for a timed fault), exactly
/// the message an in-process site receives.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "order", content = "body", rename_all = "snake_case")]
pub enum Order {
    /// A prescript chose this site for a job.
    Pin(Pin),
    /// Stage a file: pull it from another site's endpoint (or `url`).
    Fetch(Fetch),
    /// Queue a job.
    Submit(Submit),
    /// MonitQueue: take a job out of the queue if it has not started.
    Kill(Kill),
    /// The DAG stopped: remove a job wherever it is.
    Remove(Remove),
    /// Run a node's PRE or POST script.
    RunScript(RunScript),
    /// Unpin a job's files.
    Release(Release),
    /// No job reads this file any more.
    Cleanup(Cleanup),
    /// Cache maintenance deletes a file.
    Delete(Delete),
    /// A timed fault happens now.
    Fault(SiteFault),
    /// A sub-DAG read as the run goes added jobs.
    AddJobs(AddJobs),
}

/// A site's state, as the manager's timeline samples it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// Jobs in its FIFO queue.
    pub queued: u32,
    /// Jobs holding a CPU slot.
    pub running: u32,
    /// Nominal bytes in its pool.
    pub used: u64,
}

/// One line of the event stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "line", content = "body", rename_all = "snake_case")]
pub enum Line {
    /// Something happened at the site (the manager stamps the time).
    Event(Event),
    /// The site's state now (every 100 ms).
    Status(Status),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{TransferFailure, faults::Fault};

    #[test]
    fn orders_and_lines_read_back_as_written() {
        let orders = vec![
            Order::Fetch(Fetch {
                id: 7,
                job: 2,
                file: 3,
                source: 3,
                from: 1,
                url: Some("http://10.0.0.2:7000".into()),
            }),
            Order::Submit(Submit {
                job: 2,
                exit: 0,
                macros: Default::default(),
            }),
            Order::Fault(SiteFault(Fault::Crash { pool_lost: true })),
            Order::AddJobs(AddJobs {
                first: 5,
                jobs: vec![crate::core::Job {
                    name: "S+a".into(),
                    runtime: 10.0,
                    parents: vec![4],
                    ..Default::default()
                }],
                scripts: vec![None],
            }),
        ];
        let text = serde_json::to_string(&orders).unwrap();
        let back: Vec<Order> = serde_json::from_str(&text).unwrap();
        assert_eq!(format!("{back:?}"), format!("{orders:?}"));
        let line = Line::Event(Event::TransferDone {
            id: 7,
            result: Err(TransferFailure::NoSpace { never: false }),
        });
        let text = serde_json::to_string(&line).unwrap();
        assert!(!text.contains('\n'), "one line: {text}");
        let Line::Event(e) = serde_json::from_str(&text).unwrap() else {
            panic!("{text}")
        };
        assert_eq!(Line::Event(e).clone_event(), line.clone_event());
    }

    #[test]
    fn an_unlimited_rate_crosses_json_as_null_and_reads_back_unlimited() {
        let cfg = SiteConfig {
            info: crate::core::SiteInfo {
                name: "s".into(),
                cpus: 2,
                disk: 1 << 40,
                speed: 1.0,
                overhead: 0.0,
            },
            storage: false,
            bandwidth_out: f64::INFINITY,
            bandwidth_in: 1e6,
            stream_cap: 5e6,
            max_connections: 8,
            latency: 0.1,
            faults: Default::default(),
            background: None,
            daemon: None,
        };
        let text = serde_json::to_string(&cfg).unwrap();
        assert!(text.contains("\"bandwidth_out\":null"), "{text}");
        let back: SiteConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(back, cfg);
    }

    impl Line {
        fn clone_event(&self) -> Option<Event> {
            match self {
                Line::Event(e) => Some(e.clone()),
                Line::Status(_) => None,
            }
        }
    }
}
