//! `slotcron run`: the daemon running real shell commands, stopped by signals.
//!
//! The tests wait for log lines (each wait bounded by `support::PATIENCE`) and never
//! assert how long anything took.

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use slotcron::jiff::Timestamp;
use support::{
    Daemon, KillOnDrop, PATIENCE, has_ended, scratch, slotcron, wait_exit, wait_until, wait_until_ended,
    write,
};

#[test]
fn sigterm_lets_the_running_command_finish_and_exits_0() {
    let dir = scratch("drain");
    write(
        &dir,
        "crontab",
        "\
* * * * * echo every minute
# name: sleeper
@every 2s echo started; sleep 3; echo \"$SLOTCRON_TRIGGER\" >> marker; echo finished
",
    );
    let mut daemon = Daemon::start(&dir, "crontab");
    daemon.wait_for("for the start of a sleeper run", |line| {
        line.contains("command started") && line.contains(r#"job="sleeper""#)
    });
    daemon.signal(Signal::SIGTERM);
    let status = daemon.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", daemon.log());

    let started = daemon.lines_with(&["command started", r#"job="sleeper""#]).len();
    let succeeded = daemon.lines_with(&["run finished", r#"job="sleeper""#, r#"outcome="succeeded""#]).len();
    assert!(started >= 1);
    assert_eq!(succeeded, started, "every started run finished:\n{}", daemon.log());
    let finished_output =
        daemon.lines_with(&["stdout: finished", r#"job="sleeper""#, r#"stream="stdout""#]).len();
    assert_eq!(finished_output, started, "the command's output is logged with its job name");
    let marker = std::fs::read_to_string(dir.join("marker")).expect("the marker was written");
    assert_eq!(marker.lines().count(), started);
    assert!(daemon.log().contains("signal=\"SIGTERM\""), "{}", daemon.log());
}

#[test]
fn sigint_stops_the_daemon_too() {
    let dir = scratch("sigint");
    write(&dir, "crontab", "# name: hello\n@reboot echo hello\n");
    let mut daemon = Daemon::start(&dir, "crontab");
    daemon.wait_for("for the run to finish", |line| line.contains("run finished") && line.contains("hello"));
    daemon.signal(Signal::SIGINT);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn commands_get_the_crontab_environment_and_the_slotcron_variables() {
    let dir = scratch("environment");
    write(
        &dir,
        "crontab",
        "\
GREETING = \"hello from cron\"
# name: greet
@reboot echo \"$GREETING|$SLOTCRON_JOB|$SLOTCRON_TRIGGER|$SLOTCRON_INSTANCE|$SLOTCRON_FENCING_TOKEN\"
GREETING=changed later
# name: fail
@reboot echo first; echo last words >&2; exit 3
# name: feed
@reboot tr a-z A-Z%first line%second line
# name: percent
@reboot tr '\\n' '|'; echo \" 5\\%\"%100\\% sure%ok%
",
    );
    let mut daemon = Daemon::start(&dir, "crontab");
    for _ in ["greet", "fail", "feed", "percent"] {
        daemon.wait_for("for each job's run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());

    let output = daemon.lines_with(&[r#"job="greet""#, r#"stream="stdout""#]);
    assert_eq!(output.len(), 1, "{}", daemon.log());
    let text = message(output[0]);
    let text = text.split(" job=").next().unwrap();
    let fields: Vec<&str> = text.split('|').collect();
    assert_eq!(fields[..2], ["hello from cron", "greet"]);
    assert!(fields[2].ends_with('Z'), "RFC 3339 UTC: {}", fields[2]);
    fields[2].parse::<Timestamp>().expect("SLOTCRON_TRIGGER is RFC 3339");
    assert!(fields[3].ends_with(&format!("-{}", daemon.pid())), "hostname-pid: {}", fields[3]);
    assert_eq!(fields[4], "1", "the job's first won claim");

    let failed = daemon.lines_with(&["run finished", r#"job="fail""#]);
    assert_eq!(failed.len(), 1);
    assert!(failed[0].contains(r#"outcome="failed""#), "{}", failed[0]);
    assert!(
        failed[0].contains("command failed: exit status: 3; last stderr line: last words"),
        "{}",
        failed[0]
    );
    assert_eq!(daemon.lines_with(&["FIRST LINE", r#"job="feed""#]).len(), 1, "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["SECOND LINE", r#"job="feed""#]).len(), 1, "{}", daemon.log());
    // `\%` is `%` in the command and in its input, `\n` stays for `tr`, and the input
    // ends with one newline: cronie's `%` rules.
    let percent = daemon.lines_with(&[r#"job="percent""#, r#"stream="stdout""#]);
    assert_eq!(percent.len(), 1, "{}", daemon.log());
    assert!(percent[0].contains("100% sure|ok| 5%"), "{}", percent[0]);
}

#[test]
fn reboot_runs_at_every_start_with_the_same_state() {
    let dir = scratch("reboot");
    write(&dir, "crontab", "# name: boot\n@reboot echo booted\n");
    for start in 1..=2 {
        let mut daemon = Daemon::start(&dir, "crontab");
        daemon.wait_for("the @reboot run", |line| {
            line.contains("run finished") && line.contains(r#"job="boot""#)
        });
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
        let runs = daemon.lines_with(&["run finished", r#"job="boot""#, r#"outcome="succeeded""#]);
        assert_eq!(runs.len(), 1, "start {start}: {}", daemon.log());
    }
    assert!(dir.join("slotcron.db").exists(), "both starts used the default state file");
}

#[test]
fn a_command_past_its_timeout_is_terminated_and_recorded_as_timed_out() {
    let dir = scratch("timeout");
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "slow"
after = "0s"
timeout = "1s"
command = "echo $$ > pid; exec sleep 30"
"#,
    );
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    let finished = daemon.wait_for("for the run to finish", |line| {
        line.contains("run finished") && line.contains(r#"job="slow""#)
    });
    assert!(finished.contains(r#"outcome="timed-out""#), "{finished}");
    assert!(finished.contains("timed out after 1s"), "{finished}");
    // Said as it happens, in the operator's words, without module paths.
    let said =
        daemon.lines_with(&["WARN", "timed out after 1s: sending SIGTERM to the command", r#"job="slow""#]);
    assert_eq!(said.len(), 1, "{}", daemon.log());
    assert!(daemon.lines_with(&["the daemon is stopping"]).is_empty(), "{}", daemon.log());
    assert!(daemon.lines_with(&["slotcron::"]).is_empty(), "{}", daemon.log());
    let pid: u32 = std::fs::read_to_string(dir.join("pid")).unwrap().trim().parse().unwrap();
    assert!(has_ended(pid), "SIGTERM ended `sleep 30`, and the run waited for it");
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let dir = scratch("sigkill");
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "stubborn"
after = "0s"
timeout = "1s"
command = "trap '' TERM; echo $$ > shell.pid; sleep 600 & echo $! > sleep.pid; wait"
"#,
    );
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    let finished = daemon.wait_for("for the run to finish", |line| {
        line.contains("run finished") && line.contains(r#"job="stubborn""#)
    });
    assert!(finished.contains(r#"outcome="timed-out""#), "{finished}");
    let trigger = finished.split(" trigger=").nth(1).unwrap().split(' ').next().unwrap();
    let killed = daemon.lines_with(&["WARN", "SIGKILL", r#"job="stubborn""#, &format!("trigger={trigger}")]);
    assert_eq!(killed.len(), 1, "one warning names the job and the trigger:\n{}", daemon.log());
    // SIGKILL went to the whole process group: the shell and its background job.
    wait_until_ended(&dir.join("shell.pid"));
    wait_until_ended(&dir.join("sleep.pid"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn a_closed_log_pipe_neither_fails_runs_nor_blocks_shutdown() {
    let dir = scratch("closed_log");
    write(&dir, "crontab", "# name: tick\n@every 1s sleep 0.2; echo done >> marker\n");
    let mut daemon = KillOnDrop(
        slotcron()
            .args(["run", "crontab"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut log = BufReader::new(daemon.0.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("scheduler started") {
        line.clear();
        assert!(log.read_line(&mut line).unwrap() > 0, "the daemon ended before starting");
    }
    drop(log); // as in `slotcron run crontab 2>&1 | head`
    let deadline = Instant::now() + PATIENCE;
    let finished_runs = || std::fs::read_to_string(dir.join("marker")).map_or(0, |m| m.lines().count());
    while finished_runs() < 2 {
        assert!(Instant::now() < deadline, "no runs finished after the log pipe closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(Pid::from_raw(daemon.0.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(wait_exit(&mut daemon.0).code(), Some(0));
}

/// The text of a command's output line after its `stdout: ` or `stderr: ` mark, fields
/// included.
fn message(line: &str) -> &str {
    line.split_once(" stdout: ")
        .or_else(|| line.split_once(" stderr: "))
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("not a command's output: {line}"))
}

#[test]
fn a_run_ends_when_its_shell_exits_even_if_a_background_process_holds_its_output() {
    let dir = scratch("background");
    write(&dir, "crontab", "# name: bg\n@reboot echo before; sleep 600 & echo $! > sleep.pid; echo after\n");
    let mut daemon = Daemon::start(&dir, "crontab");
    let finished = daemon.wait_for("for the run to finish", |line| {
        line.contains("run finished") && line.contains(r#"job="bg""#)
    });
    let sleep: u32 = std::fs::read_to_string(dir.join("sleep.pid")).unwrap().trim().parse().unwrap();
    let sleeping = !has_ended(sleep);
    // Left running by the run, as cron leaves it: the test ends it.
    kill(Pid::from_raw(sleep as i32), Signal::SIGKILL).unwrap();
    assert!(sleeping, "the run was recorded while `sleep 600` still held the output pipes");
    assert!(finished.contains(r#"outcome="succeeded""#), "{finished}");
    for line in ["before", "after"] {
        let logged = daemon.lines_with(&[r#"job="bg""#, r#"stream="stdout""#]);
        assert!(logged.iter().any(|l| message(l).starts_with(&format!("{line} job="))), "{}", daemon.log());
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn a_second_signal_kills_the_running_commands_and_the_daemon_exits() {
    let dir = scratch("second_signal");
    write(&dir, "crontab", "# name: long\n@reboot echo $$ > shell.pid; sleep 600\n");
    let mut daemon = Daemon::start(&dir, "crontab");
    daemon.wait_for("for the command to start", |line| line.contains("command started"));
    wait_until("the shell wrote its pid", || dir.join("shell.pid").exists());
    daemon.signal(Signal::SIGTERM);
    daemon.wait_for("for the shutdown to start", |line| line.contains("stopping: no new runs"));
    daemon.signal(Signal::SIGINT);
    // The shutdown timeout (30 s) would end `sleep 600` with SIGTERM: SIGKILL is the hurry.
    let finished = daemon.wait_for("for the run to finish", |line| {
        line.contains("run finished") && line.contains(r#"job="long""#)
    });
    // Stopped by the shutdown: aborted, as the README's outcomes say, with how it ended.
    assert!(finished.contains(r#"outcome="aborted""#), "{finished}");
    assert!(finished.contains("signal: 9 (SIGKILL)"), "{finished}");
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let hurried = daemon.lines_with(&["WARN", "stopping now", r#"signal="SIGINT""#, "commands=1"]);
    assert_eq!(hurried.len(), 1, "{}", daemon.log());
    wait_until_ended(&dir.join("shell.pid"));
}

#[test]
fn output_is_logged_with_control_characters_escaped_and_long_lines_in_parts() {
    let dir = scratch("output");
    write(
        &dir,
        "crontab",
        r"# name: out
@reboot printf 'red \033[31mX\033[0m\rINFO forged\tok\r\n'; head -c 40000 /dev/zero | tr '\000' x; echo; printf a; yes é | head -n 10000 | tr -d '\n'; echo; echo end
",
    );
    let mut daemon = Daemon::start(&dir, "crontab");
    daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());

    let output: Vec<&str> =
        daemon.lines_with(&[r#"job="out""#, r#"stream="stdout""#]).into_iter().map(message).collect();
    let fields = r#" job="out" stream="stdout""#;
    assert_eq!(output[0], format!(r"red \x1b[31mX\x1b[0m\x0dINFO forged{}ok{fields}", '\t'));
    // Each part of a split line: (its text, its number).
    let parts = |lines: &[&str]| -> (String, Vec<String>) {
        let split = lines.iter().map(|line| line.split_once(fields).unwrap());
        (split.clone().map(|(text, _)| text).collect(), split.map(|(_, part)| part.to_owned()).collect())
    };
    // 40,000 bytes: 16 KiB, 16 KiB and the rest, numbered.
    let (text, numbers) = parts(&output[1..4]);
    assert_eq!(text, "x".repeat(40_000));
    assert_eq!(numbers, [" part=1", " part=2", " part=3"]);
    assert_eq!(output[1].find(' '), Some(16 * 1024));
    // A part never ends inside a character.
    let (text, numbers) = parts(&output[4..6]);
    assert_eq!(text, format!("a{}", "é".repeat(10_000)));
    assert_eq!(numbers, [" part=1", " part=2"]);
    assert_eq!(output[6], format!("end{fields}"));
    assert_eq!(output.len(), 7, "{output:?}");
}

#[test]
fn a_job_with_an_end_runs_its_triggers_before_the_end_and_none_after() {
    let dir = support::scratch("window-end");
    // The end a few whole seconds ahead: some triggers before it, none at or after it.
    let end = Timestamp::from_second(Timestamp::now().as_second() + 4).unwrap();
    let jobs = format!(
        "[[job]]\nname = \"tick\"\nevery = \"1s\"\nend = \"{end}\"\ngrace = \"30s\"\ncommand = 'echo \"$SLOTCRON_TRIGGER\" >> runs.txt'\n"
    );
    support::write(&dir, "jobs.toml", &jobs);
    let mut daemon = support::Daemon::run(&dir, &["jobs.toml", "--state", "sqlite:state.db"]);
    daemon.wait_for("the scheduler to start", |line| line.contains("scheduler started"));
    support::wait_until("the clock past the end and a second more", || {
        Timestamp::now() > end + Duration::from_secs(2)
    });
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let text = std::fs::read_to_string(dir.join("runs.txt")).unwrap_or_default();
    let triggers: Vec<Timestamp> = text.lines().map(|line| line.parse().unwrap()).collect();
    assert!(!triggers.is_empty(), "some triggers before the end:\n{}", daemon.log());
    assert!(triggers.iter().all(|t| *t < end), "{triggers:?} against end {end}");
}
