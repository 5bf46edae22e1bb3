//! The coordinator suite against an in-memory arbitrating coordinator: checks the suite
//! itself without a server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use slotcron::{Claim, ClaimOutcome, Coordinator, CoordinatorError, testkit};

/// One namespace's claims: trigger key → expiry (`None`: never), and fencing counters.
#[derive(Default)]
struct Space {
    claims: HashMap<String, Option<Instant>>,
    fencing: HashMap<String, u64>,
}

/// Set-if-absent with expiry on a map shared by every coordinator of a namespace.
struct SharedMemory(Arc<Mutex<Space>>);

#[async_trait]
impl Coordinator for SharedMemory {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let mut space = self.0.lock().unwrap();
        let now = Instant::now();
        let held = space.claims.get(claim.key).is_some_and(|expiry| expiry.is_none_or(|at| at > now));
        if held {
            return Ok(ClaimOutcome::Lost);
        }
        space.claims.insert(claim.key.to_owned(), claim.ttl.map(|ttl| now + ttl));
        let token = space.fencing.entry(claim.job.to_owned()).or_default();
        *token += 1;
        Ok(ClaimOutcome::Won { fencing_token: *token })
    }

    fn name(&self) -> &'static str {
        "shared-memory"
    }
}

/// Builds coordinators that share state per namespace.
#[derive(Default)]
struct Factory(Mutex<HashMap<String, Arc<Mutex<Space>>>>);

impl Factory {
    fn build(&self) -> impl Fn(String) -> std::future::Ready<Arc<dyn Coordinator>> + '_ {
        |namespace| {
            let space = self.0.lock().unwrap().entry(namespace).or_default().clone();
            std::future::ready(Arc::new(SharedMemory(space)) as Arc<dyn Coordinator>)
        }
    }
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

/// The suite must catch a coordinator that lets every replica win.
#[tokio::test]
#[should_panic(expected = "ran 3 times across the fleet")]
async fn the_suite_fails_a_coordinator_that_lets_every_replica_win() {
    testkit::racing_replicas(&|_namespace: String| async {
        Arc::new(slotcron::InProcessCoordinator::new()) as Arc<dyn Coordinator>
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
