//! The job table: jobs by name and slot, and their queued triggers.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use jiff::Timestamp;

use super::introspect::JobInfo;
use super::misfire;
use super::queue::{Lane, Lanes, Queued};
use crate::job::Job;
use crate::ledger::Cause;
use crate::ledger::LastRun;
use crate::metrics::Metrics;
use crate::schedule::ScheduleKind;
use crate::store::JobState;

/// Something the engine must do now for one job.
#[derive(Debug)]
pub(crate) struct Due {
    pub job: Arc<Job>,
    pub trigger: Timestamp,
    /// The job's next trigger after this one (for the claim TTL).
    pub next: Option<Timestamp>,
    pub action: Action,
    /// Why it is due: on schedule, caught up after a misfire, or at start-up.
    pub cause: Cause,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Claim the trigger and run the handler.
    Run,
    /// Record `count` late triggers, the newest being `trigger`, as missed.
    Missed { count: u64 },
    /// Claim a run an operator asked for (or the rerun of an interrupted trigger) under
    /// its own key ([`request_key`](crate::request_key)) and run the handler: no jitter,
    /// no pause, no high-water mark. `attempts_made`: the attempts the trigger already
    /// had (an interrupted run's, for its rerun: the rerun counts as the next one), else 0.
    Requested { attempts_made: u32 },
}

/// The next instant of this replica's own lane: see [`Table::first_after`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct NextInstant {
    pub at: Timestamp,
    /// How many triggers are queued then (those of removed jobs included).
    pub queued: usize,
    /// The newest instant taken from the queue so far.
    pub previous: Option<Timestamp>,
}

/// A queued trigger, not taken: see [`Table::upcoming`].
pub(crate) struct Upcoming {
    pub at: Timestamp,
    pub job: Arc<Job>,
}

#[derive(Debug)]
struct Entry {
    job: Arc<Job>,
    /// Tells this entry's queue items from those of a removed job in the same slot.
    generation: u64,
    next: Option<Timestamp>,
    /// The newest trigger taken from the queue, carried over to a replacement.
    last: Option<Timestamp>,
    /// The fingerprint of the plan the job came from, if it came from one.
    fingerprint: Option<Arc<str>>,
}

/// Where a job's first trigger is computed from.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// A new job: from its stored state if it has one, else from now.
    Fresh,
    /// A replacement: from now (or from the newest trigger its predecessor took), with no
    /// start-up run.
    Replacing { last: Option<Timestamp> },
}

/// Jobs by name and their queued triggers, earliest first.
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// Jobs by slot; a removed job leaves `None` until the slot is reused.
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    /// foldhash: a million names hashed quickly at start and at each reconcile; the names
    /// are the scheduler's own jobs', and the seed is the process's.
    by_name: HashMap<Arc<str>, u32, foldhash::fast::RandomState>,
    queue: Lanes,
    /// The newest instant taken from the queue.
    last_taken: Option<Timestamp>,
    last_generation: u64,
    /// Counts the changes of the jobs by name (each added, replaced or removed): a
    /// reconcile that compares its plans with the table a chunk at a time knows by it
    /// that nothing changed between two chunks.
    version: u64,
    /// Queue items whose job was removed or replaced.
    stale: usize,
    /// How many jobs are placed on labels ([`Job::placement`]): asked at every heartbeat,
    /// kept rather than counted over a million jobs each time.
    placed: usize,
    /// When the engine started; `None` until it runs, and jobs wait unqueued.
    started: Option<Timestamp>,
    /// The stored state of each job, read when the engine starts.
    states: HashMap<String, JobState>,
    /// The scheduler's metrics, which flush each job's series.
    metrics: Arc<Metrics>,
    /// The chained jobs' names by their parent's ([`Job::parent`]).
    children: HashMap<Arc<str>, Vec<Arc<str>>>,
}

impl Table {
    /// An empty table; the triggers other replicas own come due `takeover_delay` after
    /// their instant (see [`Lanes`]).
    pub fn new(metrics: Arc<Metrics>, takeover_delay: std::time::Duration) -> Self {
        Self { metrics, queue: Lanes::new(takeover_delay), ..Self::default() }
    }

    /// Adds a job; queues its first trigger if the engine runs. `None` if the name is
    /// taken, else whether the job's trigger is now the earliest (the engine must wake).
    pub fn insert(&mut self, job: Job, now: Timestamp) -> Option<bool> {
        if self.by_name.contains_key(&job.name) {
            return None;
        }
        let earliest_before = self.next_deadline();
        self.place(job, None, now, Start::Fresh);
        Some(self.next_deadline() != earliest_before)
    }

    /// Makes room for `additional` more jobs at once (a reconcile that adds many), rather
    /// than growing the name table step by step, hashing every name again each time.
    pub fn reserve(&mut self, additional: usize) {
        self.by_name.reserve(additional);
        self.slots.reserve(additional.saturating_sub(self.free.len()));
    }

    /// Puts a job whose name no job has into a slot; queues its first trigger if the
    /// engine runs. The job as the table holds it.
    fn place(&mut self, job: Job, fingerprint: Option<Arc<str>>, now: Timestamp, start: Start) -> Arc<Job> {
        self.last_generation += 1;
        self.version += 1;
        let name = job.name.clone();
        if self.metrics.is_enabled() {
            // Made here only when counted: else at its first use (a run, the admin API).
            self.metrics.register(job.series().clone());
        }
        if let Some(parent) = &job.seldom().parent {
            self.children.entry(parent.clone()).or_default().push(name.clone());
        }
        let job = Arc::new(job);
        self.placed += usize::from(!job.placement.is_anywhere());
        let entry =
            Entry { job: job.clone(), generation: self.last_generation, next: None, last: None, fingerprint };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(entry);
                slot
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        self.by_name.insert(name, slot);
        if self.started.is_some() {
            self.queue_first(slot, now, start);
        }
        job
    }

    /// Adds a job from a plan with this fingerprint, its name known to be free (a
    /// reconcile's diff, made under the same lock): spares [`Table::upsert`]'s look for a
    /// job to replace. Whether the engine must wake, and the job as the table holds it.
    pub fn add_planned(&mut self, job: Job, fingerprint: Arc<str>, now: Timestamp) -> (bool, Arc<Job>) {
        debug_assert!(!self.by_name.contains_key(&job.name), "{} is in the table", job.name);
        let earliest_before = self.next_deadline();
        let job = self.place(job, Some(fingerprint), now, Start::Fresh);
        (self.next_deadline() != earliest_before, job)
    }

    /// Replaces the job of its name with one from a plan with this fingerprint (or adds
    /// it, if there is none): the replacement fires from its next trigger after `now` on (or after the newest
    /// trigger the replaced job took), with the replaced job's single-replica fencing
    /// count. Whether the engine must wake, and the job as the table holds it.
    pub fn upsert(&mut self, job: Job, fingerprint: Arc<str>, now: Timestamp) -> (bool, Arc<Job>) {
        let earliest_before = self.next_deadline();
        let start = match self.take(&job.name) {
            Some(old) => {
                job.local_fencing.store(old.job.local_fencing.load(Ordering::Relaxed), Ordering::Relaxed);
                Start::Replacing { last: old.last }
            }
            None => Start::Fresh,
        };
        let job = self.place(job, Some(fingerprint), now, start);
        (self.next_deadline() != earliest_before, job)
    }

    /// The fingerprint of a job: `None` if there is no such job, `Some(None)` if it was
    /// not added from a plan.
    pub fn fingerprint(&self, name: &str) -> Option<Option<&str>> {
        let entry = self.slots[*self.by_name.get(name)? as usize].as_ref()?;
        Some(entry.fingerprint.as_deref())
    }

    /// Removes a job; its queued triggers are dropped, and so is the stored state it would
    /// start from if added again (a one-shot's is kept: it does not run twice). The
    /// removed job, or `None` if there is none.
    pub fn remove(&mut self, name: &str) -> Option<Arc<Job>> {
        let entry = self.take(name)?;
        if !entry.job.kind.is_one_shot() {
            self.states.remove(name);
        } else if let Some(last) = entry.last {
            // Taken in this process: the stored state says so too, but what the table
            // read at start does not.
            let done = JobState::of(last, None, true);
            let state = self.states.entry(name.to_owned()).or_insert_with(|| done.clone());
            if state.last_trigger < last || !state.one_shot_done {
                *state = done;
            }
        }
        Some(entry.job)
    }

    fn take(&mut self, name: &str) -> Option<Entry> {
        let slot = self.by_name.remove(name)?;
        self.version += 1;
        let entry = self.slots[slot as usize].take();
        self.placed -= usize::from(entry.as_ref().is_some_and(|e| !e.job.placement.is_anywhere()));
        if let Some(parent) = entry.as_ref().and_then(|e| e.job.seldom().parent.as_ref())
            && let Some(children) = self.children.get_mut(parent)
        {
            children.retain(|child| **child != *name);
            if children.is_empty() {
                self.children.remove(parent);
            }
        }
        if entry.as_ref().is_some_and(|e| e.next.is_some()) {
            self.stale += 1;
        }
        self.free.push(slot);
        if self.stale > 1024 && self.stale > self.by_name.len() {
            let slots = &self.slots;
            self.queue
                .retain(|q| slots[q.slot as usize].as_ref().is_some_and(|e| e.generation == q.generation));
            self.stale = 0;
        }
        entry
    }

    /// Sets the stored states that the first triggers resume from.
    pub fn set_states(&mut self, states: HashMap<String, JobState>) {
        self.states = states;
    }

    /// The stored states the first triggers resume from, by job name.
    pub fn stored_states(&self) -> &HashMap<String, JobState> {
        &self.states
    }

    /// Replaces the stored state of `job`, if the table holds one.
    pub fn set_state(&mut self, job: &str, state: JobState) {
        if let Some(stored) = self.states.get_mut(job) {
            *stored = state;
        }
    }

    /// Starts the clock for every job added so far. Once started, the queue stays: a
    /// later start (another `run()`) goes on from each job's queued trigger.
    pub fn start(&mut self, now: Timestamp) {
        if self.started.is_some() {
            return;
        }
        self.started = Some(now);
        for slot in 0..self.slots.len() as u32 {
            self.queue_first(slot, now, Start::Fresh);
        }
    }

    /// Queues a job's first trigger: resumed from its stored state if it has one (so
    /// triggers missed while down are misfires), else the first fire time after `now`.
    fn queue_first(&mut self, slot: u32, now: Timestamp, start: Start) {
        let Some(entry) = self.slots[slot as usize].as_mut() else { return };
        let job = &entry.job;
        let name = &*job.name;
        let kind = job.kind;
        let state = self.states.get(name);
        if let Some(state) = state {
            job.series().restore(state.last_success, state.last_failure);
        }
        let taken = match start {
            Start::Fresh => None,
            Start::Replacing { last } => last,
        };
        // An `after` job runs once per state; an `at` job once per instant (one moved to
        // a later instant runs again). A replacement also counts what its predecessor
        // took.
        let done = state.is_some_and(|s| match kind {
            ScheduleKind::At(at) => s.one_shot_done && s.last_trigger >= at,
            ScheduleKind::After(_) => s.one_shot_done,
            _ => false,
        }) || taken.is_some_and(|last| match kind {
            ScheduleKind::At(at) => last >= at,
            ScheduleKind::After(_) => true,
            _ => false,
        });
        if done {
            tracing::info!(job = name, "one-shot job already ran (the state says so): it does not run again");
            return;
        }
        let resume_from = state.map(|s| s.last_trigger);
        let replacing = matches!(start, Start::Replacing { .. });
        let first = match kind {
            ScheduleKind::At(at) => Some(at),
            // Trigger instants carry millisecond precision, like their keys.
            ScheduleKind::After(delay) => now
                .checked_add(delay)
                .ok()
                .and_then(|at| Timestamp::from_millisecond(at.as_millisecond()).ok()),
            // A replacement goes on from its next trigger; a start-up run stands for the
            // current slot and any missed before it.
            ScheduleKind::Interval { .. } | ScheduleKind::Recurring if replacing => {
                job.schedule.next_after(taken.map_or(now, |last| last.max(now)))
            }
            ScheduleKind::Interval { .. } if job.run_on_start => job.schedule.next_after(now),
            ScheduleKind::Interval { .. } | ScheduleKind::Recurring => {
                job.schedule.next_after(resume_from.unwrap_or(now))
            }
            // Its parent's runs fire it (engine/chain.rs).
            ScheduleKind::Chained => return,
        };
        let generation = entry.generation;
        entry.next = first;
        if let (true, false, ScheduleKind::Interval { period }, Some(first)) =
            (job.run_on_start, replacing, kind, first)
        {
            // The slot `now` falls in: the fire time before `first`.
            if let Some(at) = first.checked_sub(period).ok().filter(|at| resume_from.is_none_or(|r| *at > r))
            {
                self.queue.push(Lane::Own, at, Queued { generation, slot, start_up: true });
            }
        }
        match first {
            Some(at) => self.queue.push(Lane::Own, at, Queued { generation, slot, start_up: false }),
            None => exhausted(name, kind),
        }
    }

    /// The earliest instant at which a queued trigger comes due (one other replicas own
    /// comes due a takeover delay after its instant).
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.queue.next_deadline()
    }

    /// Whether `job`'s `trigger` waits in the lane of the triggers other replicas own.
    pub fn lags(&self, job: &str, trigger: Timestamp) -> bool {
        let Some(slot) = self.by_name.get(job).copied() else { return false };
        let Some(entry) = self.slots[slot as usize].as_ref() else { return false };
        self.queue.lags(trigger, |q| q.slot == slot && q.generation == entry.generation)
    }

    /// The next trigger of a job, if it is queued.
    pub fn next_trigger(&self, name: &str) -> Option<Timestamp> {
        self.slots[*self.by_name.get(name)? as usize].as_ref()?.next
    }

    /// The job of this name.
    pub fn job(&self, name: &str) -> Option<Arc<Job>> {
        Some(self.slots[*self.by_name.get(name)? as usize].as_ref()?.job.clone())
    }

    /// The jobs chained after `parent` ([`Job::parent`]) that still take triggers (not
    /// ended by their `max_runs`): none for most jobs, found
    /// without a look at any other job.
    pub fn children_of(&self, parent: &str) -> Vec<Arc<Job>> {
        let names = self.children.get(parent).map(Vec::as_slice).unwrap_or_default();
        // A job that has ended (its max_runs reached) takes no more triggers, a chained
        // one's included.
        let taking = |job: &Arc<Job>| !job.ended.load(Ordering::SeqCst);
        names.iter().filter_map(|name| self.job(name)).filter(taking).collect()
    }

    /// The names of the jobs that others are chained after ([`Job::parent`]).
    pub fn parents(&self) -> Vec<Arc<str>> {
        self.children
            .iter()
            .filter(|(_, children)| !children.is_empty())
            .map(|(parent, _)| parent.clone())
            .collect()
    }

    /// The parent of the job called `name`, if it is here and chained.
    pub fn parent_of(&self, name: &str) -> Option<Arc<str>> {
        self.slots[*self.by_name.get(name)? as usize].as_ref()?.job.seldom().parent.clone()
    }

    /// A job with its queued trigger.
    pub fn info(&self, name: &str) -> Option<JobInfo> {
        Some(self.info_of(self.slots[*self.by_name.get(name)? as usize].as_ref()?))
    }

    /// Every job with its queued trigger.
    pub fn infos(&self) -> Vec<JobInfo> {
        self.slots.iter().flatten().map(|entry| self.info_of(entry)).collect()
    }

    fn info_of(&self, entry: &Entry) -> JobInfo {
        let job = entry.job.clone();
        let stored = || {
            self.states.get(&*job.name).map(|s| LastRun {
                trigger: s.last_trigger,
                outcome: s.last_outcome,
                instance: None,
                duration: None,
                error: None,
            })
        };
        let last_run = job.last_run().or_else(stored);
        let runs_in_flight = job.series().runs_in_flight();
        let ended = job.ended.load(Ordering::SeqCst);
        let next_triggers = entry.next.filter(|_| !ended).into_iter().collect();
        JobInfo { next_triggers, job, last_run, runs_in_flight, ended }
    }

    /// The jobs, in no particular order.
    pub fn jobs(&self) -> Vec<Arc<Job>> {
        self.slots.iter().flatten().map(|entry| entry.job.clone()).collect()
    }

    /// Whether any job is placed on labels ([`Job::placement`]).
    pub fn any_placed(&self) -> bool {
        self.placed > 0
    }

    /// How many jobs the table holds.
    pub fn job_count(&self) -> usize {
        self.by_name.len()
    }

    /// Changes each time a job is added, replaced or removed.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// How many slots there are (each holding a job, or free): the bound of
    /// [`Table::names_in`].
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The names of the jobs in the slots of `range` (clamped to the slots there are).
    pub fn names_in(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = &str> {
        let slots = self.slots.get(range.start.min(self.slots.len())..range.end.min(self.slots.len()));
        slots.unwrap_or_default().iter().flatten().map(|entry| &*entry.job.name)
    }

    /// The names of the jobs, borrowed.
    pub fn name_refs(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(|name| &**name)
    }

    /// The names of the jobs.
    pub fn names(&self) -> Vec<Arc<str>> {
        self.by_name.keys().cloned().collect()
    }

    /// The scheduled triggers queued at instants after `after` up to `upto` in this
    /// replica's own lane, earliest first, without taking them, of the jobs for which
    /// `keep` holds (given the job, its trigger taken before, if any, and the queued
    /// instant): what may be claimed ahead. Start-up runs are not
    /// among them.
    pub fn upcoming(
        &self,
        after: Timestamp,
        upto: Timestamp,
        keep: impl Fn(&Job, Option<Timestamp>, Timestamp) -> bool,
    ) -> Vec<Upcoming> {
        self.queue
            .between(after, upto)
            .filter(|(_, item)| !item.start_up)
            .filter_map(|(at, item)| {
                let entry =
                    self.slots[item.slot as usize].as_ref().filter(|e| e.generation == item.generation)?;
                keep(&entry.job, entry.last, at).then(|| Upcoming { at, job: entry.job.clone() })
            })
            .collect()
    }

    /// The earliest instant queued after `after` in this replica's own lane.
    pub fn first_after(&self, after: Timestamp) -> Option<NextInstant> {
        let (at, queued) = self.queue.first_after(after)?;
        Some(NextInstant { at, queued, previous: self.last_taken })
    }

    /// Takes everything due at `now` and queues each job's next trigger in the lane
    /// `lane` gives the job. A trigger in the lane of those other replicas own is due a
    /// takeover delay after its instant, and is late (a misfire) if it was late then.
    ///
    /// A trigger due in [`Lane::Own`] whose job `lane` now puts in [`Lane::Others`] —
    /// queued before this replica knew the fleet (every job is added before the first
    /// heartbeat, so each one's first trigger is), or while it owned the job — moves to
    /// that lane at the same instant instead of being taken, unless `keep_own` holds for
    /// it (the job and the instant: a trigger claimed ahead is taken at its instant).
    /// So at a fleet's first instants too a replica takes only its share of a burst.
    ///
    /// Stops once `due` holds `batch` items (a misfire plan may add a few more); `true`
    /// if more is due.
    pub fn take_due(
        &mut self,
        now: Timestamp,
        due: &mut Vec<Due>,
        batch: usize,
        lane: impl Fn(&Job) -> Lane,
        keep_own: impl Fn(&Job, Timestamp) -> bool,
    ) -> bool {
        loop {
            if due.len() >= batch {
                return self.next_deadline().is_some_and(|at| at <= now);
            }
            let Some((at, top, due_at, from)) = self.queue.pop_due(now) else { break };
            let Some(entry) =
                self.slots[top.slot as usize].as_mut().filter(|e| e.generation == top.generation)
            else {
                self.stale = self.stale.saturating_sub(1);
                continue;
            };
            let job = entry.job.clone();
            if job.ended.load(Ordering::SeqCst) {
                // Its max_runs were reached (engine/limits.rs): no more triggers.
                entry.next = None;
                continue;
            }
            // The job's lane, for this trigger and the next.
            let job_lane = lane(&job);
            if from == Lane::Own && !top.start_up && job_lane == Lane::Others && !keep_own(&job, at) {
                self.queue.push(Lane::Others, at, top);
                continue;
            }
            entry.last = entry.last.max(Some(at));
            self.last_taken = self.last_taken.max(Some(at));
            if top.start_up {
                let next = entry.next;
                due.push(Due { job, trigger: at, next, action: Action::Run, cause: Cause::StartUp });
                continue;
            }
            // Lateness counts from the jittered start, as the grace window does.
            let start = crate::policy::jittered(&job.name, at, job.jitter());
            let late =
                due_at.duration_since(start) > jiff::SignedDuration::try_from(job.grace).unwrap_or_default();
            let next = if late {
                let cutoff = due_at.checked_sub(job.grace).unwrap_or(due_at);
                let plan = misfire::plan(job.schedule.as_ref(), job.misfire, at, cutoff);
                if let Some((count, newest)) = plan.missed {
                    due.push(Due {
                        job: job.clone(),
                        trigger: newest,
                        next: None,
                        action: Action::Missed { count },
                        cause: Cause::CatchUp,
                    });
                }
                let mut runs = plan.run.into_iter().peekable();
                while let Some(trigger) = runs.next() {
                    let next = runs.peek().copied().or(plan.next);
                    due.push(Due {
                        job: job.clone(),
                        trigger,
                        next,
                        action: Action::Run,
                        cause: Cause::CatchUp,
                    });
                }
                plan.next
            } else {
                let next = if job.kind.is_one_shot() { None } else { job.schedule.next_after(at) };
                due.push(Due {
                    job: job.clone(),
                    trigger: at,
                    next,
                    action: Action::Run,
                    cause: Cause::Scheduled,
                });
                next
            };
            entry.next = next;
            match next {
                Some(next) => self.queue.push(job_lane, next, Queued { start_up: false, ..top }),
                None => exhausted(&job.name, job.kind),
            }
        }
        false
    }
}

/// One line when a job has fired for the last time: expected for a one-shot, news for a
/// recurring schedule that ran out of fire times.
fn exhausted(name: &str, kind: ScheduleKind) {
    if kind.is_one_shot() {
        tracing::info!(job = name, "one-shot job due: this is its only trigger");
    } else {
        tracing::info!(job = name, "the schedule has no fire time left: this job does not run again");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::JobContext;

    async fn noop(_ctx: JobContext) -> Result<(), std::io::Error> {
        Ok(())
    }

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(ms).unwrap()
    }

    #[test]
    fn whether_any_job_is_placed_follows_adds_replacements_and_removals() {
        let mut table = Table::new(Arc::new(Metrics::new(false, Default::default())), Duration::ZERO);
        let job = |name: &str, on: &[&str]| {
            Job::builder(name).every(Duration::from_secs(10)).on(on.iter()).handler(noop).build().unwrap()
        };
        table.insert(job("anywhere", &[]), t(0));
        assert!(!table.any_placed());
        table.insert(job("gpu", &["gpu"]), t(0));
        table.insert(job("eu", &["eu"]), t(0));
        assert!(table.any_placed());
        table.remove("gpu");
        assert!(table.any_placed(), "eu is still placed");
        table.upsert(job("eu", &[]), Arc::from("f"), t(0));
        assert!(!table.any_placed(), "eu was replaced by a job placed anywhere");
        table.upsert(job("anywhere", &["gpu"]), Arc::from("g"), t(0));
        assert!(table.any_placed());
        table.remove("anywhere");
        assert!(!table.any_placed());
    }

    #[test]
    fn a_trigger_another_replica_owns_is_taken_a_takeover_delay_after_its_instant_and_late_only_if_late_then()
    {
        let lag = Duration::from_millis(300);
        let mut table = Table::new(Arc::new(Metrics::new(false, Default::default())), lag);
        let job = Job::builder("tick").every(Duration::from_secs(10)).handler(noop).build().unwrap();
        table.insert(job, t(0));
        table.start(t(0));
        let taken = |table: &mut Table, now: i64| {
            let mut due = Vec::new();
            table.take_due(t(now), &mut due, 64, |_| Lane::Others, |_, _| true);
            due.into_iter().map(|d| (d.trigger.as_millisecond(), d.cause, d.action)).collect::<Vec<_>>()
        };
        // The first trigger waits in the own lane (nothing said otherwise yet); the next
        // in the others' lane, due 300 ms after its instant.
        assert_eq!(taken(&mut table, 10_000), [(10_000, Cause::Scheduled, Action::Run)]);
        assert_eq!(table.next_deadline(), Some(t(20_300)));
        assert!(taken(&mut table, 20_299).is_empty());
        assert_eq!(taken(&mut table, 20_300), [(20_000, Cause::Scheduled, Action::Run)]);
        // Taken 1.2 s after its instant (0.9 s after it came due in its lane): within the
        // 1 s grace window.
        assert_eq!(taken(&mut table, 31_200), [(30_000, Cause::Scheduled, Action::Run)]);
        // 1.4 s after it came due: a misfire.
        assert_eq!(taken(&mut table, 41_700)[0].1, Cause::CatchUp);
    }

    #[test]
    fn a_trigger_queued_in_the_own_lane_of_a_job_another_replica_now_owns_waits_out_the_takeover_delay() {
        let lag = Duration::from_millis(300);
        let mut table = Table::new(Arc::new(Metrics::new(false, Default::default())), lag);
        for name in ["theirs", "claimed-ahead"] {
            table.insert(
                Job::builder(name).every(Duration::from_secs(10)).handler(noop).build().unwrap(),
                t(0),
            );
        }
        table.start(t(0));
        // Both first triggers were queued in the own lane (added before the fleet was
        // known); another replica owns both jobs now, and this one claimed one of them
        // ahead while it owned it.
        let taken = |table: &mut Table, now: i64| {
            let mut due = Vec::new();
            table.take_due(t(now), &mut due, 64, |_| Lane::Others, |job, _| &*job.name == "claimed-ahead");
            let mut due: Vec<_> =
                due.into_iter().map(|d| (d.job.name.to_string(), d.trigger.as_millisecond())).collect();
            due.sort();
            due
        };
        assert_eq!(taken(&mut table, 10_000), [("claimed-ahead".to_owned(), 10_000)]);
        assert_eq!(table.next_deadline(), Some(t(10_300)), "the other one waits in the others' lane");
        assert!(taken(&mut table, 10_299).is_empty());
        assert_eq!(taken(&mut table, 10_300), [("theirs".to_owned(), 10_000)]);
    }
}
