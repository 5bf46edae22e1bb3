//! Placement from the command line: a job's `on` in the jobs file, the daemon's
//! `--label`, what `slotcron check` shows of them, and every refusal naming the file,
//! line, job and field or the flag, and the reason. A fleet of daemons with different
//! labels is the test kit's placement suite, on each backend.

mod support;

use support::{run_in, scratch, stderr, stdout, write};

/// A `[[job]]` table of a job every minute, then `extra` (a key, or nothing), 5 lines.
fn job(name: &str, extra: &str) -> String {
    format!("[[job]]\nname = \"{name}\"\nevery = \"1m\"\ncommand = \"true\"\n{extra}\n")
}

/// `render`, placed on `region=eu` and `gpu`, and `plain`, placed nowhere.
fn placed() -> String {
    [job("render", r#"on = ["region=eu", "gpu"]"#), job("plain", "")].join("\n")
}

/// `check`, given the daemon's labels (without a coordinator, as `run` does, it refuses a
/// job placed on labels the daemon lacks).
#[test]
fn check_shows_a_jobs_placement() {
    let dir = scratch("placement_check");
    write(&dir, "jobs.toml", &placed());
    let out = run_in(&dir, &["check", "jobs.toml", "--label", "region=eu", "--label", "gpu"]);
    let listing = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        listing.contains(
            "render: runs only on daemons carrying the labels region=eu, gpu (on, --label); recorded \
             skipped-no-member when no live daemon carries them"
        ),
        "{listing}"
    );
    assert!(!listing.contains("plain: "), "an unplaced job shows no placement: {listing}");
}

#[test]
fn labels_that_are_not_labels_in_on_are_refused_naming_the_line_job_and_field() {
    let dir = scratch("placement_bad_on");
    let jobs = [
        job("spaced", r#"on = ["region = eu"]"#),
        job("twice", r#"on = ["region=eu", "region=us"]"#),
        job("text", r#"on = "gpu""#),
        job("empty", r#"on = ["region="]"#),
    ];
    write(&dir, "jobs.toml", &jobs.join("\n"));
    let out = run_in(&dir, &["check", "jobs.toml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for expected in [
        "jobs.toml:5: job \"spaced\": on: label \"region = eu\": white space is not allowed (write key or key=value)",
        "jobs.toml:11: job \"twice\": on: label key \"region\" is given twice (region=eu and region=us); a key has one value",
        "jobs.toml:17: job \"text\": on: expected a list of labels like [\"region=eu\", \"gpu\"], found string \"gpu\"",
        "jobs.toml:23: job \"empty\": on: label \"region=\": the value after '=' is empty (write region for the key alone)",
    ] {
        assert!(err.contains(expected), "{expected}\nnot in\n{err}");
    }
}

#[test]
fn a_label_flag_that_is_not_a_label_is_refused_naming_the_flag() {
    let dir = scratch("placement_bad_flag");
    write(&dir, "jobs.toml", &placed());
    for (labels, reason) in [
        (&["region = eu"][..], "label \"region = eu\": white space is not allowed"),
        (&[""][..], "a label must not be empty"),
        (&["a=b=c"][..], "label \"a=b=c\": more than one '='"),
    ] {
        let mut args = vec!["run", "jobs.toml", "--state", "memory"];
        args.extend(labels.iter().flat_map(|label| ["--label", label]));
        let out = run_in(&dir, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("invalid value") && err.contains("--label") && err.contains(reason), "{err}");
    }
    let args = ["run", "jobs.toml", "--state", "memory", "--label", "region=eu", "--label", "region=us"];
    let out = run_in(&dir, &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--label: label key \"region\" is given twice (region=eu and region=us); a key has one value"
        ),
        "{err}"
    );
}

#[test]
fn a_daemon_without_a_coordinator_refuses_a_job_placed_on_labels_it_lacks() {
    let dir = scratch("placement_alone");
    write(&dir, "jobs.toml", &[placed(), job("lights", r#"on = ["gpu"]"#)].join("\n"));
    let out = run_in(&dir, &["run", "jobs.toml", "--state", "memory", "--label", "region=eu"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "slotcron run: jobs.toml:5: job \"render\": on: placed on region=eu, gpu, but this scheduler runs \
             without a coordinator and does not carry gpu (its labels: region=eu); no other member could run \
             the job (give this daemon --label, or a coordinator)"
        ),
        "{err}"
    );
    assert!(err.contains("job \"lights\": on: placed on gpu"), "every refused job is named: {err}");
    // `check` with the same labels refuses the same jobs, and passes them with a coordinator.
    let out = run_in(&dir, &["check", "jobs.toml", "--label", "region=eu"]);
    let check = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{check}");
    assert!(check.contains("jobs.toml:5: job \"render\": on: placed on region=eu, gpu, but"), "{check}");
    assert!(
        check.contains("job \"lights\": on: placed on gpu") && check.contains("2 problems in"),
        "{check}"
    );
    let out = run_in(&dir, &["check", "jobs.toml", "--redis", "redis://127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
