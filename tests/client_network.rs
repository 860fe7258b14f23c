//! The Rust client against servers that misbehave, over real sockets (a raw `TcpListener` on
//! 127.0.0.1:0 writing HTTP/1.1 by hand), on tokio's paused clock: an error body that drips
//! ends at the timeout; reconnections back off with jitter and give up; an event id too long
//! to send back is refused; a silent connection is dropped at the default idle timeout.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use strata::client::{
    Client, ClientError, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RECONNECTS, DEFAULT_RECONNECT_DELAY,
    DEFAULT_TIMEOUT, HttpClient, MIN_RECONNECT_DELAY, Subscription,
};
use strata::{Events, FileResponse, Operation};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Feed {
    Count(u32),
}

const FEED: Operation<(), Events<Feed>> = Operation::get("/feed");
const FILE: Operation<(), FileResponse> = Operation::get("/file");

/// The head of an event stream whose body is chunked (so that a drop is an error, not an end).
const STREAM_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                             transfer-encoding: chunked\r\n\r\n";
/// The head of a 500 whose body is chunked.
const ERROR_HEAD: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\n\
                            content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
/// The last chunk: a clean end.
const END: &[u8] = b"0\r\n\r\n";

/// Far above every timeout the tests configure (on the paused clock): reached only when the
/// client hangs.
const FAIL_SAFE: Duration = Duration::from_secs(3600);

/// `data` as one chunk.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(b"\r\n");
    chunk
}

/// What a raw server saw: each connection's instant (on the test's clock) and request head.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<(Instant, String)>>>);

impl Seen {
    fn instants(&self) -> Vec<Instant> {
        self.0.lock().unwrap().iter().map(|(at, _)| *at).collect()
    }

    fn heads(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, head)| head.clone())
            .collect()
    }
}

/// A server on 127.0.0.1:0: each connection's request head is read and recorded, then
/// `answer` gets the connection and its number (from 0).
async fn raw_server<F, A>(answer: F) -> (SocketAddr, Seen)
where
    F: Fn(TcpStream, usize) -> A + Send + 'static,
    A: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let recorded = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let at = Instant::now();
            let head = read_head(&mut stream).await;
            let number = {
                let mut seen = recorded.0.lock().unwrap();
                seen.push((at, head));
                seen.len() - 1
            };
            tokio::spawn(answer(stream, number));
        }
    });
    (addr, seen)
}

/// The request's head (a GET has no body).
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut buffer = vec![0; 64 * 1024];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.unwrap();
        assert!(read > 0, "the request's head is whole");
        head.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8(head).unwrap()
}

/// A client of the server at `addr`, over hyper-util's pooled client.
fn client(addr: SocketAddr) -> HttpClient {
    Client::http(&format!("http://{addr}")).unwrap()
}

/// The next item, or a panic when the client hangs.
async fn next<T: serde::de::DeserializeOwned>(
    subscription: &mut Subscription<T>,
) -> Option<Result<T, ClientError>> {
    tokio::time::timeout(FAIL_SAFE, subscription.next())
        .await
        .expect("the subscription hung")
}

/// Answers a 500 whose body drips, one byte a second, without end.
async fn drip_an_error(mut stream: TcpStream, _: usize) {
    if stream.write_all(ERROR_HEAD).await.is_err() {
        return;
    }
    while stream.write_all(&chunk(b" ")).await.is_ok() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_download_whose_error_body_drips_ends_at_the_timeout() {
    let (addr, seen) = raw_server(drip_an_error).await;
    let timeout = Duration::from_secs(5);
    for (configured, ends_after) in [(Some(timeout), timeout), (None, DEFAULT_TIMEOUT)] {
        let client = match configured {
            Some(timeout) => client(addr).timeout(timeout),
            None => client(addr).no_timeout(),
        };
        let started = Instant::now();
        let download = tokio::time::timeout(FAIL_SAFE, client.call(&FILE, ()).download());
        let error = download.await.expect("the download hung").unwrap_err();
        assert!(
            matches!(error, ClientError::Timeout(after) if after == ends_after),
            "{error:?}"
        );
        let took = started.elapsed();
        assert!(
            took >= ends_after && took < ends_after + Duration::from_secs(1),
            "{took:?}"
        );
    }
    assert_eq!(seen.instants().len(), 2);
}

/// A success's body has no total deadline but each piece has one: a body that goes silent
/// after a piece ends at the timeout, read whole or piece by piece; one that drips slower than
/// the timeout in all, each piece within it, is read whole.
#[tokio::test(start_paused = true)]
async fn a_download_whose_body_goes_silent_ends_at_the_timeout() {
    const OK_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
    let (addr, _) = raw_server(|mut stream, number| async move {
        let mut answer = OK_HEAD.to_vec();
        answer.extend(chunk(b"first"));
        stream.write_all(&answer).await.unwrap();
        if number < 2 {
            // Held open, silent.
            std::future::pending::<()>().await;
        }
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            stream.write_all(&chunk(b".")).await.unwrap();
        }
        stream.write_all(END).await.unwrap();
    })
    .await;
    let timeout = Duration::from_secs(5);
    let client = client(addr).timeout(timeout);
    let is_the_timeout =
        |error: &ClientError| matches!(error, ClientError::Timeout(after) if *after == timeout);

    let started = Instant::now();
    let whole = async {
        client
            .call(&FILE, ())
            .download()
            .await?
            .bytes(1 << 20)
            .await
    };
    let error = tokio::time::timeout(FAIL_SAFE, whole)
        .await
        .expect("the download hung")
        .unwrap_err();
    assert!(is_the_timeout(&error), "{error:?}");
    let took = started.elapsed();
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(1),
        "{took:?}"
    );

    let download = client.call(&FILE, ()).download().await.unwrap();
    let mut pieces = download.into_stream();
    let first = tokio::time::timeout(FAIL_SAFE, pieces.next())
        .await
        .unwrap();
    assert_eq!(first.unwrap().unwrap(), "first");
    let second = tokio::time::timeout(FAIL_SAFE, pieces.next())
        .await
        .expect("the download hung");
    let error = second.unwrap().unwrap_err();
    let error = error.downcast_ref::<ClientError>().unwrap();
    assert!(is_the_timeout(error), "{error:?}");

    let started = Instant::now();
    let slow = client
        .call(&FILE, ())
        .download()
        .await
        .unwrap()
        .bytes(1 << 20);
    let body = tokio::time::timeout(FAIL_SAFE, slow)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body, format!("first{}", ".".repeat(20)));
    assert!(started.elapsed() >= Duration::from_secs(20));
}

#[tokio::test(start_paused = true)]
async fn a_subscription_whose_error_body_drips_ends_at_the_timeout() {
    let (addr, seen) = raw_server(drip_an_error).await;
    let timeout = Duration::from_secs(5);
    let mut subscription = client(addr).timeout(timeout).subscribe(&FEED, ());
    let started = Instant::now();
    let error = next(&mut subscription).await.unwrap().unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(after) if after == timeout),
        "{error:?}"
    );
    assert!(started.elapsed() < timeout + Duration::from_secs(1));
    assert!(
        next(&mut subscription).await.is_none(),
        "an error is the end"
    );
    assert_eq!(seen.instants().len(), 1, "an error response is not retried");
}

/// A server that asks for `retry: 0` and drops every connection after a comment: the
/// subscription backs off (from the shortest delay, the server's 0 being below it), each wait
/// within [delay, 1.5 × delay] and longer than the one before, and gives up after
/// `DEFAULT_MAX_RECONNECTS` with the error.
#[tokio::test(start_paused = true)]
async fn reconnections_back_off_and_give_up() {
    let too_many = Arc::new(Notify::new());
    let told = Arc::clone(&too_many);
    let (addr, seen) = raw_server(move |mut stream, number| {
        if number == 100 {
            told.notify_one();
        }
        async move {
            let mut answer = STREAM_HEAD.to_vec();
            answer.extend(chunk(b"retry: 0\n: hello\n\n"));
            let _ = stream.write_all(&answer).await;
            // Dropped: the chunked body breaks off.
        }
    })
    .await;
    let mut subscription = client(addr).subscribe(&FEED, ());
    let error = tokio::select! {
        item = next(&mut subscription) => item.unwrap().unwrap_err(),
        () = too_many.notified() => panic!("100 connections, and no end"),
    };
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
    assert!(next(&mut subscription).await.is_none());

    let instants = seen.instants();
    assert_eq!(instants.len(), 1 + DEFAULT_MAX_RECONNECTS as usize);
    let waits: Vec<Duration> = instants.windows(2).map(|w| w[1] - w[0]).collect();
    for (failure, wait) in waits.iter().enumerate() {
        let delay = MIN_RECONNECT_DELAY * (1 << failure);
        assert!(
            *wait >= delay && *wait <= delay * 3 / 2,
            "wait {failure}: {wait:?} for {delay:?} ({waits:?})"
        );
    }
    assert!(waits.windows(2).all(|w| w[1] > w[0]), "{waits:?}");
}

/// Eight subscribers of a server that drops them all at once (a restart) come back spread
/// over [delay, 1.5 × delay], not at one instant.
#[tokio::test(start_paused = true)]
async fn the_subscribers_of_a_restarted_server_come_back_spread_out() {
    const SUBSCRIBERS: usize = 8;
    let (addr, seen) = raw_server(|mut stream, number| async move {
        let mut answer = STREAM_HEAD.to_vec();
        if number < SUBSCRIBERS {
            // An event, then the restart.
            answer.extend(chunk(b"id: 1\nevent: count\ndata: 1\n\n"));
        } else {
            answer.extend(chunk(b"event: count\ndata: 2\n\n"));
            answer.extend_from_slice(END);
        }
        let _ = stream.write_all(&answer).await;
    })
    .await;
    let client = client(addr);
    let subscribers: Vec<_> = (0..SUBSCRIBERS)
        .map(|_| {
            let mut subscription = client.subscribe(&FEED, ());
            tokio::spawn(async move {
                let mut events = Vec::new();
                while let Some(event) = next(&mut subscription).await {
                    events.push(event.unwrap());
                }
                events
            })
        })
        .collect();
    for subscriber in subscribers {
        assert_eq!(subscriber.await.unwrap(), [Feed::Count(1), Feed::Count(2)]);
    }
    let instants = seen.instants();
    assert_eq!(instants.len(), 2 * SUBSCRIBERS);
    let dropped = instants[SUBSCRIBERS - 1];
    let back = &instants[SUBSCRIBERS..];
    for at in back {
        let wait = *at - dropped;
        assert!(
            wait >= DEFAULT_RECONNECT_DELAY && wait <= DEFAULT_RECONNECT_DELAY * 3 / 2,
            "{wait:?}"
        );
    }
    let spread = *back.iter().max().unwrap() - *back.iter().min().unwrap();
    assert!(spread > Duration::ZERO, "all at once");
    for head in &seen.heads()[SUBSCRIBERS..] {
        assert!(head.contains("last-event-id: 1\r\n"), "{head}");
    }
}

/// A server that sends an 8 MiB event id, then drops the connection: the event is an error
/// naming the rule, and the reconnection sends the last good id, not the long one.
#[tokio::test(start_paused = true)]
async fn an_event_id_too_long_is_refused_and_not_sent_back() {
    let (addr, seen) = raw_server(|mut stream, number| async move {
        let mut answer = STREAM_HEAD.to_vec();
        if number == 0 {
            answer.extend(chunk(b"id: 1\nevent: count\ndata: 1\n\n"));
            let mut long = b"id: ".to_vec();
            long.resize(8 << 20, b'9');
            long.extend_from_slice(b"\nevent: count\ndata: 2\n\n");
            answer.extend(chunk(&long));
        } else {
            answer.extend(chunk(b"event: count\ndata: 3\n\n"));
            answer.extend_from_slice(END);
        }
        let _ = stream.write_all(&answer).await;
    })
    .await;
    let mut subscription = client(addr).subscribe(&FEED, ());
    assert_eq!(
        next(&mut subscription).await.unwrap().unwrap(),
        Feed::Count(1)
    );
    let refused = next(&mut subscription).await.unwrap().unwrap_err();
    assert!(
        matches!(&refused, ClientError::Decode { path, message, .. }
            if path == "count" && message.contains("Last-Event-ID") && message.contains("1024")),
        "{refused:?}"
    );
    assert_eq!(subscription.last_event_id(), Some("1"));
    assert_eq!(
        next(&mut subscription).await.unwrap().unwrap(),
        Feed::Count(3)
    );
    assert!(next(&mut subscription).await.is_none());
    let heads = seen.heads();
    assert_eq!(heads.len(), 2);
    assert!(heads[1].contains("last-event-id: 1\r\n"), "{}", heads[1]);
    assert!(heads[1].len() < 1024, "{} bytes", heads[1].len());
}

/// A connection that sends its head and then nothing (half-open): with the defaults, the
/// subscription drops it at the idle timeout, longer than a Strata server's keep-alive
/// interval, and reconnects.
#[tokio::test(start_paused = true)]
async fn a_silent_connection_is_dropped_at_the_default_idle_timeout() {
    let keep_alive = strata::events::EventStreamOptions::default()
        .keep_alive
        .unwrap();
    assert!(DEFAULT_IDLE_TIMEOUT >= 2 * keep_alive, "{keep_alive:?}");
    let (addr, seen) = raw_server(|mut stream, number| async move {
        if number == 0 {
            stream.write_all(STREAM_HEAD).await.unwrap();
            // Held open, silent.
            std::future::pending::<()>().await;
        }
        let mut answer = STREAM_HEAD.to_vec();
        answer.extend(chunk(b"event: count\ndata: 1\n\n"));
        answer.extend_from_slice(END);
        let _ = stream.write_all(&answer).await;
    })
    .await;
    let mut subscription = client(addr).subscribe(&FEED, ());
    assert_eq!(
        next(&mut subscription).await.unwrap().unwrap(),
        Feed::Count(1)
    );
    assert!(next(&mut subscription).await.is_none());
    let instants = seen.instants();
    assert_eq!(instants.len(), 2);
    let wait = instants[1] - instants[0];
    let least = DEFAULT_IDLE_TIMEOUT + DEFAULT_RECONNECT_DELAY;
    assert!(
        wait >= least && wait <= least + DEFAULT_RECONNECT_DELAY / 2,
        "{wait:?}"
    );
}

/// The same silent connection with `no_idle_timeout`: waited on as long as it stays open (ten
/// times the default idle timeout here, on the paused clock), no reconnection.
#[tokio::test(start_paused = true)]
async fn with_no_idle_timeout_a_silent_connection_is_waited_on() {
    let (addr, seen) = raw_server(|mut stream, _| async move {
        stream.write_all(STREAM_HEAD).await.unwrap();
        std::future::pending::<()>().await;
    })
    .await;
    let mut subscription = client(addr).subscribe(&FEED, ()).no_idle_timeout();
    let waited = tokio::time::timeout(10 * DEFAULT_IDLE_TIMEOUT, subscription.next()).await;
    assert!(waited.is_err(), "{waited:?}");
    assert_eq!(seen.instants().len(), 1, "no reconnection");
}
