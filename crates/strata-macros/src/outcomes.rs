//! `#[derive(strata::Outcomes)]`: an enum whose variants are an operation's outcomes.
//!
//! Each variant says its status (`#[outcome(status = 201)]`, or several:
//! `#[outcome(status(200, 203))]` with a field `#[outcome(status)]` carrying the one sent);
//! a tuple variant of one field has that field as its body, a unit variant has no body, and a
//! variant with named fields marks each: `#[outcome(body)]` (at most one),
//! `#[outcome(header = "location")]`, `#[outcome(status)]`. Doc comments describe variants
//! and header fields.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Expr, ExprLit, Fields, Ident, Lit, LitInt, LitStr, Type};

/// The derive's expansion, or the first problem found.
pub(crate) fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    let krate = crate_path(&input.attrs)?;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "#[derive(Outcomes)] is for an enum whose variants are the outcomes",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "#[derive(Outcomes)] does not take generic parameters: name the body types",
        ));
    }
    if data.variants.is_empty() {
        return Err(syn::Error::new(
            input.ident.span(),
            "an operation needs at least one outcome",
        ));
    }
    let mut variants = Vec::new();
    for variant in &data.variants {
        variants.push(Variant::parse(variant)?);
    }
    // One status, one variant: a client reads a response by its status.
    for (index, variant) in variants.iter().enumerate() {
        for status in &variant.statuses {
            if let Some(other) = variants[..index]
                .iter()
                .find(|other| other.statuses.contains(status))
            {
                return Err(syn::Error::new(
                    variant.ident.span(),
                    format!(
                        "status {status} is declared by `{}` already: a client could not tell \
                         them apart",
                        other.ident
                    ),
                ));
            }
        }
    }
    Ok(generate(&krate, &input.ident, &variants))
}

/// `#[outcome(crate = "path::to::strata")]` on the enum, or `::strata`.
fn crate_path(attrs: &[Attribute]) -> syn::Result<syn::Path> {
    let mut krate = syn::parse_quote!(::strata);
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("outcome")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path: LitStr = meta.value()?.parse()?;
                krate = path.parse()?;
                Ok(())
            } else {
                Err(meta.error("on the enum, #[outcome(..)] takes only `crate = \"..\"`"))
            }
        })?;
    }
    Ok(krate)
}

/// The text of the doc comments, lines joined.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join("\n").trim().to_owned()
}

/// What a field of a variant is.
enum Role {
    Body,
    Header { name: String, doc: String },
    Status,
}

struct Field {
    /// The binding in patterns (the field's name, or `f0` for a tuple variant's).
    binding: Ident,
    /// The field's name, for named fields.
    name: Option<Ident>,
    ty: Type,
    role: Role,
}

struct Variant {
    ident: Ident,
    statuses: Vec<u16>,
    doc: String,
    /// `None`: a unit variant; `Some(false)`: a tuple variant; `Some(true)`: named fields.
    named: Option<bool>,
    fields: Vec<Field>,
}

impl Variant {
    fn parse(variant: &syn::Variant) -> syn::Result<Self> {
        let mut statuses = Vec::new();
        for attr in variant
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("outcome"))
        {
            statuses.extend(attr.parse_args_with(parse_statuses)?);
        }
        if statuses.is_empty() {
            return Err(syn::Error::new(
                variant.ident.span(),
                "each outcome says its status: #[outcome(status = 201)]",
            ));
        }
        statuses.dedup();
        let (named, fields) = match &variant.fields {
            Fields::Unit => (None, Vec::new()),
            Fields::Unnamed(fields) => {
                if fields.unnamed.len() != 1 {
                    return Err(syn::Error::new(
                        fields.span(),
                        "a tuple outcome has one field, its body; name the fields to add headers \
                         (#[outcome(header = \"location\")])",
                    ));
                }
                let field = &fields.unnamed[0];
                let binding = format_ident!("f0");
                (
                    Some(false),
                    vec![Field {
                        binding,
                        name: None,
                        ty: field.ty.clone(),
                        role: Role::Body,
                    }],
                )
            }
            Fields::Named(named) => {
                let mut fields = Vec::new();
                for field in &named.named {
                    let name = field.ident.clone().expect("named fields have names");
                    let role = field_role(field)?;
                    fields.push(Field {
                        binding: name.clone(),
                        name: Some(name),
                        ty: field.ty.clone(),
                        role,
                    });
                }
                (Some(true), fields)
            }
        };
        let count = |wanted: fn(&Role) -> bool| fields.iter().filter(|f| wanted(&f.role)).count();
        if count(|role| matches!(role, Role::Body)) > 1 {
            return Err(syn::Error::new(
                variant.ident.span(),
                "an outcome has at most one #[outcome(body)] field",
            ));
        }
        let status_fields = count(|role| matches!(role, Role::Status));
        if status_fields > 1 {
            return Err(syn::Error::new(
                variant.ident.span(),
                "an outcome has at most one #[outcome(status)] field",
            ));
        }
        if statuses.len() > 1 && status_fields == 0 {
            return Err(syn::Error::new(
                variant.ident.span(),
                "an outcome with several statuses carries the one it is sent with: add a field \
                 `#[outcome(status)] status: StatusCode`",
            ));
        }
        Ok(Self {
            ident: variant.ident.clone(),
            statuses,
            doc: doc_text(&variant.attrs),
            named,
            fields,
        })
    }

    fn body(&self) -> Option<&Field> {
        self.fields.iter().find(|f| matches!(f.role, Role::Body))
    }

    /// The pattern binding every field: `Self::Created { book, location }`, `Self::Conflict(f0)`.
    fn pattern(&self) -> TokenStream {
        let ident = &self.ident;
        let bindings = self.fields.iter().map(|f| &f.binding);
        match self.named {
            None => quote!(Self::#ident),
            Some(false) => quote!(Self::#ident(#(#bindings),*)),
            Some(true) => quote!(Self::#ident { #(#bindings),* }),
        }
    }
}

/// `status = 201` or `status(200, 203)`.
fn parse_statuses(input: syn::parse::ParseStream<'_>) -> syn::Result<Vec<u16>> {
    let name: Ident = input.parse()?;
    if name != "status" {
        return Err(syn::Error::new(
            name.span(),
            "a variant takes #[outcome(status = 201)] or #[outcome(status(200, 203))]",
        ));
    }
    if input.peek(syn::Token![=]) {
        input.parse::<syn::Token![=]>()?;
        let status: LitInt = input.parse()?;
        return Ok(vec![status_of(&status)?]);
    }
    let content;
    syn::parenthesized!(content in input);
    let literals =
        content.parse_terminated(<LitInt as syn::parse::Parse>::parse, syn::Token![,])?;
    literals.iter().map(status_of).collect()
}

fn status_of(literal: &LitInt) -> syn::Result<u16> {
    let status: u16 = literal.base10_parse()?;
    if (100..=599).contains(&status) {
        Ok(status)
    } else {
        Err(syn::Error::new(
            literal.span(),
            "a status is a number from 100 to 599",
        ))
    }
}

/// What `#[outcome(..)]` on a named field says it is.
fn field_role(field: &syn::Field) -> syn::Result<Role> {
    let mut role = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("outcome")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("body") {
                role = Some(Role::Body);
            } else if meta.path.is_ident("status") {
                role = Some(Role::Status);
            } else if meta.path.is_ident("header") {
                let name: LitStr = meta.value()?.parse()?;
                let text = name.value().to_ascii_lowercase();
                let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
                if text.is_empty() || !text.chars().all(token) {
                    return Err(syn::Error::new(
                        name.span(),
                        "a header name is a token: letters, digits and !#$%&'*+-.^_`|~",
                    ));
                }
                role = Some(Role::Header {
                    name: text,
                    doc: doc_text(&field.attrs),
                });
            } else {
                return Err(meta.error(
                    "a field is #[outcome(body)], #[outcome(header = \"name\")] or \
                     #[outcome(status)]",
                ));
            }
            Ok(())
        })?;
    }
    role.ok_or_else(|| {
        syn::Error::new(
            field.span(),
            "say what this field is: #[outcome(body)], #[outcome(header = \"name\")] or \
             #[outcome(status)]",
        )
    })
}

#[allow(clippy::too_many_lines)] // one impl per trait, each a match over the variants
fn generate(krate: &syn::Path, name: &Ident, variants: &[Variant]) -> TokenStream {
    let private = quote!(#krate::__private);
    let core = quote!(#private::strata_core);
    let outcome = quote!(#core::outcome);
    let http = quote!(#private::http);
    let type_name = name.to_string();

    let declared = variants.iter().map(|variant| {
        let ident = variant.ident.to_string();
        let statuses = &variant.statuses;
        let doc = &variant.doc;
        let headers = variant.fields.iter().filter_map(|field| match &field.role {
            Role::Header { name, doc } => {
                let ty = &field.ty;
                Some(quote! {
                    .header(#core::ResponseHeader::new(#name, #doc)
                        .schema(<#ty as #outcome::HeaderField>::header_schema()))
                })
            }
            _ => None,
        });
        let body = variant.body().map(|field| {
            let ty = &field.ty;
            quote!(.body(#private::schemars::SchemaGenerator::subschema_for::<#ty>))
        });
        quote! {
            #outcome::DeclaredOutcome::new(#ident, &[#(#statuses),*])
                .description(#doc)
                #(#headers)*
                #body
        }
    });
    let all_statuses = variants.iter().flat_map(|v| v.statuses.iter());

    let status_arms = variants.iter().map(|variant| {
        let pattern = variant.pattern();
        if let Some(field) = variant
            .fields
            .iter()
            .find(|f| matches!(f.role, Role::Status))
        {
            let binding = &field.binding;
            quote!(#pattern => *#binding)
        } else {
            let status = variant.statuses[0];
            quote! {
                #pattern => #http::StatusCode::from_u16(#status)
                    .unwrap_or(#http::StatusCode::INTERNAL_SERVER_ERROR)
            }
        }
    });
    let header_arms = variants.iter().map(|variant| {
        let pattern = variant.pattern();
        let fields = variant.fields.iter().filter_map(|field| match &field.role {
            Role::Header { name, .. } => {
                let binding = &field.binding;
                Some(quote!((#name, #outcome::HeaderField::to_header(#binding))))
            }
            _ => None,
        });
        quote!(#pattern => #outcome::write_headers(&[#(#fields),*]))
    });
    let has_body_arms = variants.iter().map(|variant| {
        let pattern = variant.pattern();
        let has = variant.body().is_some();
        quote!(#pattern => #has)
    });
    let message_arms = variants.iter().map(|variant| {
        let pattern = variant.pattern();
        if let Some(line) = variant.doc.lines().next().filter(|line| !line.is_empty()) {
            quote!(#pattern => #line)
        } else {
            quote! {
                #pattern => #outcome::Outcomes::status(self).canonical_reason().unwrap_or("Error")
            }
        }
    });
    let serialize_arms = variants.iter().map(|variant| {
        let pattern = variant.pattern();
        if let Some(field) = variant.body() {
            let binding = &field.binding;
            quote!(#pattern => #private::serde::Serialize::serialize(#binding, serializer))
        } else {
            quote!(#pattern => serializer.serialize_unit())
        }
    });
    let validate_arms = variants.iter().map(|variant| {
        let pattern = variant.pattern();
        if let Some(field) = variant.body() {
            let binding = &field.binding;
            let ty = &field.ty;
            quote! {
                #pattern => #private::garde::Validate::validate_into(
                    #binding,
                    &<<#ty as #private::garde::Validate>::Context as ::core::default::Default>::default(),
                    parent,
                    report,
                )
            }
        } else {
            quote!(#pattern => {})
        }
    });
    let read_arms = variants.iter().map(|variant| {
        let ident = &variant.ident;
        let statuses = &variant.statuses;
        let values = variant.fields.iter().map(|field| {
            let ty = &field.ty;
            let value = match &field.role {
                Role::Body => quote!(#outcome::read_body::<#ty>(body)?),
                Role::Header { name, .. } => quote!(#outcome::read_header::<#ty>(headers, #name)?),
                Role::Status => quote!(status),
            };
            match &field.name {
                Some(name) => quote!(#name: #value),
                None => value,
            }
        });
        let built = match variant.named {
            None => quote!(Self::#ident),
            Some(false) => quote!(Self::#ident(#(#values),*)),
            Some(true) => quote!(Self::#ident { #(#values),* }),
        };
        quote!(#(#statuses)|* => ::core::result::Result::Ok(#built))
    });

    quote! {
        #[automatically_derived]
        impl #outcome::Outcomes for #name {
            fn declared() -> ::std::vec::Vec<#outcome::DeclaredOutcome> {
                ::std::vec![#(#declared),*]
            }

            fn declares(status: #http::StatusCode) -> bool {
                ::core::matches!(status.as_u16(), #(#all_statuses)|*)
            }

            #[allow(unused_variables)]
            fn status(&self) -> #http::StatusCode {
                match self { #(#status_arms,)* }
            }

            #[allow(unused_variables)]
            fn headers(&self) -> ::core::result::Result<#http::HeaderMap, #outcome::OutcomeError> {
                match self { #(#header_arms,)* }
            }

            #[allow(unused_variables)]
            fn has_body(&self) -> bool {
                match self { #(#has_body_arms,)* }
            }

            #[allow(unused_variables)]
            fn message(&self) -> &'static str {
                match self { #(#message_arms,)* }
            }

            #[allow(unused_variables)]
            fn serialize_body<S: #private::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                match self { #(#serialize_arms,)* }
            }

            #[allow(unused_variables)]
            fn validate_body(
                &self,
                parent: &mut dyn FnMut() -> #private::garde::Path,
                report: &mut #private::garde::Report,
            ) {
                match self { #(#validate_arms,)* }
            }

            #[allow(unused_variables)]
            fn from_parts(
                status: #http::StatusCode,
                headers: &#http::HeaderMap,
                body: &[u8],
            ) -> ::core::result::Result<Self, #outcome::OutcomeError> {
                match status.as_u16() {
                    #(#read_arms,)*
                    _ => ::core::result::Result::Err(#outcome::OutcomeError::new(
                        "",
                        ::std::format!("{status} is not an outcome of {}", #type_name),
                    )),
                }
            }
        }

        #[automatically_derived]
        impl #private::strata_output::HandlerOutput for #name {
            type Body = #private::strata_output::OutcomeBody<Self>;

            fn into_parts(self) -> (#http::StatusCode, #http::HeaderMap, Self::Body) {
                let status = #outcome::Outcomes::status(&self);
                let headers = #outcome::Outcomes::headers(&self).unwrap_or_default();
                (status, headers, #private::strata_output::OutcomeBody(self))
            }

            fn into_checked_parts(
                self,
            ) -> ::core::result::Result<
                (#http::StatusCode, #http::HeaderMap, Self::Body),
                #core::ApiError,
            > {
                #private::strata_output::outcome::checked_parts(self)
            }

            fn into_streamed(
                self,
                _range: &#private::strata_output::RangeHeaders,
            ) -> ::core::result::Result<#core::Output, Self> {
                #private::strata_output::outcome::streamed(self)
            }

            fn outcomes() -> ::core::option::Option<::std::vec::Vec<#outcome::DeclaredOutcome>> {
                ::core::option::Option::Some(<Self as #outcome::Outcomes>::declared())
            }
        }

        #[automatically_derived]
        impl #outcome::FromResponse for #name {
            fn from_response<R: #outcome::ResponseReader>(
                reader: &R,
                status: #http::StatusCode,
                headers: &#http::HeaderMap,
                body: &[u8],
            ) -> ::core::result::Result<Self, R::Error> {
                reader.outcome::<Self>(status, headers, body)
            }
        }
    }
}
