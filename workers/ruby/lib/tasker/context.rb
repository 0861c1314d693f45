# frozen_string_literal: true

module Tasker
  # What a handler receives: one attempt of one step. Hash keys are strings, as in the JSON the
  # task was created with.
  #
  # A step message carries its parent results when they fit on one page. Beyond that (the
  # convergence step of a large fan-out) they are read from the orchestrator when asked for:
  # #parent_results reads them all once and keeps them, #each_parent_result reads a page at a
  # time and keeps none, so a handler that folds 100,000 results holds one page of them. If the
  # orchestrator cannot be reached, both raise Tasker::ReferenceUnavailable (the step is retried).
  #
  # #heartbeat says whether the step is still the worker's to finish: a long handler checks it
  # between units of work and stops once it is false (its outcome would be ignored).
  #
  # #emit(topic, data) and #emit_text(topic, text) stream to the task's readers while the
  # handler runs (docs/streams.md); in a context made by hand they are kept in #emitted.
  class StepContext
    # The task's context (Hash).
    attr_reader :context
    attr_reader :task_id, :step_id, :namespace, :task_name, :step_name, :handler
    # 1 on the first attempt.
    attr_reader :attempt, :max_attempts
    # The step's timeout in seconds.
    attr_reader :timeout
    # For an instance of a `batch_worker` step: its batch, as the batchable parent returned it
    # (e.g. {"start" => 0, "end" => 200}); nil for other steps.
    attr_reader :input
    # What #emit and #emit_text sent, as [topic, data or text] pairs, in a context made by hand
    # (no worker to stream to); empty under a worker.
    attr_reader :emitted

    # +job+ is the worker protocol's `job` (a Hash parsed from the core's JSON). +native+ is the
    # NativeWorker that handed it out: it reads parent results carried by reference
    # (#parent_results_page(task_id, step_id, after) answering [json_text, next_cursor_or_nil])
    # and answers #heartbeat(job_id).
    def initialize(job, native = nil)
      @context = job.fetch("context")
      @carried = job.fetch("parent_results")
      if job["parent_results_by_reference"]
        raise ArgumentError, "the job's parent results are by reference and nothing reads them" unless native

        @pages = native
      else
        @parent_results = @carried
      end
      @task_id = job.fetch("task_id")
      @step_id = job.fetch("step_id")
      @namespace = job.fetch("namespace")
      @task_name = job.fetch("task_name")
      @step_name = job.fetch("step_name")
      @handler = job.fetch("handler")
      @attempt = job.fetch("attempt")
      @max_attempts = job.fetch("max_attempts")
      @timeout = job.fetch("timeout_ms") / 1000.0
      @input = job["input"]
      @job_id = job["id"]
      @native = native
      @emitted = []
    end

    # Sends +data+ (anything JSON.generate takes) on +topic+ of the step's stream, without
    # waiting: readers of the task's stream get it within milliseconds, and it is kept for the
    # task's retention. Raises Tasker::StreamError if it is not taken.
    def emit(topic, data)
      payload = begin
        JSON.generate(data)
      rescue JSON::GeneratorError, TypeError => e
        raise StreamError.new("invalid stream chunk: its data is not JSON: #{e.message}", kind: "invalid_stream_chunk")
      end
      send_chunk(topic, payload, false, data)
    end

    # Sends +text+ on +topic+ of the step's stream: one chunk per call (a token of a model's
    # answer, a line). As #emit otherwise.
    def emit_text(topic, text)
      raise StreamError.new("invalid stream chunk: emit_text takes a String", kind: "invalid_stream_chunk") unless text.is_a?(String)

      send_chunk(topic, text, true, text)
    end

    # The step's timeout in milliseconds (deprecated: #timeout is in seconds).
    def timeout_ms
      (timeout * 1000).round
    end

    # True while the step is still this worker's to finish: handed out, within its timeout,
    # the worker not stopped. It does not extend the timeout. Outside a worker (a context made
    # in a test) always true.
    def heartbeat
      @native.nil? || !@native.respond_to?(:heartbeat) || @native.heartbeat(@job_id)
    end

    private def send_chunk(topic, payload, text, value)
      unless @native.respond_to?(:emit)
        @emitted << [topic, value]
        return nil
      end
      refused = @native.emit(@job_id, topic.to_s, payload, text)
      raise StreamError.new(refused[1], kind: refused[0]) if refused

      nil
    end

    # Results of the step's completed parents, by step name (Hash of Hashes).
    def parent_results
      @parent_results ||= each_parent_result.to_h
    end

    # Yields the name and result of each completed parent, reading a page at a time (pages
    # follow the parents' ids) when they are not carried; an Enumerator without a block.
    def each_parent_result(&block)
      return enum_for(:each_parent_result) unless block
      return @carried.each(&block) unless @pages

      after = nil
      loop do
        text, after = @pages.parent_results_page(task_id, step_id, after)
        JSON.parse(text).each(&block)
        break if after.nil?
      end
      self
    end

    # True on the step's last allowed attempt.
    def last_attempt?
      attempt >= max_attempts
    end
  end

  # The name of earlier releases; StepContext is the name in every language.
  Context = StepContext
end
