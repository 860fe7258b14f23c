//! Multipart reading: `strata_upload::boundary` and `strata_upload::read_multipart`, over a body
//! that arrives in fuzzer-chosen chunks and sometimes makes the reader wait.
//!
//! Input, byte 0 bit 0 clear ("raw"): bytes 1-7 are the limits and the delivery (file size
//! 0-255 bytes, 0-7 files, 0-7 fields, field size 0-255 bytes, body size default or 16-4080
//! bytes, chunk size whole or 1-255 bytes, a pattern of waits), bit 1 of byte 0 ends the body with
//! a read error, bit 2 spools (files past a threshold of 0-248 bytes, bits 3-7 of byte 0 times
//! 8, go to temporary files, and the read runs on a tokio runtime); then a `Content-Type` line,
//! then the body.
//! Byte 0 bit 0 set ("round trip"): the rest, read with `arbitrary`, is a list of text and file
//! parts written with `strata_upload::MultipartForm` and read back under the default limits.
//!
//! Invariants (each a panic when broken):
//! - A bad `Content-Type` is a 400; reading ends with a result or a 400/413 (kind `Parse` or
//!   `PayloadTooLarge`); the reader never waits without having been promised a wake-up (a
//!   request would hang).
//! - Accepted bodies respect every limit: no file larger than `file_size`, at most `files` files,
//!   at most `fields` text fields, none larger than `field_size`, all of them together at most
//!   `body_size` and at most the body; names are grouped (each appears once, no empty group); each
//!   file's bytes and each text value occur in the body as sent.
//! - Whether a body is accepted, and what is read from it, does not depend on how it is cut into
//!   chunks or when it makes the reader wait: read once whole and once in chunks, both accept
//!   the same parts or both refuse, unless the refusal is the whole-body limit (413 `Multipart
//!   body exceeds ...`) or a failing connection, which depend on how far ahead of the parts
//!   multer has read (so does which of two problems is reported).
//! - Spooled: a file on disk holds the bytes sent, and when the result is dropped (accepted or
//!   refused) every temporary file is gone and the disk budget is whole again.
//! - Round trip: what `MultipartForm` writes reads back as the same text fields (grouped by
//!   name) and files (name, file name, media type, bytes), an empty file input skipped; names and
//!   file names restricted to what the form's quoting can carry (see README, "Findings").
#![no_main]

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use bytes::Bytes;
use http_body::{Body, Frame};
use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use strata_core::{ApiError, ErrorKind};
use strata_input::TextValue;
use strata_upload::{
    Multipart, MultipartForm, UploadLimits, UploadedFile, boundary, read_multipart,
};

/// README, "Findings", 4: set to `false` to send any name in the round trip.
const KNOWN_FORM_NAME_LIMITS: bool = true;

/// README, "Findings", 3: set to `false` to let the body wait before the first boundary too.
const KNOWN_MULTER_FIRST_BOUNDARY_BUG: bool = true;

/// A body handing out `data` in chunks of `chunk` bytes (0: all at once); before a chunk, when
/// the next bit of `waits` says so, it answers `Pending` once, waking the task at once (as if
/// the bytes had just arrived). With `fail`, the end is a read error instead.
struct Trickle {
    data: Bytes,
    /// No `Pending` before this many bytes have been handed out.
    calm_until: usize,
    delivered: usize,
    chunk: usize,
    waits: u8,
    polls: u32,
    waited: bool,
    fail: bool,
}

impl Body for Trickle {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        this.polls += 1;
        if !this.waited
            && this.delivered >= this.calm_until
            && this.waits & (1 << (this.polls % 8)) != 0
        {
            this.waited = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.waited = false;
        if this.data.is_empty() {
            if std::mem::take(&mut this.fail) {
                return Poll::Ready(Some(Err(std::io::Error::other("connection reset"))));
            }
            return Poll::Ready(None);
        }
        let size = if this.chunk == 0 {
            this.data.len()
        } else {
            this.chunk.min(this.data.len())
        };
        this.delivered += size;
        Poll::Ready(Some(Ok(Frame::data(this.data.split_to(size)))))
    }
}

struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Drives `read_multipart` to its end; a `Pending` with no wake-up requested is a hang. A read
/// that spools waits on tokio's blocking pool (its wake-ups come from another thread): it runs
/// on a runtime instead.
fn read(body: Trickle, boundary: &str, limits: &UploadLimits) -> Result<Multipart, ApiError> {
    if limits.spool_threshold() != u64::MAX {
        return RUNTIME
            .with(|runtime| runtime.block_on(read_multipart(body, boundary.to_owned(), limits)));
    }
    let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&wakes));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(read_multipart(body, boundary.to_owned(), limits));
    for _ in 0..1_000_000 {
        let before = wakes.0.load(Ordering::Relaxed);
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(result) => return result,
            Poll::Pending => assert!(
                wakes.0.load(Ordering::Relaxed) > before,
                "read_multipart is pending with no wake-up to come: the request would hang"
            ),
        }
    }
    panic!("read_multipart did not finish in a million polls");
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
}

/// The spool directory of the spooled reads (each process writes in a subdirectory of its own;
/// what a crashed run left is swept by the next).
fn spool_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("strata-fuzz-spool")
}

/// The temporary files left under the spool directory.
fn temporary_files() -> usize {
    let Ok(dirs) = std::fs::read_dir(spool_dir()) else {
        return 0;
    };
    dirs.flatten()
        .map(|dir| std::fs::read_dir(dir.path()).map_or(0, |files| files.count()))
        .sum()
}

/// A file's bytes, from memory or from its temporary file.
fn bytes_of(file: &UploadedFile) -> Vec<u8> {
    match (file.data(), file.path()) {
        (Some(data), _) => data.to_vec(),
        (None, Some(path)) => {
            let mut data = std::fs::read(path).expect("a spooled file is readable");
            data.truncate(file.size());
            data
        }
        (None, None) => panic!("a file neither in memory nor on disk"),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fn text_values(value: &TextValue) -> &[String] {
    match value {
        TextValue::One(one) => std::slice::from_ref(one),
        TextValue::Many(many) => {
            assert!(many.len() >= 2, "Many with fewer than two values");
            many
        }
    }
}

/// The invariants of any outcome; `body` is the body as sent.
fn check(result: &Result<Multipart, ApiError>, limits: &UploadLimits, body: &[u8]) {
    let parts = match result {
        Ok(parts) => parts,
        Err(error) => {
            assert!(
                matches!(error.status().as_u16(), 400 | 413),
                "status {} for {}",
                error.status(),
                error.message()
            );
            assert!(matches!(
                error.kind(),
                ErrorKind::Parse | ErrorKind::PayloadTooLarge
            ));
            return;
        }
    };
    let mut total = 0_u64;
    let mut files = 0;
    for (i, (name, group)) in parts.files.iter().enumerate() {
        assert!(!group.is_empty(), "empty group of files {name:?}");
        assert!(
            parts.files[..i].iter().all(|(n, _)| n != name),
            "files {name:?} not grouped"
        );
        for file in group {
            files += 1;
            let size = file.size() as u64;
            assert!(
                size <= limits.file_size(),
                "file of {size} bytes accepted under a limit of {}",
                limits.file_size()
            );
            let data = bytes_of(file);
            assert_eq!(data.len() as u64, size);
            if file.path().is_some() {
                assert!(
                    size > limits.spool_threshold(),
                    "a file at the threshold spooled"
                );
            }
            assert!(contains(body, &data), "file bytes not in the body");
            total += size;
        }
    }
    assert!(
        files <= limits.files(),
        "{files} files accepted, limit {}",
        limits.files()
    );
    let mut fields = 0;
    for (i, (name, value)) in parts.fields.iter().enumerate() {
        assert!(
            parts.fields[..i].iter().all(|(n, _)| n != name),
            "fields {name:?} not grouped"
        );
        for text in text_values(value) {
            fields += 1;
            let size = text.len() as u64;
            assert!(
                size <= limits.field_size(),
                "field of {size} bytes accepted"
            );
            assert!(
                contains(body, text.as_bytes()),
                "field text not in the body"
            );
            total += size;
        }
    }
    assert!(
        fields <= limits.fields(),
        "{fields} fields accepted, limit {}",
        limits.fields()
    );
    assert!(
        total <= limits.body_size(),
        "{total} bytes accepted, body limit {}",
        limits.body_size()
    );
    assert!(total <= body.len() as u64);
}

/// Outcomes that depend on how far ahead of the parts multer has read: the whole-body limit and
/// a failing connection.
fn depends_on_read_ahead(result: &Result<Multipart, ApiError>) -> bool {
    matches!(result, Err(e) if e.status() == 413 && e.message().starts_with("Multipart body exceeds")
        || e.message().starts_with("Failed to read the request body"))
}

/// Read whole and in chunks: the same outcome (but for the whole-body limit).
fn read_both(
    data: &[u8],
    boundary: &str,
    limits: &UploadLimits,
    chunk: usize,
    waits: u8,
    fail: bool,
) -> Result<Multipart, ApiError> {
    // README, "Findings", 3: multer refuses a valid body when, before the first boundary has
    // arrived, the body makes it wait and then hands over the rest and its end at once.
    let delimiter = format!("--{boundary}");
    let calm_until = match data
        .windows(delimiter.len())
        .position(|w| w == delimiter.as_bytes())
    {
        Some(at) if KNOWN_MULTER_FIRST_BOUNDARY_BUG => at + delimiter.len(),
        _ => 0,
    };
    let trickle = Trickle {
        data: Bytes::copy_from_slice(data),
        calm_until,
        delivered: 0,
        chunk,
        waits,
        polls: 0,
        waited: false,
        fail,
    };
    let chunked = read(trickle, boundary, limits);
    check(&chunked, limits, data);
    let whole = Trickle {
        data: Bytes::copy_from_slice(data),
        calm_until: 0,
        delivered: 0,
        chunk: 0,
        waits: 0,
        polls: 0,
        waited: false,
        fail,
    };
    let at_once = read(whole, boundary, limits);
    check(&at_once, limits, data);
    match (&chunked, &at_once) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "chunked and whole reads differ"),
        // Which of two problems is met first (a field over its limit, the body cut short)
        // depends on how far ahead multer has read: any refusal will do.
        (Err(_), Err(_)) => {}
        (a, b) => assert!(
            depends_on_read_ahead(a) || depends_on_read_ahead(b),
            "chunked read {a:?}, whole read {b:?}"
        ),
    }
    chunked
}

fn raw(flags: u8, data: &[u8]) {
    let [
        file_size,
        files,
        fields,
        field_size,
        body_size,
        chunk,
        waits,
        rest @ ..,
    ] = data
    else {
        return;
    };
    let mut builder = UploadLimits::builder()
        .file_size(u64::from(*file_size))
        .files(usize::from(files % 8))
        .fields(usize::from(fields % 8))
        .field_size(u64::from(*field_size));
    if *body_size != 0 {
        builder = builder.body_size(u64::from(*body_size) * 16);
    }
    let spooled = flags & 4 != 0;
    if spooled {
        builder = builder
            .spool_threshold(u64::from(flags >> 3) * 8)
            .spool_dir(spool_dir());
    }
    let limits = builder.build();
    let (content_type, body) = match rest.iter().position(|&b| b == b'\n') {
        Some(end) => (&rest[..end], &rest[end + 1..]),
        None => (rest, &b""[..]),
    };
    let Ok(content_type) = std::str::from_utf8(content_type) else {
        return;
    };
    let boundary = match boundary(content_type) {
        Ok(boundary) => boundary,
        Err(error) => {
            assert_eq!(error.status(), 400);
            return;
        }
    };
    let result = read_both(
        body,
        &boundary,
        &limits,
        usize::from(*chunk),
        *waits,
        flags & 2 != 0,
    );
    if spooled {
        drop(result);
        assert_eq!(
            temporary_files(),
            0,
            "temporary files left after the request"
        );
        assert_eq!(limits.disk_used(), 0, "the disk budget not given back");
    }
}

/// A part of a round-trip form.
#[derive(Debug, Arbitrary)]
enum Part {
    Text {
        name: String,
        value: String,
    },
    File {
        name: String,
        file_name: String,
        mimetype: Mimetype,
        data: Vec<u8>,
    },
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Mimetype {
    None,
    Png,
    TextUtf8,
    Json,
}

impl Mimetype {
    fn sent(self) -> &'static str {
        match self {
            Mimetype::None => "",
            Mimetype::Png => "image/png",
            Mimetype::TextUtf8 => "text/plain; charset=utf-8",
            Mimetype::Json => "application/json",
        }
    }
}

/// What the form's quoting of names carries through multer intact (README, "Findings", 4):
/// no control characters but CR and LF (written as spaces), no backslash (the form doubles it,
/// multer does not undo that, and one before the closing quote hides the quote), and no `name`
/// or `filename` after a space or `;`: multer looks for its attributes anywhere in the header
/// line, quoted values included, and stops at the first such word.
fn carried(name: &str) -> bool {
    let sent = as_sent(name);
    if !KNOWN_FORM_NAME_LIMITS {
        return true;
    }
    // multer also takes a `filename` right after one it skipped (`xfilenamefilename`).
    let attribute_like = |word: &str| {
        sent.match_indices(word).any(|(at, _)| {
            at > 0
                && (matches!(sent.as_bytes()[at - 1], b' ' | b';')
                    || sent.as_bytes()[..at].ends_with(word.as_bytes()))
        })
    };
    sent.chars().all(|c| !c.is_control() && c != '\\')
        && !attribute_like("name")
        && !attribute_like("filename")
}

/// The form writes line breaks in names as spaces.
fn as_sent(name: &str) -> String {
    name.replace(['\r', '\n'], " ")
}

fn round_trip(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(chunk), Ok(waits), Ok(parts)) = (
        u8::arbitrary(&mut u),
        u8::arbitrary(&mut u),
        Vec::<Part>::arbitrary_take_rest(u),
    ) else {
        return;
    };
    let mut form = MultipartForm::new();
    let mut want = Multipart::default();
    for part in parts {
        match part {
            Part::Text { name, value } => {
                if !carried(&name) {
                    return;
                }
                match want.fields.iter_mut().find(|(n, _)| *n == as_sent(&name)) {
                    Some((_, values)) => values.push(value.clone()),
                    None => want
                        .fields
                        .push((as_sent(&name), TextValue::One(value.clone()))),
                }
                form = form.text(name, value);
            }
            Part::File {
                name,
                file_name,
                mimetype,
                data,
            } => {
                if !carried(&name) || !carried(&file_name) {
                    return;
                }
                let file = UploadedFile::new(file_name.clone(), mimetype.sent(), data.clone());
                if !(file_name.is_empty() && data.is_empty()) {
                    let received =
                        UploadedFile::new(as_sent(&file_name), mimetype.sent(), data.clone());
                    match want.files.iter_mut().find(|(n, _)| *n == as_sent(&name)) {
                        Some((_, files)) => files.push(received),
                        None => want.files.push((as_sent(&name), vec![received])),
                    }
                }
                form = form.file(name, file);
            }
        }
    }
    let limits = UploadLimits::new();
    let files: usize = want.files.iter().map(|(_, files)| files.len()).sum();
    let fields: usize = want
        .fields
        .iter()
        .map(|(_, values)| text_values(values).len())
        .sum();
    if files > limits.files() || fields > limits.fields() {
        return;
    }
    let content_type = form.content_type();
    let boundary = boundary(&content_type).expect("the form's own content type");
    let body = form.into_bytes();
    let got = read_both(&body, &boundary, &limits, usize::from(chunk), waits, false);
    match got {
        Ok(got) => assert_eq!(
            got,
            want,
            "round trip of {}",
            String::from_utf8_lossy(&body)
        ),
        Err(error) => panic!(
            "the form's own body refused: {} ({})",
            error.message(),
            String::from_utf8_lossy(&body)
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else {
        return;
    };
    if flags & 1 == 0 {
        raw(*flags, rest);
    } else {
        round_trip(rest);
    }
});
