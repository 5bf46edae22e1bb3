//! `slotcron --help` and each subcommand's: short lines, examples at the end, a word on
//! RUST_LOG.

mod support;

use support::{run, stderr, stdout};

/// The longest help line: clap wraps at this width (`max_term_width`).
const WIDTH: usize = 100;

#[test]
fn every_help_has_short_lines_and_ends_with_examples() {
    for command in [
        &[][..],
        &["run"],
        &["next"],
        &["prev"],
        &["check"],
        &["history"],
        &["logs"],
        &["status"],
        &["pause"],
        &["resume"],
        &["trigger"],
        &["backfill"],
    ] {
        for flag in ["-h", "--help"] {
            let args: Vec<&str> = command.iter().copied().chain([flag]).collect();
            let out = run(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            let text = stdout(&out);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= WIDTH,
                    "{args:?}: a line of {} characters: {line}",
                    line.len()
                );
            }
            let examples = text
                .split("\nExamples:\n")
                .nth(1)
                .unwrap_or_else(|| panic!("{args:?}: no examples:\n{text}"));
            let listed = examples.lines().take_while(|line| line.starts_with("  slotcron ")).count();
            assert!((2..=3).contains(&listed), "{args:?}: {listed} examples:\n{text}");
        }
    }
    for command in [&[][..], &["run"]] {
        let args: Vec<&str> = command.iter().copied().chain(["--help"]).collect();
        assert!(stdout(&run(&args)).contains("RUST_LOG"), "{args:?}");
    }
    let history = stdout(&run(&["history", "--help"]));
    assert!(!history.contains("created if absent"), "{history}");
    assert!(history.contains("`history` only reads"), "{history}");
}

#[test]
fn completions_for_each_shell_and_the_man_page_come_from_the_same_definitions() {
    let script = |shell: &str| {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        stdout(&out)
    };
    let bash = script("bash");
    assert!(bash.contains("_slotcron()") && bash.contains("complete -F _slotcron"), "{bash}");
    for word in ["backfill", "--admin-url", "--metrics-per-job-histograms"] {
        assert!(bash.contains(word), "{word} not completed by bash");
    }
    assert!(script("zsh").starts_with("#compdef slotcron"));
    assert!(script("fish").contains("complete -c slotcron"));
    let unknown = run(&["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));

    let out = run(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = stdout(&out);
    assert!(page.starts_with(".ie \\n(.g .ds Aq") || page.contains(".TH slotcron 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS", "slotcron\\-run"] {
        assert!(page.contains(section), "{section} not in the man page:\n{page}");
    }
    // The pages the main one names, one per command.
    assert!(page.contains("slotcron\\-trigger(1)"), "{page}");
    let out = run(&["man", "trigger"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trigger = stdout(&out);
    assert!(trigger.contains(".TH slotcron-trigger 1"), "{trigger}");
    let version = env!("CARGO_PKG_VERSION");
    let header = format!("\"slotcron {version}\" \"slotcron manual\"");
    assert!(trigger.lines().any(|line| line.starts_with(".TH") && line.ends_with(&header)), "{trigger}");
    assert!(trigger.contains("\\-\\-dry\\-run") && trigger.contains("slotcron trigger"), "{trigger}");
    let unknown = run(&["man", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no command named \"nope\"; write one of run, next"),
        "{}",
        stderr(&unknown)
    );
}
