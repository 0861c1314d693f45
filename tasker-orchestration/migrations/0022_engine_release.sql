-- The engine's SQL (tasker-orchestration/sql/) as last applied: one row. An orchestrator applies
-- its functions only when their checksum differs from the one recorded here and its release is
-- not older than the one that applied them, under an advisory lock; a restart of the same build
-- changes nothing, so it never disturbs orchestrators already running.
CREATE TABLE tasker_engine (
    id         int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    release    text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    applied_by text
);

-- What earlier releases' function files dropped at every start, dropped once here instead: the
-- first tasker_apply_results (a one-argument call is ambiguous beside today's, whose second
-- argument has a default) and tasker_create_task, which tasker_create_tasks replaced.
DROP FUNCTION IF EXISTS tasker_apply_results(jsonb);
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, uuid[], text[], text[], text[], jsonb[], int[],
    text[], bigint[], bigint[], bigint[], bigint[], int[], jsonb[], text[], uuid[], uuid[]);
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, timestamptz, uuid[], text[], text[], text[],
    jsonb[], int[], text[], bigint[], bigint[], bigint[], bigint[], int[], jsonb[], text[],
    jsonb[], uuid[], uuid[]);
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, timestamptz, uuid, uuid, int, int, text,
    uuid[], text[], text[], text[], jsonb[], int[], text[], bigint[], bigint[], bigint[],
    bigint[], int[], jsonb[], text[], jsonb[], text[], jsonb[], uuid[], uuid[]);
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, timestamptz, uuid, uuid, int, int, text,
    smallint, uuid[], text[], text[], text[], jsonb[], int[], text[], bigint[], bigint[],
    bigint[], bigint[], int[], jsonb[], text[], jsonb[], text[], jsonb[], jsonb[], uuid[],
    uuid[]);
