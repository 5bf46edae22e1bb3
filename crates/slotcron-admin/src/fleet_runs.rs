//! A job's history across the fleet: this member's page of records merged with the pages
//! of the other members that keep their own ([`crate::peers`]).

use std::collections::HashSet;

use jiff::Timestamp;
use serde::Deserialize;

use crate::AdminState;
use crate::client::encode;
use crate::peers::{Unanswered, ask_others};
use crate::run_view::RunView;

/// One member's page of a job's records: newest trigger first, whole triggers.
#[derive(Debug, Deserialize)]
pub(crate) struct MemberPage {
    pub runs: Vec<RunView>,
    /// The `before` of the member's next page; `None` on its last.
    pub next_before: Option<Timestamp>,
}

/// The fleet's page of a job's records, and whose records it holds.
pub(crate) struct FleetPage {
    pub page: MemberPage,
    /// The members whose records are in the page (this one first).
    pub merged: Vec<String>,
    pub unanswered: Vec<Unanswered>,
    /// Why the membership could not be read (the page then holds this member's records).
    pub membership_error: Option<String>,
}

/// The request for one page: the job, `limit` and `before` as this member was asked, and
/// the caller's `Authorization`, passed on to the other members.
pub(crate) struct PageRequest<'a> {
    pub job: &'a str,
    pub limit: usize,
    pub before: Option<Timestamp>,
    pub authorization: Option<String>,
}

/// `own` (this member's page) merged with the pages of the other live members that keep
/// their own ledger, as [`merge`] does.
pub(crate) async fn fleet_page(state: &AdminState, request: &PageRequest<'_>, own: MemberPage) -> FleetPage {
    let asked = ask_others::<MemberPage>(state, &request.path(), request.authorization.as_deref()).await;
    let mut merged = vec![state.scheduler.instance().to_owned()];
    let mut pages = vec![own];
    for (member, page) in asked.answered {
        merged.push(member);
        pages.extend(page);
    }
    FleetPage {
        page: merge(pages, request.limit),
        merged,
        unanswered: asked.unanswered,
        membership_error: asked.membership_error,
    }
}

impl PageRequest<'_> {
    /// The path and query that ask a member for its own records only.
    fn path(&self) -> String {
        let job = encode(self.job);
        let mut path = format!("/api/v1/jobs/{job}/runs?scope=member&limit={}", self.limit);
        if let Some(before) = self.before {
            path.push_str(&format!("&before={}", encode(&before.to_string())));
        }
        path
    }
}

/// Several members' pages as one, newest trigger first, without a record twice (the same
/// trigger, instance and start). The page ends at a whole trigger, as each member's does:
/// at the `limit`-th record's trigger, or at the newest trigger before which a member has
/// more records, whichever is newer, so that no record a member left for its next page is
/// passed over and none is shown on two pages; `next_before` is that trigger when a record
/// was left for the next page.
pub(crate) fn merge(pages: Vec<MemberPage>, limit: usize) -> MemberPage {
    let more_before = pages.iter().filter_map(|page| page.next_before).max();
    let mut seen = HashSet::new();
    let mut runs: Vec<RunView> =
        pages.into_iter().flat_map(|page| page.runs).filter(|run| seen.insert(run.identity())).collect();
    runs.sort_by(|a, b| b.trigger.cmp(&a.trigger).then_with(|| a.instance.cmp(&b.instance)));
    let at_limit = runs.get(limit.saturating_sub(1)).map(|run| run.trigger);
    let Some(cut) = at_limit.max(more_before) else { return MemberPage { runs, next_before: None } };
    let all = runs.len();
    runs.retain(|run| run.trigger >= cut);
    let next_before = (runs.len() < all || more_before.is_some()).then_some(cut);
    MemberPage { runs, next_before }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `instance` at second `trigger` (started then).
    fn run(trigger: i64, instance: &str) -> RunView {
        let at = Timestamp::from_second(trigger).unwrap().to_string();
        serde_json::from_value(serde_json::json!({
            "job": "j", "trigger": at, "instance": instance, "outcome": "succeeded", "cause": "scheduled",
            "fencing_token": null, "started": at, "duration_ms": 1, "error": null,
        }))
        .unwrap()
    }

    fn page(runs: Vec<RunView>, next_before: Option<i64>) -> MemberPage {
        MemberPage { runs, next_before: next_before.map(|t| Timestamp::from_second(t).unwrap()) }
    }

    fn shown(page: &MemberPage) -> Vec<(i64, &str)> {
        page.runs.iter().map(|r| (r.trigger.as_second(), r.instance.as_str())).collect()
    }

    #[test]
    fn pages_of_members_that_have_no_more_merge_newest_first_and_end_the_history() {
        let a = page(vec![run(30, "a"), run(10, "a")], None);
        let b = page(vec![run(20, "b"), run(10, "b")], None);
        let merged = merge(vec![a, b], 10);
        assert_eq!(shown(&merged), [(30, "a"), (20, "b"), (10, "a"), (10, "b")]);
        assert_eq!(merged.next_before, None);
    }

    #[test]
    fn the_limit_cuts_at_a_whole_trigger_and_the_rest_is_for_the_next_page() {
        let a = page(vec![run(40, "a"), run(30, "a"), run(20, "a")], None);
        let b = page(vec![run(30, "b"), run(10, "b")], None);
        let merged = merge(vec![a, b], 2);
        assert_eq!(shown(&merged), [(40, "a"), (30, "a"), (30, "b")], "trigger 30 whole");
        assert_eq!(merged.next_before.map(|t| t.as_second()), Some(30));
    }

    #[test]
    fn a_member_with_more_records_ends_the_page_where_its_own_ended() {
        // b has records before 30 it did not send: a's record at 20 waits for the next
        // page, which starts before 30 and gets it with b's.
        let a = page(vec![run(40, "a"), run(20, "a")], None);
        let b = page(vec![run(35, "b"), run(30, "b")], Some(30));
        let merged = merge(vec![a, b], 10);
        assert_eq!(shown(&merged), [(40, "a"), (35, "b"), (30, "b")]);
        assert_eq!(merged.next_before.map(|t| t.as_second()), Some(30));
    }

    #[test]
    fn a_record_two_members_both_read_from_one_ledger_is_shown_once() {
        let a = page(vec![run(20, "a"), run(20, "b")], None);
        let b = page(vec![run(20, "b")], None);
        assert_eq!(shown(&merge(vec![a, b], 10)), [(20, "a"), (20, "b")]);
    }

    #[test]
    fn a_member_is_asked_for_its_own_records_with_the_page_asked_for() {
        let before = Some("2026-12-06T10:00:00Z".parse().unwrap());
        let request = PageRequest { job: "a/b c", limit: 20, before, authorization: None };
        assert_eq!(
            request.path(),
            "/api/v1/jobs/a%2Fb%20c/runs?scope=member&limit=20&before=2026%2D12%2D06T10%3A00%3A00Z"
        );
    }
}
