//! Cron's `%` rule: where a crontab command ends and its standard input begins, as
//! cronie's `do_command.c` (from Vixie cron) reads them.

/// Splits a crontab command at its first unescaped `%` into the command the shell runs
/// and its standard input (`None` when there is none, or nothing after the `%`).
///
/// In the command, `\%` becomes `%` and any other backslash pair `\x` stays as written
/// (both characters), so `\\%` is `\\` followed by an unescaped `%`. In the standard
/// input, each unescaped `%` becomes a newline, `\%` becomes `%`, other backslashes stay,
/// and a newline is added if the text does not end with one.
pub(super) fn split(command: &str) -> (String, Option<String>) {
    let mut script = String::new();
    let mut escaped = false;
    for (index, c) in command.char_indices() {
        if escaped {
            escaped = false;
            if c == '%' {
                script.pop(); // the backslash
            }
        } else if c == '\\' {
            escaped = true;
        } else if c == '%' {
            return (script, standard_input(&command[index + 1..]));
        }
        script.push(c);
    }
    (script, None)
}

/// The text after the first unescaped `%`, translated as cronie writes it to the
/// command's standard input: `%` to a newline, `\%` to `%`, `\x` kept for any other `x`
/// (a backslash also escapes the one after it, so `\\%` gives `\%`), then a final newline
/// if the last character written is not one. `None` for an empty text: cronie writes
/// nothing.
fn standard_input(text: &str) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    let mut input = String::new();
    let (mut escaped, mut needs_newline) = (false, false);
    for c in text.chars() {
        let c = match (escaped, c) {
            (true, '%') => '%',
            (true, c) => {
                input.push('\\');
                c
            }
            (false, '%') => '\n',
            (false, c) => c,
        };
        escaped = c == '\\';
        if !escaped {
            input.push(c);
            needs_newline = c != '\n';
        }
    }
    if escaped {
        input.push('\\');
    }
    if needs_newline {
        input.push('\n');
    }
    Some(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_percent_the_command_is_kept() {
        assert_eq!(split("echo hi"), ("echo hi".into(), None));
    }

    #[test]
    fn escaped_percent_in_the_command_is_a_percent_and_other_escapes_stay() {
        assert_eq!(split(r"date +\%H"), ("date +%H".into(), None));
        assert_eq!(split(r"printf 'a\tb\n' \$HOME"), (r"printf 'a\tb\n' \$HOME".into(), None));
        assert_eq!(split(r"echo a\\b"), (r"echo a\\b".into(), None));
        assert_eq!(split(r"echo trailing\"), (r"echo trailing\".into(), None));
    }

    #[test]
    fn a_doubled_backslash_does_not_escape_the_percent_after_it() {
        assert_eq!(split(r"echo \\%input"), (r"echo \\".into(), Some("input\n".into())));
    }

    #[test]
    fn the_first_unescaped_percent_starts_the_standard_input() {
        assert_eq!(
            split("mail -s hi root%line 1%line 2"),
            ("mail -s hi root".into(), Some("line 1\nline 2\n".into()))
        );
        assert_eq!(split(r"date +\%s%x"), ("date +%s".into(), Some("x\n".into())));
    }

    #[test]
    fn standard_input_translates_percents_and_keeps_other_escapes() {
        assert_eq!(split(r"cat%100\% sure%a\tb"), ("cat".into(), Some("100% sure\na\\tb\n".into())));
        // A backslash also escapes the next backslash, yet stays: `\\%` gives `\%`.
        assert_eq!(split(r"cat%a\\%b"), ("cat".into(), Some("a\\%b\n".into())));
        assert_eq!(split(r"cat%a\\b"), ("cat".into(), Some("a\\\\b\n".into())));
        assert_eq!(split(r"cat%ends\"), ("cat".into(), Some("ends\\\n".into())));
    }

    #[test]
    fn standard_input_ends_with_one_newline_and_empty_input_is_none() {
        assert_eq!(split("cat%a%"), ("cat".into(), Some("a\n".into())));
        assert_eq!(split("cat%%"), ("cat".into(), Some("\n".into())));
        assert_eq!(split("cat%"), ("cat".into(), None));
    }
}
