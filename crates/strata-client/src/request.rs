//! Placing an input where the server reads it: path parameters, the query string, the body.

use bytes::Bytes;
use http::Method;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::ClientError;

/// What a path segment keeps as it is: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A request's target and body, before headers.
#[derive(Debug)]
pub(crate) struct Placed {
    /// The path with its query string.
    pub(crate) path_and_query: String,
    /// The JSON body, for methods that send one.
    pub(crate) body: Option<Bytes>,
}

/// Whether the server reads `method`'s input from the query string (its default sources),
/// not from a body.
fn reads_query(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::DELETE)
}

/// `input` placed for `method` and `path` (`/v1/books/:id`): each `:name` replaced by the field
/// `name`, percent-encoded; the other fields in the query string (GET, HEAD, DELETE: lists as
/// repeated keys, `null` left out) or as a JSON body (POST, PUT, PATCH, QUERY).
pub(crate) fn place<I: Serialize>(
    method: &Method,
    path: &str,
    input: &I,
) -> Result<Placed, ClientError> {
    let mut fields = match serde_json::to_value(input) {
        Ok(Value::Object(fields)) => fields,
        // A unit input (`()`) has no fields.
        Ok(Value::Null) => Map::new(),
        Ok(other) => {
            return Err(ClientError::Input(format!(
                "an input is an object of fields, not {}",
                kind(&other)
            )));
        }
        Err(error) => return Err(ClientError::Input(error.to_string())),
    };
    let mut target = String::with_capacity(path.len() + 16);
    for segment in path.split('/').skip(1) {
        target.push('/');
        match segment.strip_prefix(':') {
            Some(name) => {
                let value = fields.remove(name).ok_or_else(|| {
                    ClientError::Input(format!("the path parameter `{name}` is not in the input"))
                })?;
                let text = text_of(&value).ok_or_else(|| {
                    ClientError::Input(format!(
                        "the path parameter `{name}` is {}, not text",
                        kind(&value)
                    ))
                })?;
                push_segment(&mut target, &text);
            }
            None => target.push_str(segment),
        }
    }
    if target.is_empty() {
        target.push('/');
    }
    if reads_query(method) {
        let query = query_string(&fields);
        if !query.is_empty() {
            target.push('?');
            target.push_str(&query);
        }
        return Ok(Placed {
            path_and_query: target,
            body: None,
        });
    }
    let body =
        serde_json::to_vec(&fields).map_err(|error| ClientError::Input(error.to_string()))?;
    Ok(Placed {
        path_and_query: target,
        body: Some(Bytes::from(body)),
    })
}

/// One path segment, percent-encoded; `.` and `..` escaped, since clients and servers resolve
/// them away as segments.
fn push_segment(target: &mut String, text: &str) {
    if text == "." || text == ".." {
        target.push_str(&text.replace('.', "%2E"));
    } else {
        target.extend(utf8_percent_encode(text, SEGMENT));
    }
}

/// The fields as `application/x-www-form-urlencoded`: lists as repeated keys, `null` as
/// nothing, objects as JSON text.
pub(crate) fn query_string(fields: &Map<String, Value>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in fields {
        match value {
            Value::Array(items) => {
                for item in items {
                    if let Some(text) = text_of(item) {
                        query.append_pair(name, &text);
                    }
                }
            }
            other => {
                if let Some(text) = text_of(other) {
                    query.append_pair(name, &text);
                }
            }
        }
    }
    query.finish()
}

/// A value as the text the server reads back into it: strings as they are, numbers and
/// booleans written out, objects as JSON; `None` for `null` (and lists, which are repeated
/// keys, not one text).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::Null | Value::Array(_) => None,
        Value::String(text) => Some(text.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Object(_) => Some(value.to_string()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn path_parameters_are_encoded_and_leave_the_rest() {
        let placed = place(
            &Method::GET,
            "/v1/shelves/:shelf/books/:id",
            &json!({"shelf": "a b/ü", "id": 7, "genre": ["novel", "poetry"], "q": null}),
        )
        .unwrap();
        assert_eq!(
            placed.path_and_query,
            "/v1/shelves/a%20b%2F%C3%BC/books/7?genre=novel&genre=poetry"
        );
        assert!(placed.body.is_none());
        let dots = place(&Method::DELETE, "/files/:name", &json!({"name": ".."})).unwrap();
        assert_eq!(dots.path_and_query, "/files/%2E%2E");
    }

    #[test]
    fn body_methods_send_the_other_fields_as_json() {
        for method in [
            Method::POST,
            Method::PUT,
            Method::PATCH,
            strata_core::query_method(),
        ] {
            let placed =
                place(&method, "/v1/books/:id", &json!({"id": 1, "title": "Emma"})).unwrap();
            assert_eq!(placed.path_and_query, "/v1/books/1");
            assert_eq!(
                placed.body.unwrap(),
                Bytes::from_static(br#"{"title":"Emma"}"#)
            );
        }
    }

    #[test]
    fn what_cannot_be_placed_is_an_input_error() {
        let missing = place(&Method::GET, "/v1/books/:id", &json!({})).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "the input cannot be sent: the path parameter `id` is not in the input"
        );
        let list = place(&Method::GET, "/v1/books/:id", &json!({"id": [1]})).unwrap_err();
        assert!(list.to_string().contains("is a list, not text"), "{list}");
        let scalar = place(&Method::POST, "/", &json!(5)).unwrap_err();
        assert!(scalar.to_string().contains("not a number"), "{scalar}");
        assert_eq!(place(&Method::GET, "/", &()).unwrap().path_and_query, "/");
    }
}
