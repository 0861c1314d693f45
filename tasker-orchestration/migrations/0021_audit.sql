-- The audit log: one row per request to a route that changes something (every route of the API
-- but GET), answered or refused. Who: the token's id and name (none with tokens off, or for a
-- request without a valid token). What: the method, the route's pattern, the namespaces the
-- request named, the task it acts on, and its other targets (a schedule, a token's name, a dead
-- letter's id, ...) as JSON. When it arrived, from where (the peer's address, and the
-- X-Forwarded-For header when orchestrator.audit_forwarded_for says to keep it), and the
-- status of the answer.
--
-- Append-only: no UPDATE, no TRUNCATE, and DELETE only by the retention purge, in a
-- transaction that set its cut-off (tasker.audit_purge_before) an hour old or older, and only
-- for rows older than it (tasker_audit_append_only).
CREATE TABLE audit_log (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            timestamptz NOT NULL,
    token_id      bigint,
    token_name    text,
    method        text NOT NULL,
    route         text NOT NULL,
    status        smallint NOT NULL,
    peer          inet,
    forwarded_for text,
    namespaces    text[] NOT NULL DEFAULT '{}',
    task_id       uuid,
    target        jsonb NOT NULL DEFAULT '{}'
);

-- Retention goes oldest first; a time range is read from here too.
CREATE INDEX audit_log_at ON audit_log (at);

CREATE FUNCTION tasker_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz;
BEGIN
    IF TG_OP = 'DELETE' THEN
        cutoff := nullif(current_setting('tasker.audit_purge_before', true), '')::timestamptz;
        IF cutoff IS NOT NULL AND cutoff <= now() - interval '1 hour' AND OLD.at < cutoff THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit log is append-only: deleting audit row % is refused (only the retention purge deletes, rows older than its cut-off)', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION tasker_audit_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION tasker_audit_append_only();
