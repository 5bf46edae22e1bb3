//! Where claims live in Redis: every key slotcron writes is built here, by one layout.

/// The key layout under one prefix.
///
/// - [`KeyLayout::single`], for one server: the trigger key is `{prefix}{job}:{trigger}`
///   (the job name alone for an `after` job) and a per-job key of kind `K` is
///   `{prefix}K:{job}` (`{prefix}fencing:{job}`). Unchanged since the first release, so
///   an upgrade finds the claims an older release made.
/// - [`KeyLayout::cluster`], for Redis Cluster: every key of a job carries the job name
///   as its hash tag, `{prefix}{{job}}:{trigger}` and `{prefix}{{job}}:K`, so that all
///   the keys one claim touches hash to one slot and the claim stays one script on one
///   node (Redis Cluster specification, "Hash tags").
///
/// Job names contain no `:`, `{` or `}` and trigger instants start with a digit, so no
/// trigger key equals a per-job key in either layout.
#[derive(Debug, Clone)]
pub(crate) struct KeyLayout {
    prefix: String,
    cluster: bool,
}

impl KeyLayout {
    /// The single-server layout.
    pub fn single(prefix: &str) -> Self {
        Self { prefix: prefix.to_owned(), cluster: false }
    }

    /// The Redis Cluster layout. The prefix must hold no `{` or `}`, or the hash tag
    /// would come from the prefix (see [`RedisConfig`](crate::RedisConfig)).
    pub fn cluster(prefix: &str) -> Self {
        Self { prefix: prefix.to_owned(), cluster: true }
    }

    /// The key of the trigger whose engine trigger key is `trigger_key` (`{job}:{trigger}`,
    /// or the job name alone for an `after` job).
    pub fn trigger(&self, job: &str, trigger_key: &str) -> String {
        let prefix = &self.prefix;
        let rest = trigger_key.strip_prefix(job).filter(|rest| rest.is_empty() || rest.starts_with(':'));
        match rest {
            Some(rest) if self.cluster => format!("{prefix}{{{job}}}{rest}"),
            // Not the engine's form: the whole key after the tag, still on the job's slot.
            None if self.cluster => format!("{prefix}{{{job}}}:{trigger_key}"),
            _ => format!("{prefix}{trigger_key}"),
        }
    }

    /// The job's fencing counter.
    pub fn fencing(&self, job: &str) -> String {
        self.per_job("fencing", job)
    }

    /// The job's high-water mark: the newest recurring trigger granted (milliseconds
    /// since the Unix epoch).
    pub fn mark(&self, job: &str) -> String {
        self.per_job("mark", job)
    }

    /// The job's runs counted for `max_runs` (a set of the engine trigger keys whose
    /// start mark counted a run; its size is the count), written by the start script's
    /// counted `mark`; kept by job name, never expired.
    pub fn runs(&self, job: &str) -> String {
        self.per_job("runs", job)
    }

    /// Whether the job is paused: present (holding the instant it was paused, in
    /// milliseconds since the Unix epoch) while it is; read by the claim script.
    pub fn paused(&self, job: &str) -> String {
        self.per_job("paused", job)
    }

    /// The job's streak of failed triggers in a row (an integer, `pause_after_failures`),
    /// counted by the streak script, deleted by a success and by a resume.
    pub fn failures(&self, job: &str) -> String {
        self.per_job("failures", job)
    }

    /// The reason kept beside the job's pause, for a pause its failures made; deleted by
    /// a resume.
    pub fn pause_reason(&self, job: &str) -> String {
        self.per_job("paused_why", job)
    }

    /// The set of the paused jobs' names, for listing them (the per-job keys decide):
    /// `{prefix}index:paused` on one server, `{prefix}{paused}:index` in a cluster, a key
    /// of a kind no job has.
    pub fn paused_index(&self) -> String {
        self.per_job("index", "paused")
    }

    /// The fleet's requests to cancel runs (a sorted set: member `{job}:{trigger ms}:{reason}`,
    /// score its expiry in ms on the server's clock): `{prefix}index:cancels` on one
    /// server, `{prefix}{cancels}:index` in a cluster, a key of a kind no job has.
    pub fn cancels(&self) -> String {
        self.per_job("index", "cancels")
    }

    /// The idempotency key `key` of the job's manual runs (`key` holds no `:`, so this
    /// equals no trigger key): `{prefix}request:{job}:{key}`, `{prefix}{{job}}:request:{key}`.
    pub fn request(&self, job: &str, key: &str) -> String {
        format!("{}:{key}", self.per_job("request", job))
    }

    /// The register of `instance`'s unstarted claims of `job` (a hash: field the engine's
    /// trigger key, value the holder's instance id), written by every script that wins,
    /// marks or takes over a claim: on one server one register per instance for all its
    /// jobs, `{prefix}fleet:unstarted:{instance}` (apart from every trigger key as
    /// [`KeyLayout::members`] is), so that a burst's claims enter it with one `HSET` and
    /// their start marks leave it with one `HDEL`; in a cluster one per job,
    /// `{prefix}{{job}}:unstarted`, on the slot of the job's trigger keys, for every holder.
    ///
    /// One entry per claim in flight: won and not yet start-marked or taken over (Redis
    /// deletes the hash when its last entry goes). The entry is what tells an unmarked
    /// claim from a marked one. What it costs, per entry: the length of its trigger key
    /// and of the holder's instance id, plus about 15 bytes while the register holds at
    /// most 128 entries of at most 64 bytes (Redis' listpack defaults), or about 50 to 60
    /// bytes above that (a hash table entry and two strings); measured on Redis 7.0, a
    /// 34-byte key and a 14-byte instance id take 62 bytes, and 96 to 107 bytes in a
    /// register of 1,000 to 10,000 entries. A claim ahead's entry leaves with its owner's
    /// start of the instant (its start mark), or is dropped with it by a void. An entry of a holder that died before its mark stays until a live replica
    /// takes the claim over.
    pub fn unstarted(&self, job: &str, instance: &str) -> String {
        if self.cluster {
            self.per_job("unstarted", job)
        } else {
            format!("{}fleet:unstarted:{instance}", self.prefix)
        }
    }

    /// Whether one register holds every job's claims of an instance (one server), rather
    /// than one register per job (a cluster): see [`KeyLayout::unstarted`].
    pub fn unstarted_per_instance(&self) -> bool {
        !self.cluster
    }

    /// The job's key of kind `kind` (`fencing`...): `{prefix}{kind}:{job}` on one
    /// server, `{prefix}{{job}}:{kind}` in a cluster.
    fn per_job(&self, kind: &str, job: &str) -> String {
        let prefix = &self.prefix;
        if self.cluster { format!("{prefix}{{{job}}}:{kind}") } else { format!("{prefix}{kind}:{job}") }
    }

    /// The fleet's membership (a sorted set): `{prefix}fleet:members` in either layout.
    /// A trigger key of a job named `fleet` has a digit after its `:`, and in a cluster
    /// every trigger key has a `{`: no trigger key equals it.
    pub fn members(&self) -> String {
        format!("{}fleet:members", self.prefix)
    }

    /// The details the members published (a hash: instance → JSON):
    /// `{prefix}fleet:details` in either layout, apart from every trigger key as
    /// [`KeyLayout::members`] is.
    pub fn details(&self) -> String {
        format!("{}fleet:details", self.prefix)
    }

    /// The [`Handled`](slotcron::Handled) tally of `owner` at trigger instant `at_ms`
    /// (milliseconds since the Unix epoch), a hash: `{prefix}fleet:handled:{at_ms}:{owner}`
    /// in either layout, apart from every trigger key as [`KeyLayout::members`] is.
    pub fn handled(&self, owner: &str, at_ms: i64) -> String {
        format!("{}fleet:handled:{at_ms}:{owner}", self.prefix)
    }

    /// The start latch of `owner`'s claims ahead of trigger instant `at_ms` (see
    /// [`Coordinator::start_ahead`](slotcron::Coordinator::start_ahead)), a string:
    /// `{prefix}fleet:ahead:{at_ms}:{owner}`, apart from every trigger key as
    /// [`KeyLayout::members`] is (one server only: claims ahead are not taken in a
    /// cluster).
    pub fn ahead(&self, owner: &str, at_ms: i64) -> String {
        format!("{}fleet:ahead:{at_ms}:{owner}", self.prefix)
    }

    /// The job's lease (overlap policies): `{prefix}lease:{job}` on one server,
    /// `{prefix}{{job}}:lease` in a cluster. Like the fencing key, it equals no trigger key.
    pub fn lease(&self, job: &str) -> String {
        self.per_job("lease", job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_server_keys_sit_under_the_prefix_as_they_always_have() {
        let keys = KeyLayout::single("app:slotcron:");
        let trigger = keys.trigger("backup", "backup:2024-05-17T10:00:00Z");
        assert_eq!(trigger, "app:slotcron:backup:2024-05-17T10:00:00Z");
        assert_eq!(keys.trigger("warmup", "warmup"), "app:slotcron:warmup");
        assert_eq!(keys.fencing("backup"), "app:slotcron:fencing:backup");
        assert_eq!(keys.lease("backup"), "app:slotcron:lease:backup");
        assert_eq!(keys.mark("backup"), "app:slotcron:mark:backup");
        assert_eq!(keys.paused("backup"), "app:slotcron:paused:backup");
        assert_eq!(keys.runs("backup"), "app:slotcron:runs:backup");
        assert_eq!(keys.failures("backup"), "app:slotcron:failures:backup");
        assert_eq!(keys.pause_reason("backup"), "app:slotcron:paused_why:backup");
        assert_eq!(keys.paused_index(), "app:slotcron:index:paused");
        assert_eq!(keys.request("backup", "k-1"), "app:slotcron:request:backup:k-1");
        assert_eq!(keys.unstarted("backup", "web-1"), "app:slotcron:fleet:unstarted:web-1");
        assert_eq!(keys.members(), "app:slotcron:fleet:members");
        assert_eq!(
            keys.handled("host-1", 1_700_000_000_000),
            "app:slotcron:fleet:handled:1700000000000:host-1"
        );
    }

    #[test]
    fn cluster_keys_carry_the_job_as_hash_tag() {
        let keys = KeyLayout::cluster("app:slotcron:");
        let trigger = keys.trigger("backup", "backup:2024-05-17T10:00:00Z");
        assert_eq!(trigger, "app:slotcron:{backup}:2024-05-17T10:00:00Z");
        assert_eq!(keys.trigger("warmup", "warmup"), "app:slotcron:{warmup}");
        assert_eq!(keys.fencing("backup"), "app:slotcron:{backup}:fencing");
        assert_eq!(keys.lease("backup"), "app:slotcron:{backup}:lease");
        assert_eq!(keys.mark("backup"), "app:slotcron:{backup}:mark");
        assert_eq!(keys.paused("backup"), "app:slotcron:{backup}:paused");
        assert_eq!(keys.runs("backup"), "app:slotcron:{backup}:runs");
        assert_eq!(keys.failures("backup"), "app:slotcron:{backup}:failures");
        assert_eq!(keys.pause_reason("backup"), "app:slotcron:{backup}:paused_why");
        assert_eq!(keys.request("backup", "k-1"), "app:slotcron:{backup}:request:k-1");
        assert_eq!(keys.unstarted("backup", "web-1"), "app:slotcron:{backup}:unstarted");
        assert_eq!(keys.trigger("backup", "backups"), "app:slotcron:{backup}:backups");
    }
}
