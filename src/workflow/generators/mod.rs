//! Seeded, deterministic workflow generators, picked by `generator = "…"` in a
//! testbed's `[workflow]` table.

mod coadd;
mod dags;
mod epigenomics;
mod inline;
mod pipeline;
mod spatial;

pub use coadd::Coadd;
pub use dags::{Dags, Shape as DagShape};
pub use epigenomics::Epigenomics;
pub use inline::{Inline, InlineFile, InlineJob};
pub use pipeline::Pipeline;
pub use spatial::Spatial;

/// The most jobs a generator builds: ten times the million-task runs this
/// project is measured on, far below what would exhaust a machine's memory.
pub const MAX_JOBS: f64 = 1e7;
/// The most input references (job × file) a generator builds, for the same
/// reason (the full SDSS coadd has 5.4 million).
pub const MAX_REFERENCES: f64 = 5e8;

/// Refuses parameters that would build more than [`MAX_JOBS`] jobs or
/// [`MAX_REFERENCES`] references (counted in `f64`, so that no product
/// overflows); `field` is the parameter the error names.
fn bounded(field: &'static str, jobs: f64, references: f64) -> Result<(), (&'static str, String)> {
    if jobs > MAX_JOBS {
        return Err((
            field,
            format!("these parameters make {jobs:.3e} jobs; expected at most {MAX_JOBS:.0e}"),
        ));
    }
    if references > MAX_REFERENCES {
        return Err((
            field,
            format!(
                "these parameters make {references:.3e} input references; expected at most {MAX_REFERENCES:.0e}"
            ),
        ));
    }
    Ok(())
}

/// Generator names, for error messages.
pub const GENERATORS: &[&str] = &[
    "pipeline",
    "spatial",
    "coadd",
    "dags",
    "epigenomics",
    "inline",
];

/// A value or a list of values.
fn one_or_many<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum OneOrMany<T> {
        One(T),
        Many(Vec<T>),
    }
    match <OneOrMany<T> as serde::Deserialize>::deserialize(d) {
        Ok(OneOrMany::One(v)) => Ok(vec![v]),
        Ok(OneOrMany::Many(v)) => Ok(v),
        Err(_) => Err(serde::de::Error::custom(
            "expected a value or a list of values",
        )),
    }
}

/// Draws a runtime around `base` with uniform relative jitter in ±`jitter`.
fn jittered(base: f64, jitter: f64, rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    use rand::Rng;
    if jitter <= 0.0 {
        return base;
    }
    base * (1.0 + rng.random_range(-jitter..=jitter))
}
