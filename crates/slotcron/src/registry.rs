//! The handler registry: handlers by name, for jobs described by data.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::job::Handler;

/// Handlers by name, for jobs built from definitions.
#[derive(Default)]
pub struct HandlerRegistry {
    handlers: RwLock<HashMap<String, Arc<dyn Handler>>>,
}

impl HandlerRegistry {
    /// Registers (or replaces) the handler called `name`.
    pub fn register(&self, name: impl Into<String>, handler: impl Handler) {
        self.handlers.write().unwrap_or_else(|p| p.into_inner()).insert(name.into(), Arc::new(handler));
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn Handler>> {
        self.handlers.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }
}
