//! Plans: the desired state of one job, for [`Scheduler::reconcile`](crate::Scheduler::reconcile).

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::job::{Job, JobBuilder, JobError};
use crate::registry::HandlerRegistry;
use crate::store::JobDefinition;

/// One job as a desired set wants it: an id (the job's name), its schedule, handler and
/// policies, whether it is enabled, and a fingerprint that changes whenever any of these
/// does.
///
/// The fingerprint is what [`Scheduler::reconcile`](crate::Scheduler::reconcile) compares:
/// an equal one leaves the running job alone, a different one replaces it. When not
/// given with [`Plan::fingerprint`] it is derived, as a hash of:
///
/// - for a plan from a [`JobDefinition`] ([`Plan::from_definition`]): the whole
///   definition — schedule (with its time zone), handler name, payload, timeout,
///   `run_on_start`, misfire policy and grace — and `enabled`;
/// - for a plan from a [`JobBuilder`] or a [`Job`] ([`Plan::new`]): its name, schedule
///   (expression and time zone, period and offset, or instant), timeout, `run_on_start`,
///   misfire policy, grace, payload, `on_every_replica`, the retry budget, overlap and
///   jitter, `enabled`, and the handler name
///   given with [`Plan::handler_name`]. A closure has no name the library could compare,
///   so such a plan must state one of [`Plan::handler_name`] or [`Plan::fingerprint`]:
///   without either, reconciling it fails (for that plan only).
///
/// The derived hash is stable within a process, not across releases: compare
/// fingerprints of one running scheduler, do not store them.
#[must_use]
pub struct Plan {
    id: String,
    source: Source,
    enabled: bool,
    fingerprint: Option<String>,
    handler_name: Option<String>,
}

enum Source {
    Builder(JobBuilder),
    Definition(JobDefinition),
    Built(Job),
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan")
            .field("id", &self.id)
            .field("enabled", &self.enabled)
            .field("fingerprint", &self.fingerprint)
            .field("handler_name", &self.handler_name)
            .finish_non_exhaustive()
    }
}

impl Plan {
    /// An enabled plan for a job given by its builder (built by the reconcile that needs
    /// it, so a bad expression fails that plan alone) or by the job itself; its id is the
    /// job's name. State its [`Plan::fingerprint`] or its [`Plan::handler_name`].
    pub fn new(job: impl Into<JobBuilder>) -> Self {
        let builder = job.into();
        Self {
            id: builder.name().to_owned(),
            source: Source::Builder(builder),
            enabled: true,
            fingerprint: None,
            handler_name: None,
        }
    }

    /// An enabled plan for a job already built: a reconcile that adds or replaces its job
    /// takes it as it is, where [`Plan::new`] builds it again from its settings — the
    /// same job, without the work (a million plans at a daemon's start). Its id is the
    /// job's name, its derived fingerprint the one [`Plan::new`] derives for it; state its
    /// [`Plan::fingerprint`] or its [`Plan::handler_name`].
    pub fn built(job: Job) -> Self {
        Self {
            id: job.name().to_owned(),
            source: Source::Built(job),
            enabled: true,
            fingerprint: None,
            handler_name: None,
        }
    }

    /// An enabled plan for a job described by data, whose handler is looked up by name in
    /// the scheduler's registry ([`Scheduler::register_handler`](crate::Scheduler::register_handler)).
    /// Its id is the definition's name; its fingerprint, unless stated, a hash of the
    /// whole definition.
    pub fn from_definition(definition: JobDefinition) -> Self {
        Self {
            id: definition.name.clone(),
            source: Source::Definition(definition),
            enabled: true,
            fingerprint: None,
            handler_name: None,
        }
    }

    /// Whether the job should exist (default `true`): a disabled plan removes the job, as
    /// a missing one does.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// States the fingerprint (e.g. a row's version, or a hash the caller computes)
    /// instead of deriving it.
    pub fn fingerprint(mut self, fingerprint: impl Into<String>) -> Self {
        self.fingerprint = Some(fingerprint.into());
        self
    }

    /// Names what a closure handler does (e.g. the command it runs), for the derived
    /// fingerprint.
    pub fn handler_name(mut self, name: impl Into<String>) -> Self {
        self.handler_name = Some(name.into());
        self
    }

    /// The plan's id: the job's name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the plan is enabled.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The stated fingerprint, else the derived one.
    ///
    /// # Errors
    /// A plan with a closure handler that states neither a fingerprint nor a handler name.
    pub fn resolved_fingerprint(&self) -> Result<String, String> {
        match &self.fingerprint {
            Some(stated) => Ok(stated.clone()),
            None => self.derived_fingerprint(),
        }
    }

    /// [`Plan::resolved_fingerprint`], the stated one moved out rather than copied (a
    /// reconcile of a million plans): the plan states none afterwards.
    pub(crate) fn take_resolved_fingerprint(&mut self) -> Result<String, String> {
        match self.fingerprint.take() {
            Some(stated) => Ok(stated),
            None => self.derived_fingerprint(),
        }
    }

    /// The fingerprint derived from the plan's source, as [`Plan`] describes it.
    fn derived_fingerprint(&self) -> Result<String, String> {
        let mut hasher = DefaultHasher::new();
        self.enabled.hash(&mut hasher);
        match &self.source {
            Source::Definition(definition) => {
                let json = serde_json::to_string(definition).map_err(|e| e.to_string())?;
                json.hash(&mut hasher);
            }
            Source::Builder(builder) => {
                self.named_handler()?.hash(&mut hasher);
                builder.hash_settings(&mut hasher);
            }
            Source::Built(job) => {
                self.named_handler()?.hash(&mut hasher);
                JobBuilder::from(job.clone()).hash_settings(&mut hasher);
            }
        }
        Ok(format!("{:016x}", hasher.finish()))
    }

    /// The handler's name given with [`Plan::handler_name`], which a derived fingerprint of
    /// a builder or a job needs.
    fn named_handler(&self) -> Result<&str, String> {
        self.handler_name
            .as_deref()
            .ok_or_else(|| "the handler is a closure: state the plan's fingerprint or handler name".into())
    }

    /// Moves the id out (a reconcile's report keeps it), leaving the plan's empty.
    pub(crate) fn take_id(&mut self) -> String {
        std::mem::take(&mut self.id)
    }

    /// Builds the job.
    pub(crate) fn build(self, handlers: &HandlerRegistry) -> Result<Job, JobError> {
        match self.source {
            Source::Builder(builder) => builder.build(),
            Source::Definition(definition) => definition.to_job(handlers),
            Source::Built(job) => Ok(job.renewed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use jiff::tz::TimeZone;

    use super::*;
    use crate::JobContext;
    use crate::policy::Misfire;
    use crate::store::ScheduleSpec;

    async fn noop(_ctx: JobContext) -> Result<(), std::io::Error> {
        Ok(())
    }

    fn base() -> JobBuilder {
        Job::builder("job").cron("0 9 * * *").handler(noop)
    }

    fn derived(plan: Plan) -> String {
        plan.resolved_fingerprint().unwrap()
    }

    #[test]
    fn a_derived_fingerprint_covers_every_listed_field() {
        let original = derived(Plan::new(base()).handler_name("h"));
        assert_eq!(derived(Plan::new(base()).handler_name("h")), original, "stable");
        let variants = [
            Plan::new(Job::builder("other").cron("0 9 * * *").handler(noop)).handler_name("h"),
            Plan::new(Job::builder("job").cron("0 10 * * *").handler(noop)).handler_name("h"),
            Plan::new(
                Job::builder("job")
                    .cron_in("0 9 * * *", TimeZone::get("Asia/Shanghai").unwrap())
                    .handler(noop),
            )
            .handler_name("h"),
            Plan::new(base().timeout(Duration::from_secs(5))).handler_name("h"),
            Plan::new(base().misfire(Misfire::RunOnce)).handler_name("h"),
            Plan::new(base().grace(Duration::from_secs(7))).handler_name("h"),
            Plan::new(base().payload(serde_json::json!({"a": 1}))).handler_name("h"),
            Plan::new(base().on_every_replica(true)).handler_name("h"),
            Plan::new(Job::builder("job").every(Duration::from_secs(60)).run_on_start(true).handler(noop))
                .handler_name("h"),
            Plan::new(base()).handler_name("other handler"),
            Plan::new(base()).handler_name("h").enabled(false),
        ];
        for (i, variant) in variants.into_iter().enumerate() {
            assert_ne!(derived(variant), original, "variant {i}");
        }
    }

    #[test]
    fn a_closure_plan_states_its_fingerprint_or_handler_name() {
        let err = Plan::new(base()).resolved_fingerprint().unwrap_err();
        assert_eq!(err, "the handler is a closure: state the plan's fingerprint or handler name");
        assert_eq!(Plan::new(base()).fingerprint("v1").resolved_fingerprint().unwrap(), "v1");
    }

    #[test]
    fn a_plan_of_a_built_job_is_the_plan_new_makes_of_it() {
        let job =
            base().timeout(Duration::from_secs(5)).payload(serde_json::json!({"a": 1})).build().unwrap();
        job.local_fencing.store(7, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(Plan::built(job.clone()).id(), "job");
        let new = derived(Plan::new(job.clone()).handler_name("h"));
        assert_eq!(derived(Plan::built(job.clone()).handler_name("h")), new);
        assert_eq!(
            Plan::built(job.clone()).resolved_fingerprint(),
            Plan::new(job.clone()).resolved_fingerprint(),
            "no handler name: the same error"
        );
        let handlers = HandlerRegistry::default();
        let rebuilt = Plan::new(job.clone()).build(&handlers).unwrap();
        let taken = Plan::built(job).build(&handlers).unwrap();
        assert_eq!(format!("{taken:?}"), format!("{rebuilt:?}"));
        assert_eq!(
            (taken.kind, taken.seldom().payload.clone()),
            (rebuilt.kind, rebuilt.seldom().payload.clone())
        );
        let fencing = |job: &Job| job.local_fencing.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!((fencing(&taken), fencing(&rebuilt)), (0, 0), "fencing from zero, as a new build");
    }

    #[test]
    fn a_definition_fingerprint_covers_the_whole_definition() {
        let definition = JobDefinition::new("job", ScheduleSpec::After { delay_ms: 5 }, "noop");
        let original = derived(Plan::from_definition(definition.clone()));
        let mut other = definition.clone();
        other.grace_ms = Some(1);
        assert_ne!(derived(Plan::from_definition(other)), original);
        let mut other = definition;
        other.handler = "another".into();
        assert_ne!(derived(Plan::from_definition(other)), original);
    }
}
