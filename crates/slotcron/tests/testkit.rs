//! The coordinator suite against the in-process coordinator, shared per namespace:
//! checks the suite itself (and the in-process coordinator) without a server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use slotcron::{Coordinator, InProcessCoordinator};
use slotcron_testkit as testkit;

/// Builds coordinators that share their claims per namespace: clones of one
/// [`InProcessCoordinator`] on the system clock.
#[derive(Default)]
struct Factory(Mutex<HashMap<String, InProcessCoordinator>>);

impl Factory {
    fn build(&self) -> impl Fn(String) -> std::future::Ready<Arc<dyn Coordinator>> + '_ {
        |namespace| {
            let shared = self.0.lock().unwrap().entry(namespace).or_default().clone();
            std::future::ready(Arc::new(shared) as Arc<dyn Coordinator>)
        }
    }
}

#[tokio::test]
async fn batch_claims() {
    testkit::batch_claims(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_batch_of_which_another_replica_won_some() {
    testkit::a_batch_of_which_another_replica_won_some(&Factory::default().build()).await;
}

#[tokio::test]
async fn every_claim_rule_holds_within_a_batch() {
    testkit::every_claim_rule_holds_within_a_batch(&Factory::default().build()).await;
}

#[tokio::test]
async fn claim_contract() {
    testkit::claim_contract(&Factory::default().build()).await;
}

#[tokio::test]
async fn namespaces_are_isolated() {
    testkit::namespaces_are_isolated(&Factory::default().build()).await;
}

#[tokio::test]
async fn skewed_clocks() {
    testkit::skewed_clocks(&Factory::default().build()).await;
}

#[tokio::test]
async fn staggered_starts() {
    testkit::staggered_starts(&Factory::default().build()).await;
}

#[tokio::test]
async fn racing_replicas() {
    testkit::racing_replicas(&Factory::default().build()).await;
}

#[tokio::test]
async fn one_shots_survive_restarts() {
    testkit::one_shots_survive_restarts(&Factory::default().build()).await;
}

#[tokio::test]
async fn claims_hold_until_an_absolute_instant() {
    testkit::claims_hold_until_an_absolute_instant(&Factory::default().build()).await;
}

#[tokio::test]
async fn the_high_water_mark_refuses_handled_triggers() {
    testkit::the_high_water_mark_refuses_handled_triggers(&Factory::default().build()).await;
}

/// The suite must catch a coordinator that lets every replica win.
#[tokio::test]
#[should_panic(expected = "ran 3 times across the fleet")]
async fn the_suite_fails_a_coordinator_that_lets_every_replica_win() {
    testkit::racing_replicas(&|_namespace: String| async {
        Arc::new(InProcessCoordinator::new()) as Arc<dyn Coordinator>
    })
    .await;
}

/// One [`slotcron::InProcessCoordinator`] per namespace, shared by its replicas: every
/// claim is won, so the lease alone keeps runs apart.
fn in_process_leases() -> impl Fn(String) -> std::future::Ready<Arc<dyn Coordinator>> {
    let spaces: Mutex<HashMap<String, Arc<slotcron::InProcessCoordinator>>> = Mutex::default();
    move |namespace| {
        let coordinator = spaces.lock().unwrap().entry(namespace).or_default().clone();
        std::future::ready(coordinator as Arc<dyn Coordinator>)
    }
}

#[tokio::test]
async fn lease_contract() {
    testkit::lease_contract(&in_process_leases()).await;
}

#[tokio::test]
async fn forbid_keeps_runs_apart_across_replicas() {
    testkit::forbid_keeps_runs_apart_across_replicas(&in_process_leases()).await;
}

#[tokio::test]
async fn a_dead_owners_lease_expires_within_its_ttl() {
    testkit::a_dead_owners_lease_expires_within_its_ttl(&in_process_leases()).await;
}

#[tokio::test]
async fn pauses_and_requests() {
    testkit::pauses_and_requests(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_cancel_asked_of_one_replica_stops_the_run_another_holds() {
    testkit::a_cancel_asked_of_one_replica_stops_the_run_another_holds(&Factory::default().build()).await;
}

#[tokio::test]
async fn membership_contract() {
    testkit::membership_contract(&Factory::default().build()).await;
}

#[tokio::test]
async fn member_details_and_the_join_check() {
    testkit::member_details_and_the_join_check(&Factory::default().build()).await;
}

#[tokio::test]
async fn replicas_started_together_see_each_other_at_their_second_heartbeat() {
    testkit::replicas_started_together_see_each_other_at_their_second_heartbeat(&Factory::default().build())
        .await;
}

#[tokio::test]
async fn replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays() {
    testkit::replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays(
        &Factory::default().build(),
    )
    .await;
}

#[tokio::test]
async fn a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again() {
    testkit::a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again(
        &Factory::default().build(),
    )
    .await;
}

#[tokio::test]
async fn a_dead_owners_jobs_move_within_the_membership_ttl() {
    testkit::a_dead_owners_jobs_move_within_the_membership_ttl(&Factory::default().build()).await;
}

#[tokio::test]
async fn an_owner_that_cannot_claim_is_taken_over() {
    testkit::an_owner_that_cannot_claim_is_taken_over(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_slow_owner_that_marked_its_instant_is_not_taken_over() {
    testkit::a_slow_owner_that_marked_its_instant_is_not_taken_over(&Factory::default().build()).await;
}

#[tokio::test]
async fn an_owner_at_its_concurrency_cap_is_taken_over() {
    testkit::an_owner_at_its_concurrency_cap_is_taken_over(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_non_owners_job_state_follows_the_triggers_their_owners_ran() {
    testkit::a_non_owners_job_state_follows_the_triggers_their_owners_ran(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_paused_jobs_triggers_are_refused_by_their_owner_alone() {
    testkit::a_paused_jobs_triggers_are_refused_by_their_owner_alone(&Factory::default().build()).await;
}

#[tokio::test]
async fn placed_jobs_run_only_on_members_carrying_their_labels() {
    testkit::placed_jobs_run_only_on_members_carrying_their_labels(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member() {
    testkit::a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member(&Factory::default().build())
        .await;
}

#[tokio::test]
async fn a_job_no_live_member_can_run_is_recorded_skipped_no_member() {
    testkit::a_job_no_live_member_can_run_is_recorded_skipped_no_member(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_replica_claims_ahead_once_its_view_settles() {
    testkit::a_replica_claims_ahead_once_its_view_settles(&Factory::default().build()).await;
}

#[tokio::test]
async fn a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided() {
    testkit::a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided(&Factory::default().build())
        .await;
}

#[tokio::test]
async fn owners_claim_ahead() {
    testkit::owners_claim_ahead(&Factory::default().build()).await;
}

#[tokio::test]
async fn an_owner_that_dies_after_claiming_ahead_is_taken_over() {
    testkit::an_owner_that_dies_after_claiming_ahead_is_taken_over(&Factory::default().build()).await;
}

#[tokio::test]
async fn an_owner_that_cannot_start_is_taken_over() {
    testkit::an_owner_that_cannot_start_is_taken_over(&Factory::default().build()).await;
}

#[tokio::test]
async fn start_marks_contract() {
    testkit::start_marks_contract(&Factory::default().build()).await;
}

#[tokio::test]
async fn counted_marks_contract() {
    testkit::counted_marks_contract(&Factory::default().build()).await;
}

#[tokio::test]
async fn failure_streaks_contract() {
    testkit::failure_streaks_contract(&Factory::default().build()).await;
}
