//! `slotcron completions SHELL` and `slotcron man`: shell completions and a man page
//! generated from the command line's own definitions (clap_complete, clap_mangen), so they
//! never drift from `--help`.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::INVALID_INPUT;
use crate::cli::{Cli, CompletionsArgs, ManArgs};

/// Writes the completion script of `args.shell` to standard output.
pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "slotcron", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// Writes the man page (section 1, roff) of `slotcron`, or of `args.command`'s
/// (`slotcron-COMMAND`, as the main page names it), to standard output; exit status 2 for
/// an unknown command.
pub fn man(args: &ManArgs) -> ExitCode {
    let mut cli = Cli::command();
    // Names each command's page `slotcron-COMMAND` and its usage `slotcron COMMAND`.
    cli.build();
    let command = match &args.command {
        None => cli,
        Some(name) => match cli.find_subcommand(name) {
            Some(command) => command.clone(),
            None => {
                let names: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
                eprintln!(
                    "slotcron man: COMMAND: no command named {name:?}; write one of {}",
                    names.join(", ")
                );
                return ExitCode::from(INVALID_INPUT);
            }
        },
    };
    let mut page = Vec::new();
    // The page's header names the release ("slotcron 0.1.0"), for every command alike
    // (clap_mangen's default is the command's own name and version, which a subcommand
    // does not have).
    let man = clap_mangen::Man::new(command)
        .source(format!("slotcron {}", env!("CARGO_PKG_VERSION")))
        .manual("slotcron manual");
    let written = man.render(&mut page).and_then(|()| std::io::stdout().write_all(&page));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("slotcron man: cannot write the page: {e}");
            ExitCode::FAILURE
        }
    }
}
