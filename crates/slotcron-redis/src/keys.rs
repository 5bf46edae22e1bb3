//! Where claims live in Redis.

/// The key layout under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self { prefix: prefix.to_owned() }
    }

    /// `{prefix}{trigger key}`: the engine's trigger key, `{job}:{trigger}` (or the job
    /// name alone for an `after` job).
    pub fn trigger(&self, trigger_key: &str) -> String {
        format!("{}{trigger_key}", self.prefix)
    }

    /// `{prefix}fencing:{job}`: the job's fencing counter. Job names contain no `:` while
    /// trigger instants do, so no trigger key equals a fencing key.
    pub fn fencing(&self, job: &str) -> String {
        format!("{}fencing:{job}", self.prefix)
    }

    /// `{prefix}lease:{job}`: the job's lease (overlap policies). Like the fencing key, it
    /// equals no trigger key.
    pub fn lease(&self, job: &str) -> String {
        format!("{}lease:{job}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sit_under_the_prefix() {
        let keys = Keys::new("app:slotcron:");
        assert_eq!(keys.trigger("backup:2024-05-17T10:00:00Z"), "app:slotcron:backup:2024-05-17T10:00:00Z");
        assert_eq!(keys.trigger("warmup"), "app:slotcron:warmup");
        assert_eq!(keys.fencing("backup"), "app:slotcron:fencing:backup");
        assert_eq!(keys.lease("backup"), "app:slotcron:lease:backup");
    }
}
