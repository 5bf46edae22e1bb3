//! Jobs described by data, so they can be stored and rebuilt after a restart.

use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::job::{Job, JobError};
use crate::policy::Misfire;
use crate::registry::HandlerRegistry;
use crate::schedule::{Interval, ScheduleError};

/// A job added at runtime through [`Scheduler::define`](crate::Scheduler::define): its
/// handler is looked up by a registered name, its payload is JSON.
///
/// Stored as JSON by the SQL stores; the field names are part of that format. Keys this
/// release does not know (written by a newer one) are kept in
/// [`JobDefinition::other_fields`], written back as they were, and ignored with a
/// warning when the job is built, so a fleet can be upgraded one replica at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDefinition {
    /// The job's name.
    pub name: String,
    /// When it fires.
    pub schedule: ScheduleSpec,
    /// The name of a handler registered with
    /// [`Scheduler::register_handler`](crate::Scheduler::register_handler).
    pub handler: String,
    /// Data for the handler, read with [`JobContext::payload`](crate::JobContext::payload).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub payload: serde_json::Value,
    /// The limit on one run, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Also fire at start-up (intervals only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_on_start: bool,
    /// The misfire policy; the kind's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misfire: Option<Misfire>,
    /// The grace window in milliseconds; [`Misfire::DEFAULT_GRACE`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
    /// Keys this release does not know, with their values: ignored (with a warning) when
    /// the job is built, kept when the definition is written back.
    #[serde(flatten)]
    pub other_fields: serde_json::Map<String, serde_json::Value>,
}

/// A schedule as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ScheduleSpec {
    /// An interval anchored to the Unix epoch plus `offset_ms`.
    Every {
        /// The period in milliseconds.
        period_ms: u64,
        /// The anchor's offset from the Unix epoch in milliseconds.
        #[serde(default)]
        offset_ms: i64,
    },
    /// A cron expression in an IANA time zone (UTC when absent).
    Cron {
        /// The expression.
        expression: String,
        /// The IANA zone name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timezone: Option<String>,
    },
    /// One instant, RFC 3339.
    At {
        /// The instant, e.g. `2026-12-01T09:00:00Z`.
        instant: String,
    },
    /// A delay after the scheduler starts, in milliseconds.
    After {
        /// The delay in milliseconds.
        delay_ms: u64,
    },
}

impl JobDefinition {
    /// Job `name` firing on `schedule`, run by the handler registered as `handler`, with
    /// every other field at its default: no payload, no timeout, no run at start-up, the
    /// schedule kind's misfire policy and [`Misfire::DEFAULT_GRACE`]. Set the fields for
    /// more.
    pub fn new(name: impl Into<String>, schedule: ScheduleSpec, handler: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            schedule,
            handler: handler.into(),
            payload: serde_json::Value::Null,
            timeout_ms: None,
            run_on_start: false,
            misfire: None,
            grace_ms: None,
            other_fields: serde_json::Map::new(),
        }
    }

    /// Builds the job, with the handler registered under `self.handler`.
    ///
    /// # Errors
    /// An unknown handler, or any problem [`JobBuilder::build`](crate::JobBuilder::build)
    /// reports.
    pub fn to_job(&self, handlers: &HandlerRegistry) -> Result<Job, JobError> {
        let invalid = |field, reason: String| JobError::Invalid { job: self.name.clone(), field, reason };
        let schedule_error = |source: ScheduleError| JobError::Schedule { job: self.name.clone(), source };
        if !self.other_fields.is_empty() {
            let keys: Vec<&str> = self.other_fields.keys().map(String::as_str).collect();
            tracing::warn!(
                job = %self.name,
                ?keys,
                "definition keys this release does not know (written by a newer one?) are ignored"
            );
        }
        let handler = handlers
            .get(&self.handler)
            .ok_or_else(|| invalid("handler", format!("no handler is registered as {:?}", self.handler)))?;
        let mut builder = Job::builder(&self.name).shared_handler(handler);
        builder = match &self.schedule {
            ScheduleSpec::Every { period_ms, offset_ms } => {
                let interval = Interval::every(Duration::from_millis(*period_ms))
                    .and_then(|i| i.with_offset(SignedDuration::from_millis(*offset_ms)))
                    .map_err(schedule_error)?;
                builder.schedule(interval)
            }
            ScheduleSpec::Cron { expression, timezone } => {
                let zone = match timezone {
                    Some(name) => TimeZone::get(name)
                        .map_err(|e| invalid("timezone", format!("unknown time zone {name:?}: {e}")))?,
                    None => TimeZone::UTC,
                };
                builder.cron_in(expression, zone)
            }
            ScheduleSpec::At { instant } => {
                let at: Timestamp = instant
                    .parse()
                    .map_err(|e| invalid("at", format!("not an RFC 3339 instant {instant:?}: {e}")))?;
                builder.at(at)
            }
            ScheduleSpec::After { delay_ms } => builder.after(Duration::from_millis(*delay_ms)),
        };
        if let Some(ms) = self.timeout_ms {
            builder = builder.timeout(Duration::from_millis(ms));
        }
        if let Some(misfire) = self.misfire {
            builder = builder.misfire(misfire);
        }
        if let Some(ms) = self.grace_ms {
            builder = builder.grace(Duration::from_millis(ms));
        }
        if !self.payload.is_null() {
            builder = builder.payload(self.payload.clone());
        }
        builder.run_on_start(self.run_on_start).build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobContext;

    async fn noop(_ctx: JobContext) -> Result<(), std::io::Error> {
        Ok(())
    }

    #[test]
    fn round_trips_through_json() {
        let json = r#"{"name":"mail","schedule":{"cron":{"expression":"0 9 * * MON","timezone":"Europe/Paris"}},"handler":"send","payload":{"to":"ops"},"misfire":{"policy":"run_all","cap":3}}"#;
        let definition: JobDefinition = serde_json::from_str(json).unwrap();
        assert_eq!(definition.misfire, Some(Misfire::RunAll { cap: 3 }));
        assert_eq!(serde_json::to_string(&definition).unwrap(), json);
    }

    #[test]
    fn unknown_keys_are_kept_and_ignored() {
        let json =
            r#"{"name":"tick","schedule":{"every":{"period_ms":1000}},"handler":"noop","jitter_ms":50}"#;
        let definition: JobDefinition = serde_json::from_str(json).unwrap();
        assert_eq!(definition.other_fields.get("jitter_ms"), Some(&serde_json::json!(50)));
        let registry = HandlerRegistry::default();
        registry.register("noop", noop);
        assert_eq!(definition.to_job(&registry).unwrap().name(), "tick");
        let written: serde_json::Value = serde_json::to_value(&definition).unwrap();
        assert_eq!(written["jitter_ms"], 50, "written back as it was");
    }

    #[test]
    fn builds_with_a_registered_handler_only() {
        let registry = HandlerRegistry::default();
        let definition =
            JobDefinition::new("tick", ScheduleSpec::Every { period_ms: 1000, offset_ms: 0 }, "noop");
        let err = definition.to_job(&registry).unwrap_err().to_string();
        assert_eq!(err, "job \"tick\": handler: no handler is registered as \"noop\"");
        registry.register("noop", noop);
        assert_eq!(definition.to_job(&registry).unwrap().name(), "tick");
    }

    #[test]
    fn bad_zone_and_instant_name_the_field() {
        let registry = HandlerRegistry::default();
        registry.register("noop", noop);
        let zoned = ScheduleSpec::Cron { expression: "* * * * *".into(), timezone: Some("Mars/Base".into()) };
        let mut definition = JobDefinition::new("x", zoned, "noop");
        assert!(
            definition.to_job(&registry).unwrap_err().to_string().starts_with("job \"x\": timezone: unknown")
        );
        definition.schedule = ScheduleSpec::At { instant: "tomorrow".into() };
        assert!(
            definition
                .to_job(&registry)
                .unwrap_err()
                .to_string()
                .starts_with("job \"x\": at: not an RFC 3339")
        );
    }
}
