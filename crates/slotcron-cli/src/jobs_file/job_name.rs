//! Names for crontab jobs, derived from their lines.
//!
//! A crontab line has no name, yet a job's name keys its triggers across the fleet, so
//! the name must be the same on every replica reading the same file and must not change
//! when other lines are added or removed. It is therefore a function of the line alone:
//! a slug of the command (without its standard input) plus a short hash of the zone, the
//! schedule and the whole command text.

/// The longest slug taken from a command.
const MAX_SLUG: usize = 40;

/// The name of a crontab job: `{slug}-{hash}`, where slug is `script` (the command the
/// shell runs, without the standard input after its first unescaped `%`) in lower-case
/// ASCII letters and digits joined by `-` (at most 40 characters, `job` if none) and
/// hash is the CRC-32 (IEEE, as `crc32` and zlib compute it) of
/// `"{zone}\n{schedule}\n{command}"`, as 8 hex digits, `command` being the line's whole
/// command text as written, standard input included.
///
/// `schedule` should have its fields separated by single spaces, so that re-aligning
/// columns keeps the name. E.g. `"UTC"`, `"*/5 * * * *"`, `"backup.sh --full"` give
/// `backup-sh-full-` followed by the hash.
pub fn derive(zone: &str, schedule: &str, command: &str, script: &str) -> String {
    let hash = crc32fast::hash(format!("{zone}\n{schedule}\n{command}").as_bytes());
    format!("{}-{hash:08x}", slug(script))
}

/// The name of the `n`th (from 1) identical line: the first keeps `name`, later ones
/// get `-2`, `-3`... in file order.
pub fn nth(name: &str, n: usize) -> String {
    if n <= 1 { name.to_owned() } else { format!("{name}-{n}") }
}

fn slug(command: &str) -> String {
    let mut slug = String::new();
    for c in command.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= MAX_SLUG {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() { "job".to_owned() } else { slug.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_then_hash() {
        let command = "/usr/local/bin/backup.sh --full";
        let name = derive("UTC", "*/5 * * * *", command, command);
        assert_eq!(
            name,
            format!(
                "usr-local-bin-backup-sh-full-{:08x}",
                crc32fast::hash(b"UTC\n*/5 * * * *\n/usr/local/bin/backup.sh --full")
            )
        );
        assert!(slotcron::validate_job_name(&name).is_ok());
    }

    #[test]
    fn zone_schedule_and_command_each_change_the_name() {
        let base = derive("UTC", "0 * * * *", "true", "true");
        assert_ne!(base, derive("Europe/Berlin", "0 * * * *", "true", "true"));
        assert_ne!(base, derive("UTC", "1 * * * *", "true", "true"));
        assert_ne!(base, derive("UTC", "0 * * * *", "true ", "true "));
    }

    #[test]
    fn the_slug_leaves_out_the_standard_input_which_the_hash_covers() {
        let command = "mail -s report root%Disk full%Please look";
        let name = derive("UTC", "@daily", command, "mail -s report root");
        let hash = crc32fast::hash(format!("UTC\n@daily\n{command}").as_bytes());
        assert_eq!(name, format!("mail-s-report-root-{hash:08x}"));
        let other_input = derive("UTC", "@daily", "mail -s report root%Other", "mail -s report root");
        assert_ne!(name, other_input);
    }

    #[test]
    fn slug_is_bounded_and_never_empty() {
        assert_eq!(slug("!!! ???"), "job");
        assert!(slug(&"x ".repeat(100)).len() <= MAX_SLUG);
        assert_eq!(slug("echo \"Hello, World\" >&2"), "echo-hello-world-2");
    }

    #[test]
    fn identical_lines_get_a_counter() {
        assert_eq!(nth("a-1", 1), "a-1");
        assert_eq!(nth("a-1", 3), "a-1-3");
    }
}
