//! The RealWorld (Conduit) API on Strata, over SQLite or PostgreSQL (see [`db`]):
//! `cargo run -p strata-realworld`.
//!
//! The routes are under `/api`; errors are the specification's `{"errors": {"body": [..]}}`
//! through [`errors::Conduit`], a custom result handler, for the endpoints and the router alike.

pub mod api;
// The models these modules export (through `api`) are the specification's, which describes
// each field (`../shared/realworld/openapi.yml`); doc comments on them would also become
// descriptions in the document that the specification does not have.
// An article's outcomes hold it whole beside bodyless errors: each is built once per request
// and moved to the output stage, so boxing the article would cost an allocation for nothing and
// have clients write `*body`.
#[allow(missing_docs, clippy::large_enum_variant)]
mod articles;
pub mod auth;
#[allow(missing_docs)]
mod comments;
pub mod db;
pub mod errors;
pub mod limits;
#[allow(missing_docs)]
mod profiles;
#[allow(missing_docs)]
mod users;

use std::net::SocketAddr;
use strata::{Config, EndpointsFactory, Metrics, Routing};

use strata::prelude::*;
use strata::ratelimit::RateLimit;

use crate::auth::Keys;
use crate::db::Db;
use crate::errors::Conduit;
use crate::limits::Limits;

/// What every handler may take: the database, the token keys and the limits of logins.
/// Cheap to clone.
#[derive(Clone, Debug)]
pub struct App {
    /// The database, on either engine.
    pub db: Db,
    /// The keys that sign and check tokens.
    pub keys: Keys,
    /// What bounds the cost of logins and registrations (hashes at once, attempts per email
    /// and per address).
    pub limits: Limits,
}

impl App {
    /// The application over `db`, signing with `keys`, with the default [`Limits`].
    pub fn new(db: Db, keys: Keys) -> Self {
        Self {
            db,
            keys,
            limits: Limits::default(),
        }
    }

    /// The same with `limits`.
    #[must_use]
    pub fn with_limits(self, limits: Limits) -> Self {
        Self { limits, ..self }
    }
}

/// The configuration: listening on `listen`, CORS on (browsers are the specification's
/// clients), errors outside endpoints (404, 405) in the specification's format, and request
/// metrics at `/metrics` for Prometheus (by route template: `/api/articles/:slug`, never the
/// slug; outside `/api`, not in the API's document).
pub fn config(listen: SocketAddr) -> Config {
    create_config()
        .cors(Cors::Enabled)
        .listen(listen)
        .error_handler(Conduit)
        .metrics(Metrics::new())
        .build()
}

/// The typed TypeScript client of the application (`strata-realworld --client <file>`), for
/// a server at `server_url` (`http://127.0.0.1:8095`).
///
/// # Errors
/// When the routing cannot be described (a bug of the routing, not of the caller).
pub fn typescript_client(
    app: &App,
    server_url: &str,
) -> Result<strata::typescript::TypeScript, strata::typescript::IntegrationError> {
    let config = config(SocketAddr::from(([127, 0, 0, 1], 0)));
    strata::typescript::Integration::new(&routing(app), &config)
        .server_url(server_url)
        .build()
}

/// Every route of the application, under `/api`.
// One table of every route, in the order of the specification: long, and clearer whole.
#[allow(clippy::too_many_lines)]
pub fn routing(app: &App) -> Routing {
    users::prepare();
    let base = EndpointsFactory::new(Conduit).with_state(app.clone());
    let public = base.clone();
    // Login and registration share one budget per client address: each costs an Argon2 hash.
    let per_address = base.clone().add_middleware(
        RateLimit::new(app.limits.address_quota(), app.limits.address_key())
            .name("address")
            .clock(app.limits.shared_clock())
            .store(app.limits.address_store())
            .middleware(),
    );
    let signed_in = base.add_middleware(auth::required(app.keys.clone(), app.db.clone()));
    let maybe_signed_in = base.add_middleware(auth::optional(app.keys.clone(), app.db.clone()));

    let register = per_address
        .endpoint()
        .tag("User and Authentication")
        .operation_id("CreateUser")
        .implement(&api::CREATE_USER, users::register);
    let login = per_address
        .endpoint()
        .tag("User and Authentication")
        .operation_id("Login")
        .implement(&api::LOGIN, users::login);
    let current = signed_in
        .endpoint()
        .tag("User and Authentication")
        .operation_id("GetCurrentUser")
        .implement(&api::GET_CURRENT_USER, users::current);
    let update = signed_in
        .endpoint()
        .tag("User and Authentication")
        .operation_id("UpdateCurrentUser")
        .implement(&api::UPDATE_CURRENT_USER, users::update);

    let profile = maybe_signed_in
        .endpoint()
        .tag("Profile")
        .operation_id("GetProfileByUsername")
        .implement(&api::GET_PROFILE, profiles::get);
    let follow = signed_in
        .endpoint()
        .tag("Profile")
        .operation_id("FollowUserByUsername")
        .implement(&api::FOLLOW_USER, profiles::follow);
    let unfollow = signed_in
        .endpoint()
        .tag("Profile")
        .operation_id("UnfollowUserByUsername")
        .implement(&api::UNFOLLOW_USER, profiles::unfollow);

    let list = maybe_signed_in
        .endpoint()
        .tag("Articles")
        .operation_id("GetArticles")
        .implement(&api::GET_ARTICLES, articles::list);
    let feed = signed_in
        .endpoint()
        .tag("Articles")
        .operation_id("GetArticlesFeed")
        .implement(&api::GET_ARTICLES_FEED, articles::feed);
    let create = signed_in
        .endpoint()
        .tag("Articles")
        .operation_id("CreateArticle")
        .implement(&api::CREATE_ARTICLE, articles::create);
    let article = maybe_signed_in
        .endpoint()
        .tag("Articles")
        .operation_id("GetArticle")
        .implement(&api::GET_ARTICLE, articles::get);
    let change = signed_in
        .endpoint()
        .tag("Articles")
        .operation_id("UpdateArticle")
        .implement(&api::UPDATE_ARTICLE, articles::update);
    let remove = signed_in
        .endpoint()
        .tag("Articles")
        .operation_id("DeleteArticle")
        .implement(&api::DELETE_ARTICLE, articles::delete);
    let favorite = signed_in
        .endpoint()
        .tag("Favorites")
        .operation_id("CreateArticleFavorite")
        .implement(&api::FAVORITE_ARTICLE, articles::favorite);
    let unfavorite = signed_in
        .endpoint()
        .tag("Favorites")
        .operation_id("DeleteArticleFavorite")
        .implement(&api::UNFAVORITE_ARTICLE, articles::unfavorite);
    let comments = maybe_signed_in
        .endpoint()
        .tag("Comments")
        .operation_id("GetArticleComments")
        .implement(&api::GET_COMMENTS, comments::list);
    let comment = signed_in
        .endpoint()
        .tag("Comments")
        .operation_id("CreateArticleComment")
        .implement(&api::ADD_COMMENT, comments::add);
    let uncomment = signed_in
        .endpoint()
        .tag("Comments")
        .operation_id("DeleteArticleComment")
        .implement(&api::DELETE_COMMENT, comments::delete);
    let tags = public
        .endpoint()
        .tag("Tags")
        .operation_id("GetTags")
        .implement(&api::GET_TAGS, articles::tags);

    routing! {
        "api" => {
            "articles" => {
                "get" => list,
                "post" => create,
                "feed" => feed,
                ":slug" => {
                    "get" => article,
                    "put" => change,
                    "delete" => remove,
                    "favorite" => { "post" => favorite, "delete" => unfavorite },
                    "comments" => { "get" => comments, "post" => comment, ":id" => uncomment },
                },
            },
            "tags" => tags,
            "users" => { "post" => register, "login" => login },
            "user" => { "get" => current, "put" => update },
            "profiles" => {
                ":username" => profile.nest(routing! {
                    "follow" => { "post" => follow, "delete" => unfollow },
                }),
            },
        },
    }
}
