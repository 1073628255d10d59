//! Site selectors: the prescript's choice of execution site (seed 000 §5.1,
//! seed 002 §5).

mod clustered;
mod data_present;
mod random;
mod random_caching;
mod round_robin;

pub use clustered::Clustered;
pub use data_present::DataPresent;
pub use random::Random;
pub use random_caching::RandomCaching;
pub use round_robin::RoundRobin;
