//! Articles (list, feed, get, create, update, delete), favorites and tags.

use strata::prelude::*;

use crate::App;
use crate::auth::{Caller, MaybeCaller};
use crate::db::{Db, with_reader, with_writer};
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

/// The columns of [`Tuple`] in `db`'s dialect, then `rest`; binds: `$1`, the viewer.
fn select(db: &Db, rest: &str) -> String {
    let sql = db.sql();
    format!(
        "SELECT a.id, a.author_id, a.slug, a.title, a.description, a.body, {times}, \
         (SELECT count(*) FROM favorites f WHERE f.article_id = a.id), \
         EXISTS (SELECT 1 FROM favorites f WHERE f.article_id = a.id AND f.user_id = $1), \
         u.username, u.bio, u.image, \
         EXISTS (SELECT 1 FROM follows fo WHERE fo.follower_id = $1 AND fo.followed_id = u.id), \
         {tags} \
         FROM articles a JOIN users u ON u.id = a.author_id{rest}",
        times = sql.article_times,
        tags = sql.tag_list,
    )
}

/// The filters of a list; binds: viewer, tag, author, favorited, feed (follower), limit, offset.
const FILTERS: &str = " WHERE ($2 IS NULL OR a.id IN (SELECT atg.article_id FROM article_tags atg \
        JOIN tags t ON t.id = atg.tag_id WHERE t.name = $2)) \
    AND ($3 IS NULL OR u.username = $3) \
    AND ($4 IS NULL OR a.id IN (SELECT f.article_id FROM favorites f \
        JOIN users fu ON fu.id = f.user_id WHERE fu.username = $4)) \
    AND ($5 IS NULL OR a.author_id IN (SELECT followed_id FROM follows WHERE follower_id = $5))";

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
async fn load(db: &Db, slug: &str, viewer: Option<i64>) -> Result<Option<Loaded>, ApiError> {
    let sql = select(db, " WHERE a.slug = $2");
    let row: Option<Tuple> = with_reader!(db, pool => {
        sqlx::query_as(&sql)
            .bind(viewer)
            .bind(slug)
            .fetch_optional(pool)
            .await?
    });
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

/// `POST /api/articles`: the article and its tags in one transaction, under the first free
/// slug of `base`, `base-2`, `base-3`, ..: the slug's `UNIQUE` constraint decides between
/// concurrent writers (on PostgreSQL, `ON CONFLICT` waits for the transaction holding the slug
/// to end), and the loser tries the next.
pub(crate) async fn create(
    input: CreateArticleInput,
    app: App,
    caller: Caller,
) -> Result<CreateArticle, ApiError> {
    let new = input.article;
    let base = slugify(&new.title);
    // Each tag once, with its position as written (kept; lists sort the tags by name, as
    // RealWorld's reference implementations do), inserted in name order: two transactions
    // writing the same new tags then wait for each other in one order, never in a cycle.
    let mut tags: Vec<(i64, &String)> = Vec::new();
    for tag in new.tag_list.iter().flatten() {
        if !tags.iter().any(|(_, seen)| *seen == tag) {
            tags.push((i64::try_from(tags.len()).unwrap_or(i64::MAX), tag));
        }
    }
    tags.sort_by(|a, b| a.1.cmp(b.1));
    let slug = with_writer!(app.db, pool => {
        let mut tx = pool.begin().await?;
        let mut written = None;
        for n in 1..=1_000u32 {
            let slug = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let id: Option<i64> = sqlx::query_scalar(
                "INSERT INTO articles (slug, title, description, body, author_id) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (slug) DO NOTHING RETURNING id",
            )
            .bind(&slug)
            .bind(&new.title)
            .bind(&new.description)
            .bind(&new.body)
            .bind(caller.id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(id) = id {
                written = Some((id, slug));
                break;
            }
        }
        let Some((id, slug)) = written else {
            return Err(http_error!(422, "Too many articles with this title"));
        };
        for &(position, tag) in &tags {
            sqlx::query("INSERT INTO tags (name) VALUES ($1) ON CONFLICT DO NOTHING")
                .bind(tag)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO article_tags (article_id, tag_id, position) \
                 SELECT $1, id, $2 FROM tags WHERE name = $3",
            )
            .bind(id)
            .bind(position)
            .bind(tag)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        slug
    });
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
    let sql = format!(
        "UPDATE articles SET title = coalesce($1, title), \
         description = coalesce($2, description), body = coalesce($3, body), \
         updated_at = {now} WHERE id = $4",
        now = app.db.sql().now
    );
    with_writer!(app.db, pool => {
        sqlx::query(&sql)
            .bind(title)
            .bind(description)
            .bind(body)
            .bind(current.id)
            .execute(pool)
            .await?;
    });
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
    with_writer!(app.db, pool => {
        sqlx::query("DELETE FROM articles WHERE id = $1")
            .bind(current.id)
            .execute(pool)
            .await?;
    });
    Ok(DeleteArticle::Deleted)
}

/// One page of articles, newest first, and how many match in all.
async fn page(
    db: &Db,
    viewer: Option<i64>,
    filters: (Option<String>, Option<String>, Option<String>, Option<i64>),
    limit: Option<u32>,
    offset: Option<u32>,
) -> Result<ArticlesBody, ApiError> {
    let (tag, author, favorited, follower) = filters;
    let rows_sql = select(
        db,
        &format!("{FILTERS} ORDER BY a.created_at DESC, a.id DESC LIMIT $6 OFFSET $7"),
    );
    let count_sql =
        format!("SELECT count(*) FROM articles a JOIN users u ON u.id = a.author_id{FILTERS}");
    let (rows, count): (Vec<Tuple>, i64) = with_reader!(db, pool => {
        let rows = sqlx::query_as(&rows_sql)
            .bind(viewer)
            .bind(&tag)
            .bind(&author)
            .bind(&favorited)
            .bind(follower)
            .bind(i64::from(limit.unwrap_or(20)))
            .bind(i64::from(offset.unwrap_or(0)))
            .fetch_all(pool)
            .await?;
        // `$1` is not in this statement: bound all the same, so that the numbers match.
        let count = sqlx::query_scalar(&count_sql)
            .bind(viewer)
            .bind(&tag)
            .bind(&author)
            .bind(&favorited)
            .bind(follower)
            .fetch_one(pool)
            .await?;
        (rows, count)
    });
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
    let sql = "INSERT INTO favorites (user_id, article_id) VALUES ($1, $2) ON CONFLICT DO NOTHING";
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
    let sql = "DELETE FROM favorites WHERE user_id = $1 AND article_id = $2";
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
    with_writer!(app.db, pool => {
        sqlx::query(sql)
            .bind(caller.id)
            .bind(article.id)
            .execute(pool)
            .await?;
    });
    let article = load(&app.db, slug, Some(caller.id)).await?;
    Ok(article.map(|loaded| ArticleBody {
        article: loaded.article,
    }))
}

/// `GET /api/tags`: the tags of existing articles.
pub(crate) async fn tags((): (), app: App) -> Result<GetTags, ApiError> {
    let tags: Vec<String> = with_reader!(app.db, pool => {
        sqlx::query_scalar(
            "SELECT t.name FROM tags t \
             WHERE EXISTS (SELECT 1 FROM article_tags atg WHERE atg.tag_id = t.id) ORDER BY t.name",
        )
        .fetch_all(pool)
        .await?
    });
    Ok(GetTags::Tags(TagsBody { tags }))
}
