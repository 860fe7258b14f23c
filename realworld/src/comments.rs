//! Comments: add, list, delete (the comment's author only).

use strata::prelude::*;

use crate::App;
use crate::articles::Slug;
use crate::auth::{Caller, MaybeCaller};
use crate::db::{with_reader, with_writer};
use crate::errors::GenericError;
use crate::profiles::Profile;

#[strata::model]
#[derive(Clone, Debug)]
pub struct AddCommentInput {
    #[garde(length(chars, min = 1))]
    pub slug: String,
    #[garde(dive)]
    pub comment: NewComment,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct NewComment {
    #[garde(length(chars, min = 1, max = 10_000))]
    pub body: String,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct DeleteCommentInput {
    #[garde(length(chars, min = 1))]
    pub slug: String,
    #[garde(skip)]
    pub id: i64,
}

#[strata::model]
#[derive(Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: i64,
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
    pub body: String,
    #[garde(dive)]
    pub author: Profile,
}

/// `{"comment": {..}}`.
#[strata::model]
#[derive(Clone, Debug)]
pub struct CommentBody {
    #[garde(dive)]
    pub comment: Comment,
}

/// `{"comments": [..]}`.
#[strata::model]
#[derive(Clone, Debug)]
pub struct CommentsBody {
    #[garde(dive)]
    pub comments: Vec<Comment>,
}

/// The outcomes of `GET /api/articles/:slug/comments`.
#[derive(Debug, strata::Outcomes)]
pub enum GetComments {
    /// Multiple comments
    #[outcome(status = 200)]
    Comments(CommentsBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
}

/// The outcomes of `POST /api/articles/:slug/comments`.
#[derive(Debug, strata::Outcomes)]
pub enum AddComment {
    /// Single comment
    #[outcome(status = 200)]
    Comment(CommentBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Article not found
    #[outcome(status = 404)]
    NotFound,
    /// Unprocessable: the input fails validation (each problem in errors.body)
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `DELETE /api/articles/:slug/comments/:id`.
#[derive(Debug, strata::Outcomes)]
pub enum DeleteComment {
    /// No content
    #[outcome(status = 204)]
    Deleted,
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Only the author may delete this comment
    #[outcome(status = 403)]
    Forbidden,
    /// Article or comment not found
    #[outcome(status = 404)]
    NotFound,
}

type Tuple = (
    i64,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    bool,
);

/// Comments with their authors as `$1` (the viewer) sees them, then `condition` (on `c`).
fn select(app: &App, condition: &str) -> String {
    format!(
        "SELECT c.id, {times}, c.body, u.username, u.bio, u.image, \
         EXISTS (SELECT 1 FROM follows fo WHERE fo.follower_id = $1 AND fo.followed_id = u.id) \
         FROM comments c JOIN users u ON u.id = c.author_id {condition}",
        times = app.db.sql().comment_times
    )
}

fn comment((id, created_at, updated_at, body, username, bio, image, following): Tuple) -> Comment {
    Comment {
        id,
        created_at,
        updated_at,
        body,
        author: Profile {
            username,
            bio,
            image,
            following,
        },
    }
}

/// The id of the article of `slug`; `None` without one.
async fn article_id(app: &App, slug: &str) -> Result<Option<i64>, ApiError> {
    Ok(with_reader!(app.db, pool => {
        sqlx::query_scalar("SELECT id FROM articles WHERE slug = $1")
            .bind(slug)
            .fetch_optional(pool)
            .await?
    }))
}

/// `POST /api/articles/:slug/comments`.
pub(crate) async fn add(
    input: AddCommentInput,
    app: App,
    caller: Caller,
) -> Result<AddComment, ApiError> {
    let Some(article) = article_id(&app, &input.slug).await? else {
        return Ok(AddComment::NotFound);
    };
    let id: i64 = with_writer!(app.db, pool => {
        sqlx::query_scalar(
            "INSERT INTO comments (body, article_id, author_id) VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(input.comment.body)
        .bind(article)
        .bind(caller.id)
        .fetch_one(pool)
        .await?
    });
    let sql = select(&app, "WHERE c.id = $2");
    let row: Tuple = with_reader!(app.db, pool => {
        sqlx::query_as(&sql)
            .bind(caller.id)
            .bind(id)
            .fetch_one(pool)
            .await?
    });
    Ok(AddComment::Comment(CommentBody {
        comment: comment(row),
    }))
}

/// `GET /api/articles/:slug/comments`: oldest first.
pub(crate) async fn list(
    input: Slug,
    app: App,
    viewer: MaybeCaller,
) -> Result<GetComments, ApiError> {
    let Some(article) = article_id(&app, &input.slug).await? else {
        return Ok(GetComments::NotFound);
    };
    let sql = select(&app, "WHERE c.article_id = $2 ORDER BY c.id");
    let rows: Vec<Tuple> = with_reader!(app.db, pool => {
        sqlx::query_as(&sql)
            .bind(viewer.0.map(|c| c.id))
            .bind(article)
            .fetch_all(pool)
            .await?
    });
    Ok(GetComments::Comments(CommentsBody {
        comments: rows.into_iter().map(comment).collect(),
    }))
}

/// `DELETE /api/articles/:slug/comments/:id`: the comment's author only; 204.
pub(crate) async fn delete(
    input: DeleteCommentInput,
    app: App,
    caller: Caller,
) -> Result<DeleteComment, ApiError> {
    let Some(article) = article_id(&app, &input.slug).await? else {
        return Ok(DeleteComment::NotFound);
    };
    let author: Option<i64> = with_reader!(app.db, pool => {
        sqlx::query_scalar("SELECT author_id FROM comments WHERE id = $1 AND article_id = $2")
            .bind(input.id)
            .bind(article)
            .fetch_optional(pool)
            .await?
    });
    match author {
        None => return Ok(DeleteComment::NotFound),
        Some(author) if author != caller.id => return Ok(DeleteComment::Forbidden),
        Some(_) => {}
    }
    with_writer!(app.db, pool => {
        sqlx::query("DELETE FROM comments WHERE id = $1")
            .bind(input.id)
            .execute(pool)
            .await?;
    });
    Ok(DeleteComment::Deleted)
}
