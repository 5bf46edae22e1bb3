//! A role the server refuses while the coordinator runs (its login taken away): the
//! coordinator's errors say `unauthorized`, and it answers again once the role may log in.

mod common;

use common::{Schemas, isolated};
use slotcron::{Coordinator, CoordinatorErrorKind};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};

#[tokio::test]
async fn a_role_whose_login_is_taken_away_is_unauthorized_until_it_is_given_back() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let owner = common::SchemaOwner::new(&schema).await;
        let role = &owner.role;
        let coordinator =
            PostgresCoordinator::new(PostgresDatabase::open(&owner.url, &schema).await.unwrap());
        assert!(coordinator.time().await.is_ok());

        let refuse = format!(
            "ALTER ROLE {role} NOLOGIN; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
        );
        owner.admin(&refuse).await;
        // The first calls may still find a connection closing under them.
        let mut errors = Vec::new();
        for _ in 0..10 {
            match coordinator.time().await {
                Err(e) if e.kind() == CoordinatorErrorKind::Unauthorized => break,
                Err(e) => errors.push(e.to_string()),
                Ok(_) => panic!("a role without login still answered"),
            }
        }
        let error = coordinator.time().await.expect_err("refused");
        assert_eq!(error.kind(), CoordinatorErrorKind::Unauthorized, "{error}; before: {errors:?}");
        assert!(error.to_string().contains("not permitted to log in"), "{error}");

        owner.admin(&format!("ALTER ROLE {role} LOGIN")).await;
        assert!(coordinator.time().await.is_ok(), "answers again");
        drop(coordinator);
        owner.drop_all().await;
    })
    .await;
}
