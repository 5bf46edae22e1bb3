//! Plain-text tables on standard output: columns separated by two spaces, the last one
//! unpadded.

use std::io::{BufWriter, Write};

use rayon::prelude::*;

/// Rows laid out together, on one core each, before they are written in order.
const ROWS_PER_BLOCK: usize = 4096;

/// Prints `rows` (after `header`, if any) with each column as wide as its widest cell;
/// the first `right` columns are right-aligned (numbers). A closed standard output
/// (`slotcron history | head`) ends the table quietly. Widths are counted in characters;
/// a big table (`slotcron check` of a million jobs) is measured and laid out on every
/// core at once.
pub fn print<const N: usize, R: Row<N>>(header: Option<[&str; N]>, rows: &[R], right: usize) {
    let widest = |a: [usize; N], b: [usize; N]| std::array::from_fn(|i| a[i].max(b[i]));
    let widths = rows
        .par_iter()
        .map(|row| row.cells().map(width))
        .reduce(|| header.map_or([0; N], |h| h.map(width)), widest);
    // Each line at most this long (a cell, its padding and the two spaces after it).
    let line_len = widths.iter().sum::<usize>() + 2 * N;
    // Buffered: standard output flushes each line by itself, a write per row.
    let mut stdout = BufWriter::new(std::io::stdout().lock());
    if let Some(header) = header {
        let mut text = String::new();
        line(&mut text, header, widths, right);
        if stdout.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
    let blocks: Vec<String> = rows
        .par_chunks(ROWS_PER_BLOCK)
        .map(|block| {
            let mut text = String::with_capacity(block.len() * line_len);
            for row in block {
                line(&mut text, row.cells(), widths, right);
            }
            text
        })
        .collect();
    for block in blocks {
        if stdout.write_all(block.as_bytes()).is_err() {
            return;
        }
    }
    // A closed standard output ends the table quietly here too.
    let _ = stdout.flush();
}

/// A row of a table: its `N` cells.
pub trait Row<const N: usize>: Sync {
    /// The cells, in the columns' order.
    fn cells(&self) -> [&str; N];
}

impl<const N: usize> Row<N> for [String; N] {
    fn cells(&self) -> [&str; N] {
        self.each_ref().map(String::as_str)
    }
}

/// A row whose cells are written one after the other into one string (one allocation a
/// row, for tables of a million rows): write a cell's text ([`std::fmt::Write`]), then
/// [`Packed::end_cell`]. A cell not ended holds what was written after the last one
/// ended, if anything.
#[derive(Debug)]
pub struct Packed<const N: usize> {
    text: String,
    /// Where each cell ended ends, in `text`.
    ends: [usize; N],
    /// How many cells have ended.
    ended: usize,
}

impl<const N: usize> Packed<N> {
    /// An empty row with room for `bytes` of text.
    pub fn with_capacity(bytes: usize) -> Self {
        Self { text: String::with_capacity(bytes), ends: [0; N], ended: 0 }
    }

    /// Ends the cell written since the previous one (a cell past the `N`th is dropped).
    pub fn end_cell(&mut self) {
        match self.ends.get_mut(self.ended) {
            Some(end) => {
                *end = self.text.len();
                self.ended += 1;
            }
            None => self.text.truncate(self.ends.last().copied().unwrap_or(0)),
        }
    }
}

impl<const N: usize> std::fmt::Write for Packed<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl<const N: usize> Row<N> for Packed<N> {
    fn cells(&self) -> [&str; N] {
        let end = |i: usize| if i < self.ended { self.ends[i] } else { self.text.len() };
        std::array::from_fn(|i| &self.text[i.checked_sub(1).map_or(0, end)..end(i)])
    }
}

/// Appends `cells` to `text` as one line, each padded to its column's width but the
/// last, the first `right` right-aligned; trailing spaces trimmed.
fn line<const N: usize>(text: &mut String, cells: [&str; N], widths: [usize; N], right: usize) {
    let start = text.len();
    let spaces = |text: &mut String, n| text.extend(std::iter::repeat_n(' ', n));
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        let pad = width.saturating_sub(self::width(cell));
        if i + 1 == N {
            text.push_str(cell);
        } else if i < right {
            spaces(text, pad);
            text.push_str(cell);
            text.push_str("  ");
        } else {
            text.push_str(cell);
            spaces(text, pad + 2);
        }
    }
    text.truncate(start + text[start..].trim_end().len());
    text.push('\n');
}

/// How wide `cell` is: its characters (its bytes, when it is ASCII).
fn width(cell: &str) -> usize {
    if cell.is_ascii() { cell.len() } else { cell.chars().count() }
}
