//! Comments: add, list, delete (the comment's author only).

use strata::http::StatusCode;
use strata::prelude::*;

use crate::App;
use crate::auth::{Caller, MaybeCaller};
use crate::profiles::Profile;

#[strata::model(input)]
pub(crate) struct AddInput {
    #[garde(length(chars, min = 1))]
    slug: String,
    #[garde(dive)]
    comment: NewComment,
}

#[strata::model(input)]
struct NewComment {
    #[garde(length(chars, min = 1, max = 10_000))]
    body: String,
}

#[strata::model(input)]
pub(crate) struct ListInput {
    #[garde(length(chars, min = 1))]
    slug: String,
}

#[strata::model(input)]
pub(crate) struct DeleteInput {
    #[garde(length(chars, min = 1))]
    slug: String,
    #[garde(skip)]
    id: i64,
}

#[strata::model(output)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Comment {
    id: i64,
    created_at: String,
    updated_at: String,
    body: String,
    #[garde(dive)]
    author: Profile,
}

/// `{"comment": {..}}`.
#[strata::model(output)]
pub(crate) struct CommentBody {
    #[garde(dive)]
    comment: Comment,
}

/// `{"comments": [..]}`.
#[strata::model(output)]
pub(crate) struct CommentsBody {
    #[garde(dive)]
    comments: Vec<Comment>,
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

/// Comments with their authors as `?1` (the viewer) sees them.
const SELECT: &str = "SELECT c.id, c.created_at, c.updated_at, c.body, u.username, u.bio, u.image, \
    EXISTS (SELECT 1 FROM follows fo WHERE fo.follower_id = ?1 AND fo.followed_id = u.id) \
    FROM comments c JOIN users u ON u.id = c.author_id";

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

/// The id of the article of `slug`; 404 without one.
async fn article_id(app: &App, slug: &str) -> Result<i64, ApiError> {
    sqlx::query_scalar("SELECT id FROM articles WHERE slug = ?")
        .bind(slug)
        .fetch_optional(&app.db)
        .await?
        .ok_or_else(|| http_error!(404, "Article not found"))
}

/// `POST /api/articles/:slug/comments`.
pub(crate) async fn add(
    input: AddInput,
    app: App,
    caller: Caller,
) -> Result<CommentBody, ApiError> {
    let article = article_id(&app, &input.slug).await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO comments (body, article_id, author_id) VALUES (?, ?, ?) RETURNING id",
    )
    .bind(input.comment.body)
    .bind(article)
    .bind(caller.id)
    .fetch_one(&app.db)
    .await?;
    let row: Tuple = sqlx::query_as(&format!("{SELECT} WHERE c.id = ?2"))
        .bind(caller.id)
        .bind(id)
        .fetch_one(&app.db)
        .await?;
    Ok(CommentBody {
        comment: comment(row),
    })
}

/// `GET /api/articles/:slug/comments`: oldest first.
pub(crate) async fn list(
    input: ListInput,
    app: App,
    viewer: MaybeCaller,
) -> Result<CommentsBody, ApiError> {
    let article = article_id(&app, &input.slug).await?;
    let rows: Vec<Tuple> =
        sqlx::query_as(&format!("{SELECT} WHERE c.article_id = ?2 ORDER BY c.id"))
            .bind(viewer.0.map(|c| c.id))
            .bind(article)
            .fetch_all(&app.db)
            .await?;
    Ok(CommentsBody {
        comments: rows.into_iter().map(comment).collect(),
    })
}

/// `DELETE /api/articles/:slug/comments/:id`: the comment's author only; 204.
pub(crate) async fn delete(
    input: DeleteInput,
    app: App,
    caller: Caller,
) -> Result<Reply<()>, ApiError> {
    let article = article_id(&app, &input.slug).await?;
    let author: i64 =
        sqlx::query_scalar("SELECT author_id FROM comments WHERE id = ? AND article_id = ?")
            .bind(input.id)
            .bind(article)
            .fetch_optional(&app.db)
            .await?
            .ok_or_else(|| http_error!(404, "Comment not found"))?;
    if author != caller.id {
        return Err(http_error!(403, "Only the author may delete this comment"));
    }
    sqlx::query("DELETE FROM comments WHERE id = ?")
        .bind(input.id)
        .execute(&app.db)
        .await?;
    Ok(Reply::new(()).status(StatusCode::NO_CONTENT))
}
