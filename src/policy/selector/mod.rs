//! Site selectors: the prescript's choice of execution site (seed 000 §5.1,
//! seed 002 §5), and Condor's matchmaking with and without execute-machine
//! caches (seed 003 §9: ORIG, Job-C), and DAG-Condor's planner (seed 003 §5: DAG-C), and a real run's placement
//! replayed (Recorded).

mod clustered;
mod dag_c;
mod data_present;
mod job_c;
mod last_recent_used;
mod opportunistic;
mod orig;
mod random;
mod random_caching;
mod recorded;
mod round_robin;
mod weighted_linear_random;

pub use clustered::Clustered;
pub use dag_c::DagC;
pub use data_present::DataPresent;
pub use job_c::JobC;
pub use last_recent_used::LastRecentUsed;
pub use opportunistic::Opportunistic;
pub use orig::Orig;
pub use random::Random;
pub use random_caching::RandomCaching;
pub use recorded::Recorded;
pub use round_robin::RoundRobin;
pub use weighted_linear_random::WeightedLinearRandom;
