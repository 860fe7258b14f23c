use std::time::{Duration, UNIX_EPOCH};

use http::{Request, Response};
use strata_core::{ApiError, HCons, HNil, http_error};
use strata_input::Staged;
use strata_middleware::MiddlewareLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

use crate::{CookieKeys, CookieMiddleware, CookieOptions, Cookies, SameSite};

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
        "Signed cookies need keys: CookieMiddleware::keys(..)"
    );
    let jar = Cookies::new(strata_input::cookies::RequestCookies::default(), None);
    for name in ["", "a b", "a;b", "ü", "a=b"] {
        let error = jar.set(name, "v", &CookieOptions::new()).unwrap_err();
        assert_eq!(error.status(), 500, "{name:?}");
    }
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
