//! Reading `text/event-stream` as the HTML standard's event-stream interpretation says: lines
//! ended by CR, LF or CRLF; `event:`, `data:` (repeatable, joined by LF), `id:` and `retry:`
//! fields; comments (`:`) and unknown fields ignored; an event dispatched by an empty line; a
//! UTF-8 byte order mark at the start left out.

use std::collections::VecDeque;
use std::mem;
use std::time::Duration;

/// One event as the stream carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawEvent {
    /// Its name (`event:`; `message` without one).
    pub(crate) name: String,
    /// Its `data:` lines joined by LF.
    pub(crate) data: String,
}

/// An event, or the line being read, outgrew the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge;

/// The most bytes of an event id the parser keeps: a longer one would be sent back as
/// `Last-Event-ID` on every reconnection.
pub(crate) const MAX_ID: usize = 1024;

/// An event whose `id:` cannot be sent back as `Last-Event-ID`: the id was not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdRefused {
    /// The event's name (`message` without one).
    pub(crate) name: String,
    /// Why, in words.
    pub(crate) reason: String,
}

/// The parser of one subscription; [`Parser::reconnected`] between connections keeps what
/// outlives a connection (the last event id, the reconnection time).
#[derive(Debug)]
pub(crate) struct Parser {
    /// The line read so far, without its end.
    line: Vec<u8>,
    /// The event being read: its `data:` lines, each followed by LF.
    data: Vec<u8>,
    /// Its `event:` name (the last one).
    name: Vec<u8>,
    /// The id the stream last set (`id:`), given to the next dispatched event.
    id_buffer: String,
    /// The id of the last dispatched event: what a reconnection sends as `Last-Event-ID`.
    last_id: String,
    /// The last `retry:`, not yet taken.
    retry: Option<Duration>,
    /// The previous chunk ended with CR: an LF opening the next one ends no line.
    after_cr: bool,
    /// The stream's first line was seen (a byte order mark is left out of it).
    started: bool,
    /// The most bytes an event (its lines, name and id) may take.
    max: usize,
    /// Why the event being read has an id that was not kept (`None`: none was refused).
    refused_id: Option<String>,
    /// The line being read is an `id:` line over [`MAX_ID`]: its bytes are dropped, not kept.
    skipping_id: bool,
    /// Events dispatched, not yet taken.
    ready: VecDeque<Result<RawEvent, IdRefused>>,
}

impl Parser {
    /// A parser whose events are at most `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            line: Vec::new(),
            data: Vec::new(),
            name: Vec::new(),
            id_buffer: String::new(),
            last_id: String::new(),
            retry: None,
            after_cr: false,
            started: false,
            max,
            refused_id: None,
            skipping_id: false,
            ready: VecDeque::new(),
        }
    }

    /// Reads `chunk`, the next bytes of the stream; complete events are then
    /// [`next_event`](Self::next_event)'s.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<(), TooLarge> {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|b| matches!(b, b'\n' | b'\r')) {
            self.extend_line(&rest[..end]);
            self.check()?;
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = mem::take(&mut self.line);
            if mem::take(&mut self.skipping_id) {
                self.refuse_id(format!("more than {MAX_ID} bytes"));
            } else {
                self.line_read(&line);
            }
            // Reuse the allocation.
            self.line = line;
            self.line.clear();
            self.check()?;
        }
        self.extend_line(rest);
        self.check()
    }

    /// Adds `bytes` to the line being read, unless it is an `id:` line over [`MAX_ID`] (whose
    /// bytes are dropped as they come, so that such a line takes no memory).
    fn extend_line(&mut self, bytes: &[u8]) {
        if self.skipping_id {
            return;
        }
        self.line.extend_from_slice(bytes);
        // `id:`, a space, the id: anything longer is refused without reading it whole.
        if self.line.len() > MAX_ID + 4 && self.line.starts_with(b"id:") {
            self.line.clear();
            self.skipping_id = true;
        }
    }

    /// The event being read has an id that cannot be kept: the last id stays.
    fn refuse_id(&mut self, reason: String) {
        self.id_buffer.clone_from(&self.last_id);
        self.refused_id = Some(reason);
    }

    fn check(&self) -> Result<(), TooLarge> {
        let size = self.line.len() + self.data.len() + self.name.len() + self.id_buffer.len();
        if size > self.max {
            Err(TooLarge)
        } else {
            Ok(())
        }
    }

    fn line_read(&mut self, line: &[u8]) {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                self.name.clear();
                self.name.extend_from_slice(value);
            }
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            // An id with NUL is ignored, as an `EventSource` does.
            b"id" if !value.contains(&0) => {
                let id = String::from_utf8_lossy(value);
                if id.len() > MAX_ID {
                    self.refuse_id(format!("more than {MAX_ID} bytes"));
                } else if http::HeaderValue::from_str(&id).is_err() {
                    self.refuse_id(format!("{id:?} holds characters a header cannot"));
                } else {
                    self.refused_id = None;
                    self.id_buffer = id.into_owned();
                }
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits beyond u64 are a very long time (bounded by whoever takes it).
                let millis = std::str::from_utf8(value)
                    .ok()
                    .and_then(|digits| digits.parse::<u64>().ok())
                    .unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(millis));
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        self.last_id.clone_from(&self.id_buffer);
        let name = if self.name.is_empty() {
            "message".to_owned()
        } else {
            String::from_utf8_lossy(&self.name).into_owned()
        };
        self.name.clear();
        if let Some(reason) = self.refused_id.take() {
            // Told even for an id without data: the server meant it to be sent back.
            self.data.clear();
            self.ready.push_back(Err(IdRefused { name, reason }));
            return;
        }
        if self.data.is_empty() {
            return;
        }
        self.data.pop();
        let data = String::from_utf8_lossy(&self.data).into_owned();
        self.data.clear();
        self.ready.push_back(Ok(RawEvent { name, data }));
    }

    /// The next complete event (or one whose id was refused).
    pub(crate) fn next_event(&mut self) -> Option<Result<RawEvent, IdRefused>> {
        self.ready.pop_front()
    }

    /// Whether complete events wait to be taken.
    pub(crate) fn has_events(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The reconnection time the stream last asked for, once.
    pub(crate) fn take_retry(&mut self) -> Option<Duration> {
        self.retry.take()
    }

    /// The most bytes an event may take.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Sets the most bytes an event may take.
    pub(crate) fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// Resumes after the event `id`.
    pub(crate) fn resume_from(&mut self, id: String) {
        self.id_buffer.clone_from(&id);
        self.last_id = id;
    }

    /// The id of the last complete event (empty: none).
    pub(crate) fn last_id(&self) -> &str {
        &self.last_id
    }

    /// A new connection: an event the old one broke off in is dropped; complete events not
    /// taken yet stay, and so does the last event id.
    pub(crate) fn reconnected(&mut self) {
        self.line.clear();
        self.data.clear();
        self.name.clear();
        self.id_buffer.clone_from(&self.last_id);
        self.refused_id = None;
        self.skipping_id = false;
        self.after_cr = false;
        self.started = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, data: &str) -> RawEvent {
        RawEvent {
            name: name.to_owned(),
            data: data.to_owned(),
        }
    }

    fn all(parser: &mut Parser) -> Vec<RawEvent> {
        std::iter::from_fn(|| parser.next_event())
            .map(Result::unwrap)
            .collect()
    }

    /// `stream` fed whole, then byte by byte: the same events either way.
    fn parse(stream: &[u8]) -> (Vec<RawEvent>, String) {
        let mut whole = Parser::new(1024);
        whole.feed(stream).unwrap();
        let mut bytes = Parser::new(1024);
        for byte in stream {
            bytes.feed(std::slice::from_ref(byte)).unwrap();
            bytes.feed(&[]).unwrap();
        }
        let events = all(&mut whole);
        assert_eq!(events, all(&mut bytes), "byte by byte");
        assert_eq!(whole.last_id(), bytes.last_id());
        (events, whole.last_id().to_owned())
    }

    #[test]
    fn the_servers_frames_are_events() {
        let (events, last_id) = parse(
            b": keep-alive\n\nretry: 10\n\nevent: tick\nid: 5\ndata: {\"left\":5}\n\n\
              event: liftoff\ndata: null\n\n",
        );
        assert_eq!(
            events,
            [event("tick", r#"{"left":5}"#), event("liftoff", "null")]
        );
        // An event without an id keeps the last one.
        assert_eq!(last_id, "5");
    }

    #[test]
    fn lines_end_with_cr_lf_or_crlf() {
        for end in ["\n", "\r", "\r\n"] {
            let stream = format!("event: a{end}data: 1{end}{end}data: 2{end}{end}");
            let (events, _) = parse(stream.as_bytes());
            assert_eq!(events, [event("a", "1"), event("message", "2")], "{end:?}");
        }
        // CR then LF in the next chunk is one line end, not two (which would dispatch).
        let mut parser = Parser::new(1024);
        parser.feed(b"data: x\r").unwrap();
        parser.feed(b"\ndata: y\r\n\r\n").unwrap();
        assert_eq!(all(&mut parser), [event("message", "x\ny")]);
    }

    #[test]
    fn fields_as_the_standard_reads_them() {
        let (events, last_id) = parse(
            b"\xEF\xBB\xBFdata:no space\ndata:  two spaces\ndata\n: comment\nunknown: x\n\
              event\nid: 7\n\n\
              id: with\0nul\nevent: ignored\n\n\
              data: \xFF\n\n",
        );
        assert_eq!(
            events,
            [
                event("message", "no space\n two spaces\n"),
                event("message", "\u{FFFD}")
            ]
        );
        // `id` with NUL is ignored; an event without data sets the id all the same.
        assert_eq!(last_id, "7");
        let (_, cleared) = parse(b"id: 3\ndata: a\n\nid\n\n");
        assert_eq!(cleared, "");
    }

    #[test]
    fn retry_is_digits_only() {
        let mut parser = Parser::new(1024);
        parser.feed(b"retry: 1500\n").unwrap();
        assert_eq!(parser.take_retry(), Some(Duration::from_millis(1500)));
        assert_eq!(parser.take_retry(), None);
        parser
            .feed(b"retry: 1.5\nretry: -1\nretry:\nretry: 12a\n\n")
            .unwrap();
        assert_eq!(parser.take_retry(), None);
        parser.feed(b"retry: 99999999999999999999999\n").unwrap();
        assert_eq!(parser.take_retry(), Some(Duration::from_millis(u64::MAX)));
    }

    #[test]
    fn an_event_or_a_line_over_the_limit_is_refused() {
        let mut parser = Parser::new(16);
        parser.feed(b"data: 0123456789\n\n").unwrap();
        assert_eq!(all(&mut parser), [event("message", "0123456789")]);
        // Lines of one event add up.
        let mut parser = Parser::new(16);
        parser.feed(b"data: 01234567\n").unwrap();
        assert_eq!(parser.feed(b"data: 01234567\n"), Err(TooLarge));
        // A line without its end cannot grow without bound either.
        let mut parser = Parser::new(16);
        parser.feed(b": a comment of").unwrap();
        assert_eq!(parser.feed(b" some length"), Err(TooLarge));
        // Comments are dropped as they end.
        let mut parser = Parser::new(16);
        for _ in 0..10 {
            parser.feed(b": keep-alive\n").unwrap();
        }
    }

    #[test]
    fn an_id_too_long_or_not_a_header_is_refused_and_the_last_id_stays() {
        let mut parser = Parser::new(1 << 20);
        let longest = "8".repeat(MAX_ID);
        let stream = format!(
            "id: 1\ndata: one\n\n\
             id: {longest}7\nevent: two\ndata: 2\n\n\
             id: a\x01b\ndata: 3\n\n\
             id: {longest}7\n\n\
             data: 4\n\n\
             id: {longest}\ndata: 5\n\n"
        );
        parser.feed(stream.as_bytes()).unwrap();
        let events: Vec<_> = std::iter::from_fn(|| parser.next_event()).collect();
        let refused = |name: &str, reason: &str| {
            Err(IdRefused {
                name: name.to_owned(),
                reason: reason.to_owned(),
            })
        };
        assert_eq!(
            events,
            [
                Ok(event("message", "one")),
                refused("two", "more than 1024 bytes"),
                refused("message", r#""a\u{1}b" holds characters a header cannot"#),
                // An id alone is refused too: the server meant it to be sent back.
                refused("message", "more than 1024 bytes"),
                // The refused ids were not kept: the next event has the last good one.
                Ok(event("message", "4")),
                Ok(event("message", "5")),
            ]
        );
        assert_eq!(parser.last_id(), longest);
    }

    #[test]
    fn an_id_line_over_the_limit_is_dropped_as_it_comes() {
        // An 8 MiB id, within an event limit that would take it: its line is not kept.
        let mut parser = Parser::new(64 << 20);
        parser.feed(b"id: 1\ndata: one\n\nid: ").unwrap();
        let chunk = vec![b'9'; 64 * 1024];
        for _ in 0..128 {
            parser.feed(&chunk).unwrap();
            assert!(
                parser.line.capacity() < 2 * chunk.len(),
                "the id is not buffered"
            );
        }
        parser.feed(b"\nevent: big\ndata: 2\n\n").unwrap();
        assert_eq!(parser.next_event().unwrap(), Ok(event("message", "one")));
        assert_eq!(
            parser.next_event().unwrap(),
            Err(IdRefused {
                name: "big".to_owned(),
                reason: "more than 1024 bytes".to_owned()
            })
        );
        assert_eq!(parser.last_id(), "1");
    }

    #[test]
    fn a_reconnection_drops_the_broken_event_and_keeps_the_last_id() {
        let mut parser = Parser::new(1024);
        parser.resume_from("2".to_owned());
        assert_eq!(parser.last_id(), "2");
        parser
            .feed(b"id: 3\ndata: three\n\nid: 4\nevent: four\ndata: fo")
            .unwrap();
        parser.reconnected();
        // A byte order mark may open the new stream too; the old one's CR is forgotten.
        parser.feed(b"\xEF\xBB\xBFdata: five\n\n").unwrap();
        assert_eq!(
            all(&mut parser),
            [event("message", "three"), event("message", "five")]
        );
        assert_eq!(parser.last_id(), "3");
    }
}
