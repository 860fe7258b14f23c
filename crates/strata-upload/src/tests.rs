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
    assert_eq!(docs[1].data().unwrap().as_ref(), [7; 5]);
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
        // multer skips a `filename` after another character, then takes the one right after
        // it whatever precedes (found by the fuzzer).
        ("xfilenamefilename=\"y\"", "xfilenam_filename=\"y\""),
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
        .map(|(i, (sent, back))| (*back, if i == 5 || i == 9 { *sent } else { *back }, i))
        .collect();
    assert_eq!(fields, want_fields);
    assert_eq!(files, want_files);
}

/// A spool directory of one test's own, under the system's temporary directory.
fn spool_dir(test: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("strata-upload-spool-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The temporary files under a spool directory (every process's subdirectory).
fn temporary_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(sub.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            files.push(file.path());
        }
    }
    files
}

/// Bytes that differ along the file: a piece lost or out of order would show.
fn varied(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| ((i * 7 + i / 4093) % 256).to_le_bytes()[0])
        .collect()
}

#[tokio::test]
async fn a_file_past_the_threshold_is_on_disk_until_dropped_and_a_smaller_one_in_memory() {
    use crate::UploadedFileExt;
    use tokio::io::AsyncReadExt;

    let dir = spool_dir("threshold");
    let limits = UploadLimits::builder()
        .spool_threshold(1000)
        .spool_dir(&dir)
        .build();
    let large = varied(300_000);
    let form = MultipartForm::new()
        .file("small", UploadedFile::new("s", "", vec![1_u8; 1000]))
        .file("large", UploadedFile::new("l.bin", "", large.clone()));
    let parts = read(form, &limits).await.unwrap();
    let small = &parts.files[0].1[0];
    let on_disk = &parts.files[1].1[0];
    assert_eq!(small.path(), None, "exactly the threshold: in memory");
    let path = on_disk.path().unwrap().to_owned();
    assert!(path.starts_with(&dir), "{}", path.display());
    assert_eq!((on_disk.name(), on_disk.len()), ("l.bin", 300_000));
    assert_eq!(limits.disk_used(), 300_000);
    assert!(on_disk.data().is_none() && on_disk.pieces().is_none());
    // Read whole, or a chunk at a time: the bytes sent.
    assert!(on_disk.bytes().await.unwrap() == large);
    let mut read = Vec::new();
    on_disk
        .open()
        .await
        .unwrap()
        .read_to_end(&mut read)
        .await
        .unwrap();
    assert!(read == large);
    assert_eq!(
        on_disk,
        &UploadedFile::new("l.bin", "", large),
        "equal to the same bytes in memory"
    );
    // The last clone removes it and gives its bytes back.
    let clone = on_disk.clone();
    drop(parts);
    assert!(path.exists(), "a clone keeps it");
    drop(clone);
    assert!(!path.exists());
    assert_eq!(limits.disk_used(), 0);
    drop(limits);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "the process's subdirectory goes with the limits"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_file_on_disk_has_no_bytes_in_memory_and_is_given_back_whole() {
    use crate::UploadedFileExt;
    let dir = spool_dir("data-on-disk");
    let limits = UploadLimits::builder()
        .spool_threshold(10)
        .spool_dir(&dir)
        .build();
    let form = MultipartForm::new().file("f", UploadedFile::new("f", "", vec![0_u8; 11]));
    let mut parts = read(form, &limits).await.unwrap();
    let file = parts.files[0].1.remove(0);
    assert!(file.data().is_none() && file.pieces().is_none());
    let file = file.into_data().unwrap_err();
    assert_eq!(file.bytes().await.unwrap().as_ref(), [0_u8; 11]);
    drop((file, parts, limits));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn files_on_disk_count_against_the_request_share_and_the_whole_budget() {
    let dir = spool_dir("budget");
    let form = || {
        MultipartForm::new()
            .file("a", UploadedFile::new("a", "", vec![1_u8; 6000]))
            .file("b", UploadedFile::new("b", "", vec![2_u8; 6000]))
    };
    // The request's share: the second file passes it.
    let limits = UploadLimits::builder()
        .spool_threshold(100)
        .spool_dir(&dir)
        .disk_per_request(10_000)
        .build();
    let error = read(form(), &limits).await.unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(
        error.message(),
        "Uploads of one request may take at most 10000 bytes on disk"
    );
    assert_eq!(limits.disk_used(), 0, "the first file is removed too");
    assert!(temporary_files(&dir).is_empty());

    // A request the whole budget could never hold: 413 too.
    let limits = UploadLimits::builder()
        .spool_threshold(100)
        .spool_dir(&dir)
        .disk_budget(10_000)
        .build();
    let error = read(form(), &limits).await.unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(
        error.message(),
        "Uploads may take at most 10000 bytes on disk"
    );

    // The budget held by another request: 503, to retry.
    let held = read(
        MultipartForm::new().file("held", UploadedFile::new("h", "", vec![3_u8; 6000])),
        &limits,
    )
    .await
    .unwrap();
    assert_eq!(limits.disk_used(), 6000);
    let error = read(form(), &limits).await.unwrap_err();
    assert_eq!(error.status(), 503);
    assert_eq!(error.headers().unwrap()["retry-after"], "5");
    assert_eq!(limits.disk_used(), 6000, "what failed is given back");
    drop(held);
    assert_eq!(limits.disk_used(), 0);
    read(form(), &limits).await.unwrap_err();
    let one = MultipartForm::new().file("a", UploadedFile::new("a", "", vec![1_u8; 6000]));
    read(one, &limits).await.unwrap();
    drop(limits);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A body that sends a file part's head and `chunks` chunks, then stays pending for ever (a
/// client gone quiet mid-file).
struct Stalls {
    sent: usize,
    chunks: usize,
}

impl Body for Stalls {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.sent > self.chunks {
            return Poll::Pending;
        }
        self.sent += 1;
        let chunk = if self.sent == 1 {
            Bytes::from_static(
                b"--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"../../etc/x\"\r\n\r\n",
            )
        } else {
            Bytes::from(vec![b'a'; 8192])
        };
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

#[tokio::test]
async fn a_read_dropped_mid_file_removes_its_temporary_file() {
    let dir = spool_dir("cancelled");
    let limits = UploadLimits::builder()
        .spool_threshold(1000)
        .spool_dir(&dir)
        .build();
    let spooled = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let body = Stalls { sent: 0, chunks: 8 };
    let options = crate::ReadOptions::new().count_released(std::sync::Arc::clone(&spooled));
    let mut read = Box::pin(crate::read_multipart_with(
        body,
        "B".to_owned(),
        &limits,
        &options,
    ));
    // Polled until the body stalls: the file is on disk, under a name of the spool's.
    std::future::poll_fn(|cx| {
        assert!(read.as_mut().poll(cx).is_pending(), "the body never ends");
        if limits.disk_used() >= 8 * 8192 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    assert_eq!(limits.disk_used(), 8 * 8192);
    assert_eq!(spooled.load(std::sync::atomic::Ordering::Relaxed), 8 * 8192);
    let files = temporary_files(&dir);
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_str().unwrap();
    assert!(name.ends_with(".upload") && !name.contains("etc"), "{name}");
    drop(read);
    assert!(temporary_files(&dir).is_empty());
    assert_eq!(limits.disk_used(), 0);
    drop(limits);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_file_on_disk_moves_by_a_link_and_stays_readable() {
    use crate::UploadedFileExt;

    let dir = spool_dir("mv");
    let limits = UploadLimits::builder()
        .spool_threshold(10)
        .spool_dir(dir.join("spool"))
        .build();
    let data = varied(50_000);
    let parts = read(
        MultipartForm::new().file("f", UploadedFile::new("f", "", data.clone())),
        &limits,
    )
    .await
    .unwrap();
    let file = &parts.files[0].1[0];
    let target = dir.join("saved");
    std::fs::write(&target, b"old").unwrap();
    file.mv(&target).await.unwrap();
    assert!(std::fs::read(&target).unwrap() == data);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (spooled, saved) = (
            std::fs::metadata(file.path().unwrap()).unwrap(),
            std::fs::metadata(&target).unwrap(),
        );
        assert_eq!(spooled.ino(), saved.ino(), "the same file, not a copy");
    }
    // Moved again, and read: still there.
    file.mv(dir.join("again")).await.unwrap();
    assert!(file.bytes().await.unwrap() == data);
    // The saved file outlives the temporary one.
    let temporary = file.path().unwrap().to_owned();
    drop(parts);
    assert!(!temporary.exists());
    assert!(std::fs::read(&target).unwrap() == data);
    // A file of the application's own larger than the size given: copied, its first bytes.
    let mine = UploadedFile::on_disk("mine", "", &target, 100, ());
    mine.mv(dir.join("copy")).await.unwrap();
    assert!(std::fs::read(dir.join("copy")).unwrap() == data[..100]);
    drop(limits);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn preparing_removes_directories_of_gone_processes_and_nothing_else() {
    let dir = spool_dir("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let left = dir.join(format!("{gone}-0123456789abcdef-0"));
    std::fs::create_dir(&left).unwrap();
    std::fs::write(left.join("0.upload"), b"left by a crash").unwrap();
    // Named otherwise, or a live process's: kept.
    let other = dir.join(format!("{gone}-not-ours"));
    std::fs::create_dir(&other).unwrap();
    let live = dir.join("1-0123456789abcdef-0");
    std::fs::create_dir(&live).unwrap();
    let file = dir.join(format!("{gone}-0123456789abcdef-1"));
    std::fs::write(&file, b"a file, not a directory").unwrap();

    let limits = UploadLimits::builder().spool_dir(&dir).build();
    let mine = limits.prepare_spool().await.unwrap();
    assert!(!left.exists(), "left by a gone process");
    assert!(other.exists() && live.exists() && file.exists());
    assert!(mine.starts_with(&dir) && mine.is_dir());
    let name = mine.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.starts_with(&format!("{}-", std::process::id())),
        "{name}"
    );
    drop(limits);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn a_spool_directory_that_is_a_file_is_refused_naming_it() {
    let dir = spool_dir("not-a-dir");
    std::fs::write(&dir, b"").unwrap();
    let limits = UploadLimits::builder().spool_dir(&dir).build();
    let error = limits.prepare_spool().await.unwrap_err();
    assert!(
        error.to_string().contains(&dir.display().to_string()),
        "{error}"
    );
    std::fs::remove_file(&dir).unwrap();
}

#[tokio::test]
async fn a_file_without_a_name_past_the_threshold_is_kept() {
    // An empty file name with bytes is a file (only an empty input, no name and no bytes, is
    // skipped): on disk as well as in memory.
    let dir = spool_dir("nameless");
    let limits = UploadLimits::builder()
        .spool_threshold(100)
        .spool_dir(&dir)
        .build();
    let form = MultipartForm::new()
        .file("big", UploadedFile::new("", "", vec![5_u8; 1000]))
        .file("small", UploadedFile::new("", "", vec![6_u8; 10]))
        .file("none", UploadedFile::new("", "", Vec::new()));
    let parts = read(form, &limits).await.unwrap();
    let names: Vec<_> = parts.files.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["big", "small"]);
    assert!(parts.files[0].1[0].path().is_some());
    assert_eq!(parts.files[0].1[0].len(), 1000);
    drop((parts, limits));
    std::fs::remove_dir_all(&dir).unwrap();
}
