//! Data diffusion (seed 001): the farm's inputs. Task streams (the paper's
//! arrival ramp, traces, popularity) and farm testbeds in TOML. The farm's
//! world and its dispatcher are in `core::farm`, the dispatch policies in
//! `policy::dispatch`, its engines in `sim::farm` and `live::farm`.

pub mod config;
pub mod experiments;
pub mod stream;
