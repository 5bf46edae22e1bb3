//! The coordinator conformance suite (`slotcron_testkit`) against the real PostgreSQL
//! server: each namespace the suite asks for is a schema of its own, dropped at the end.

mod common;

use std::sync::{Arc, Mutex};

use common::{Schemas, database_url, isolated, suite_factory};
use slotcron_testkit as testkit;

fn factory(made: Arc<Mutex<Vec<String>>>) -> impl testkit::CoordinatorFactory {
    suite_factory(database_url(), made)
}

#[tokio::test]
async fn claim_contract() {
    isolated(async |schemas: &mut Schemas| testkit::claim_contract(&factory(schemas.adopter())).await).await;
}

#[tokio::test]
async fn namespaces_are_isolated() {
    isolated(async |schemas: &mut Schemas| {
        testkit::namespaces_are_isolated(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn skewed_clocks() {
    isolated(async |schemas: &mut Schemas| testkit::skewed_clocks(&factory(schemas.adopter())).await).await;
}

#[tokio::test]
async fn staggered_starts() {
    isolated(async |schemas: &mut Schemas| testkit::staggered_starts(&factory(schemas.adopter())).await)
        .await;
}

#[tokio::test]
async fn racing_replicas() {
    isolated(async |schemas: &mut Schemas| testkit::racing_replicas(&factory(schemas.adopter())).await).await;
}

#[tokio::test]
async fn one_shots_survive_restarts() {
    isolated(async |schemas: &mut Schemas| {
        testkit::one_shots_survive_restarts(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn lease_contract() {
    isolated(async |schemas: &mut Schemas| testkit::lease_contract(&factory(schemas.adopter())).await).await;
}

#[tokio::test]
async fn forbid_keeps_runs_apart_across_replicas() {
    isolated(async |schemas: &mut Schemas| {
        testkit::forbid_keeps_runs_apart_across_replicas(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn claims_hold_until_an_absolute_instant() {
    isolated(async |schemas: &mut Schemas| {
        testkit::claims_hold_until_an_absolute_instant(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_dead_owners_lease_expires_within_its_ttl() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_dead_owners_lease_expires_within_its_ttl(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn the_high_water_mark_refuses_handled_triggers() {
    isolated(async |schemas: &mut Schemas| {
        testkit::the_high_water_mark_refuses_handled_triggers(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn pauses_and_requests() {
    isolated(async |schemas: &mut Schemas| testkit::pauses_and_requests(&factory(schemas.adopter())).await)
        .await;
}

#[tokio::test]
async fn a_cancel_asked_of_one_replica_stops_the_run_another_holds() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_cancel_asked_of_one_replica_stops_the_run_another_holds(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn batch_claims() {
    isolated(async |schemas: &mut Schemas| testkit::batch_claims(&factory(schemas.adopter())).await).await;
}

#[tokio::test]
async fn a_batch_of_which_another_replica_won_some() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_batch_of_which_another_replica_won_some(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn every_claim_rule_holds_within_a_batch() {
    isolated(async |schemas: &mut Schemas| {
        testkit::every_claim_rule_holds_within_a_batch(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn membership_contract() {
    isolated(async |schemas: &mut Schemas| testkit::membership_contract(&factory(schemas.adopter())).await)
        .await;
}

#[tokio::test]
async fn member_details_and_the_join_check() {
    isolated(async |schemas: &mut Schemas| {
        testkit::member_details_and_the_join_check(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn replicas_started_together_see_each_other_at_their_second_heartbeat() {
    isolated(async |schemas: &mut Schemas| {
        testkit::replicas_started_together_see_each_other_at_their_second_heartbeat(&factory(
            schemas.adopter(),
        ))
        .await
    })
    .await;
}

#[tokio::test]
async fn replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays() {
    isolated(async |schemas: &mut Schemas| {
        testkit::replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays(&factory(
            schemas.adopter(),
        ))
        .await
    })
    .await;
}

#[tokio::test]
async fn a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again(&factory(
            schemas.adopter(),
        ))
        .await
    })
    .await;
}

#[tokio::test]
async fn a_dead_owners_jobs_move_within_the_membership_ttl() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_dead_owners_jobs_move_within_the_membership_ttl(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn an_owner_that_cannot_claim_is_taken_over() {
    isolated(async |schemas: &mut Schemas| {
        testkit::an_owner_that_cannot_claim_is_taken_over(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_slow_owner_that_marked_its_instant_is_not_taken_over() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_slow_owner_that_marked_its_instant_is_not_taken_over(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn an_owner_at_its_concurrency_cap_is_taken_over() {
    isolated(async |schemas: &mut Schemas| {
        testkit::an_owner_at_its_concurrency_cap_is_taken_over(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_non_owners_job_state_follows_the_triggers_their_owners_ran() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_non_owners_job_state_follows_the_triggers_their_owners_ran(&factory(schemas.adopter()))
            .await
    })
    .await;
}

#[tokio::test]
async fn placed_jobs_run_only_on_members_carrying_their_labels() {
    isolated(async |schemas: &mut Schemas| {
        testkit::placed_jobs_run_only_on_members_carrying_their_labels(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member(&factory(schemas.adopter()))
            .await
    })
    .await;
}

#[tokio::test]
async fn a_job_no_live_member_can_run_is_recorded_skipped_no_member() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_job_no_live_member_can_run_is_recorded_skipped_no_member(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_paused_jobs_triggers_are_refused_by_their_owner_alone() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_paused_jobs_triggers_are_refused_by_their_owner_alone(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_replica_claims_ahead_once_its_view_settles() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_replica_claims_ahead_once_its_view_settles(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided() {
    isolated(async |schemas: &mut Schemas| {
        testkit::a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided(&factory(schemas.adopter()))
            .await
    })
    .await;
}

#[tokio::test]
async fn owners_claim_ahead() {
    isolated(async |schemas: &mut Schemas| testkit::owners_claim_ahead(&factory(schemas.adopter())).await)
        .await;
}

#[tokio::test]
async fn an_owner_that_dies_after_claiming_ahead_is_taken_over() {
    isolated(async |schemas: &mut Schemas| {
        testkit::an_owner_that_dies_after_claiming_ahead_is_taken_over(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn an_owner_that_cannot_start_is_taken_over() {
    isolated(async |schemas: &mut Schemas| {
        testkit::an_owner_that_cannot_start_is_taken_over(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn start_marks_contract() {
    isolated(async |schemas: &mut Schemas| testkit::start_marks_contract(&factory(schemas.adopter())).await)
        .await;
}

#[tokio::test]
async fn counted_marks_contract() {
    isolated(async |schemas: &mut Schemas| {
        testkit::counted_marks_contract(&factory(schemas.adopter())).await
    })
    .await;
}

#[tokio::test]
async fn failure_streaks_contract() {
    isolated(async |schemas: &mut Schemas| {
        testkit::failure_streaks_contract(&factory(schemas.adopter())).await
    })
    .await;
}
