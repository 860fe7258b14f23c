//! Tokens (`Authorization: Token <jwt>`, HS256) and password hashes (Argon2id).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use strata::{RequestInfo, Security};

use argon2::Argon2;
use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use strata::http::StatusCode;
use strata::prelude::*;
use strata::stages::middleware::MiddlewareHandler;

/// How long a token is valid.
const TOKEN_LIFETIME: Duration = Duration::from_secs(60 * 60 * 24 * 30);

/// The keys that sign and check tokens. Cheap to clone.
#[derive(Clone)]
pub struct Keys(Arc<(EncodingKey, DecodingKey)>);

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    /// The user's id.
    sub: i64,
    /// Expiry, seconds since the epoch.
    exp: u64,
}

impl Keys {
    /// Keys from a secret (`JWT_SECRET`).
    pub fn from_secret(secret: &[u8]) -> Self {
        Self(Arc::new((
            EncodingKey::from_secret(secret),
            DecodingKey::from_secret(secret),
        )))
    }

    /// Keys from 32 random bytes: tokens stop working when the process ends.
    pub fn random() -> Self {
        let mut secret = [0u8; 32];
        OsRng.fill_bytes(&mut secret);
        Self::from_secret(&secret)
    }

    /// A token for user `id`.
    pub fn token(&self, id: i64) -> Result<String, ApiError> {
        let exp = (SystemTime::now() + TOKEN_LIFETIME)
            .duration_since(UNIX_EPOCH)
            .map_err(|e| ApiError::internal(e.to_string()))?
            .as_secs();
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &Claims { sub: id, exp },
            &self.0.0,
        )
        .map_err(|e| ApiError::internal(format!("signing a token: {e}")))
    }

    /// The user id of a valid, unexpired token.
    fn user_id(&self, token: &str) -> Option<i64> {
        let validation = Validation::new(Algorithm::HS256);
        jsonwebtoken::decode::<Claims>(token, &self.0.1, &validation)
            .ok()
            .map(|data| data.claims.sub)
    }
}

/// The signed-in caller: the token's user, and the token itself (the `user` responses of the
/// specification repeat it).
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user's id.
    pub id: i64,
    /// The token the request carried.
    pub token: String,
}

/// The caller, if the request carried a valid token (for endpoints where auth is optional).
#[derive(Debug, Clone)]
pub struct MaybeCaller(pub Option<Caller>);

/// The token of an `Authorization: Token <jwt>` header, if the header has that form.
fn token_of(request: &RequestInfo) -> Option<&str> {
    let value = request
        .headers
        .get(strata::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("token").then(|| token.trim())
}

/// Grants the [`Caller`] of a valid token; a request without the header gets Strata's 401
/// (`Missing credential: authorization (header)`), one with an invalid or expired token this 401.
pub fn required<C>(keys: Keys) -> Middleware<(), impl MiddlewareHandler<(), C, Output = Caller>> {
    Middleware::owned(move |(): (), request: RequestInfo, _logger: Logger| {
        let caller = token_of(&request).and_then(|token| {
            keys.user_id(token).map(|id| Caller {
                id,
                token: token.to_owned(),
            })
        });
        async move { caller.ok_or_else(|| http_error!(401, "Invalid or expired token")) }
    })
    .security(Security::header("authorization").description("`Token <jwt>`, the token of a user"))
    .error_response(StatusCode::UNAUTHORIZED, "Unauthorized")
}

/// Grants a [`MaybeCaller`]: the caller of a valid token, or nobody without a token; an invalid
/// token is still a 401 (a client that sends one should know it is refused).
pub fn optional<C>(
    keys: Keys,
) -> Middleware<(), impl MiddlewareHandler<(), C, Output = MaybeCaller>> {
    Middleware::owned(move |(): (), request: RequestInfo, _logger: Logger| {
        let outcome = match request.headers.get(strata::http::header::AUTHORIZATION) {
            None => Ok(MaybeCaller(None)),
            Some(_) => token_of(&request)
                .and_then(|token| {
                    keys.user_id(token).map(|id| Caller {
                        id,
                        token: token.to_owned(),
                    })
                })
                .map(|caller| MaybeCaller(Some(caller)))
                .ok_or_else(|| http_error!(401, "Invalid or expired token")),
        };
        async move { outcome }
    })
    .error_response(StatusCode::UNAUTHORIZED, "Unauthorized")
}

/// The Argon2id hash (a PHC string with its salt) of `password`, computed off the async
/// workers (it takes tens of milliseconds by design).
pub async fn hash_password(password: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|e| ApiError::internal(format!("hashing a password: {e}")))
    })
    .await
    .map_err(|e| ApiError::internal(format!("hashing a password: {e}")))?
}

/// Whether `password` matches `hash`, off the async workers.
pub async fn verify_password(password: String, hash: String) -> Result<bool, ApiError> {
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(&hash)
            .map_err(|e| ApiError::internal(format!("a stored hash: {e}")))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .map_err(|e| ApiError::internal(format!("checking a password: {e}")))?
}
