//! The typed context that middleware build up and handlers read.
//!
//! A context is a cons list: [`HNil`] for "nothing yet", [`HCons`] for "one more entry in front".
//! [`Has`] finds an entry by its type, and [`Pluck`]/[`PluckAll`] take entries out by type
//! (how a handler's parameters receive them); the index type parameter is inferred, so a read
//! of an entry no middleware provides is a compile error, and no runtime lookup happens.
//!
//! ```
//! use strata_core::ctx::{Has, HCons, HNil};
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
//! use strata_core::ctx::{Has, HNil};
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

/// The context has an entry of type `T` (at an inferred index `I`): reads it.
///
/// `I` is never written by users: `let user: &User = ctx.get();` or `ctx.get::<User, _>()`.
#[diagnostic::on_unimplemented(
    message = "no middleware of this factory provides `{T}` in the context",
    label = "the context `{Self}` has no entry of type `{T}`",
    note = "attach a middleware whose output is `{T}` with `add_middleware` before building the endpoint"
)]
pub trait Has<T, I> {
    /// A reference to the entry.
    fn get(&self) -> &T;
    /// A mutable reference to the entry.
    fn get_mut(&mut self) -> &mut T;
}

#[allow(clippy::mismatching_type_param_order)] // the entry type is the head here
impl<T, Tail> Has<T, Here> for HCons<T, Tail> {
    fn get(&self) -> &T {
        &self.head
    }

    fn get_mut(&mut self) -> &mut T {
        &mut self.head
    }
}

impl<T, H, Tail, I> Has<T, There<I>> for HCons<H, Tail>
where
    Tail: Has<T, I>,
{
    fn get(&self) -> &T {
        self.tail.get()
    }

    fn get_mut(&mut self) -> &mut T {
        self.tail.get_mut()
    }
}

/// Takes the entry of type `T` at inferred index `I` out of a context, by value, leaving the
/// other entries as [`Rest`](Self::Rest): how a handler's parameters receive context entries
/// by type without cloning them.
///
/// ```
/// use strata_core::ctx::{HNil, Pluck};
///
/// struct User(&'static str);
/// let ctx = HNil.push(User("ada")).push(7u64);
/// let (user, rest): (User, _) = ctx.pluck();
/// let (session, HNil): (u64, _) = rest.pluck();
/// assert_eq!((user.0, session), ("ada", 7));
/// ```
#[diagnostic::on_unimplemented(
    message = "no middleware of this factory provides `{T}` in the context",
    label = "the context `{Self}` has no entry of type `{T}`",
    note = "attach a middleware whose output is `{T}` with `add_middleware` before building the endpoint"
)]
pub trait Pluck<T, I> {
    /// The context without the entry.
    type Rest;
    /// The entry and the rest.
    fn pluck(self) -> (T, Self::Rest);
}

#[allow(clippy::mismatching_type_param_order)] // the entry type is the head here
impl<T, Tail> Pluck<T, Here> for HCons<T, Tail> {
    type Rest = Tail;

    fn pluck(self) -> (T, Tail) {
        (self.head, self.tail)
    }
}

impl<T, H, Tail, I> Pluck<T, There<I>> for HCons<H, Tail>
where
    Tail: Pluck<T, I>,
{
    type Rest = HCons<H, Tail::Rest>;

    fn pluck(self) -> (T, Self::Rest) {
        let (entry, rest) = self.tail.pluck();
        (
            entry,
            HCons {
                head: self.head,
                tail: rest,
            },
        )
    }
}

/// Takes several entries (the list `Targets`, at the inferred indices `Indices`) out of a
/// context by value, each by its type; the rest is dropped.
pub trait PluckAll<Targets, Indices> {
    /// The entries, in the order of `Targets`.
    fn pluck_all(self) -> Targets;
}

impl<S> PluckAll<HNil, HNil> for S {
    fn pluck_all(self) -> HNil {
        HNil
    }
}

impl<S, T, I, Ts, Is> PluckAll<HCons<T, Ts>, HCons<I, Is>> for S
where
    S: Pluck<T, I>,
    S::Rest: PluckAll<Ts, Is>,
{
    fn pluck_all(self) -> HCons<T, Ts> {
        let (head, rest) = self.pluck();
        HCons {
            head,
            tail: rest.pluck_all(),
        }
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

    #[test]
    fn pluck_all_takes_entries_in_any_order_and_leaves_the_rest() {
        let ctx = HNil.push(1u8).push("two").push(3.0f32);
        let HCons {
            head: text,
            tail: HCons {
                head: number,
                tail: HNil,
            },
        }: HCons<&str, HCons<u8, HNil>> = ctx.pluck_all();
        assert_eq!((text, number), ("two", 1));
    }
}
