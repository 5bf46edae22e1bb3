//! slotcron: a cron and timer-task scheduler for Rust services that run as several
//! replicas. Each trigger of a job runs exactly once across the fleet; on a single
//! machine it needs no server at all.
//!
//! # Start
//!
//! slotcron is not on crates.io yet: depend on a clone by path (or by `git`).
//!
//! ```toml
//! [dependencies]
//! slotcron = { path = "../slotcron/crates/slotcron" }   # where your clone is
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "signal"] }
//! tracing-subscriber = "0.3"                           # to see what the scheduler logs
//! ```
//!
//! A job is a name, a schedule and an async handler; the [`Scheduler`] runs it until its
//! [`CancellationToken`] fires, then lets the running handlers finish:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use slotcron::{BoxError, CancellationToken, Job, JobContext, Scheduler};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), BoxError> {
//!     // Without a subscriber a failing handler is silent: the scheduler reports
//!     // through `tracing` (the outcome is also in the ledger, `scheduler.ledger()`).
//!     tracing_subscriber::fmt::init();
//!
//!     let scheduler = Scheduler::builder().build(); // single-replica mode
//!     scheduler.add(
//!         Job::builder("refresh-cache")
//!             .every(Duration::from_secs(30)) // at :00 and :30 of every minute
//!             .handler(|ctx: JobContext| async move {
//!                 println!("{} for {}", ctx.job(), ctx.trigger());
//!                 Ok::<_, BoxError>(())
//!             })
//!             .build()?,
//!     )?;
//!     scheduler.add(
//!         Job::builder("nightly-report")
//!             .cron("0 2 * * *") // 02:00 UTC; `cron_in` takes a time zone
//!             .timeout(Duration::from_secs(600))
//!             .handler(|_ctx: JobContext| async { Ok::<_, BoxError>(()) })
//!             .build()?,
//!     )?;
//!
//!     let cancel = CancellationToken::new();
//!     let stop = cancel.clone();
//!     tokio::spawn(async move {
//!         let _ = tokio::signal::ctrl_c().await;
//!         stop.cancel();
//!     });
//!     scheduler.run(cancel).await;
//!     Ok(())
//! }
//! ```
//!
//! # Several replicas
//!
//! Give every replica's scheduler a [`Coordinator`] they share: each trigger is then
//! claimed by exactly one replica, which runs it; the others record it as
//! [`Outcome::SkippedLost`]. The backends are crates of their own:
//!
//! - `slotcron-redis`: `RedisCoordinator`, claims in Redis (one script call a claim).
//! - `slotcron-postgres`: `PostgresCoordinator`, claims in a PostgreSQL table; and
//!   `PostgresStore` and `PostgresLedger`, job state and run history shared by the
//!   fleet.
//! - `slotcron-sqlite`: `SqliteStore` and `SqliteLedger`, job state and run history in
//!   one file on this machine, so that a restart resumes where it stopped.
//!
//! ```toml
//! slotcron-redis = { path = "../slotcron/crates/slotcron-redis" }
//! slotcron-sqlite = { path = "../slotcron/crates/slotcron-sqlite" }
//! ```
//!
//! The same service, replicated: only the builder changes.
//!
//! ```ignore
//! use std::sync::Arc;
//!
//! use slotcron::{Retention, Scheduler};
//! use slotcron_redis::{RedisConfig, RedisCoordinator};
//! use slotcron_sqlite::{SqliteDatabase, SqliteLedger, SqliteStore};
//!
//! let coordinator = RedisCoordinator::connect(RedisConfig::new("redis://10.0.0.5:6379")).await?;
//! let database = SqliteDatabase::open("sqlite:state.db").await?;
//! let scheduler = Scheduler::builder()
//!     .coordinator(Arc::new(coordinator))
//!     .store(Arc::new(SqliteStore::new(database.clone())))
//!     .ledger(Arc::new(SqliteLedger::new(database, Retention::default())))
//!     .instance("billing-7f9c") // unique per replica: it shows in claims and history
//!     .build();
//! // then add the jobs and run it as above
//! ```
//!
//! The same guarantee within one process, with no server, through an
//! [`InProcessCoordinator`] the schedulers share (each [`JobContext::fencing_token`]
//! grows with every won claim: pass it to what the handler writes to):
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use slotcron::{BoxError, CancellationToken, InProcessCoordinator, Job, JobContext, Scheduler};
//!
//! # async fn replicas() -> Result<(), BoxError> {
//! let coordinator = Arc::new(InProcessCoordinator::new());
//! let cancel = CancellationToken::new();
//! for replica in ["a", "b", "c"] {
//!     let scheduler = Scheduler::builder().coordinator(coordinator.clone()).instance(replica).build();
//!     scheduler.add(
//!         Job::builder("invoices")
//!             .every(Duration::from_secs(5))
//!             .handler(move |ctx: JobContext| async move {
//!                 println!("{} won {} (token {})", ctx.instance(), ctx.trigger(), ctx.fencing_token());
//!                 Ok::<_, BoxError>(())
//!             })
//!             .build()?,
//!     )?;
//!     let cancel = cancel.clone();
//!     tokio::spawn(async move { scheduler.run(cancel).await });
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # What is here
//!
//! - [`Schedule`]: what yields fire times — [`Interval`]s anchored to the Unix epoch,
//!   [`CronSchedule`]s in IANA time zones, [`EveryDays`], the one-shots [`At`] and
//!   [`After`].
//! - [`Job`]: a name, a schedule, an async handler and policies ([`Misfire`], timeout,
//!   grace).
//! - [`Scheduler`]: the engine that fires jobs through a [`Clock`], claims each trigger
//!   through a [`Coordinator`], records each run in a [`Ledger`] (read it back with a
//!   [`LedgerQuery`]) and remembers each job's last trigger in a [`Store`];
//!   [`Scheduler::reconcile`] converges its jobs to a desired set of [`Plan`]s while it
//!   runs.
//! - Steering a fleet: [`Scheduler::pause`], [`Scheduler::resume`],
//!   [`Scheduler::trigger_now`] and [`Scheduler::backfill`], kept in the coordinator's
//!   (or, alone, the store's) [`Controls`], so that every replica obeys them.
//! - Metrics: the Prometheus-style metrics the engine emits through the `metrics`
//!   facade, as [Metrics](#metrics) below describes.
//! - [`redact()`]: a connection string without its password, for the messages of the
//!   backends and the daemon.
//!
//! The `slotcron` daemon (crate `slotcron-cli`) runs shell jobs from a TOML file or a
//! crontab on top of this crate.
//!
//! # Metrics
//!
//! The engine emits its metrics through the [`metrics`](::metrics) facade; the core
//! installs no exporter, so they cost next to nothing until the application installs a
//! recorder (the daemon installs `slotcron_admin::PrometheusMetrics`:
//! `metrics-exporter-prometheus` with histograms counted in their buckets; it serves
//! `/metrics`).
//! Their names are constants: [`RUNS_TOTAL`], [`RUN_DURATION_SECONDS`],
//! [`TRIGGER_LATENESS_SECONDS`], [`CLAIMS_TOTAL`], [`CLAIM_DURATION_SECONDS`],
//! [`RUNNING_RUNS`], [`TAKEOVERS_TOTAL`], [`TAKEOVER_FOUND_CLAIMED_TOTAL`],
//! [`FLEET_MEMBERS`], [`JOB_LAST_SUCCESS_TIMESTAMP_SECONDS`],
//! [`JOB_LAST_FAILURE_TIMESTAMP_SECONDS`], [`JOB_PAUSED`], [`JOB_RUN_DURATION_SECONDS`],
//! [`JOB_TRIGGER_LATENESS_SECONDS`], [`BUILD_INFO`], [`BACKEND_ERRORS_TOTAL`],
//! [`LEDGER_QUEUED_WRITES`], [`LEDGER_BACKPRESSURE_TOTAL`], [`CONFIG_LAST_RELOAD_SUCCESSFUL`] and
//! [`CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS`]; [`describe_metrics`] gives the
//! recorder their units and help texts. A run counts locally; the engine hands what was
//! counted to the recorder [`METRICS_FLUSH_EVERY`] after activity, when
//! [`Scheduler::run`] ends and at [`Scheduler::flush_metrics`]. Histograms use the
//! [`METRIC_BUCKETS`] buckets. By default a job has four kinds of series (runs by
//! outcome, last success, last failure, paused); its own histograms come with
//! [`SchedulerBuilder::metrics_per_job_histograms`], and
//! [`SchedulerBuilder::metrics_per_job`] turns every per-job series off.

mod chain;
mod clock;
mod context;
mod control;
mod coordinator;
mod engine;
mod error;
mod job;
mod key;
mod ledger;
mod metrics;
mod placement;
mod plan;
mod policy;
mod redact;
mod registry;
mod schedule;
mod store;

pub use chain::check_chains;
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::JobContext;
pub use control::{
    CANCEL_REQUEST_TTL, CancelRequest, ControlError, Controls, ControlsError, FailureStreak,
    IDEMPOTENCY_KEY_TTL, MAX_BACKFILL_TRIGGERS, MAX_IDEMPOTENCY_KEY_LEN, MemoryControls,
};
pub use coordinator::{
    AheadStart, AheadVoid, Claim, ClaimAttemptError, ClaimBatchAttempt, ClaimHolder, ClaimOutcome,
    Coordinator, CoordinatorError, CoordinatorErrorKind, CountedAnswer, CountedMark, DEFAULT_LEASE_TTL,
    DEFAULT_MEMBERSHIP_TTL, Handled, Hold, InProcessCoordinator, Lease, LeaseGrant, LeaseRenewal, LiveMember,
    MAX_CLAIMS_PER_ROUND_TRIP, MEMBERSHIP_JOIN_LOOK, MemberDetails, RequestClaim, SKEW_SAMPLE_EVERY,
    StartMark, TriggerRef, Unstarted, claim_batch_with_read_back, claim_with_read_back, job_owner,
};
pub use engine::{
    CancelAsked, DefineError, FleetMember, JobInfo, JoinError, Leftover, PRESUMED_PARENT_WAIT, PlanError,
    PlanErrorKind, PresumedSweep, RUNS_IN_FLIGHT, Reachable, ReconcileError, ReconcileReport, Resumed,
    Scheduler, SchedulerBuilder, TriggerDryRun, Triggered,
};
pub use error::{BackendErrorKind, BoxError, error_chain};
pub use job::{Handler, Job, JobBuilder, JobError, MAX_NAME_LEN, StoppedByShutdown, validate_job_name};
pub use key::{request_key, trigger_key};
pub use ledger::{
    AttemptEnd, AttemptOutput, Cause, LastRun, Ledger, LedgerBatchError, LedgerError, LedgerQuery,
    LedgerWrite, MAX_OUTPUT_BYTES, MAX_WRITES_PER_BATCH, MemoryLedger, MemoryOutputs, Outcome, OutputChunk,
    OutputStore, OutputStream, Prune, PruneSchedule, Retention, RunOutput, RunProcess, RunRecord,
    UnknownName, UnknownOutcome, decode_chunks, encode_chunks, ended_after_presumed_lost, same_run,
};
// The metrics module is worked on in parallel: its items keep their names there, and
// take at the crate root the names that say what they are.
pub use metrics::{
    BACKEND_ERRORS_TOTAL, BUILD_INFO, CLAIM_DURATION_SECONDS, CLAIMS_TOTAL,
    CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS, CONFIG_LAST_RELOAD_SUCCESSFUL, FLEET_MEMBERS,
    JOB_LAST_FAILURE_TIMESTAMP_SECONDS, JOB_LAST_SUCCESS_TIMESTAMP_SECONDS, JOB_PAUSED,
    JOB_RUN_DURATION_SECONDS, JOB_TRIGGER_LATENESS_SECONDS, LEDGER_BACKPRESSURE_TOTAL, LEDGER_QUEUED_WRITES,
    METRIC_BUCKETS, METRICS_FLUSH_EVERY, RUN_DURATION_SECONDS, RUNNING_RUNS, RUNS_TOTAL,
    TAKEOVER_FOUND_CLAIMED_TOTAL, TAKEOVERS_TOTAL, TRIGGER_LATENESS_SECONDS, describe_metrics,
    record_config_reload,
};
pub use placement::{Label, LabelError, Labels, MAX_LABEL_LEN, Placement};
pub use plan::Plan;
pub use policy::{
    Failure, FailureHook, Misfire, OnInterrupt, Overlap, Permanent, Retry, RunObserver, jitter_offset,
    run_budget,
};
pub use redact::redact;
pub use registry::HandlerRegistry;
pub use schedule::{
    After, At, Calendar, CronError, CronErrorKind, CronField, CronSchedule, DurationError, EveryDays,
    Interval, MAX_DURATION, RunAfter, Schedule, ScheduleDescription, ScheduleError, ScheduleKind, Window,
    parse_duration,
};
pub use schedule::{Excluding, MAX_EXCLUDED_IN_A_ROW};
pub use store::{
    DEFINITION_CHANGES_KEPT, DefinitionChange, JobDefinition, JobState, MemoryStore, ScheduleSpec, Store,
    StoreError, merge_job_state,
};

/// Re-exported so that users name the same versions of these types.
pub use jiff;
pub use tokio_util::sync::CancellationToken;
