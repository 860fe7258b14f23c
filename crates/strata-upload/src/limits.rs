//! [`UploadLimits`]: the limits of `multipart/form-data` bodies.

/// Limits of `multipart/form-data` bodies; setting them
/// (the pipeline's `uploads` setting, `create_config().upload(..)`) turns uploads on. Built with
/// [`UploadLimits::builder`]; read with the getters named like the setters.
///
/// Going over any of them is a 413 whose message names the limit.
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
