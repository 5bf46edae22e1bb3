//! What a reload takes again from the load before it. A piece of a big TOML file
//! ([`super::chunks`]) whose text is unchanged, in a file whose first piece (the top
//! level: the zone, the defaults, the calendars, and the jobs after them) is unchanged
//! too, holds the same jobs: they are taken from the earlier load, their lines moved to
//! where the piece now starts, instead of being parsed and built again. A reload of a
//! million-job file that changes one job reads one piece of about 64 KiB and the first.
//!
//! What a job is built from is all in the file's text, but for `@reboot`'s instant (the
//! load's time): a job taken again keeps the instant of the load it was built at, which
//! is the one the scheduler keeps for an unchanged job anyway (its fingerprint is equal).

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_128;

use super::super::{Built, JobEntry, Parsed};

/// The pieces of a file as a load that succeeded read them: what a reload of the file
/// needs to take their jobs again. Empty for a file read whole.
#[derive(Debug, Clone, Default)]
pub struct Pieces {
    /// The 128-bit XXH3 hash of the file's first piece: the later pieces' jobs are taken
    /// again only while it is unchanged.
    first: u128,
    /// The later pieces.
    later: Vec<PieceMark>,
}

impl Pieces {
    /// The pieces of a file whose first piece is `first`.
    pub(super) fn new(first: &str, later: Vec<PieceMark>) -> Self {
        Self { first: xxh3_128(first.as_bytes()), later }
    }
}

/// A later piece of a file, as a load that succeeded read it.
#[derive(Debug, Clone)]
pub(super) struct PieceMark {
    /// The 128-bit XXH3 hash of the piece's text.
    key: u128,
    /// The line the piece starts on.
    line: usize,
    /// Where its jobs start among the load's jobs.
    first_job: usize,
    /// The line of each of its jobs' names, in order.
    name_lines: Box<[usize]>,
}

impl PieceMark {
    /// The mark of a piece whose key is `key`, starting on `line`, whose jobs, `parsed`,
    /// are the load's from `first_job` on.
    pub(super) fn new(key: u128, line: usize, first_job: usize, parsed: &Parsed) -> Self {
        let name_lines = parsed.built.iter().map(|built| built.name_line).collect();
        Self { key, line, first_job, name_lines }
    }
}

/// The load a reload follows: its pieces and its jobs, in the file's order.
pub struct Earlier<'a> {
    pub pieces: &'a Pieces,
    pub jobs: &'a [JobEntry],
}

/// The earlier load's later pieces by key, for the later pieces of a file being read:
/// none when the file's first piece changed.
pub(super) struct Reuse<'a> {
    by_key: HashMap<u128, &'a PieceMark, foldhash::fast::RandomState>,
    jobs: &'a [JobEntry],
}

impl<'a> Reuse<'a> {
    /// What the later pieces of a file whose first piece is `first` may take from
    /// `earlier`: nothing unless that load's first piece was the same text. (A piece's key
    /// is the hash of its own text alone: with the two texts hashed together, jobs moved
    /// across the first piece's end could make a new pair of pieces the same bytes as an
    /// old pair.)
    pub(super) fn new(earlier: Option<&Earlier<'a>>, first: &str) -> Self {
        match earlier.filter(|earlier| earlier.pieces.first == xxh3_128(first.as_bytes())) {
            Some(earlier) => Self {
                by_key: earlier.pieces.later.iter().map(|mark| (mark.key, mark)).collect(),
                jobs: earlier.jobs,
            },
            None => Self { by_key: HashMap::default(), jobs: &[] },
        }
    }

    /// The key of a later piece whose text is `piece`.
    pub(super) fn key(piece: &str) -> u128 {
        xxh3_128(piece.as_bytes())
    }

    /// The jobs of the earlier piece whose key is `key`, moved to a piece starting on
    /// `line`; `None` if the earlier load had no such piece.
    pub(super) fn take(&self, key: u128, line: usize) -> Option<Parsed> {
        let mark = self.by_key.get(&key)?;
        let jobs = self.jobs.get(mark.first_job..mark.first_job + mark.name_lines.len())?;
        let moved = |at: usize| at - mark.line + line;
        let mut parsed = Parsed { job_tables: jobs.len(), ..Parsed::default() };
        parsed.names.reserve(jobs.len());
        parsed.built.reserve(jobs.len());
        for (entry, &name_line) in jobs.iter().zip(&mark.name_lines) {
            let name_line = moved(name_line);
            parsed.names.push((entry.job.name().to_owned(), name_line));
            parsed.built.push(Built { name_line, result: Ok(entry.moved(moved)) });
        }
        Some(parsed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::super::{Format, JobsFile, parse_format, validate};
    use super::*;

    /// Loads `source`, after `earlier` if given.
    fn load(source: &str, earlier: Option<&JobsFile>) -> JobsFile {
        let earlier = earlier.map(|file| Earlier { pieces: &file.pieces, jobs: &file.jobs });
        validate(parse_format(source, Format::Toml, earlier.as_ref()), Format::Toml).expect("valid")
    }

    /// A file of `count` jobs after a top level, big enough to be parsed in pieces.
    fn file(count: usize, job: impl Fn(usize) -> String) -> String {
        format!("timezone = \"Asia/Tokyo\"\n\n{}", (0..count).map(job).collect::<String>())
    }

    fn job(i: usize) -> String {
        format!("[[job]]\nname = \"job-{i}\"\nevery = \"1m\"\ncommand = \"echo {i}\"\n\n")
    }

    /// Whether the two entries share their schedule: one was taken from the other.
    fn taken(a: &JobEntry, b: &JobEntry) -> bool {
        Arc::ptr_eq(a.job.schedule(), b.job.schedule())
    }

    /// What a load says of each job: its name, lines and fingerprint.
    fn described(file: &JobsFile) -> Vec<(String, usize, usize, u64)> {
        let jobs = file.jobs.iter();
        jobs.map(|e| (e.job.name().to_owned(), e.line, e.line_of("grace"), e.fingerprint)).collect()
    }

    #[test]
    fn a_reload_takes_the_jobs_of_unchanged_pieces_from_the_load_before_at_their_new_lines() {
        let before = load(&file(5000, job), None);
        assert!(before.pieces.later.len() > 3, "{}", before.pieces.later.len());
        // Job 2500 gains two lines: the jobs after it move down by two.
        let changed = |i: usize| match i {
            2500 => {
                "[[job]]\nname = \"job-2500\"\nevery = \"2m\"\ngrace = \"5s\"\n\ncommand = \"echo x\"\n\n"
                    .to_owned()
            }
            4000 => {
                "[[job]]\nname = \"job-4000\"\nevery = \"1m\"\n\ngrace = \"7s\"\ncommand = \"echo 4000\"\n\n"
                    .to_owned()
            }
            i => job(i),
        };
        let changed = file(5000, changed);
        let fresh = load(&changed, None);
        let reloaded = load(&changed, Some(&before));
        assert_eq!(described(&reloaded), described(&fresh));
        assert_eq!(reloaded.jobs[4000].line_of("grace"), reloaded.jobs[4000].line + 4);
        let pairs = || reloaded.jobs.iter().zip(&before.jobs);
        let kept = pairs().filter(|(now, then)| taken(now, then)).count();
        // Two pieces of some 1,300 jobs each in all are read again, and the first.
        assert!(kept > 5000 - 3 * 1400, "{kept}");
        assert!(!taken(&reloaded.jobs[2500], &before.jobs[2500]));
        assert!(!taken(&reloaded.jobs[4000], &before.jobs[4000]));
        assert!(taken(&reloaded.jobs[4999], &before.jobs[4999]));
        // And a reload after the reload takes all but the first piece's again, at the
        // same lines.
        let again = load(&changed, Some(&reloaded));
        assert_eq!(described(&again), described(&fresh));
        let first = again.pieces.later[0].first_job;
        let mut pairs = again.jobs.iter().zip(&reloaded.jobs);
        assert!(pairs.by_ref().take(first).all(|(now, then)| !taken(now, then)));
        assert!(pairs.all(|(now, then)| taken(now, then)));
    }

    /// Jobs moved across the first piece's end: the new first piece and the piece after
    /// it are, put together, the same text as the old ones. Found by a fresh pair of eyes:
    /// with the two texts hashed together as one key, the reload took the old piece's
    /// jobs for the new piece, dropping the moved job without a word.
    #[test]
    fn jobs_moved_across_the_first_piece_s_end_are_read_again() {
        let source = file(5000, job);
        let before = load(&source, None);
        let pieces = super::super::chunks::split(&source).expect("in pieces");
        let (first, second) = (&source[pieces[0].clone()], &source[pieces[1].clone()]);
        let last_job = first.rfind("[[job]]").expect("the first piece has jobs");
        let (shorter, moved) = first.split_at(last_job);
        let earlier = Earlier { pieces: &before.pieces, jobs: &before.jobs };
        let reuse = Reuse::new(Some(&earlier), shorter);
        assert!(reuse.take(Reuse::key(&format!("{moved}{second}")), 1).is_none());
        assert!(reuse.take(Reuse::key(second), 1).is_none());
        // The same first piece takes the second piece's jobs again.
        let reuse = Reuse::new(Some(&earlier), first);
        assert!(reuse.take(Reuse::key(second), 1).is_some());
    }

    #[test]
    fn a_changed_first_piece_reads_every_piece_again() {
        let before = load(&file(5000, job), None);
        let changed = file(5000, job).replace("Asia/Tokyo", "Europe/Berlin");
        let reloaded = load(&changed, Some(&before));
        assert!(reloaded.jobs.iter().zip(&before.jobs).all(|(now, then)| !taken(now, then)));
        let zone = |file: &JobsFile| format!("{:?}", file.jobs[4999].schedule);
        assert_eq!(zone(&reloaded), zone(&load(&changed, None)));
    }
}
