//! `gridbed sweep --backend slurm` on a real Slurm cluster: .ci/run
//! installs Debian's slurm-wlm and munge and starts a one-node cluster on
//! loopback (.ci/slurm-up).

use std::path::Path;

use crate::common::{catalog, gridbed};

/// `sweep.csv` without its `wall_s` column (the only one a run's timing
/// sets), line by line.
fn without_wall(csv: &str) -> Vec<String> {
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let wall = header.iter().position(|h| *h == "wall_s").expect("wall_s");
    csv.lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(wall);
            f.join(",")
        })
        .collect()
}

fn sweep(backend: &str, out: &Path) -> (Option<i32>, String, String) {
    let tb = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbeds/quickstart.toml");
    gridbed(&[
        "sweep",
        tb.to_str().unwrap(),
        "--sites-file",
        catalog().to_str().unwrap(),
        "--engine",
        "sim",
        "--strategies",
        "random,data-present",
        "--sites",
        "2,4",
        "--maxpre",
        "20",
        "--seeds",
        "1,2,3",
        "--backend",
        backend,
        "--out",
        out.to_str().unwrap(),
        "-q",
    ])
}

#[test]
#[ignore = "needs a Slurm cluster (sbatch): .ci/run starts a one-node one with .ci/slurm-up"]
fn a_twelve_run_sweep_as_a_slurm_job_array_writes_the_local_sweeps_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (local, slurm) = (dir.path().join("local"), dir.path().join("slurm"));
    let (code, _, err) = sweep("local", &local);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = sweep("slurm", &slurm);
    assert_eq!(code, Some(0), "{err}");
    let (a, b) = (
        std::fs::read_to_string(local.join("sweep.csv")).unwrap(),
        std::fs::read_to_string(slurm.join("sweep.csv")).unwrap(),
    );
    assert_eq!(a.lines().count(), 1 + 12, "{a}");
    assert_eq!(without_wall(&a), without_wall(&b));
    assert_eq!(
        std::fs::read_to_string(local.join("summary.csv")).unwrap(),
        std::fs::read_to_string(slurm.join("summary.csv")).unwrap()
    );
    // Slurm ran them: one array task a run, each with its log and its row.
    let plan = std::fs::read_to_string(slurm.join("slurm/plan.json")).unwrap();
    assert!(plan.contains("\"cells\""));
    let script = std::fs::read_to_string(slurm.join("slurm/sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-11"), "{script}");
    for i in 0..12 {
        assert!(
            slurm.join(format!("slurm/row-{i}.json")).is_file(),
            "row {i}"
        );
        assert!(
            slurm.join(format!("slurm/task-{i}.log")).is_file(),
            "log {i}"
        );
    }
    for svg in ["makespan-maxpre20.svg", "transfers-maxpre20.svg"] {
        assert!(slurm.join(svg).is_file(), "{svg}");
    }
}
