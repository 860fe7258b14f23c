//! Reading a `multipart/form-data` body into text fields and files.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http_body::Body;
use pin_project_lite::pin_project;
use strata_core::{ApiError, BoxError, ErrorKind};
use strata_input::{StreamedFile, TextValue, UploadedFile};

use crate::Multipart;

use crate::limits::UploadLimits;
use crate::spool::TempFile;

/// The boundary of a `multipart/form-data` content type, or a 400 naming what is wrong.
///
/// ```
/// assert_eq!(strata_upload::boundary("multipart/form-data; boundary=xyz").unwrap(), "xyz");
/// assert_eq!(strata_upload::boundary("multipart/form-data").unwrap_err().status(), 400);
/// ```
pub fn boundary(content_type: &str) -> Result<String, ApiError> {
    multer::parse_boundary(content_type).map_err(|error| {
        let detail = match error {
            multer::Error::NoBoundary => "the boundary parameter is missing".to_owned(),
            other => other.to_string(),
        };
        ApiError::bad_request(
            ErrorKind::Parse,
            format!("Invalid multipart/form-data Content-Type: {detail}"),
        )
    })
}

pin_project! {
    /// A body's data frames as the stream multer reads; trailers are skipped.
    struct DataStream<B> {
        #[pin]
        body: B,
    }
}

impl<B> futures_core::Stream for DataStream<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Item = Result<Bytes, BoxError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut body = self.project().body;
        loop {
            return match body.as_mut().poll_frame(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    // `Bytes` data (hyper's, tower-http's) is handed over without a copy.
                    Ok(mut data) => Poll::Ready(Some(Ok(data.copy_to_bytes(data.remaining())))),
                    Err(_trailers) => continue,
                },
            };
        }
    }
}

fn too_large(message: String) -> ApiError {
    ApiError::new(http::StatusCode::PAYLOAD_TOO_LARGE, message)
        .with_kind(ErrorKind::PayloadTooLarge)
}

fn malformed(message: String) -> ApiError {
    ApiError::bad_request(ErrorKind::Parse, message)
}

/// Describes a multer error: a limit (413), a failure to read the body (400, detail hidden: it
/// is about the connection, not the request), or malformed multipart (400).
fn multer_error(error: multer::Error) -> ApiError {
    match error {
        multer::Error::StreamSizeExceeded { limit } => {
            too_large(format!("Multipart body exceeds the limit of {limit} bytes"))
        }
        multer::Error::StreamReadFailed(source) => {
            if let Some(timeout) = ApiError::from_body_timeout(&source) {
                return timeout.with_source(source);
            }
            if source
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return too_large("Request body exceeds the limit".to_owned()).with_source(source);
            }
            malformed(format!("Failed to read the request body: {source}"))
                .exposed(false)
                .with_source(source)
        }
        // httparse refuses a control character (but tab) in a part's header line: a name or a
        // file name holding one (the HTML form encoding writes them as they are; only `"`, CR
        // and LF are escaped) makes the part unreadable, and so the body.
        multer::Error::ReadHeaderFailed(cause) => malformed(format!(
            "Malformed multipart body: a part's headers cannot be read ({cause}); a part's \
             name, its file name and other header values may hold any UTF-8 text but control \
             characters other than tab"
        )),
        other => malformed(format!("Malformed multipart body: {other}")),
    }
}

/// A part whose `Content-Disposition` is not UTF-8 text: its name and file name cannot be
/// read (multer then gives neither), so it is refused rather than dropped or taken for a text
/// field. RFC 7578 (4.2) has names in UTF-8, which pass.
fn check_disposition(part: &multer::Field<'_>) -> Result<(), ApiError> {
    let disposition = part.headers().get(http::header::CONTENT_DISPOSITION);
    if disposition.is_some_and(|value| std::str::from_utf8(value.as_bytes()).is_err()) {
        return Err(malformed(format!(
            "Malformed multipart body: the Content-Disposition of part {} is not UTF-8 (a \
             part's name and file name are UTF-8 text)",
            part.index() + 1
        )));
    }
    Ok(())
}

fn name_for_message(name: &str) -> &str {
    const SHOWN: usize = 64;
    match name.char_indices().nth(SHOWN) {
        Some((end, _)) => &name[..end],
        None => name,
    }
}

fn count_file(files: &mut usize, limits: &UploadLimits) -> Result<(), ApiError> {
    *files += 1;
    if *files > limits.files() {
        return Err(too_large(format!(
            "Too many files: the limit is {}",
            limits.files()
        )));
    }
    Ok(())
}

/// Reads the `multipart/form-data` body `body` (whose boundary is `boundary`), streaming, within
/// `limits`.
///
/// Parts with a file name are files; the others are text fields, which must be UTF-8. A file
/// part with an empty file name and no content (what a browser sends for a file input left
/// empty) is skipped. Parts without a name are read past and dropped. Limits are checked as each
/// part's bytes are handed over; multer reads what the connection has ready ahead of that, so
/// one request never holds more than `body_size` bytes:
///
/// | problem | status and message |
/// |---|---|
/// | a file over `file_size` | 413 `File "<field>" exceeds the size limit of N bytes`, or the `limit_error` |
/// | more than `files` files | 413 `Too many files: the limit is N` |
/// | more than `fields` text fields | 413 `Too many fields: the limit is N` |
/// | a text field over `field_size` | 413 `Field "<field>" exceeds the size limit of N bytes` |
/// | a body over `body_size` | 413 `Multipart body exceeds the limit of N bytes` |
/// | files of the request on disk over `disk_per_request` | 413 `Uploads of one request may take at most N bytes on disk` |
/// | a file that the whole disk budget could not hold | 413 `Uploads may take at most N bytes on disk` |
/// | the disk budget held by other requests, or the disk full | 503 with `Retry-After: 5` |
/// | a text field that is not UTF-8 | 400 naming the field |
/// | a part's `Content-Disposition` that is not UTF-8 | 400 `Malformed multipart body: the Content-Disposition of part N is not UTF-8 …` |
/// | a control character (but tab) in a part's headers, its name included | 400 `Malformed multipart body: a part's headers cannot be read …` |
/// | a malformed or truncated body | 400 `Malformed multipart body: …` |
/// | a part after a [streamed file](ReadOptions::stream_field) | 400 `Part "<field>" comes after the streamed file "<file>" …`, as the stream's last item |
///
/// Names are UTF-8 text (RFC 7578 4.2): a part named `ünïcode` is read under that name.
///
/// A file larger than `spool_threshold` is written to a temporary file as it arrives (see
/// [`UploadLimits`]); when the read fails or is dropped, the temporary files it made are
/// removed.
pub async fn read_multipart<B>(
    body: B,
    boundary: String,
    limits: &UploadLimits,
) -> Result<Multipart, ApiError>
where
    B: Body + Send + 'static,
    B::Error: Into<BoxError>,
{
    read_multipart_with(body, boundary, limits, &ReadOptions::new()).await
}

/// How [`read_multipart_with`] reads, beyond its limits.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    released: Option<Arc<AtomicU64>>,
    streamed: Option<String>,
}

impl ReadOptions {
    /// As [`read_multipart`] reads.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds to `released` the bytes of files as they leave memory: written to temporary files,
    /// or handed over from a streamed file (the parse stage gives them back to the body
    /// budget, which counts what requests hold in memory).
    #[must_use]
    pub fn count_released(mut self, released: Arc<AtomicU64>) -> Self {
        self.released = Some(released);
        self
    }

    /// Stops at the part named `field` (an input's `StreamedFile`): the read returns the parts
    /// before it, and that file as a [`StreamedFile`](strata_input::StreamedFile) carried in
    /// [`Multipart::files`], reading the rest of the body as the stream is read. The file must
    /// be the last part: a part after it ends the stream with a 400.
    #[must_use]
    pub fn stream_field(mut self, field: impl Into<String>) -> Self {
        self.streamed = Some(field.into());
        self
    }
}

/// [`read_multipart`], with [`ReadOptions`].
pub async fn read_multipart_with<B>(
    body: B,
    boundary: String,
    limits: &UploadLimits,
    options: &ReadOptions,
) -> Result<Multipart, ApiError>
where
    B: Body + Send + 'static,
    B::Error: Into<BoxError>,
{
    let released = options.released.clone().unwrap_or_default();
    let spooled = &*released;
    let constraints = multer::Constraints::new()
        .size_limit(multer::SizeLimit::new().whole_stream(limits.body_size()));
    let mut reader =
        multer::Multipart::with_constraints(DataStream { body }, boundary, constraints);
    let mut out = Multipart::default();
    let mut field_index: HashMap<String, usize> = HashMap::new();
    let mut file_index: HashMap<String, usize> = HashMap::new();
    let (mut fields, mut files) = (0_usize, 0_usize);
    // Bytes of this request's files on disk.
    let mut on_disk = 0_u64;

    while let Some(mut part) = reader.next_field().await.map_err(multer_error)? {
        check_disposition(&part)?;
        let Some(name) = part.name().map(str::to_owned) else {
            while part.chunk().await.map_err(multer_error)?.is_some() {}
            continue;
        };
        if options.streamed.as_deref() == Some(name.as_str()) {
            // The rest of the body is the handler's to read, as it arrives.
            count_file(&mut files, limits)?;
            let file = FileStream::start(reader, part, &name, limits, &released);
            out.files.push((name.clone(), vec![file]));
            out.streamed = Some(name);
            return Ok(out);
        }
        let file_name = part.file_name().map(str::to_owned);
        let is_file = file_name.is_some();
        // Count a part before reading it, so one part too many is refused before its bytes are
        // buffered. A file input left empty (no name, no bytes) is counted once read, if at all.
        let limit = if is_file {
            if file_name.as_deref().is_some_and(|f| !f.is_empty()) {
                count_file(&mut files, limits)?;
            }
            limits.file_size()
        } else {
            fields += 1;
            if fields > limits.fields() {
                return Err(too_large(format!(
                    "Too many fields: the limit is {}",
                    limits.fields()
                )));
            }
            limits.field_size()
        };
        let mimetype = part.content_type().map(ToString::to_string);
        let read = Part {
            name: name.clone(),
            is_file,
            limit,
        };
        let (data, spooling, size) = read.read(&mut part, limits, &mut on_disk, spooled).await?;
        if let Some(file_name) = file_name {
            if file_name.is_empty() {
                if size == 0 {
                    continue;
                }
                count_file(&mut files, limits)?;
            }
            let file = match spooling {
                Some(disk) => {
                    disk.finish(file_name, mimetype.unwrap_or_default(), size)
                        .await?
                }
                None => UploadedFile::from_pieces(
                    file_name,
                    mimetype.unwrap_or_default(),
                    data.file_pieces(),
                ),
            };
            match file_index.entry(name) {
                Entry::Occupied(at) => out.files[*at.get()].1.push(file),
                Entry::Vacant(slot) => {
                    out.files.push((slot.key().clone(), vec![file]));
                    slot.insert(out.files.len() - 1);
                }
            }
        } else {
            let text = String::from_utf8(data.joined()).map_err(|_| {
                malformed(format!(
                    "Field {:?} is not valid UTF-8",
                    name_for_message(&name)
                ))
            })?;
            match field_index.entry(name) {
                Entry::Occupied(at) => out.fields[*at.get()].1.push(text),
                Entry::Vacant(slot) => {
                    out.fields.push((slot.key().clone(), TextValue::One(text)));
                    slot.insert(out.fields.len() - 1);
                }
            }
        }
    }
    Ok(out)
}

/// What a part's bytes are read with.
struct Part {
    name: String,
    is_file: bool,
    /// Its size limit.
    limit: u64,
}

impl Part {
    /// The part's bytes: in memory, or (a file past the spool threshold) in a temporary file;
    /// and its size.
    async fn read(
        &self,
        part: &mut multer::Field<'_>,
        limits: &UploadLimits,
        on_disk: &mut u64,
        spooled: &AtomicU64,
    ) -> Result<(PartBytes, Option<Spooling>, u64), ApiError> {
        let mut data = PartBytes::default();
        let mut size = 0_u64;
        let mut spooling: Option<Spooling> = None;
        while let Some(chunk) = part.chunk().await.map_err(multer_error)? {
            size += chunk.len() as u64;
            if size > self.limit {
                return Err(self.too_large(limits));
            }
            if let Some(disk) = &mut spooling {
                disk.write(chunk, on_disk, limits, spooled).await?;
            } else if self.is_file && size > limits.spool_threshold() {
                // Past the threshold: what arrived so far goes first, then the rest as it comes.
                let mut disk = Spooling::start(limits).await?;
                for piece in std::mem::take(&mut data).finish() {
                    disk.write(piece, on_disk, limits, spooled).await?;
                }
                disk.write(chunk, on_disk, limits, spooled).await?;
                spooling = Some(disk);
            } else {
                data.push(chunk);
            }
        }
        Ok((data, spooling, size))
    }

    fn too_large(&self, limits: &UploadLimits) -> ApiError {
        if self.is_file
            && let Some((status, message)) = limits.limit_error()
        {
            let status = if status.is_client_error() || status.is_server_error() {
                status
            } else {
                http::StatusCode::INTERNAL_SERVER_ERROR
            };
            return ApiError::new(status, message.to_owned()).with_kind(ErrorKind::PayloadTooLarge);
        }
        let what = if self.is_file { "File" } else { "Field" };
        too_large(format!(
            "{what} {:?} exceeds the size limit of {} bytes",
            name_for_message(&self.name),
            self.limit
        ))
    }
}

/// The rest of a body from a streamed file's part on: the file's bytes, within its size
/// limit, then nothing (a part after it is an error).
struct FileStream {
    reader: multer::Multipart<'static>,
    /// The file's part, until it has all been read.
    part: Option<multer::Field<'static>>,
    read: Part,
    size: u64,
    limits: UploadLimits,
    released: Arc<AtomicU64>,
    /// An error or the end was given: nothing more is read.
    done: bool,
}

impl FileStream {
    /// The file of `part` (of the field `name`) and the rest of the body after it.
    fn start(
        reader: multer::Multipart<'static>,
        part: multer::Field<'static>,
        name: &str,
        limits: &UploadLimits,
        released: &Arc<AtomicU64>,
    ) -> UploadedFile {
        let file_name = part.file_name().unwrap_or_default().to_owned();
        let mimetype = part.content_type().map(ToString::to_string);
        let stream = FileStream {
            reader,
            part: Some(part),
            read: Part {
                name: name.to_owned(),
                is_file: true,
                limit: limits.file_size(),
            },
            size: 0,
            limits: limits.clone(),
            released: Arc::clone(released),
            done: false,
        };
        UploadedFile::streamed(StreamedFile::new(
            file_name,
            mimetype.unwrap_or_default(),
            stream,
        ))
    }

    fn fail(&mut self, error: ApiError) -> Poll<Option<Result<Bytes, ApiError>>> {
        self.done = true;
        self.part = None;
        Poll::Ready(Some(Err(error)))
    }
}

impl futures_core::Stream for FileStream {
    type Item = Result<Bytes, ApiError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(part) = &mut self.part {
            match std::task::ready!(Pin::new(part).poll_next(cx)) {
                Some(Ok(chunk)) => {
                    self.size += chunk.len() as u64;
                    if self.size > self.read.limit {
                        let error = self.read.too_large(&self.limits);
                        return self.fail(error);
                    }
                    // Handed over: the handler holds it now, not the request's reader.
                    self.released
                        .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    return Poll::Ready(Some(Ok(chunk)));
                }
                Some(Err(error)) => return self.fail(multer_error(error)),
                None => self.part = None,
            }
        }
        // The file is the last part: what follows must be the body's end.
        match std::task::ready!(self.reader.poll_next_field(cx)) {
            Ok(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Ok(Some(next)) => {
                let error = malformed(format!(
                    "Part {:?} comes after the streamed file {:?}: a streamed file is the \
                     form's last part, every other field is sent before it",
                    name_for_message(next.name().unwrap_or_default()),
                    name_for_message(&self.read.name),
                ));
                self.fail(error)
            }
            Err(error) => self.fail(multer_error(error)),
        }
    }
}

/// How much a temporary file's writes gather before going to the file: few, large writes, and
/// little memory per upload.
const WRITE_BATCH: usize = 256 * 1024;

/// A file part being written to a temporary file; dropped unfinished (a failed or cancelled
/// read), the file is removed.
///
/// The pieces multer gives are written as they are, not copied into a buffer: they gather in a
/// batch ([`PartBytes`], which joins only small pieces), and a full batch is written on a
/// blocking thread while the next one arrives. One batch is written at a time, so an upload
/// holds at most two batches in memory.
struct Spooling {
    file: SpoolFile,
    batch: PartBytes,
    guard: TempFile,
}

/// Where a spooled file's handle is.
enum SpoolFile {
    /// Here: no batch is being written.
    Idle(std::fs::File),
    /// On a blocking thread writing a batch, which gives it back.
    Writing(tokio::task::JoinHandle<std::io::Result<std::fs::File>>),
    /// Lost with a write that failed (the read ends with that error).
    Failed,
}

impl Spooling {
    async fn start(limits: &UploadLimits) -> Result<Self, ApiError> {
        let (file, guard) = limits.spool().create().await.map_err(disk_error)?;
        Ok(Self {
            file: SpoolFile::Idle(file),
            batch: PartBytes::default(),
            guard,
        })
    }

    /// Writes `chunk`, within the request's share of the disk and the whole budget.
    async fn write(
        &mut self,
        chunk: Bytes,
        on_disk: &mut u64,
        limits: &UploadLimits,
        spooled: &AtomicU64,
    ) -> Result<(), ApiError> {
        let bytes = chunk.len() as u64;
        let total = *on_disk + bytes;
        if total > limits.disk_per_request() {
            return Err(too_large(format!(
                "Uploads of one request may take at most {} bytes on disk",
                limits.disk_per_request()
            )));
        }
        if total > limits.disk_budget() {
            return Err(too_large(format!(
                "Uploads may take at most {} bytes on disk",
                limits.disk_budget()
            )));
        }
        if !self.guard.try_grow(bytes) {
            return Err(disk_full(
                "The server holds too many uploaded files right now; retry later",
            ));
        }
        *on_disk = total;
        self.batch.push(chunk);
        spooled.fetch_add(bytes, Ordering::Relaxed);
        if self.batch.size >= WRITE_BATCH {
            self.write_batch().await?;
        }
        Ok(())
    }

    /// Waits for the batch being written, if any, then starts writing the gathered one.
    async fn write_batch(&mut self) -> Result<(), ApiError> {
        let mut file = self.written().await?;
        let pieces = std::mem::take(&mut self.batch).finish();
        self.file = SpoolFile::Writing(tokio::task::spawn_blocking(move || {
            for piece in pieces {
                std::io::Write::write_all(&mut file, &piece)?;
            }
            Ok(file)
        }));
        Ok(())
    }

    /// The file, once the batch being written (if any) is in it.
    async fn written(&mut self) -> Result<std::fs::File, ApiError> {
        let written = match std::mem::replace(&mut self.file, SpoolFile::Failed) {
            SpoolFile::Idle(file) => Ok(file),
            SpoolFile::Writing(writing) => writing
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e))),
            SpoolFile::Failed => Err(std::io::Error::other("an earlier write failed")),
        };
        written.map_err(disk_error)
    }

    /// The whole file written: an `UploadedFile` that removes it when its last clone goes.
    async fn finish(
        mut self,
        name: String,
        mimetype: String,
        size: u64,
    ) -> Result<UploadedFile, ApiError> {
        if self.batch.size > 0 {
            self.write_batch().await?;
        }
        // Every byte in the file before it is read.
        drop(self.written().await?);
        let path = self.guard.path().to_owned();
        Ok(UploadedFile::on_disk(
            name, mimetype, path, size, self.guard,
        ))
    }
}

/// A 503 that tells the client to come back: the disk budget or the disk is full.
fn disk_full(message: &'static str) -> ApiError {
    ApiError::new(http::StatusCode::SERVICE_UNAVAILABLE, message)
        .with_kind(ErrorKind::Overload)
        .with_header(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("5"),
        )
}

/// A temporary file that cannot be made or written: a full disk or too many open files is a
/// 503 to retry; anything else a 500 whose detail is logged, not sent.
fn disk_error(error: std::io::Error) -> ApiError {
    if error.kind() == std::io::ErrorKind::StorageFull {
        return disk_full("The server has no disk space for uploads right now; retry later")
            .with_source(error);
    }
    match ApiError::from_shortage(error) {
        Ok(shortage) => shortage,
        Err(error) => ApiError::internal(format!("Cannot write an uploaded file: {error}"))
            .exposed(false)
            .with_source(error),
    }
}

/// A part's bytes as they arrive: kept as the pieces multer gives (no copy), with small pieces
/// (a client sending a few bytes at a time) gathered into runs, so that the list of pieces costs
/// at most a few bytes per kibibyte of the part.
#[derive(Default)]
struct PartBytes {
    pieces: Vec<Bytes>,
    /// Small pieces gathered, not yet in `pieces`.
    run: BytesMut,
    size: usize,
}

/// A piece smaller than this is gathered into a run.
const SMALL_PIECE: usize = 8 * 1024;
/// A file smaller than this is copied into a buffer of its own. Its pieces are slices of
/// multer's buffers, which also hold the parts around it: a small file kept as pieces could
/// keep megabytes of other parts alive (a hostile form: a small file, then a large part that
/// is read past), for as long as the application keeps the file. In a larger file only the
/// first and last pieces share their buffers with other parts.
const KEPT_AS_PIECES: usize = 1024 * 1024;
/// A run this large becomes a piece.
const RUN: usize = 64 * 1024;

impl PartBytes {
    fn push(&mut self, piece: Bytes) {
        self.size += piece.len();
        if piece.len() < SMALL_PIECE {
            self.run.extend_from_slice(&piece);
            if self.run.len() >= RUN {
                self.pieces.push(self.run.split().freeze());
            }
        } else {
            self.flush_run();
            self.pieces.push(piece);
        }
    }

    fn flush_run(&mut self) {
        if !self.run.is_empty() {
            self.pieces.push(self.run.split().freeze());
        }
    }

    /// The pieces, in order.
    fn finish(mut self) -> Vec<Bytes> {
        self.flush_run();
        self.pieces
    }

    /// A file's pieces: as they arrived, or one buffer of its own for a small file
    /// ([`KEPT_AS_PIECES`]).
    fn file_pieces(self) -> Vec<Bytes> {
        if self.size < KEPT_AS_PIECES {
            vec![Bytes::from(self.joined())]
        } else {
            self.finish()
        }
    }

    /// The bytes in one buffer (a text field's).
    fn joined(self) -> Vec<u8> {
        let mut joined = Vec::with_capacity(self.size);
        for piece in self.finish() {
            joined.extend_from_slice(&piece);
        }
        joined
    }
}

#[cfg(test)]
mod pieces_tests {
    use super::*;

    #[test]
    fn small_pieces_are_gathered_and_large_ones_kept_as_they_are() {
        let large = Bytes::from(vec![b'L'; SMALL_PIECE]);
        let mut data = PartBytes::default();
        for _ in 0..3 {
            data.push(Bytes::from_static(b"ab"));
        }
        data.push(large.clone());
        data.push(Bytes::from_static(b"c"));
        assert_eq!(data.size, 6 + SMALL_PIECE + 1);
        let pieces = data.finish();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0].as_ref(), b"ababab");
        assert_eq!(pieces[1].as_ptr(), large.as_ptr(), "kept, not copied");
        assert_eq!(pieces[2].as_ref(), b"c");
    }

    #[test]
    fn a_small_file_gets_a_buffer_of_its_own_and_a_large_one_keeps_its_pieces() {
        // A piece of a larger buffer, as multer gives: the file must not keep the buffer.
        let buffer = Bytes::from(vec![b'x'; 4 * SMALL_PIECE]);
        let mut small = PartBytes::default();
        small.push(buffer.slice(..SMALL_PIECE));
        let pieces = small.file_pieces();
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].len(), SMALL_PIECE);
        assert!(
            !buffer.as_ptr_range().contains(&pieces[0].as_ptr()),
            "copied, not a slice of the buffer"
        );
        let large_piece = Bytes::from(vec![b'y'; KEPT_AS_PIECES]);
        let mut large = PartBytes::default();
        large.push(large_piece.clone());
        let pieces = large.file_pieces();
        assert_eq!(pieces[0].as_ptr(), large_piece.as_ptr(), "kept, not copied");
    }

    #[test]
    fn a_byte_at_a_time_makes_one_piece_per_run() {
        let mut data = PartBytes::default();
        for _ in 0..(2 * RUN + 10) {
            data.push(Bytes::from_static(b"x"));
        }
        let pieces = data.finish();
        assert_eq!(
            pieces.iter().map(Bytes::len).collect::<Vec<_>>(),
            [RUN, RUN, 10]
        );
    }
}
