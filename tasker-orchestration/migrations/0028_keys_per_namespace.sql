-- An idempotency key (and a dedupe window) is its namespace's own: the same key in two
-- namespaces names two tasks. Before, one namespace's key could hold back another's request
-- and the refusal named the other namespace's task.
ALTER TABLE tasks DROP CONSTRAINT tasks_idempotency_key_key;
-- The key first: a lookup by key alone (`GET /v1/tasks?idempotency_key=`) still uses it.
CREATE UNIQUE INDEX tasks_idempotency_key_namespace ON tasks (idempotency_key, namespace);

ALTER TABLE task_keys ADD COLUMN namespace text;
UPDATE task_keys k SET namespace = t.namespace FROM task_templates t WHERE t.id = k.template_id;
DELETE FROM task_keys WHERE namespace IS NULL;
ALTER TABLE task_keys ALTER COLUMN namespace SET NOT NULL;
ALTER TABLE task_keys DROP CONSTRAINT task_keys_pkey;
ALTER TABLE task_keys ADD PRIMARY KEY (namespace, key);
