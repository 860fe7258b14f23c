//! [`UploadLimits`]: the limits of `multipart/form-data` bodies, and where large files go.

use std::path::{Path, PathBuf};

use crate::spool::{Spool, default_dir};

/// The default spool threshold: files larger than 1 MiB are written to disk as they arrive.
pub const DEFAULT_SPOOL_THRESHOLD: u64 = 1024 * 1024;

/// The default disk budget: 1 GiB of temporary files over all requests.
pub const DEFAULT_DISK_BUDGET: u64 = 1024 * 1024 * 1024;

/// Limits of `multipart/form-data` bodies; setting them
/// (the pipeline's `uploads` setting, `create_config().upload(..)`) turns uploads on. Built with
/// [`UploadLimits::builder`]; read with the getters named like the setters.
///
/// Going over any of them is a 413 whose message names the limit.
///
/// **Large files go to disk.** A file larger than the [spool
/// threshold](Self::spool_threshold) (1 MiB) is written to a temporary file in the [spool
/// directory](Self::spool_dir) as it arrives, so that memory does not grow with it; a smaller
/// one stays in memory. Temporary files are removed when the request ends, however it ends
/// (with the last clone of their `UploadedFile`), and those of a crashed process at the next
/// start. They draw on a [disk budget](Self::disk_budget) shared by every request (1 GiB): a
/// request past its own [share](Self::disk_per_request), or that the budget could never hold,
/// gets a 413 naming the limit; one that finds the budget held by others a 503 with
/// `Retry-After: 5`. The budget is shared by the clones of one value (a configuration's
/// endpoints all have clones of its `upload` setting).
///
/// ```
/// use strata_upload::UploadLimits;
///
/// let limits = UploadLimits::builder().file_size(5 * 1024 * 1024).files(3).build();
/// assert_eq!(limits.file_size(), 5 * 1024 * 1024);
/// // The whole body: every file at its limit plus room for the text fields.
/// assert_eq!(limits.body_size(), 3 * 5 * 1024 * 1024 + 1024 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct UploadLimits {
    file_size: u64,
    files: usize,
    fields: usize,
    field_size: u64,
    body_size: Option<u64>,
    /// The answer to a file over `file_size` (the spec's `limitError`), instead of the 413.
    limit_error: Option<(http::StatusCode, String)>,
    spool_threshold: u64,
    disk_per_request: Option<u64>,
    /// The directory and the budget, shared by clones.
    spool: Spool,
}

impl Default for UploadLimits {
    fn default() -> Self {
        Self {
            file_size: 10 * 1024 * 1024,
            files: 10,
            fields: 100,
            field_size: 1024 * 1024,
            body_size: None,
            limit_error: None,
            spool_threshold: DEFAULT_SPOOL_THRESHOLD,
            disk_per_request: None,
            spool: Spool::new(default_dir(), DEFAULT_DISK_BUDGET),
        }
    }
}

impl UploadLimits {
    /// The defaults: files up to 10 MiB, 10 files, 100 text fields of up to 1 MiB each, and a
    /// body of at most every file and 1 MiB more.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from the defaults to set some limits.
    pub fn builder() -> UploadLimitsBuilder {
        UploadLimitsBuilder {
            limits: Self::default(),
        }
    }

    /// The largest file accepted, in bytes (the spec's `limits.fileSize`).
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The most file parts in one request.
    pub fn files(&self) -> usize {
        self.files
    }

    /// The most text (non-file) parts in one request.
    pub fn fields(&self) -> usize {
        self.fields
    }

    /// The largest text part, in bytes.
    pub fn field_size(&self) -> u64 {
        self.field_size
    }

    /// The largest whole body, in bytes (default: `files × file_size + 1 MiB`).
    pub fn body_size(&self) -> u64 {
        self.body_size.unwrap_or_else(|| {
            (self.files as u64)
                .saturating_mul(self.file_size)
                .saturating_add(1024 * 1024)
        })
    }

    /// Files larger than this many bytes are written to a temporary file as they arrive;
    /// smaller ones stay in memory (default 1 MiB; `u64::MAX` keeps every file in memory).
    pub fn spool_threshold(&self) -> u64 {
        self.spool_threshold
    }

    /// The directory where temporary files go, each process in a subdirectory of its own
    /// (default: `strata-uploads-<uid>` in the system's temporary directory,
    /// `std::env::temp_dir()`, which `TMPDIR` sets on Unix).
    pub fn spool_dir(&self) -> &Path {
        self.spool.base()
    }

    /// The most bytes one request may have in temporary files (default: the
    /// [body size](Self::body_size)).
    pub fn disk_per_request(&self) -> u64 {
        self.disk_per_request.unwrap_or_else(|| self.body_size())
    }

    /// The most bytes all requests together may have in temporary files (default 1 GiB).
    pub fn disk_budget(&self) -> u64 {
        self.spool.capacity()
    }

    /// The bytes in temporary files now, over all requests using these limits (and their
    /// clones).
    pub fn disk_used(&self) -> u64 {
        self.spool.used()
    }

    /// Creates the spool directory and this process's subdirectory in it, and removes what
    /// crashed processes left there: the server does it at start (a directory that cannot be
    /// used stops it there, with the reason), the multipart reader before the first file it
    /// writes otherwise. Returns the subdirectory.
    ///
    /// Only subdirectories named as the spool names them (`<pid>-<nonce>-<n>`) are removed,
    /// those whose process is gone; nothing else in the directory is touched. Give each
    /// machine (each container) a spool directory of its own: a process of another machine
    /// sharing it would look gone.
    ///
    /// # Errors
    ///
    /// When the directory cannot be created, or is not a directory owned by this process's
    /// user; the error names it.
    pub async fn prepare_spool(&self) -> std::io::Result<PathBuf> {
        self.spool.dir().await
    }

    #[cfg_attr(not(feature = "multipart"), allow(dead_code))]
    pub(crate) fn spool(&self) -> &Spool {
        &self.spool
    }

    /// The error answered when a file exceeds [`file_size`](Self::file_size), if one is set
    /// ([`UploadLimitsBuilder::limit_error`]).
    pub fn limit_error(&self) -> Option<(http::StatusCode, &str)> {
        self.limit_error
            .as_ref()
            .map(|(status, message)| (*status, message.as_str()))
    }
}

/// Sets [`UploadLimits`]; the configuration's `upload` setter takes it as it is (or call
/// [`build`](Self::build)).
#[derive(Debug, Clone)]
#[must_use]
pub struct UploadLimitsBuilder {
    limits: UploadLimits,
}

impl UploadLimitsBuilder {
    strata_core::setters! {
        /// The largest file accepted, in bytes (the spec's `limits.fileSize`): a file of exactly
        /// this size is accepted, one byte more is not.
        file_size(bytes: u64) => limits.file_size = bytes;
        /// The most file parts in one request.
        files(count: usize) => limits.files = count;
        /// The most text (non-file) parts in one request.
        fields(count: usize) => limits.fields = count;
        /// The largest text part, in bytes.
        field_size(bytes: u64) => limits.field_size = bytes;
        /// The largest whole body, in bytes (default: `files × file_size + 1 MiB`).
        body_size(bytes: u64) => limits.body_size = Some(bytes);
        /// Files larger than this many bytes are written to a temporary file as they arrive
        /// (default 1 MiB); `u64::MAX` keeps every file in memory, as before spooling.
        spool_threshold(bytes: u64) => limits.spool_threshold = bytes;
        /// The most bytes one request may have in temporary files (default: the body size);
        /// one more is a 413 `Uploads of one request may take at most N bytes on disk`.
        disk_per_request(bytes: u64) => limits.disk_per_request = Some(bytes);
    }

    /// The directory where temporary files go (default: `strata-uploads-<uid>` in the
    /// system's temporary directory). Created if missing, it must be owned by the server's
    /// user; each process writes in a subdirectory of its own, and removes what crashed
    /// processes left (see [`UploadLimits::prepare_spool`]). Where the temporary directory is
    /// in memory (`tmpfs`), a directory on disk keeps large uploads out of memory.
    pub fn spool_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.limits.spool = Spool::new(dir.into(), self.limits.spool.capacity());
        self
    }

    /// The most bytes all requests together may have in temporary files (default 1 GiB): a
    /// request whose next bytes do not fit gets a 503 with `Retry-After: 5`, or a 413 when it
    /// alone would pass the budget.
    pub fn disk_budget(mut self, bytes: u64) -> Self {
        self.limits.spool = Spool::new(self.limits.spool.base().to_owned(), bytes);
        self
    }

    /// The error answered when a file exceeds [`file_size`](Self::file_size) (the spec's
    /// `limitError`), instead of the default 413 `File "<field>" exceeds the size limit of N
    /// bytes`. A status that is not an error status becomes a 500.
    ///
    /// ```
    /// use http::StatusCode;
    /// use strata_upload::UploadLimits;
    ///
    /// let limits = UploadLimits::builder()
    ///     .file_size(1024)
    ///     .limit_error(StatusCode::BAD_REQUEST, "Covers are 1 KiB at most")
    ///     .build();
    /// assert_eq!(
    ///     limits.limit_error(),
    ///     Some((StatusCode::BAD_REQUEST, "Covers are 1 KiB at most"))
    /// );
    /// ```
    pub fn limit_error(mut self, status: http::StatusCode, message: impl Into<String>) -> Self {
        self.limits.limit_error = Some((status, message.into()));
        self
    }

    /// The limits.
    pub fn build(self) -> UploadLimits {
        self.limits
    }
}

impl From<UploadLimitsBuilder> for UploadLimits {
    fn from(builder: UploadLimitsBuilder) -> Self {
        builder.limits
    }
}
