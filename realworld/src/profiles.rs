//! Profiles: read one, follow, unfollow.

use strata::prelude::*;

use crate::App;
use crate::auth::{Caller, MaybeCaller};

#[strata::model]
#[derive(Clone, Debug)]
pub struct ProfileInput {
    #[garde(length(chars, min = 1))]
    pub username: String,
}

/// `{"profile": {..}}`.
#[strata::model]
#[derive(Clone, Debug)]
pub struct ProfileBody {
    #[garde(dive)]
    pub profile: Profile,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct Profile {
    pub username: String,
    pub bio: String,
    pub image: Option<String>,
    pub following: bool,
}

/// The profile of `username` as `viewer` sees it, with the user's id.
async fn load(app: &App, username: &str, viewer: Option<i64>) -> Result<(i64, Profile), ApiError> {
    let row: Option<(i64, String, String, Option<String>, bool)> = sqlx::query_as(
        "SELECT u.id, u.username, u.bio, u.image, \
         EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = ? AND f.followed_id = u.id) \
         FROM users u WHERE u.username = ?",
    )
    .bind(viewer)
    .bind(username)
    .fetch_optional(&app.db)
    .await?;
    let (id, username, bio, image, following) =
        row.ok_or_else(|| http_error!(404, "Profile not found"))?;
    Ok((
        id,
        Profile {
            username,
            bio,
            image,
            following,
        },
    ))
}

/// `GET /api/profiles/:username`.
pub(crate) async fn get(
    input: ProfileInput,
    app: App,
    viewer: MaybeCaller,
) -> Result<ProfileBody, ApiError> {
    let (_, profile) = load(&app, &input.username, viewer.0.map(|c| c.id)).await?;
    Ok(ProfileBody { profile })
}

/// `POST /api/profiles/:username/follow`: idempotent; following oneself is a 422.
pub(crate) async fn follow(
    input: ProfileInput,
    app: App,
    caller: Caller,
) -> Result<ProfileBody, ApiError> {
    let (id, mut profile) = load(&app, &input.username, Some(caller.id)).await?;
    if id == caller.id {
        return Err(http_error!(422, "You cannot follow yourself"));
    }
    sqlx::query("INSERT OR IGNORE INTO follows (follower_id, followed_id) VALUES (?, ?)")
        .bind(caller.id)
        .bind(id)
        .execute(&app.writes)
        .await?;
    profile.following = true;
    Ok(ProfileBody { profile })
}

/// `DELETE /api/profiles/:username/follow`: idempotent.
pub(crate) async fn unfollow(
    input: ProfileInput,
    app: App,
    caller: Caller,
) -> Result<ProfileBody, ApiError> {
    let (id, mut profile) = load(&app, &input.username, Some(caller.id)).await?;
    sqlx::query("DELETE FROM follows WHERE follower_id = ? AND followed_id = ?")
        .bind(caller.id)
        .bind(id)
        .execute(&app.writes)
        .await?;
    profile.following = false;
    Ok(ProfileBody { profile })
}
