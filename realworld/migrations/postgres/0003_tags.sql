-- `COLLATE "C"`: tags sort by code point (capitals first), as SQLite's default collation does,
-- whatever the cluster's locale.
CREATE TABLE tags (
    id   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE
);
-- `position`: the order of the article's `tagList` as it was written.
CREATE TABLE article_tags (
    article_id BIGINT NOT NULL REFERENCES articles (id) ON DELETE CASCADE,
    tag_id     BIGINT NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
    position   BIGINT NOT NULL,
    PRIMARY KEY (article_id, tag_id)
);
CREATE INDEX article_tags_tag ON article_tags (tag_id);
