//! Cookies through the facade: the cookie middleware and the cookie input sources over real
//! sockets with reqwest's cookie jar, signed cookies with key rotation, cookie credentials,
//! and what the OpenAPI document says of them.
#![allow(clippy::unwrap_used)] // a test: a failed set-up is a failed test

use std::sync::Arc;

use garde::Validate;
use http::Method;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::cookies::{CookieKeys, CookieMiddleware, CookieOptions, Cookies, SameSite};
use strata::core::logger::Level;
use strata::openapi::Documentation;
use strata::prelude::*;
use strata::server::LocalAddr;
use strata::testing::LoggerMock;
use strata::{InputSource, Security};
use strata::{Router, Routing};
use tower::ServiceExt;

const OLD_SECRET: &str = "an older secret, thirty-two bytes long";
const NEW_SECRET: &str = "the newest secret, also 32 bytes or more";
/// `ada` signed for `session` with [`OLD_SECRET`] by earlier versions (the value alone signed),
/// percent-encoded as they sent it.
const VALUE_ONLY: &str = "s%3AYcETPRWp%2BdtB2ARLFmsqQEVRMho4b5kJpPZ%2F39RBAAc%3Dada";

#[derive(Deserialize, Validate, JsonSchema)]
struct Login {
    #[garde(length(chars, min = 1, max = 40))]
    name: String,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Session {
    name: String,
}

/// What `GET /v1/whoami` reads: the signed `session` cookie (the signed-cookies source) and an
/// optional plain `theme` cookie.
#[derive(Deserialize, Validate, JsonSchema)]
struct WhoAmI {
    #[garde(length(chars, min = 1))]
    session: String,
    #[garde(skip)]
    theme: Option<String>,
}

#[derive(Serialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Identity {
    name: String,
    theme: Option<String>,
}

fn keys(secrets: &[&str]) -> CookieKeys {
    CookieKeys::new(secrets).unwrap()
}

/// `POST /v1/login` sets a signed session and a theme; `GET /v1/whoami` reads them through the
/// input sources; `POST /v1/logout` clears the session and answers 401 (the cookie cleared
/// all the same); `GET /v1/me` reads the session through the middleware, behind a cookie
/// credential.
fn routing(signing: CookieKeys) -> Routing {
    let cookies = default_endpoints_factory().add_middleware(
        CookieMiddleware::new()
            .keys(signing.clone())
            .into_middleware(),
    );
    let login = cookies
        .post()
        .handler(async |input: Login, cookies: Cookies| {
            cookies.set_signed("session", &input.name, &CookieOptions::new())?;
            cookies.set("theme", "dark blue", &CookieOptions::new().http_only(false))?;
            Ok(Session { name: input.name })
        });
    let logout = cookies
        .post()
        .handler_without_input(async |cookies: Cookies| {
            cookies.clear("session", &CookieOptions::new())?;
            Err::<Session, _>(http_error!(401, "Signed out"))
        });
    let whoami = default_endpoints_factory()
        .get()
        .handler(async |input: WhoAmI| {
            Ok(Identity {
                name: input.session,
                theme: input.theme,
            })
        });
    let me = default_endpoints_factory()
        .add_middleware(
            CookieMiddleware::new()
                .keys(signing)
                .into_middleware()
                .security(Security::cookie("session").description("The signed session")),
        )
        .get()
        .handler_without_input(async |cookies: Cookies| {
            let name = cookies
                .get_signed("session")
                .ok_or_else(|| http_error!(401, "Not signed in"))?;
            Ok(Session { name })
        });
    // A cookie for cross-site requests, without `Secure`: browsers would drop it.
    let embed = cookies
        .post()
        .handler_without_input(async |cookies: Cookies| {
            let options = CookieOptions::new().same_site(SameSite::None);
            cookies.set("embed", "1", &options)?;
            Ok(Session {
                name: String::new(),
            })
        });
    routing! {
        "v1" => {
            "embed" => embed,
            "login" => login,
            "logout" => logout,
            "whoami" => whoami,
            "me" => me,
        }
    }
}

/// GET reads the query, the path, then the signed cookies, then the plain ones.
fn config(verifying: CookieKeys) -> strata::ConfigBuilder {
    create_config()
        .cors(Cors::Disabled)
        .cookie_keys(verifying)
        .input_sources(
            &Method::GET,
            [
                InputSource::Query,
                InputSource::Params,
                InputSource::SignedCookies,
                InputSource::Cookies,
            ],
        )
}

async fn serve(signing: CookieKeys, verifying: CookieKeys) -> (strata::Server, String) {
    let listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let server = create_server(&config(verifying).listen(listen).build(), &routing(signing))
        .await
        .unwrap();
    let LocalAddr::Tcp(addr) = server.servers()[0].local_addr.clone() else {
        panic!("not TCP");
    };
    (server, format!("http://{addr}"))
}

fn jar_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap()
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn cookies_round_trip_through_a_real_clients_jar() {
    let (server, base) = serve(keys(&[OLD_SECRET]), keys(&[OLD_SECRET])).await;
    let client = jar_client();
    // Before signing in: the signed session is absent, so the input's rule refuses it.
    let (status, body) = json_of(
        client
            .get(format!("{base}/v1/whoami"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (400, &json!("session: required"))
    );

    let response = client
        .post(format!("{base}/v1/login"))
        .json(&json!({"name": "ada"}))
        .send()
        .await
        .unwrap();
    let set: Vec<String> = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(set.len(), 2, "{set:?}");
    assert!(
        set[0].starts_with("session=") && set[0].contains("HttpOnly"),
        "{set:?}"
    );
    assert_eq!(set[1], "theme=dark%20blue; SameSite=Lax; Path=/");
    assert_eq!(response.status(), 200);

    // The jar sends both back: the signed source gives the value signed, the plain one the
    // decoded theme.
    let (status, body) = json_of(
        client
            .get(format!("{base}/v1/whoami"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"name": "ada", "theme": "dark blue"}));
    let (status, body) = json_of(client.get(format!("{base}/v1/me")).send().await.unwrap()).await;
    assert_eq!((status, &body["data"]["name"]), (200, &json!("ada")));

    // Signing out fails with 401, and the jar forgets the session all the same.
    let response = client
        .post(format!("{base}/v1/logout"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(
        response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .starts_with("session=; ")
    );
    let (status, body) = json_of(client.get(format!("{base}/v1/me")).send().await.unwrap()).await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (401, &json!("Missing credential: session (cookie)"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn forged_cookies_read_as_absent_and_rotated_keys_still_verify() {
    // Signed with the old secret; the server now signs with a new one and still verifies the
    // old.
    let old = keys(&[OLD_SECRET]);
    let (server, base) = serve(
        keys(&[NEW_SECRET, OLD_SECRET]),
        keys(&[NEW_SECRET, OLD_SECRET]),
    )
    .await;
    let client = reqwest::Client::new();
    let signed = old.sign("session", "ada");
    let encoded = |value: &str| {
        value
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D")
    };
    let whoami = |cookie: String| {
        client
            .get(format!("{base}/v1/whoami"))
            .header("cookie", cookie)
            .send()
    };
    let (status, body) = json_of(
        whoami(format!("session={}", encoded(&signed)))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, &body["data"]["name"]), (200, &json!("ada")));
    // Altered: absent (so required), never a 500.
    let forged = encoded(&signed.replace("ada", "eve"));
    let (status, body) = json_of(whoami(format!("session={forged}")).await.unwrap()).await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (400, &json!("session: required"))
    );
    // Oversized and malformed headers: a clear 400.
    let (status, body) = json_of(whoami(format!("big={}", "x".repeat(5000))).await.unwrap()).await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (400, &json!("Cookie big: longer than 4096 bytes"))
    );
    let (status, _) = json_of(whoami("=;;novalue".to_owned()).await.unwrap()).await;
    assert_eq!(status, 400);
    // After rotation, what the server signs no longer verifies with the old key alone.
    let login = client
        .post(format!("{base}/v1/login"))
        .json(&json!({"name": "grace"}))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    // Read back as the server reads it (percent-decoded).
    let mut headers = http::HeaderMap::new();
    headers.insert("cookie", cookie.parse().unwrap());
    let read = strata::cookies::RequestCookies::parse(&headers).unwrap();
    let decoded = read.all().next().unwrap().1.to_owned();
    assert_eq!(old.verify("session", &decoded), None);
    assert_eq!(
        keys(&[NEW_SECRET]).verify("session", &decoded).as_deref(),
        Some("grace")
    );
    server.shutdown().await;
}

#[test]
fn signed_cookies_without_keys_refuse_to_start() {
    let config = create_config()
        .cors(Cors::Disabled)
        .input_sources(
            &Method::GET,
            [InputSource::Query, InputSource::SignedCookies],
        )
        .build();
    let error = Router::new(&routing(keys(&[OLD_SECRET])), &config).unwrap_err();
    assert_eq!(
        error.to_string(),
        "GET reads signed cookies, but no secret verifies them: set create_config().cookie_keys(..)"
    );
}

#[test]
fn the_document_places_cookie_fields_and_names_the_cookie_scheme() {
    let config = config(keys(&[OLD_SECRET]))
        .input_sources(
            &Method::GET,
            [
                InputSource::Params,
                InputSource::SignedCookies,
                InputSource::Cookies,
            ],
        )
        .build();
    let doc = Documentation::new(&routing(keys(&[OLD_SECRET])), &config)
        .title("Cookies")
        .version("1.0.0")
        .build()
        .unwrap()
        .to_value();
    let parameters = &doc["paths"]["/v1/whoami"]["get"]["parameters"];
    assert_eq!(
        parameters,
        &json!([
            {"name": "session", "in": "cookie", "required": true, "schema": {"type": "string", "minLength": 1}},
            {"name": "theme", "in": "cookie", "required": false, "schema": {"type": "string"}},
        ]),
        "{parameters:#}"
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["cookie_session"],
        json!({"type": "apiKey", "in": "cookie", "name": "session", "description": "The signed session"})
    );
    assert_eq!(
        doc["paths"]["/v1/me"]["get"]["security"],
        json!([{"cookie_session": []}])
    );
    assert!(doc["paths"]["/v1/me"]["get"]["responses"]["401"].is_object());
}

/// `GET /v1/whoami` with the cookie header `cookie`: the status and the name read from the
/// signed `session` cookie, or the error's message.
async fn whoami(base: &str, cookie: &str) -> (u16, Value) {
    let (status, body) = json_of(
        reqwest::Client::new()
            .get(format!("{base}/v1/whoami"))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    match status {
        200 => (status, body["data"]["name"].clone()),
        _ => (status, body["error"]["message"].clone()),
    }
}

#[tokio::test]
async fn a_value_signed_for_another_cookie_or_expired_is_refused() {
    let keys = keys(&[NEW_SECRET]);
    let (server, base) = serve(keys.clone(), keys.clone()).await;
    let required = (400, json!("session: required"));
    // URL-safe base64: a signed value needs no percent-encoding in a `Cookie` header.
    let as_session = |signed: &str| format!("session={signed}");
    assert_eq!(
        whoami(&base, &as_session(&keys.sign("session", "ada"))).await,
        (200, json!("ada"))
    );
    // Signed for `remember`, sent as `session`: refused.
    assert_eq!(
        whoami(&base, &as_session(&keys.sign("remember", "admin"))).await,
        required
    );
    // Signed until a time that has passed: refused, though the client kept it.
    let hour = std::time::Duration::from_secs(3600);
    let now = std::time::SystemTime::now();
    let expired = keys.sign_until("session", "ada", now - hour);
    assert_eq!(whoami(&base, &as_session(&expired)).await, required);
    let live = keys.sign_until("session", "ada", now + hour);
    assert_eq!(whoami(&base, &as_session(&live)).await, (200, json!("ada")));
    server.shutdown().await;
}

#[tokio::test]
async fn a_value_signed_the_old_way_is_read_only_when_migrating() {
    let cookie = format!("session={VALUE_ONLY}");
    let (server, base) = serve(keys(&[OLD_SECRET]), keys(&[OLD_SECRET])).await;
    assert_eq!(
        whoami(&base, &cookie).await,
        (400, json!("session: required"))
    );
    server.shutdown().await;
    let migrating = keys(&[NEW_SECRET, OLD_SECRET]).accept_value_only(true);
    let (server, base) = serve(migrating.clone(), migrating).await;
    assert_eq!(whoami(&base, &cookie).await, (200, json!("ada")));
    server.shutdown().await;
}

#[tokio::test]
async fn a_cookie_breaking_a_browser_rule_is_a_500_logged_with_the_rule() {
    let keys = keys(&[OLD_SECRET]);
    let router = Router::new(&routing(keys.clone()), &config(keys).build()).unwrap();
    let capture = Arc::new(LoggerMock::default());
    let mut request = http::Request::post("/v1/embed")
        .body(String::new())
        .unwrap();
    request
        .extensions_mut()
        .insert(Logger::with_sink(capture.clone()));
    let response = router.oneshot(request).await.unwrap();
    // Nothing set; the client learns no more than of any 500 (production's default).
    assert_eq!(response.status(), 500);
    assert!(response.headers().get("set-cookie").is_none());
    let logged = capture.messages(Level::Error);
    assert!(
        logged.iter().any(|line| line
            .contains(r#"POST /v1/embed: 500 Cookie "embed": SameSite=None needs Secure"#)),
        "{logged:?}"
    );
}
