//! The payloads of stages 1 to 3: what the parse stage finds ([`Parsed`]) and the merged input
//! with the context of the middleware run so far ([`Staged`]).

use serde_json::{Map, Value};
use strata_core::HNil;
use strata_core::PathParams;

use crate::file::UploadedFile;
use crate::input::{Input, JsonObject, TextValue};
use crate::text::PlainQuery;

/// A parsed request body.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum ParsedBody {
    /// No body, or a body the method does not read.
    #[default]
    Empty,
    /// A JSON object, as values.
    Json(Map<String, Value>),
    /// A JSON object, checked but kept as bytes (what the parse stage gives): when it is the
    /// only input, the typed input is read straight from it.
    JsonObject(JsonObject),
    /// An urlencoded form, or the text parts of a multipart body; repeated keys are lists.
    Form(Vec<(String, TextValue)>),
    /// The exact bytes of a body read raw (an input with a [`RawBody`](crate::raw::RawBody)
    /// field), as a nameless file of the declared content type.
    Raw(UploadedFile),
}

/// The query string's parameters, as the parse stage found them: decoded into pairs, or (most
/// queries) plain text that needs no decoding, kept as it is until someone reads it.
///
/// ```
/// use strata_input::{Query, TextValue};
///
/// let query = Query::from(vec![("a".to_owned(), TextValue::One("1".into()))]);
/// assert_eq!(query.len(), 1);
/// assert_eq!(query.into_pairs()[0].0, "a");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Query(QueryRepr);

#[derive(Debug, Clone)]
enum QueryRepr {
    Pairs(Vec<(String, TextValue)>),
    Plain(PlainQuery),
}

impl Default for QueryRepr {
    fn default() -> Self {
        QueryRepr::Pairs(Vec::new())
    }
}

impl Query {
    /// No parameters.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        match &self.0 {
            QueryRepr::Pairs(pairs) => pairs.len(),
            QueryRepr::Plain(plain) => plain.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The query as it arrived, when it needs no decoding.
    pub fn as_plain(&self) -> Option<&PlainQuery> {
        match &self.0 {
            QueryRepr::Plain(plain) => Some(plain),
            QueryRepr::Pairs(_) => None,
        }
    }

    /// The query as it arrived, taken out, when it needs no decoding.
    pub fn into_plain(self) -> Option<PlainQuery> {
        match self.0 {
            QueryRepr::Plain(plain) => Some(plain),
            QueryRepr::Pairs(_) => None,
        }
    }

    /// The parameters; repeated keys are lists.
    pub fn to_pairs(&self) -> Vec<(String, TextValue)> {
        match &self.0 {
            QueryRepr::Pairs(pairs) => pairs.clone(),
            QueryRepr::Plain(plain) => plain.to_pairs(),
        }
    }

    /// The parameters, taken out; repeated keys are lists.
    pub fn into_pairs(self) -> Vec<(String, TextValue)> {
        match self.0 {
            QueryRepr::Pairs(pairs) => pairs,
            QueryRepr::Plain(plain) => plain.to_pairs(),
        }
    }
}

impl From<Vec<(String, TextValue)>> for Query {
    fn from(pairs: Vec<(String, TextValue)>) -> Self {
        Self(QueryRepr::Pairs(pairs))
    }
}

impl From<PlainQuery> for Query {
    fn from(plain: PlainQuery) -> Self {
        Self(QueryRepr::Plain(plain))
    }
}

impl PartialEq for Query {
    /// Equal when the parameters are, however they are kept (`a=1&&b` is `a=1&b`).
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (QueryRepr::Plain(a), QueryRepr::Plain(b)) => a.pairs().eq(b.pairs()),
            _ => self.to_pairs() == other.to_pairs(),
        }
    }
}

/// The request after the parse stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The query string's parameters.
    pub query: Query,
    /// The body.
    pub body: ParsedBody,
    /// The path parameters.
    pub params: PathParams,
    /// The files of a `multipart/form-data` body, by field name (uploads enabled only).
    pub files: Vec<(String, Vec<UploadedFile>)>,
}

/// The request after the combine stage and during the middleware stage: the merged input and the
/// context accumulated so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Staged<C = HNil> {
    /// The merged input.
    pub input: Input,
    /// The context.
    pub ctx: C,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_equal_when_their_parameters_are() {
        let plain = |text: &str| {
            let uri: http::Uri = format!("/?{text}").parse().unwrap();
            Query::from(crate::text::PlainQuery::check(&uri, 100).unwrap().unwrap())
        };
        let pairs = Query::from(vec![
            ("a".to_owned(), TextValue::One("1".into())),
            ("b".to_owned(), TextValue::One(String::new())),
        ]);
        assert_eq!(plain("a=1&&b"), plain("a=1&b"));
        assert_eq!(plain("a=1&&b"), pairs);
        assert_eq!(pairs, plain("a=1&b="));
        assert_ne!(plain("a=1"), plain("a=2"));
    }
}
