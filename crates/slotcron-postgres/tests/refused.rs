//! A role the server refuses while the coordinator runs (its login taken away): the
//! coordinator's errors say `unauthorized`, and it answers again once the role may log in.

mod common;

use common::{Schemas, database_url, isolated};
use slotcron::{Coordinator, CoordinatorErrorKind};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};

#[tokio::test]
async fn a_role_whose_login_is_taken_away_is_unauthorized_until_it_is_given_back() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let role = format!("{schema}_owner");
        let admin = common::connect().await;
        let setup = format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN NOSUPERUSER; \
             CREATE SCHEMA {schema} AUTHORIZATION {role}"
        );
        admin.batch_execute(&setup).await.unwrap();
        let url = database_url().replacen("://postgres@", &format!("://{role}@"), 1);
        let coordinator = PostgresCoordinator::new(PostgresDatabase::open(&url, &schema).await.unwrap());
        assert!(coordinator.time().await.is_ok());

        let refuse = format!(
            "ALTER ROLE {role} NOLOGIN; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
        );
        admin.batch_execute(&refuse).await.unwrap();
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

        admin.batch_execute(&format!("ALTER ROLE {role} LOGIN")).await.unwrap();
        assert!(coordinator.time().await.is_ok(), "answers again");
        drop(coordinator);
        let teardown = format!("DROP SCHEMA {schema} CASCADE; DROP OWNED BY {role}; DROP ROLE {role}");
        admin.batch_execute(&teardown).await.unwrap();
    })
    .await;
}
