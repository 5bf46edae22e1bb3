//! Reloading the jobs without a restart: what asks for a reload (SIGHUP, SIGUSR2, a
//! change of the jobs file under `--watch`), and the reload itself, a reconcile of the
//! scheduler to the file's jobs (and, with `--jobs-from-state`, the state's).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rayon::prelude::*;
use slotcron::jiff::Timestamp;
use slotcron::{CancellationToken, Plan, ReconcileError, ReconcileReport, Scheduler};
use slotcron_admin::{Reload, ReloadStatus};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;

use crate::hook::FailureHooks;
use crate::jobs_file::{self, Directory, Earlier, Format, GraceFloor, History, JobEntry, JobsFile, Pieces};
use crate::state_jobs::StateJobs;

/// Changes to the watched directory closer together than this are one reload.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// What asks for a reload: SIGHUP (as for cron, nginx, Prometheus), SIGUSR2 (as
/// supercronic users send), a change of the jobs file (with `--watch`), or a change of
/// the jobs kept in the state (with `--jobs-from-state`).
pub struct Triggers {
    hangup: Signal,
    user2: Signal,
    /// File changes, with the watcher that sends them (kept alive here).
    watch: Option<(notify::RecommendedWatcher, mpsc::UnboundedReceiver<()>)>,
    /// Changes of the state's jobs.
    state: Option<mpsc::UnboundedReceiver<()>>,
}

impl Triggers {
    /// Installs the SIGHUP and SIGUSR2 handlers and, if `watch`, a watcher on the
    /// directory of `file`: watching the directory rather than the file sees an editor's
    /// write to a new file renamed over the old one, and a Kubernetes ConfigMap's swap of
    /// its `..data` symlink, as well as writes in place. For a directory of crontabs,
    /// the directory itself: any file in it added, changed or removed.
    ///
    /// # Errors
    /// A handler or the watcher cannot be installed.
    pub fn install(file: &Path, watch: bool) -> Result<Self, String> {
        let install = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| format!("cannot install the {name} handler: {e}"))
        };
        let watch = if watch { Some(watch_directory(file)?) } else { None };
        Ok(Self {
            hangup: install(SignalKind::hangup(), "SIGHUP")?,
            user2: install(SignalKind::user_defined2(), "SIGUSR2")?,
            watch,
            state: None,
        })
    }

    /// Also reloads when `changes` says the state's jobs changed.
    pub fn on_state_changes(&mut self, changes: mpsc::UnboundedReceiver<()>) {
        self.state = Some(changes);
    }

    /// The next reason to reload, once any burst of file changes has settled.
    async fn next(&mut self) -> &'static str {
        let watched = async {
            match &mut self.watch {
                Some((_, changes)) => {
                    if changes.recv().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                    while tokio::time::timeout(DEBOUNCE, changes.recv()).await.is_ok_and(|c| c.is_some()) {}
                }
                None => std::future::pending().await,
            }
        };
        let state = async {
            let changed = match &mut self.state {
                Some(changes) => changes.recv().await.is_some(),
                None => false,
            };
            if !changed {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = self.hangup.recv() => "SIGHUP",
            () = state => STATE_CHANGE,
            _ = self.user2.recv() => "SIGUSR2",
            () = watched => "file change",
        }
    }
}

/// A watcher of `file`'s directory that sends on the channel for each event naming the
/// file, or a name starting with `..` (a ConfigMap's `..data` and its timestamped
/// directories); of `file` itself if it is a directory of crontabs, sending for every
/// event in it.
fn watch_directory(file: &Path) -> Result<(notify::RecommendedWatcher, mpsc::UnboundedReceiver<()>), String> {
    use notify::Watcher;
    // A directory of crontabs: every name in it matters (`None` matches them all).
    let (directory, name) = match file.parent() {
        _ if file.is_dir() => (file.to_owned(), None),
        Some(dir) if !dir.as_os_str().is_empty() => (dir.to_owned(), file.file_name().map(|n| n.to_owned())),
        _ => (PathBuf::from("."), file.file_name().map(|n| n.to_owned())),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
        Ok(event) => {
            let relevant = event.paths.iter().any(|path| {
                let file_name = path.file_name();
                name.is_none()
                    || file_name == name.as_deref()
                    || file_name.is_some_and(|n| n.as_encoded_bytes().starts_with(b".."))
            });
            if relevant && !event.kind.is_access() {
                _ = tx.send(());
            }
        }
        Err(e) => tracing::warn!("watching the jobs file: {e}"),
    })
    .map_err(|e| format!("--watch: cannot watch {}: {e}", directory.display()))?;
    watcher
        .watch(&directory, notify::RecursiveMode::NonRecursive)
        .map_err(|e| format!("--watch: cannot watch {}: {e}", directory.display()))?;
    Ok((watcher, rx))
}

/// The cause of a reload for a change of the state's jobs.
const STATE_CHANGE: &str = "state change";

/// The daemon's desired set of jobs: the jobs file's (the last version that loaded), and
/// the state's when `--jobs-from-state` is given; and the scheduler it is applied to.
pub struct Reloader {
    scheduler: Scheduler,
    path: PathBuf,
    format: Format,
    file_jobs: Vec<JobEntry>,
    /// The pieces of the file as last loaded, whose jobs a reload takes again where
    /// unchanged ([`jobs_file::load_again`]).
    pieces: Pieces,
    /// The file's `[history]` in effect: the one read at start (a change needs a restart).
    history: History,
    state_jobs: Option<StateJobs>,
    grace_floor: GraceFloor,
    /// The jobs' failure hooks, set again from each file that loads.
    hooks: FailureHooks,
}

impl Reloader {
    /// The jobs of `loaded` (and of `state_jobs`), for `scheduler`; a reloaded file whose
    /// jobs `grace_floor` refuses is not applied.
    pub fn new(
        scheduler: Scheduler,
        loaded: JobsFile,
        state_jobs: Option<StateJobs>,
        grace_floor: GraceFloor,
        hooks: FailureHooks,
    ) -> Self {
        let JobsFile { path, format, jobs, history, pieces, .. } = loaded;
        Self { scheduler, path, format, file_jobs: jobs, pieces, history, state_jobs, grace_floor, hooks }
    }

    /// The state's jobs, with `--jobs-from-state`.
    pub fn state_jobs(&self) -> Option<&StateJobs> {
        self.state_jobs.as_ref()
    }

    /// The jobs file's jobs, as last loaded.
    pub fn file_jobs(&self) -> &[JobEntry] {
        &self.file_jobs
    }

    /// Applies the desired set to the scheduler: at start, and after each reload. With
    /// `--jobs-from-state`, publishes the file's job names in the state first.
    ///
    /// # Errors
    /// The state's jobs cannot be read (nothing changed then), or what
    /// [`Scheduler::reconcile`] returns.
    pub async fn apply(&mut self) -> Result<ReconcileReport, String> {
        let mut from_state = Vec::new();
        if let Some(state_jobs) = &self.state_jobs {
            state_jobs.publish(&self.path, &self.file_jobs).await;
            from_state = state_jobs
                .plans(&self.path, &self.file_jobs)
                .await
                .map_err(|e| format!("cannot read the state's jobs: {e}"))?;
        }
        // A million plans made and compared: the runtime's other tasks (the engine's
        // triggers) go to another thread meanwhile.
        let reconciled = tokio::task::block_in_place(|| {
            // A disabled job's plan is removed from the scheduler (or never added). Made
            // on every core: a million plans, each a copy of its job.
            let mut plans: Vec<Plan> = self
                .file_jobs
                .par_iter()
                .map(|entry| {
                    let fingerprint = format!("{:016x}", entry.fingerprint);
                    Plan::built(entry.job.clone()).fingerprint(fingerprint).enabled(entry.enabled)
                })
                .collect();
            plans.extend(from_state);
            self.scheduler.reconcile(plans)
        });
        match reconciled {
            Ok(report) => Ok(report),
            Err(ReconcileError::Plans(report)) => {
                for failure in &report.failures {
                    tracing::error!("{failure}; that job stays as it was");
                }
                Ok(report)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Reloads: reads the jobs file again and applies it, or, if it no longer loads,
    /// logs every problem as `slotcron check` prints them and keeps the jobs as they are.
    /// Logs one line with how many jobs were added, changed, removed and left unchanged,
    /// and the names of those added, changed and removed (the first [`NAMED_JOBS`] of
    /// each).
    /// Never waits for running commands.
    ///
    /// The result (`Ok`: the file loaded and every job was applied; else why not, for
    /// a person) is what a "last reload successful" metric and the admin API report.
    ///
    /// # Errors
    /// The file does not load, the state's jobs cannot be read, or a job was not applied.
    pub async fn reload(&mut self, cause: &str) -> Result<(), String> {
        let began = std::time::Instant::now();
        let replaced = match cause {
            STATE_CHANGE => Vec::new(),
            _ => self.reload_file(cause).await?,
        };
        let read = began.elapsed();
        let report = self.apply().await.inspect_err(|e| {
            tracing::error!(cause, "reload failed: {e}; the jobs stay as they were");
        })?;
        // The file's jobs as they were, freed off the runtime's threads once the new ones
        // are applied (a million take a few tenths of a second).
        tokio::task::spawn_blocking(move || drop(replaced));
        tracing::info!(
            cause,
            added = report.added.len(),
            changed = report.changed.len(),
            removed = report.removed.len(),
            unchanged = report.unchanged,
            added_jobs = %names(&report.added),
            changed_jobs = %names(&report.changed),
            removed_jobs = %names(&report.removed),
            read_ms = read.as_millis(),
            applied_ms = (began.elapsed() - read).as_millis(),
            "jobs reloaded"
        );
        match report.failures.is_empty() {
            true => Ok(()),
            false => Err(report.failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")),
        }
    }

    /// Reads the jobs file again; if it does not load, every problem is logged and the
    /// error names the file and holds the problems. The jobs it replaced.
    async fn reload_file(&mut self, cause: &str) -> Result<Vec<JobEntry>, String> {
        // Read on this thread (the runtime's other tasks go to another one meanwhile),
        // taking the jobs of the unchanged pieces from the last load.
        let earlier = Earlier { pieces: &self.pieces, jobs: &self.file_jobs };
        let loaded =
            tokio::task::block_in_place(|| jobs_file::load_again(&self.path, self.format, Some(&earlier)));
        let loaded = loaded.map_err(|problems| problems.to_string()).and_then(|loaded| {
            self.grace_floor.check(&loaded)?;
            Ok(loaded)
        });
        match loaded {
            Ok(loaded) => {
                if let Some(no_jobs) = loaded.no_jobs() {
                    tracing::warn!(cause, "{no_jobs}: every job of the file stops being scheduled");
                }
                log_skipped(loaded.directory.as_ref());
                if loaded.history != self.history {
                    tracing::warn!(
                        cause,
                        "[history] changed: the run history keeps the retention read at start until \
                         the daemon is restarted"
                    );
                }
                self.hooks.set(&loaded.jobs);
                self.pieces = loaded.pieces;
                Ok(std::mem::replace(&mut self.file_jobs, loaded.jobs))
            }
            Err(problems) => {
                for line in problems.lines() {
                    tracing::error!("{line}");
                }
                tracing::error!(
                    cause,
                    file = %self.path.display(),
                    "reload failed: the jobs file does not load; the previous jobs keep running"
                );
                Err(format!("{}: the jobs file does not load: {problems}", self.path.display()))
            }
        }
    }

    /// Reloads at each of `triggers` until `cancel` fires, recording each in the
    /// metrics and in `status`.
    pub async fn serve(mut self, mut triggers: Triggers, status: ReloadStatus, cancel: CancellationToken) {
        loop {
            let cause = tokio::select! {
                () = cancel.cancelled() => break,
                cause = triggers.next() => cause,
            };
            tracing::info!(cause, file = %self.path.display(), "reloading the jobs");
            let result = self.reload(cause).await;
            let at = Timestamp::now();
            slotcron::record_config_reload(result.is_ok(), at);
            status.record(Reload {
                at,
                cause: cause.to_owned(),
                successful: result.is_ok(),
                error: result.err(),
            });
        }
        if let Some(state_jobs) = &self.state_jobs {
            state_jobs.unpublish().await;
        }
    }
}

/// Logs each file a directory of crontabs has that is not read, and why.
pub fn log_skipped(directory: Option<&Directory>) {
    for (path, why) in directory.iter().flat_map(|directory| &directory.skipped) {
        tracing::info!(file = %path.display(), "skipped: {why}");
    }
}

/// How many jobs a reload line names in each of its lists.
const NAMED_JOBS: usize = 10;

/// The first [`NAMED_JOBS`] of `jobs`, comma-separated, then how many more (`-` for none).
fn names(jobs: &[String]) -> String {
    if jobs.is_empty() {
        return "-".to_owned();
    }
    let mut named = jobs.iter().take(NAMED_JOBS).map(String::as_str).collect::<Vec<_>>().join(", ");
    if jobs.len() > NAMED_JOBS {
        let _ = write!(named, " and {} more", jobs.len() - NAMED_JOBS);
    }
    named
}
