//! The test kit of slotcron's backends: conformance suites, the manual-clock harness,
//! fleets of replicas, a fault-injecting proxy and the common parts of the benchmarks.
//!
//! The workspace follows sqlx's model: `slotcron` is the core (traits, the engine and the
//! in-memory implementations), each backend is a crate of its own, and the tests they
//! share are this crate. The backend crates, the admin crate and the core's own
//! integration tests take `slotcron-testkit` as a dev-dependency; nothing here is part of
//! slotcron's API, and the crate is not published. It uses the core's public API alone,
//! and reaches into a running scheduler only through the core's one probe for tests,
//! `Scheduler::probe()`.
//!
//! The conformance suite for [`Coordinator`] backends comes first.
//!
//! Every backend must keep the promise of docs/design.md's "Exactly once across replicas"
//! under the same tests. A backend crate takes this crate as a dev-dependency and calls
//! each suite function from its own test, with a factory that builds a fresh
//! coordinator — its own connection, as a separate replica would have — on a namespace
//! (a Redis key prefix, a PostgreSQL schema):
//!
//! ```ignore
//! use std::sync::Arc;
//! use slotcron::Coordinator;
//! use slotcron_testkit as testkit;
//!
//! async fn coordinator(namespace: String) -> Arc<dyn Coordinator> {
//!     Arc::new(MyCoordinator::connect(&format!("{namespace}:")).await.unwrap())
//! }
//!
//! #[tokio::test]
//! async fn skewed_clocks() {
//!     testkit::skewed_clocks(&coordinator).await;
//! }
//! ```
//!
//! The suite drives whole schedulers through a [`Fleet`] of replicas on manual clocks
//! and checks their ledgers; its waits are real, bounded by [`Fleet::DEFAULT_TIMEOUT`],
//! so it runs on a tokio runtime whose time is not paused. It never asserts on elapsed
//! time.
//!
//! Stores and ledgers have suites of their own, [`store_suite`] and [`ledger_suite`]: a
//! backend crate runs them with a factory of fresh, empty stores or ledgers, so the
//! in-memory, SQLite and PostgreSQL implementations behave alike. They panic on the first
//! case that fails; instants in them have microsecond precision, the precision the SQL
//! backends keep.
//!
//! Tests that drive one scheduler on a manual clock without real sleeping use
//! [`harness`]; the backends' fleet benchmarks (R replicas on their own threads and
//! runtimes, under load) share [`fleet_bench`]; the restart tests of the in-memory and
//! SQLite stores share [`restart_after_downtime`]. The SQL ledgers' benchmarks share [`ledger_bench`] and
//! [`ledger_throughput`], and their tests the records and states of [`fixtures`].
//!
//! A networked coordinator's lost-reply tests put a [`FaultProxy`] between it and its real
//! server, to lose a reply on purpose.
//!
//! Tests that need a PostgreSQL server configured their own way (TLS with a certificate
//! of the test's making) start a [`PostgresServer`] of their own.

pub mod fixtures;
pub mod fleet_bench;
pub mod harness;
pub mod ledger_bench;
pub mod ledger_suite;
pub mod ledger_throughput;
pub mod overlap_bench;
pub mod redis_stats;
pub mod store_suite;

mod ahead_suite;
mod batch_suite;
mod control_suite;
mod fleet;
mod lease_suite;
mod ledger;
mod link;
mod ownership_suite;
mod placement_suite;
mod postgres_server;
mod proxy;
mod replica;
mod restart;
mod runs_suite;
mod start_mark_suite;
mod streak_suite;
mod suite;

pub use ahead_suite::{
    a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided,
    a_replica_claims_ahead_once_its_view_settles, an_owner_that_cannot_start_is_taken_over,
    an_owner_that_dies_after_claiming_ahead_is_taken_over, claims_ahead_contract, owners_claim_ahead,
};
pub use batch_suite::{
    a_batch_of_which_another_replica_won_some, batch_claims, every_claim_rule_holds_within_a_batch,
};
pub use control_suite::{a_cancel_asked_of_one_replica_stops_the_run_another_holds, pauses_and_requests};
pub use fleet::{Delivery, Fleet};
pub use lease_suite::{
    a_dead_owners_lease_expires_within_its_ttl, forbid_keeps_runs_apart_across_replicas, lease_contract,
};
pub use ledger::WatchedLedger;
pub use link::{Link, LinkState};
pub use ownership_suite::{
    a_dead_owners_jobs_move_within_the_membership_ttl,
    a_non_owners_job_state_follows_the_triggers_their_owners_ran,
    a_paused_jobs_triggers_are_refused_by_their_owner_alone,
    a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again,
    a_slow_owner_that_marked_its_instant_is_not_taken_over, an_owner_at_its_concurrency_cap_is_taken_over,
    an_owner_that_cannot_claim_is_taken_over, member_details_and_the_join_check, membership_contract,
    replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays,
    replicas_started_together_see_each_other_at_their_second_heartbeat,
};
pub use placement_suite::{
    a_job_no_live_member_can_run_is_recorded_skipped_no_member,
    a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member,
    placed_jobs_run_only_on_members_carrying_their_labels,
};
pub use postgres_server::PostgresServer;
pub use proxy::{Fault, FaultProxy};
pub use replica::Replica;
pub use restart::restart_after_downtime;
pub use runs_suite::counted_marks_contract;
pub use start_mark_suite::start_marks_contract;
pub use streak_suite::failure_streaks_contract;
pub use suite::{
    claim_contract, claims_hold_until_an_absolute_instant, namespaces_are_isolated,
    one_shots_survive_restarts, racing_replicas, skewed_clocks, staggered_starts,
    the_high_water_mark_refuses_handled_triggers,
};

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use slotcron::Coordinator;

/// Builds coordinators for the suite.
///
/// Implemented by every `Fn(String) -> impl Future<Output = Arc<dyn Coordinator>>`.
pub trait CoordinatorFactory {
    /// A new coordinator with its own connection on `namespace`: coordinators built for
    /// the same namespace arbitrate the same claims, and those of different namespaces
    /// share nothing. The suite makes each namespace unique per run (ASCII lowercase
    /// letters, digits and `_`, at most 40 characters), so a backend that keeps state
    /// between runs needs no cleanup for the suite to pass. A factory panics when it
    /// cannot connect.
    fn coordinator(&self, namespace: &str) -> LocalBoxFuture<'static, Arc<dyn Coordinator>>;
}

impl<F, Fut> CoordinatorFactory for F
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Arc<dyn Coordinator>> + 'static,
{
    fn coordinator(&self, namespace: &str) -> LocalBoxFuture<'static, Arc<dyn Coordinator>> {
        self(namespace.to_owned()).boxed_local()
    }
}
