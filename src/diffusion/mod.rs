//! Data diffusion (seed 001): a farm of executors with caches, fed by task
//! streams, dispatched by data-aware policies. This room holds the farm's
//! shared structures; the dispatch policies are in `policy::dispatch`.

pub mod config;
pub mod dispatcher;
pub mod farm;

pub mod stream;
