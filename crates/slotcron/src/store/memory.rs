use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::{JobDefinition, JobState, Store, StoreError, merge_job_state};
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

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }
}
