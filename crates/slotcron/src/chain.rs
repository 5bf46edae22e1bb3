//! Job chains ([`JobBuilder::run_after`](crate::JobBuilder::run_after)): the checks of a
//! set of jobs' parents — every parent known, no cycle — for a jobs file at load and
//! for [`Scheduler::add`](crate::Scheduler::add).

use std::collections::{BTreeMap, HashSet};

use crate::job::{Job, JobError};

/// The field chain problems are reported against.
const FIELD: &str = "run_after";

/// Checks the chains of `jobs`, a whole set (a jobs file): every chained job's parent is
/// one of them, and no job is its own ancestor.
///
/// # Errors
/// Every problem found, each a [`JobError::Invalid`] of field `run_after` naming the job:
/// an unknown parent, or a cycle (reported once, against the first of its jobs by name,
/// naming every job in it: `a → b → c → a`).
pub fn check_chains<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> Result<(), Vec<JobError>> {
    let jobs: Vec<&Job> = jobs.into_iter().collect();
    // No job chained (a big file's usual case): nothing to check.
    if jobs.iter().all(|job| job.parent().is_none()) {
        return Ok(());
    }
    let parents: BTreeMap<&str, Option<&str>> = jobs.iter().map(|job| (job.name(), job.parent())).collect();
    let mut problems = Vec::new();
    for (name, parent) in &parents {
        if let Some(parent) = parent.filter(|parent| !parents.contains_key(parent)) {
            let reason = format!("no job named {parent:?} (the parent it runs after)");
            problems.push(JobError::Invalid { job: (*name).to_owned(), field: FIELD, reason });
        }
    }
    // Only a chained job can be in a cycle.
    for name in parents.iter().filter(|(_, parent)| parent.is_some()).map(|(name, _)| name) {
        let Some(cycle) = cycle_from(name, |job| parents.get(job).copied().flatten()) else { continue };
        // Reported once, against the first of its jobs by name.
        if cycle.iter().min() == Some(name) {
            problems.push(cycle_error(name, &cycle));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// The cycle `start` is in, following `parent_of` up from it: its jobs in order from
/// `start` (`[a, b, c]` for `a → b → c → a`); `None` if it is in none (an ancestor's cycle
/// that does not pass through `start` is not its own).
pub(crate) fn cycle_from<'a>(
    start: &'a str,
    parent_of: impl Fn(&str) -> Option<&'a str>,
) -> Option<Vec<&'a str>> {
    let mut path = vec![start];
    let mut seen: HashSet<&str> = HashSet::from([start]);
    let mut at = start;
    while let Some(parent) = parent_of(at) {
        if parent == start {
            return Some(path);
        }
        if !seen.insert(parent) {
            return None;
        }
        path.push(parent);
        at = parent;
    }
    None
}

/// The error of `job`, in `cycle` (its jobs from `job` on).
pub(crate) fn cycle_error(job: &str, cycle: &[&str]) -> JobError {
    let mut names: Vec<&str> = cycle.to_vec();
    names.push(job);
    let reason = format!("a cycle of jobs that run after each other: {}", names.join(" → "));
    JobError::Invalid { job: job.to_owned(), field: FIELD, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, parent: Option<&str>) -> Job {
        let builder =
            Job::builder(name).handler(|_ctx: crate::JobContext| async { Ok::<_, std::io::Error>(()) });
        match parent {
            Some(parent) => builder.run_after(parent),
            None => builder.every(std::time::Duration::from_secs(60)),
        }
        .build()
        .unwrap()
    }

    #[test]
    fn a_chain_of_known_parents_passes() {
        let jobs = [job("a", None), job("b", Some("a")), job("c", Some("b")), job("d", Some("a"))];
        assert!(check_chains(&jobs).is_ok());
    }

    #[test]
    fn an_unknown_parent_and_a_cycle_are_each_reported_naming_the_jobs() {
        let jobs = [job("x", Some("missing")), job("a", Some("c")), job("b", Some("a")), job("c", Some("b"))];
        let errors: Vec<String> = check_chains(&jobs).unwrap_err().iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                r#"job "x": run_after: no job named "missing" (the parent it runs after)"#,
                r#"job "a": run_after: a cycle of jobs that run after each other: a → c → b → a"#,
            ]
        );
    }

    #[test]
    fn a_job_below_a_cycle_is_not_in_it() {
        let parents = |job: &str| match job {
            "d" => Some("a"),
            "a" => Some("b"),
            "b" => Some("a"),
            _ => None,
        };
        assert_eq!(cycle_from("d", parents), None);
        assert_eq!(cycle_from("a", parents), Some(vec!["a", "b"]));
    }
}
