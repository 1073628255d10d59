//! A workflow written out in the testbed itself: `[[workflow.file]]` and
//! `[[workflow.job]]` tables. For small hand-made DAGs (tests, examples) and
//! the errors a DAG can have: a cycle, a missing parent or file.

use serde::Deserialize;
use toml::Spanned;

use crate::core::{DagError, File, JobSpec, Workflow};
use crate::units::Size;

/// One file of an inline workflow.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineFile {
    /// Logical name.
    pub name: String,
    /// Nominal size.
    pub size: Size,
}

/// One job of an inline workflow.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineJob {
    /// Unique name.
    pub name: String,
    /// Nominal runtime (s).
    #[serde(default)]
    pub runtime: f64,
    /// Input file names.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Output file names.
    #[serde(default)]
    pub outputs: Vec<String>,
    /// Parent job names.
    #[serde(default)]
    pub parents: Vec<String>,
    /// The program it runs (jobs of one transformation cluster together).
    #[serde(default)]
    pub transformation: Option<String>,
    /// A label, for label clustering.
    #[serde(default)]
    pub label: Option<String>,
}

/// Parameters of the inline generator: the workflow itself.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inline {
    /// `"inline"`.
    pub generator: String,
    /// Files.
    #[serde(default)]
    pub file: Vec<InlineFile>,
    /// Jobs, with their positions in the testbed for error messages.
    #[serde(default)]
    pub job: Vec<Spanned<InlineJob>>,
}

impl Inline {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.job.is_empty() {
            return Err(("job", "expected at least one [[workflow.job]]".into()));
        }
        Ok(())
    }

    /// Builds the workflow.
    pub fn generate(&self) -> Result<Workflow, DagError> {
        let files = self
            .file
            .iter()
            .map(|f| File {
                name: f.name.clone(),
                size: f.size.0,
            })
            .collect();
        let jobs = self
            .job
            .iter()
            .map(|j| {
                let j = j.get_ref();
                JobSpec {
                    name: j.name.clone(),
                    runtime: j.runtime,
                    inputs: j.inputs.clone(),
                    outputs: j.outputs.clone(),
                    parents: j.parents.clone(),
                    position: None,
                    transformation: j.transformation.clone(),
                    arguments: None,
                    label: j.label.clone(),
                    members: Vec::new(),
                    site: None,
                }
            })
            .collect();
        Workflow::build(files, jobs)
    }

    /// Index and position of the job an error is about, for the message.
    pub fn locate(&self, err: &DagError) -> Option<(usize, std::ops::Range<usize>)> {
        let name = match err {
            DagError::DuplicateJob(j) | DagError::Cycle(j) => j,
            DagError::MissingParent { job, .. }
            | DagError::MissingFile { job, .. }
            | DagError::ReadBeforeWrite { job, .. }
            | DagError::BadRuntime { job, .. } => job,
            DagError::TwoWriters { second, .. } => second,
            DagError::DuplicateFile(_) | DagError::TooLarge => return None,
        };
        let i = self.job.iter().position(|j| &j.get_ref().name == name)?;
        Some((i, self.job[i].span()))
    }
}
