//! The README's ```console examples, run: each `$ slotcron ...` line is run by `/bin/sh`
//! with the built binary first on `PATH`, in a directory holding the files of
//! `tests/readme/` and a link to the repository's `examples/`, and what it prints
//! (standard output and standard error, in order) must be the lines that follow it. In
//! an expected line, `…` stands for any text (a time that depends on the clock). A block
//! preceded by a line holding `not run by tests/readme.rs` is left alone (it needs a
//! state a daemon wrote).

mod support;

use std::path::Path;
use std::process::Command;

use support::scratch;

const SKIP: &str = "not run by tests/readme.rs";

/// A README command and the lines it should print.
struct Example {
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The examples of the README's console blocks.
fn examples(readme: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let (mut in_block, mut previous) = (false, "");
    for (index, line) in readme.lines().enumerate() {
        if !in_block {
            in_block = line == "```console" && !previous.contains(SKIP);
            previous = if line.trim().is_empty() { previous } else { line };
            continue;
        }
        if line == "```" {
            in_block = false;
        } else if let Some(command) = line.strip_prefix("$ ") {
            examples.push(Example { line: index + 1, command: command.to_owned(), expected: Vec::new() });
        } else if let Some(example) = examples.last_mut() {
            example.expected.push(line.to_owned());
        }
        previous = line;
    }
    examples
}

/// Whether `actual` is `expected`, each `…` in it standing for any text.
fn matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split('…');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = actual.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

#[test]
fn the_readme_console_examples_print_what_the_readme_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let dir = scratch("readme");
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/readme")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    std::os::unix::fs::symlink(root.join("examples"), dir.join("examples")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_slotcron")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());

    let examples = examples(&readme);
    assert!(examples.len() >= 5, "the README's console examples were not found");
    let mut failures = Vec::new();
    for example in &examples {
        assert!(example.command.starts_with("slotcron "), "README.md:{}: {}", example.line, example.command);
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("exec {} 2>&1", example.command))
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("RUST_LOG")
            .env_remove("SLOTCRON_REDIS_URL")
            .output()
            .unwrap();
        let actual = String::from_utf8_lossy(&out.stdout);
        let actual: Vec<&str> = actual.lines().collect();
        let same = actual.len() == example.expected.len()
            && example.expected.iter().zip(&actual).all(|(expected, actual)| matches(expected, actual));
        if !same {
            failures.push(format!(
                "README.md:{}: $ {}\n--- the README says:\n{}\n--- it printed:\n{}",
                example.line,
                example.command,
                example.expected.join("\n"),
                actual.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn an_ellipsis_stands_for_any_text() {
    assert!(matches("a … b", "a 2026 b"));
    assert!(matches("…", "anything"));
    assert!(matches("x", "x"));
    assert!(!matches("x", "xy"));
    assert!(!matches("a … b", "a 2026 c"));
    assert!(matches("a…b…c", "a1b2c"));
}
