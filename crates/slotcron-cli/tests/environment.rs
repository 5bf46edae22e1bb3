//! What a command starts with: a TOML job's `env` and `working_dir`, a crontab's
//! `SHELL=` and `MAILTO=`.
//!
//! Each wait is bounded by `support::PATIENCE`.

mod support;

use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use nix::unistd::Uid;
use support::{Daemon, run_as_reader, run_in, scratch, slotcron, stderr, stdout, write};

#[test]
fn toml_env_and_working_dir_reach_the_command_the_jobs_own_winning() {
    let dir = scratch("toml_env");
    let work = dir.join("work");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let file = format!(
        r#"env = {{ A = "file", B = "file b" }}
working_dir = "{work}"

[[job]]
name = "inherits"
after = "0s"
command = "echo \"$A|$B\" > out"

[[job]]
name = "overrides"
after = "0s"
env = {{ B = "job b", C = "c" }}
working_dir = "{elsewhere}"
command = "echo \"$A|$B|$C|$SLOTCRON_JOB\" > out"
"#,
        work = work.display(),
        elsewhere = elsewhere.display()
    );
    write(&dir, "jobs.toml", &file);
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "memory"]);
    for _ in 0..2 {
        daemon.wait_for("each run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["outcome=\"succeeded\""]).len(), 2, "{}", daemon.log());
    assert_eq!(std::fs::read_to_string(work.join("out")).unwrap(), "file|file b\n");
    assert_eq!(std::fs::read_to_string(elsewhere.join("out")).unwrap(), "file|job b|c|overrides\n");
}

#[test]
fn a_missing_working_dir_fails_the_run_naming_the_directory() {
    let dir = scratch("missing_working_dir");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"lost\"\nafter = \"0s\"\nworking_dir = \"/nonexistent/dir\"\ncommand = \"true\"\n",
    );
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "memory"]);
    let finished = daemon.wait_for("the run to finish", |line| line.contains("run finished"));
    assert!(finished.contains("outcome=\"failed\""), "{finished}");
    assert!(
        finished.contains("cannot start /bin/sh in the working directory /nonexistent/dir"),
        "{finished}"
    );
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0));
}

#[test]
fn bad_env_and_working_dir_values_are_load_time_problems_naming_line_job_and_key() {
    let dir = scratch("bad_env");
    write(
        &dir,
        "jobs.toml",
        r#"env = "PATH=/bin"
working_dir = "relative/dir"

[[job]]
name = "bad"
every = "1m"
command = "true"
env = { "" = "x", "A=B" = "x", SLOTCRON_JOB = "x", N = 3, OK = "fine" }
working_dir = 7
"#,
    );
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    for expected in [
        "jobs.toml:1: env: expected a table of strings like { PATH = \"/usr/bin:/bin\" }, found string \"PATH=/bin\"",
        "jobs.toml:2: working_dir: must be an absolute path (starting with /)",
        "jobs.toml:8: job \"bad\": env.: an environment variable name must not be empty",
        "jobs.toml:8: job \"bad\": env.A=B: an environment variable name must not contain = or a NUL byte",
        "jobs.toml:8: job \"bad\": env.SLOTCRON_JOB: SLOTCRON_* variables are set by the daemon for each run",
        "jobs.toml:8: job \"bad\": env.N: expected a string, found integer 3",
        "jobs.toml:9: job \"bad\": working_dir: expected an absolute directory path string like \"/srv/app\", found integer 7",
        "7 problems in jobs.toml",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

/// A script at `dir/name` (mode 755).
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = write(dir, name, text);
    std::fs::set_permissions(&path, Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_crontab_shell_line_runs_the_later_commands_with_that_shell() {
    let dir = scratch("crontab_shell");
    let shell = script(
        &dir,
        "fake-shell",
        "#!/bin/sh\necho \"$*\" >> \"$(dirname \"$0\")/shell.log\"\nexec /bin/sh \"$@\"\n",
    );
    write(
        &dir,
        "crontab",
        &format!(
            "# name: before\n@reboot true\nSHELL={}\n# name: after\n@reboot echo \"SHELL=$SHELL\"\n",
            shell.display()
        ),
    );
    let mut daemon = Daemon::run(&dir, &["crontab", "--state", "memory"]);
    for _ in 0..2 {
        daemon.wait_for("each run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    // Only the line after SHELL= ran under it, with SHELL in its environment too.
    let log = std::fs::read_to_string(dir.join("shell.log")).unwrap();
    assert_eq!(log, "-c echo \"SHELL=$SHELL\"\n");
    let said = daemon.lines_with(&[r#"job="after""#, &format!("SHELL={}", shell.display())]);
    assert_eq!(said.len(), 1, "{}", daemon.log());
}

#[test]
fn mailto_mails_each_run_s_output_through_sendmail_and_an_empty_mailto_none() {
    let dir = scratch("crontab_mailto");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    script(
        &bin,
        "sendmail",
        "#!/bin/sh\n{ echo \"ARGS: $*\"; cat; echo END; } >> \"$(dirname \"$0\")/../mail\"\n",
    );
    write(
        &dir,
        "crontab",
        "MAILTO=ops@example.com\n# name: talk\n@reboot echo hello; echo oops >&2\n\
         # name: quiet\n@reboot true\nMAILTO=\"\"\n# name: silent\n@reboot echo not mailed\n",
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut command = slotcron();
    command.args(["run", "crontab", "--state", "memory"]).env("PATH", &path);
    let mut daemon = Daemon::spawn(command, &dir);
    for _ in 0..3 {
        daemon.wait_for("each run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert!(daemon.lines_with(&["no sendmail"]).is_empty(), "{}", daemon.log());
    let mail = std::fs::read_to_string(dir.join("mail")).unwrap();
    // One mail: the run with output; none for the quiet run nor after MAILTO="".
    assert_eq!(mail.matches("ARGS: -t\n").count(), 1, "{mail}");
    for expected in
        ["To: ops@example.com\n", "Subject: Cron <talk> echo hello; echo oops >&2\n", "\n\nhello\n", "oops\n"]
    {
        assert!(mail.contains(expected), "missing {expected:?} in:\n{mail}");
    }
    assert!(!mail.contains("not mailed"), "{mail}");
}

#[test]
fn mailto_without_a_sendmail_on_path_is_warned_of_once_at_load() {
    let dir = scratch("crontab_no_sendmail");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    write(&dir, "crontab", "MAILTO=ops@example.com\n@reboot echo a\n@reboot echo b\n");
    let out = slotcron().args(["check", "crontab"]).current_dir(&dir).env("PATH", &empty).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warning = "crontab:2: warning: MAILTO is set, but no sendmail is on PATH";
    assert_eq!(stderr(&out).matches(warning).count(), 1, "{}", stderr(&out));

    let mut command = slotcron();
    command
        .args(["run", "crontab", "--state", "memory"])
        .env("PATH", format!("{}:/bin:/usr/bin", empty.display()));
    let mut daemon = Daemon::spawn(command, &dir);
    daemon.wait_for("the warning", |line| line.contains("MAILTO is set, but no sendmail is on PATH"));
    for _ in 0..2 {
        daemon.wait_for("each run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["no sendmail"]).len(), 1, "{}", daemon.log());
}

#[test]
fn a_system_crontab_line_runs_as_its_user_and_a_missing_user_field_is_a_problem() {
    let dir = scratch("system_crontab");
    std::fs::set_permissions(&dir, Permissions::from_mode(0o777)).unwrap();
    write(&dir, "missing", "@reboot  root\n");
    let out = run_in(&dir, &["check", "--system-crontab", "missing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("missing:1: user: missing: a system crontab line is 5 time fields"),
        "{}",
        stderr(&out)
    );
    if !Uid::effective().is_root() {
        eprintln!("not root: running commands as another user is not tested");
        return;
    }
    write(
        &dir,
        "system",
        &format!(
            "# name: as-nobody\n@reboot nobody id -u > {0}/nobody; echo \"$HOME $LOGNAME $USER\" >> {0}/nobody\n\
             # name: as-root\n@reboot root id -u > {0}/root; echo \"$HOME $LOGNAME $USER\" >> {0}/root\n",
            dir.display()
        ),
    );
    let check = run_in(&dir, &["check", "--system-crontab", "system"]);
    assert!(stdout(&check).contains("2 job(s) in a system crontab, all valid"), "{}", stdout(&check));
    // The daemon's own HOME, LOGNAME and USER do not leak into a line for its own user.
    let mut command = support::slotcron();
    command.args(["run", "system", "--system-crontab", "--state", "memory"]);
    command.envs([("HOME", "/tmp"), ("LOGNAME", "bogus"), ("USER", "bogus")]);
    let mut daemon = Daemon::spawn(command, &dir);
    for _ in 0..2 {
        daemon.wait_for("each run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["outcome=\"succeeded\""]).len(), 2, "{}", daemon.log());
    let nobody = nix::unistd::User::from_name("nobody").unwrap().expect("a nobody user");
    let expected = format!("{}\n{} nobody nobody\n", nobody.uid, nobody.dir.display());
    assert_eq!(std::fs::read_to_string(dir.join("nobody")).unwrap(), expected);
    let root = nix::unistd::User::from_name("root").unwrap().expect("a root user");
    assert_eq!(
        std::fs::read_to_string(dir.join("root")).unwrap(),
        format!("0\n{} root root\n", root.dir.display())
    );
}

#[test]
fn a_daemon_not_running_as_root_refuses_lines_for_another_user() {
    let dir = scratch("system_crontab_not_root");
    write(&dir, "crontab", "# name: backup\n0 3 * * * root /usr/local/bin/backup\n");
    // As root, `run_as_reader` runs it as nobody.
    let out = run_as_reader(&dir, &["check", "--system-crontab", "crontab"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let me = if Uid::effective().is_root() { "\"nobody\"".to_owned() } else { "\"".to_owned() };
    let text = stderr(&out);
    assert!(
        text.contains("crontab:2: job \"backup\": user: runs as \"root\", but slotcron runs as ")
            && text.contains(&me)
            && text.contains("only a daemon running as root can run commands as another user"),
        "{text}"
    );
}
