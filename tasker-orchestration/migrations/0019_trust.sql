-- Trust that holds where features meet (docs/auth.md): work remembers the token that created or
-- saved it, so what it starts later (a child, a schedule's fire) is judged with that token
-- again; a dead letter remembers who sent it and every namespace it names; a token remembers
-- which token minted it and which broker user speaks for it; rate keys have owners.

-- The API token that created a task (a child: its root's; a schedule's fire: the schedule's);
-- NULL when made without a token (tokens off) or before this migration. `root_task_id`: the
-- task nobody started at the top of a child's tree (NULL for that task itself), whose
-- descendants are counted against orchestrator.max_child_tasks.
ALTER TABLE tasks ADD COLUMN token_id bigint, ADD COLUMN root_task_id uuid;
CREATE INDEX tasks_root ON tasks (root_task_id) WHERE root_task_id IS NOT NULL;

-- The token that saved a schedule: each fire is checked against it (revoked, expired or no
-- longer covering the template's namespaces: the schedule pauses with a note saying why).
ALTER TABLE schedules ADD COLUMN token_id bigint;

-- `minted_by`: the token that created this one through the API (revoking it revokes this one;
-- this one never outlives it). `broker_user`: the RabbitMQ user whose results speak for this
-- token — its name when it was created, unless that user already spoke for a token of
-- namespaces its creator does not cover.
ALTER TABLE api_tokens
    ADD COLUMN minted_by bigint REFERENCES api_tokens (id),
    ADD COLUMN broker_user text CHECK (char_length(broker_user) BETWEEN 1 AND 128);
UPDATE api_tokens SET broker_user = name;
CREATE INDEX api_tokens_broker_user ON api_tokens (broker_user) WHERE revoked_at IS NULL;
CREATE INDEX api_tokens_minted_by ON api_tokens (minted_by) WHERE minted_by IS NOT NULL;

-- A worker's row belongs to the token (by id) that first reported it.
ALTER TABLE workers ADD COLUMN reported_by_token bigint;

-- A dead letter's sender as the orchestrator judged it (the broker user RabbitMQ validated;
-- NULL: none, so a replay may move nothing), and the namespaces of every task its entries name
-- (NULL: one names no task, or it could not be read: for tokens of every namespace only).
ALTER TABLE dead_letters ADD COLUMN sender text, ADD COLUMN namespaces text[];

-- Rate keys read from a context are namespaced from now on (`<namespace>/<value>`).
ALTER TABLE rate_limits DROP CONSTRAINT rate_limits_key_check,
    ADD CONSTRAINT rate_limits_key_check CHECK (octet_length(key) <= 1024);

-- A named rate key (`stripe`) is declared by the first template that names it: its namespace
-- owns it, and a template of another namespace may name it only with the same numbers.
-- NULL numbers: declared before this migration, recorded by the owner's next registration.
CREATE TABLE rate_keys (
    key         text PRIMARY KEY CHECK (octet_length(key) <= 128),
    namespace   text NOT NULL,
    lim         int,
    per_ms      bigint,
    burst       int,
    declared_at timestamptz NOT NULL DEFAULT now()
);
-- Every namespace whose templates name a named rate key (who may see it).
CREATE TABLE rate_key_users (
    key       text NOT NULL REFERENCES rate_keys (key),
    namespace text NOT NULL,
    PRIMARY KEY (key, namespace)
);
-- The keys already named, each owned by the namespace of its oldest template.
WITH named AS (
    SELECT t.namespace, t.registered_at, k.key
    FROM task_templates t,
         LATERAL (SELECT t.definition->'rate_limit'->>'key' AS key
                  UNION
                  SELECT s->'rate_limit'->>'key'
                  FROM jsonb_array_elements(COALESCE(t.definition->'steps', '[]')) AS s) k
    WHERE k.key IS NOT NULL AND left(k.key, 1) <> '/'
)
INSERT INTO rate_keys (key, namespace)
SELECT DISTINCT ON (key) key, namespace FROM named ORDER BY key, registered_at;
INSERT INTO rate_key_users (key, namespace)
SELECT DISTINCT k.key, t.namespace
FROM task_templates t,
     LATERAL (SELECT t.definition->'rate_limit'->>'key' AS key
              UNION
              SELECT s->'rate_limit'->>'key'
              FROM jsonb_array_elements(COALESCE(t.definition->'steps', '[]')) AS s) k
WHERE k.key IS NOT NULL AND left(k.key, 1) <> '/';
