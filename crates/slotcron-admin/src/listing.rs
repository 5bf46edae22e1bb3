//! A page of `GET /api/v1/jobs`: the jobs a filter keeps, in the order asked for, from a
//! cursor on. Everything here works on what the scheduler holds in memory: no call to a
//! backend per job.

use std::cmp::Ordering;
use std::collections::HashMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use slotcron::{JobInfo, Outcome};
use utoipa::{IntoParams, ToSchema};

use crate::{ApiError, query};

/// The jobs a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 100;
/// The most jobs a page may hold.
pub const MAX_LIMIT: usize = 1000;

/// The query string of `GET /api/v1/jobs`, as text so that a bad value gets this API's
/// message naming the parameter.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct JobsQuery {
    /// How many jobs the page holds (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
    /// The previous page's `next_cursor`, as it is, with the same `sort` and `order`.
    cursor: Option<String>,
    /// Part of the name, in any case; empty: any.
    q: Option<String>,
    /// `active` (not paused), `paused`, or `running` (a handler runs now); empty: any.
    #[param(pattern = "^(active|paused|running)?$")]
    state: Option<String>,
    /// The last run's outcome (`succeeded`, `failed`, `timed-out`, `missed`...); empty: any.
    outcome: Option<String>,
    /// What the jobs are sorted by (default `name`), jobs without one last.
    #[param(value_type = Option<Sort>, inline)]
    sort: Option<String>,
    /// `asc` (default) or `desc`; ties by name.
    #[param(value_type = Option<Order>, inline)]
    order: Option<String>,
}

/// What the jobs are sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum Sort {
    Name,
    /// The next fire time; jobs with none come last.
    Next,
    /// The last run's trigger; jobs never run come last.
    Last,
}

/// The order of the sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum Order {
    Asc,
    Desc,
}

/// Which jobs `state` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not known to be paused.
    Active,
    Paused,
    /// A run's handler runs now on this scheduler.
    Running,
}

const SORTS: [(&str, Sort); 3] = [("name", Sort::Name), ("next", Sort::Next), ("last", Sort::Last)];
const ORDERS: [(&str, Order); 2] = [("asc", Order::Asc), ("desc", Order::Desc)];
const STATES: [(&str, State); 3] =
    [("active", State::Active), ("paused", State::Paused), ("running", State::Running)];

/// Where a page starts: after the job with this sort key and name, in this order. Sent
/// as hexadecimal JSON, which clients pass back as it is.
#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    sort: Sort,
    order: Order,
    key: Option<Timestamp>,
    name: String,
}

/// A parsed [`JobsQuery`].
#[derive(Debug)]
pub(crate) struct Listing {
    limit: usize,
    after: Option<Cursor>,
    /// Lowercase.
    q: Option<String>,
    state: Option<State>,
    outcome: Option<Outcome>,
    sort: Sort,
    order: Order,
}

/// A job with whether it is paused (`None`: unknown) and since when.
pub(crate) struct Row {
    pub info: JobInfo,
    pub paused: Option<Option<Timestamp>>,
}

/// One page: its rows, the cursor of the next (if any jobs follow) and how many jobs the
/// filter keeps in all.
pub(crate) struct Page {
    pub rows: Vec<Row>,
    pub next_cursor: Option<String>,
    pub total: usize,
}

impl JobsQuery {
    /// The listing asked for; 400 naming the first parameter that is not right. An
    /// empty `q`, `state` or `outcome` keeps every job.
    pub(crate) fn parse(&self) -> Result<Listing, ApiError> {
        let outcomes: Vec<(&str, Outcome)> = Outcome::ALL.iter().map(|o| (o.as_str(), *o)).collect();
        let sort = self.sort.as_deref().map(|text| query::choice("sort", text, &SORTS)).transpose()?;
        let order = self.order.as_deref().map(|text| query::choice("order", text, &ORDERS)).transpose()?;
        let (sort, order) = (sort.unwrap_or(Sort::Name), order.unwrap_or(Order::Asc));
        let after = self.cursor.as_deref().map(Cursor::decode).transpose()?;
        if let Some(cursor) = after.as_ref().filter(|c| (c.sort, c.order) != (sort, order)) {
            return Err(ApiError::bad_request(format!(
                "cursor is of a listing with sort={} and order={}: a cursor goes with the sort and order of \
                 the page that gave it",
                spelling(&SORTS, cursor.sort),
                spelling(&ORDERS, cursor.order)
            )));
        }
        Ok(Listing {
            limit: query::limit(self.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?,
            after,
            q: filter(&self.q).map(str::to_lowercase),
            state: filter(&self.state).map(|text| query::choice("state", text, &STATES)).transpose()?,
            outcome: filter(&self.outcome)
                .map(|text| query::choice("outcome", text, &outcomes))
                .transpose()?,
            sort,
            order,
        })
    }
}

/// A filter's text; `None` when absent or empty.
fn filter(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|text| !text.is_empty())
}

/// How `value` is spelled among `choices`.
fn spelling<T: PartialEq>(choices: &[(&'static str, T)], value: T) -> &'static str {
    choices.iter().find(|(_, v)| *v == value).map_or("?", |(spelling, _)| spelling)
}

impl Listing {
    /// Whether the listing filters on pauses (`state=active` or `state=paused`), which an
    /// unknown set of pauses cannot answer.
    pub(crate) fn filters_pauses(&self) -> bool {
        matches!(self.state, Some(State::Active | State::Paused))
    }

    /// The page of `jobs` (with the fleet's `paused` jobs, `None` when unknown) this
    /// listing asks for.
    pub(crate) fn page(&self, jobs: Vec<JobInfo>, paused: Option<&HashMap<String, Timestamp>>) -> Page {
        let mut rows: Vec<Row> = jobs
            .into_iter()
            .map(|info| {
                let paused = paused.map(|paused| paused.get(info.job.name()).copied());
                Row { info, paused }
            })
            .filter(|row| self.keeps(row))
            .collect();
        let total = rows.len();
        if let Some(after) = &self.after {
            rows.retain(|row| {
                self.compare((self.key(row), row.info.job.name()), (after.key, &after.name)).is_gt()
            });
        }
        rows.sort_unstable_by(|a, b| {
            self.compare((self.key(a), a.info.job.name()), (self.key(b), b.info.job.name()))
        });
        let more = rows.len() > self.limit;
        rows.truncate(self.limit);
        let next_cursor = rows.last().filter(|_| more).map(|last| {
            Cursor {
                sort: self.sort,
                order: self.order,
                key: self.key(last),
                name: last.info.job.name().to_owned(),
            }
            .encode()
        });
        Page { rows, next_cursor, total }
    }

    /// Whether the filter keeps `row`.
    fn keeps(&self, row: &Row) -> bool {
        let info = &row.info;
        let named = self.q.as_ref().is_none_or(|q| info.job.name().to_lowercase().contains(q));
        let state = match self.state {
            None => true,
            Some(State::Active) => !matches!(row.paused, Some(Some(_))),
            Some(State::Paused) => matches!(row.paused, Some(Some(_))),
            Some(State::Running) => info.runs_in_flight > 0,
        };
        let outcome = self
            .outcome
            .is_none_or(|wanted| info.last_run.as_ref().is_some_and(|l| l.outcome == Some(wanted)));
        named && state && outcome
    }

    /// What `row` is sorted by before its name.
    fn key(&self, row: &Row) -> Option<Timestamp> {
        match self.sort {
            Sort::Name => None,
            Sort::Next => row.info.next_triggers.first().copied(),
            Sort::Last => row.info.last_run.as_ref().map(|last| last.trigger),
        }
    }

    /// The listing's order of two (key, name) pairs: by key in `order`, a missing key
    /// last, then by name in `order`.
    fn compare(&self, a: (Option<Timestamp>, &str), b: (Option<Timestamp>, &str)) -> Ordering {
        let directed = |ordering: Ordering| match self.order {
            Order::Asc => ordering,
            Order::Desc => ordering.reverse(),
        };
        let by_key = match (a.0, b.0) {
            (Some(a), Some(b)) => directed(a.cmp(&b)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        by_key.then_with(|| directed(a.1.cmp(b.1)))
    }
}

impl Cursor {
    fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        json.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    fn decode(text: &str) -> Result<Self, ApiError> {
        let bytes: Option<Vec<u8>> = text
            .len()
            .is_multiple_of(2)
            .then(|| {
                (0..text.len())
                    .step_by(2)
                    .map(|i| text.get(i..i + 2).and_then(|hex| u8::from_str_radix(hex, 16).ok()))
                    .collect()
            })
            .flatten();
        bytes.and_then(|bytes| serde_json::from_slice(&bytes).ok()).ok_or_else(|| {
            ApiError::bad_request(format!(
                "cursor {text:?} is not one this API gave: pass the previous page's next_cursor as it is"
            ))
        })
    }
}
