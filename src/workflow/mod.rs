//! Workflows: the generators of the papers' workflows (and, in later issues,
//! parsers of the formats users bring). Everything here produces a validated
//! [`crate::core::Workflow`].

pub mod clustering;
pub mod formats;
pub mod generators;
pub mod planner;

pub use generators::WorkflowSpec;
