//! Asking the other members of the fleet: with a ledger per daemon (a SQLite state each),
//! a member keeps only the records and output of the runs it made, so the member asked
//! for a job's history or a run's output asks the other live members too, through the
//! admin addresses they publish, and names those that did not answer. Members that
//! publish the same [`SHARED_LEDGER`] as this one (one PostgreSQL state) are not asked:
//! what they keep is already in this member's ledger.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use slotcron::MemberDetails;
use tokio::task::JoinSet;
use utoipa::ToSchema;

use crate::client::{AdminUrl, Call, send};
use crate::{AdminState, ApiError, query};

/// How long another member may take to answer, in seconds: past it, the answer is made
/// without it and names the member.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(3);

/// The member detail ([`MemberDetails::about`]) that names the ledger a member records in,
/// when other members may record in the same one (e.g. a PostgreSQL state, as its URL
/// without the password): a member publishing the same value as this one is not asked.
/// The admin address is the detail `admin` (`HOST:PORT` or `unix:PATH`).
pub const SHARED_LEDGER: &str = "ledger";

/// Whose records an answer holds: `?scope=fleet` (the default) or `member`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// This member's and the other live members' that keep a ledger of their own.
    Fleet,
    /// This member's only (what a member asks another for).
    Member,
}

impl Scope {
    /// The `scope` parameter's value, `text`: 400 for another.
    pub fn parse(text: Option<&str>) -> Result<Self, ApiError> {
        let Some(text) = text else { return Ok(Self::Fleet) };
        query::choice("scope", text, &[("fleet", Self::Fleet), ("member", Self::Member)])
    }
}

/// A member whose records are not in an answer, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct Unanswered {
    /// Its instance id.
    pub instance: String,
    /// The admin address it published; `null` when it published none.
    #[schema(required = true)]
    pub admin: Option<String>,
    /// Why its records are missing (no admin address, no connection, no answer within 3 s,
    /// an error answer).
    pub reason: String,
}

/// What the other members answered to one request.
pub(crate) struct Asked<T> {
    /// Each member that answered, by instance id, sorted, with its answer (`None`: 404,
    /// it has nothing of the kind).
    pub answered: Vec<(String, Option<T>)>,
    pub unanswered: Vec<Unanswered>,
    /// Why the membership could not be read (no member was asked).
    pub membership_error: Option<String>,
}

/// Asks each live member other than this one that keeps a ledger of its own for `path`
/// (a `GET` with the caller's `authorization`), at once, each within [`PEER_TIMEOUT`].
pub(crate) async fn ask_others<T: DeserializeOwned + Send + 'static>(
    state: &AdminState,
    path: &str,
    authorization: Option<&str>,
) -> Asked<T> {
    let mut asked = Asked { answered: Vec::new(), unanswered: Vec::new(), membership_error: None };
    let members = match state.scheduler.member_details().await {
        Ok(members) => members.unwrap_or_default(),
        Err(e) => {
            asked.membership_error = Some(format!("the fleet's membership cannot be read: {e}"));
            return asked;
        }
    };
    let mut asking = JoinSet::new();
    for (member, details) in others(&members, state.scheduler.instance()) {
        let admin = details.about.get("admin").cloned();
        let Some(address) = admin.clone() else {
            let reason = "it publishes no admin address (started without an admin server)".to_owned();
            asked.unanswered.push(Unanswered { instance: member.to_owned(), admin, reason });
            continue;
        };
        let (member, path, authorization) =
            (member.to_owned(), path.to_owned(), authorization.map(str::to_owned));
        asking.spawn(async move { (member, admin, ask(&address, &path, authorization).await) });
    }
    while let Some(Ok((member, admin, answer))) = asking.join_next().await {
        match answer {
            Ok(answer) => asked.answered.push((member, answer)),
            Err(reason) => asked.unanswered.push(Unanswered { instance: member, admin, reason }),
        }
    }
    asked.answered.sort_by(|a, b| a.0.cmp(&b.0));
    asked.unanswered.sort_by(|a, b| a.instance.cmp(&b.instance));
    asked
}

/// The live members other than `instance` that do not share its ledger.
fn others<'a>(
    members: &'a BTreeMap<String, MemberDetails>,
    instance: &'a str,
) -> impl Iterator<Item = (&'a str, &'a MemberDetails)> {
    let ours = members.get(instance).and_then(|details| details.about.get(SHARED_LEDGER));
    members
        .iter()
        .filter(move |(member, details)| {
            *member != instance && (ours.is_none() || details.about.get(SHARED_LEDGER) != ours)
        })
        .map(|(member, details)| (member.as_str(), details))
}

/// One member's answer to `path`, within [`PEER_TIMEOUT`]; `None` for a 404.
async fn ask<T: DeserializeOwned>(
    address: &str,
    path: &str,
    authorization: Option<String>,
) -> Result<Option<T>, String> {
    let mut call = Call::get(path);
    call.headers.extend(authorization.map(|value| ("authorization", value)));
    let answer = tokio::time::timeout(PEER_TIMEOUT, send(&AdminUrl::published(address), call))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {}s", PEER_TIMEOUT.as_secs())))?;
    if answer.status == axum::http::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let json = answer.json()?;
    serde_json::from_value(json).map(Some).map_err(|e| format!("not the answer expected: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_sharing_this_ones_ledger_are_not_asked() {
        let details = |ledger: Option<&str>| {
            let mut details = MemberDetails::default();
            details.about.extend(ledger.map(|l| (SHARED_LEDGER.to_owned(), l.to_owned())));
            details
        };
        let members: BTreeMap<String, MemberDetails> = [
            ("a".to_owned(), details(Some("postgres://db/x"))),
            ("b".to_owned(), details(Some("postgres://db/x"))),
            ("c".to_owned(), details(Some("postgres://db/y"))),
            ("d".to_owned(), details(None)),
        ]
        .into();
        let asked: Vec<&str> = others(&members, "a").map(|(m, _)| m).collect();
        assert_eq!(asked, ["c", "d"]);
        let asked: Vec<&str> = others(&members, "d").map(|(m, _)| m).collect();
        assert_eq!(asked, ["a", "b", "c"], "without a shared ledger, every other member");
    }
}
