//! Data diffusion (seed 001): the farm's inputs and figures. Task streams (the
//! paper's arrival ramp, traces, popularity) and the paper's experiments; farm
//! testbeds in TOML load through `config::farm`. The farm's
//! world and its dispatcher are in `core::farm`, the dispatch policies in
//! `policy::dispatch`, its engines in `sim::farm` and `live::farm`.

pub mod experiments;
pub mod stream;
