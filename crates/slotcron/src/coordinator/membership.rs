//! The membership of a fleet: described on [`Coordinator`](super::Coordinator), "Membership".

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::CoordinatorError;
use super::rendezvous::stable_hash;

/// The default membership TTL: a replica that stops heartbeating leaves the membership
/// this long after its last heartbeat, on the coordinator's clock.
pub const DEFAULT_MEMBERSHIP_TTL: Duration = Duration::from_secs(10);

/// How soon after its first heartbeat a replica looks at the membership again: replicas
/// started together (one deploy) have registered by then, so that they agree on their
/// owners before their first instants rather than a takeover delay later. Capped by the
/// takeover delay and by a third of the membership TTL.
pub const MEMBERSHIP_JOIN_LOOK: Duration = Duration::from_millis(50);

/// One trigger, by identity: the job's name and its trigger key
/// ([`trigger_key`](crate::trigger_key)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerRef<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The trigger key, `{job}:{trigger}`; a backend prefixes it as for a claim.
    pub key: &'a str,
}

/// What one owner has claimed, to an answer (won, lost, refused by the mark or for the
/// job's pause), of the
/// triggers it owns at one trigger instant: their number and a fingerprint of their
/// keys. Tallies add up ([`Handled::plus`]), so an owner that claims an instant's
/// triggers in several batches adds one tally per batch.
///
/// The fingerprint is the sum of a 40-bit [stable hash](Handled::of_key) of each trigger
/// key, so it fits a signed 64-bit counter (Redis `HINCRBY`, a PostgreSQL `bigint`) for
/// up to 2²³ triggers per owner and instant; a backend whose counter would overflow
/// fails the write, and non-owners then read trigger by trigger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handled {
    /// How many triggers.
    pub count: u64,
    /// The sum of their keys' hashes.
    pub fingerprint: u64,
}

impl Handled {
    /// The tally of one trigger key.
    pub fn of_key(key: &str) -> Self {
        Self::of_key_parts([key.as_bytes()])
    }

    /// [`Handled::of_key`] of the key that `parts` make one after the other, without
    /// building it.
    pub(crate) fn of_key_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Self {
        Self { count: 1, fingerprint: stable_hash(parts) >> 24 }
    }

    /// The tally of both.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            count: self.count.wrapping_add(other.count),
            fingerprint: self.fingerprint.wrapping_add(other.fingerprint),
        }
    }
}

/// What a member publishes of itself in the membership beside its instance id
/// ([`Coordinator::publish_details`](super::Coordinator::publish_details)): the settings
/// every member of the fleet must share, and what it says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberDetails {
    /// Settings every member must share, by name: a member whose value differs from a
    /// live member's is refused at join (e.g. the zone a daemon's crontab lines run in).
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// What the member says about itself, by name (host, version, started...): shown,
    /// never compared.
    #[serde(default)]
    pub about: BTreeMap<String, String>,
    /// The labels the member carries, each `key` or `key=value`
    /// ([`SchedulerBuilder::labels`](crate::SchedulerBuilder::labels)): the jobs placed
    /// on labels ([`JobBuilder::on`](crate::JobBuilder::on)) are owned only among the
    /// members that carry theirs. A label another release wrote that this one cannot
    /// read meets no placement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

impl MemberDetails {
    /// The JSON a backend keeps.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Details a backend kept as JSON ([`MemberDetails::to_json`]), of member `instance`.
    ///
    /// # Errors
    /// [`Unavailable`](super::CoordinatorErrorKind::Unavailable) (the backend answered
    /// what is not such JSON).
    pub fn from_json(instance: &str, json: &str) -> Result<Self, CoordinatorError> {
        serde_json::from_str(json)
            .map_err(|e| CoordinatorError::unavailable(format!("the details of member {instance:?}: {e}")))
    }

    /// The first setting of these details that `other` (the details of live member
    /// `member`) gives another value: a sentence naming the setting, both values and the
    /// member. A setting one of them does not have is not compared. Where the details
    /// say something [about](MemberDetails::about) under the setting's name (a zone's
    /// name beside the fingerprint compared), the sentence shows that.
    pub fn disagreement(&self, member: &str, other: &Self) -> Option<String> {
        self.settings.iter().find_map(|(name, ours)| {
            let theirs = other.settings.get(name).filter(|theirs| *theirs != ours)?;
            let (ours, theirs) =
                (self.about.get(name).unwrap_or(ours), other.about.get(name).unwrap_or(theirs));
            Some(format!("{name} is {ours:?} here but {theirs:?} on live member {member:?}"))
        })
    }
}

/// A live member of the fleet as the coordinator keeps it
/// ([`Coordinator::members`](super::Coordinator::members)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveMember {
    /// Its instance id.
    pub instance: String,
    /// When it lapses unless it heartbeats again, on the coordinator's clock (its last
    /// heartbeat plus the membership TTL it gave).
    pub lapses_at: jiff::Timestamp,
    /// What it published ([`Coordinator::publish_details`](super::Coordinator::publish_details));
    /// empty if nothing.
    pub details: MemberDetails,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_disagree_on_a_setting_both_have_with_other_values() {
        let with = |zone: &str| MemberDetails {
            settings: BTreeMap::from([("crontab_zone".to_owned(), zone.to_owned())]),
            about: BTreeMap::from([("host".to_owned(), zone.to_owned())]),
            labels: Vec::new(),
        };
        let tokyo = with("Asia/Tokyo");
        assert_eq!(tokyo.disagreement("b", &with("Asia/Tokyo")), None, "about is not compared");
        let named = |fingerprint: &str, name: &str| MemberDetails {
            settings: BTreeMap::from([("zone".to_owned(), fingerprint.to_owned())]),
            about: BTreeMap::from([("zone".to_owned(), name.to_owned())]),
            labels: Vec::new(),
        };
        assert_eq!(
            named("f1", "UTC").disagreement("b", &named("f1", "Etc/UTC")),
            None,
            "the setting decides"
        );
        assert_eq!(
            named("f1", "UTC").disagreement("b", &named("f2", "Asia/Tokyo")).as_deref(),
            Some(r#"zone is "UTC" here but "Asia/Tokyo" on live member "b""#),
            "shown by name"
        );
        assert_eq!(tokyo.disagreement("b", &MemberDetails::default()), None);
        assert_eq!(
            tokyo.disagreement("b", &with("UTC")).as_deref(),
            Some(r#"crontab_zone is "Asia/Tokyo" here but "UTC" on live member "b""#)
        );
        let json = tokyo.to_json();
        assert_eq!(MemberDetails::from_json("a", &json).unwrap(), tokyo);
        assert!(MemberDetails::from_json("a", "{").unwrap_err().to_string().contains("member \"a\""));
    }

    #[test]
    fn a_key_tallied_in_parts_is_the_key_tallied_whole() {
        let whole = Handled::of_key("backup:2024-05-17T10:00:00.500Z");
        let parts = Handled::of_key_parts([b"backup".as_slice(), b":2024-05-17T10:00:00.500Z"]);
        assert_eq!(whole, parts);
    }

    #[test]
    fn tallies_add_up_in_any_order_and_tell_sets_apart() {
        let keys = ["a:2024-05-17T10:00:00Z", "b:2024-05-17T10:00:00Z", "c:2024-05-17T10:00:00Z"];
        let all = keys.iter().fold(Handled::default(), |t, k| t.plus(Handled::of_key(k)));
        let reversed = keys.iter().rev().fold(Handled::default(), |t, k| t.plus(Handled::of_key(k)));
        assert_eq!(all, reversed);
        assert_eq!(all.count, 3);
        let other = Handled::of_key(keys[0]).plus(Handled::of_key(keys[1])).plus(Handled::of_key("d:x"));
        assert_ne!(all, other, "same count, another set");
        assert!(Handled::of_key(keys[0]).fingerprint < 1 << 40);
    }
}
