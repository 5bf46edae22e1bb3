//! `slotcron completions SHELL` and `slotcron man`: shell completions and a man page
//! generated from the command line's own definitions (clap_complete, clap_mangen), so they
//! never drift from `--help`.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

/// Writes the completion script of `args.shell` to standard output.
pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "slotcron", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// Writes the man page (section 1, roff) to standard output.
pub fn man() -> ExitCode {
    let mut page = Vec::new();
    let written = clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .and_then(|()| std::io::stdout().write_all(&page));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("slotcron man: cannot write the page: {e}");
            ExitCode::FAILURE
        }
    }
}
