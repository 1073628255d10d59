//! A site made ready before its run starts, the one way both engines make
//! it (the simulator for each site, the live engine and a `gridbed site`
//! daemon for theirs): its pool under the run's eviction policy with the
//! files it starts with placed (the workflow inputs of a submit machine,
//! which must fit, and a resumed run's outputs, as many as fit), its other
//! users' load and its failing program runs seeded by the run's seed.

use std::sync::Arc;

use super::SiteConfig;
use crate::core::site::Site;
use crate::core::storage::Pool;
use crate::core::{FileId, SiteId, Workflow};
use crate::policy::{self, RunPolicies};

/// Why a site cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SetupError {
    /// Its eviction policy's name.
    #[error(transparent)]
    Eviction(#[from] policy::UnknownPolicy),
    /// The workflow inputs it submits do not fit in its pool.
    #[error("site `{0}` cannot hold the workflow inputs it starts with")]
    InputsDoNotFit(String),
}

/// What one site of a run starts from.
pub struct SiteStart<'a> {
    /// Its id in the run.
    pub id: SiteId,
    /// Its configuration.
    pub cfg: &'a SiteConfig,
    /// The workflow.
    pub workflow: &'a Arc<Workflow>,
    /// The run seed.
    pub seed: u64,
    /// The run's eviction policy's name, built by `policies`.
    pub eviction: &'a str,
    /// The run's policies.
    pub policies: &'a RunPolicies,
    /// Workflow inputs that start here (a submit machine).
    pub inputs: &'a [FileId],
    /// Outputs an interrupted run's ended jobs left here.
    pub resumed: &'a [FileId],
}

impl SiteStart<'_> {
    /// The site's state machine, its pool filled.
    pub fn site(&self) -> Result<Site, SetupError> {
        let (cfg, wf, id) = (self.cfg, self.workflow, self.id);
        let eviction = self.policies.eviction(self.eviction, id)?;
        let mut pool = Pool::new(cfg.info.disk, eviction);
        for &f in self.inputs {
            pool.place_origin(f, wf.files[f].size)
                .map_err(|_| SetupError::InputsDoNotFit(cfg.info.name.clone()))?;
        }
        for &f in self.resumed {
            // What does not fit is lost, as on a lost pool: its producer
            // runs again.
            let _ = pool.place_output(f, wf.files[f].size);
        }
        let load = cfg.background.clone().map(|model| {
            let seed = SiteConfig::load_seed(self.seed, id);
            crate::core::background::Load::new(model, cfg.info.cpus, seed)
        });
        Ok(Site::new(id, cfg.info.clone(), wf.clone(), pool, load)
            .with_exit_faults(cfg.faults.exit_schedule(self.seed, id)))
    }

    /// The files it starts with: resumed outputs, then submitted inputs.
    pub fn files(&self) -> Vec<FileId> {
        let mut files = self.resumed.to_vec();
        files.extend_from_slice(self.inputs);
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_that_do_not_fit_are_refused_and_resumed_outputs_kept_as_they_fit() {
        let path = std::path::Path::new("testbeds/quickstart.toml");
        let mut s = crate::config::load(path, &Default::default()).unwrap();
        let policies = s.policies();
        let inputs = s.inputs_by_site();
        let origin = s.origin;
        assert!(
            s.site_start(origin, &policies, &inputs[origin], &[])
                .site()
                .is_ok()
        );
        s.sites[origin].info.disk = 1;
        let name = s.sites[origin].info.name.clone();
        let start = s.site_start(origin, &policies, &inputs[origin], &[]);
        assert_eq!(start.site().err(), Some(SetupError::InputsDoNotFit(name)));
        let resumed = s.site_start(origin, &policies, &[], &[0]).site().unwrap();
        assert!(
            !resumed.serves(0),
            "a resumed output that does not fit is dropped"
        );
    }
}
