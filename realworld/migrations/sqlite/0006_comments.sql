CREATE TABLE comments (
    id         INTEGER PRIMARY KEY,
    body       TEXT NOT NULL,
    article_id INTEGER NOT NULL REFERENCES articles (id) ON DELETE CASCADE,
    author_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX comments_article ON comments (article_id);
