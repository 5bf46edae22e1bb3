//! Connecting: URL forms (password, database number, Unix socket), and clear errors for
//! bad settings and unreachable or refusing servers.

mod support;

use std::time::Duration;

use redis::Commands;
use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, CoordinatorErrorKind};
use slotcron_redis::{RedisConfig, RedisCoordinator, RedisCoordinatorError};
use support::{Listen, RedisServer, free_port};

const KEY: &str = "job:2024-05-17T00:00:00Z";

fn claim() -> Claim<'static> {
    let trigger: Timestamp = "2024-05-17T00:00:00Z".parse().unwrap();
    Claim {
        job: "job",
        trigger,
        key: KEY,
        instance: "test",
        hold: Some(slotcron::Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO }),
    }
}

/// Whether database `db` holds the claim's key.
fn claimed_in(server: &RedisServer, db: i64) -> bool {
    let mut admin = server.admin_connection().unwrap();
    redis::cmd("SELECT").arg(db).exec(&mut admin).unwrap();
    admin.exists(format!("slotcron:{KEY}")).unwrap()
}

fn password_server(listen: impl Fn(&std::path::Path) -> Listen) -> RedisServer {
    RedisServer::with_args(listen, &["--requirepass", "s3cret"])
}

#[tokio::test]
async fn a_tcp_url_with_user_password_and_database_claims_in_that_database() {
    let server = password_server(|_| Listen::Tcp(free_port()));
    let Listen::Tcp(port) = *server.listen() else { unreachable!() };
    let url = format!("redis://default:s3cret@127.0.0.1:{port}/3");
    let coordinator = RedisCoordinator::connect(RedisConfig::new(url)).await.unwrap();
    assert_eq!(coordinator.claim(&claim()).await.unwrap(), ClaimOutcome::Won { fencing_token: 1 });
    assert!(claimed_in(&server, 3));
    assert!(!claimed_in(&server, 0));
}

#[tokio::test]
async fn a_unix_socket_url_with_password_and_database_claims_in_that_database() {
    let server = password_server(|dir| Listen::Unix(dir.join("redis.sock")));
    let url = format!("{}?db=5&pass=s3cret", server.url());
    assert!(url.starts_with("redis+unix:///"), "{url}");
    let coordinator = RedisCoordinator::connect(RedisConfig::new(url)).await.unwrap();
    assert_eq!(coordinator.claim(&claim()).await.unwrap(), ClaimOutcome::Won { fencing_token: 1 });
    assert!(claimed_in(&server, 5));
    assert!(!claimed_in(&server, 0));
}

#[tokio::test]
async fn a_wrong_password_is_a_connect_error() {
    let server = password_server(|_| Listen::Tcp(free_port()));
    let Listen::Tcp(port) = *server.listen() else { unreachable!() };
    let url = format!("redis://:wrong@127.0.0.1:{port}");
    let error = RedisCoordinator::connect(RedisConfig::new(url)).await.err().expect("refused");
    assert!(matches!(error, RedisCoordinatorError::Connect(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with("redis coordinator: cannot connect: "), "{message}");
    assert!(!message.contains("wrong"), "the password stays out of messages: {message}");
}

/// A password rotated while the coordinator runs: its claims (made with the claim
/// script, through the batch path) fail as `unauthorized`, not `unavailable`.
#[tokio::test]
async fn a_claim_after_the_password_is_rotated_is_unauthorized() {
    let server = password_server(|_| Listen::Tcp(free_port()));
    let Listen::Tcp(port) = *server.listen() else { unreachable!() };
    let url = format!("redis://:s3cret@127.0.0.1:{port}");
    let coordinator = RedisCoordinator::connect(RedisConfig::new(url)).await.unwrap();
    assert_eq!(coordinator.claim(&claim()).await.unwrap(), ClaimOutcome::Won { fencing_token: 1 });

    let mut admin = server.admin_connection().unwrap();
    redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("rotated").exec(&mut admin).unwrap();
    // Ends every connection, this one too: the coordinator's next call reconnects.
    let _ = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("normal").exec(&mut admin);
    // The first claims may still find the connection closing under them.
    let mut errors = Vec::new();
    for _ in 0..10 {
        match coordinator.claim(&claim()).await {
            Err(e) if e.kind() == CoordinatorErrorKind::Unauthorized => break,
            Err(e) => errors.push(e.to_string()),
            Ok(outcome) => panic!("a rotated password still claimed: {outcome:?}"),
        }
    }
    let error = coordinator.claim(&claim()).await.expect_err("refused");
    assert_eq!(error.kind(), CoordinatorErrorKind::Unauthorized, "{error}; before: {errors:?}");
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let error = RedisCoordinator::connect(RedisConfig::new(url)).await.err().expect("nobody listens");
    assert!(matches!(error, RedisCoordinatorError::Connect(_)), "{error:?}");
    assert!(!error.to_string().contains("did not answer as Redis does"), "refused, not answered: {error}");
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_connect_error_that_asks_about_the_address_and_tls() {
    // Accepted by the kernel's backlog, never answered.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let config = RedisConfig::new(url)
        .connection_timeout(Duration::from_millis(200))
        .response_timeout(Duration::from_millis(200));
    let error = RedisCoordinator::connect(config).await.err().expect("no answer");
    assert!(matches!(error, RedisCoordinatorError::Connect(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("no answer within the connection timeout"), "{message}");
    drop(listener);
}

#[tokio::test]
async fn a_server_that_is_not_redis_is_named_as_such() {
    // An HTTP server's answer to Redis' greeting, then the connection closed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = std::io::Write::write_all(&mut stream, b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let error = RedisCoordinator::connect(RedisConfig::new(url)).await.err().expect("not Redis");
    assert!(matches!(error, RedisCoordinatorError::Connect(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("the server did not answer as Redis does"), "{message}");
}

#[tokio::test]
async fn invalid_settings_are_errors_naming_the_setting() {
    let cases = [
        (RedisConfig::new("http://127.0.0.1:6379"), "redis coordinator: url: "),
        (RedisConfig::new("redis://127.0.0.1:6379/not-a-number"), "redis coordinator: url: "),
        (
            RedisConfig::new("redis://:s3cret@127.0.0.1:6379").connection_timeout(Duration::ZERO),
            "redis coordinator: connection_timeout: must be longer than zero",
        ),
        (
            RedisConfig::new("redis://127.0.0.1:6379").response_timeout(Duration::ZERO),
            "redis coordinator: response_timeout: must be longer than zero",
        ),
        (
            RedisConfig::new("redis://127.0.0.1:6379").one_shot_retention(Duration::ZERO),
            "redis coordinator: one_shot_retention: must be longer than zero",
        ),
        (
            RedisConfig::new("redis://127.0.0.1:6379").tls_root_certificate(support::test_ca()),
            "redis coordinator: url: ",
        ),
    ];
    for (config, expected) in cases {
        assert!(!format!("{config:?}").contains("s3cret"), "Debug leaves the URL out");
        let error = RedisCoordinator::connect(config).await.err().expect("invalid").to_string();
        assert!(error.starts_with(expected), "{error:?} should start with {expected:?}");
        assert!(!error.contains("s3cret"));
    }
}
