//! The Redis coordinator: one script call per claim.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, ErrorKind, RedisError, Script, TlsCertificates};
use slotcron::coordinator::read_back::{AttemptError, Holder, claim_with_read_back};
use slotcron::{Claim, ClaimOutcome, Coordinator, CoordinatorError};

use crate::claimant::{Token, holder};
use crate::keys::Keys;
use crate::{RedisConfig, RedisCoordinatorError};

static CLAIM: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("claim.lua")));

/// Arbitrates claims through one Redis server, so that each trigger runs on exactly one
/// replica.
///
/// Each claim is one call of a Lua script (`EVALSHA`; the first call after the server
/// starts also loads the script): if the trigger key is absent it is set, with the
/// claim's TTL in milliseconds (one-shots: no expiry unless
/// [`RedisConfig::one_shot_retention`] is set), to `{fencing token} {token} {instance}`,
/// where the fencing token comes from `INCR` on the job's counter and the token is 64
/// random bits per claim. Claims are never released.
///
/// When the reply is lost (connection dropped, response timeout) the claim may have been
/// made; the coordinator reads the trigger key back, as
/// [`read_back`](slotcron::coordinator::read_back) describes: its own token means won
/// (with the stored fencing token), another's means lost, no key means the script did not
/// run and the claim is tried once more; if Redis cannot be read, the claim fails and the
/// scheduler skips the trigger (fail closed).
///
/// The connection is a `redis` connection manager: multiplexed, and re-established by
/// itself after Redis restarts. One server (or a primary) only: Redis Cluster is not
/// supported, and a failover to a replica that had not received a claim can let a
/// trigger run twice.
#[derive(Clone)]
pub struct RedisCoordinator {
    connection: ConnectionManager,
    keys: Keys,
    one_shot_retention: Option<Duration>,
}

impl RedisCoordinator {
    /// Connects to Redis.
    ///
    /// # Errors
    /// [`RedisCoordinatorError::Config`] for an invalid setting (including the URL), and
    /// [`RedisCoordinatorError::Connect`] if the first connection fails (unreachable,
    /// TLS, authentication, database).
    pub async fn connect(config: RedisConfig) -> Result<Self, RedisCoordinatorError> {
        config.validate()?;
        let invalid_url =
            |e: RedisError| RedisCoordinatorError::Config { field: "url", reason: e.to_string() };
        let client = match config.tls_root_certificate {
            Some(pem) => {
                let certificates = TlsCertificates { client_tls: None, root_cert: Some(pem) };
                redis::Client::build_with_tls(config.url.as_str(), certificates)
            }
            None => redis::Client::open(config.url.as_str()),
        }
        .map_err(invalid_url)?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connection_timeout))
            .set_response_timeout(Some(config.response_timeout))
            .set_number_of_retries(config.reconnect_retries);
        let connection = ConnectionManager::new_with_config(client, manager)
            .await
            .map_err(RedisCoordinatorError::Connect)?;
        Ok(Self {
            connection,
            keys: Keys::new(&config.key_prefix),
            one_shot_retention: config.one_shot_retention,
        })
    }

    /// The claim's expiry in milliseconds, rounded up; 0 for none.
    fn expiry_ms(&self, ttl: Option<Duration>) -> u64 {
        ttl.or(self.one_shot_retention).map_or(0, |ttl| {
            let ms = ttl.as_nanos().div_ceil(1_000_000).max(1);
            u64::try_from(ms).unwrap_or(u64::MAX)
        })
    }

    /// Runs the claim script once.
    async fn run_script(
        &self,
        key: &str,
        fencing: &str,
        claimant: &str,
        expiry_ms: u64,
    ) -> Result<ClaimOutcome, AttemptError<RedisError>> {
        let mut connection = self.connection.clone();
        let mut script = CLAIM.key(key);
        script.key(fencing).arg(claimant).arg(expiry_ms);
        // The new fencing token when won, nil when taken.
        match script.invoke_async::<Option<u64>>(&mut connection).await {
            Ok(Some(fencing_token)) => Ok(ClaimOutcome::Won { fencing_token }),
            Ok(None) => Ok(ClaimOutcome::Lost),
            Err(e) if outcome_unknown(&e) => Err(AttemptError::ReplyLost(e)),
            Err(e) => Err(AttemptError::NotMade(e)),
        }
    }

    /// Who holds the trigger key now.
    async fn read_holder(&self, key: &str, token: &Token) -> Result<Holder, RedisError> {
        let mut connection = self.connection.clone();
        let value: Option<String> = connection.get(key).await?;
        Ok(holder(value.as_deref(), token))
    }
}

/// Whether an error leaves the script's outcome unknown: the request may have reached
/// Redis but the reply did not come back whole. A reply from Redis (an error message, a
/// refused command) means the script did not run.
fn outcome_unknown(error: &RedisError) -> bool {
    matches!(error.kind(), ErrorKind::Io | ErrorKind::Parse)
}

#[async_trait]
impl Coordinator for RedisCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let token = Token::random()
            .map_err(|e| CoordinatorError::unavailable(format!("no random claim token: {e}")))?;
        let key = self.keys.trigger(claim.key);
        let fencing = self.keys.fencing(claim.job);
        let claimant = token.claimant(claim.instance);
        let expiry_ms = self.expiry_ms(claim.ttl);
        claim_with_read_back(
            &format!("claim of {key}"),
            &token,
            || self.run_script(&key, &fencing, &claimant, expiry_ms),
            || self.read_holder(&key, &token),
        )
        .await
    }

    fn name(&self) -> &'static str {
        "redis"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_connections_timeouts_and_garbled_replies_leave_the_outcome_unknown() {
        for kind in [
            std::io::ErrorKind::TimedOut,
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::BrokenPipe,
        ] {
            assert!(outcome_unknown(&RedisError::from(std::io::Error::from(kind))), "{kind:?}");
        }
        assert!(outcome_unknown(&RedisError::from((ErrorKind::Parse, "garbled reply"))));
    }

    #[test]
    fn an_answer_from_redis_means_the_script_did_not_run() {
        let refused = RedisError::from((ErrorKind::Client, "refused before sending"));
        assert!(!outcome_unknown(&refused));
        let wrong_type = RedisError::from((ErrorKind::UnexpectedReturnType, "not an integer"));
        assert!(!outcome_unknown(&wrong_type));
    }
}
