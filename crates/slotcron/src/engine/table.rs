//! The job table and the one ordered queue of next triggers.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use jiff::Timestamp;

use super::misfire;
use crate::job::Job;
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
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Claim the trigger and run the handler.
    Run,
    /// Record `count` late triggers, the newest being `trigger`, as missed.
    Missed { count: u64 },
}

#[derive(Debug)]
struct Entry {
    job: Arc<Job>,
    /// Tells this entry's queue items from those of a removed job of the same name.
    generation: u64,
    next: Option<Timestamp>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    at: Timestamp,
    generation: u64,
    /// A start-up run (`run_on_start`), which does not advance the schedule.
    start_up: bool,
    name: Arc<str>,
}

/// Jobs by name and their queued triggers, earliest first.
#[derive(Debug, Default)]
pub(crate) struct Table {
    jobs: HashMap<Arc<str>, Entry>,
    queue: BinaryHeap<Reverse<Queued>>,
    last_generation: u64,
    /// Queue items whose job was removed or replaced.
    stale: usize,
    /// When the engine started; `None` until it runs, and jobs wait unqueued.
    started: Option<Timestamp>,
    /// The stored state of each job, read when the engine starts.
    states: HashMap<String, JobState>,
}

impl Table {
    /// Adds a job; queues its first trigger if the engine runs. `false` if the name is
    /// taken.
    pub fn insert(&mut self, job: Job, now: Timestamp) -> bool {
        if self.jobs.contains_key(&job.name) {
            return false;
        }
        self.last_generation += 1;
        let entry = Entry { job: Arc::new(job), generation: self.last_generation, next: None };
        let name = entry.job.name.clone();
        self.jobs.insert(name.clone(), entry);
        if self.started.is_some() {
            self.queue_first(&name, now);
        }
        true
    }

    /// Removes a job; its queued triggers are dropped. `false` if there is none.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(entry) = self.jobs.remove(name) else { return false };
        if entry.next.is_some() {
            self.stale += 1;
        }
        if self.stale > 1024 && self.stale > self.jobs.len() {
            let jobs = &self.jobs;
            self.queue.retain(|Reverse(q)| jobs.get(&q.name).is_some_and(|e| e.generation == q.generation));
            self.stale = 0;
        }
        true
    }

    /// Sets the stored states that the first triggers resume from.
    pub fn set_states(&mut self, states: HashMap<String, JobState>) {
        self.states = states;
    }

    /// Starts the clock for every job added so far.
    pub fn start(&mut self, now: Timestamp) {
        self.started = Some(now);
        let names: Vec<Arc<str>> = self.jobs.keys().cloned().collect();
        for name in names {
            self.queue_first(&name, now);
        }
    }

    /// Queues a job's first trigger: resumed from its stored state if it has one (so
    /// triggers missed while down are misfires), else the first fire time after `now`.
    fn queue_first(&mut self, name: &Arc<str>, now: Timestamp) {
        let Some(entry) = self.jobs.get_mut(name) else { return };
        let job = &entry.job;
        let kind = job.schedule.kind();
        let state = self.states.get(&**name);
        if kind.is_one_shot() && state.is_some_and(|s| s.one_shot_done) {
            tracing::info!(job = &**name, "one-shot job already ran; it is not queued again");
            return;
        }
        let resume_from = state.map(|s| s.last_trigger);
        let first = match kind {
            ScheduleKind::At(at) => Some(at),
            ScheduleKind::After(delay) => now.checked_add(delay).ok(),
            // A start-up run stands for the current slot and any missed before it.
            ScheduleKind::Interval { .. } if job.run_on_start => job.schedule.next_after(now),
            ScheduleKind::Interval { .. } | ScheduleKind::Recurring => {
                job.schedule.next_after(resume_from.unwrap_or(now))
            }
        };
        let generation = entry.generation;
        entry.next = first;
        if let (true, ScheduleKind::Interval { period }, Some(first)) = (job.run_on_start, kind, first) {
            // The slot `now` falls in: the fire time before `first`.
            if let Some(at) = first.checked_sub(period).ok().filter(|at| resume_from.is_none_or(|r| *at > r))
            {
                self.queue.push(Reverse(Queued { at, generation, start_up: true, name: name.clone() }));
            }
        }
        match first {
            Some(at) => {
                self.queue.push(Reverse(Queued { at, generation, start_up: false, name: name.clone() }))
            }
            None => exhausted(name),
        }
    }

    /// The earliest queued instant.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.queue.peek().map(|Reverse(q)| q.at)
    }

    /// The next trigger of a job, if it is queued.
    pub fn next_trigger(&self, name: &str) -> Option<Timestamp> {
        self.jobs.get(name)?.next
    }

    /// The names of the jobs.
    pub fn names(&self) -> Vec<Arc<str>> {
        self.jobs.keys().cloned().collect()
    }

    /// Takes everything due at `now` and queues each job's next trigger.
    pub fn take_due(&mut self, now: Timestamp, due: &mut Vec<Due>) {
        while let Some(Reverse(top)) = self.queue.peek() {
            if top.at > now {
                break;
            }
            let Some(Reverse(top)) = self.queue.pop() else { break };
            let Some(entry) = self.jobs.get_mut(&top.name) else {
                self.stale = self.stale.saturating_sub(1);
                continue;
            };
            if entry.generation != top.generation {
                self.stale = self.stale.saturating_sub(1);
                continue;
            }
            let job = entry.job.clone();
            if top.start_up {
                due.push(Due { job, trigger: top.at, next: entry.next, action: Action::Run });
                continue;
            }
            let late =
                now.duration_since(top.at) > jiff::SignedDuration::try_from(job.grace).unwrap_or_default();
            let next = if late {
                let cutoff = now.checked_sub(job.grace).unwrap_or(now);
                let plan = misfire::plan(job.schedule.as_ref(), job.misfire, top.at, cutoff);
                if let Some((count, newest)) = plan.missed {
                    due.push(Due {
                        job: job.clone(),
                        trigger: newest,
                        next: None,
                        action: Action::Missed { count },
                    });
                }
                let mut runs = plan.run.into_iter().peekable();
                while let Some(trigger) = runs.next() {
                    let next = runs.peek().copied().or(plan.next);
                    due.push(Due { job: job.clone(), trigger, next, action: Action::Run });
                }
                plan.next
            } else {
                let next =
                    if job.schedule.kind().is_one_shot() { None } else { job.schedule.next_after(top.at) };
                due.push(Due { job: job.clone(), trigger: top.at, next, action: Action::Run });
                next
            };
            entry.next = next;
            match next {
                Some(at) => self.queue.push(Reverse(Queued { at, start_up: false, ..top })),
                None => exhausted(&top.name),
            }
        }
    }
}

fn exhausted(name: &str) {
    tracing::info!(job = name, "schedule has no more fire times; the job leaves the queue");
}
