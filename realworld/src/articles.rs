//! Articles (list, feed, get, create, update, delete), favorites and tags.

use sqlx::{Sqlite, SqlitePool, Transaction};
use strata::prelude::*;

use crate::App;
use crate::auth::{Caller, MaybeCaller};
use crate::errors::GenericError;
use crate::profiles::Profile;

#[strata::model]
#[derive(Clone, Debug)]
pub struct Slug {
    #[garde(length(chars, min = 1))]
    pub slug: String,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct CreateArticleInput {
    #[garde(dive)]
    pub article: NewArticle,
}

#[strata::model]
#[derive(Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NewArticle {
    #[garde(length(chars, min = 1, max = 300))]
    pub title: String,
    #[garde(length(chars, min = 1, max = 1_000))]
    pub description: String,
    #[garde(length(chars, min = 1, max = 100_000))]
    pub body: String,
    #[strata(not_null)]
    #[garde(inner(length(max = 20), inner(length(chars, min = 1, max = 64))))]
    pub tag_list: Option<Vec<String>>,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct UpdateArticleInput {
    #[garde(length(chars, min = 1))]
    pub slug: String,
    #[garde(dive)]
    pub article: ArticleChanges,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct ArticleChanges {
    #[strata(not_null)]
    #[garde(inner(length(chars, min = 1, max = 300)))]
    pub title: Option<String>,
    #[strata(not_null)]
    #[garde(inner(length(chars, min = 1, max = 1_000)))]
    pub description: Option<String>,
    #[strata(not_null)]
    #[garde(inner(length(chars, min = 1, max = 100_000)))]
    pub body: Option<String>,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct ListArticlesInput {
    #[garde(inner(length(chars, min = 1)))]
    pub tag: Option<String>,
    #[garde(inner(length(chars, min = 1)))]
    pub author: Option<String>,
    #[garde(inner(length(chars, min = 1)))]
    pub favorited: Option<String>,
    #[garde(inner(range(min = 1, max = 100)))]
    pub limit: Option<u32>,
    #[garde(skip)]
    pub offset: Option<u32>,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct FeedInput {
    #[garde(inner(range(min = 1, max = 100)))]
    pub limit: Option<u32>,
    #[garde(skip)]
    pub offset: Option<u32>,
}

/// An article as lists show it (without its body, as the specification's list does).
#[strata::model]
#[derive(Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub tag_list: Vec<String>,
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
    pub favorited: bool,
    pub favorites_count: i64,
    #[garde(dive)]
    pub author: Profile,
}

/// An article with its body.
#[strata::model]
#[derive(Clone, Debug)]
pub struct Article {
    #[serde(flatten)]
    #[garde(dive)]
    pub summary: Summary,
    pub body: String,
}

/// `{"article": {..}}`.
#[strata::model]
#[derive(Clone, Debug)]
pub struct ArticleBody {
    #[garde(dive)]
    pub article: Article,
}

/// `{"articles": [..], "articlesCount": n}`.
#[strata::model]
#[derive(Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ArticlesBody {
    #[garde(dive)]
    pub articles: Vec<Summary>,
    pub articles_count: i64,
}

/// `{"tags": [..]}`.
#[strata::model]
#[derive(Clone, Debug)]
pub struct TagsBody {
    pub tags: Vec<String>,
}

/// The outcomes of `GET /api/articles`.
#[derive(Debug, strata::Outcomes)]
pub enum GetArticles {
    /// Multiple articles
    #[outcome(status = 200)]
    Articles(ArticlesBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Unprocessable: the input fails validation (each problem in errors.body)
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `GET /api/articles/feed`.
#[derive(Debug, strata::Outcomes)]
pub enum GetArticlesFeed {
    /// Multiple articles
    #[outcome(status = 200)]
    Articles(ArticlesBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Unprocessable: the input fails validation (each problem in errors.body)
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `POST /api/articles`.
#[derive(Debug, strata::Outcomes)]
pub enum CreateArticle {
    /// Single article
    #[outcome(status = 201)]
    Created(ArticleBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Too many articles with this title
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `GET /api/articles/:slug`.
#[derive(Debug, strata::Outcomes)]
pub enum GetArticle {
    /// Single article
    #[outcome(status = 200)]
    Article(ArticleBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
}

/// The outcomes of `PUT /api/articles/:slug`.
#[derive(Debug, strata::Outcomes)]
pub enum UpdateArticle {
    /// Single article
    #[outcome(status = 200)]
    Article(ArticleBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Only the author may change or delete this article
    #[outcome(status = 403)]
    Forbidden,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
    /// Unprocessable: the input fails validation (each problem in errors.body)
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `DELETE /api/articles/:slug`.
#[derive(Debug, strata::Outcomes)]
pub enum DeleteArticle {
    /// No content
    #[outcome(status = 204)]
    Deleted,
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Only the author may change or delete this article
    #[outcome(status = 403)]
    Forbidden,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
}

/// The outcomes of `POST /api/articles/:slug/favorite`.
#[derive(Debug, strata::Outcomes)]
pub enum FavoriteArticle {
    /// Single article
    #[outcome(status = 200)]
    Article(ArticleBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
}

/// The outcomes of `DELETE /api/articles/:slug/favorite`.
#[derive(Debug, strata::Outcomes)]
pub enum UnfavoriteArticle {
    /// Single article
    #[outcome(status = 200)]
    Article(ArticleBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
}

/// The outcome of `GET /api/tags`: the tags (one outcome, typed as the others for clients
/// matching on every operation alike).
#[derive(Debug, strata::Outcomes)]
pub enum GetTags {
    /// Tags
    #[outcome(status = 200)]
    Tags(TagsBody),
}

/// What one query reads of an article, its author and the viewer's relation to both.
type Tuple = (
    i64,            // id
    i64,            // author id
    String,         // slug
    String,         // title
    String,         // description
    String,         // body
    String,         // created
    String,         // updated
    i64,            // favorites
    bool,           // favorited by the viewer
    String,         // author's username
    String,         // author's bio
    Option<String>, // author's image
    bool,           // author followed by the viewer
    String,         // tags, a JSON array in their order
);

/// The columns of [`Tuple`]; binds: the viewer twice.
const SELECT: &str = "SELECT a.id, a.author_id, a.slug, a.title, a.description, a.body, \
    a.created_at, a.updated_at, \
    (SELECT count(*) FROM favorites f WHERE f.article_id = a.id), \
    EXISTS (SELECT 1 FROM favorites f WHERE f.article_id = a.id AND f.user_id = ?1), \
    u.username, u.bio, u.image, \
    EXISTS (SELECT 1 FROM follows fo WHERE fo.follower_id = ?1 AND fo.followed_id = u.id), \
    (SELECT json_group_array(name) FROM (SELECT t.name FROM article_tags at \
        JOIN tags t ON t.id = at.tag_id WHERE at.article_id = a.id ORDER BY t.name)) \
    FROM articles a JOIN users u ON u.id = a.author_id";

/// The filters of a list; binds: viewer, tag, author, favorited, feed (follower), limit, offset.
const FILTERS: &str = " WHERE (?2 IS NULL OR a.id IN (SELECT at.article_id FROM article_tags at \
        JOIN tags t ON t.id = at.tag_id WHERE t.name = ?2)) \
    AND (?3 IS NULL OR u.username = ?3) \
    AND (?4 IS NULL OR a.id IN (SELECT f.article_id FROM favorites f \
        JOIN users fu ON fu.id = f.user_id WHERE fu.username = ?4)) \
    AND (?5 IS NULL OR a.author_id IN (SELECT followed_id FROM follows WHERE follower_id = ?5))";

struct Loaded {
    id: i64,
    author_id: i64,
    article: Article,
}

fn loaded(row: Tuple) -> Result<Loaded, ApiError> {
    let (id, author_id, slug, title, description, body, created_at, updated_at, count, favorited) = (
        row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9,
    );
    let (username, bio, image, following, tags) = (row.10, row.11, row.12, row.13, row.14);
    let tag_list: Vec<String> = serde_json::from_str(&tags)?;
    Ok(Loaded {
        id,
        author_id,
        article: Article {
            summary: Summary {
                slug,
                title,
                description,
                tag_list,
                created_at,
                updated_at,
                favorited,
                favorites_count: count,
                author: Profile {
                    username,
                    bio,
                    image,
                    following,
                },
            },
            body,
        },
    })
}

/// The article of `slug` as `viewer` sees it; `None` if there is none.
async fn load(
    db: &SqlitePool,
    slug: &str,
    viewer: Option<i64>,
) -> Result<Option<Loaded>, ApiError> {
    let row: Option<Tuple> = sqlx::query_as(&format!("{SELECT} WHERE a.slug = ?2"))
        .bind(viewer)
        .bind(slug)
        .fetch_optional(db)
        .await?;
    row.map(loaded).transpose()
}

/// A slug from a title: lower-case letters and digits, words joined by `-`.
fn slugify(title: &str) -> String {
    let mut slug = String::with_capacity(title.len());
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "article".to_owned()
    } else {
        slug.to_owned()
    }
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Inserts the article under the first free slug of `base`, `base-2`, `base-3`, ..: the
/// `UNIQUE` constraint decides between concurrent writers, the loser tries the next.
async fn insert(
    tx: &mut Transaction<'static, Sqlite>,
    base: &str,
    new: &NewArticle,
    author: i64,
) -> Result<i64, ApiError> {
    for n in 1..=1_000u32 {
        let slug = if n == 1 {
            base.to_owned()
        } else {
            format!("{base}-{n}")
        };
        let inserted = sqlx::query_scalar::<_, i64>(
            "INSERT INTO articles (slug, title, description, body, author_id) \
             VALUES (?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(&slug)
        .bind(&new.title)
        .bind(&new.description)
        .bind(&new.body)
        .bind(author)
        .fetch_one(&mut **tx)
        .await;
        match inserted {
            Ok(id) => return Ok(id),
            Err(error) if is_unique_violation(&error) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Err(http_error!(422, "Too many articles with this title"))
}

/// `POST /api/articles`: the article and its tags in one transaction.
pub(crate) async fn create(
    input: CreateArticleInput,
    app: App,
    caller: Caller,
) -> Result<CreateArticle, ApiError> {
    let new = input.article;
    let base = slugify(&new.title);
    let mut tx = app.writes.begin().await?;
    let id = insert(&mut tx, &base, &new, caller.id).await?;
    let mut seen = Vec::new();
    for tag in new.tag_list.iter().flatten() {
        if seen.contains(tag) {
            continue;
        }
        sqlx::query("INSERT OR IGNORE INTO tags (name) VALUES (?)")
            .bind(tag)
            .execute(&mut *tx)
            .await?;
        // `position` (the order given) is kept as written; lists sort the tags by name, as
        // RealWorld's reference implementations do.
        sqlx::query(
            "INSERT INTO article_tags (article_id, tag_id, position) \
             SELECT ?, id, ? FROM tags WHERE name = ?",
        )
        .bind(id)
        .bind(i64::try_from(seen.len()).unwrap_or(i64::MAX))
        .bind(tag)
        .execute(&mut *tx)
        .await?;
        seen.push(tag.clone());
    }
    tx.commit().await?;
    let slug: String = sqlx::query_scalar("SELECT slug FROM articles WHERE id = ?")
        .bind(id)
        .fetch_one(&app.db)
        .await?;
    let article = load(&app.db, &slug, Some(caller.id))
        .await?
        // Only its author can delete it, and the author is waiting for this answer.
        .ok_or_else(|| ApiError::internal("The article just written cannot be read"))?
        .article;
    Ok(CreateArticle::Created(ArticleBody { article }))
}

/// `GET /api/articles/:slug`.
pub(crate) async fn get(
    input: Slug,
    app: App,
    viewer: MaybeCaller,
) -> Result<GetArticle, ApiError> {
    Ok(
        match load(&app.db, &input.slug, viewer.0.map(|c| c.id)).await? {
            Some(loaded) => GetArticle::Article(ArticleBody {
                article: loaded.article,
            }),
            None => GetArticle::NotFound,
        },
    )
}

/// The article of a slug as its would-be changer finds it.
enum Own {
    /// Written by the caller.
    Mine(Loaded),
    /// Written by another.
    Another,
    /// None has this slug.
    Missing,
}

/// The article of `slug`, if `caller` wrote it.
async fn own(app: &App, slug: &str, caller: &Caller) -> Result<Own, ApiError> {
    Ok(match load(&app.db, slug, Some(caller.id)).await? {
        Some(article) if article.author_id == caller.id => Own::Mine(article),
        Some(_) => Own::Another,
        None => Own::Missing,
    })
}

/// `PUT /api/articles/:slug`: the author only; the slug stays (links to it keep working).
pub(crate) async fn update(
    input: UpdateArticleInput,
    app: App,
    caller: Caller,
) -> Result<UpdateArticle, ApiError> {
    let current = match own(&app, &input.slug, &caller).await? {
        Own::Mine(article) => article,
        Own::Another => return Ok(UpdateArticle::Forbidden),
        Own::Missing => return Ok(UpdateArticle::NotFound),
    };
    let ArticleChanges {
        title,
        description,
        body,
    } = input.article;
    sqlx::query(
        "UPDATE articles SET title = coalesce(?, title), description = coalesce(?, description), \
         body = coalesce(?, body), updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?",
    )
    .bind(title)
    .bind(description)
    .bind(body)
    .bind(current.id)
    .execute(&app.writes)
    .await?;
    // Deleted meanwhile (by its author, in another request): not found, as it now is.
    Ok(match load(&app.db, &input.slug, Some(caller.id)).await? {
        Some(loaded) => UpdateArticle::Article(ArticleBody {
            article: loaded.article,
        }),
        None => UpdateArticle::NotFound,
    })
}

/// `DELETE /api/articles/:slug`: the author only; 204.
pub(crate) async fn delete(
    input: Slug,
    app: App,
    caller: Caller,
) -> Result<DeleteArticle, ApiError> {
    let current = match own(&app, &input.slug, &caller).await? {
        Own::Mine(article) => article,
        Own::Another => return Ok(DeleteArticle::Forbidden),
        Own::Missing => return Ok(DeleteArticle::NotFound),
    };
    sqlx::query("DELETE FROM articles WHERE id = ?")
        .bind(current.id)
        .execute(&app.writes)
        .await?;
    Ok(DeleteArticle::Deleted)
}

/// One page of articles, newest first, and how many match in all.
async fn page(
    db: &SqlitePool,
    viewer: Option<i64>,
    filters: (Option<String>, Option<String>, Option<String>, Option<i64>),
    limit: Option<u32>,
    offset: Option<u32>,
) -> Result<ArticlesBody, ApiError> {
    let (tag, author, favorited, follower) = filters;
    let rows: Vec<Tuple> = sqlx::query_as(&format!(
        "{SELECT}{FILTERS} ORDER BY a.created_at DESC, a.id DESC LIMIT ?6 OFFSET ?7"
    ))
    .bind(viewer)
    .bind(&tag)
    .bind(&author)
    .bind(&favorited)
    .bind(follower)
    .bind(limit.unwrap_or(20))
    .bind(offset.unwrap_or(0))
    .fetch_all(db)
    .await?;
    let count: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM articles a JOIN users u ON u.id = a.author_id{FILTERS}"
    ))
    .bind(viewer)
    .bind(&tag)
    .bind(&author)
    .bind(&favorited)
    .bind(follower)
    .fetch_one(db)
    .await?;
    let articles = rows
        .into_iter()
        .map(|row| loaded(row).map(|l| l.article.summary))
        .collect::<Result<_, _>>()?;
    Ok(ArticlesBody {
        articles,
        articles_count: count,
    })
}

/// `GET /api/articles?tag=&author=&favorited=&limit=&offset=`.
pub(crate) async fn list(
    input: ListArticlesInput,
    app: App,
    viewer: MaybeCaller,
) -> Result<GetArticles, ApiError> {
    let filters = (input.tag, input.author, input.favorited, None);
    let viewer = viewer.0.map(|c| c.id);
    let page = page(&app.db, viewer, filters, input.limit, input.offset).await?;
    Ok(GetArticles::Articles(page))
}

/// `GET /api/articles/feed`: articles of the authors the caller follows.
pub(crate) async fn feed(
    input: FeedInput,
    app: App,
    caller: Caller,
) -> Result<GetArticlesFeed, ApiError> {
    let filters = (None, None, None, Some(caller.id));
    let page = page(&app.db, Some(caller.id), filters, input.limit, input.offset).await?;
    Ok(GetArticlesFeed::Articles(page))
}

/// `POST /api/articles/:slug/favorite`: idempotent.
pub(crate) async fn favorite(
    input: Slug,
    app: App,
    caller: Caller,
) -> Result<FavoriteArticle, ApiError> {
    let sql = "INSERT OR IGNORE INTO favorites (user_id, article_id) VALUES (?, ?)";
    Ok(match set_favorite(&app, &caller, &input.slug, sql).await? {
        Some(article) => FavoriteArticle::Article(article),
        None => FavoriteArticle::NotFound,
    })
}

/// `DELETE /api/articles/:slug/favorite`: idempotent.
pub(crate) async fn unfavorite(
    input: Slug,
    app: App,
    caller: Caller,
) -> Result<UnfavoriteArticle, ApiError> {
    let sql = "DELETE FROM favorites WHERE user_id = ? AND article_id = ?";
    Ok(match set_favorite(&app, &caller, &input.slug, sql).await? {
        Some(article) => UnfavoriteArticle::Article(article),
        None => UnfavoriteArticle::NotFound,
    })
}

/// Runs `sql` (bound to the caller's and the article's ids) on the favorite of the article
/// at `slug`, then answers the article as the caller now sees it; `None` without one.
async fn set_favorite(
    app: &App,
    caller: &Caller,
    slug: &str,
    sql: &'static str,
) -> Result<Option<ArticleBody>, ApiError> {
    let Some(article) = load(&app.db, slug, Some(caller.id)).await? else {
        return Ok(None);
    };
    sqlx::query(sql)
        .bind(caller.id)
        .bind(article.id)
        .execute(&app.writes)
        .await?;
    let article = load(&app.db, slug, Some(caller.id)).await?;
    Ok(article.map(|loaded| ArticleBody {
        article: loaded.article,
    }))
}

/// `GET /api/tags`: the tags of existing articles.
pub(crate) async fn tags((): (), app: App) -> Result<GetTags, ApiError> {
    let tags: Vec<String> = sqlx::query_scalar(
        "SELECT t.name FROM tags t WHERE EXISTS (SELECT 1 FROM article_tags at WHERE at.tag_id = t.id) \
         ORDER BY t.name",
    )
    .fetch_all(&app.db)
    .await?;
    Ok(GetTags::Tags(TagsBody { tags }))
}
