//! Eviction policies for site pools (seed 000: "a file deletion policy which is
//! set to LRU"; seeds 001 and 003 add FIFO, LFU, Random and LRFU).

mod lru;

pub use lru::Lru;
