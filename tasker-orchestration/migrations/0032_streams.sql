-- Step streams (docs/streams.md): what handlers emit while they run (`ctx.emit`,
-- `ctx.emit_text`), kept for their task's retention so a reader that attaches late or comes back
-- reads from any offset with no gap and no duplicate.
--
-- `stream_chunks`: each chunk at its task-wide `position` (the API's `offset`: 0, 1, 2 …, dense,
-- in the order they were kept), the step attempt that emitted it and its `seq` there, its topic
-- and either `text` or `data`; `ended` marks the attempt's last chunk (no text or data), `retry`
-- the first of a step's stream that starts over (a retry, or the attempt run again after its
-- worker died).
CREATE TABLE stream_chunks (
    task_id  uuid        NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    position bigint      NOT NULL,
    step_id  uuid        NOT NULL,
    attempt  integer     NOT NULL,
    seq      integer     NOT NULL,
    topic    text        NOT NULL,
    text     text,
    data     jsonb,
    ended    boolean     NOT NULL DEFAULT false,
    retry    boolean     NOT NULL DEFAULT false,
    at       timestamptz NOT NULL,
    PRIMARY KEY (task_id, position)
);

-- Per task, the position the next chunk takes (the row is locked while a batch of chunks is
-- kept, so positions are dense and committed in order).
CREATE TABLE task_streams (
    task_id       uuid   PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    next_position bigint NOT NULL
);

-- Per step attempt that streamed: the `seq` expected next (a copy of a chunk already kept is
-- not kept twice), the bytes kept, whether its stream ended, when it was last heard of (a chunk
-- kept, its result applied), and how many chunks its result says it streamed (`expected`: its
-- stream is complete once that many are kept; results and chunks travel in different queues),
-- and the run of the attempt streaming (`run`: a worker that died mid-stream has the attempt run
-- again by another, whose stream starts over).
CREATE TABLE stream_attempts (
    step_id  uuid    NOT NULL,
    attempt  integer NOT NULL,
    task_id  uuid    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    next_seq integer NOT NULL,
    bytes    bigint  NOT NULL,
    ended    boolean NOT NULL DEFAULT false,
    last_at  timestamptz NOT NULL DEFAULT now(),
    expected integer,
    run      uuid,
    PRIMARY KEY (step_id, attempt)
);
CREATE INDEX stream_attempts_by_task ON stream_attempts (task_id);
