//! The coordinator conformance suite (`slotcron_testkit`) against a real `redis-server`
//! per test.

mod support;

use slotcron_testkit as testkit;
use support::{RedisServer, factory};

#[tokio::test]
async fn claim_contract() {
    let server = RedisServer::tcp();
    testkit::claim_contract(&factory(server.config())).await;
}

#[tokio::test]
async fn namespaces_are_isolated() {
    let server = RedisServer::tcp();
    testkit::namespaces_are_isolated(&factory(server.config())).await;
}

#[tokio::test]
async fn skewed_clocks() {
    let server = RedisServer::tcp();
    testkit::skewed_clocks(&factory(server.config())).await;
}

#[tokio::test]
async fn staggered_starts() {
    let server = RedisServer::tcp();
    testkit::staggered_starts(&factory(server.config())).await;
}

#[tokio::test]
async fn racing_replicas() {
    let server = RedisServer::tcp();
    testkit::racing_replicas(&factory(server.config())).await;
}

#[tokio::test]
async fn one_shots_survive_restarts() {
    let server = RedisServer::tcp();
    testkit::one_shots_survive_restarts(&factory(server.config())).await;
}

/// The suite over a Unix socket.
#[tokio::test]
async fn racing_replicas_over_a_unix_socket() {
    let server = RedisServer::unix();
    assert!(server.url().starts_with("redis+unix:///"));
    testkit::racing_replicas(&factory(server.config())).await;
}

/// The suite over TLS (`rediss://`), trusting the test CA.
#[tokio::test]
async fn racing_replicas_over_tls() {
    let server = RedisServer::tls();
    assert!(server.url().starts_with("rediss://"));
    testkit::racing_replicas(&factory(server.config())).await;
}

#[tokio::test]
async fn lease_contract() {
    let server = RedisServer::tcp();
    testkit::lease_contract(&factory(server.config())).await;
}

#[tokio::test]
async fn forbid_keeps_runs_apart_across_replicas() {
    let server = RedisServer::tcp();
    testkit::forbid_keeps_runs_apart_across_replicas(&factory(server.config())).await;
}

#[tokio::test]
async fn a_dead_owners_lease_expires_within_its_ttl() {
    let server = RedisServer::tcp();
    testkit::a_dead_owners_lease_expires_within_its_ttl(&factory(server.config())).await;
}

#[tokio::test]
async fn claims_hold_until_an_absolute_instant() {
    let server = RedisServer::tcp();
    testkit::claims_hold_until_an_absolute_instant(&factory(server.config())).await;
}

#[tokio::test]
async fn the_high_water_mark_refuses_handled_triggers() {
    let server = RedisServer::tcp();
    testkit::the_high_water_mark_refuses_handled_triggers(&factory(server.config())).await;
}

#[tokio::test]
async fn pauses_and_requests() {
    let server = RedisServer::tcp();
    testkit::pauses_and_requests(&factory(server.config())).await;
}

#[tokio::test]
async fn a_cancel_asked_of_one_replica_stops_the_run_another_holds() {
    let server = RedisServer::tcp();
    testkit::a_cancel_asked_of_one_replica_stops_the_run_another_holds(&factory(server.config())).await;
}

#[tokio::test]
async fn membership_contract() {
    let server = RedisServer::tcp();
    testkit::membership_contract(&factory(server.config())).await;
}

#[tokio::test]
async fn member_details_and_the_join_check() {
    let server = RedisServer::tcp();
    testkit::member_details_and_the_join_check(&factory(server.config())).await;
}

#[tokio::test]
async fn replicas_started_together_see_each_other_at_their_second_heartbeat() {
    let server = RedisServer::tcp();
    testkit::replicas_started_together_see_each_other_at_their_second_heartbeat(&factory(server.config()))
        .await;
}

#[tokio::test]
async fn replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays() {
    let server = RedisServer::tcp();
    testkit::replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays(&factory(
        server.config(),
    ))
    .await;
}

#[tokio::test]
async fn a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again() {
    let server = RedisServer::tcp();
    testkit::a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again(&factory(server.config()))
        .await;
}

#[tokio::test]
async fn a_dead_owners_jobs_move_within_the_membership_ttl() {
    let server = RedisServer::tcp();
    testkit::a_dead_owners_jobs_move_within_the_membership_ttl(&factory(server.config())).await;
}

#[tokio::test]
async fn an_owner_that_cannot_claim_is_taken_over() {
    let server = RedisServer::tcp();
    testkit::an_owner_that_cannot_claim_is_taken_over(&factory(server.config())).await;
}

#[tokio::test]
async fn a_slow_owner_that_marked_its_instant_is_not_taken_over() {
    let server = RedisServer::tcp();
    testkit::a_slow_owner_that_marked_its_instant_is_not_taken_over(&factory(server.config())).await;
}

#[tokio::test]
async fn an_owner_at_its_concurrency_cap_is_taken_over() {
    let server = RedisServer::tcp();
    testkit::an_owner_at_its_concurrency_cap_is_taken_over(&factory(server.config())).await;
}

#[tokio::test]
async fn a_non_owners_job_state_follows_the_triggers_their_owners_ran() {
    let server = RedisServer::tcp();
    testkit::a_non_owners_job_state_follows_the_triggers_their_owners_ran(&factory(server.config())).await;
}

#[tokio::test]
async fn batch_claims() {
    let server = RedisServer::tcp();
    testkit::batch_claims(&factory(server.config())).await;
}

#[tokio::test]
async fn a_batch_of_which_another_replica_won_some() {
    let server = RedisServer::tcp();
    testkit::a_batch_of_which_another_replica_won_some(&factory(server.config())).await;
}

#[tokio::test]
async fn every_claim_rule_holds_within_a_batch() {
    let server = RedisServer::tcp();
    testkit::every_claim_rule_holds_within_a_batch(&factory(server.config())).await;
}

#[tokio::test]
async fn a_paused_jobs_triggers_are_refused_by_their_owner_alone() {
    let server = RedisServer::tcp();
    testkit::a_paused_jobs_triggers_are_refused_by_their_owner_alone(&factory(server.config())).await;
}

#[tokio::test]
async fn placed_jobs_run_only_on_members_carrying_their_labels() {
    let server = RedisServer::tcp();
    testkit::placed_jobs_run_only_on_members_carrying_their_labels(&factory(server.config())).await;
}

#[tokio::test]
async fn a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member() {
    let server = RedisServer::tcp();
    testkit::a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member(&factory(server.config())).await;
}

#[tokio::test]
async fn a_job_no_live_member_can_run_is_recorded_skipped_no_member() {
    let server = RedisServer::tcp();
    testkit::a_job_no_live_member_can_run_is_recorded_skipped_no_member(&factory(server.config())).await;
}

#[tokio::test]
async fn claims_ahead_contract() {
    let server = RedisServer::tcp();
    testkit::claims_ahead_contract(&factory(server.config())).await;
}

#[tokio::test]
async fn a_replica_claims_ahead_once_its_view_settles() {
    let server = RedisServer::tcp();
    testkit::a_replica_claims_ahead_once_its_view_settles(&factory(server.config())).await;
}

#[tokio::test]
async fn a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided() {
    let server = RedisServer::tcp();
    testkit::a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided(&factory(server.config())).await;
}

#[tokio::test]
async fn owners_claim_ahead() {
    let server = RedisServer::tcp();
    testkit::owners_claim_ahead(&factory(server.config())).await;
}

#[tokio::test]
async fn an_owner_that_dies_after_claiming_ahead_is_taken_over() {
    let server = RedisServer::tcp();
    testkit::an_owner_that_dies_after_claiming_ahead_is_taken_over(&factory(server.config())).await;
}

#[tokio::test]
async fn an_owner_that_cannot_start_is_taken_over() {
    let server = RedisServer::tcp();
    testkit::an_owner_that_cannot_start_is_taken_over(&factory(server.config())).await;
}

#[tokio::test]
async fn start_marks_contract() {
    let server = RedisServer::tcp();
    testkit::start_marks_contract(&factory(server.config())).await;
}

#[tokio::test]
async fn counted_marks_contract() {
    let server = RedisServer::tcp();
    testkit::counted_marks_contract(&factory(server.config())).await;
}

#[tokio::test]
async fn failure_streaks_contract() {
    let server = RedisServer::tcp();
    testkit::failure_streaks_contract(&factory(server.config())).await;
}
