//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

use gridbed::config::{self, Overrides, Scenario};

/// The repository's site catalogue.
pub fn catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sites.toml")
}

/// Writes `body` as a testbed in `dir` and returns its path.
pub fn write_testbed(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write testbed");
    path
}

/// Loads a testbed against the repository's catalogue.
pub fn load(path: &Path) -> Scenario {
    let overrides = Overrides {
        sites_file: Some(catalog()),
        ..Default::default()
    };
    config::load(path, &overrides).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes and loads a testbed.
pub fn scenario(body: &str) -> (tempfile::TempDir, Scenario) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_testbed(dir.path(), "t.toml", body);
    let s = load(&path);
    (dir, s)
}
