//! Workflows: the generators of the papers' workflows, the parsers of the
//! formats users bring, the clustering of seed 000 and the planner. Everything
//! here produces a validated [`crate::core::Workflow`]; [`spec`] is what a
//! testbed's `[workflow]` table asks for.

pub mod clustering;
pub mod formats;
pub mod generators;
pub mod planner;
pub mod spec;

pub use spec::WorkflowSpec;
