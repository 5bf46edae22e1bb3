//! slotcron: a cron and timer-task scheduler for Rust services that run as several
//! replicas. Each trigger of a job runs exactly once across the fleet; on a single
//! machine it needs no server at all.
//!
//! - [`schedule`]: what yields fire times — intervals anchored to the Unix epoch, cron
//!   expressions in IANA time zones, one-shots — behind the [`Schedule`] trait.
//! - [`Job`]: a name, a schedule, an async handler and policies.
//! - [`Scheduler`]: the engine that fires jobs through a [`Clock`], claims each trigger
//!   through a [`Coordinator`], records each run in a [`Ledger`] and remembers each job's
//!   last trigger in a [`Store`].
//! - [`redact()`]: a connection string without its password, for the messages of the
//!   backends and the daemon.
//! - `testkit` (cargo feature `testkit`): the conformance suites every backend runs in
//!   its tests, and the test support they share (a manual-clock harness, a fault-injecting
//!   proxy, the ledger benchmark).

pub mod clock;
pub mod context;
pub mod coordinator;
mod engine;
pub mod job;
pub mod ledger;
pub mod policy;
mod redact;
mod registry;
pub mod schedule;
pub mod store;
#[cfg(feature = "testkit")]
pub mod testkit;

pub use clock::{Clock, ManualClock, SystemClock};
pub use context::JobContext;
pub use coordinator::{
    Claim, ClaimOutcome, Coordinator, CoordinatorError, CoordinatorErrorKind, Hold, InProcessCoordinator,
};
pub use engine::{DefineError, Scheduler, SchedulerBuilder, trigger_key};
pub use job::{BoxError, Handler, Job, JobBuilder, JobError};
pub use ledger::{Ledger, LedgerQuery, MemoryLedger, Outcome, Retention, RunRecord};
pub use policy::Misfire;
pub use redact::redact;
pub use registry::HandlerRegistry;
pub use schedule::{Schedule, ScheduleKind};
pub use store::{JobDefinition, JobState, MemoryStore, ScheduleSpec, Store, StoreError};

/// Re-exported so that users name the same versions of these types.
pub use jiff;
pub use tokio_util::sync::CancellationToken;
