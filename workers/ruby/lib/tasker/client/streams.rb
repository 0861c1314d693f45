# frozen_string_literal: true

require_relative "event_stream"
require_relative "record"
require_relative "retry"

module Tasker
  class Client
    # One chunk of a task's stream (Client#read_stream, #stream). `offset`: its place in the
    # task's stream (0, 1, 2 … in the order the orchestrator kept the chunks of all the task's
    # steps); `task_id`: the task whose step emitted it (the stream's own task, or, read with
    # `children: true`, one of its child tasks, at any depth); `step_id` and `step` (the name) of
    # the step that emitted it, in its `attempt` (from 1); `seq` its place in that attempt's
    # stream (from 0); `topic`; `text` (what `emit_text` sent, else nil) or `data` (what `emit`
    # sent, parsed JSON, else nil); `end` (#end?): the attempt's stream ended here (no text or
    # data); `retry` (#retry?): the first chunk of a step's retry, so what that step streamed
    # under its earlier attempts is superseded; `at` (a Time): when the handler emitted it.
    StreamChunk = Record.struct(
      :offset, :task_id, :step_id, :step, :attempt, :seq, :topic, :text, :data, :end, :retry, :at,
      times: %i[at], defaults: { end: false, retry: false }
    ) do
      # Whether the attempt's stream ended here.
      def end?
        self.end == true
      end

      # Whether it is the first chunk of a step's new attempt.
      def retry?
        self.retry == true
      end
    end

    # A page of a task's stream (Client#read_stream): its `chunks` (StreamChunk records) in
    # offset order, `next` the offset to read from next (`from: page.next`), and `complete`
    # (#complete?): the task has ended and so has every step attempt's stream, so nothing will
    # follow `next`.
    StreamPage = Record.struct(:task_id, :chunks, :next, :complete,
                               records: { chunks: StreamChunk }, defaults: { chunks: [].freeze, complete: false }) do
      def complete?
        complete == true
      end
    end

    # Step streams (`GET /v1/tasks/{id}/stream`, issue 47), Client's calls: what a task's handlers
    # emitted while they ran (`ctx.emit`, `ctx.emit_text`), each chunk with a dense task-wide
    # offset, read a page at a time or followed as Server-Sent Events as they come (resuming by
    # itself after a dropped connection: Client::EventStream).
    module Streams
      # Seconds #stream keeps opening its connection again while every attempt fails.
      RECONNECT_FOR = 30

      # One page of task +task_id+'s stream, as a StreamPage: the chunks from the offset +from+ on
      # (inclusive), of +topic+ only if given, at most +limit+ of them (1–1,000, the server's
      # default 500). With +children+ true, the chunks of the task's child tasks (those of its
      # `child:` steps, at any depth) of the namespaces the token covers are merged in, at offsets
      # of this task's stream (each chunk's `task_id` says whose it is). Read on from its `next`;
      # once it is #complete? nothing more will come. InvalidRequestError `invalid_id` or
      # `invalid_query`, AuthError `forbidden` (the token does not cover the task's namespace),
      # NotFoundError `task_not_found`, TaskPurgedError.
      def read_stream(task_id, from: 0, topic: nil, limit: nil, children: false)
        query = { from: from, topic: topic, limit: limit, children: children_param(children) }
        StreamPage.from_json(@http.get(path("v1", "tasks", task_id, "stream"), query))
      end

      # Yields every chunk of task +task_id+'s stream from the offset +from+ on (of +topic+ only
      # if given), StreamChunk records as they come (`GET /v1/tasks/{id}/stream` as Server-Sent
      # Events), until the stream is complete: the task has ended and so has every step
      # attempt's stream (the server's `end` event); then returns self. An Enumerator without a
      # block (`client.stream(id).first(3)` stops after three). With +children+ true (asked for on
      # every connection), its child tasks' chunks are merged in, as #read_stream reads them. A
      # chunk that is #retry? starts a step's new attempt: what that step streamed before is
      # superseded.
      #
      # A connection that drops, goes quiet for the client's +timeout+ (the server sends
      # keep-alives) or that the server closes before the end is opened again with backoff (0.1 s
      # doubling to 2 s), with `last-event-id` set to the last offset received: no chunk is
      # missed or repeated. Failures of the connection (and a gateway's 502, 503, 504) raise
      # ConnectionError only once they have lasted RECONNECT_FOR seconds in a row; an answer of
      # the API raises at once: the errors of #read_stream, and ApiError 429 `too_many_streams`
      # when the orchestrator serves as many streams as it may. Leaving the block early (`break`)
      # closes the connection; what the block raises is raised as it is.
      def stream(task_id, from: 0, topic: nil, children: false, &block)
        return enum_for(__method__, task_id, from: from, topic: topic, children: children) unless block

        route = path("v1", "tasks", task_id, "stream")
        cursor = EventStream::Cursor.new(route, StreamChunk.method(:from_json))
        backoff = Retry::Backoff.new
        failing_since = nil
        # The same on every connection (`last-event-id` wins over `from` on the server).
        query = { from: from, topic: topic, children: children_param(children) }
        until cursor.ended?
          inside = false
          begin
            @http.events(route, query, cursor.headers) do |piece|
              failing_since = nil
              cursor.push(piece) do |chunk|
                backoff.reset
                inside = true
                block.call(chunk)
                inside = false
              end
              break if cursor.ended?
            end
          rescue Error => e
            failing_since ||= monotonic
            raise if inside || !Retry.transient?(e) || monotonic - failing_since >= RECONNECT_FOR
          end
          sleep(backoff.next) unless cursor.ended?
        end
        self
      end

      private

      # `children=true` only when wanted (nil: left out of the query).
      def children_param(children)
        true if children
      end
    end
  end
end
