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
///   misfire policy, grace, payload, `on_every_replica`, `enabled`, and the handler name
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
        if let Some(stated) = &self.fingerprint {
            return Ok(stated.clone());
        }
        let mut hasher = DefaultHasher::new();
        self.enabled.hash(&mut hasher);
        match &self.source {
            Source::Definition(definition) => {
                let json = serde_json::to_string(definition).map_err(|e| e.to_string())?;
                json.hash(&mut hasher);
            }
            Source::Builder(builder) => {
                let Some(handler) = &self.handler_name else {
                    return Err(
                        "the handler is a closure: state the plan's fingerprint or handler name".into()
                    );
                };
                handler.hash(&mut hasher);
                builder.hash_settings(&mut hasher);
            }
        }
        Ok(format!("{:016x}", hasher.finish()))
    }

    /// Builds the job.
    pub(crate) fn build(self, handlers: &HandlerRegistry) -> Result<Job, JobError> {
        match self.source {
            Source::Builder(builder) => builder.build(),
            Source::Definition(definition) => definition.to_job(handlers),
        }
    }
}
