-- Tokens scoped to namespaces, and tokens that expire.
--
-- `namespaces`: the namespace patterns a token covers (`shop`, `shop_*`; `*` matches any run of
-- characters); NULL covers every namespace, as every token did before. A broker user named like
-- a live token speaks for it: results it publishes may move steps of those namespaces only.
-- `expires_at`: the token stops working then; NULL never.
ALTER TABLE api_tokens
    ADD COLUMN namespaces text[] CHECK (cardinality(namespaces) BETWEEN 1 AND 64),
    ADD COLUMN expires_at timestamptz;
