//! Site selectors: the prescript's choice of execution site (seed 000 §5.1,
//! seed 002 §5).

mod data_present;
mod random;
mod round_robin;

pub use data_present::DataPresent;
pub use random::Random;
pub use round_robin::RoundRobin;
