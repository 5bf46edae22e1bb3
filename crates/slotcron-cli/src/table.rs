//! Plain-text tables on standard output: columns separated by two spaces, the last one
//! unpadded.

use std::io::{BufWriter, Write};

/// Prints `rows` (after `header`, if any) with each column as wide as its widest cell;
/// the first `right` columns are right-aligned (numbers). A closed standard output
/// (`slotcron history | head`) ends the table quietly.
pub fn print<const N: usize>(header: Option<[&str; N]>, rows: &[[String; N]], right: usize) {
    let mut widths = header.map_or([0; N], |h| h.map(|cell| cell.chars().count()));
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // Buffered: standard output flushes each line by itself, a write per row.
    let mut stdout = BufWriter::new(std::io::stdout().lock());
    let mut text = String::new();
    let mut line = |cells: [&str; N]| {
        text.clear();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            let pad = width.saturating_sub(cell.chars().count());
            if i + 1 == N {
                text.push_str(cell);
            } else if i < right {
                text.extend(std::iter::repeat_n(' ', pad).chain(cell.chars()).chain("  ".chars()));
            } else {
                text.extend(cell.chars().chain(std::iter::repeat_n(' ', pad + 2)));
            }
        }
        writeln!(stdout, "{}", text.trim_end())
    };
    if let Some(header) = header
        && line(header).is_err()
    {
        return;
    }
    for row in rows {
        if line(row.each_ref().map(String::as_str)).is_err() {
            return;
        }
    }
    // A closed standard output ends the table quietly here too.
    let _ = stdout.flush();
}
