//! The default `tracing` subscriber, seen from outside the process: installed only when the
//! configuration asks for it, coloured only on a terminal and never with `NO_COLOR`.
//!
//! A global subscriber is once per process, so each case runs this test binary again as a child
//! (the ignored test `child_logs`) with its standard output a pipe, or a terminal made by
//! util-linux's `script`, and reads what it wrote.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::fmt::Write as _;
use std::process::{Command, Output};
use strata::{Level, attach_routing};

use strata::prelude::*;

/// Which case the child runs: `ask` (the config asks for a coloured logger) or `none`.
const CHILD: &str = "STRATA_LOGGING_CHILD";
const MESSAGE: &str = "a line from the child";

/// Run only as a child of the tests below (`--ignored`), which set [`CHILD`].
#[test]
#[ignore = "a child process of the logging tests"]
fn child_logs() {
    let mode = std::env::var(CHILD).expect("run by the logging tests");
    let ping = default_endpoints_factory()
        .get()
        .handler_without_input(async || Ok(Reply::new(())));
    let mut config = create_config().cors(Cors::Disabled);
    if mode == "ask" {
        config = config.logger(Level::Info);
    }
    let attached = attach_routing(&config.build(), &routing! { "ping" => ping }).unwrap();
    println!(
        "subscriber installed: {}",
        tracing::dispatcher::has_been_set()
    );
    attached.logger.info(MESSAGE);
}

fn child(mode: &str, no_color: Option<&str>) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "child_logs",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, mode)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG");
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    command
}

/// `command` with its standard output a terminal (a pseudo-terminal of `script`).
fn on_a_terminal(command: &Command) -> Output {
    // `script` runs a shell line: every word single-quoted, whatever it holds.
    let quoted =
        |word: &std::ffi::OsStr| format!("'{}'", word.to_string_lossy().replace('\'', r"'\''"));
    let mut shell = String::from("env -u NO_COLOR");
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            let mut pair = name.to_os_string();
            pair.push("=");
            pair.push(value);
            let _ = write!(shell, " {}", quoted(&pair));
        }
    }
    let _ = write!(shell, " {}", quoted(command.get_program()));
    for arg in command.get_args() {
        let _ = write!(shell, " {}", quoted(arg));
    }
    Command::new("script")
        .args(["-qec", &shell, "/dev/null"])
        .output()
        .expect("util-linux's `script` (CI needs it: it makes the terminal)")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "the child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn nothing_is_installed_unless_asked() {
    let out = stdout(&child("none", None).output().unwrap());
    assert!(out.contains("subscriber installed: false"), "{out}");
    assert!(!out.contains(MESSAGE), "no subscriber, no line: {out}");
}

#[test]
fn a_pipe_gets_no_escape_codes_even_when_colour_is_asked() {
    let out = stdout(&child("ask", None).output().unwrap());
    assert!(out.contains("subscriber installed: true"), "{out}");
    assert!(out.contains(MESSAGE), "{out}");
    assert!(!out.contains('\u{1b}'), "escape codes in a pipe: {out:?}");
}

#[test]
fn a_terminal_gets_colours_unless_no_color_is_set() {
    let out = stdout(&on_a_terminal(&child("ask", None)));
    assert!(out.contains(MESSAGE), "{out}");
    assert!(
        out.contains('\u{1b}'),
        "a terminal and colour asked: {out:?}"
    );

    let out = stdout(&on_a_terminal(&child("ask", Some("1"))));
    assert!(out.contains(MESSAGE), "{out}");
    assert!(!out.contains('\u{1b}'), "NO_COLOR is set: {out:?}");
}
