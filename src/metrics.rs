//! Prometheus metrics of a live run, served on `--metrics-addr` at `/metrics`.
//!
//! Every name is prefixed `gridbed_` and documented in `docs/metrics.md`; the
//! names are a stable interface for dashboards. Sizes are nominal bytes unless a
//! name says `real`; durations of transfers are wall seconds (what the
//! emulator really spent), makespan is nominal seconds.

use prometheus::{
    Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

/// The `reason` label values of `gridbed_transfer_failures_total`.
pub const FAILURE_REASONS: [&str; 5] = [
    "corrupt",
    "connection",
    "source_missing",
    "busy",
    "no_space",
];

/// All series of one run, in their own registry.
pub struct Metrics {
    registry: Registry,
    /// Jobs per manager state.
    pub jobs: IntGaugeVec,
    /// Jobs queued / running per site.
    pub site_jobs: IntGaugeVec,
    /// CPU slots per site.
    pub slots_total: IntGaugeVec,
    /// Busy CPU slots per site.
    pub slots_busy: IntGaugeVec,
    /// Slots held by other users' background load, per site.
    pub slots_background: IntGaugeVec,
    /// Successful transfers by source and destination.
    pub transfers: IntCounterVec,
    /// Nominal bytes moved by source and destination.
    pub transfer_bytes: IntCounterVec,
    /// Real bytes moved by source and destination.
    pub transfer_real_bytes: IntCounterVec,
    /// Failed transfer attempts by source, destination and reason.
    pub transfer_failures: IntCounterVec,
    /// Transfers started again after a failure, by source and destination.
    pub transfer_retries: IntCounterVec,
    /// Wall duration of successful transfers.
    pub transfer_duration: HistogramVec,
    /// Transfers in flight.
    pub transfers_in_flight: IntGauge,
    /// Nominal bytes used per site pool.
    pub storage_used: IntGaugeVec,
    /// Nominal capacity per site pool.
    pub storage_capacity: IntGaugeVec,
    /// Evictions per site.
    pub evictions: IntCounterVec,
    /// Faults injected (`[[fault]]`), per site and kind.
    pub faults: IntCounterVec,
    /// Jobs MonitQueue killed in a site queue, per site.
    pub jobs_killed: IntCounterVec,
    /// Kills that found the job already started, per site.
    pub kills_void: IntCounterVec,
    /// Job attempts beyond the first (re-plans and retries).
    pub replans: prometheus::IntCounter,
    /// Inputs of the jobs planned at each site (the cache-hit denominator).
    pub inputs_planned: IntGaugeVec,
    /// Inputs found on site at planning time, per site.
    pub cache_hits: IntGaugeVec,
    /// Prescripts running.
    pub prescripts_running: IntGauge,
    /// The MAXPRE limit (0 = none).
    pub maxpre: IntGauge,
    /// Nominal seconds since the run started.
    pub makespan: Gauge,
    /// Jobs in the workflow.
    pub jobs_total: IntGauge,
    /// Constant 1 with the run's labels, to join on in PromQL.
    pub run_info: GaugeVec,
    /// The data-diffusion farm's series (zero in a workflow run).
    pub farm: FarmMetrics,
}

/// The series of a data-diffusion farm (seed 001 §5's metrics): arrivals and
/// ended tasks (their rates are the arrival rate and the throughput in
/// tasks/s), bytes read by ended tasks and bytes the arrivals ask for (their
/// rates are the measured and the ideal throughput), reads by where they were
/// served, the wait queue and the executors.
pub struct FarmMetrics {
    /// Tasks arrived.
    pub arrived: prometheus::IntCounter,
    /// Tasks ended.
    pub done: prometheus::IntCounter,
    /// Nominal bytes read by the ended tasks.
    pub bytes_read: prometheus::IntCounter,
    /// Nominal bytes the arrived tasks read (the ideal throughput's numerator).
    pub bytes_ideal: prometheus::IntCounter,
    /// Nominal bytes moved from peers and the store.
    pub bytes_moved: prometheus::IntCounter,
    /// Reads by where they were served: `local`, `global`, `miss`.
    pub reads: IntCounterVec,
    /// Tasks in the wait queue.
    pub wait_queue: IntGauge,
    /// Executors registered.
    pub executors: IntGauge,
    /// Executors running a task.
    pub executors_busy: IntGauge,
}

/// The `source` label values of `gridbed_farm_reads_total`.
pub const READ_SOURCES: [&str; 3] = ["local", "global", "miss"];

fn ok<T>(r: prometheus::Result<T>) -> T {
    // Only fails on a malformed name or a duplicate registration: a bug here,
    // never user input.
    r.expect("metric definitions are static and unique")
}

impl Metrics {
    /// Defines and registers every series of the run `run_id`: every series
    /// carries it as a `run_id` label, so that one Prometheus can tell runs
    /// apart and a dashboard selects one with `{run_id="$run"}`.
    pub fn new(run_id: &str) -> Self {
        let labels = std::collections::HashMap::from([("run_id".to_string(), run_id.to_string())]);
        let registry = ok(Registry::new_custom(None, Some(labels)));
        let igv = |name: &str, help: &str, labels: &[&str]| {
            let m = ok(IntGaugeVec::new(Opts::new(name, help), labels));
            ok(registry.register(Box::new(m.clone())));
            m
        };
        let icv = |name: &str, help: &str, labels: &[&str]| {
            let m = ok(IntCounterVec::new(Opts::new(name, help), labels));
            ok(registry.register(Box::new(m.clone())));
            m
        };
        let ig = |name: &str, help: &str| {
            let m = ok(IntGauge::new(name, help));
            ok(registry.register(Box::new(m.clone())));
            m
        };
        let pair = &["source", "destination"];
        let transfer_duration = ok(HistogramVec::new(
            HistogramOpts::new(
                "gridbed_transfer_duration_seconds",
                "Wall-clock duration of successful transfers",
            )
            .buckets(prometheus::exponential_buckets(0.001, 2.0, 16).unwrap_or_default()),
            pair,
        ));
        ok(registry.register(Box::new(transfer_duration.clone())));
        let makespan = ok(Gauge::new(
            "gridbed_makespan_seconds",
            "Nominal seconds since the run started (the makespan once it ends)",
        ));
        ok(registry.register(Box::new(makespan.clone())));
        let run_info = ok(GaugeVec::new(
            Opts::new(
                "gridbed_run_info",
                "Constant 1 labelled with the run's identity",
            ),
            &["testbed", "strategy", "engine", "seed"],
        ));
        ok(registry.register(Box::new(run_info.clone())));
        let ic = |name: &str, help: &str| {
            let m = ok(prometheus::IntCounter::new(name, help));
            ok(registry.register(Box::new(m.clone())));
            m
        };
        let farm = FarmMetrics {
            arrived: ic("gridbed_farm_tasks_arrived_total", "Farm tasks arrived"),
            done: ic("gridbed_farm_tasks_done_total", "Farm tasks ended"),
            bytes_read: ic(
                "gridbed_farm_bytes_read_total",
                "Nominal bytes read by the ended farm tasks (measured throughput)",
            ),
            bytes_ideal: ic(
                "gridbed_farm_bytes_ideal_total",
                "Nominal bytes the arrived farm tasks read (ideal throughput)",
            ),
            bytes_moved: ic(
                "gridbed_farm_bytes_moved_total",
                "Nominal bytes moved to executors from peers and the store",
            ),
            reads: icv(
                "gridbed_farm_reads_total",
                "Farm file reads by where they were served (local, global, miss)",
                &["source"],
            ),
            wait_queue: ig("gridbed_farm_wait_queue", "Farm tasks in the wait queue"),
            executors: ig("gridbed_farm_executors", "Farm executors registered"),
            executors_busy: ig(
                "gridbed_farm_executors_busy",
                "Farm executors running a task",
            ),
        };
        for source in READ_SOURCES {
            farm.reads.with_label_values(&[source]);
        }
        Metrics {
            farm,
            jobs: igv("gridbed_jobs", "Jobs per manager state", &["state"]),
            site_jobs: igv(
                "gridbed_site_jobs",
                "Jobs queued or running per site",
                &["site", "state"],
            ),
            slots_total: igv("gridbed_site_slots", "CPU slots per site", &["site"]),
            slots_busy: igv(
                "gridbed_site_slots_busy",
                "Busy CPU slots per site",
                &["site"],
            ),
            slots_background: igv(
                "gridbed_site_slots_background",
                "CPU slots held by other users' background load, per site",
                &["site"],
            ),
            transfers: icv("gridbed_transfers_total", "Successful transfers", pair),
            transfer_bytes: icv(
                "gridbed_transfer_bytes_total",
                "Nominal bytes transferred",
                pair,
            ),
            transfer_real_bytes: icv(
                "gridbed_transfer_real_bytes_total",
                "Real bytes transferred over loopback",
                pair,
            ),
            transfer_failures: icv(
                "gridbed_transfer_failures_total",
                "Failed transfer attempts (each is retried or re-sourced)",
                &["source", "destination", "reason"],
            ),
            transfer_retries: icv(
                "gridbed_transfer_retries_total",
                "Transfers started again after a failed one (same source, or another replica)",
                pair,
            ),
            transfer_duration,
            transfers_in_flight: ig("gridbed_transfers_in_flight", "Transfers in flight"),
            storage_used: igv(
                "gridbed_storage_used_bytes",
                "Nominal bytes held per site",
                &["site"],
            ),
            storage_capacity: igv(
                "gridbed_storage_capacity_bytes",
                "Nominal capacity per site",
                &["site"],
            ),
            evictions: icv(
                "gridbed_evictions_total",
                "Files evicted per site",
                &["site"],
            ),
            faults: icv(
                "gridbed_faults_total",
                "Faults injected per site and kind (crash, recover, slow, slow_end, shrink, reset, stall, corrupt)",
                &["site", "kind"],
            ),
            jobs_killed: icv(
                "gridbed_jobs_killed_total",
                "Jobs MonitQueue killed in a site queue (each is planned again)",
                &["site"],
            ),
            replans: {
                let m = ok(prometheus::IntCounter::new(
                    "gridbed_job_replans_total",
                    "Job attempts beyond the first: re-plans after a kill, a failure or a lost input",
                ));
                ok(registry.register(Box::new(m.clone())));
                m
            },
            inputs_planned: igv(
                "gridbed_inputs_planned",
                "Inputs of the jobs a prescript planned at each site",
                &["site"],
            ),
            kills_void: icv(
                "gridbed_kills_void_total",
                "MonitQueue kills that found the job already started (it ran; the kill was void)",
                &["site"],
            ),
            cache_hits: igv(
                "gridbed_cache_hits",
                "Inputs already on site when a prescript planned a job there",
                &["site"],
            ),
            prescripts_running: ig("gridbed_prescripts_running", "Prescripts running"),
            maxpre: ig("gridbed_maxpre", "The MAXPRE limit (0 = unlimited)"),
            makespan,
            jobs_total: ig("gridbed_jobs_total", "Jobs in the workflow"),
            run_info,
            registry,
        }
    }

    /// Counts a retry, and makes the failure and retry series of the pair
    /// `from` → `to` exist (at 0 until something fails), so that dashboards
    /// show a flat line rather than no data.
    pub fn transfer_started(&self, from: &str, to: &str, retry: bool) {
        let retries = self.transfer_retries.with_label_values(&[from, to]);
        if retry {
            retries.inc();
        }
        for reason in FAILURE_REASONS {
            self.transfer_failures
                .with_label_values(&[from, to, reason]);
        }
    }

    /// The text exposition of every series.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new("")
    }
}

/// Serves `/metrics` of `metrics` on `listener` until the returned server is
/// stopped.
pub fn serve(
    listener: std::net::TcpListener,
    metrics: std::sync::Arc<Metrics>,
) -> std::io::Result<actix_web::dev::Server> {
    use actix_web::{App, HttpResponse, HttpServer, web};
    let data = web::Data::from(metrics);
    Ok(HttpServer::new(move || {
        App::new().app_data(data.clone()).route(
            "/metrics",
            web::get().to(|m: web::Data<Metrics>| async move {
                HttpResponse::Ok()
                    .content_type("text/plain; version=0.0.4")
                    .body(m.render())
            }),
        )
    })
    .workers(1)
    .tcp_nodelay(true)
    .disable_signals()
    .shutdown_timeout(1)
    .listen(listener)?
    .run())
}
