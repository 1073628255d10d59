//! Issue 38's speed goals: decisions per second of an external policy
//! program over the pipe (a trivial Python one through the helper, and a
//! Rust one, `examples/first_eligible.rs`), beside the built-in
//! round-robin in the same run.

use std::time::Instant;

use super::{Failure, Figure};
use crate::core::rls::Rls;
use crate::core::submissions::Submissions;
use crate::core::{File, JobSpec, SiteInfo, Workflow};
use crate::policy::{GridView, Registry, SiteSelector};

/// Times `decisions` placements of one job with two inputs on five sites.
fn time(selector: &mut dyn SiteSelector, decisions: usize) -> Result<f64, Failure> {
    let files = vec![
        File {
            name: "a".into(),
            size: 1 << 20,
        },
        File {
            name: "b".into(),
            size: 5 << 20,
        },
    ];
    let job = JobSpec {
        name: "j".into(),
        runtime: 60.0,
        inputs: vec!["a".into(), "b".into()],
        outputs: Vec::new(),
        ..Default::default()
    };
    let workflow = Workflow::build(files, vec![job])?;
    let sites: Vec<SiteInfo> = (0..5)
        .map(|i| SiteInfo {
            name: format!("site-{i}"),
            cpus: 8,
            disk: 1 << 40,
            speed: 1.0,
            overhead: 0.0,
        })
        .collect();
    let mut rls = Rls::new(2);
    rls.register(0, 0);
    rls.register(1, 2);
    let (claimed, active) = (vec![0; 5], vec![0; 5]);
    let submissions = Submissions::single(1, 0);
    let view = GridView {
        workflow: &workflow,
        sites: &sites,
        rls: &rls,
        active: &active,
        counters: &[],
        last_ended: None,
        claimed: &claimed,
        states: &[],
        submissions: &submissions,
        workload: &[],
        now: 0.0,
    };
    let eligible = [1, 2, 3, 4];
    // The first one starts the program and shakes hands.
    selector
        .place(0, &view, &eligible)
        .ok_or("the policy held or failed")?;
    let start = Instant::now();
    for _ in 0..decisions {
        selector
            .place(0, &view, &eligible)
            .ok_or("the policy held or failed")?;
    }
    Ok(decisions as f64 / start.elapsed().as_secs_f64())
}

/// Decisions/s: built-in round-robin, a trivial Python program, the Rust
/// example program (when built).
pub fn decisions(decisions: usize) -> Result<Vec<Figure>, Failure> {
    let registry = Registry::shared_builtin();
    let builtin = time(
        &mut *registry.site_selector("round-robin", 1)?,
        decisions * 10,
    )?;
    let dir = tempfile::tempdir()?;
    let helper = std::env::current_dir()?.join("python");
    let program = dir.path().join("first.py");
    std::fs::write(
        &program,
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport gridbed_policy as gp\ngp.serve(select=lambda r: r['eligible'][0])\n",
            helper.display().to_string()
        ),
    )?;
    let python = format!("external[cmd=\"python3 {}\"]", program.display());
    let py = time(&mut *registry.site_selector(&python, 1)?, decisions)?;
    let mut figures = vec![
        Figure {
            name: "policy: built-in round-robin, decisions/s".into(),
            value: builtin,
            unit: "/s".into(),
            goal: None,
            met: true,
        },
        Figure {
            name: "policy: external Python (helper, first eligible), decisions/s".into(),
            value: py,
            unit: "/s".into(),
            goal: Some("≥ 20,000/s".into()),
            met: py >= 20_000.0,
        },
    ];
    let exe = std::env::current_exe()?;
    let rust = exe
        .parent()
        .map(|d| d.join("examples").join("first_eligible"))
        .filter(|p| p.is_file());
    match rust {
        Some(path) => {
            let spec = format!("external[cmd=\"{}\"]", path.display());
            let rs = time(&mut *registry.site_selector(&spec, 1)?, decisions * 4)?;
            figures.push(Figure {
                name: "policy: external Rust (examples/first_eligible), decisions/s".into(),
                value: rs,
                unit: "/s".into(),
                goal: Some("≥ 200,000/s".into()),
                met: rs >= 200_000.0,
            });
        }
        None => eprintln!(
            "note: the Rust program is not built: cargo build --release --example first_eligible"
        ),
    }
    Ok(figures)
}
