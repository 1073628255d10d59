//! The live engine's benchmarks: dispatch, the metrics' cost, faults
//! injected against none, and verified transfer throughput.

use super::*;

pub(super) fn live_dispatch(jobs: usize) -> Result<Figure, Failure> {
    let scenario = dispatch_scenario(jobs)?;
    let run = live::run(&scenario, live::LiveOptions::default())?;
    if !run.succeeded {
        return Err("dispatch bench: not every job ended".into());
    }
    let rate = jobs as f64 / run.wall.as_secs_f64();
    Ok(Figure {
        name: format!("live dispatch: {jobs} zero jobs on 5 sites, jobs ended/s"),
        value: rate,
        unit: "jobs/s".into(),
        goal: Some("≥ 5,000/s".into()),
        met: rate >= 5_000.0,
    })
}

/// The metrics' cost: the live dispatch benchmark with `--metrics-addr` served
/// and scraped every second (as Prometheus would) against the same run
/// without, alternated `rounds` times, as a ratio of total wall times.
pub(super) fn metrics_overhead(jobs: usize, rounds: usize) -> Result<Figure, Failure> {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    let scenario = dispatch_scenario(jobs)?;
    let (mut with, mut without) = (Duration::ZERO, Duration::ZERO);
    let mut scrapes = 0;
    for _ in 0..rounds {
        let run = live::run(&scenario, live::LiveOptions::default())?;
        without += run.wall;
        let addr = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr())?;
        let stop = Arc::new(AtomicBool::new(false));
        let scraper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut ok = 0;
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(mut s) = std::net::TcpStream::connect(addr) {
                        let mut body = Vec::new();
                        if write!(s, "GET /metrics HTTP/1.0\r\n\r\n").is_ok()
                            && s.read_to_end(&mut body).is_ok()
                            && body.starts_with(b"HTTP/1.")
                            && body.get(9..12) == Some(b"200".as_slice())
                        {
                            ok += 1;
                        }
                    }
                    // Sleep a second in small steps, so that the run's end
                    // is not waited on.
                    for _ in 0..20 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                ok
            })
        };
        let opts = live::LiveOptions {
            metrics_addr: Some(addr),
            ..Default::default()
        };
        let run = live::run(&scenario, opts);
        stop.store(true, Ordering::Relaxed);
        scrapes += scraper.join().unwrap_or(0);
        with += run?.wall;
    }
    let ratio = with.as_secs_f64() / without.as_secs_f64();
    Ok(Figure {
        name: format!(
            "metrics: live dispatch of {jobs} jobs with / without /metrics scraped each second ({rounds} runs each, {:.2} vs {:.2} s, {scrapes} scrapes)",
            with.as_secs_f64() / rounds as f64,
            without.as_secs_f64() / rounds as f64
        ),
        value: ratio,
        unit: "× wall".into(),
        goal: Some("≤ 1.05".into()),
        met: ratio <= 1.05,
    })
}

/// Jobs that each pull one 10 kB input from the store, live, round robin on
/// 5 sites (as the dispatch benchmark, with a transfer per job), with the
/// store resetting 5% of its responses halfway against the same run
/// without, alternated three times: the ratio of jobs ended per wall second.
pub(super) fn dispatch_under_resets(jobs: usize) -> Result<Figure, Failure> {
    let files = (0..jobs)
        .map(|i| File {
            name: format!("in{i}"),
            size: 10_000,
        })
        .collect();
    let specs = (0..jobs)
        .map(|i| JobSpec {
            name: format!("j{i}"),
            inputs: vec![format!("in{i}")],
            ..Default::default()
        })
        .collect();
    let wf = Workflow::build(files, specs)?;
    let mut sites = vec![bench_site("store", 0)];
    sites.extend((0..5).map(|i| bench_site(&format!("site{i}"), 16)));
    let settings = ManagerSettings {
        transfer_backoff: 0.0,
        ..unthrottled()
    };
    let clean = bench_scenario("bench-resets", sites, 0, wf, "round-robin", settings);
    let mut faulty = clean.clone();
    faulty.sites[0].faults.resets = crate::core::faults::FaultSpec {
        first: 0,
        probability: 0.05,
    };
    let (mut t_clean, mut t_faulty, mut resets) = (Duration::ZERO, Duration::ZERO, 0);
    for _ in 0..3 {
        for (s, total) in [(&clean, &mut t_clean), (&faulty, &mut t_faulty)] {
            let run = live::run(s, live::LiveOptions::default())?;
            if !run.succeeded {
                return Err("resets bench: not every job ended".into());
            }
            *total += run.wall;
            resets += run.records.faults.len();
        }
    }
    let ratio = t_clean.as_secs_f64() / t_faulty.as_secs_f64();
    Ok(Figure {
        name: format!(
            "faults: live dispatch of {jobs} jobs pulling one 10 kB input each, 5% of responses \
             reset vs none (3 runs each, {:.2} vs {:.2} s, {resets} resets in all)",
            t_faulty.as_secs_f64() / 3.0,
            t_clean.as_secs_f64() / 3.0
        ),
        value: ratio,
        unit: "× jobs/s".into(),
        goal: Some("≥ 0.8".into()),
        met: ratio >= 0.8,
    })
}

/// `testbeds/chaos.toml` live with its faults, against the same testbed with
/// none: the ratio of wall times.
pub(super) fn chaos_vs_clean() -> Result<Figure, Failure> {
    let path = std::path::Path::new("testbeds/chaos.toml");
    let chaos = crate::config::load(path, &Default::default())
        .map_err(|e| format!("{e} (run `gridbed bench faults` from the repository root)"))?;
    let mut clean = chaos.clone();
    clean.faults = Default::default();
    for s in &mut clean.sites {
        s.faults = Default::default();
    }
    let mut walls = Vec::new();
    for s in [&chaos, &clean] {
        let run = live::run(s, live::LiveOptions::default())?;
        if !run.succeeded {
            return Err("chaos bench: not every job ended".into());
        }
        walls.push((run.wall.as_secs_f64(), run.makespan));
    }
    let ratio = walls[0].0 / walls[1].0;
    Ok(Figure {
        name: format!(
            "faults: testbeds/chaos.toml live (2,001 jobs, a crash, 5% resets, 1% corruption) vs \
             without its faults: {:.1} vs {:.1} s wall, makespan {:.0} vs {:.0} s",
            walls[0].0, walls[1].0, walls[0].1, walls[1].1
        ),
        value: ratio,
        unit: "× wall".into(),
        goal: None,
        met: true,
    })
}

/// Pulls `files` files of `size` bytes from one gridftp endpoint to another
/// pool, then copies the same files with `std::fs::copy` + sha256.
pub(super) fn transfer_throughput(files: usize, size: u64) -> Result<Vec<Figure>, Failure> {
    let base = ram_base();
    let dir = || tempfile::tempdir_in(&base);
    let (src_dir, dst_dir, copy_dir) = (dir()?, dir()?, dir()?);
    let src = store::Store::new(src_dir.path());
    let dst = store::Store::new(dst_dir.path());
    let names: Vec<String> = (0..files).map(|i| format!("f{i:02}")).collect();
    for n in &names {
        store::write_generated(&src, n, 1, n, size)?;
    }
    let total = (files as u64 * size) as f64;
    // The same pulls again through both ends' limits, as a live run passes
    // them (the source's out and the receiver's in in the process's max-min
    // model, the source's server sending unshaped to the process's key), at
    // 10 GB/s each: more than loopback carries, so they only cost their
    // bookkeeping.
    let (mut source, mut receiver) = (bench_site("source", 0), bench_site("receiver", 1));
    source.bandwidth_out = 10e9;
    receiver.bandwidth_in = 10e9;
    let em = Emulation {
        time_scale: 1.0,
        byte_scale: 1.0,
    };
    let shapers = Arc::new(live::shaping::GridShapers::new(
        &[(0, &source), (1, &receiver)],
        &crate::core::topology::Topology::flat(2),
        em,
    ));
    let pulls: Result<(Duration, Duration), Failure> = actix_rt::System::new().block_on(async {
        let (url, handle) = serve(&src, &shapers)?;
        let client = reqwest::Client::builder().no_proxy().build()?;
        let start = Instant::now();
        for (i, n) in names.iter().enumerate() {
            live::transfer::pull(&client, &url, &dst, n, i as u64)
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
        let plain = start.elapsed();
        for n in &names {
            std::fs::remove_file(dst.path(n))?;
        }
        let shaped = paced_pulls(&client, &url, &names, &dst, &shapers).await?;
        handle.stop(false).await;
        Ok((plain, shaped))
    });
    let (pulled, shaped) = pulls?;
    // The best a local copy-and-hash does: one reused buffer, the hash
    // streaming over it, the copy written as it goes.
    let mut buf = vec![0u8; 1 << 20];
    let start = Instant::now();
    for n in &names {
        use std::io::{Read, Write};
        let mut from = std::fs::File::open(src.path(n))?;
        let mut to = std::fs::File::create(copy_dir.path().join(n))?;
        let mut hasher = Sha256::new();
        loop {
            let k = from.read(&mut buf)?;
            if k == 0 {
                break;
            }
            hasher.update(&buf[..k]);
            to.write_all(&buf[..k])?;
        }
        std::hint::black_box(hasher.finalize());
    }
    let copied = start.elapsed();
    // sha256 alone over a warm buffer: the ceiling of any verified copy.
    let warm = vec![7u8; 64 << 20];
    let start = Instant::now();
    std::hint::black_box(Sha256::digest(&warm));
    let hashed = warm.len() as f64 / start.elapsed().as_secs_f64();
    let rate = |d: Duration| total / d.as_secs_f64() / 1e6;
    let place = format!(
        "{} in {files} files on {}",
        crate::units::human_bytes(total),
        base.display()
    );
    let ratio = copied.as_secs_f64() / pulled.as_secs_f64();
    Ok(vec![
        Figure {
            name: format!(
                "transfer: verified pull, one stream on loopback ({place}; sha256 alone {:.0} MB/s)",
                hashed / 1e6
            ),
            value: rate(pulled),
            unit: "MB/s".into(),
            goal: Some("≥ 1,000 MB/s".into()),
            met: rate(pulled) >= 1000.0,
        },
        Figure {
            name: "transfer: the same verified pulls through both ends' limits (source out \
                   and receiver in at 10 GB/s in the process's max-min model)"
                .into(),
            value: rate(shaped),
            unit: "MB/s".into(),
            goal: Some("≥ 1,000 MB/s".into()),
            met: rate(shaped) >= 1000.0,
        },
        Figure {
            name: format!(
                "transfer: pull+verify vs the best local copy+sha256 (reused buffer, streaming hash; {:.0} vs {:.0} MB/s)",
                rate(pulled),
                rate(copied)
            ),
            value: ratio,
            unit: "× copy".into(),
            goal: Some("≥ 0.7".into()),
            met: ratio >= 0.7,
        },
    ])
}

/// Where a transfer bench keeps its files: a RAM file system where there is
/// one (as a live run's pools, when they fit), so that both sides measure
/// the software path (HTTP, hashing, copying) rather than the disk's
/// writeback.
fn ram_base() -> std::path::PathBuf {
    ["/dev/shm"]
        .iter()
        .map(std::path::Path::new)
        .find(|p| p.is_dir())
        .map_or_else(std::env::temp_dir, |p| p.to_path_buf())
}

/// Serves `src` on loopback as site 0 of `shapers` (unlimited but for the
/// process's model), on the current actix system.
fn serve(
    src: &store::Store,
    shapers: &live::shaping::GridShapers,
) -> Result<(String, actix_web::dev::ServerHandle), Failure> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let limits = gridftp::Limits {
        bandwidth: f64::INFINITY,
        stream_cap: f64::INFINITY,
        latency: Duration::ZERO,
    };
    let answers = FileServer::new(64, ResponseFaults::none());
    let state = gridftp::Gridftp::new(src.clone(), limits, answers, Arc::default())
        .sharing(shapers.egress(0), shapers.key(), shapers.held());
    let server = gridftp::serve(listener, Arc::new(state))?;
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok((url, handle))
}

/// Pulls `names` from site 0 at `url` into `dst` one after another, each a
/// flow of `shapers`' model from site 0 to site 1; how long they took.
async fn paced_pulls(
    client: &reqwest::Client,
    url: &str,
    names: &[String],
    dst: &store::Store,
    shapers: &Arc<live::shaping::GridShapers>,
) -> Result<Duration, Failure> {
    let start = Instant::now();
    for (i, n) in names.iter().enumerate() {
        let path = shapers.path(0, 1);
        live::transfer::pull_as(client, url, n, dst, n, i as u64, &path)
            .await
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(start.elapsed())
}

/// What a live pull costs beyond the model's time, where transfers are
/// short: `pulls` files of 5 kB one after another from a source in the
/// process at 300 kB/s, spcl-live-4's 5-s transfer at `time_scale = 300`
/// (16.7 ms). Each pull is timed from its request to its file in place,
/// the span a run records; the figure is the mean beyond 16.7 ms.
pub(super) fn paced_small_pulls(pulls: usize) -> Result<Figure, Failure> {
    const SIZE: u64 = 5_000;
    const RATE: f64 = 300e3;
    let base = ram_base();
    let (src_dir, dst_dir) = (tempfile::tempdir_in(&base)?, tempfile::tempdir_in(&base)?);
    let (src, dst) = (store::Store::new(src_dir.path()), store::Store::new(dst_dir.path()));
    let names: Vec<String> = (0..pulls).map(|i| format!("s{i}")).collect();
    for n in &names {
        store::write_generated(&src, n, 1, n, SIZE)?;
    }
    let mut source = bench_site("source", 0);
    source.bandwidth_out = RATE;
    let receiver = bench_site("receiver", 1);
    let shapers = Arc::new(live::shaping::GridShapers::new(
        &[(0, &source), (1, &receiver)],
        &crate::core::topology::Topology::flat(2),
        Emulation {
            time_scale: 1.0,
            byte_scale: 1.0,
        },
    ));
    let took: Result<Duration, Failure> = actix_rt::System::new().block_on(async {
        let (url, handle) = serve(&src, &shapers)?;
        let client = reqwest::Client::builder().no_proxy().build()?;
        let took = paced_pulls(&client, &url, &names, &dst, &shapers).await?;
        handle.stop(false).await;
        Ok(took)
    });
    let model = SIZE as f64 / RATE;
    let beyond = (took?.as_secs_f64() / pulls as f64 - model) * 1e6;
    Ok(Figure {
        name: format!(
            "transfer: {pulls} paced pulls of 5 kB at 300 kB/s one after another, \
             time beyond the model's {:.1} ms each",
            model * 1e3
        ),
        value: beyond,
        unit: "µs".into(),
        goal: Some("≤ 500 µs".into()),
        met: beyond <= 500.0,
    })
}
