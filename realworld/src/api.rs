//! The API as the server and its Rust clients share it: each operation of the specification
//! declared once, with its method, path, input and output. The server implements each one
//! ([`routing`](fn@crate::routing)); a client calls it with `strata::client::Client` and the
//! [`ConduitEnvelope`](crate::errors::ConduitEnvelope), which reads this API's bodies and
//! errors. A changed type breaks both sides at compile time.
//!
//! `tests/journey.rs` drives a user's journey through them over a socket.

use strata::Operation;

pub use crate::articles::{
    Article, ArticleBody, ArticleChanges, ArticlesBody, CreateArticleInput, FeedInput,
    ListArticlesInput, NewArticle, Slug, Summary, TagsBody, UpdateArticleInput,
};
pub use crate::comments::{
    AddCommentInput, Comment, CommentBody, CommentsBody, DeleteCommentInput, NewComment,
};
pub use crate::profiles::{Profile, ProfileBody, ProfileInput};
pub use crate::users::{
    LoginInput, LoginUser, NewUser, RegisterInput, UpdateUser, UpdateUserInput, User, UserBody,
};

/// Registers a user (201): `POST /api/users`.
pub const CREATE_USER: Operation<RegisterInput, UserBody> = Operation::post("/api/users");
/// Logs in: `POST /api/users/login`.
pub const LOGIN: Operation<LoginInput, UserBody> = Operation::post("/api/users/login");
/// The signed-in user: `GET /api/user`.
pub const GET_CURRENT_USER: Operation<(), UserBody> = Operation::get("/api/user");
/// Changes the signed-in user: `PUT /api/user`.
pub const UPDATE_CURRENT_USER: Operation<UpdateUserInput, UserBody> = Operation::put("/api/user");

/// A profile: `GET /api/profiles/:username`.
pub const GET_PROFILE: Operation<ProfileInput, ProfileBody> =
    Operation::get("/api/profiles/:username");
/// Follows a user: `POST /api/profiles/:username/follow`.
pub const FOLLOW_USER: Operation<ProfileInput, ProfileBody> =
    Operation::post("/api/profiles/:username/follow");
/// Unfollows a user: `DELETE /api/profiles/:username/follow`.
pub const UNFOLLOW_USER: Operation<ProfileInput, ProfileBody> =
    Operation::delete("/api/profiles/:username/follow");

/// Articles, newest first, filtered by tag, author or favoriting user: `GET /api/articles`.
pub const GET_ARTICLES: Operation<ListArticlesInput, ArticlesBody> =
    Operation::get("/api/articles");
/// Articles of the authors the caller follows: `GET /api/articles/feed`.
pub const GET_ARTICLES_FEED: Operation<FeedInput, ArticlesBody> =
    Operation::get("/api/articles/feed");
/// Writes an article (201): `POST /api/articles`.
pub const CREATE_ARTICLE: Operation<CreateArticleInput, ArticleBody> =
    Operation::post("/api/articles");
/// One article: `GET /api/articles/:slug`.
pub const GET_ARTICLE: Operation<Slug, ArticleBody> = Operation::get("/api/articles/:slug");
/// Changes one's article: `PUT /api/articles/:slug`.
pub const UPDATE_ARTICLE: Operation<UpdateArticleInput, ArticleBody> =
    Operation::put("/api/articles/:slug");
/// Deletes one's article (204): `DELETE /api/articles/:slug`.
pub const DELETE_ARTICLE: Operation<Slug, ()> = Operation::delete("/api/articles/:slug");
/// Favorites an article: `POST /api/articles/:slug/favorite`.
pub const FAVORITE_ARTICLE: Operation<Slug, ArticleBody> =
    Operation::post("/api/articles/:slug/favorite");
/// Unfavorites an article: `DELETE /api/articles/:slug/favorite`.
pub const UNFAVORITE_ARTICLE: Operation<Slug, ArticleBody> =
    Operation::delete("/api/articles/:slug/favorite");

/// An article's comments, oldest first: `GET /api/articles/:slug/comments`.
pub const GET_COMMENTS: Operation<Slug, CommentsBody> =
    Operation::get("/api/articles/:slug/comments");
/// Comments on an article: `POST /api/articles/:slug/comments`.
pub const ADD_COMMENT: Operation<AddCommentInput, CommentBody> =
    Operation::post("/api/articles/:slug/comments");
/// Deletes one's comment (204): `DELETE /api/articles/:slug/comments/:id`.
pub const DELETE_COMMENT: Operation<DeleteCommentInput, ()> =
    Operation::delete("/api/articles/:slug/comments/:id");

/// The tags of existing articles: `GET /api/tags`.
pub const GET_TAGS: Operation<(), TagsBody> = Operation::get("/api/tags");
