-- Streams with their children merged (`children=true`; docs/streams.md). A chunk a child task's
-- step emitted is also kept in each ancestor task's stream: a copy at the ancestor's own next
-- position, `origin` the child task, with its namespace and step name (the child may be purged
-- before its ancestor). A copy is read with `children=true` by a token that covers
-- `origin_namespace`, and left out otherwise. A task's own chunks have no origin.
ALTER TABLE stream_chunks
    ADD COLUMN origin           uuid,
    ADD COLUMN origin_namespace text,
    ADD COLUMN origin_step      text;
