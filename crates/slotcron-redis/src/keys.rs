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

    /// `{prefix}fencing:{job}`: the job's fencing counter.
    pub fn fencing(&self, job: &str) -> String {
        self.per_job("fencing", job)
    }

    /// `{prefix}mark:{job}`: the job's high-water mark, the newest recurring trigger
    /// granted (milliseconds since the Unix epoch).
    pub fn mark(&self, job: &str) -> String {
        self.per_job("mark", job)
    }

    /// `{prefix}{role}:{job}`: the one layout of every per-job key. Job names contain no
    /// `:` while trigger instants do, so no trigger key equals a per-job key.
    fn per_job(&self, role: &str, job: &str) -> String {
        format!("{}{role}:{job}", self.prefix)
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
        assert_eq!(keys.mark("backup"), "app:slotcron:mark:backup");
    }
}
