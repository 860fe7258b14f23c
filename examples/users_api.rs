//! A small social app in memory: sessions, users with avatars, posts with likes and comments,
//! follows, and a stream of new posts. The twin of `bench/ezapi/twin/users_api.ts`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use strata::events::Emitter;
use strata::{Config, RequestInfo, Routing, Security, UploadLimits, UploadedFile};

use bytes::Bytes;
use strata::StreamResponse;
use strata::http::header::AUTHORIZATION;
use strata::http::{HeaderValue, StatusCode};
use strata::paginate::{
    CursorInput, CursorPage, OffsetInput, OffsetPage, decode_cursor, encode_cursor, pagination,
};
use strata::prelude::*;
use tokio::sync::broadcast::{self, error::RecvError};

#[strata::model]
#[derive(Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Role {
    Admin,
    Member,
}

#[strata::model(output)]
#[derive(Clone)]
#[serde(rename_all = "camelCase")]
struct User {
    id: u64,
    name: String,
    email: String,
    #[garde(skip)]
    role: Role,
    age: Option<u8>,
    has_avatar: bool,
}

#[strata::model(output)]
#[derive(Clone)]
#[serde(rename_all = "camelCase")]
struct Post {
    id: u64,
    author_id: u64,
    text: String,
    likes: usize,
}

#[strata::model(output)]
#[derive(Clone)]
#[serde(rename_all = "camelCase")]
struct Comment {
    id: u64,
    post_id: u64,
    author_id: u64,
    text: String,
}

#[strata::model(output)]
struct Users {
    #[garde(skip)]
    users: Vec<User>,
}

#[strata::model(output)]
struct Comments {
    #[garde(skip)]
    comments: Vec<Comment>,
}

#[strata::model(output)]
struct SignedIn {
    token: String,
    #[garde(skip)]
    user: User,
}

#[strata::model(output)]
struct Health {
    status: &'static str,
}

#[strata::model(output)]
struct AvatarSaved {
    size: usize,
}

#[strata::model(input)]
struct ById {
    id: u64,
}

#[strata::model(input)]
struct NewUser {
    #[garde(length(chars, min = 1, max = 50))]
    name: String,
    #[garde(email)]
    email: String,
    #[garde(length(chars, min = 8))]
    password: String,
    #[strata(coerce)] // also accepts "42"
    #[garde(range(max = 150))]
    age: Option<u8>,
}

#[strata::model(input)]
struct NewUserByAdmin {
    #[garde(length(chars, min = 1, max = 50))]
    name: String,
    #[garde(email)]
    email: String,
    #[garde(length(chars, min = 8))]
    password: String,
    #[strata(coerce)]
    #[garde(range(max = 150))]
    age: Option<u8>,
    #[garde(skip)]
    role: Option<Role>,
}

#[strata::model(input)]
struct SignIn {
    #[garde(email)]
    email: String,
    password: String,
}

#[strata::model(input)]
struct UserChanges {
    #[strata(not_null)]
    #[garde(length(chars, min = 1, max = 50))]
    name: Option<String>,
    #[strata(not_null, coerce)]
    #[garde(range(max = 150))]
    age: Option<u8>,
}

#[strata::model(input)]
struct UserChangesByAdmin {
    id: u64,
    #[strata(not_null)]
    #[garde(length(chars, min = 1, max = 50))]
    name: Option<String>,
    #[strata(not_null, coerce)]
    #[garde(range(max = 150))]
    age: Option<u8>,
    #[strata(not_null)]
    #[garde(skip)]
    role: Option<Role>,
}

#[strata::model(input)]
#[serde(rename_all = "camelCase")]
struct UserFilters {
    #[garde(skip)]
    role: Option<Role>,
    q: Option<String>,
    has_avatar: Option<bool>,
}

#[strata::model(input)]
#[serde(rename_all = "camelCase")]
struct PostFilters {
    author_id: Option<u64>,
}

#[strata::model(input)]
struct NewText {
    #[garde(length(chars, min = 1, max = 500))]
    text: String,
}

#[strata::model(input)]
struct PostText {
    id: u64,
    #[garde(length(chars, min = 1, max = 500))]
    text: String,
}

#[strata::model(input)]
#[serde(rename_all = "camelCase")]
struct CommentPath {
    id: u64,
    comment_id: u64,
}

#[strata::model(input)]
struct AvatarUpload {
    avatar: UploadedFile,
}

#[strata::model(output)]
#[serde(rename_all = "camelCase")]
enum FeedEvent {
    Post(#[garde(skip)] Post),
}

pagination! { UserPages: offset { items_name: "users", max_limit: 50, default_limit: 20 } }
pagination! { PostPages: cursor { items_name: "posts", max_limit: 50, default_limit: 20 } }

struct Account {
    id: u64,
    name: String,
    email: String,
    role: Role,
    age: Option<u8>,
    password: String,
}

struct StoredPost {
    id: u64,
    author_id: u64,
    text: String,
    liked_by: BTreeSet<u64>,
}

struct Avatar {
    data: Bytes,
    mimetype: String,
}

#[derive(Default)]
struct Db {
    next_id: u64,
    users: BTreeMap<u64, Account>,
    tokens: HashMap<String, u64>,
    avatars: HashMap<u64, Avatar>,
    posts: BTreeMap<u64, StoredPost>,
    comments: BTreeMap<u64, Comment>,
    following: HashMap<u64, BTreeSet<u64>>, // follower -> followees
}

/// The application's state: the data and the feed of new posts.
#[derive(Clone)]
struct Store {
    db: Arc<Mutex<Db>>,
    feed: broadcast::Sender<Post>,
}

/// What the auth middleware gives handlers.
#[derive(Clone)]
struct Session {
    user_id: u64,
    role: Role,
    token: String,
}

impl Session {
    fn require_admin(&self) -> Result<(), ApiError> {
        match self.role {
            Role::Admin => Ok(()),
            Role::Member => Err(http_error!(403, "Admins only")),
        }
    }
}

impl Store {
    fn new() -> Self {
        let mut db = Db {
            next_id: 2,
            ..Db::default()
        };
        let admin = Account {
            id: 1,
            name: "Admin".into(),
            email: "admin@example.com".into(),
            role: Role::Admin,
            age: None,
            password: "admin-password".into(),
        };
        db.users.insert(1, admin);
        Self {
            db: Arc::new(Mutex::new(db)),
            feed: broadcast::channel(64).0,
        }
    }

    fn db(&self) -> MutexGuard<'_, Db> {
        self.db.lock().expect("the store is not poisoned")
    }
}

impl Db {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    fn user(&self, id: u64) -> Result<&Account, ApiError> {
        self.users
            .get(&id)
            .ok_or_else(|| http_error!(404, "User not found"))
    }

    fn post(&self, id: u64) -> Result<&StoredPost, ApiError> {
        self.posts
            .get(&id)
            .ok_or_else(|| http_error!(404, "Post not found"))
    }

    fn own_post(&mut self, id: u64, session: &Session) -> Result<&mut StoredPost, ApiError> {
        let post = self
            .posts
            .get_mut(&id)
            .ok_or_else(|| http_error!(404, "Post not found"))?;
        if post.author_id != session.user_id {
            return Err(http_error!(403, "Only the author can change a post"));
        }
        Ok(post)
    }

    fn to_user(&self, account: &Account) -> User {
        User {
            id: account.id,
            name: account.name.clone(),
            email: account.email.clone(),
            role: account.role,
            age: account.age,
            has_avatar: self.avatars.contains_key(&account.id),
        }
    }

    fn user_out(&self, id: u64) -> Result<User, ApiError> {
        Ok(self.to_user(self.user(id)?))
    }

    fn users_out(&self, ids: impl IntoIterator<Item = u64>) -> Users {
        let users = ids
            .into_iter()
            .filter_map(|id| self.user_out(id).ok())
            .collect();
        Users { users }
    }

    fn followees(&self, id: u64) -> BTreeSet<u64> {
        self.following.get(&id).cloned().unwrap_or_default()
    }

    fn create_account(
        &mut self,
        (name, email, password, age): (String, String, String, Option<u8>),
        role: Role,
    ) -> Result<u64, ApiError> {
        if self.users.values().any(|user| user.email == email) {
            return Err(http_error!(409, "Email already registered"));
        }
        let id = self.next_id();
        self.users.insert(
            id,
            Account {
                id,
                name,
                email,
                role,
                age,
                password,
            },
        );
        Ok(id)
    }

    fn start_session(&mut self, user_id: u64) -> Result<SignedIn, ApiError> {
        let token = new_token();
        self.tokens.insert(token.clone(), user_id);
        Ok(SignedIn {
            token,
            user: self.user_out(user_id)?,
        })
    }
}

fn to_post(post: &StoredPost) -> Post {
    Post {
        id: post.id,
        author_id: post.author_id,
        text: post.text.clone(),
        likes: post.liked_by.len(),
    }
}

fn new_token() -> String {
    let random = ring::rand::generate::<[u8; 16]>(&ring::rand::SystemRandom::new());
    format!(
        "{:032x}",
        u128::from_be_bytes(random.expect("system randomness").expose())
    )
}

pub(crate) fn users_config(port: u16) -> Config {
    let avatars = UploadLimits::builder()
        .file_size(1024 * 1024)
        .files(1)
        .limit_error(StatusCode::PAYLOAD_TOO_LARGE, "Avatars are 1 MiB at most");
    create_config()
        .cors(Cors::Enabled)
        .listen(port)
        .upload(avatars)
        .build()
}

#[allow(clippy::too_many_lines)] // the whole routing, as express-zod-api keeps it in one object
pub(crate) fn users_routing() -> Routing {
    let store = Store::new();
    let base = default_endpoints_factory().with_state(store.clone());
    let auth = Middleware::owned(move |(): (), request: RequestInfo, _logger| {
        let store = store.clone();
        async move {
            let header = request
                .headers
                .get(AUTHORIZATION)
                .and_then(|value| value.to_str().ok());
            let token = header
                .unwrap_or_default()
                .trim_start_matches("Bearer ")
                .to_owned();
            let db = store.db();
            let user_id = *db
                .tokens
                .get(&token)
                .ok_or_else(|| http_error!(401, "Invalid token"))?;
            Ok(Session {
                user_id,
                role: db.user(user_id)?.role,
                token,
            })
        }
    })
    .security(Security::header("authorization"));
    let authed = base.clone().add_middleware(auth);

    let health = base
        .get()
        .handler_without_input(async || Ok(Health { status: "ok" }));

    let sign_up = base.post().handler(async |input: NewUser, store: Store| {
        let mut db = store.db();
        let id = db.create_account(
            (input.name, input.email, input.password, input.age),
            Role::Member,
        )?;
        db.start_session(id)
    });

    let sign_in = base.post().handler(async |input: SignIn, store: Store| {
        let mut db = store.db();
        let found = db
            .users
            .values()
            .find(|u| u.email == input.email && u.password == input.password);
        let id = found
            .ok_or_else(|| http_error!(401, "Invalid email or password"))?
            .id;
        db.start_session(id)
    });

    let sign_out = authed
        .delete()
        .handler_without_input(async |store: Store, session: Session| {
            store.db().tokens.remove(&session.token);
            Ok(())
        });

    let list_users = authed.get().handler(
        async |input: OffsetInput<UserPages, UserFilters>, store: Store| {
            let db = store.db();
            let filters = &input.filters;
            let query = filters.q.as_ref().map(|q| q.to_lowercase());
            let users: Vec<User> = db
                .users
                .values()
                .map(|account| db.to_user(account))
                .filter(|user| filters.role.is_none_or(|role| user.role == role))
                .filter(|user| {
                    query
                        .as_ref()
                        .is_none_or(|q| user.name.to_lowercase().contains(q))
                })
                .filter(|user| filters.has_avatar.is_none_or(|has| user.has_avatar == has))
                .collect();
            let total = users.len() as u64;
            let offset = usize::try_from(input.offset).unwrap_or(usize::MAX);
            let page = users
                .into_iter()
                .skip(offset)
                .take(input.limit as usize)
                .collect();
            Ok(OffsetPage::new(page, total, &input))
        },
    );

    let get_user = authed
        .get()
        .handler(async |input: ById, store: Store| store.db().user_out(input.id));

    let create_user = authed.post().handler(
        async |input: NewUserByAdmin, store: Store, session: Session| {
            session.require_admin()?;
            let mut db = store.db();
            let fields = (input.name, input.email, input.password, input.age);
            let id = db.create_account(fields, input.role.unwrap_or(Role::Member))?;
            db.user_out(id)
        },
    );

    let update_user = authed.patch().handler(
        async |input: UserChangesByAdmin, store: Store, session: Session| {
            session.require_admin()?;
            let mut db = store.db();
            let account = db
                .users
                .get_mut(&input.id)
                .ok_or_else(|| http_error!(404, "User not found"))?;
            if let Some(name) = input.name {
                account.name = name;
            }
            if let Some(age) = input.age {
                account.age = Some(age);
            }
            if let Some(role) = input.role {
                account.role = role;
            }
            db.user_out(input.id)
        },
    );

    let delete_user =
        authed
            .delete()
            .handler(async |input: ById, store: Store, session: Session| {
                session.require_admin()?;
                let mut db = store.db();
                db.users
                    .remove(&input.id)
                    .ok_or_else(|| http_error!(404, "User not found"))?;
                db.avatars.remove(&input.id);
                db.following.remove(&input.id);
                for followees in db.following.values_mut() {
                    followees.remove(&input.id);
                }
                db.tokens.retain(|_, user_id| *user_id != input.id);
                Ok(())
            });

    let get_me = authed
        .get()
        .handler_without_input(async |store: Store, session: Session| {
            store.db().user_out(session.user_id)
        });

    let update_me =
        authed
            .patch()
            .handler(async |input: UserChanges, store: Store, session: Session| {
                let mut db = store.db();
                let account = db
                    .users
                    .get_mut(&session.user_id)
                    .ok_or_else(|| http_error!(404, "User not found"))?;
                if let Some(name) = input.name {
                    account.name = name;
                }
                if let Some(age) = input.age {
                    account.age = Some(age);
                }
                db.user_out(session.user_id)
            });

    let upload_avatar = authed.post().handler(
        async |input: AvatarUpload, store: Store, session: Session| {
            let avatar = input.avatar;
            if !avatar.mimetype().starts_with("image/") {
                return Err(http_error!(415, "Avatars are images"));
            }
            let saved = Avatar {
                // In memory or on disk (past the spool threshold), read whole: avatars are
                // kept in memory here.
                data: avatar.bytes().await?,
                mimetype: avatar.mimetype().to_owned(),
            };
            store.db().avatars.insert(session.user_id, saved);
            Ok(AvatarSaved {
                size: avatar.size(),
            })
        },
    );

    let download_avatar = authed.get().handler(async |input: ById, store: Store| {
        let db = store.db();
        db.user(input.id)?;
        let avatar = db
            .avatars
            .get(&input.id)
            .ok_or_else(|| http_error!(404, "No avatar"))?;
        let media_type = HeaderValue::from_str(&avatar.mimetype)?;
        Ok(StreamResponse::from_bytes(media_type, avatar.data.clone()))
    });

    let follow = authed
        .post()
        .handler(async |input: ById, store: Store, session: Session| {
            let mut db = store.db();
            if db.user(input.id)?.id == session.user_id {
                return Err(http_error!(400, "You can not follow yourself"));
            }
            db.following
                .entry(session.user_id)
                .or_default()
                .insert(input.id);
            Ok(())
        });

    let unfollow = authed
        .delete()
        .handler(async |input: ById, store: Store, session: Session| {
            let mut db = store.db();
            db.user(input.id)?;
            db.following
                .entry(session.user_id)
                .or_default()
                .remove(&input.id);
            Ok(())
        });

    let followers = authed.get().handler(async |input: ById, store: Store| {
        let db = store.db();
        db.user(input.id)?;
        let ids = db
            .users
            .keys()
            .filter(|&&id| db.followees(id).contains(&input.id));
        Ok(db.users_out(ids.copied().collect::<Vec<_>>()))
    });

    let following = authed.get().handler(async |input: ById, store: Store| {
        let db = store.db();
        db.user(input.id)?;
        Ok(db.users_out(db.followees(input.id)))
    });

    let list_posts = authed.get().handler(
        async |input: CursorInput<PostPages, PostFilters>, store: Store| {
            let after: u64 = match &input.cursor {
                Some(cursor) => decode_cursor(cursor)?,
                None => 0,
            };
            let db = store.db();
            let limit = input.limit as usize;
            let author = input.filters.author_id;
            let mut posts: Vec<Post> = db
                .posts
                .range(after + 1..)
                .map(|(_, post)| post)
                .filter(|post| author.is_none_or(|id| post.author_id == id))
                .take(limit + 1)
                .map(to_post)
                .collect();
            let next_cursor = (posts.len() > limit).then(|| {
                posts.truncate(limit);
                encode_cursor(&posts[limit - 1].id)
            });
            Ok(CursorPage::new(posts, next_cursor, &input))
        },
    );

    let get_post = authed
        .get()
        .handler(async |input: ById, store: Store| Ok(to_post(store.db().post(input.id)?)));

    let create_post =
        authed
            .post()
            .handler(async |input: NewText, store: Store, session: Session| {
                let mut db = store.db();
                let id = db.next_id();
                let post = StoredPost {
                    id,
                    author_id: session.user_id,
                    text: input.text,
                    liked_by: BTreeSet::new(),
                };
                let out = to_post(&post);
                db.posts.insert(id, post);
                let _ = store.feed.send(out.clone()); // no subscriber is fine
                Ok(out)
            });

    let update_post =
        authed
            .patch()
            .handler(async |input: PostText, store: Store, session: Session| {
                let mut db = store.db();
                let post = db.own_post(input.id, &session)?;
                post.text = input.text;
                Ok(to_post(post))
            });

    let delete_post =
        authed
            .delete()
            .handler(async |input: ById, store: Store, session: Session| {
                let mut db = store.db();
                db.own_post(input.id, &session)?;
                db.posts.remove(&input.id);
                db.comments.retain(|_, comment| comment.post_id != input.id);
                Ok(())
            });

    let like = authed
        .post()
        .handler(async |input: ById, store: Store, session: Session| {
            let mut db = store.db();
            let post = db
                .posts
                .get_mut(&input.id)
                .ok_or_else(|| http_error!(404, "Post not found"))?;
            post.liked_by.insert(session.user_id);
            Ok(to_post(post))
        });

    let unlike = authed
        .delete()
        .handler(async |input: ById, store: Store, session: Session| {
            let mut db = store.db();
            let post = db
                .posts
                .get_mut(&input.id)
                .ok_or_else(|| http_error!(404, "Post not found"))?;
            post.liked_by.remove(&session.user_id);
            Ok(to_post(post))
        });

    let likers = authed.get().handler(async |input: ById, store: Store| {
        let db = store.db();
        let liked_by = db.post(input.id)?.liked_by.clone();
        Ok(db.users_out(liked_by))
    });

    let list_comments = authed.get().handler(async |input: ById, store: Store| {
        let db = store.db();
        db.post(input.id)?;
        let comments = db
            .comments
            .values()
            .filter(|c| c.post_id == input.id)
            .cloned()
            .collect();
        Ok(Comments { comments })
    });

    let add_comment =
        authed
            .post()
            .handler(async |input: PostText, store: Store, session: Session| {
                let mut db = store.db();
                db.post(input.id)?;
                let id = db.next_id();
                let comment = Comment {
                    id,
                    post_id: input.id,
                    author_id: session.user_id,
                    text: input.text,
                };
                db.comments.insert(id, comment.clone());
                Ok(comment)
            });

    let delete_comment =
        authed
            .delete()
            .handler(async |input: CommentPath, store: Store, session: Session| {
                let mut db = store.db();
                let comment = db
                    .comments
                    .get(&input.comment_id)
                    .filter(|c| c.post_id == input.id);
                let comment = comment.ok_or_else(|| http_error!(404, "Comment not found"))?;
                if comment.author_id != session.user_id {
                    return Err(http_error!(403, "Only the author can delete a comment"));
                }
                db.comments.remove(&input.comment_id);
                Ok(())
            });

    let events = base.get().event_stream(
        async |input: PostFilters, store: Store, emitter: Emitter<FeedEvent>| {
            let mut feed = store.feed.subscribe();
            loop {
                match feed.recv().await {
                    Ok(post) if input.author_id.is_none_or(|id| id == post.author_id) => {
                        emitter.emit(FeedEvent::Post(post)).await?;
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Ok(()),
                }
            }
        },
    );

    routing! {
        "v1" => {
            "health" => health,
            "signup" => sign_up,
            "sessions" => { "post" => sign_in, "delete" => sign_out },
            "users" => {
                "get" => list_users,
                "post" => create_user,
                ":id" => {
                    "get" => get_user,
                    "patch" => update_user,
                    "delete" => delete_user,
                    "avatar" => download_avatar,
                    "follow" => { "post" => follow, "delete" => unfollow },
                    "followers" => followers,
                    "following" => following,
                },
            },
            "me" => { "get" => get_me, "patch" => update_me, "avatar" => upload_avatar },
            "posts" => {
                "get" => list_posts,
                "post" => create_post,
                ":id" => {
                    "get" => get_post,
                    "patch" => update_post,
                    "delete" => delete_post,
                    "like" => { "post" => like, "delete" => unlike },
                    "likes" => likers,
                    "comments" => {
                        "get" => list_comments,
                        "post" => add_comment,
                        ":commentId" => delete_comment,
                    },
                },
            },
            "events" => events,
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = std::env::var("PORT")
        .ok()
        .and_then(|port| port.parse().ok())
        .unwrap_or(8090);
    create_server(&users_config(port), &users_routing())
        .await?
        .run()
        .await;
    Ok(())
}
