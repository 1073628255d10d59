//! Eviction policies for site pools and executor caches (seed 000: "a file
//! deletion policy which is set to LRU"; seed 001 §3.1: Random, FIFO, LRU and
//! LFU for the executors' caches; seed 003 §6.1: file worth, LRFU-based).
//! LRU, LFU and worth also rank a site's cache for the manager's cache
//! maintenance after each job ([`crate::policy::CacheWorth`]).

mod fifo;
mod lfu;
mod lru;
mod random;
mod worth;

pub use fifo::Fifo;
pub use lfu::Lfu;
pub use lru::Lru;
pub use random::Random;
pub use worth::Worth;
