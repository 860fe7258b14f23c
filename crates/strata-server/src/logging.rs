//! The default `tracing` subscriber: installed only when the configuration asks for it
//! (`create_config().logger(..)`) and the application has none, coloured only unless asked not
//! to, on a terminal, and never with `NO_COLOR` set (<https://no-color.org>).

use std::ffi::OsStr;
use std::io::IsTerminal;

use strata_core::Level;

use crate::config::{LogColor, LoggerOptions};

fn tracing_level(level: Level) -> tracing::Level {
    match level {
        Level::Debug => tracing::Level::DEBUG,
        Level::Info => tracing::Level::INFO,
        Level::Warn => tracing::Level::WARN,
        Level::Error => tracing::Level::ERROR,
    }
}

/// Installs a `fmt` subscriber writing to standard output with `options`; returns `false` (and
/// changes nothing) when a global subscriber is already set, so an application's own setup
/// always wins. Colours are used only when `options.color` allows them, standard output is a
/// terminal and `NO_COLOR` is unset or empty: a log file or a pipe never gets escape codes.
pub fn install_default_subscriber(options: &LoggerOptions) -> bool {
    let color = use_color(
        options.color == LogColor::Auto,
        std::env::var_os("NO_COLOR").as_deref(),
        std::io::stdout().is_terminal(),
    );
    tracing_subscriber::fmt()
        .with_max_level(tracing_level(options.level))
        .with_ansi(color)
        .try_init()
        .is_ok()
}

/// Whether to colour: asked for, on a terminal, and no non-empty `NO_COLOR`.
fn use_color(requested: bool, no_color: Option<&OsStr>, terminal: bool) -> bool {
    requested && terminal && no_color.is_none_or(OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_needs_a_request_a_terminal_and_no_no_color() {
        let set = Some(OsStr::new("1"));
        assert!(use_color(true, None, true));
        assert!(
            use_color(true, Some(OsStr::new("")), true),
            "an empty NO_COLOR is unset"
        );
        assert!(!use_color(true, set, true));
        assert!(!use_color(true, None, false), "a file or a pipe");
        assert!(!use_color(false, None, true));
    }

    #[test]
    fn the_applications_subscriber_wins() {
        // This test binary installs its global subscriber once, here: it plays the application.
        let application = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::ERROR)
            .finish();
        tracing::subscriber::set_global_default(application).expect("first global subscriber");
        let options = LoggerOptions::new(Level::Debug).color(LogColor::Never);
        assert!(
            !install_default_subscriber(&options),
            "must not replace the application's"
        );
        assert!(
            !tracing::enabled!(tracing::Level::DEBUG),
            "the application's level still rules"
        );
    }
}
