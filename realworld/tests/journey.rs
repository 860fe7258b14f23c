//! A user's journey through the typed Rust client (`strata::client`), over a real socket: the
//! client calls the very operations the server implements (`strata_realworld::api`), with their
//! own types, reads this API's bodies with `ConduitEnvelope`, and matches on each operation's
//! declared outcomes (`GetArticle::NotFound`, `DeleteArticle::Forbidden`,
//! `CreateArticle::Unprocessable`) rather than on statuses.

// The tests are `async fn(Backend)` bodies that `on_both!` turns into `#[tokio::test]`s: clippy
// does not see them as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Backend;

use http::{HeaderValue, header::AUTHORIZATION};
use hyper_util::client::legacy::connect::HttpConnector;
use strata::client::Client;
use strata_realworld::api::{
    self, AddComment, AddCommentInput, ArticleChanges, CreateArticle, CreateArticleInput,
    CreateUser, DeleteArticle, DeleteComment, DeleteCommentInput, FavoriteArticle, FeedInput,
    FollowUser, GetArticle, GetArticles, GetArticlesFeed, GetComments, GetCurrentUser, GetProfile,
    GetTags, ListArticlesInput, Login, LoginInput, LoginUser, NewArticle, NewComment, NewUser,
    ProfileInput, RegisterInput, Slug, UnfavoriteArticle, UnfollowUser, UpdateArticle,
    UpdateArticleInput, UpdateCurrentUser, UpdateUser, UpdateUserInput,
};
use strata_realworld::errors::{ConduitEnvelope, GenericError};

type Pool = hyper_util::client::legacy::Client<HttpConnector, strata::client::Body>;
type Conduit = Client<Pool, ConduitEnvelope>;

/// The body of the outcome `$variant`, or a panic naming the outcome that came instead.
macro_rules! expect {
    ($outcome:expr, $variant:path) => {
        match $outcome {
            $variant(body) => body,
            // An operation with one outcome (`GET_TAGS`) has no other.
            #[allow(unreachable_patterns)]
            other => panic!("expected {}, got {other:?}", stringify!($variant)),
        }
    };
}

/// Registers `name` and returns the client signed in as that user.
async fn sign_up(client: &Conduit, name: &str) -> Conduit {
    let registered = client
        .call(
            &api::CREATE_USER,
            RegisterInput {
                user: NewUser {
                    username: name.to_owned(),
                    email: format!("{name}@example.com"),
                    password: format!("secret-{name}"),
                },
            },
        )
        .await
        .unwrap();
    let registered = expect!(registered, CreateUser::Created);
    assert_eq!(registered.user.username, name);
    let token = HeaderValue::try_from(format!("Token {}", registered.user.token)).unwrap();
    client.clone().header(AUTHORIZATION, token)
}

/// A client of `conduit`, signed in as nobody.
fn client_of(conduit: &common::Conduit) -> Conduit {
    let pool = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    // The operations' paths start with `/api`; `base` ends with it.
    let root = conduit.base.trim_end_matches("/api").to_owned();
    Client::new(pool).base_url(root).envelope(ConduitEnvelope)
}

fn slug(slug: &str) -> Slug {
    Slug {
        slug: slug.to_owned(),
    }
}

async fn register_write_comment_favorite_and_read_the_feed(backend: Backend) {
    journey(&common::start(backend).await).await;
}

// One journey, read top to bottom as a user walks it.
#[allow(clippy::too_many_lines)]
async fn journey(conduit: &common::Conduit) {
    let anonymous = client_of(conduit);

    let ada = sign_up(&anonymous, "ada").await;
    let bob = sign_up(&anonymous, "bob").await;
    let me = ada.call(&api::GET_CURRENT_USER, ()).await.unwrap();
    assert_eq!(
        expect!(me, GetCurrentUser::User).user.email,
        "ada@example.com"
    );

    // Bob follows Ada.
    let followed = bob
        .call(
            &api::FOLLOW_USER,
            ProfileInput {
                username: "ada".to_owned(),
            },
        )
        .await
        .unwrap();
    assert!(expect!(followed, FollowUser::Profile).profile.following);

    // Ada writes an article.
    let written = ada
        .call(
            &api::CREATE_ARTICLE,
            CreateArticleInput {
                article: NewArticle {
                    title: "How to train your dragon".to_owned(),
                    description: "Ever wonder how?".to_owned(),
                    body: "You have to believe".to_owned(),
                    tag_list: Some(vec!["dragons".to_owned(), "training".to_owned()]),
                },
            },
        )
        .await
        .unwrap();
    let written = expect!(written, CreateArticle::Created).article;
    assert_eq!(written.summary.slug, "how-to-train-your-dragon");
    assert_eq!(written.summary.tag_list, ["dragons", "training"]);
    assert_eq!(written.summary.author.username, "ada");
    let the_article = slug(&written.summary.slug);

    // Ada changes the title alone: the fields left `None` are not sent (the server refuses a
    // `null` there), and stay as they were.
    let changed = ada
        .call(
            &api::UPDATE_ARTICLE,
            UpdateArticleInput {
                slug: the_article.slug.clone(),
                article: ArticleChanges {
                    title: Some("How to train your dragon, again".to_owned()),
                    description: None,
                    body: None,
                },
            },
        )
        .await
        .unwrap();
    let changed = expect!(changed, UpdateArticle::Article).article;
    assert_eq!(changed.summary.title, "How to train your dragon, again");
    assert_eq!(changed.body, "You have to believe");

    // Bob comments and favorites it.
    let comment = bob
        .call(
            &api::ADD_COMMENT,
            AddCommentInput {
                slug: the_article.slug.clone(),
                comment: NewComment {
                    body: "Thank you so much!".to_owned(),
                },
            },
        )
        .await
        .unwrap();
    let comment = expect!(comment, AddComment::Comment).comment;
    assert_eq!(comment.author.username, "bob");
    let favorited = bob
        .call(&api::FAVORITE_ARTICLE, slug(&the_article.slug))
        .await
        .unwrap();
    let favorited = expect!(favorited, FavoriteArticle::Article).article;
    assert!(favorited.summary.favorited);
    assert_eq!(favorited.summary.favorites_count, 1);

    // Bob's feed: Ada's article, as Bob sees it.
    let feed = bob
        .call(
            &api::GET_ARTICLES_FEED,
            FeedInput {
                limit: Some(10),
                offset: None,
            },
        )
        .await
        .unwrap();
    let feed = expect!(feed, GetArticlesFeed::Articles);
    assert_eq!(feed.articles_count, 1);
    let seen = &feed.articles[0];
    assert_eq!(seen.slug, the_article.slug);
    assert!(seen.favorited && seen.author.following);
    // Ada's own feed is empty (she follows nobody); the list filtered by who favorited has it.
    let own = ada
        .call(
            &api::GET_ARTICLES_FEED,
            FeedInput {
                limit: None,
                offset: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(expect!(own, GetArticlesFeed::Articles).articles_count, 0);
    let by_bob = anonymous
        .call(
            &api::GET_ARTICLES,
            ListArticlesInput {
                tag: Some("dragons".to_owned()),
                author: None,
                favorited: Some("bob".to_owned()),
                limit: None,
                offset: None,
            },
        )
        .await
        .unwrap();
    let by_bob = expect!(by_bob, GetArticles::Articles);
    assert_eq!(by_bob.articles.len(), 1);
    assert!(
        !by_bob.articles[0].favorited,
        "anonymous sees no favorite of its own"
    );
    let comments = anonymous
        .call(&api::GET_COMMENTS, slug(&the_article.slug))
        .await
        .unwrap();
    let comments = expect!(comments, GetComments::Comments).comments;
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].body, "Thank you so much!");
    let tags = anonymous.call(&api::GET_TAGS, ()).await.unwrap();
    let tags = expect!(tags, GetTags::Tags).tags;
    assert_eq!(tags, ["dragons", "training"]);

    // The specification's errors, each a declared outcome of its operation: 403 for another's
    // article, 401 without a token (answered by the authentication middleware, read as the
    // operation's outcome all the same), 422 with every problem.
    let refused = bob
        .call(&api::DELETE_ARTICLE, slug(&the_article.slug))
        .await
        .unwrap();
    assert!(matches!(refused, DeleteArticle::Forbidden), "{refused:?}");
    let refused = bob
        .call(
            &api::UPDATE_ARTICLE,
            UpdateArticleInput {
                slug: the_article.slug.clone(),
                article: ArticleChanges {
                    title: Some("Mine now".to_owned()),
                    description: None,
                    body: None,
                },
            },
        )
        .await
        .unwrap();
    assert!(matches!(refused, UpdateArticle::Forbidden), "{refused:?}");
    let unsigned = anonymous.call(&api::GET_CURRENT_USER, ()).await.unwrap();
    assert!(
        matches!(unsigned, GetCurrentUser::Unauthorized),
        "{unsigned:?}"
    );
    let wrong = anonymous
        .call(
            &api::LOGIN,
            LoginInput {
                user: LoginUser {
                    email: "ada@example.com".to_owned(),
                    password: "not ada's".to_owned(),
                },
            },
        )
        .await
        .unwrap();
    assert!(matches!(wrong, Login::Unauthorized), "{wrong:?}");
    let invalid = ada
        .call(
            &api::CREATE_ARTICLE,
            CreateArticleInput {
                article: NewArticle {
                    title: String::new(),
                    description: String::new(),
                    body: "x".to_owned(),
                    tag_list: None,
                },
            },
        )
        .await
        .unwrap();
    // The pipeline's validation, answered by `Conduit` as the specification's 422.
    let GenericError { errors } = expect!(invalid, CreateArticle::Unprocessable);
    assert_eq!(errors.body.len(), 2, "{errors:?}");
    assert!(errors.body[0].contains("article."), "{errors:?}");
    // A rule of the application (an `ApiError` of a helper), read as the same outcome.
    let taken = anonymous
        .call(
            &api::CREATE_USER,
            RegisterInput {
                user: NewUser {
                    username: "ada".to_owned(),
                    email: "ada2@example.com".to_owned(),
                    password: "secret".to_owned(),
                },
            },
        )
        .await
        .unwrap();
    assert_eq!(
        expect!(taken, CreateUser::Unprocessable),
        GenericError::new("username has already been taken")
    );
    let myself = ada
        .call(
            &api::FOLLOW_USER,
            ProfileInput {
                username: "ada".to_owned(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        expect!(myself, FollowUser::Unprocessable),
        GenericError::new("You cannot follow yourself")
    );

    // Deletions answer 204 without a body; then the article is not found.
    let deleted = bob
        .call(
            &api::DELETE_COMMENT,
            DeleteCommentInput {
                slug: the_article.slug.clone(),
                id: comment.id,
            },
        )
        .await
        .unwrap();
    assert!(matches!(deleted, DeleteComment::Deleted), "{deleted:?}");
    let deleted = ada
        .call(&api::DELETE_ARTICLE, slug(&the_article.slug))
        .await
        .unwrap();
    assert!(matches!(deleted, DeleteArticle::Deleted), "{deleted:?}");
    let gone = anonymous
        .call(&api::GET_ARTICLE, slug(&the_article.slug))
        .await
        .unwrap();
    assert!(matches!(gone, GetArticle::NotFound), "{gone:?}");
    let gone = ada
        .call(&api::DELETE_ARTICLE, slug(&the_article.slug))
        .await
        .unwrap();
    assert!(matches!(gone, DeleteArticle::NotFound), "{gone:?}");
}

/// An article of `client`'s user, titled `title`; its slug.
async fn write(client: &Conduit, title: &str) -> String {
    let written = client
        .call(
            &api::CREATE_ARTICLE,
            CreateArticleInput {
                article: NewArticle {
                    title: title.to_owned(),
                    description: "d".to_owned(),
                    body: "b".to_owned(),
                    tag_list: None,
                },
            },
        )
        .await
        .unwrap();
    expect!(written, CreateArticle::Created)
        .article
        .summary
        .slug
}

/// The declared error outcomes the journey does not meet, each read back into its operation's
/// variant: whether the handler returned it (`NotFound`, `Forbidden`, a rule's 422), the
/// pipeline answered its status (validation's 422) or the authentication middleware did (401).
async fn each_error_is_read_as_its_operation_s_outcome(backend: Backend) {
    errors_of(&common::start(backend).await).await;
}

#[allow(clippy::too_many_lines)] // one table of errors, read top to bottom
async fn errors_of(conduit: &common::Conduit) {
    let anonymous = client_of(conduit);
    let ada = sign_up(&anonymous, "ada").await;
    let bob = sign_up(&anonymous, "bob").await;

    // 404: no such user, article or comment.
    let nobody = || ProfileInput {
        username: "nobody".to_owned(),
    };
    let profile = anonymous.call(&api::GET_PROFILE, nobody()).await;
    assert!(matches!(profile, Ok(GetProfile::NotFound)), "{profile:?}");
    let follow = ada.call(&api::FOLLOW_USER, nobody()).await;
    assert!(matches!(follow, Ok(FollowUser::NotFound)), "{follow:?}");
    let unfollow = ada.call(&api::UNFOLLOW_USER, nobody()).await;
    assert!(
        matches!(unfollow, Ok(UnfollowUser::NotFound)),
        "{unfollow:?}"
    );
    let favorite = ada.call(&api::FAVORITE_ARTICLE, slug("nothing")).await;
    assert!(
        matches!(favorite, Ok(FavoriteArticle::NotFound)),
        "{favorite:?}"
    );
    let unfavorite = ada.call(&api::UNFAVORITE_ARTICLE, slug("nothing")).await;
    assert!(
        matches!(unfavorite, Ok(UnfavoriteArticle::NotFound)),
        "{unfavorite:?}"
    );
    let comments = anonymous.call(&api::GET_COMMENTS, slug("nothing")).await;
    assert!(
        matches!(comments, Ok(GetComments::NotFound)),
        "{comments:?}"
    );
    let comment = |slug: &str, body: &str| AddCommentInput {
        slug: slug.to_owned(),
        comment: NewComment {
            body: body.to_owned(),
        },
    };
    let added = bob.call(&api::ADD_COMMENT, comment("nothing", "hi")).await;
    assert!(matches!(added, Ok(AddComment::NotFound)), "{added:?}");
    let changed = ada
        .call(
            &api::UPDATE_ARTICLE,
            UpdateArticleInput {
                slug: "nothing".to_owned(),
                article: ArticleChanges {
                    title: Some("t".to_owned()),
                    description: None,
                    body: None,
                },
            },
        )
        .await;
    assert!(
        matches!(changed, Ok(UpdateArticle::NotFound)),
        "{changed:?}"
    );

    // A comment: another's is forbidden to delete; a missing one, or one on a missing article,
    // is not found.
    let talk = write(&ada, "Talk").await;
    let said = bob.call(&api::ADD_COMMENT, comment(&talk, "hi")).await;
    let said = expect!(said.unwrap(), AddComment::Comment).comment;
    let delete = |slug: &str, id: i64| DeleteCommentInput {
        slug: slug.to_owned(),
        id,
    };
    let refused = ada.call(&api::DELETE_COMMENT, delete(&talk, said.id)).await;
    assert!(
        matches!(refused, Ok(DeleteComment::Forbidden)),
        "{refused:?}"
    );
    let missing = bob
        .call(&api::DELETE_COMMENT, delete(&talk, said.id + 1))
        .await;
    assert!(
        matches!(missing, Ok(DeleteComment::NotFound)),
        "{missing:?}"
    );
    let missing = bob
        .call(&api::DELETE_COMMENT, delete("nothing", said.id))
        .await;
    assert!(
        matches!(missing, Ok(DeleteComment::NotFound)),
        "{missing:?}"
    );

    // 401: a token that is not one, where a token is optional and where it is required; none
    // where it is required.
    let forged = anonymous
        .clone()
        .header(AUTHORIZATION, HeaderValue::from_static("Token forged"));
    let article = forged.call(&api::GET_ARTICLE, slug(&talk)).await;
    assert!(
        matches!(article, Ok(GetArticle::Unauthorized)),
        "{article:?}"
    );
    let comments = forged.call(&api::GET_COMMENTS, slug(&talk)).await;
    assert!(
        matches!(comments, Ok(GetComments::Unauthorized)),
        "{comments:?}"
    );
    let list = ListArticlesInput {
        tag: None,
        author: None,
        favorited: None,
        limit: None,
        offset: None,
    };
    let articles = forged.call(&api::GET_ARTICLES, list.clone()).await;
    assert!(
        matches!(articles, Ok(GetArticles::Unauthorized)),
        "{articles:?}"
    );
    let feed = FeedInput {
        limit: None,
        offset: None,
    };
    let unsigned = anonymous.call(&api::GET_ARTICLES_FEED, feed).await;
    assert!(
        matches!(unsigned, Ok(GetArticlesFeed::Unauthorized)),
        "{unsigned:?}"
    );
    let new_email = |email: &str| UpdateUserInput {
        user: UpdateUser {
            email: Some(email.to_owned()),
            username: None,
            password: None,
            bio: None,
            image: None,
        },
    };
    let unsigned = anonymous
        .call(&api::UPDATE_CURRENT_USER, new_email("x@example.com"))
        .await;
    assert!(
        matches!(unsigned, Ok(UpdateCurrentUser::Unauthorized)),
        "{unsigned:?}"
    );

    // 422: the input fails validation (each problem named), or breaks a rule of the
    // application.
    let out_of_range = ListArticlesInput {
        limit: Some(0),
        ..list
    };
    let out_of_range = anonymous.call(&api::GET_ARTICLES, out_of_range).await;
    let problems = expect!(out_of_range.unwrap(), GetArticles::Unprocessable);
    assert!(problems.errors.body[0].starts_with("limit"), "{problems:?}");
    let empty = bob.call(&api::ADD_COMMENT, comment(&talk, "")).await;
    let problems = expect!(empty.unwrap(), AddComment::Unprocessable);
    assert!(
        problems.errors.body[0].starts_with("comment.body"),
        "{problems:?}"
    );
    let login = LoginInput {
        user: LoginUser {
            email: String::new(),
            password: String::new(),
        },
    };
    let login = anonymous.call(&api::LOGIN, login).await;
    let problems = expect!(login.unwrap(), Login::Unprocessable);
    assert_eq!(problems.errors.body.len(), 2, "{problems:?}");
    let taken = bob
        .call(&api::UPDATE_CURRENT_USER, new_email("ada@example.com"))
        .await;
    assert_eq!(
        expect!(taken.unwrap(), UpdateCurrentUser::Unprocessable),
        GenericError::new("email has already been taken")
    );
}

/// The journeys through a real haproxy, round robin over three replicas on one PostgreSQL:
/// each request may meet another replica (a token from one works on all; what one wrote, the
/// next reads).
mod behind_haproxy {
    use crate::common::{Conduit, behind_haproxy};

    /// Every replica answered some of the API's requests (its `/metrics` counted them).
    async fn each_replica_served(conduit: &Conduit) {
        for base in conduit.replica_bases() {
            let origin = base.trim_end_matches("/api");
            let exposition = reqwest::get(format!("{origin}/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(
                exposition
                    .lines()
                    .any(|line| line.starts_with("strata_http_requests_total{route=\"/api/")),
                "{base} served nothing: {exposition}"
            );
        }
    }

    #[tokio::test]
    async fn register_write_comment_favorite_and_read_the_feed() {
        if let Some(conduit) = behind_haproxy("journey behind haproxy").await {
            super::journey(&conduit).await;
            each_replica_served(&conduit).await;
        }
    }

    #[tokio::test]
    async fn each_error_is_read_as_its_operation_s_outcome() {
        if let Some(conduit) = behind_haproxy("errors behind haproxy").await {
            super::errors_of(&conduit).await;
            each_replica_served(&conduit).await;
        }
    }
}

on_both!(
    register_write_comment_favorite_and_read_the_feed,
    each_error_is_read_as_its_operation_s_outcome,
);
