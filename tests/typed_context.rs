//! Reading a context entry that no middleware provides is a compile error.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[test]
fn context_entries_are_checked_at_compile_time() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/context_entry_provided.rs");
    cases.compile_fail("tests/ui/context_entry_not_provided.rs");
    cases.compile_fail("tests/ui/context_entry_of_other_type.rs");
}
