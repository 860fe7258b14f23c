//! `#[strata::model]`: everything an input or output type needs, in one attribute.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Expr, ExprLit, Field, Fields, GenericArgument, Lit, Meta,
    PathArguments, Token, Type,
};

/// What the type is for: which of serde's derives it gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Both,
    Input,
    Output,
}

struct Args {
    role: Role,
    krate: syn::Path,
}

fn parse_args(args: TokenStream) -> syn::Result<Args> {
    let mut parsed = Args {
        role: Role::Both,
        krate: syn::parse_quote!(::strata),
    };
    let metas = syn::parse::Parser::parse2(Punctuated::<Meta, Token![,]>::parse_terminated, args)?;
    for meta in metas {
        match &meta {
            Meta::Path(path) if path.is_ident("input") && parsed.role == Role::Both => {
                parsed.role = Role::Input;
            }
            Meta::Path(path) if path.is_ident("output") && parsed.role == Role::Both => {
                parsed.role = Role::Output;
            }
            Meta::NameValue(pair) if pair.path.is_ident("crate") => {
                let Expr::Lit(ExprLit {
                    lit: Lit::Str(path),
                    ..
                }) = &pair.value
                else {
                    return Err(syn::Error::new(
                        pair.value.span(),
                        "write `crate = \"path::to::strata\"`",
                    ));
                };
                parsed.krate = path.parse()?;
            }
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "#[strata::model] takes `input` (deserialized only), `output` (serialized \
                     only), or nothing (both); and `crate = \"..\"` where strata is renamed",
                ));
            }
        }
    }
    Ok(parsed)
}

/// The expansion of `#[strata::model(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = parse_args(args)?;
    let mut input: DeriveInput = syn::parse2(item).map_err(|error| {
        syn::Error::new(
            error.span(),
            "#[strata::model] goes on a struct or an enum (an input, an output, an event)",
        )
    })?;
    refuse_own_derives(&input.attrs)?;
    let krate_text = path_text(&args.krate);
    match &mut input.data {
        Data::Struct(data) => {
            rewrite_fields(&mut data.fields, &krate_text)?;
            check_fields(&data.fields)?;
        }
        Data::Enum(data) => {
            for variant in &mut data.variants {
                rewrite_fields(&mut variant.fields, &krate_text)?;
                check_fields(&variant.fields)?;
            }
        }
        Data::Union(data) => {
            return Err(syn::Error::new(
                data.union_token.span(),
                "#[strata::model] goes on a struct or an enum, not a union",
            ));
        }
    }
    let krate = &args.krate;
    let serde_path = format!("{krate_text}::__private::serde");
    let schemars_path = format!("{krate_text}::__private::schemars");
    let mut derives = Vec::new();
    if args.role != Role::Input {
        derives.push(quote!(#krate::__private::serde::Serialize));
    }
    if args.role != Role::Output {
        derives.push(quote!(#krate::__private::serde::Deserialize));
    }
    derives.push(quote!(#krate::__private::schemars::JsonSchema));
    derives.push(quote!(#krate::__private::garde::Validate));
    let mut added: Vec<Attribute> = vec![
        syn::parse_quote!(#[derive(#(#derives),*)]),
        syn::parse_quote!(#[serde(crate = #serde_path)]),
        syn::parse_quote!(#[schemars(crate = #schemars_path)]),
    ];
    if !has_garde_word(&input.attrs, "allow_unvalidated") {
        added.push(syn::parse_quote!(#[garde(allow_unvalidated)]));
    }
    added.append(&mut input.attrs);
    input.attrs = added;
    let ident = &input.ident;
    // garde's derive names `::garde`, the user's; the traits Strata checks are its own. Two
    // versions of garde would give a wall of unmet bounds: this names the cause once. (A
    // generic type's impl has bounds of its own: checked where it is used.)
    let check = input.generics.params.is_empty().then(|| {
        quote! {
            const _: fn() = #krate::__private::same_garde::<#ident>;
        }
    });
    Ok(quote! {
        #input
        #check
    })
}

fn path_text(path: &syn::Path) -> String {
    path.to_token_stream().to_string().replace(' ', "")
}

/// A field's `#[strata(..)]` words, replaced by the serde and schemars attributes they stand
/// for: `not_null` (an `Option` that may be absent but not `null`: not required, its schema
/// the inner type's, `None` left out when written) and `coerce` (a number or boolean also read from its text:
/// `strata::stages::validate::coerce`, whose deserializer and schema agree).
fn rewrite_fields(fields: &mut Fields, krate: &str) -> syn::Result<()> {
    for field in fields.iter_mut() {
        let mut not_null = false;
        let mut coerce = false;
        let mut kept = Vec::with_capacity(field.attrs.len());
        for attr in field.attrs.drain(..) {
            if !attr.path().is_ident("strata") {
                kept.push(attr);
                continue;
            }
            let words =
                attr.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)?;
            for word in words {
                if word.is_ident("not_null") {
                    not_null = true;
                } else if word.is_ident("coerce") {
                    coerce = true;
                } else {
                    return Err(syn::Error::new(
                        word.span(),
                        "#[strata(..)] on a field takes `not_null` (an Option that may be \
                         absent but not null) and `coerce` (a number or boolean also read from \
                         its text)",
                    ));
                }
            }
        }
        field.attrs = kept;
        if !(not_null || coerce) {
            continue;
        }
        let inner = option_inner(&field.ty);
        if not_null && inner.is_none() {
            return Err(syn::Error::new(
                field.ty.span(),
                "#[strata(not_null)] goes on an `Option<T>` field: absent is `None`, null is \
                 refused",
            ));
        }
        if coerce {
            let read = inner.unwrap_or(&field.ty);
            let name = read.to_token_stream().to_string();
            if !COERCIBLE.contains(&name.as_str()) {
                return Err(syn::Error::new(
                    read.span(),
                    format!(
                        "#[strata(coerce)] reads numbers and booleans from their text; `{name}` \
                         is neither (a field of another type takes its JSON value as it is)"
                    ),
                ));
            }
        }
        let coerce_path = format!("{krate}::__private::coerce");
        let (deserialize, schema): (String, syn::Attribute) = match (inner, not_null, coerce) {
            (Some(inner), true, false) => {
                let inner = inner.to_token_stream().to_string();
                (
                    format!("{krate}::__private::not_null"),
                    syn::parse_quote!(#[schemars(with = #inner)]),
                )
            }
            (Some(inner), true, true) => {
                let with = format!("{coerce_path}::schema::<{}>", inner.to_token_stream());
                (
                    format!("{coerce_path}::not_null"),
                    syn::parse_quote!(#[schemars(schema_with = #with)]),
                )
            }
            (Some(inner), false, _) => {
                let with = format!(
                    "{coerce_path}::optional_schema::<{}>",
                    inner.to_token_stream()
                );
                (
                    format!("{coerce_path}::optional"),
                    syn::parse_quote!(#[schemars(schema_with = #with)]),
                )
            }
            (None, _, _) => {
                let with = format!("{coerce_path}::schema::<{}>", field.ty.to_token_stream());
                (
                    format!("{coerce_path}::value"),
                    syn::parse_quote!(#[schemars(schema_with = #with)]),
                )
            }
        };
        let serde: syn::Attribute = if not_null {
            // Written as it is read: `None` is left out, never `null` (which a server reading
            // the same type refuses), so that a client sending the type is understood.
            syn::parse_quote!(#[serde(
                default,
                deserialize_with = #deserialize,
                skip_serializing_if = "Option::is_none"
            )])
        } else if inner.is_some() {
            syn::parse_quote!(#[serde(default, deserialize_with = #deserialize)])
        } else {
            syn::parse_quote!(#[serde(deserialize_with = #deserialize)])
        };
        field.attrs.push(serde);
        field.attrs.push(schema);
    }
    Ok(())
}

/// The types `#[strata(coerce)]` reads from text (`strata_decode::coerce::Coercible`).
const COERCIBLE: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "bool",
];

/// `T` of an `Option<T>` (written `Option`, `std::option::Option` or `core::option::Option`).
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    match arguments.args.first()? {
        GenericArgument::Type(inner) if arguments.args.len() == 1 => Some(inner),
        _ => None,
    }
}

/// The derives the attribute makes are refused when written too (they would be twice).
fn refuse_own_derives(attrs: &[Attribute]) -> syn::Result<()> {
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("derive")) {
        let paths = attr.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)?;
        for path in paths {
            let Some(last) = path.segments.last() else {
                continue;
            };
            let name = last.ident.to_string();
            if ["Serialize", "Deserialize", "Validate", "JsonSchema"].contains(&name.as_str()) {
                return Err(syn::Error::new(
                    path.span(),
                    format!("remove `{name}` from the derive: #[strata::model] derives it"),
                ));
            }
        }
    }
    Ok(())
}

/// Whether `#[garde(word)]` (or `#[garde(word, ..)]`) is among `attrs`.
fn has_garde_word(attrs: &[Attribute], word: &str) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("garde"))
        .any(|attr| {
            attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .is_ok_and(|metas| metas.iter().any(|meta| meta.path().is_ident(word)))
        })
}

/// Fields without a garde rule need nothing when their type has no rules of its own (text,
/// numbers, and collections of those); a field of another type (a nested model, most
/// likely) would go unchecked, silently: it must say which it wants.
fn check_fields(fields: &Fields) -> syn::Result<()> {
    for field in fields {
        let ruled = field.attrs.iter().any(|attr| attr.path().is_ident("garde"));
        if !ruled && !is_leaf(&field.ty) {
            return Err(unruled(field));
        }
    }
    Ok(())
}

fn unruled(field: &Field) -> syn::Error {
    let name = field.ident.as_ref().map_or_else(
        || "this field".to_owned(),
        |ident| format!("the field `{ident}`"),
    );
    let ty = field.ty.to_token_stream().to_string();
    syn::Error::new(
        if field.ident.is_some() {
            field.ident.span()
        } else {
            field.ty.span()
        },
        format!(
            "{name} of type `{ty}` has no garde rule: write #[garde(dive)] to check its \
             type's own rules (a nested model), or #[garde(skip)] if it has none"
        ),
    )
}

/// Types whose values carry no garde rules of their own: text, numbers, booleans, and
/// options, boxes and collections of those.
fn is_leaf(ty: &Type) -> bool {
    const LEAVES: &[&str] = &[
        "String",
        "str",
        "bool",
        "char",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "f32",
        "f64",
        "Uuid",
        "Value",
        "IpAddr",
        "Ipv4Addr",
        "Ipv6Addr",
        "SocketAddr",
        "Duration",
        "PathBuf",
        "Url",
        "Bytes",
        "UploadedFile",
        "NonZeroU8",
        "NonZeroU16",
        "NonZeroU32",
        "NonZeroU64",
        "NonZeroUsize",
        "RawBody",
    ];
    const WRAPPERS: &[&str] = &[
        "Option", "Vec", "Box", "Arc", "Rc", "VecDeque", "BTreeSet", "HashSet", "Cow", "HashMap",
        "BTreeMap", "IndexMap",
    ];
    match ty {
        Type::Reference(reference) => is_leaf(&reference.elem),
        Type::Array(array) => is_leaf(&array.elem),
        Type::Slice(slice) => is_leaf(&slice.elem),
        Type::Paren(paren) => is_leaf(&paren.elem),
        Type::Group(group) => is_leaf(&group.elem),
        Type::Tuple(tuple) => tuple.elems.iter().all(is_leaf),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            if LEAVES.contains(&name.as_str()) {
                return true;
            }
            if !WRAPPERS.contains(&name.as_str()) {
                return false;
            }
            // Every type argument a leaf (a map's key and value; Cow's lifetime is not one).
            match &last.arguments {
                PathArguments::AngleBracketed(arguments) => {
                    arguments.args.iter().all(|argument| match argument {
                        GenericArgument::Type(ty) => is_leaf(ty),
                        _ => true,
                    })
                }
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(ty: &str) -> bool {
        is_leaf(&syn::parse_str(ty).unwrap())
    }

    #[test]
    fn text_numbers_and_their_collections_are_leaves() {
        for ty in [
            "String",
            "Option<u32>",
            "Vec<String>",
            "HashMap<String, Vec<f64>>",
            "&'static str",
            "Cow<'a, str>",
            "[u8; 4]",
            "(u8, String)",
            "std::collections::BTreeSet<i64>",
            "serde_json::Value",
            "Option<Box<str>>",
        ] {
            assert!(leaf(ty), "{ty}");
        }
        for ty in [
            "Author",
            "Option<Author>",
            "Vec<Book>",
            "HashMap<String, Book>",
            "T",
        ] {
            assert!(!leaf(ty), "{ty}");
        }
    }

    #[test]
    fn the_expansion_derives_and_points_into_strata() {
        let expanded = expand(
            quote!(),
            quote!(
                struct Book {
                    #[garde(length(min = 1))]
                    title: String,
                    year: Option<u16>,
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(expanded.contains("derive (:: strata :: __private :: serde :: Serialize"));
        assert!(expanded.contains(r#"serde (crate = "::strata::__private::serde")"#));
        assert!(expanded.contains("garde (allow_unvalidated)"));
        assert!(expanded.contains("same_garde :: < Book >"));
        let input_only = expand(
            quote!(input),
            quote!(
                struct A {
                    a: u8,
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(!input_only.contains("Serialize"));
        let unruled = expand(
            quote!(),
            quote!(
                struct A {
                    author: Author,
                }
            ),
        )
        .unwrap_err();
        assert!(unruled.to_string().contains("#[garde(dive)]"), "{unruled}");
    }
}
