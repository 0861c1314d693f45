-- Webhooks in (docs/events.md): a named endpoint that turns a signed request into an event of
-- `namespace`. `secret` is the HMAC key the sender signs with, so it is kept as given (a
-- digest could not verify a signature); no route answers it. `token_id` is the token that
-- saved the webhook: each request is judged with it again (revoked: refused).
CREATE TABLE webhooks (
    name              text        PRIMARY KEY,
    namespace         text        NOT NULL,
    format            text        NOT NULL CHECK (format IN ('generic', 'github', 'stripe')),
    secret            text        NOT NULL,
    event             text,
    key_pointer       text,
    id_pointer        text,
    tolerance_seconds integer     NOT NULL CHECK (tolerance_seconds BETWEEN 1 AND 3600),
    token_id          bigint,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    received          bigint      NOT NULL DEFAULT 0,
    last_received_at  timestamptz
);
