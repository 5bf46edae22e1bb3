use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::{
    DEFINITION_CHANGES_KEPT, DefinitionChange, JobDefinition, JobState, Store, StoreError, merge_job_state,
};
use crate::clock::SystemClock;
use crate::control::{Controls, MemoryControls};

/// A store in memory: state survives a scheduler but not the process. The library's
/// default; share one between schedulers to simulate restarts in tests. Its pauses and
/// idempotency keys are [`MemoryControls`] on the system clock.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    controls: MemoryControls,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self { inner: Mutex::default(), controls: MemoryControls::new(std::sync::Arc::new(SystemClock)) }
    }
}

#[derive(Debug, Default)]
struct Inner {
    states: HashMap<String, JobState>,
    fencing: HashMap<String, u64>,
    definitions: HashMap<String, JobDefinition>,
    /// Every job's changes, oldest first.
    changes: Vec<DefinitionChange>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn load_states(&self) -> Result<HashMap<String, JobState>, StoreError> {
        Ok(self.lock().states.clone())
    }

    async fn save_state(&self, job: &str, state: &JobState) -> Result<(), StoreError> {
        let mut inner = self.lock();
        match inner.states.get_mut(job) {
            Some(stored) => {
                if let Some(merged) = merge_job_state(Some(stored), state) {
                    *stored = merged;
                }
            }
            None => {
                inner.states.insert(job.to_owned(), state.clone());
            }
        }
        Ok(())
    }

    async fn next_fencing_token(&self, job: &str) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let token = inner.fencing.entry(job.to_owned()).or_default();
        *token += 1;
        Ok(*token)
    }

    async fn delete_state(&self, job: &str) -> Result<bool, StoreError> {
        Ok(self.lock().states.remove(job).is_some())
    }

    async fn load_definitions(&self) -> Result<Vec<JobDefinition>, StoreError> {
        let mut definitions: Vec<_> = self.lock().definitions.values().cloned().collect();
        definitions.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(definitions)
    }

    async fn save_definition(&self, definition: &JobDefinition) -> Result<(), StoreError> {
        self.lock().definitions.insert(definition.name.clone(), definition.clone());
        Ok(())
    }

    async fn delete_definition(&self, job: &str) -> Result<bool, StoreError> {
        Ok(self.lock().definitions.remove(job).is_some())
    }

    async fn change_definition(
        &self,
        change: DefinitionChange,
    ) -> Result<Option<DefinitionChange>, StoreError> {
        let mut inner = self.lock();
        let old = inner.definitions.get(&change.job).cloned();
        let Some(kept) = change.replacing(old) else { return Ok(None) };
        match &kept.new {
            Some(new) => _ = inner.definitions.insert(kept.job.clone(), new.clone()),
            None => _ = inner.definitions.remove(&kept.job),
        }
        inner.changes.push(kept.clone());
        let of_job = inner.changes.iter().filter(|c| c.job == kept.job).count();
        let mut excess = of_job.saturating_sub(DEFINITION_CHANGES_KEPT);
        inner.changes.retain(|c| {
            let drop = excess > 0 && c.job == kept.job;
            excess -= usize::from(drop);
            !drop
        });
        Ok(Some(kept))
    }

    async fn definition_changes(
        &self,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DefinitionChange>, StoreError> {
        let inner = self.lock();
        let of_job = inner.changes.iter().rev().filter(|c| job.is_none_or(|job| c.job == job));
        Ok(of_job.take(limit).cloned().collect())
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }
}
