//! A crontab's lines without `CRON_TZ=` or `TZ=` run in the daemon's own zone, as in
//! cronie and supercronic: its `TZ` variable, else `/etc/localtime`. `slotcron check`
//! says which zone and why; a zone the file sets still wins; every member of a fleet must
//! resolve the same zone, or it is refused at join.

mod support;

use nix::sys::signal::Signal;
use slotcron::jiff::{Timestamp, ToSpan};
use support::redis_server::RedisServer;
use support::{Daemon, libfaketime, scratch, slotcron, stderr, stdout, wait_until, write};

/// `slotcron check FILE` in `dir` with `TZ` set to `tz`.
fn check_in(dir: &std::path::Path, tz: &str) -> std::process::Output {
    slotcron().args(["check", "crontab"]).env("TZ", tz).current_dir(dir).output().unwrap()
}

#[test]
fn check_shows_the_daemons_zone_for_lines_without_one_and_a_cron_tz_line_still_wins() {
    let dir = scratch("crontab-zone-check");
    write(&dir, "crontab", "0 9 * * * echo tokyo\nCRON_TZ=Europe/Paris\n0 9 * * * echo paris\n");
    let tokyo = check_in(&dir, "Asia/Tokyo");
    assert_eq!(tokyo.status.code(), Some(0), "{}", stderr(&tokyo));
    let out = stdout(&tokyo);
    assert!(
        out.contains("crontab lines without CRON_TZ= or TZ= run in Asia/Tokyo (the daemon's zone, from the TZ environment variable"),
        "{out}"
    );
    // 09:00 in Tokyo is 00:00 UTC; in Paris, 08:00 or 07:00 UTC.
    let next: Vec<Timestamp> = out
        .lines()
        .filter_map(|line| line.split_whitespace().find_map(|word| word.parse::<Timestamp>().ok()))
        .collect();
    assert_eq!(next.len(), 2, "{out}");
    assert_eq!(
        next[0].to_zoned_datetime(slotcron::jiff::tz::TimeZone::get("Asia/Tokyo").unwrap()).hour(),
        9,
        "{out}"
    );
    assert_eq!(
        next[1].to_zoned_datetime(slotcron::jiff::tz::TimeZone::get("Europe/Paris").unwrap()).hour(),
        9,
        "{out}"
    );

    let utc = stdout(&check_in(&dir, "UTC"));
    assert!(utc.contains("run in UTC (the daemon's zone, from the TZ environment variable"), "{utc}");
    let names = |out: &str| {
        out.lines()
            .filter(|l| l.contains("echo"))
            .map(|l| l.split_whitespace().nth(1).unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&out), names(&utc), "job names do not depend on the zone");

    let bad = check_in(&dir, "Mars/Olympus");
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("Mars/Olympus") && stderr(&bad).contains("set CRON_TZ="),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn a_daemon_with_tz_asia_tokyo_fires_a_nine_oclock_line_at_nine_in_tokyo() {
    let dir = scratch("crontab-zone-fires");
    write(&dir, "crontab", "0 9 * * * echo \"$SLOTCRON_TRIGGER\" >> fired.txt\n");
    // The daemon's clock (libfaketime) 3 s before the next 09:00 in Tokyo.
    let tokyo = slotcron::jiff::tz::TimeZone::get("Asia/Tokyo").unwrap();
    let now = Timestamp::now().to_zoned_datetime(tokyo.clone());
    let mut nine = now.with().hour(9).minute(0).second(0).subsec_nanosecond(0).build().unwrap();
    if nine <= now {
        nine = nine.checked_add(1.day()).unwrap();
    }
    let offset = nine.timestamp().as_second() - Timestamp::now().as_second() - 3;
    let mut command = slotcron();
    command.args(["run", "crontab", "--state", "sqlite:state.db"]).env("TZ", "Asia/Tokyo");
    command.env("LD_PRELOAD", libfaketime()).env("FAKETIME", format!("+{offset}s"));
    let mut daemon = Daemon::spawn(command, &dir);
    daemon.wait_for("the zone at start", |line| {
        line.contains("run in the daemon's zone") && line.contains("Asia/Tokyo")
    });
    let fired = dir.join("fired.txt");
    wait_until("the 09:00 run", || fired.exists());
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let trigger: Timestamp = std::fs::read_to_string(&fired).unwrap().trim().parse().unwrap();
    assert_eq!(trigger, nine.timestamp(), "09:00 in Tokyo");
}

#[test]
fn a_member_whose_crontab_zone_differs_from_the_fleets_is_refused_at_join_naming_both_and_one_by_another_name_joins()
 {
    let dir = scratch("crontab-zone-fleet");
    let redis = RedisServer::start(&dir);
    write(&dir, "crontab", "@hourly true\n");
    let member = |name: &str, tz: &str| {
        let mut command = slotcron();
        let state = format!("sqlite:{name}.db");
        command.args(["run", "crontab", "--redis", &redis.url(), "--instance", name, "--state", &state]);
        command.env("TZ", tz);
        command
    };
    let mut tokyo = Daemon::spawn(member("a", "Asia/Tokyo"), &dir);
    tokyo.wait_for("the scheduler to start", |line| line.contains("scheduler started"));
    wait_until("a's heartbeat", || {
        let mut connection = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
        redis::cmd("HLEN").arg("slotcron:fleet:details").query::<i64>(&mut connection).unwrap_or(0) == 1
    });

    let mut refused = Daemon::spawn(member("b", "Europe/Paris"), &dir);
    assert_eq!(refused.wait_exit().code(), Some(2), "{}", refused.log());
    let reason = refused.log();
    assert!(reason.contains("refused to join the fleet"), "{reason}");
    assert!(
        reason.contains(r#"crontab_zone is "Europe/Paris" here but "Asia/Tokyo" on live member "a""#),
        "{reason}"
    );

    // The same zone by another name (a POSIX rule): the same instants, so it joins.
    let mut same = Daemon::spawn(member("c", "JST-9"), &dir);
    same.wait_for("the scheduler to start", |line| line.contains("scheduler started"));
    for daemon in [&mut tokyo, &mut same] {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
}
