//! gridbed's integration tests: real sites on loopback moving real bytes. One
//! test binary with modules, so the 2-core CI links once.

mod architecture;
mod cli;
mod clustering;
mod common;
mod config_errors;
mod dag_condor;
mod dagman;
mod dagman_htcondor;
mod deploy;
mod farm;
mod faults;
mod formats;
mod gridftp;
mod htcondor_suite;
mod live_runs;
mod max_min;
mod netbed;
mod network;
mod policies;
mod pressure;
mod prometheus;
mod remote_sites;
mod resume;
mod signals;
mod sim;
mod slurm;
mod traces;
mod wfinstance;
