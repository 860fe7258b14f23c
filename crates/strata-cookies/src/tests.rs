use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{Request, Response};
use strata_core::{ApiError, HCons, HNil, http_error};
use strata_input::Staged;
use strata_middleware::MiddlewareLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

use crate::{
    CookieKeys, CookieMiddleware, CookieOptions, CookieRule, Cookies, RequestCookies, SameSite,
};

const SECRET: &str = "0123456789abcdef0123456789abcdef";

type Ctx = HCons<Cookies, HNil>;

fn request(cookie: Option<&str>, path: &str) -> Request<Staged> {
    let mut builder = Request::builder().uri(path);
    if let Some(cookie) = cookie {
        builder = builder.header("cookie", cookie);
    }
    builder.body(Staged::default()).unwrap()
}

fn set_cookies(headers: &http::HeaderMap) -> Vec<&str> {
    headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect()
}

/// A service behind the cookie middleware with `keys`: `/login` sets a signed session and a
/// plain theme, `/logout` clears the session then fails with 403, `/me` reads the session.
fn service(
    keys: Option<CookieKeys>,
) -> impl tower::Service<Request<Staged>, Response = Response<String>, Error = ApiError> + Clone {
    let middleware = match keys {
        Some(keys) => CookieMiddleware::new().keys(keys),
        None => CookieMiddleware::new(),
    };
    ServiceBuilder::new()
        .layer(MiddlewareLayer::new(middleware.into_middleware()))
        .service(service_fn(|request: Request<Staged<Ctx>>| async move {
            let cookies = request.body().ctx.head.clone();
            match request.uri().path() {
                "/login" => {
                    cookies.set_signed("session", "ada", &CookieOptions::new())?;
                    cookies.set(
                        "theme",
                        "dark blue",
                        &CookieOptions::new()
                            .http_only(false)
                            .same_site(SameSite::Strict)
                            .max_age(Duration::from_secs(60)),
                    )?;
                    Ok(Response::new("in".to_owned()))
                }
                "/logout" => {
                    cookies.clear("session", &CookieOptions::new())?;
                    Err(http_error!(403, "Goodbye"))
                }
                _ => Ok(Response::new(
                    cookies.get_signed("session").unwrap_or_default(),
                )),
            }
        }))
}

#[tokio::test]
async fn set_cookies_travel_with_the_response_and_signed_ones_verify() {
    let keys = CookieKeys::new([SECRET]).unwrap();
    let response = service(Some(keys.clone()))
        .oneshot(request(None, "/login"))
        .await
        .unwrap();
    let set = set_cookies(response.headers());
    assert_eq!(set.len(), 2, "{set:?}");
    let session = set[0];
    assert!(session.starts_with("session="), "{session}");
    assert!(
        session.ends_with("; HttpOnly; SameSite=Lax; Path=/"),
        "{session}"
    );
    assert_eq!(
        set[1],
        "theme=dark%20blue; SameSite=Strict; Path=/; Max-Age=60"
    );

    // The client sends the session back: the signed value reads as what was signed.
    let pair = session.split(';').next().unwrap();
    let response = service(Some(keys.clone()))
        .oneshot(request(Some(pair), "/me"))
        .await
        .unwrap();
    assert_eq!(response.body(), "ada");
    assert!(set_cookies(response.headers()).is_empty());

    // Altered, or verified with other keys: absent.
    let altered = pair.replace("ada", "eve");
    let response = service(Some(keys))
        .oneshot(request(Some(&altered), "/me"))
        .await
        .unwrap();
    assert_eq!(response.body(), "");
    let other = CookieKeys::new(["another secret, thirty-two bytes!"]).unwrap();
    let response = service(Some(other))
        .oneshot(request(Some(pair), "/me"))
        .await
        .unwrap();
    assert_eq!(response.body(), "");
}

#[tokio::test]
async fn a_cookie_cleared_before_an_error_is_cleared_in_the_error_response() {
    let error = service(None)
        .oneshot(request(Some("session=x"), "/logout"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 403);
    let set = set_cookies(error.headers().unwrap());
    assert_eq!(set.len(), 1);
    assert!(set[0].starts_with("session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0; Expires="));
}

#[tokio::test]
async fn signing_without_keys_and_bad_names_are_server_errors() {
    let error = service(None)
        .oneshot(request(None, "/login"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 500);
    assert_eq!(
        error.message(),
        r#"Cookie "session": signed cookies need keys: CookieMiddleware::keys(..)"#
    );
    let jar = Cookies::new(strata_input::cookies::RequestCookies::default(), None);
    for name in ["", "a b", "a;b", "ü", "a=b", "a\r\nb"] {
        let error = jar.set(name, "v", &CookieOptions::new()).unwrap_err();
        assert_eq!(error.rule(), CookieRule::Name, "{name:?}");
        assert_eq!(error.name(), name);
        // In a handler, `?` makes it a 500 naming the rule.
        let error = ApiError::from(error);
        assert_eq!(error.status(), 500, "{name:?}");
        assert!(error.message().contains("a name is a token"), "{name:?}");
    }
    assert_eq!(
        jar.set("a\nb", "v", &CookieOptions::new())
            .unwrap_err()
            .to_string(),
        r#"Cookie "a\nb": a name is a token: visible ASCII without separators (RFC 6265 §4.1.1)"#
    );
    // The last of one name, path and domain wins, as it would in the client.
    jar.set("a", "1", &CookieOptions::new()).unwrap();
    jar.set("a", "2", &CookieOptions::new()).unwrap();
    jar.set("a", "3", &CookieOptions::new().path("/other".to_owned()))
        .unwrap();
    assert_eq!(jar.pending(), 2);
}

#[tokio::test]
async fn a_malformed_or_oversized_cookie_header_is_a_400_never_a_panic() {
    let long = format!("big={}", "x".repeat(5000));
    let error = service(None)
        .oneshot(request(Some(&long), "/me"))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status().as_u16(), error.message()),
        (400, "Cookie big: longer than 4096 bytes")
    );
    // Pairs a browser would skip are skipped.
    let response = service(None)
        .oneshot(request(Some("=; ;;novalue; a=%zz"), "/me"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[test]
fn every_attribute_is_written() {
    let jar = Cookies::new(strata_input::cookies::RequestCookies::default(), None);
    let options = CookieOptions::new()
        .path(None)
        .domain("example.com")
        .expires(UNIX_EPOCH + Duration::from_secs(1_000_000_000))
        .secure(true)
        .partitioned(true)
        .same_site(SameSite::None);
    jar.set("id", "1", &options).unwrap();
    let mut outcome: Result<Response<()>, ApiError> = Ok(Response::new(()));
    strata_middleware::AmendResponse::amend(crate::CookieAmends(jar), &mut outcome);
    let response = outcome.unwrap();
    assert_eq!(
        set_cookies(response.headers()),
        [
            "id=1; HttpOnly; SameSite=None; Partitioned; Secure; Domain=example.com; Expires=Sun, 09 Sep 2001 01:46:40 GMT"
        ]
    );
}

/// A signed cookie set with an expiry, sent back after it: refused, though its signature is
/// good (a replayed old value).
#[tokio::test]
async fn a_signed_value_replayed_after_its_expiry_is_refused() {
    let keys = CookieKeys::new([SECRET]).unwrap();
    let jar = Cookies::new(RequestCookies::default(), Some(keys.clone()));
    let past = SystemTime::now() - Duration::from_secs(1);
    jar.set_signed("session", "ada", &CookieOptions::new().expires(past))
        .unwrap();
    let later = SystemTime::now() + Duration::from_secs(3600);
    jar.set_signed("remember", "ada", &CookieOptions::new().expires(later))
        .unwrap();
    let mut outcome: Result<Response<()>, ApiError> = Ok(Response::new(()));
    strata_middleware::AmendResponse::amend(crate::CookieAmends(jar), &mut outcome);
    let response = outcome.unwrap();
    let sent: Vec<&str> = set_cookies(response.headers())
        .into_iter()
        .map(|set| set.split(';').next().unwrap())
        .collect();
    let read =
        RequestCookies::parse(&request(Some(&sent.join("; ")), "/").headers().clone()).unwrap();
    assert_eq!(read.get_signed("remember", &keys).as_deref(), Some("ada"));
    assert_eq!(read.get_signed("session", &keys), None);
}

/// The error `set` refuses the cookie `name` (valued `v`) with `options`, as a message, after
/// checking that it names `rule`.
fn refusal(name: &str, options: &CookieOptions, rule: CookieRule) -> String {
    let jar = Cookies::new(RequestCookies::default(), None);
    let error = jar.set(name, "v", options).unwrap_err();
    assert_eq!((error.name(), error.rule()), (name, rule));
    // Refused when cleared too: a browser ignores such a removal.
    assert_eq!(jar.clear(name, options).unwrap_err(), error);
    assert_eq!(jar.pending(), 0);
    error.to_string()
}

#[test]
fn same_site_none_needs_secure() {
    let options = CookieOptions::new().same_site(SameSite::None);
    assert_eq!(
        refusal("id", &options, CookieRule::SameSiteNoneWithoutSecure),
        r#"Cookie "id": SameSite=None needs Secure"#
    );
    accepted("id", &options.secure(true));
}

#[test]
fn partitioned_needs_secure() {
    let options = CookieOptions::new().partitioned(true);
    assert_eq!(
        refusal("id", &options, CookieRule::PartitionedWithoutSecure),
        r#"Cookie "id": Partitioned needs Secure"#
    );
    accepted("id", &options.secure(true));
}

#[test]
fn the_secure_prefix_needs_secure() {
    assert_eq!(
        refusal(
            "__Secure-id",
            &CookieOptions::new(),
            CookieRule::SecurePrefix
        ),
        r#"Cookie "__Secure-id": the __Secure- prefix needs Secure"#
    );
    // Browsers match the prefix whatever its case.
    refusal(
        "__secure-id",
        &CookieOptions::new(),
        CookieRule::SecurePrefix,
    );
    accepted("__Secure-id", &CookieOptions::new().secure(true));
    accepted("_Secure-id", &CookieOptions::new());
}

#[test]
fn the_host_prefix_needs_secure_path_root_and_no_domain() {
    let secure = CookieOptions::new().secure(true);
    for options in [
        CookieOptions::new(),
        secure.clone().path(Some("/app".to_owned())),
        secure.clone().path(None),
        secure.clone().domain("example.com"),
    ] {
        assert_eq!(
            refusal("__Host-id", &options, CookieRule::HostPrefix),
            r#"Cookie "__Host-id": the __Host- prefix needs Secure, Path=/ and no Domain"#
        );
    }
    refusal("__HOST-id", &CookieOptions::new(), CookieRule::HostPrefix);
    accepted("__Host-id", &secure);
}

#[test]
fn a_path_or_domain_with_a_semicolon_or_a_control_character_is_refused() {
    for path in ["/a;b", "/a\r\nSet-Cookie: x=y", "/a\0", "/\x7f", "/\u{85}"] {
        let options = CookieOptions::new().path(Some(path.to_owned()));
        assert_eq!(
            refusal("id", &options, CookieRule::Path),
            r#"Cookie "id": Path holds `;` or a control character"#
        );
    }
    for domain in ["example.com; Secure", "example.com\n", "\texample.com"] {
        let options = CookieOptions::new().domain(domain);
        assert_eq!(
            refusal("id", &options, CookieRule::Domain),
            r#"Cookie "id": Domain holds `;` or a control character"#
        );
    }
    accepted("id", &CookieOptions::new().path(Some("/a b/ü".to_owned())));
}

#[test]
fn a_cookie_longer_than_browsers_keep_is_refused() {
    // The value as sent, percent-encoded, is what counts: 2,046 spaces are 6,138 bytes.
    let jar = Cookies::new(RequestCookies::default(), None);
    let error = jar
        .set("id", " ".repeat(2046), &CookieOptions::new())
        .unwrap_err();
    assert_eq!(error.rule(), CookieRule::TooLong);
    assert_eq!(
        error.to_string(),
        r#"Cookie "id": name and value longer than 4096 bytes"#
    );
    jar.set("id", "x".repeat(4094), &CookieOptions::new())
        .unwrap();
    assert_eq!(
        jar.set("id", "x".repeat(4095), &CookieOptions::new())
            .unwrap_err()
            .rule(),
        CookieRule::TooLong
    );
}

/// A value is percent-encoded, never refused: whatever it holds, it is one value.
#[test]
fn a_value_with_a_semicolon_or_a_control_character_is_sent_encoded() {
    let headers = sent(|jar| {
        jar.set(
            "id",
            "a; Domain=evil.example\r\nX: y",
            &CookieOptions::new(),
        )
    });
    assert_eq!(
        headers,
        ["id=a%3B%20Domain%3Devil.example%0D%0AX%3A%20y; HttpOnly; SameSite=Lax; Path=/"]
    );
}

#[test]
fn an_expiry_beyond_9999_is_written_as_9999_and_never_panics() {
    let far = UNIX_EPOCH + Duration::from_secs(1 << 40);
    let headers = sent(|jar| jar.set("id", "1", &CookieOptions::new().expires(far)));
    assert!(
        headers[0].ends_with("; Expires=Fri, 31 Dec 9999 23:59:59 GMT"),
        "{headers:?}"
    );
}

/// The `Set-Cookie` headers of what `set` records in a jar without keys.
fn sent(set: impl FnOnce(&Cookies) -> Result<(), crate::CookieError>) -> Vec<String> {
    let jar = Cookies::new(RequestCookies::default(), None);
    set(&jar).unwrap();
    let mut outcome: Result<Response<()>, ApiError> = Ok(Response::new(()));
    strata_middleware::AmendResponse::amend(crate::CookieAmends(jar), &mut outcome);
    set_cookies(outcome.unwrap().headers())
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The cookie `name` with `options` is set and cleared.
fn accepted(name: &str, options: &CookieOptions) {
    let jar = Cookies::new(RequestCookies::default(), None);
    jar.set(name, "v", options).unwrap();
    jar.clear(name, options).unwrap();
}
