//! The ```console examples of the README and of every `docs/*.md`, run: each `$ slotcron
//! ...` line is run by `/bin/sh` with the built binary first on `PATH`, in a directory
//! holding the files of `tests/readme/` and a link to the repository's `examples/`, and
//! what it prints (standard output and standard error, in order) must be the lines that
//! follow it. In an expected line, `…` stands for any text (a time that depends on the
//! clock). A block preceded by a line holding `not run by tests/readme.rs` is left alone
//! (it needs a running daemon or a state a daemon wrote).

mod support;

use std::path::Path;
use std::process::Command;

use support::scratch;

const SKIP: &str = "not run by tests/readme.rs";

/// A documented command and the lines it should print.
struct Example {
    /// The file it is in, relative to the repository's root (`README.md`, `docs/fleet.md`).
    file: String,
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The examples of the console blocks of `text`, the contents of `file`.
fn examples(file: &str, text: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let (mut in_block, mut previous) = (false, "");
    for (index, line) in text.lines().enumerate() {
        if !in_block {
            in_block = line == "```console" && !previous.contains(SKIP);
            previous = if line.trim().is_empty() { previous } else { line };
            continue;
        }
        if line == "```" {
            in_block = false;
        } else if let Some(command) = line.strip_prefix("$ ") {
            examples.push(Example {
                file: file.to_owned(),
                line: index + 1,
                command: command.to_owned(),
                expected: Vec::new(),
            });
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

/// The documents whose console blocks are run: `README.md`, then every `docs/*.md` in
/// name order, each as (its path from the repository's root, its text).
fn documents(root: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".to_owned());
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join(&name)).unwrap();
            (name, text)
        })
        .collect()
}

#[test]
fn the_documented_console_examples_print_what_the_documents_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = scratch("readme");
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/readme")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    std::os::unix::fs::symlink(root.join("examples"), dir.join("examples")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_slotcron")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());

    let documents = documents(&root);
    assert!(documents.len() > 1, "no docs/*.md found");
    let examples: Vec<Example> = documents.iter().flat_map(|(file, text)| examples(file, text)).collect();
    let in_readme = examples.iter().filter(|example| example.file == "README.md").count();
    assert!(in_readme >= 3, "the README's console examples were not found");
    assert!(examples.len() >= 8, "the console examples of the README and docs/ were not found");
    let mut failures = Vec::new();
    for example in &examples {
        assert!(
            example.command.starts_with("slotcron "),
            "{}:{}: {}",
            example.file,
            example.line,
            example.command
        );
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
                "{}:{}: $ {}\n--- the document says:\n{}\n--- it printed:\n{}",
                example.file,
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
