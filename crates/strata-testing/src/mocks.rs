//! What a test looks at: the response and the logs.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, LOCATION};
use http::{HeaderMap, StatusCode};
use serde_json::Value;
use strata_core::logger::{Level, LogSink, Record};

/// The response a test got (the spec's response mock).
#[derive(Debug, Clone)]
pub struct ResponseMock {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) ended: bool,
}

impl ResponseMock {
    /// The status code.
    pub fn status_code(&self) -> u16 {
        self.status.as_u16()
    }

    /// The body parsed as JSON, `None` when it is not JSON.
    pub fn json_data(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The raw body.
    pub fn data(&self) -> &[u8] {
        &self.body
    }

    /// The body as text, `None` when it is not UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.body).ok()
    }

    /// The headers; names are lower-case.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// One header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The media type without parameters, lower-case.
    fn media_type(&self) -> Option<String> {
        let value = self.header(CONTENT_TYPE.as_str())?;
        Some(
            value
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase(),
        )
    }

    /// The `charset` parameter of the content type, unquoted.
    fn charset(&self) -> Option<String> {
        let value = self.header(CONTENT_TYPE.as_str())?;
        value.split(';').skip(1).find_map(|parameter| {
            let (key, value) = parameter.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
        })
    }

    /// Whether the response is JSON (by its media type, `application/json` or `*/*+json`).
    pub fn is_json(&self) -> bool {
        self.media_type()
            .is_some_and(|media| media == "application/json" || media.ends_with("+json"))
    }

    /// Whether the body is UTF-8: declared so (or JSON without another charset, which is UTF-8
    /// by definition), and valid.
    pub fn is_utf8(&self) -> bool {
        let declared = match self.charset() {
            Some(charset) => charset == "utf-8" || charset == "utf8",
            None => self.is_json(),
        };
        declared && self.text().is_some()
    }

    /// Whether a response was sent (`false` for a middleware that granted and sent nothing).
    pub fn is_end_called(&self) -> bool {
        self.ended
    }

    /// The redirect location, if any.
    pub fn redirect_url(&self) -> Option<&str> {
        self.header(LOCATION.as_str())
    }
}

/// One captured log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The message.
    pub message: String,
    /// The request id of the record's logger.
    pub request_id: Option<String>,
    /// Named values, as text.
    pub fields: Vec<(String, String)>,
}

/// The records captured per level (the spec's `_getLogs()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Logs {
    /// Debug records.
    pub debug: Vec<LogEntry>,
    /// Info records.
    pub info: Vec<LogEntry>,
    /// Warn records.
    pub warn: Vec<LogEntry>,
    /// Error records.
    pub error: Vec<LogEntry>,
}

/// The logger of one test: captures what the endpoint, its middleware and the result handler
/// logged. Per test, not global: parallel tests do not see each other's records.
#[derive(Debug, Clone, Default)]
pub struct LoggerMock {
    logs: Arc<Mutex<Logs>>,
}

impl LoggerMock {
    /// The records so far.
    pub fn logs(&self) -> Logs {
        self.logs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The messages of one level.
    pub fn messages(&self, level: Level) -> Vec<String> {
        let logs = self.logs();
        let entries = match level {
            Level::Debug => logs.debug,
            Level::Info => logs.info,
            Level::Warn => logs.warn,
            Level::Error => logs.error,
        };
        entries.into_iter().map(|e| e.message).collect()
    }
}

impl LogSink for LoggerMock {
    fn log(&self, level: Level, message: std::fmt::Arguments<'_>) {
        self.record(&Record {
            level,
            message,
            request_id: None,
            fields: &[],
        });
    }

    fn record(&self, record: &Record<'_>) {
        let entry = LogEntry {
            message: record.message.to_string(),
            request_id: record.request_id.map(str::to_owned),
            fields: record
                .fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.to_string()))
                .collect(),
        };
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        match record.level {
            Level::Debug => logs.debug.push(entry),
            Level::Info => logs.info.push(entry),
            Level::Warn => logs.warn.push(entry),
            Level::Error => logs.error.push(entry),
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn response(content_type: Option<&'static str>, body: &'static [u8]) -> ResponseMock {
        let mut headers = HeaderMap::new();
        if let Some(content_type) = content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        ResponseMock {
            status: StatusCode::OK,
            headers,
            body: Bytes::from_static(body),
            ended: true,
        }
    }

    #[test]
    fn json_and_utf8_detection() {
        assert!(response(Some("application/json"), b"{}").is_json());
        assert!(response(Some("application/problem+json"), b"{}").is_json());
        assert!(!response(Some("text/plain"), b"{}").is_json());
        assert!(response(Some("text/plain; charset=UTF-8"), b"caf\xc3\xa9").is_utf8());
        assert!(!response(Some("text/plain; charset=utf-8"), b"\xff").is_utf8());
        assert!(!response(Some("application/octet-stream"), b"abc").is_utf8());
        assert_eq!(response(None, b"not json").json_data(), None);
        assert!(response(Some("Application/JSON"), b"{}").is_json());
        assert!(!response(Some("application/json; charset=iso-8859-1"), b"{}").is_utf8());
        assert!(response(Some("text/plain; charset=\"utf-8\""), b"x").is_utf8());
        assert!(response(Some("text/plain; charset = UTF8"), b"x").is_utf8());
        assert!(!response(Some("text/plain; foo=charset=utf-8x"), b"x").is_utf8());
    }

    #[test]
    fn redirect_location() {
        let mut redirect = response(None, b"");
        redirect.status = StatusCode::TEMPORARY_REDIRECT;
        redirect
            .headers
            .insert(LOCATION, HeaderValue::from_static("/public/"));
        assert_eq!(redirect.redirect_url(), Some("/public/"));
    }

    #[test]
    fn logs_by_level_with_fields() {
        let mock = LoggerMock::default();
        let logger = strata_core::Logger::with_sink(Arc::new(mock.clone())).with_request_id("r1");
        logger.debug("d");
        logger.log_with(Level::Error, "e", &[("code", &7)]);
        let logs = mock.logs();
        assert_eq!(logs.debug[0].message, "d");
        assert_eq!(logs.error[0].fields, [("code".to_owned(), "7".to_owned())]);
        assert_eq!(logs.error[0].request_id.as_deref(), Some("r1"));
        assert!(logs.info.is_empty() && logs.warn.is_empty());
    }
}
