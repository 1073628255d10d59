//! A hierarchical DAG as Pegasus writes one (many `SUBDAG EXTERNAL` nodes,
//! each a small DAG of its own), run by the whole `gridbed run --engine
//! sim` command: each sub-DAG read with the DAG, and read as its node is
//! submitted (`scripts = "run"`, DAGMan's way). What a run of many
//! sub-DAGs costs must grow with its nodes, not with their square: the
//! figure is the wall time of four times the sub-DAGs over one.

use super::*;

/// Nodes of each sub-DAG (pairs in a chain of two).
const NODES: usize = 50;

/// Writes a DAG of `subdags` sub-DAGs (chains of ten, so that the DAGMans
/// overlap) of [`NODES`] nodes each into `dir`, and a testbed of it for
/// each way of reading them; returns the testbeds (with the DAG, as
/// submitted).
fn write_dag(dir: &std::path::Path, subdags: usize) -> std::io::Result<[PathBuf; 2]> {
    let mut top = String::new();
    for s in 0..subdags {
        top += &format!("SUBDAG EXTERNAL s{s} inner.dag\n");
        if s % 10 != 0 {
            top += &format!("PARENT s{} CHILD s{s}\n", s - 1);
        }
    }
    std::fs::write(dir.join("w.dag"), top)?;
    let mut inner = String::new();
    for j in 0..NODES {
        inner += &format!("JOB j{j} n.sub\n");
        if j % 2 == 1 {
            inner += &format!("PARENT j{} CHILD j{j}\n", j - 1);
        }
    }
    std::fs::write(dir.join("inner.dag"), inner)?;
    std::fs::write(dir.join("n.sub"), "executable = /bin/true\nqueue\n")?;
    let testbed = |scripts: &str| -> std::io::Result<PathBuf> {
        let path = dir.join(format!("t-{scripts}.toml"));
        let text = format!(
            "strategy = \"round-robin\"\norigin = \"submit-host\"\n\
             [emulation]\ntime_scale = 50\nbyte_scale = 1\n\
             [[site]]\nname = \"submit-host\"\n\
             [[site]]\nname = \"grid3-01\"\ncpus = 64\n\
             [workflow]\nfile = \"w.dag\"\ndefault_runtime = 10\nscripts = \"{scripts}\"\n"
        );
        std::fs::write(&path, text)?;
        Ok(path)
    };
    Ok([testbed("skip")?, testbed("run")?])
}

/// The whole command on `testbed`, timed; it must run every job.
fn run_command(testbed: &std::path::Path, jobs: usize) -> Result<Duration, Failure> {
    let exe = std::env::current_exe()?;
    let dir = testbed.parent().unwrap_or(std::path::Path::new("."));
    let json = dir.join("r.json");
    let t = Instant::now();
    let out = std::process::Command::new(exe)
        .args(["run", "--engine", "sim", "-q", "--json"])
        .arg(&json)
        .arg(testbed)
        .stdout(std::process::Stdio::null())
        .output()?;
    let wall = t.elapsed();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("`gridbed run {}` failed: {err}", testbed.display()).into());
    }
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let done = record["summary"]["jobs_done"].as_u64().unwrap_or(0);
    if done != jobs as u64 {
        return Err(format!("{}: {done} of {jobs} jobs ended", testbed.display()).into());
    }
    Ok(wall)
}

/// `subdags` and a quarter of them (at least 10), each way of reading
/// them: the wall time of the larger over the smaller.
pub(super) fn scaling(subdags: usize) -> Result<Vec<Figure>, Failure> {
    let small = (subdags / 4).max(10);
    let mut walls = Vec::new();
    for n in [small, 4 * small] {
        let dir = tempfile::tempdir()?;
        let testbeds = write_dag(dir.path(), n)?;
        // A sub-DAG node is a job of the run, and so is its entry.
        let jobs = n * (NODES + 2);
        let mut w = Vec::new();
        for tb in &testbeds {
            w.push(run_command(tb, jobs)?);
        }
        walls.push(w);
    }
    let ways = ["read with the DAG", "read as submitted (scripts = \"run\")"];
    Ok((0..2)
        .map(|k| {
            let ratio = walls[1][k].as_secs_f64() / walls[0][k].as_secs_f64();
            Figure {
                name: format!(
                    "subdags: `gridbed run --engine sim` of {} over {small} sub-DAGs of {NODES} nodes, {} ({:.2} vs {:.2} s; linear is 4, quadratic 16)",
                    4 * small,
                    ways[k],
                    walls[1][k].as_secs_f64(),
                    walls[0][k].as_secs_f64()
                ),
                value: ratio,
                unit: "× wall".into(),
                goal: Some("≤ 6".into()),
                met: ratio <= 6.0,
            }
        })
        .collect())
}
