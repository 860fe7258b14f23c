//! Tokens (`Authorization: Token <jwt>`, HS256) and password hashes (Argon2id).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use strata::{RequestInfo, Security};

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Argon2, Block, Params, Version};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use strata::http::StatusCode;
use strata::prelude::*;
use strata::stages::middleware::MiddlewareHandler;

use crate::db::{Db, with_reader};
use crate::limits::Hashing;

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

/// The caller of `request`'s token: `None` without a token of the right form, with an invalid
/// or expired one, or with one whose user no longer exists (a valid token outlives its user:
/// without this check its requests met the foreign keys and failed with 500s).
async fn caller_of(
    keys: &Keys,
    users: &Db,
    token: Option<String>,
) -> Result<Option<Caller>, ApiError> {
    let Some((id, token)) = token.and_then(|token| keys.user_id(&token).map(|id| (id, token)))
    else {
        return Ok(None);
    };
    let exists = with_reader!(users, pool => {
        sqlx::query_scalar::<_, i64>("SELECT id FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?
    })
    .is_some();
    Ok(exists.then_some(Caller { id, token }))
}

/// Grants the [`Caller`] of a valid token whose user exists (read from `users`); a request
/// without the header gets Strata's 401 (`Missing credential: authorization (header)`), one
/// with an invalid or expired token, or the token of a deleted user, this 401.
pub fn required<C>(
    keys: Keys,
    users: Db,
) -> Middleware<(), impl MiddlewareHandler<(), C, Output = Caller>> {
    Middleware::owned(move |(): (), request: RequestInfo, _logger: Logger| {
        let token = token_of(&request).map(str::to_owned);
        let (keys, users) = (keys.clone(), users.clone());
        async move {
            caller_of(&keys, &users, token)
                .await?
                .ok_or_else(|| http_error!(401, "Invalid or expired token"))
        }
    })
    .security(Security::header("authorization").description("`Token <jwt>`, the token of a user"))
    .error_response(StatusCode::UNAUTHORIZED, "Unauthorized")
}

/// Grants a [`MaybeCaller`]: the caller of a valid token whose user exists, or nobody without
/// a token; an invalid token (or a deleted user's) is still a 401 (a client that sends one
/// should know it is refused).
pub fn optional<C>(
    keys: Keys,
    users: Db,
) -> Middleware<(), impl MiddlewareHandler<(), C, Output = MaybeCaller>> {
    Middleware::owned(move |(): (), request: RequestInfo, _logger: Logger| {
        let sent = request
            .headers
            .contains_key(strata::http::header::AUTHORIZATION);
        let token = token_of(&request).map(str::to_owned);
        let (keys, users) = (keys.clone(), users.clone());
        async move {
            if !sent {
                return Ok(MaybeCaller(None));
            }
            caller_of(&keys, &users, token)
                .await?
                .map(|caller| MaybeCaller(Some(caller)))
                .ok_or_else(|| http_error!(401, "Invalid or expired token"))
        }
    })
    .error_response(StatusCode::UNAUTHORIZED, "Unauthorized")
}

/// The Argon2 output of `password` for `phc`'s algorithm, version, parameters and salt,
/// computed in `memory` (grown to the parameters' size if it is smaller, and kept for the next
/// hash): what `Argon2::hash_password` does, without allocating the 19 MiB each time. Reusing
/// the memory is sound: the first pass of Argon2 (version 0x13) writes every block before any
/// block is read.
fn argon2_output(
    memory: &mut Vec<Block>,
    password: &[u8],
    phc: &PasswordHash<'_>,
) -> Result<Output, argon2::password_hash::Error> {
    let salt = phc.salt.ok_or(argon2::password_hash::Error::SaltInvalid(
        argon2::password_hash::errors::InvalidValue::Malformed,
    ))?;
    let mut salt_bytes = [0u8; 64];
    let salt = salt.decode_b64(&mut salt_bytes)?;
    let params = Params::try_from(phc)?;
    let version = phc
        .version
        .map(Version::try_from)
        .transpose()?
        .unwrap_or_default();
    let argon2 = Argon2::new(argon2::Algorithm::try_from(phc.algorithm)?, version, params);
    let blocks = argon2.params().block_count();
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    let length = phc.hash.map_or(
        argon2
            .params()
            .output_len()
            .unwrap_or(Params::DEFAULT_OUTPUT_LEN),
        |hash| hash.len(),
    );
    Output::init_with(length, |out| {
        Ok(argon2.hash_password_into_with_memory(password, salt, out, &mut memory[..blocks])?)
    })
}

/// The Argon2id hash (a PHC string with its salt, the default parameters) of `password`,
/// computed in `memory`.
fn hash_in(
    memory: &mut Vec<Block>,
    password: &[u8],
) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    let mut phc = PasswordHash {
        algorithm: argon2::Algorithm::Argon2id.ident(),
        version: Some(Version::default().into()),
        params: ParamsString::try_from(&Params::default())?,
        salt: Some(salt.as_salt()),
        hash: None,
    };
    phc.hash = Some(argon2_output(memory, password, &phc)?);
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `hash`, computed in `memory`.
fn verify_in(
    memory: &mut Vec<Block>,
    password: &[u8],
    hash: &str,
) -> Result<bool, argon2::password_hash::Error> {
    let phc = PasswordHash::new(hash)?;
    let Some(expected) = phc.hash else {
        return Err(argon2::password_hash::Error::Password);
    };
    // `Output`'s comparison takes constant time.
    Ok(argon2_output(memory, password, &phc)? == expected)
}

/// The Argon2id hash (a PHC string with its salt) of `password`, computed on the blocking pool
/// within `hashing`'s bound (it takes tens of milliseconds and 19 MiB by design).
pub async fn hash_password(hashing: &Hashing, password: String) -> Result<String, ApiError> {
    hashing
        .run("hashing a password", move |memory| {
            hash_in(memory, password.as_bytes())
                .map_err(|e| ApiError::internal(format!("hashing a password: {e}")))
        })
        .await
}

/// Whether `password` matches `hash`, on the blocking pool within `hashing`'s bound.
pub async fn verify_password(
    hashing: &Hashing,
    password: String,
    hash: String,
) -> Result<bool, ApiError> {
    hashing
        .run("checking a password", move |memory| {
            verify_in(memory, password.as_bytes(), &hash)
                .map_err(|e| ApiError::internal(format!("a stored hash: {e}")))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};

    /// Hashes made in reused memory are Argon2's own: the crate's verifier accepts them, and
    /// they accept the crate's hashes, whatever the memory held before.
    #[test]
    fn hashes_in_reused_memory_are_argon2s() {
        let mut memory = Vec::new();
        let ours = hash_in(&mut memory, b"correct horse").unwrap();
        assert!(
            ours.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{ours}"
        );
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"correct horse", &parsed)
                .is_ok()
        );
        assert!(
            Argon2::default()
                .verify_password(b"wrong horse", &parsed)
                .is_err()
        );
        let theirs = Argon2::default()
            .hash_password(b"battery staple", &SaltString::generate(&mut OsRng))
            .unwrap()
            .to_string();
        // The memory now holds the last hash's blocks: still the same answers.
        assert!(verify_in(&mut memory, b"battery staple", &theirs).unwrap());
        assert!(!verify_in(&mut memory, b"battery stapler", &theirs).unwrap());
        assert!(verify_in(&mut memory, b"correct horse", &ours).unwrap());
        assert_eq!(memory.len(), 19_456, "one 19 MiB buffer, reused");
        assert!(verify_in(&mut memory, b"x", "not a PHC string").is_err());
    }
}
