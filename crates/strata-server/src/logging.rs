//! The default `tracing` subscriber, installed only when the application has none.

use strata_core::Level;

use crate::config::LoggerOptions;

fn tracing_level(level: Level) -> tracing::Level {
    match level {
        Level::Debug => tracing::Level::DEBUG,
        Level::Info => tracing::Level::INFO,
        Level::Warn => tracing::Level::WARN,
        Level::Error => tracing::Level::ERROR,
    }
}

/// Installs a `fmt` subscriber with `options`; returns `false` (and changes nothing) when a
/// global subscriber is already set, so an application's own setup always wins.
pub fn install_default_subscriber(options: &LoggerOptions) -> bool {
    tracing_subscriber::fmt()
        .with_max_level(tracing_level(options.level))
        .with_ansi(options.color)
        .try_init()
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_applications_subscriber_wins() {
        // This test binary installs its global subscriber once, here: it plays the application.
        let application = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::ERROR)
            .finish();
        tracing::subscriber::set_global_default(application).expect("first global subscriber");
        let options = LoggerOptions {
            level: Level::Debug,
            color: false,
        };
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
