//! The typed context that middleware build up and handlers read.
//!
//! A context is a cons list: [`HNil`] for "nothing yet", [`HCons`] for "one more entry in front".
//! [`Get`] finds an entry by its type; the index type parameter is inferred, so a read of an
//! entry no middleware provides is a compile error, and no runtime lookup happens.
//!
//! ```
//! use strata_core::ctx::{Get, HCons, HNil};
//!
//! struct User(&'static str);
//! struct Session(u64);
//!
//! let ctx = HNil.push(User("ada")).push(Session(7));
//! let user: &User = ctx.get();
//! let session: &Session = ctx.get();
//! assert_eq!((user.0, session.0), ("ada", 7));
//! ```
//!
//! Reading a type that is not there does not compile:
//!
//! ```compile_fail
//! use strata_core::ctx::{Get, HNil};
//! struct User;
//! let ctx = HNil;
//! let user: &User = ctx.get();
//! ```

use std::marker::PhantomData;

/// The empty context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HNil;

/// A context entry `head` in front of the rest, `tail`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HCons<H, T> {
    /// The newest entry.
    pub head: H,
    /// The older entries.
    pub tail: T,
}

impl HNil {
    /// Adds an entry.
    pub fn push<H>(self, head: H) -> HCons<H, Self> {
        HCons { head, tail: self }
    }
}

impl<H, T> HCons<H, T> {
    /// Adds an entry.
    pub fn push<N>(self, head: N) -> HCons<N, Self> {
        HCons { head, tail: self }
    }
}

/// Index marker: the entry is the head.
#[derive(Debug)]
pub enum Here {}

/// Index marker: the entry is in the tail at index `I`.
#[derive(Debug)]
pub struct There<I>(PhantomData<I>);

/// Reads the entry of type `T` at inferred index `I`.
///
/// `I` is never written by users: `let user: &User = ctx.get();` or `ctx.get::<User, _>()`.
#[diagnostic::on_unimplemented(
    message = "no middleware of this factory provides `{T}` in the context",
    label = "the context `{Self}` has no entry of type `{T}`",
    note = "attach a middleware whose output is `{T}` with `add_middleware` before building the endpoint"
)]
pub trait Get<T, I> {
    /// A reference to the entry.
    fn get(&self) -> &T;
    /// A mutable reference to the entry.
    fn get_mut(&mut self) -> &mut T;
}

#[allow(clippy::mismatching_type_param_order)] // the entry type is the head here
impl<T, Tail> Get<T, Here> for HCons<T, Tail> {
    fn get(&self) -> &T {
        &self.head
    }

    fn get_mut(&mut self) -> &mut T {
        &mut self.head
    }
}

impl<T, H, Tail, I> Get<T, There<I>> for HCons<H, Tail>
where
    Tail: Get<T, I>,
{
    fn get(&self) -> &T {
        self.tail.get()
    }

    fn get_mut(&mut self) -> &mut T {
        self.tail.get_mut()
    }
}

/// Names a context type from its entries, oldest first: `Ctx![User, Session]` is the context after
/// a middleware providing `User` and then one providing `Session`.
///
/// ```
/// use strata_core::Ctx;
/// use strata_core::ctx::{HCons, HNil};
///
/// struct User;
/// struct Session;
/// let _: Ctx![User, Session] = HCons { head: Session, tail: HCons { head: User, tail: HNil } };
/// let _: Ctx![] = HNil;
/// ```
#[macro_export]
macro_rules! Ctx {
    () => { $crate::ctx::HNil };
    ($($entry:ty),+ $(,)?) => { $crate::Ctx!(@rev [$($entry),+] []) };
    (@rev [] [$($rev:ty),*]) => { $crate::Ctx!(@build $($rev),*) };
    (@rev [$first:ty $(, $rest:ty)*] [$($rev:ty),*]) => {
        $crate::Ctx!(@rev [$($rest),*] [$first $(, $rev)*])
    };
    (@build) => { $crate::ctx::HNil };
    (@build $head:ty $(, $tail:ty)*) => {
        $crate::ctx::HCons<$head, $crate::Ctx!(@build $($tail),*)>
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_mut_changes_the_entry() {
        let mut ctx = HNil.push(1u8).push("two");
        *ctx.get_mut() = 5u8;
        let n: &u8 = ctx.get();
        assert_eq!(*n, 5);
    }
}
