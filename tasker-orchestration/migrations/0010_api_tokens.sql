-- API tokens: who may use the API when the orchestrator requires tokens (orchestrator.auth).
-- Only a token's SHA-256 is stored; the token itself is shown once, when it is created.
-- A scope includes the ones below it: admin > write > read.
CREATE TABLE api_tokens (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    scope text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    hash bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text CHECK (char_length(created_by) BETWEEN 1 AND 256),
    revoked_at timestamptz
);

-- A name is taken until its token is revoked.
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
