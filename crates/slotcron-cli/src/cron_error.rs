//! Showing a rejected cron expression: the reason, and a caret under the offending text.

use slotcron::CronError;

/// The reason `error` gives, with its column counted from `offset` characters before
/// the expression (where the expression starts within a longer line), e.g.
/// `hour field "24" (column 3): 24 is out of range 0-23`.
pub fn reason(error: &CronError, offset: usize) -> String {
    match error.field() {
        Some(field) => {
            format!(
                "{field} field {:?} (column {}): {}",
                shortened(error.token()),
                error.column() + offset,
                error.kind()
            )
        }
        None => error.kind().to_string(),
    }
}

/// The expression and, under it, carets marking the offending text:
///
/// ```text
///   0 25 * * *
///     ^^
/// ```
///
/// Just the expression when the error has no position (e.g. a wrong number of fields).
pub fn pointer(expression: &str, error: &CronError) -> String {
    let width = error.token().chars().count();
    if width == 0 || expression.chars().count() > SHOWN {
        return format!("  {}", shortened(expression));
    }
    let indent = " ".repeat(error.column().saturating_sub(1));
    format!("  {expression}\n  {indent}{}", "^".repeat(width))
}

/// The most characters of an expression or of its offending text that messages repeat.
const SHOWN: usize = 80;

/// `text`, or its first [`SHOWN`] characters and how long it is.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}… ({} characters)", &text[..end], text.chars().count()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slotcron::CronSchedule;

    #[test]
    fn caret_sits_under_the_offending_field() {
        let error = CronSchedule::parse("0 25 * * *").unwrap_err();
        assert_eq!(pointer("0 25 * * *", &error), "  0 25 * * *\n    ^^");
        assert_eq!(reason(&error, 0), "hour field \"25\" (column 3): 25 is out of range 0-23");
        assert_eq!(reason(&error, 4), "hour field \"25\" (column 7): 25 is out of range 0-23");
    }

    #[test]
    fn long_text_is_shortened() {
        let expression = format!("0 {} * * *", "9".repeat(10000));
        let error = CronSchedule::parse(&expression).unwrap_err();
        let reason = reason(&error, 0);
        assert!(reason.len() < 300, "{reason}");
        assert!(reason.contains("… (10000 characters)"), "{reason}");
        let pointer = pointer(&expression, &error);
        assert!(!pointer.contains('^') && pointer.len() < 200, "{pointer}");
    }
}
