//! The replica catalogues (seed 000 §4's RLS): every copy the manager knows
//! of, and, when it differs, the catalogue the site selectors read. With
//! [`Registration::Postscript`] a staged copy enters the selectors' one in
//! its job's postscript (seed 000's simulator); with
//! [`Registration::Planned`] as soon as a prescript plans to stage it, and
//! leaves it again if it never arrives. Jobs waiting for a lost file to be
//! made again wait here for its registration.

use crate::core::rls::Rls;
use crate::core::{FileId, JobId, SiteId};
use rustc_hash::FxHashMap as HashMap;

/// What the postscript does with staged inputs (seed 000 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplicaPolicy {
    /// Staged copies are private to their job and deleted after it (Random).
    Delete,
    /// Staged copies stay and are registered for other jobs (RandomCaching).
    Caching,
    /// Condor's own file transfer (seed 003 §3, ORIG): staged copies are
    /// deleted after the job, and its outputs are sent back to its submit
    /// machine and deleted at the execute machine, so every input comes
    /// from a submit machine.
    Return,
}

/// When a staged copy enters the replica catalogue that site selectors read
/// (with the `caching` replica policy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Registration {
    /// As soon as a prescript plans to stage it there (it is pending or in
    /// flight): what a selector sees then follows from the decisions made
    /// before, never from whether a transfer has ended yet, which a live run
    /// cannot time to the instant as the simulator does. Transfers read
    /// only copies that are there. A planned copy that never arrives (its
    /// prescript aborted) leaves the catalogue again.
    Planned,
    /// As soon as it is verified at the site (a caching RLS): a prescript
    /// right after a transfer's end sees the copy or not by a few
    /// milliseconds in a live run.
    #[default]
    Arrival,
    /// In the postscript of the job that staged it, after the job ran: seed
    /// 000's simulator (§4, "the postscript ... is responsible for registering
    /// ... the new replicas in the RLS"). Until then the copy serves jobs at
    /// its own site, but selectors and other sites' prescripts do not see it.
    Postscript,
}

/// Where every copy is, as the manager and as the selectors see it.
pub(crate) struct Replicas {
    /// Every replica the manager knows of, used to stage (a copy at the site
    /// itself is reused as soon as it arrives).
    rls: Rls,
    /// The catalogue selectors read, when it is not `rls`.
    catalogue: Option<Rls>,
    /// `Registration::Planned`: prescripts staging each (file, site) now.
    planned: HashMap<(FileId, SiteId), u32>,
    /// Jobs waiting for a file whose every replica was lost to be made again.
    remade: HashMap<FileId, Vec<JobId>>,
    registration: Registration,
}

impl Replicas {
    /// The catalogues of `files` files with the initial copies `placement`
    /// (file, site); the selectors read their own when `registration`
    /// delays or advances what they see.
    pub(crate) fn new(
        files: usize,
        placement: &[(FileId, SiteId)],
        registration: Registration,
        policy: ReplicaPolicy,
    ) -> Self {
        let mut rls = Rls::new(files);
        for &(f, s) in placement {
            rls.register(f, s);
        }
        let apart = registration == Registration::Postscript
            || (registration == Registration::Planned && policy == ReplicaPolicy::Caching);
        Replicas {
            catalogue: apart.then(|| rls.clone()),
            rls,
            planned: HashMap::default(),
            remade: HashMap::default(),
            registration,
        }
    }

    /// Every replica the manager knows of.
    pub(crate) fn rls(&self) -> &Rls {
        &self.rls
    }

    /// The catalogue the selectors read.
    pub(crate) fn for_selectors(&self) -> &Rls {
        self.catalogue.as_ref().unwrap_or(&self.rls)
    }

    /// The sites a transfer may read `file` from: only a copy that is there
    /// (and, with postscript registration, registered in its job's
    /// postscript).
    pub(crate) fn readable(&self, file: FileId) -> &[SiteId] {
        match (&self.catalogue, self.registration) {
            (Some(c), Registration::Postscript) => c.holders(file),
            _ => self.rls.holders(file),
        }
    }

    /// Whether `site` holds `file`.
    pub(crate) fn has(&self, file: FileId, site: SiteId) -> bool {
        self.rls.has(file, site)
    }

    /// The sites holding `file`.
    pub(crate) fn holders(&self, file: FileId) -> &[SiteId] {
        self.rls.holders(file)
    }

    /// A copy now at `site`, registered for everyone (an output, or a staged
    /// copy in its job's postscript); returns the jobs that waited for it
    /// to be made again.
    pub(crate) fn register(&mut self, file: FileId, site: SiteId) -> Option<Vec<JobId>> {
        self.rls.register(file, site);
        if let Some(c) = self.catalogue.as_mut() {
            c.register(file, site);
        }
        self.take_waiting(file)
    }

    /// A staged copy verified at `site`: every later prescript may use it;
    /// the selectors see it now unless they wait for its postscript.
    pub(crate) fn arrived(&mut self, file: FileId, site: SiteId) {
        self.rls.register(file, site);
        if self.registration == Registration::Planned
            && let Some(c) = self.catalogue.as_mut()
        {
            c.register(file, site);
        }
    }

    /// Postscript registration: the copies of `staged` at `site` enter the
    /// selectors' catalogue.
    pub(crate) fn publish(&mut self, staged: &[FileId], site: SiteId) {
        if self.registration != Registration::Postscript {
            return;
        }
        if let Some(c) = self.catalogue.as_mut() {
            for &f in staged.iter().filter(|&&f| self.rls.has(f, site)) {
                c.register(f, site);
            }
        }
    }

    /// The copy of `file` at `site` is gone (evicted, deleted); the
    /// selectors still see it while a prescript plans it there.
    pub(crate) fn forget(&mut self, file: FileId, site: SiteId) {
        self.rls.unregister(file, site);
        if let Some(c) = self.catalogue.as_mut()
            && !self.planned.contains_key(&(file, site))
        {
            c.unregister(file, site);
        }
    }

    /// Every copy at `site` is lost (it crashed with its pool).
    pub(crate) fn drop_site(&mut self, site: SiteId) {
        self.rls.drop_site(site);
        if let Some(c) = self.catalogue.as_mut() {
            c.drop_site(site);
        }
    }

    /// Whether a placement registers its job's inputs in the selectors'
    /// catalogue at once ([`Registration::Planned`] with caching).
    pub(crate) fn plans(&self) -> bool {
        self.registration == Registration::Planned && self.catalogue.is_some()
    }

    /// [`Registration::Planned`]: `files`, which a prescript plans to stage
    /// at `site`, enter the selectors' catalogue there; returns them (none
    /// with another registration).
    pub(crate) fn plan(&mut self, files: impl IntoIterator<Item = FileId>, site: SiteId) -> Vec<FileId> {
        if !self.plans() {
            return Vec::new();
        }
        let Some(c) = self.catalogue.as_mut() else {
            return Vec::new();
        };
        let files: Vec<FileId> = files.into_iter().collect();
        for &f in &files {
            *self.planned.entry((f, site)).or_default() += 1;
            c.register(f, site);
        }
        files
    }

    /// A prescript that planned `files` at `site` ended (its job submitted,
    /// or aborted): each leaves the selectors' catalogue there unless it
    /// arrived or another prescript still plans it.
    pub(crate) fn unplan(&mut self, files: &[FileId], site: SiteId) {
        for &f in files {
            let Some(n) = self.planned.get_mut(&(f, site)) else {
                continue;
            };
            *n -= 1;
            if *n > 0 {
                continue;
            }
            self.planned.remove(&(f, site));
            if !self.rls.has(f, site)
                && let Some(c) = self.catalogue.as_mut()
            {
                c.unregister(f, site);
            }
        }
    }

    /// `job` waits for `file`, whose every copy was lost, to be made again.
    pub(crate) fn wait_for(&mut self, file: FileId, job: JobId) {
        self.remade.entry(file).or_default().push(job);
    }

    /// The jobs waiting for `file` to be made again, no longer waiting.
    pub(crate) fn take_waiting(&mut self, file: FileId) -> Option<Vec<JobId>> {
        if self.remade.is_empty() {
            return None;
        }
        self.remade.remove(&file)
    }

    /// The replica catalogue, once the run is over.
    pub(crate) fn into_rls(self) -> Rls {
        self.rls
    }

    /// Prescripts planning copies now, (file, site) pairs.
    #[cfg(test)]
    pub(crate) fn planned_len(&self) -> usize {
        self.planned.len()
    }

    /// The selectors' own catalogue, when they have one.
    #[cfg(test)]
    pub(crate) fn catalogue(&self) -> Option<&Rls> {
        self.catalogue.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    const FILES: usize = 3;
    const SITES: usize = 3;

    #[derive(Debug, Clone)]
    enum Op {
        Register(FileId, SiteId),
        Arrived(FileId, SiteId),
        Publish(Vec<FileId>, SiteId),
        Forget(FileId, SiteId),
        DropSite(SiteId),
        Plan(Vec<FileId>, SiteId),
        Unplan(Vec<FileId>, SiteId),
    }

    /// The rules as plain sets: what the manager knows is there, what the
    /// selectors see, and how many prescripts plan each copy.
    #[derive(Default)]
    struct Reference {
        there: BTreeSet<(FileId, SiteId)>,
        seen: BTreeSet<(FileId, SiteId)>,
        planned: BTreeMap<(FileId, SiteId), u32>,
    }

    impl Reference {
        fn apply(&mut self, op: &Op, registration: Registration, apart: bool) {
            let planning = apart && registration == Registration::Planned;
            match op {
                Op::Register(f, s) => {
                    self.there.insert((*f, *s));
                    self.seen.insert((*f, *s));
                }
                Op::Arrived(f, s) => {
                    self.there.insert((*f, *s));
                    if registration == Registration::Planned || !apart {
                        self.seen.insert((*f, *s));
                    }
                }
                Op::Publish(files, s) => {
                    for f in files {
                        if self.there.contains(&(*f, *s)) {
                            self.seen.insert((*f, *s));
                        }
                    }
                }
                Op::Forget(f, s) => {
                    self.there.remove(&(*f, *s));
                    if !self.planned.contains_key(&(*f, *s)) {
                        self.seen.remove(&(*f, *s));
                    }
                }
                Op::DropSite(site) => {
                    self.there.retain(|&(_, s)| s != *site);
                    self.seen.retain(|&(_, s)| s != *site);
                }
                Op::Plan(files, s) if planning => {
                    for f in files {
                        *self.planned.entry((*f, *s)).or_default() += 1;
                        self.seen.insert((*f, *s));
                    }
                }
                Op::Unplan(files, s) => {
                    for f in files {
                        if let Some(n) = self.planned.get_mut(&(*f, *s)) {
                            *n -= 1;
                            if *n == 0 {
                                self.planned.remove(&(*f, *s));
                                if !self.there.contains(&(*f, *s)) {
                                    self.seen.remove(&(*f, *s));
                                }
                            }
                        }
                    }
                }
                Op::Plan(..) => {}
            }
            if !apart {
                self.seen = self.there.clone();
            }
        }
    }

    fn pairs(rls: &Rls) -> BTreeSet<(FileId, SiteId)> {
        (0..FILES)
            .flat_map(|f| rls.holders(f).iter().map(move |&s| (f, s)))
            .collect()
    }

    fn op() -> impl Strategy<Value = Op> {
        let f = 0..FILES;
        let s = 0..SITES;
        let files = proptest::collection::vec(0..FILES, 0..3);
        prop_oneof![
            (f.clone(), s.clone()).prop_map(|(f, s)| Op::Register(f, s)),
            (f.clone(), s.clone()).prop_map(|(f, s)| Op::Arrived(f, s)),
            (files.clone(), s.clone()).prop_map(|(fs, s)| Op::Publish(fs, s)),
            (f.clone(), s.clone()).prop_map(|(f, s)| Op::Forget(f, s)),
            s.clone().prop_map(Op::DropSite),
            (files.clone(), s.clone()).prop_map(|(fs, s)| Op::Plan(fs, s)),
            (files, s).prop_map(|(fs, s)| Op::Unplan(fs, s)),
        ]
    }

    fn registration() -> impl Strategy<Value = Registration> {
        prop_oneof![
            Just(Registration::Arrival),
            Just(Registration::Planned),
            Just(Registration::Postscript)
        ]
    }

    fn policy() -> impl Strategy<Value = ReplicaPolicy> {
        prop_oneof![
            Just(ReplicaPolicy::Caching),
            Just(ReplicaPolicy::Delete),
            Just(ReplicaPolicy::Return)
        ]
    }

    proptest! {
        /// On a few files and sites, so the same copy is registered,
        /// planned twice and forgotten often, both catalogues stay what
        /// the plain rules say after every step.
        #[test]
        fn both_catalogues_follow_the_plain_rules(
            registration in registration(),
            policy in policy(),
            placement in proptest::collection::vec((0..FILES, 0..SITES), 0..4),
            ops in proptest::collection::vec(op(), 0..40),
        ) {
            let mut replicas = Replicas::new(FILES, &placement, registration, policy);
            let apart = replicas.catalogue().is_some();
            let mut reference = Reference::default();
            for &(f, s) in &placement {
                reference.there.insert((f, s));
                reference.seen.insert((f, s));
            }
            for op in &ops {
                match op {
                    Op::Register(f, s) => {
                        replicas.register(*f, *s);
                    }
                    Op::Arrived(f, s) => replicas.arrived(*f, *s),
                    Op::Publish(fs, s) => replicas.publish(fs, *s),
                    Op::Forget(f, s) => replicas.forget(*f, *s),
                    Op::DropSite(s) => replicas.drop_site(*s),
                    Op::Plan(fs, s) => {
                        replicas.plan(fs.iter().copied(), *s);
                    }
                    Op::Unplan(fs, s) => replicas.unplan(fs, *s),
                }
                reference.apply(op, registration, apart);
                prop_assert_eq!(pairs(replicas.rls()), reference.there.clone(), "after {:?}", op);
                prop_assert_eq!(pairs(replicas.for_selectors()), reference.seen.clone(), "after {:?}", op);
            }
        }
    }

    #[test]
    fn the_selectors_have_their_own_catalogue_only_when_registration_differs() {
        let apart = |r, p| Replicas::new(1, &[], r, p).catalogue().is_some();
        assert!(!apart(Registration::Arrival, ReplicaPolicy::Caching));
        assert!(apart(Registration::Postscript, ReplicaPolicy::Delete));
        assert!(apart(Registration::Planned, ReplicaPolicy::Caching));
        assert!(!apart(Registration::Planned, ReplicaPolicy::Delete));
    }

    #[test]
    fn jobs_waiting_for_a_lost_file_are_handed_back_once_when_it_is_registered() {
        let mut replicas = Replicas::new(2, &[], Registration::Arrival, ReplicaPolicy::Caching);
        replicas.wait_for(1, 7);
        replicas.wait_for(1, 9);
        assert_eq!(replicas.register(0, 0), None, "nobody waits for file 0");
        assert_eq!(replicas.register(1, 2), Some(vec![7, 9]));
        replicas.forget(1, 2);
        assert_eq!(replicas.register(1, 2), None, "handed back once");
    }

    #[test]
    fn a_transfer_reads_only_copies_there_and_with_postscript_registration_published() {
        let mut replicas = Replicas::new(1, &[(0, 0)], Registration::Postscript, ReplicaPolicy::Caching);
        replicas.arrived(0, 1);
        assert_eq!(replicas.readable(0), &[0], "not yet published");
        replicas.publish(&[0], 1);
        assert_eq!(replicas.readable(0), &[0, 1]);
        let mut planned = Replicas::new(1, &[], Registration::Planned, ReplicaPolicy::Caching);
        assert_eq!(planned.plan([0], 2), vec![0]);
        assert_eq!(planned.for_selectors().holders(0), &[2], "selectors see the plan");
        assert!(planned.readable(0).is_empty(), "a transfer cannot read a plan");
    }
}
