//! The RealWorld (Conduit) API on Strata, over SQLite: `cargo run -p strata-realworld`.
//!
//! The routes are under `/api`; errors are the specification's `{"errors": {"body": [..]}}`
//! through [`errors::Conduit`], a custom result handler, for the endpoints and the router alike.

mod articles;
pub mod auth;
mod comments;
pub mod db;
pub mod errors;
mod profiles;
mod users;

use std::net::SocketAddr;

use sqlx::SqlitePool;
use strata::http::StatusCode;
use strata::prelude::*;

use crate::auth::Keys;
use crate::errors::Conduit;

/// What every handler may take: the database and the token keys. Cheap to clone.
#[derive(Clone, Debug)]
pub struct App {
    /// The database.
    pub db: SqlitePool,
    /// The keys that sign and check tokens.
    pub keys: Keys,
}

/// The configuration: listening on `listen`, CORS on (browsers are the specification's
/// clients), errors outside endpoints (404, 405) in the specification's format.
pub fn config(listen: SocketAddr) -> Config {
    create_config()
        .cors(true)
        .listen(listen)
        .error_handler(Conduit)
        .build()
}

/// Every route of the application, under `/api`.
// One table of every route, in the order of the specification: long, and clearer whole.
#[allow(clippy::too_many_lines)]
pub fn routing(app: &App) -> Routing {
    users::prepare();
    let base = EndpointsFactory::new(Conduit).with_state(app.clone());
    let public = base.clone();
    let signed_in = base.add_middleware(auth::required(app.keys.clone()));
    let maybe_signed_in = base.add_middleware(auth::optional(app.keys.clone()));

    let register = public
        .post()
        .tag("User and Authentication")
        .operation_id("CreateUser")
        .success_status(StatusCode::CREATED)
        .handler(users::register);
    let login = public
        .post()
        .tag("User and Authentication")
        .operation_id("Login")
        .error_response(StatusCode::UNAUTHORIZED, "Invalid email or password")
        .handler(users::login);
    let current = signed_in
        .get()
        .tag("User and Authentication")
        .operation_id("GetCurrentUser")
        .handler_without_input(users::current);
    let update = signed_in
        .put()
        .tag("User and Authentication")
        .operation_id("UpdateCurrentUser")
        .handler(users::update);

    let profile = maybe_signed_in
        .get()
        .tag("Profile")
        .operation_id("GetProfileByUsername")
        .handler(profiles::get);
    let follow = signed_in
        .post()
        .tag("Profile")
        .operation_id("FollowUserByUsername")
        .handler(profiles::follow);
    let unfollow = signed_in
        .delete()
        .tag("Profile")
        .operation_id("UnfollowUserByUsername")
        .handler(profiles::unfollow);

    let list = maybe_signed_in
        .get()
        .tag("Articles")
        .operation_id("GetArticles")
        .handler(articles::list);
    let feed = signed_in
        .get()
        .tag("Articles")
        .operation_id("GetArticlesFeed")
        .handler(articles::feed);
    let create = signed_in
        .post()
        .tag("Articles")
        .operation_id("CreateArticle")
        .success_status(StatusCode::CREATED)
        .handler(articles::create);
    let article = maybe_signed_in
        .get()
        .tag("Articles")
        .operation_id("GetArticle")
        .handler(articles::get);
    let change = signed_in
        .put()
        .tag("Articles")
        .operation_id("UpdateArticle")
        .handler(articles::update);
    let remove = signed_in
        .delete()
        .tag("Articles")
        .operation_id("DeleteArticle")
        .success_status(StatusCode::NO_CONTENT)
        .handler(articles::delete);
    let favorite = signed_in
        .post()
        .tag("Favorites")
        .operation_id("CreateArticleFavorite")
        .handler(articles::favorite);
    let unfavorite = signed_in
        .delete()
        .tag("Favorites")
        .operation_id("DeleteArticleFavorite")
        .handler(articles::unfavorite);
    let comments = maybe_signed_in
        .get()
        .tag("Comments")
        .operation_id("GetArticleComments")
        .handler(comments::list);
    let comment = signed_in
        .post()
        .tag("Comments")
        .operation_id("CreateArticleComment")
        .handler(comments::add);
    let uncomment = signed_in
        .delete()
        .tag("Comments")
        .operation_id("DeleteArticleComment")
        .success_status(StatusCode::NO_CONTENT)
        .handler(comments::delete);
    let tags = public
        .get()
        .tag("Tags")
        .operation_id("GetTags")
        .handler_without_input(articles::tags);

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
