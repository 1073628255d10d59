//! Eviction policies for site pools and executor caches (seed 000: "a file
//! deletion policy which is set to LRU"; seed 001 §3.1: Random, FIFO, LRU and
//! LFU for the executors' caches).

mod fifo;
mod lfu;
mod lru;
mod random;

pub use fifo::Fifo;
pub use lfu::Lfu;
pub use lru::Lru;
pub use random::Random;
