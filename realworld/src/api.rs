//! The API as the server and its Rust clients share it: each operation of the specification
//! declared once, with its method, path, input and outcomes. The server implements each one
//! ([`routing`](fn@crate::routing)); a client calls it with `strata::client::Client` and the
//! [`ConduitEnvelope`](crate::errors::ConduitEnvelope), which reads this API's bodies and
//! errors. A changed type breaks both sides at compile time.
//!
//! An operation's output is the enum of its outcomes, named as the operation (`GET_ARTICLE`'s
//! is [`GetArticle`]): its success, and the errors of the specification it answers where it
//! does (`Unauthorized` 401, `Forbidden` 403, `NotFound` 404, `Unprocessable` 422 with the
//! [`GenericError`](crate::errors::GenericError) naming each problem). A client matches on
//! them; any other error (a 429, a 503) is a `ClientError`. `GET_TAGS` has one outcome.
//!
//! `tests/journey.rs` drives a user's journey through them over a socket.

use strata::Operation;

pub use crate::articles::{
    Article, ArticleBody, ArticleChanges, ArticlesBody, CreateArticle, CreateArticleInput,
    DeleteArticle, FavoriteArticle, FeedInput, GetArticle, GetArticles, GetArticlesFeed, GetTags,
    ListArticlesInput, NewArticle, Slug, Summary, TagsBody, UnfavoriteArticle, UpdateArticle,
    UpdateArticleInput,
};
pub use crate::comments::{
    AddComment, AddCommentInput, Comment, CommentBody, CommentsBody, DeleteComment,
    DeleteCommentInput, GetComments, NewComment,
};
pub use crate::profiles::{
    FollowUser, GetProfile, Profile, ProfileBody, ProfileInput, UnfollowUser,
};
pub use crate::users::{
    CreateUser, GetCurrentUser, Login, LoginInput, LoginUser, NewUser, RegisterInput,
    UpdateCurrentUser, UpdateUser, UpdateUserInput, User, UserBody,
};

/// Registers a user (201): `POST /api/users`.
pub const CREATE_USER: Operation<RegisterInput, CreateUser> = Operation::post("/api/users");
/// Logs in: `POST /api/users/login`.
pub const LOGIN: Operation<LoginInput, Login> = Operation::post("/api/users/login");
/// The signed-in user: `GET /api/user`.
pub const GET_CURRENT_USER: Operation<(), GetCurrentUser> = Operation::get("/api/user");
/// Changes the signed-in user: `PUT /api/user`.
pub const UPDATE_CURRENT_USER: Operation<UpdateUserInput, UpdateCurrentUser> =
    Operation::put("/api/user");

/// A profile: `GET /api/profiles/:username`.
pub const GET_PROFILE: Operation<ProfileInput, GetProfile> =
    Operation::get("/api/profiles/:username");
/// Follows a user: `POST /api/profiles/:username/follow`.
pub const FOLLOW_USER: Operation<ProfileInput, FollowUser> =
    Operation::post("/api/profiles/:username/follow");
/// Unfollows a user: `DELETE /api/profiles/:username/follow`.
pub const UNFOLLOW_USER: Operation<ProfileInput, UnfollowUser> =
    Operation::delete("/api/profiles/:username/follow");

/// Articles, newest first, filtered by tag, author or favoriting user: `GET /api/articles`.
pub const GET_ARTICLES: Operation<ListArticlesInput, GetArticles> = Operation::get("/api/articles");
/// Articles of the authors the caller follows: `GET /api/articles/feed`.
pub const GET_ARTICLES_FEED: Operation<FeedInput, GetArticlesFeed> =
    Operation::get("/api/articles/feed");
/// Writes an article (201): `POST /api/articles`.
pub const CREATE_ARTICLE: Operation<CreateArticleInput, CreateArticle> =
    Operation::post("/api/articles");
/// One article: `GET /api/articles/:slug`.
pub const GET_ARTICLE: Operation<Slug, GetArticle> = Operation::get("/api/articles/:slug");
/// Changes one's article: `PUT /api/articles/:slug`.
pub const UPDATE_ARTICLE: Operation<UpdateArticleInput, UpdateArticle> =
    Operation::put("/api/articles/:slug");
/// Deletes one's article (204): `DELETE /api/articles/:slug`.
pub const DELETE_ARTICLE: Operation<Slug, DeleteArticle> = Operation::delete("/api/articles/:slug");
/// Favorites an article: `POST /api/articles/:slug/favorite`.
pub const FAVORITE_ARTICLE: Operation<Slug, FavoriteArticle> =
    Operation::post("/api/articles/:slug/favorite");
/// Unfavorites an article: `DELETE /api/articles/:slug/favorite`.
pub const UNFAVORITE_ARTICLE: Operation<Slug, UnfavoriteArticle> =
    Operation::delete("/api/articles/:slug/favorite");

/// An article's comments, oldest first: `GET /api/articles/:slug/comments`.
pub const GET_COMMENTS: Operation<Slug, GetComments> =
    Operation::get("/api/articles/:slug/comments");
/// Comments on an article: `POST /api/articles/:slug/comments`.
pub const ADD_COMMENT: Operation<AddCommentInput, AddComment> =
    Operation::post("/api/articles/:slug/comments");
/// Deletes one's comment (204): `DELETE /api/articles/:slug/comments/:id`.
pub const DELETE_COMMENT: Operation<DeleteCommentInput, DeleteComment> =
    Operation::delete("/api/articles/:slug/comments/:id");

/// The tags of existing articles: `GET /api/tags`.
pub const GET_TAGS: Operation<(), GetTags> = Operation::get("/api/tags");
