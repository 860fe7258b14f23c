//! Strata's procedural macros: `#[strata::model]` (module `model`), `#[derive(Outcomes)]`
//! (module `outcomes`), and the procedural half of
//! `strata_routing::routing!`: entries are split at their top-level
//! commas in one pass, so a routing may have any number of keys (a `macro_rules!` muncher
//! recurses once per key and stops at the compiler's recursion limit, 128 by default).
//!
//! Not meant to be called directly: `routing!` passes its own crate path first
//! (`$crate; "key" => value, ...`), so the expansion names `Routing` wherever the caller
//! reached the macro from (`strata_routing::routing!` or `strata::routing!`).

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

mod model;
mod outcomes;

/// `#[strata::model]`: documented where the facade re-exports it (`strata::model`).
#[proc_macro_attribute]
pub fn model(args: TokenStream, item: TokenStream) -> TokenStream {
    model::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `#[derive(strata::Outcomes)]`: documented where the facade re-exports it
/// (`strata::Outcomes`).
#[proc_macro_derive(Outcomes, attributes(outcome))]
pub fn outcomes(item: TokenStream) -> TokenStream {
    outcomes::expand(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `$crate; "key" => value, "key" => { nested }, ...` → `$crate::Routing::new().route(..)...`.
#[doc(hidden)]
#[proc_macro]
pub fn routing_impl(input: TokenStream) -> TokenStream {
    let mut tokens = input.into_iter();
    let mut krate = Vec::new();
    for token in tokens.by_ref() {
        match token {
            TokenTree::Punct(p) if p.as_char() == ';' => break,
            other => krate.push(other),
        }
    }
    match routing(&krate, tokens.collect()) {
        Ok(expansion) => expansion,
        Err((span, message)) => compile_error(span, &message),
    }
}

type Error = (Span, String);

/// The `Routing` of `body`'s entries.
fn routing(krate: &[TokenTree], body: Vec<TokenTree>) -> Result<TokenStream, Error> {
    let mut out: Vec<TokenTree> = krate.to_vec();
    out.extend(path_separator());
    out.push(ident("Routing"));
    out.extend(path_separator());
    out.push(ident("new"));
    out.push(group(Delimiter::Parenthesis, TokenStream::new()));
    for entry in split_entries(body) {
        let (key, value) = parse_entry(krate, entry)?;
        let mut arguments = vec![key, TokenTree::Punct(Punct::new(',', Spacing::Alone))];
        arguments.extend(value);
        out.push(TokenTree::Punct(Punct::new('.', Spacing::Alone)));
        out.push(ident("route"));
        out.push(group(
            Delimiter::Parenthesis,
            arguments.into_iter().collect(),
        ));
    }
    Ok(out.into_iter().collect())
}

/// The entries, split at commas outside any group; a trailing comma ends the list.
fn split_entries(body: Vec<TokenTree>) -> Vec<Vec<TokenTree>> {
    let mut entries = vec![Vec::new()];
    for token in body {
        match &token {
            TokenTree::Punct(p) if p.as_char() == ',' => entries.push(Vec::new()),
            _ => entries.last_mut().map_or((), |entry| entry.push(token)),
        }
    }
    if entries.last().is_some_and(Vec::is_empty) {
        entries.pop();
    }
    entries
}

/// `"key" => { nested }` (a nested routing) or `"key" => expression`.
fn parse_entry(
    krate: &[TokenTree],
    entry: Vec<TokenTree>,
) -> Result<(TokenTree, Vec<TokenTree>), Error> {
    let mut tokens = entry.into_iter();
    let key = match tokens.next() {
        Some(TokenTree::Literal(literal)) => TokenTree::Literal(literal),
        Some(other) => {
            return Err((
                other.span(),
                "routing!: expected a string key, as in `\"users\" => endpoint`".to_owned(),
            ));
        }
        None => {
            return Err((
                Span::call_site(),
                "routing!: an empty entry (two commas in a row?)".to_owned(),
            ));
        }
    };
    let arrow = (tokens.next(), tokens.next());
    let is_arrow = matches!(
        &arrow,
        (Some(TokenTree::Punct(eq)), Some(TokenTree::Punct(gt)))
            if eq.as_char() == '=' && eq.spacing() == Spacing::Joint && gt.as_char() == '>'
    );
    if !is_arrow {
        return Err((
            key.span(),
            "routing!: expected `=>` after the key".to_owned(),
        ));
    }
    let rest: Vec<TokenTree> = tokens.collect();
    match rest.as_slice() {
        [] => Err((
            key.span(),
            "routing!: expected a value after `=>`".to_owned(),
        )),
        [TokenTree::Group(nested)] if nested.delimiter() == Delimiter::Brace => {
            let inner = routing(krate, nested.stream().into_iter().collect())?;
            Ok((key, inner.into_iter().collect()))
        }
        _ => Ok((key, rest)),
    }
}

fn path_separator() -> [TokenTree; 2] {
    [
        TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        TokenTree::Punct(Punct::new(':', Spacing::Alone)),
    ]
}

fn ident(name: &str) -> TokenTree {
    TokenTree::Ident(Ident::new(name, Span::call_site()))
}

fn group(delimiter: Delimiter, stream: TokenStream) -> TokenTree {
    TokenTree::Group(Group::new(delimiter, stream))
}

/// `::core::compile_error!("message")` at `span`.
fn compile_error(span: Span, message: &str) -> TokenStream {
    let mut literal = Literal::string(message);
    literal.set_span(span);
    let tokens = [
        TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        TokenTree::Punct(Punct::new(':', Spacing::Alone)),
        ident("core"),
        TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        TokenTree::Punct(Punct::new(':', Spacing::Alone)),
        ident("compile_error"),
        TokenTree::Punct(Punct::new('!', Spacing::Alone)),
        group(
            Delimiter::Parenthesis,
            TokenStream::from(TokenTree::Literal(literal)),
        ),
    ];
    tokens
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}
