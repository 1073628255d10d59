//! Issue 38's speed goals: decisions per second of an external policy
//! program over the pipe (a trivial Python one through the helper, and a
//! Rust one, `examples/first_eligible.rs`), beside the built-in
//! round-robin in the same run. Both programs take a round's offers in
//! one request (`batch`); the Python one is timed one offer a request too.

use std::time::Instant;

use super::{Failure, Figure};
use crate::core::rls::Rls;
use crate::core::submissions::Submissions;
use crate::core::{File, JobSpec, RunDag, SiteInfo, Workflow};
use crate::policy::{GridView, Offer, Registry, SiteSelector};

/// Times a manager round that offers `decisions` ready jobs (two inputs
/// each) on five sites, placed in turn as the manager places them: each
/// placement claims a slot, and a selector that looks ahead is told the
/// offers after the current one.
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
    let jobs = (0..=decisions)
        .map(|j| JobSpec {
            name: format!("j{j}"),
            runtime: 60.0,
            inputs: vec!["a".into(), "b".into()],
            outputs: Vec::new(),
            ..Default::default()
        })
        .collect();
    let workflow = RunDag::from(Workflow::build(files, jobs)?);
    let sites: Vec<SiteInfo> = (0..5)
        .map(|i| SiteInfo {
            name: format!("site-{i}"),
            cpus: 1 << 30,
            disk: 1 << 40,
            speed: 1.0,
            overhead: 0.0,
        })
        .collect();
    let mut rls = Rls::new(2);
    rls.register(0, 0);
    rls.register(1, 2);
    let (mut claimed, active) = (vec![0; 5], vec![0; 5]);
    let submissions = Submissions::single(decisions + 1, 0);
    let eligible = [1, 2, 3, 4];
    let offers: Vec<Offer> = (0..=decisions)
        .map(|job| Offer {
            job,
            eligible: eligible.to_vec(),
        })
        .collect();
    let mut start = Instant::now();
    // Job 0 starts the program and shakes hands, untimed.
    for job in 0..=decisions {
        if job == 1 {
            start = Instant::now();
        }
        let view = GridView {
            active: &active,
            claimed: &claimed,
            submissions: &submissions,
            ..GridView::new(&workflow, &sites, &rls)
        };
        let n = selector.look_ahead(job, &view, &eligible);
        let ahead = &offers[(job + 1).min(decisions)..(job + 1 + n).min(decisions + 1)];
        let site = match (job, ahead) {
            (0, _) | (_, []) => selector.place(job, &view, &eligible),
            _ => selector.place_ahead(job, &view, &eligible, ahead),
        }
        .ok_or("the policy held or failed")?;
        claimed[site] += 1;
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
    // The installed package (`pip install gridbed`) when there is one, else
    // the repository's copy, as the shipped examples import it.
    let import = format!(
        "import sys\ntry:\n    import gridbed\nexcept ImportError:\n    sys.path.append({:?})\n    import gridbed\n",
        std::env::current_dir()?.join("python").display().to_string()
    );
    let which = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!("{import}print(gridbed.__file__)"))
        .output()?;
    if !which.status.success() {
        return Err(format!(
            "python3 cannot import the `gridbed` package: `pip install gridbed`, or run the bench in the repository's folder ({})",
            String::from_utf8_lossy(&which.stderr).trim()
        )
        .into());
    }
    eprintln!(
        "note: the Python helper timed is {}",
        String::from_utf8_lossy(&which.stdout).trim()
    );
    let python = |batch: usize| -> Result<f64, Failure> {
        let program = dir.path().join(format!("first-{batch}.py"));
        std::fs::write(
            &program,
            format!(
                "{import}gridbed.serve(select=lambda r: r['eligible'][0], batch={batch})\n"
            ),
        )?;
        let spec = format!("external[cmd=\"python3 {}\"]", program.display());
        time(&mut *registry.site_selector(&spec, 1)?, decisions)
    };
    // The median of five runs (a fresh program each): one run of 20,000
    // decisions is a fifth of a second, shorter than this machine's noise.
    let mut runs = (0..5).map(|_| python(1024)).collect::<Result<Vec<_>, _>>()?;
    runs.sort_by(f64::total_cmp);
    let (py, single) = (runs[2], python(1)?);
    let mut figures = vec![
        Figure {
            name: "policy: built-in round-robin, decisions/s".into(),
            value: builtin,
            unit: "/s".into(),
            goal: None,
            met: true,
        },
        Figure {
            name: "policy: external Python (helper, first eligible), decisions/s, median of 5".into(),
            value: py,
            unit: "/s".into(),
            goal: Some("≥ 100,000/s".into()),
            met: py >= 100_000.0,
        },
        Figure {
            name: "policy: the same, one offer a request (batch=1), decisions/s".into(),
            value: single,
            unit: "/s".into(),
            goal: None,
            met: true,
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
