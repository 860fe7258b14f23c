use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::Full;
use strata_input::TextValue;

use crate::{Multipart, MultipartForm, UploadLimits, UploadedFile, boundary, read_multipart};

async fn read(
    form: MultipartForm,
    limits: &UploadLimits,
) -> Result<Multipart, strata_core::ApiError> {
    let content_type = form.content_type();
    read_multipart(
        Full::new(form.into_bytes()),
        boundary(&content_type)?,
        limits,
    )
    .await
}

async fn read_raw(
    raw: &'static str,
    limits: &UploadLimits,
) -> Result<Multipart, strata_core::ApiError> {
    read_multipart(
        Full::new(Bytes::from_static(raw.as_bytes())),
        "B".to_owned(),
        limits,
    )
    .await
}

fn file(name: &str, size: usize) -> UploadedFile {
    UploadedFile::new(name, "application/pdf", vec![7_u8; size])
}

#[tokio::test]
async fn fields_and_files_are_grouped_by_name() {
    let form = MultipartForm::new()
        .text("tag", "a")
        .file("docs", file("one.pdf", 3))
        .text("title", "Report")
        .text("tag", "b")
        .file("docs", file("two.pdf", 5))
        .file("cover", UploadedFile::new("c.png", "", &b"png"[..]));
    let parts = read(form, &UploadLimits::new()).await.unwrap();
    assert_eq!(
        parts.fields,
        [
            (
                "tag".to_owned(),
                TextValue::Many(vec!["a".into(), "b".into()])
            ),
            ("title".to_owned(), TextValue::One("Report".into())),
        ]
    );
    let names: Vec<_> = parts
        .files
        .iter()
        .map(|(k, v)| (k.as_str(), v.len()))
        .collect();
    assert_eq!(names, [("docs", 2), ("cover", 1)]);
    let docs = &parts.files[0].1;
    assert_eq!(
        (docs[1].name(), docs[1].size(), docs[1].mimetype()),
        ("two.pdf", 5, "application/pdf")
    );
    assert_eq!(docs[1].data().as_ref(), [7; 5]);
    assert_eq!(parts.files[1].1[0].mimetype(), "application/octet-stream");
}

#[tokio::test]
async fn file_size_limit_is_inclusive() {
    let limits = UploadLimits::builder().file_size(1000).build();
    let parts = read(
        MultipartForm::new().file("f", file("ok.pdf", 1000)),
        &limits,
    )
    .await
    .unwrap();
    assert_eq!(parts.files[0].1[0].size(), 1000);

    let error = read(
        MultipartForm::new().file("f", file("big.pdf", 1001)),
        &limits,
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(
        error.message(),
        r#"File "f" exceeds the size limit of 1000 bytes"#
    );
}

#[tokio::test]
async fn counts_of_files_and_fields_are_capped() {
    let limits = UploadLimits::builder().files(2).fields(2).build();
    let three_files = MultipartForm::new()
        .file("a", file("1", 1))
        .file("a", file("2", 1))
        .file("b", file("3", 1));
    let error = read(three_files, &limits).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (413, "Too many files: the limit is 2")
    );

    let three_fields = MultipartForm::new()
        .text("a", "1")
        .text("b", "2")
        .text("c", "3");
    let error = read(three_fields, &limits).await.unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (413, "Too many fields: the limit is 2")
    );
}

#[tokio::test]
async fn text_fields_and_the_whole_body_are_capped() {
    let limits = UploadLimits::builder().field_size(4).build();
    let error = read(MultipartForm::new().text("note", "12345"), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        r#"Field "note" exceeds the size limit of 4 bytes"#
    );

    let limits = UploadLimits::builder().body_size(300).build();
    let error = read(MultipartForm::new().file("f", file("f", 400)), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (413, "Multipart body exceeds the limit of 300 bytes")
    );
}

#[tokio::test]
async fn empty_file_inputs_and_unnamed_parts_are_skipped() {
    let raw = "--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"\"\r\n\
               Content-Type: application/octet-stream\r\n\r\n\r\n\
               --B\r\nContent-Disposition: form-data\r\n\r\nanonymous\r\n\
               --B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--B--\r\n";
    let parts = read_raw(raw, &UploadLimits::new()).await.unwrap();
    assert!(parts.files.is_empty());
    assert_eq!(parts.fields, [("x".to_owned(), TextValue::One("1".into()))]);
}

#[tokio::test]
async fn malformed_bodies_are_bad_requests() {
    let limits = UploadLimits::new();
    // Truncated: the closing boundary never comes.
    let error = read_raw(
        "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nabc",
        &limits,
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 400);
    assert!(
        error.message().starts_with("Malformed multipart body"),
        "{}",
        error.message()
    );
    // A boundary that never occurs.
    let error = read_raw(
        "--OTHER\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--OTHER--\r\n",
        &limits,
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 400);
    // Headers that are not headers.
    let error = read_raw("--B\r\n\x01\x02 nonsense\r\n\r\n1\r\n--B--\r\n", &limits)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    // Text that is not UTF-8 is named.
    let mut raw = b"--B\r\nContent-Disposition: form-data; name=\"bio\"\r\n\r\n".to_vec();
    raw.extend_from_slice(&[0xff, 0xfe]);
    raw.extend_from_slice(b"\r\n--B--\r\n");
    let error = read_multipart(Full::new(Bytes::from(raw)), "B".to_owned(), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (400, r#"Field "bio" is not valid UTF-8"#)
    );
    // A name that is not UTF-8 (Latin-1 `é`): refused, naming the problem, not dropped.
    let mut raw = b"--B\r\nContent-Disposition: form-data; name=\"caf".to_vec();
    raw.push(0xe9);
    raw.extend_from_slice(b"\"\r\n\r\n1\r\n--B--\r\n");
    let error = read_multipart(Full::new(Bytes::from(raw)), "B".to_owned(), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (
            400,
            "Malformed multipart body: the Content-Disposition of part 1 is not UTF-8 (a part's \
             name and file name are UTF-8 text)"
        )
    );
    // A control character in a name: the part's headers cannot be read, and the message says
    // what may not be there.
    let error = read_raw(
        "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n\
         --B\r\nContent-Disposition: form-data; name=\"\u{a1}\u{4}ps\"\r\n\r\n2\r\n--B--\r\n",
        &limits,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (
            400,
            "Malformed multipart body: a part's headers cannot be read (invalid header value); \
             a part's name, its file name and other header values may hold any UTF-8 text but \
             control characters other than tab"
        )
    );
    // A content type without a boundary.
    assert_eq!(
        boundary("multipart/form-data").unwrap_err().message(),
        "Invalid multipart/form-data Content-Type: the boundary parameter is missing"
    );
}

/// A file part that never ends, arriving a chunk at a time as from a socket: reading must stop
/// at the limit, not run forever.
struct Endless {
    started: bool,
    frames: usize,
    waiting: bool,
}

impl Body for Endless {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        // multer reads until the stream is pending; a network body is, between packets.
        self.waiting = !self.waiting;
        if self.waiting {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.frames += 1;
        assert!(self.frames < 10_000, "read far past every limit");
        let chunk = if self.started {
            Bytes::from(vec![b'a'; 8192])
        } else {
            self.started = true;
            Bytes::from_static(
                b"--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\n\r\n",
            )
        };
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

#[tokio::test]
async fn an_endless_file_stops_at_the_file_limit() {
    let limits = UploadLimits::builder().file_size(100_000).build();
    let body = Endless {
        started: false,
        frames: 0,
        waiting: false,
    };
    // Without pauses multer would buffer up to the whole-body limit (which still ends the read).
    assert!(limits.body_size() > 1_000_000);
    let error = read_multipart(body, "B".to_owned(), &limits)
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        r#"File "f" exceeds the size limit of 100000 bytes"#
    );
}

struct Broken;

impl Body for Broken {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(Some(Err(std::io::Error::other("connection reset"))))
    }
}

#[tokio::test]
async fn a_failing_body_is_a_hidden_bad_request() {
    let error = read_multipart(Broken, "B".to_owned(), &UploadLimits::new())
        .await
        .unwrap_err();
    assert_eq!(error.status(), 400);
    assert!(!error.expose());
}

#[test]
fn form_names_are_quoted_and_the_boundary_avoids_the_contents() {
    let form = MultipartForm::new().text("a\"b", "x");
    let clash = form
        .content_type()
        .trim_start_matches("multipart/form-data; boundary=")
        .to_owned();
    let form = form.text("c", format!("before {clash} after"));
    let body = form.content_type();
    assert_ne!(
        body.trim_start_matches("multipart/form-data; boundary="),
        clash
    );
    let bytes = MultipartForm::new().text("a\"b\r\n", "x").into_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.contains(r#"name="a\"b  ""#), "{text}");
}

#[tokio::test]
async fn a_written_form_reads_back() {
    let form = MultipartForm::new()
        .text("c", "--strata-form- in a value")
        .file("f", file("x", 10));
    let parts = read(form, &UploadLimits::new()).await.unwrap();
    assert_eq!(
        parts.fields[0].1,
        TextValue::One("--strata-form- in a value".into())
    );
}

#[tokio::test]
async fn a_default_form_works_and_header_values_cannot_add_headers() {
    let form = MultipartForm::default().file(
        "f",
        UploadedFile::new("x", "text/plain\r\nX-Injected: 1", &b"1"[..]),
    );
    let body = form.into_bytes();
    let text = String::from_utf8_lossy(&body);
    assert!(!text.contains("\r\nX-Injected"), "{text}");
}

#[tokio::test]
async fn names_are_utf8_text() {
    // Raw UTF-8 in `Content-Disposition` (RFC 7578 4.2), two, three and four bytes a character;
    // a tab is allowed in a header value.
    let raw = "--B\r\nContent-Disposition: form-data; name=\"ünïcode\"\r\n\r\n1\r\n\
               --B\r\nContent-Disposition: form-data; name=\"\u{a1}\u{d5b57}\u{bb}ps\"\r\n\r\n2\r\n\
               --B\r\nContent-Disposition: form-data; name=\"a\tb\"\r\n\r\n3\r\n\
               --B\r\nContent-Disposition: form-data; name=\"pièce\"; filename=\"résumé €.txt\"\r\n\
               Content-Type: text/plain\r\n\r\nabc\r\n--B--\r\n";
    let parts = read_raw(raw, &UploadLimits::new()).await.unwrap();
    assert_eq!(
        parts.fields,
        [
            ("ünïcode".to_owned(), TextValue::One("1".into())),
            (
                "\u{a1}\u{d5b57}\u{bb}ps".to_owned(),
                TextValue::One("2".into())
            ),
            ("a\tb".to_owned(), TextValue::One("3".into())),
        ]
    );
    assert_eq!(parts.files.len(), 1);
    assert_eq!(parts.files[0].0, "pièce");
    assert_eq!(parts.files[0].1[0].name(), "résumé €.txt");
    // `MultipartForm` writes them so too.
    let form = MultipartForm::new().text("ünïcode", "é");
    let parts = read(form, &UploadLimits::new()).await.unwrap();
    assert_eq!(
        parts.fields,
        [("ünïcode".to_owned(), TextValue::One("é".into()))]
    );
}

#[tokio::test]
async fn form_names_read_back_as_sent_or_as_replaced() {
    // (sent, read back): what a header line carries arrives as it was; the rest is replaced
    // (`strata_input::multipart_writer::part_header_lossy`), never dropped or turned into
    // another kind of part.
    let names = [
        ("a\"b", "a\"b"),
        ("back\\slash", "back\\slash"),
        ("\\\"", "\\\""),
        ("\"", "\""),
        ("pièce 日本", "pièce 日本"),
        ("x filename=\"y\"", "x_filename=\"y\""),
        ("ends\\", "ends "),
        ("me\u{5}val", "me val"),
        ("a\r\nb", "a  b"),
    ];
    let mut form = MultipartForm::new();
    for (i, (name, _)) in names.iter().enumerate() {
        form = form
            .text(*name, i.to_string())
            .file(*name, UploadedFile::new(*name, "text/plain", vec![b'x'; i]));
    }
    let limits = UploadLimits::builder().files(names.len()).build();
    let parts = read(form, &limits).await.unwrap();
    let fields: Vec<&str> = parts.fields.iter().map(|(name, _)| name.as_str()).collect();
    let files: Vec<(&str, &str, usize)> = parts
        .files
        .iter()
        .map(|(field, files)| (field.as_str(), files[0].name(), files[0].size()))
        .collect();
    let want_fields: Vec<&str> = names.iter().map(|(_, back)| *back).collect();
    let want_files: Vec<(&str, &str, usize)> = names
        .iter()
        .enumerate()
        // `filename` in a file name is harmless: only a part name is rewritten for it.
        .map(|(i, (sent, back))| (*back, if i == 5 { *sent } else { *back }, i))
        .collect();
    assert_eq!(fields, want_fields);
    assert_eq!(files, want_files);
}
