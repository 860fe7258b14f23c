//! Profiles: read one, follow, unfollow.

use strata::prelude::*;

use crate::App;
use crate::auth::{Caller, MaybeCaller};
use crate::db::{with_reader, with_writer};
use crate::errors::GenericError;

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

/// The outcomes of `GET /api/profiles/:username`.
#[derive(Debug, strata::Outcomes)]
pub enum GetProfile {
    /// Profile
    #[outcome(status = 200)]
    Profile(ProfileBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Profile not found
    #[outcome(status = 404)]
    NotFound,
}

/// The outcomes of `POST /api/profiles/:username/follow`.
#[derive(Debug, strata::Outcomes)]
pub enum FollowUser {
    /// Profile
    #[outcome(status = 200)]
    Profile(ProfileBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Profile not found
    #[outcome(status = 404)]
    NotFound,
    /// One cannot follow oneself
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `DELETE /api/profiles/:username/follow`.
#[derive(Debug, strata::Outcomes)]
pub enum UnfollowUser {
    /// Profile
    #[outcome(status = 200)]
    Profile(ProfileBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// Profile not found
    #[outcome(status = 404)]
    NotFound,
}

/// The profile of `username` as `viewer` sees it, with the user's id; `None` without one.
async fn load(
    app: &App,
    username: &str,
    viewer: Option<i64>,
) -> Result<Option<(i64, Profile)>, ApiError> {
    let row: Option<(i64, String, String, Option<String>, bool)> = with_reader!(app.db, pool => {
        sqlx::query_as(
            "SELECT u.id, u.username, u.bio, u.image, \
             EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followed_id = u.id) \
             FROM users u WHERE u.username = $2",
        )
        .bind(viewer)
        .bind(username)
        .fetch_optional(pool)
        .await?
    });
    Ok(row.map(|(id, username, bio, image, following)| {
        (
            id,
            Profile {
                username,
                bio,
                image,
                following,
            },
        )
    }))
}

/// `GET /api/profiles/:username`.
pub(crate) async fn get(
    input: ProfileInput,
    app: App,
    viewer: MaybeCaller,
) -> Result<GetProfile, ApiError> {
    Ok(
        match load(&app, &input.username, viewer.0.map(|c| c.id)).await? {
            Some((_, profile)) => GetProfile::Profile(ProfileBody { profile }),
            None => GetProfile::NotFound,
        },
    )
}

/// `POST /api/profiles/:username/follow`: idempotent; following oneself is a 422.
pub(crate) async fn follow(
    input: ProfileInput,
    app: App,
    caller: Caller,
) -> Result<FollowUser, ApiError> {
    let Some((id, mut profile)) = load(&app, &input.username, Some(caller.id)).await? else {
        return Ok(FollowUser::NotFound);
    };
    if id == caller.id {
        return Ok(FollowUser::Unprocessable(GenericError::new(
            "You cannot follow yourself",
        )));
    }
    with_writer!(app.db, pool => {
        sqlx::query(
            "INSERT INTO follows (follower_id, followed_id) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(caller.id)
        .bind(id)
        .execute(pool)
        .await?;
    });
    profile.following = true;
    Ok(FollowUser::Profile(ProfileBody { profile }))
}

/// `DELETE /api/profiles/:username/follow`: idempotent.
pub(crate) async fn unfollow(
    input: ProfileInput,
    app: App,
    caller: Caller,
) -> Result<UnfollowUser, ApiError> {
    let Some((id, mut profile)) = load(&app, &input.username, Some(caller.id)).await? else {
        return Ok(UnfollowUser::NotFound);
    };
    with_writer!(app.db, pool => {
        sqlx::query("DELETE FROM follows WHERE follower_id = $1 AND followed_id = $2")
            .bind(caller.id)
            .bind(id)
            .execute(pool)
            .await?;
    });
    profile.following = false;
    Ok(UnfollowUser::Profile(ProfileBody { profile }))
}
