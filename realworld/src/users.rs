//! Users: register, log in, read and update the current user.

use std::sync::LazyLock;

use strata::http::StatusCode;
use strata::prelude::*;

use crate::App;
use crate::auth::{Caller, hash_password, verify_password};
use crate::db::{with_reader, with_writer};
use crate::errors::GenericError;

#[strata::model]
#[derive(Clone, Debug)]
pub struct RegisterInput {
    #[garde(dive)]
    pub user: NewUser,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct NewUser {
    #[garde(length(chars, min = 1, max = 64))]
    pub username: String,
    #[garde(email, length(max = 254))]
    pub email: String,
    #[garde(length(chars, min = 1, max = 256))]
    #[schemars(extend("format" = "password"))]
    pub password: String,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct LoginInput {
    #[garde(dive)]
    pub user: LoginUser,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct LoginUser {
    #[garde(length(chars, min = 1, max = 254))]
    pub email: String,
    #[garde(length(chars, min = 1, max = 256))]
    #[schemars(extend("format" = "password"))]
    pub password: String,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct UpdateUserInput {
    #[garde(dive)]
    pub user: UpdateUser,
}

/// Absent fields are left as they are; `image: ""` removes the image (`null`, as absence, leaves
/// it: serde reads both as `None`).
#[strata::model]
#[derive(Clone, Debug)]
pub struct UpdateUser {
    #[strata(not_null)]
    #[garde(inner(email, length(max = 254)))]
    pub email: Option<String>,
    #[strata(not_null)]
    #[garde(inner(length(chars, min = 1, max = 64)))]
    pub username: Option<String>,
    #[strata(not_null)]
    #[garde(inner(length(chars, min = 1, max = 256)))]
    pub password: Option<String>,
    #[strata(not_null)]
    #[garde(inner(length(chars, max = 10_000)))]
    pub bio: Option<String>,
    #[garde(inner(length(chars, max = 2_000)))]
    pub image: Option<String>,
}

/// `{"user": {..}}`.
#[strata::model]
#[derive(Clone, Debug)]
pub struct UserBody {
    #[garde(dive)]
    pub user: User,
}

#[strata::model]
#[derive(Clone, Debug)]
pub struct User {
    pub email: String,
    pub token: String,
    pub username: String,
    pub bio: String,
    pub image: Option<String>,
}

/// The outcomes of `POST /api/users`.
#[derive(Debug, strata::Outcomes)]
pub enum CreateUser {
    /// User
    #[outcome(status = 201)]
    Created(UserBody),
    /// The username or email is taken
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `POST /api/users/login`.
#[derive(Debug, strata::Outcomes)]
pub enum Login {
    /// User
    #[outcome(status = 200)]
    User(UserBody),
    /// Invalid email or password
    #[outcome(status = 401)]
    Unauthorized,
    /// Unprocessable: the input fails validation (each problem in errors.body)
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// The outcomes of `GET /api/user`.
#[derive(Debug, strata::Outcomes)]
pub enum GetCurrentUser {
    /// User
    #[outcome(status = 200)]
    User(UserBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
}

/// The outcomes of `PUT /api/user`.
#[derive(Debug, strata::Outcomes)]
pub enum UpdateCurrentUser {
    /// User
    #[outcome(status = 200)]
    User(UserBody),
    /// Invalid or expired token
    #[outcome(status = 401)]
    Unauthorized,
    /// The username or email is taken
    #[outcome(status = 422)]
    Unprocessable(GenericError),
}

/// A row of `users`, as a tuple (`sqlx::FromRow`'s derive needs sqlx's `derive` feature and
/// its proc-macro crate: not worth it for one struct).
type Tuple = (i64, String, String, String, String, Option<String>);

/// A row of `users`.
struct Row {
    id: i64,
    email: String,
    username: String,
    password_hash: String,
    bio: String,
    image: Option<String>,
}

impl From<Tuple> for Row {
    fn from((id, email, username, password_hash, bio, image): Tuple) -> Self {
        Self {
            id,
            email,
            username,
            password_hash,
            bio,
            image,
        }
    }
}

impl Row {
    fn with_token(self, token: String) -> UserBody {
        UserBody {
            user: User {
                email: self.email,
                token,
                username: self.username,
                bio: self.bio,
                image: self.image,
            },
        }
    }
}

/// A 422 for a username or email another user has, any other database error as it is.
fn unique(error: sqlx::Error) -> ApiError {
    if let sqlx::Error::Database(db) = &error
        && db.is_unique_violation()
    {
        // PostgreSQL names the constraint; SQLite only says it in its message.
        let email = db.constraint().map_or_else(
            || db.message().contains("users.email"),
            |name| name == "users_email_key",
        );
        let field = if email { "email" } else { "username" };
        return ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{field} has already been taken"),
        );
    }
    error.into()
}

const SELECT: &str = "SELECT id, email, username, password_hash, bio, image FROM users";

async fn by_id(app: &App, id: i64) -> Result<Option<Row>, ApiError> {
    let row = with_reader!(app.db, pool => {
        sqlx::query_as::<_, Tuple>(&format!("{SELECT} WHERE id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await?
    });
    Ok(row.map(Row::from))
}

/// `POST /api/users`.
/// A username or email already taken is `unique`'s 422, an `ApiError` like the pipeline's: the
/// client reads either as [`CreateUser::Unprocessable`].
pub(crate) async fn register(input: RegisterInput, app: App) -> Result<CreateUser, ApiError> {
    let NewUser {
        username,
        email,
        password,
    } = input.user;
    app.limits.accounts().check(&email).await?;
    let hash = hash_password(app.limits.hashes(), password).await?;
    let row = with_writer!(app.db, pool => {
        sqlx::query_as::<_, Tuple>(
            "INSERT INTO users (username, email, password_hash) VALUES ($1, $2, $3) \
             RETURNING id, email, username, password_hash, bio, image",
        )
        .bind(username)
        .bind(email)
        .bind(hash)
        .fetch_one(pool)
        .await
        .map_err(unique)?
    });
    let row = Row::from(row);
    let token = app.keys.token(row.id)?;
    Ok(CreateUser::Created(row.with_token(token)))
}

/// A hash that no password matches in practice (of 32 random bytes), checked when the email
/// is unknown.
/// Computed at start-up ([`prepare`]), not on an async worker.
static UNKNOWN: LazyLock<String> = LazyLock::new(|| {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    use argon2::password_hash::{PasswordHasher, SaltString};
    let mut secret = [0u8; 32];
    OsRng.fill_bytes(&mut secret);
    argon2::Argon2::default()
        .hash_password(&secret, &SaltString::generate(&mut OsRng))
        .map(|hash| hash.to_string())
        .unwrap_or_default()
});

/// Computes what login needs before the first request.
pub(crate) fn prepare() {
    LazyLock::force(&UNKNOWN);
}

/// `POST /api/users/login`.
pub(crate) async fn login(input: LoginInput, app: App) -> Result<Login, ApiError> {
    let LoginUser { email, password } = input.user;
    app.limits.accounts().check(&email).await?;
    let row = with_reader!(app.db, pool => {
        sqlx::query_as::<_, Tuple>(&format!("{SELECT} WHERE email = $1"))
            .bind(email)
            .fetch_optional(pool)
            .await?
    })
    .map(Row::from);
    let Some(row) = row else {
        // As long as a wrong password takes, so that timing does not tell which emails exist.
        // Its outcome does not matter: the answer is the same. Its failure (a 503 when too many
        // checks wait) does, for the same reason.
        let _matched = verify_password(app.limits.hashes(), password, UNKNOWN.clone()).await?;
        return Ok(Login::Unauthorized);
    };
    if !verify_password(app.limits.hashes(), password, row.password_hash.clone()).await? {
        return Ok(Login::Unauthorized);
    }
    let token = app.keys.token(row.id)?;
    Ok(Login::User(row.with_token(token)))
}

/// `GET /api/user`.
pub(crate) async fn current((): (), app: App, caller: Caller) -> Result<GetCurrentUser, ApiError> {
    Ok(match by_id(&app, caller.id).await? {
        Some(row) => GetCurrentUser::User(row.with_token(caller.token)),
        // A valid token of a user deleted since the middleware checked.
        None => GetCurrentUser::Unauthorized,
    })
}

/// `PUT /api/user`.
pub(crate) async fn update(
    input: UpdateUserInput,
    app: App,
    caller: Caller,
) -> Result<UpdateCurrentUser, ApiError> {
    let UpdateUser {
        email,
        username,
        password,
        bio,
        image,
    } = input.user;
    let hash = match password {
        Some(password) => Some(hash_password(app.limits.hashes(), password).await?),
        None => None,
    };
    let sql = format!(
        "UPDATE users SET email = coalesce($1, email), username = coalesce($2, username), \
         password_hash = coalesce($3, password_hash), bio = coalesce($4, bio), \
         image = CASE WHEN $5 IS NULL THEN image ELSE nullif($5, '') END, \
         updated_at = {now} \
         WHERE id = $6 RETURNING id, email, username, password_hash, bio, image",
        now = app.db.sql().now
    );
    let row = with_writer!(app.db, pool => {
        sqlx::query_as::<_, Tuple>(&sql)
            .bind(&email)
            .bind(&username)
            .bind(&hash)
            .bind(&bio)
            .bind(image.as_deref())
            .bind(caller.id)
            .fetch_optional(pool)
            .await
            .map_err(unique)?
    });
    Ok(match row {
        Some(row) => UpdateCurrentUser::User(Row::from(row).with_token(caller.token)),
        // A valid token of a user deleted since the middleware checked.
        None => UpdateCurrentUser::Unauthorized,
    })
}
