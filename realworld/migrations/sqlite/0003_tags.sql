CREATE TABLE tags (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
-- `position`: the order of the article's `tagList` as it was written.
CREATE TABLE article_tags (
    article_id INTEGER NOT NULL REFERENCES articles (id) ON DELETE CASCADE,
    tag_id     INTEGER NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    PRIMARY KEY (article_id, tag_id)
);
CREATE INDEX article_tags_tag ON article_tags (tag_id);
