//! A job's environment and working directory: `env = { NAME = "value" }` and
//! `working_dir = "/abs/path"`, at the top level (for every job) and in a `[[job]]`
//! (which wins: its `env` adds to and overrides the file's, its `working_dir` replaces
//! the file's).

use std::path::PathBuf;
use std::sync::Arc;

use toml::de::DeValue;

use super::Reader;
use super::table::Table;
use crate::command::{self, ShellCommand};

/// The top-level `env`, `working_dir` and `on_failure`, which every job starts from.
#[derive(Debug, Clone)]
pub(super) struct Defaults {
    pub(super) env: Arc<[(String, String)]>,
    pub(super) working_dir: Option<PathBuf>,
    pub(super) on_failure: Option<ShellCommand>,
}

impl Default for Defaults {
    fn default() -> Self {
        Self { env: Arc::from([]), working_dir: None, on_failure: None }
    }
}

impl Reader<'_> {
    /// The `env` table of `table`: each key an environment variable name (no `=`, no NUL,
    /// not empty, not `SLOTCRON_*`, which the daemon sets), each value a string without
    /// NUL. Problems are recorded; empty when absent.
    pub(super) fn env(&mut self, table: &Table<'_, '_>) -> Vec<(String, String)> {
        let expected = "a table of strings like { PATH = \"/usr/bin:/bin\" }";
        let Some(entries) = self.typed(table, "env", expected, DeValue::as_table) else { return Vec::new() };
        let mut env = Vec::new();
        for (name, value) in entries.get_ref().iter() {
            let key = format!("env.{}", name.get_ref());
            let reason = match name.get_ref().as_ref() {
                "" => Some("an environment variable name must not be empty".to_owned()),
                n if n.contains('=') || n.contains('\0') => {
                    Some("an environment variable name must not contain = or a NUL byte".to_owned())
                }
                n if n.starts_with("SLOTCRON_") => {
                    Some("SLOTCRON_* variables are set by the daemon for each run".to_owned())
                }
                _ => None,
            };
            if let Some(reason) = reason {
                self.problem(table, &key, name.span(), reason);
                continue;
            }
            let Some(text) = value.get_ref().as_str() else {
                self.wrong_type(table, &key, value, "a string");
                continue;
            };
            match command::check_no_nul(text, "an environment variable") {
                Ok(()) => env.push((name.get_ref().to_string(), text.to_owned())),
                Err(reason) => self.problem(table, &key, value.span(), reason),
            }
        }
        env
    }

    /// The `working_dir` of `table`: an absolute path without NUL (a relative one would
    /// depend on where each replica's daemon was started). Problems are recorded.
    pub(super) fn working_dir(&mut self, table: &Table<'_, '_>) -> Option<PathBuf> {
        let dir = self.string(table, "working_dir", "an absolute directory path string like \"/srv/app\"")?;
        let path = PathBuf::from(dir.get_ref());
        let reason = match *dir.get_ref() {
            text if text.contains('\0') => "contains a NUL byte, which a path cannot hold",
            _ if !path.is_absolute() => "must be an absolute path (starting with /)",
            _ => return Some(path),
        };
        self.problem(table, "working_dir", dir.span(), reason);
        None
    }

    /// A job's environment: the file's, then the job's own (later entries win).
    pub(super) fn job_env(&self, own: Vec<(String, String)>) -> Arc<[(String, String)]> {
        if own.is_empty() {
            return self.defaults.env.clone();
        }
        self.defaults.env.iter().cloned().chain(own).collect()
    }
}
