//! [`Mode`]: development shows every error message, production hides internal ones.

/// Development shows every error message; production hides the messages of 5xx errors and of
/// errors marked not exposed behind the status's reason phrase.
///
/// Production is the default, so that internal details (a database error's text, a panic
/// message) never reach clients unless development was chosen: with
/// `create_config().mode(Mode::Development)`, or the environment variable `STRATA_MODE=development` read
/// when a builder is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Show every message.
    Development,
    /// Hide internal messages (the default).
    #[default]
    Production,
}

/// The environment variable choosing the mode when the code does not (`development` or
/// `production`).
pub const MODE_VARIABLE: &str = "STRATA_MODE";

impl Mode {
    /// The mode `STRATA_MODE` names, if it names one.
    pub fn from_env() -> Option<Self> {
        Self::from_name(&std::env::var(MODE_VARIABLE).ok()?)
    }

    /// `development` or `production` (surrounding spaces and case ignored).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("development") {
            Some(Self::Development)
        } else if name.eq_ignore_ascii_case("production") {
            Some(Self::Production)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_is_the_default_and_names_are_read_leniently() {
        assert_eq!(Mode::default(), Mode::Production);
        assert_eq!(Mode::from_name(" Development\n"), Some(Mode::Development));
        assert_eq!(Mode::from_name("production"), Some(Mode::Production));
        assert_eq!(Mode::from_name("dev"), None);
    }
}
