//! Placing an input where the server reads it: path parameters, the query string, the body (JSON,
//! a multipart form with the input's files, or a raw body).

use std::borrow::Cow;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde_json::Value;
use strata_input::multipart_writer::{self, Boundary, HeaderItem, part_header};
use strata_input::raw::RAW_FIELD;
use strata_input::{
    FILE_PLACEHOLDER, InputSource, InputSources, UploadedFile, capture_files, looks_like_header,
};

use strata_core::BoxError;

use crate::ClientError;
use crate::body::{self, Body, Piece};
use crate::fields::{self, AsObject, Field, fields_of};

/// What a path segment keeps as it is: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The media type of a JSON body.
pub(crate) const JSON: &str = "application/json";

/// A request's target and body, before headers.
#[derive(Debug)]
pub(crate) struct Placed {
    /// The base URL, the path and the query string.
    pub(crate) uri: String,
    /// The body and its content type, for requests that send one.
    pub(crate) body: Option<(String, Body)>,
    /// Fields sent as headers (names that look like headers, when the method reads headers).
    pub(crate) headers: Vec<(String, String)>,
}

/// Inserts the fields [`place`] put in headers into `headers`.
pub(crate) fn insert_headers(
    headers: &mut HeaderMap,
    fields: Vec<(String, String)>,
) -> Result<(), ClientError> {
    for (name, value) in fields {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| ClientError::Input(format!("the header field {name}: {error}")))?;
        let value = HeaderValue::try_from(value)
            .map_err(|error| ClientError::Input(format!("the header field {name}: {error}")))?;
        headers.insert(name, value);
    }
    Ok(())
}

/// Whether the server reads `method`'s input from the query string, not from a body: its
/// sources for the method have no body (by default GET, HEAD and DELETE).
fn reads_query(method: &Method, sources: &InputSources) -> bool {
    !sources.for_method(method).contains(&InputSource::Body)
}

/// `input` placed for `method` and `path` (`/v1/books/:id`) of the API at `base_url` as a
/// server with `sources` reads it: each `:name` replaced by the field `name`, percent-encoded;
/// the other fields in the query string when the method's sources have no body (by default
/// GET, HEAD, DELETE: lists as repeated keys, `null` left out), else as a JSON body (POST, PUT,
/// PATCH, QUERY). An input with files (`UploadedFile` fields) is a `multipart/form-data` body;
/// one with a `raw: RawBody` is that body, of its own type, the other fields in the query
/// string. Fields go in the order the input writes them (a struct's declaration order).
pub(crate) fn place<I: Serialize>(
    method: &Method,
    base_url: &str,
    path: &str,
    input: &I,
    sources: &InputSources,
) -> Result<Placed, ClientError> {
    let mut uri = String::with_capacity(base_url.len() + path.len() + 16);
    uri.push_str(base_url);
    let reads_headers = sources.for_method(method).contains(&InputSource::Headers);
    // The common body call (no path parameter, no file, no header): the input written once,
    // straight to JSON; anything else is taken apart into its fields.
    if !path.contains(':') && !reads_query(method, sources) && !reads_headers {
        let (json, files) = capture_files(|| serde_json::to_vec(input));
        let json = json.map_err(|error| ClientError::Input(error.to_string()))?;
        if files.is_empty() && json.first() == Some(&b'{') {
            uri.push_str(path);
            return Ok(Placed {
                uri,
                body: Some((JSON.to_owned(), Body::from(json))),
                headers: Vec::new(),
            });
        }
    }
    let (fields, files) = capture_files(|| fields_of(input));
    let mut fields = fields.map_err(|error| ClientError::Input(error.to_string()))?;
    for segment in path.split('/').skip(1) {
        uri.push('/');
        match segment.strip_prefix(':') {
            Some(name) => {
                let value = fields::take(&mut fields, name).ok_or_else(|| {
                    ClientError::Input(format!("the path parameter `{name}` is not in the input"))
                })?;
                let text = text_of(&value).ok_or_else(|| {
                    ClientError::Input(format!(
                        "the path parameter `{name}` is {}, not text",
                        kind(&value)
                    ))
                })?;
                push_segment(&mut uri, &text);
            }
            None => uri.push_str(segment),
        }
    }
    if uri.len() == base_url.len() {
        uri.push('/');
    }
    let mut headers = Vec::new();
    if reads_headers {
        let mut index = 0;
        while index < fields.len() {
            let (name, value) = &fields[index];
            if looks_like_header(name) {
                if let Some(text) = text_of(value) {
                    headers.push((name.clone().into_owned(), text.into_owned()));
                }
                fields.remove(index);
            } else {
                index += 1;
            }
        }
    }
    let raw = fields
        .iter()
        .enumerate()
        .find_map(|(position, (name, value))| {
            let index = file_index(value).filter(|_| name == RAW_FIELD)?;
            Some((position, index))
        });
    if let Some((position, index)) = raw {
        fields.remove(position);
        let file = &files[index];
        push_query(&mut uri, &fields);
        return Ok(Placed {
            uri,
            body: Some((file.mimetype().to_owned(), file_body(file)?)),
            headers,
        });
    }
    if !files.is_empty() {
        return Ok(Placed {
            uri,
            body: Some(multipart(&fields, &files)?),
            headers,
        });
    }
    if reads_only_cookies(method, sources) {
        headers.extend(cookie_header(&fields));
        return Ok(Placed {
            uri,
            body: None,
            headers,
        });
    }
    if reads_query(method, sources) {
        push_query(&mut uri, &fields);
        return Ok(Placed {
            uri,
            body: None,
            headers,
        });
    }
    let body = serde_json::to_vec(&AsObject(&fields))
        .map_err(|error| ClientError::Input(error.to_string()))?;
    Ok(Placed {
        uri,
        body: Some((JSON.to_owned(), Body::from(body))),
        headers,
    })
}

/// Whether the only text source of `method` is its cookies (no body, no query): its fields
/// then travel as cookies, the OpenAPI document's rule too.
fn reads_only_cookies(method: &Method, sources: &InputSources) -> bool {
    let read = sources.for_method(method);
    read.iter().any(|source| source.is_cookies())
        && !read.contains(&InputSource::Body)
        && !read.contains(&InputSource::Query)
}

/// The text fields as one `Cookie` header, values percent-encoded; `None` without any.
fn cookie_header(fields: &[Field]) -> Option<(String, String)> {
    let pairs: Vec<String> = fields
        .iter()
        .filter_map(|(name, value)| {
            let text = text_of(value)?;
            Some(format!(
                "{name}={}",
                utf8_percent_encode(&text, NON_ALPHANUMERIC)
            ))
        })
        .collect();
    (!pairs.is_empty()).then(|| ("cookie".to_owned(), pairs.join("; ")))
}

/// `?` and the fields' query string, when there are any.
fn push_query(target: &mut String, fields: &[Field]) {
    let query = query_string(fields);
    if !query.is_empty() {
        target.push('?');
        target.push_str(&query);
    }
}

/// The index of the captured file a value stands for (`{"$strata:file": 2}`).
fn file_index(value: &Value) -> Option<usize> {
    match value {
        Value::Object(map) if map.len() == 1 => map
            .get(FILE_PLACEHOLDER)
            .and_then(Value::as_u64)
            .and_then(|index| usize::try_from(index).ok()),
        _ => None,
    }
}

/// The fields as `multipart/form-data` (RFC 7578): files as file parts of their name and type,
/// lists as repeated parts, text as text parts, `null` as nothing; the content type with its
/// boundary. Part headers are written by `strata_input::multipart_writer`, as `MultipartForm`
/// writes them: what the server would not read back as sent (a control character in a name, a
/// media type that is not one, ...) is refused, naming the field and the file.
///
/// Parts go in the input's order, but a [`StreamedFile`](strata_input::StreamedFile) goes last:
/// the server reads the fields before it first. A file on disk (an upload received past the
/// server's spool threshold, forwarded) and a streamed file are read as they are sent, never
/// held whole; the boundary, which cannot be checked against bytes not yet read, is then 128
/// random bits long.
fn multipart(fields: &[Field], files: &[UploadedFile]) -> Result<(String, Body), ClientError> {
    let mut parts: Vec<(&str, Part<'_>)> = Vec::new();
    let mut last = Vec::new();
    for (name, value) in fields {
        let values = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for value in values {
            if let Some(index) = file_index(value) {
                let file = &files[index];
                let part = (name.as_ref(), Part::File(file, contents(file)?));
                if file.is_streamed() {
                    last.push(part);
                } else {
                    parts.push(part);
                }
            } else if let Some(text) = text_of(value) {
                parts.push((name, Part::Text(text)));
            }
        }
    }
    parts.append(&mut last);
    let unseen = parts
        .iter()
        .any(|(_, part)| matches!(part, Part::File(_, Contents::Unseen(_))));
    let mut boundary = if unseen {
        Boundary::unguessable()
    } else {
        Boundary::new()
    };
    let mut headers = Vec::with_capacity(parts.len());
    for (name, part) in &parts {
        let file = match part {
            Part::Text(text) => {
                boundary.avoid(text.as_bytes());
                None
            }
            Part::File(file, Contents::Bytes(bytes)) => {
                boundary.avoid(bytes);
                Some(*file)
            }
            Part::File(file, Contents::Unseen(_)) => Some(*file),
        };
        let header = part_header(name, file).map_err(|error| {
            // The error names its value; a media type's is named with its file.
            ClientError::Input(match file {
                Some(file) if error.item() == HeaderItem::MediaType => format!(
                    "the file {} of the field `{name}`: {error}",
                    multipart_writer::shown(file.name())
                ),
                _ => format!("the field `{name}`: {error}"),
            })
        })?;
        headers.push(header);
    }
    let boundary = boundary.as_str();
    let mut pieces = Vec::new();
    let mut text = Vec::new();
    for ((_, part), header) in parts.into_iter().zip(headers) {
        text.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        text.extend_from_slice(header.as_bytes());
        match part {
            Part::Text(value) => text.extend_from_slice(value.as_bytes()),
            Part::File(_, Contents::Bytes(bytes)) => text.extend_from_slice(&bytes),
            Part::File(_, Contents::Unseen(piece)) => {
                pieces.push(Piece::Bytes(Bytes::from(std::mem::take(&mut text))));
                pieces.push(piece);
            }
        }
        text.extend_from_slice(b"\r\n");
    }
    text.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let content_type = format!("multipart/form-data; boundary={boundary}");
    if pieces.is_empty() {
        return Ok((content_type, Body::from(text)));
    }
    pieces.push(Piece::Bytes(Bytes::from(text)));
    Ok((content_type, body::concat(pieces)))
}

/// A part of a form.
enum Part<'f> {
    Text(Cow<'f, str>),
    /// A file and its bytes.
    File(&'f UploadedFile, Contents),
}

/// A file's bytes to send: in memory, or read as they are sent.
enum Contents {
    Bytes(Bytes),
    Unseen(Piece),
}

/// The bytes of a file to send: a file in memory's as they are; a file on disk's (an upload
/// received past the server's spool threshold, forwarded) and a streamed file's read as they
/// are sent.
fn contents(file: &UploadedFile) -> Result<Contents, ClientError> {
    if let Some(data) = file.data() {
        return Ok(Contents::Bytes(data.clone()));
    }
    if let Some(path) = file.path() {
        // Checked now (one `stat`), so that a file gone is the caller's error, named, rather
        // than a request cut short; it is read as it is sent.
        let size = std::fs::metadata(path).map(|metadata| metadata.len());
        return match size {
            Ok(size) if size >= file.len() => {
                Ok(Contents::Unseen(Piece::Disk(path.to_owned(), file.len())))
            }
            Ok(size) => Err(ClientError::Input(format!(
                "the file {}: cannot read it from disk: {} holds {size} bytes, not {}",
                multipart_writer::shown(file.name()),
                path.display(),
                file.len()
            ))),
            Err(error) => Err(ClientError::Input(format!(
                "the file {}: cannot read it from disk: {error}",
                multipart_writer::shown(file.name())
            ))),
        };
    }
    let stream = file
        .take_stream()
        .and_then(|streamed| streamed.take_bytes())
        .ok_or_else(|| {
            ClientError::Input(format!(
                "the streamed file {} was sent already: a stream is read once",
                multipart_writer::shown(file.name())
            ))
        })?;
    Ok(Contents::Unseen(Piece::Stream(Box::pin(BoxedErrors(
        stream,
    )))))
}

/// The body of a file sent as the whole body (a raw body).
fn file_body(file: &UploadedFile) -> Result<Body, ClientError> {
    Ok(match contents(file)? {
        Contents::Bytes(bytes) => Body::from(bytes),
        Contents::Unseen(piece) => body::concat(vec![piece]),
    })
}

/// A streamed file's chunks, their errors boxed.
struct BoxedErrors(strata_input::stream::ByteStream);

impl futures_core::Stream for BoxedErrors {
    type Item = Result<Bytes, BoxError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0
            .as_mut()
            .poll_next(cx)
            .map(|item| item.map(|chunk| chunk.map_err(BoxError::from)))
    }
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
pub(crate) fn query_string(fields: &[Field]) -> String {
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
fn text_of(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::Null | Value::Array(_) => None,
        Value::String(text) => Some(Cow::Borrowed(text)),
        Value::Bool(b) => Some(Cow::Owned(b.to_string())),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Object(_) => Some(Cow::Owned(value.to_string())),
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

    /// A body held in memory, and its content type.
    fn in_memory(body: Option<(String, Body)>) -> (String, Bytes) {
        let (content_type, body) = body.expect("a body");
        (content_type, body.into_bytes().expect("held in memory"))
    }

    /// Placed as a server with the default sources reads it.
    fn place<I: Serialize>(method: &Method, path: &str, input: &I) -> Result<Placed, ClientError> {
        super::place(method, "", path, input, &InputSources::default())
    }

    #[test]
    fn the_server_s_sources_decide_between_query_and_body() {
        let mut sources = InputSources::default();
        assert!(sources.set(&Method::POST, [InputSource::Query, InputSource::Params]));
        assert!(sources.set(&Method::GET, [InputSource::Body, InputSource::Params]));
        let post = super::place(&Method::POST, "", "/a", &json!({"q": "x y"}), &sources).unwrap();
        assert_eq!(post.uri, "/a?q=x+y");
        assert!(post.body.is_none());
        let get = super::place(&Method::GET, "", "/a", &json!({"q": 1}), &sources).unwrap();
        assert_eq!(get.uri, "/a");
        assert_eq!(in_memory(get.body).1, Bytes::from_static(br#"{"q":1}"#));
    }

    #[test]
    fn path_parameters_are_encoded_and_leave_the_rest() {
        let placed = place(
            &Method::GET,
            "/v1/shelves/:shelf/books/:id",
            &json!({"shelf": "a b/ü", "id": 7, "genre": ["novel", "poetry"], "q": null}),
        )
        .unwrap();
        assert_eq!(
            placed.uri,
            "/v1/shelves/a%20b%2F%C3%BC/books/7?genre=novel&genre=poetry"
        );
        assert!(placed.body.is_none());
        let dots = place(&Method::DELETE, "/files/:name", &json!({"name": ".."})).unwrap();
        assert_eq!(dots.uri, "/files/%2E%2E");
    }

    #[test]
    fn the_target_follows_the_base_url_and_the_input_s_order() {
        #[derive(Serialize)]
        struct Search {
            shelf: &'static str,
            zeta: u8,
            alpha: &'static str,
        }
        let input = Search {
            shelf: "s",
            zeta: 1,
            alpha: "a",
        };
        let sources = InputSources::default();
        let placed = super::place(
            &Method::GET,
            "http://127.0.0.1:1/api",
            "/v1/:shelf",
            &input,
            &sources,
        )
        .unwrap();
        assert_eq!(placed.uri, "http://127.0.0.1:1/api/v1/s?zeta=1&alpha=a");
        let root = super::place(&Method::GET, "http://h", "/", &(), &sources).unwrap();
        assert_eq!(root.uri, "http://h/");
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
            assert_eq!(placed.uri, "/v1/books/1");
            assert_eq!(
                in_memory(placed.body),
                (
                    "application/json".to_owned(),
                    Bytes::from_static(br#"{"title":"Emma"}"#)
                )
            );
        }
    }

    #[test]
    fn files_make_a_form_in_the_input_s_order() {
        #[derive(Serialize)]
        struct CoverUpload {
            id: u32,
            caption: Option<String>,
            tags: Vec<String>,
            cover: UploadedFile,
        }
        let cover = CoverUpload {
            id: 3,
            caption: Some("a \"quoted\" caption".into()),
            tags: vec!["a".into(), "b".into()],
            cover: UploadedFile::new("c\"1.png", "image/png", &b"PNG"[..]),
        };
        let placed = place(&Method::POST, "/v1/books/:id/cover", &cover).unwrap();
        assert_eq!(placed.uri, "/v1/books/3/cover");
        let (content_type, body) = in_memory(placed.body);
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        let expected = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\n\
             a \"quoted\" caption\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\na\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\nb\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"cover\"; \
             filename=\"c\\\"1.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n\
             --{boundary}--\r\n"
        );
        assert_eq!(String::from_utf8_lossy(&body), expected);
    }

    #[tokio::test]
    async fn a_file_on_disk_is_read_as_it_is_sent_and_a_missing_one_is_an_input_error() {
        use http_body_util::BodyExt;
        #[derive(Serialize)]
        struct Upload {
            doc: UploadedFile,
        }
        let path = std::env::temp_dir().join(format!("strata-client-{}.bin", std::process::id()));
        std::fs::write(&path, b"on disk, and more").unwrap();
        let upload = Upload {
            doc: UploadedFile::on_disk("d.bin", "", &path, 7, ()),
        };
        let (_, body) = place(&Method::POST, "/", &upload).unwrap().body.unwrap();
        assert!(body.try_clone().is_none(), "read as it is sent, not held");
        let size = http_body::Body::size_hint(&body).exact().unwrap();
        let body = body.collect().await.unwrap().to_bytes();
        assert_eq!(size, body.len() as u64, "its length is known");
        let body = String::from_utf8_lossy(&body).into_owned();
        assert!(
            body.contains("\r\n\r\non disk\r\n--"),
            "its first 7 bytes: {body}"
        );
        let longer = Upload {
            doc: UploadedFile::on_disk("d.bin", "", &path, 100, ()),
        };
        let Err(ClientError::Input(message)) = place(&Method::POST, "/", &longer) else {
            panic!("a file shorter than its size is an input error");
        };
        assert!(message.ends_with("holds 17 bytes, not 100"), "{message}");
        std::fs::remove_file(&path).unwrap();
        let Err(ClientError::Input(message)) = place(&Method::POST, "/", &upload) else {
            panic!("a file gone from disk is an input error");
        };
        assert!(
            message.starts_with("the file \"d.bin\": cannot read it"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_streamed_file_is_the_form_s_last_part_and_is_sent_once() {
        use http_body_util::BodyExt;
        #[derive(Serialize)]
        struct Archive {
            file: strata_input::StreamedFile,
            title: String,
        }
        let chunks = [Ok::<_, std::io::Error>(Bytes::from_static(b"tar bytes"))];
        let archive = Archive {
            file: strata_input::StreamedFile::new("a.tar", "", futures_util::stream::iter(chunks)),
            title: "Backup".into(),
        };
        let (content_type, body) = place(&Method::POST, "/", &archive).unwrap().body.unwrap();
        let boundary = content_type.split("boundary=").nth(1).unwrap().to_owned();
        assert!(
            boundary.len() >= "strata-".len() + 32,
            "128 random bits: {boundary}"
        );
        assert_eq!(http_body::Body::size_hint(&body).exact(), None);
        let body = body.collect().await.unwrap().to_bytes();
        let body = String::from_utf8_lossy(&body).into_owned();
        let title = body.find("name=\"title\"").unwrap();
        let file = body.find("name=\"file\"").unwrap();
        assert!(title < file, "the title before the file: {body}");
        assert!(body.contains("\r\n\r\ntar bytes\r\n--"), "{body}");
        let Err(ClientError::Input(message)) = place(&Method::POST, "/", &archive) else {
            panic!("a stream is sent once");
        };
        assert_eq!(
            message,
            "the streamed file \"a.tar\" was sent already: a stream is read once"
        );
    }

    #[test]
    fn a_file_the_form_cannot_carry_is_refused() {
        #[derive(Serialize)]
        struct Upload {
            cover: UploadedFile,
        }
        let upload = Upload {
            cover: UploadedFile::new("a\nb.png", "image/png", &b"PNG"[..]),
        };
        let Err(ClientError::Input(message)) = place(&Method::POST, "/", &upload) else {
            panic!("a line break in a file name is refused");
        };
        assert!(
            message.starts_with("the field `cover`: the file name \"a\\nb.png\" cannot be sent"),
            "{message}"
        );
    }

    #[test]
    fn a_raw_body_is_the_body_and_the_other_fields_the_query() {
        #[derive(Serialize)]
        struct Hook {
            raw: strata_input::RawBody,
            topic: String,
            source: &'static str,
        }
        let hook = Hook {
            raw: strata_input::RawBody::new("application/json", &b"{ \"a\": 1 }"[..]),
            topic: "orders".into(),
            source: "ci",
        };
        let placed = place(&Method::POST, "/hooks/:topic", &hook).unwrap();
        assert_eq!(placed.uri, "/hooks/orders?source=ci");
        assert_eq!(
            in_memory(placed.body),
            (
                "application/json".to_owned(),
                Bytes::from_static(b"{ \"a\": 1 }")
            )
        );
    }

    #[test]
    fn a_body_without_path_parameters_is_written_once_in_field_order() {
        #[derive(Serialize)]
        struct Order {
            zeta: u8,
            alpha: &'static str,
        }
        let placed = place(
            &Method::POST,
            "/v1/orders",
            &Order {
                zeta: 1,
                alpha: "a",
            },
        )
        .unwrap();
        assert_eq!(placed.uri, "/v1/orders");
        assert_eq!(
            in_memory(placed.body),
            (
                JSON.to_owned(),
                Bytes::from_static(br#"{"zeta":1,"alpha":"a"}"#)
            )
        );
        let unit = place(&Method::POST, "/v1/ping", &()).unwrap();
        assert_eq!(in_memory(unit.body).1, Bytes::from_static(b"{}"));
    }

    #[test]
    fn header_like_fields_are_headers_where_the_method_reads_headers() {
        let mut sources = InputSources::default();
        assert!(sources.set(
            &Method::POST,
            [InputSource::Body, InputSource::Params, InputSource::Headers]
        ));
        let input = json!({"x-signature": "s", "authorization": "t", "X-Not": "b", "note": "n"});
        let placed = super::place(&Method::POST, "", "/a", &input, &sources).unwrap();
        assert_eq!(
            placed.headers,
            [
                ("authorization".to_owned(), "t".to_owned()),
                ("x-signature".to_owned(), "s".to_owned())
            ]
        );
        assert_eq!(
            in_memory(placed.body).1,
            Bytes::from_static(br#"{"X-Not":"b","note":"n"}"#)
        );
        // Without headers among the sources, they stay fields.
        let placed = place(&Method::POST, "/a", &input).unwrap();
        assert!(placed.headers.is_empty());
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
        assert_eq!(place(&Method::GET, "/", &()).unwrap().uri, "/");
    }
}
