//! Notes behind a session cookie: the three middleware a production API wants around its
//! handlers. Cookies (a signed session set at sign-in, read by an authentication middleware,
//! cleared at sign-out), caching (the list of notes with an `ETag`, answered 304 when the
//! client has it) and rate limits (per client address, and per user for writes).
//!
//! `cargo run --example notes`, then
//! `curl -c jar -H 'content-type: application/json' -d '{"name":"ada"}' localhost:8096/v1/session`,
//! `curl -b jar -H 'content-type: application/json' -d '{"text":"hi"}' localhost:8096/v1/notes`,
//! `curl -b jar -i localhost:8096/v1/notes` (see `ETag`), then again with
//! `-H 'if-none-match: "n1"'` for the 304.
//!
//! The session is signed with `NOTES_SECRET` (a random string of 32 bytes or more; a fixed
//! development secret when unset, never for production). `NOTES_RATE` sets the requests per
//! minute one client address may send (600 by default), `NOTES_WRITES` the notes per minute
//! one user may add (60). `/openapi.json` describes it;
//! `cargo run --example notes -- --openapi notes.json` writes that and exits.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use strata::{Ctx, Routing, Security};

use http::header::COOKIE;
use strata::cache::{Cache, CacheControl, Caching, ETag};
use strata::cookies::{CookieKeys, CookieMiddleware, CookieOptions, Cookies};
use strata::openapi::{Documentation, OpenApi, OpenApiVersion, openapi_endpoint};
use strata::prelude::*;
use strata::ratelimit::{HeadersOn, Key, Quota, RateLimit, RateLimitState};
use strata::{Config, Level};

const DEVELOPMENT_SECRET: &str = "a development secret: set NOTES_SECRET in production";

/// The notes, newest last, and a version that changes with every write (the list's `ETag`).
#[derive(Clone, Default)]
struct Notes(Arc<RwLock<(u64, Vec<Note>)>>);

#[strata::model(output)]
#[derive(Clone)]
struct Note {
    id: u64,
    author: String,
    text: String,
}

#[strata::model(output)]
struct NoteList {
    #[garde(dive)]
    notes: Vec<Note>,
}

#[strata::model(input)]
struct SignIn {
    /// Who signs in.
    #[garde(length(chars, min = 1, max = 40))]
    name: String,
}

#[strata::model(output)]
struct Session {
    /// Who is signed in; empty once signed out.
    name: String,
}

#[strata::model(input)]
struct NewNote {
    #[garde(length(chars, min = 1, max = 500))]
    text: String,
}

/// Who is signed in: the signed `session` cookie's value.
#[derive(Clone)]
struct User(String);

fn session_options() -> CookieOptions {
    CookieOptions::new().max_age(Duration::from_secs(7 * 24 * 3600))
}

/// The routing: `per_minute` requests per client address, `writes` notes per user a minute.
pub(crate) fn notes_routing(
    keys: &CookieKeys,
    per_minute: u32,
    writes: u32,
) -> Result<Routing, Box<dyn std::error::Error>> {
    let base = default_endpoints_factory()
        .with_state(Notes::default())
        .add_middleware(
            RateLimit::new(Quota::per_minute(per_minute), Key::client_addr())
                .name("per-client")
                // Every answer shows the client's budget; the per-user limiter's only its 429.
                .headers(HeadersOn::EveryResponse)
                .middleware(),
        )
        .add_middleware(CookieMiddleware::new().keys(keys.clone()).into_middleware());
    let sign_in = base
        .post()
        .short_description("Signs in: sets the session cookie")
        .handler(async |input: SignIn, cookies: Cookies| {
            cookies.set_signed("session", &input.name, &session_options())?;
            Ok(Session { name: input.name })
        });
    let sign_out = base
        .delete()
        .short_description("Signs out: clears the session cookie")
        .handler_without_input(async |cookies: Cookies| {
            cookies.clear("session", &session_options())?;
            Ok(Session {
                name: String::new(),
            })
        });
    let signed_in = base.add_middleware(
        Middleware::with_context(
            |(): (), _request, ctx: &Ctx![Notes, RateLimitState, Cookies], _logger| {
                let cookies: &Cookies = &ctx.head;
                let user = cookies.get_signed("session").map(User);
                async move { user.ok_or_else(|| http_error!(401, "Not signed in")) }
            },
        )
        .security(Security::cookie("session").description("The session, set by POST /v1/session"))
        .error_response(http::StatusCode::UNAUTHORIZED, "Not signed in"),
    );
    // Each user's view of the list is private; a client revalidates it every time.
    let policy = CacheControl::builder().private().no_cache().build()?;
    let list = signed_in
        .add_middleware(Caching::new(policy).vary([COOKIE]).middleware())
        .get()
        .short_description("Lists the notes (304 when the client has this version)")
        .handler_without_input(async |notes: Notes, cache: Cache| {
            let version = notes
                .0
                .read()
                .map_err(|_| ApiError::internal("poisoned"))?
                .0;
            cache.etag(ETag::strong(format!("n{version}"))?)?;
            let notes = notes
                .0
                .read()
                .map_err(|_| ApiError::internal("poisoned"))?
                .1
                .clone();
            Ok(NoteList { notes })
        });
    let add = signed_in
        .add_middleware(
            RateLimit::new(
                Quota::per_minute(writes),
                Key::context(|user: &User| user.0.clone()),
            )
            .name("per-user")
            .middleware(),
        )
        .post()
        .short_description("Adds a note")
        .handler(async |input: NewNote, notes: Notes, user: User| {
            let mut shelf = notes
                .0
                .write()
                .map_err(|_| ApiError::internal("poisoned"))?;
            shelf.0 += 1;
            let note = Note {
                id: shelf.0,
                author: user.0,
                text: input.text,
            };
            shelf.1.push(note.clone());
            Ok(note)
        });
    Ok(routing! {
        "v1" => {
            "session" => { "post" => sign_in, "delete" => sign_out },
            "notes" => { "get" => list, "post" => add },
        }
    })
}

fn notes_config(port: u16, keys: CookieKeys) -> Config {
    create_config()
        .cors(Cors::Disabled)
        .listen(SocketAddr::from(([127, 0, 0, 1], port)))
        .cookie_keys(keys)
        .logger(Level::Info)
        .build()
}

fn notes_documentation(
    routing: &Routing,
    config: &Config,
    version: OpenApiVersion,
) -> Result<OpenApi, strata::openapi::DocumentationError> {
    Documentation::new(routing, config)
        .title("Notes")
        .version("1.0.0")
        .openapi_version(version)
        .server_url("http://localhost:8096")
        .build()
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .map_err(|_| format!("{name}={text:?} is not valid")),
        Err(_) => Ok(default),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = env_or("PORT", 8096_u16)?;
    let per_minute = env_or("NOTES_RATE", 600_u32)?;
    let writes = env_or("NOTES_WRITES", 60_u32)?;
    let secret = std::env::var("NOTES_SECRET").unwrap_or_else(|_| DEVELOPMENT_SECRET.to_owned());
    let keys = CookieKeys::new([secret])?;
    let routing = notes_routing(&keys, per_minute, writes)?;
    let config = notes_config(port, keys);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let version = match args.first().map(String::as_str) {
        Some("--openapi-3.1") => OpenApiVersion::V3_1,
        _ => OpenApiVersion::V3_2,
    };
    let doc = notes_documentation(&routing, &config, version)?;
    if let [flag, file] = args.as_slice()
        && flag.starts_with("--openapi")
    {
        return Ok(doc.write_file(file)?);
    }
    let routing = routing.route("openapi.json", openapi_endpoint(&doc));
    create_server(&config, &routing).await?.run().await;
    Ok(())
}
