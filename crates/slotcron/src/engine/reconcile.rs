//! Reconcile as a pure diff: the jobs a scheduler has (by name, with their fingerprints)
//! against a desired set of plans, into what to add, replace and remove. No engine state
//! here; [`Scheduler::reconcile`](crate::Scheduler::reconcile) applies the result.

use std::collections::HashSet;
use std::fmt;

/// One desired plan as the diff sees it.
#[derive(Debug)]
pub(crate) struct Desired<'a> {
    pub id: &'a str,
    pub enabled: bool,
    /// The plan's fingerprint, or why it has none.
    pub fingerprint: &'a Result<String, String>,
}

/// What to do with one desired plan.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Its job exists with the same fingerprint: nothing.
    Unchanged,
    /// No job has its id: build and add it.
    Add,
    /// Its job exists with another fingerprint: build it and replace the job.
    Change,
    /// Disabled, and its job exists: remove it.
    Remove,
    /// Disabled, and no job has its id: nothing.
    Absent,
    /// The plan cannot be compared (no fingerprint): reported, its job left as it is.
    Fail(String),
}

/// The diff of a desired set against the current jobs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Diff {
    /// One step per desired plan, in order.
    pub steps: Vec<Step>,
    /// The current jobs no plan names.
    pub missing: Vec<String>,
}

/// The ids of a desired set, hashed with foldhash (a million ids; they are the caller's
/// own plans').
pub(crate) type Ids<'a> = HashSet<&'a str, foldhash::fast::RandomState>;

/// The ids of `desired`, checked.
///
/// # Errors
/// An empty or duplicate id: the whole set is rejected.
pub(crate) fn ids<'a>(desired: &[Desired<'a>]) -> Result<Ids<'a>, ReconcileError> {
    let mut ids = Ids::with_capacity_and_hasher(desired.len(), Default::default());
    for (index, plan) in desired.iter().enumerate() {
        if plan.id.is_empty() {
            return Err(ReconcileError::EmptyId { index });
        }
        if !ids.insert(plan.id) {
            return Err(ReconcileError::DuplicateId { id: plan.id.to_owned() });
        }
    }
    Ok(ids)
}

/// What to do with `plan`, given the fingerprint of the current job of its id (`None`:
/// no such job; `Some(None)`: a job added without one).
pub(crate) fn step(plan: &Desired<'_>, current: Option<Option<&str>>) -> Step {
    match (plan.enabled, current, plan.fingerprint) {
        (false, Some(_), _) => Step::Remove,
        (false, None, _) => Step::Absent,
        (true, _, Err(reason)) => Step::Fail(reason.clone()),
        (true, None, Ok(_)) => Step::Add,
        (true, Some(have), Ok(want)) if have == Some(want.as_str()) => Step::Unchanged,
        (true, Some(_), Ok(_)) => Step::Change,
    }
}

/// Compares `desired` with the current jobs: `current` gives each current job's
/// fingerprint by name (`Some(None)` for a job added without one), `names` lists them.
///
/// # Errors
/// An empty or duplicate id: the whole set is rejected.
pub(crate) fn diff<'n>(
    desired: &[Desired<'_>],
    names: impl IntoIterator<Item = &'n str>,
    current: impl Fn(&str) -> Option<Option<&'n str>>,
) -> Result<Diff, ReconcileError> {
    let ids = ids(desired)?;
    let steps = desired.iter().map(|plan| step(plan, current(plan.id))).collect();
    Ok(Diff { steps, missing: missing(names, &ids) })
}

/// The names of `names` that no desired id names.
pub(crate) fn missing<'n>(names: impl IntoIterator<Item = &'n str>, ids: &Ids<'_>) -> Vec<String> {
    names.into_iter().filter(|name| !ids.contains(name)).map(str::to_owned).collect()
}

/// Why [`Scheduler::reconcile`](crate::Scheduler::reconcile) rejected a whole desired set,
/// or which of its plans failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// A plan has an empty id; nothing was changed.
    #[error("plan #{index} (counting from 0) has an empty id; nothing was changed")]
    EmptyId {
        /// Its position in the set.
        index: usize,
    },
    /// Two plans have the same id; nothing was changed.
    #[error("plan {id:?}: two plans have this id; nothing was changed")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// Some plans failed (their jobs were left as they were); the others were applied, as
    /// the report says.
    #[error("{}", PlanFailures(&.0.failures))]
    Plans(ReconcileReport),
}

/// What a reconcile did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// The jobs added, in plan order.
    pub added: Vec<String>,
    /// The jobs replaced (their fingerprint changed), in plan order.
    pub changed: Vec<String>,
    /// The jobs removed (missing from the set, or disabled).
    pub removed: Vec<String>,
    /// How many jobs were left as they were.
    pub unchanged: usize,
    /// The plans that could not be applied, each with its reason.
    pub failures: Vec<PlanError>,
}

impl fmt::Display for ReconcileReport {
    /// `added 1, changed 2, removed 0, unchanged 7` (and `, failed N` when some failed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "added {}, changed {}, removed {}, unchanged {}",
            self.added.len(),
            self.changed.len(),
            self.removed.len(),
            self.unchanged
        )?;
        if !self.failures.is_empty() {
            write!(f, ", failed {}", self.failures.len())?;
        }
        Ok(())
    }
}

/// One plan that [`Scheduler::reconcile`](crate::Scheduler::reconcile) could not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plan {id:?}: {reason}")]
pub struct PlanError {
    /// The plan's id.
    pub id: String,
    /// What went wrong, for decisions.
    pub kind: PlanErrorKind,
    /// Why (a bad expression, an unregistered handler, no fingerprint...).
    pub reason: String,
}

/// What went wrong with one plan of a reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PlanErrorKind {
    /// The plan's fingerprint could not be derived (a closure handler without a stated
    /// fingerprint or handler name, a definition that does not serialize): state one.
    NoFingerprint,
    /// The plan's job could not be built (a bad schedule or policy, an unregistered
    /// handler): the reason says which field and why.
    InvalidJob,
}

struct PlanFailures<'a>(&'a [PlanError]);

impl fmt::Display for PlanFailures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} plan(s) failed; the others were applied", self.0.len())?;
        for failure in self.0 {
            write!(f, "\n  {failure}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(fingerprint: &str) -> Result<String, String> {
        Ok(fingerprint.to_owned())
    }

    fn run<'a>(
        desired: &[Desired<'_>],
        current: &'a [(&'a str, Option<&'a str>)],
    ) -> Result<Diff, ReconcileError> {
        let names = current.iter().map(|(name, _)| *name);
        diff(desired, names, |id| current.iter().find(|(name, _)| *name == id).map(|(_, f)| *f))
    }

    #[test]
    fn every_step() {
        let (a, b, c, new) = (ok("1"), ok("2"), ok("3"), ok("9"));
        let none = Err("no fingerprint".to_owned());
        let desired = [
            Desired { id: "same", enabled: true, fingerprint: &a },
            Desired { id: "edited", enabled: true, fingerprint: &new },
            Desired { id: "new", enabled: true, fingerprint: &b },
            Desired { id: "off", enabled: false, fingerprint: &c },
            Desired { id: "off-absent", enabled: false, fingerprint: &c },
            Desired { id: "unnamed", enabled: true, fingerprint: &none },
            Desired { id: "added-by-hand", enabled: true, fingerprint: &a },
        ];
        let current = [
            ("same", Some("1")),
            ("edited", Some("2")),
            ("off", Some("3")),
            ("gone", Some("4")),
            ("unnamed", Some("5")),
            ("added-by-hand", None),
        ];
        let diff = run(&desired, &current).unwrap();
        assert_eq!(
            diff.steps,
            [
                Step::Unchanged,
                Step::Change,
                Step::Add,
                Step::Remove,
                Step::Absent,
                Step::Fail("no fingerprint".into()),
                Step::Change
            ]
        );
        assert_eq!(diff.missing, ["gone"]);
    }

    #[test]
    fn an_empty_or_duplicate_id_rejects_the_set() {
        let a = ok("1");
        let dup = [
            Desired { id: "x", enabled: true, fingerprint: &a },
            Desired { id: "x", enabled: false, fingerprint: &a },
        ];
        let err = run(&dup, &[]).unwrap_err();
        assert_eq!(err.to_string(), "plan \"x\": two plans have this id; nothing was changed");
        let empty = [
            Desired { id: "x", enabled: true, fingerprint: &a },
            Desired { id: "", enabled: true, fingerprint: &a },
        ];
        assert!(matches!(run(&empty, &[]).unwrap_err(), ReconcileError::EmptyId { index: 1 }));
    }
}
