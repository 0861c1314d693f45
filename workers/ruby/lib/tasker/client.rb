# frozen_string_literal: true

# Opened here before its parts reopen it: `require "tasker"` autoloads Tasker::Client from this
# file, and a part opening it first would trigger that autoload from inside this require.
module Tasker
  class Client; end
end

require "json"

require_relative "client/errors"
require_relative "client/http"
require_relative "client/task"
require_relative "client/step"
require_relative "client/transition"
require_relative "client/signal"
require_relative "client/schedule"
require_relative "client/schedules"
require_relative "client/worker_info"
require_relative "client/limits"
require_relative "client/batch"
require_relative "client/purge"
require_relative "client/audit"
require_relative "client/clock"
require_relative "client/operations"
require_relative "client/counts"
require_relative "client/events"
require_relative "client/webhooks"
require_relative "client/alerts"
require_relative "client/streams"
require_relative "client/retry"

module Tasker
  # A client of the orchestrator's REST API: submit tasks (now or later, one or many at once),
  # wait for them, list, cancel, read their steps and history, repair them, signal them, manage
  # schedules (Client::Schedules), list the workers serving them, read the concurrency and rate
  # limits (pausing a rate key), purge finished tasks, read the retention policy and the audit
  # log, retry, resolve or cancel every task a filter matches (replay or discard every dead
  # letter one matches) as one operation (Client::Operations), send events that start the tasks
  # of the templates whose triggers match them (Client::Events), and manage the webhooks that
  # turn other services' requests into events (Client::Webhooks) and the alert rules that tell
  # a sink when a condition holds (Client::Alerts), and read what a task's handlers emitted as
  # they ran, a page at a time or as it comes (Client::Streams). Pure Ruby (net/http); it does
  # not load the worker's native extension, so an app that only submits work needs `require
  # "tasker/client"` alone.
  #
  #   client = Tasker::Client.new(url: "http://127.0.0.1:8080")
  #   task = client.create_task("ruby_examples", "linear", { "value" => 6 })
  #   task = client.wait(task.id, 30)
  #   task.state  # => "complete"
  #   task.result # => {"halve"=>{"value"=>242}}
  #
  # Values are Task, Step, Transition, TaskPage, StepPage, Signal, Schedule, Backfill,
  # WorkerInfo, ConcurrencyLimit, RateLimit, BatchCreated, PurgeResult, RetentionPolicy,
  # AuditPage, Operation, OperationCount, OperationList, TaskCounts, Event, EventsSent,
  # EventPage, Webhook, Alert and StreamPage structs (TaskChild, StepChild, StepThrottle and
  # StepLimits inside tasks and steps, BatchItemResult and BatchItemError inside a BatchCreated,
  # an OperationFilter inside an operation, EventStarts inside an event, EventItems inside an
  # EventsSent, an AlertCondition and an AlertSink inside an alert rule, StreamChunks inside a
  # StreamPage and from #stream); JSON inside them (context, results, errors, an event's data)
  # has string keys; timestamps are Times.
  # Failures raise a Client::Error: an ApiError subclass (NotFoundError, ConflictError,
  # TaskPurgedError, ...) carrying the API's stable #code, or a ConnectionError. A client is safe
  # to share between threads.
  class Client
    include Schedules
    include Operations
    include Counts
    include Clock
    include Events
    include Webhooks
    include Alerts
    include Streams

    # Where the orchestrator is when neither +url:+ nor TASKER_URL says.
    DEFAULT_URL = "http://127.0.0.1:8080"

    # The longest single long poll of #wait, in seconds: within the server's default cap
    # (`orchestrator.max_wait_seconds`, 300) and short enough for proxies that drop idle
    # requests.
    LONGEST_POLL = 25

    # Seconds a long poll's answer may take beyond the poll itself.
    POLL_MARGIN = 10

    # Steps per request of #steps (the API's default; at most 5,000).
    STEP_PAGE = 1_000

    # The orchestrator's base URL.
    attr_reader :url

    # +url+: the orchestrator (else TASKER_URL, else DEFAULT_URL); a path in it prefixes every
    # route (an API behind a proxy). +token+: sent as `Authorization: Bearer <token>` (else
    # TASKER_TOKEN; none if neither). +tls_ca_file+: PEM file of CA certificates trusted beside
    # the system's, for an https:// orchestrator with a private CA (else TASKER_TLS_CA_FILE).
    # +timeout+: seconds to wait for an answer (a long poll of #wait gets longer). Raises
    # Client::Error for a URL that is not http(s):// or a CA file that holds no certificate.
    def initialize(url: nil, token: nil, tls_ca_file: nil, timeout: 30)
      @url = url || env("TASKER_URL") || DEFAULT_URL
      @http = Http.new(@url, token: token || env("TASKER_TOKEN"),
                             tls_ca_file: tls_ca_file || env("TASKER_TLS_CA_FILE"), timeout: timeout)
    end

    # Creates a task of the template +namespace+/+name+ (its newest version unless +version+)
    # with +context+ (a Hash; the template's `context_schema` must accept it). With
    # +idempotency_key+, a repeated request returns the task the first one created, and the
    # same key with another template or context raises ConflictError `idempotency_key_reused`.
    #
    # A delayed start, at most a year ahead: +run_at+ (a Time, or an RFC 3339 String; a past
    # time starts at once) or +delay+ (a duration String such as "10m" or "1h30m", or seconds),
    # not both. The task is "scheduled" until then (Task#run_at) and #cancel stops it like a
    # running one. InvalidRequestError `invalid_run_at` (also for both given) or
    # `invalid_delay` for a time the API refuses.
    #
    # +priority+ ("high", "normal" or "low") is the task's priority; by default its template's
    # (`priority:`), else "normal" (Task#priority says which it got). A template with a
    # concurrency or rate limit whose key is a JSON pointer into the context needs that value
    # there: a context without it (or with a non-scalar) raises InvalidRequestError
    # `concurrency_key_missing` or `rate_limit_key_missing`, a value over 128 bytes
    # `concurrency_key_too_long` or `rate_limit_key_too_long`.
    #
    # Start controls (docs/events.md), Hashes as the API takes them, durations as for +delay+:
    # +dedupe+ ({key: "invoice-1", ttl: "24h"}) makes `key` the idempotency key for `ttl`, also
    # after the task is purged (then a repeat raises ConflictError `deduplicated`, whose #details
    # name the task); +debounce+ ({key: "customer-7", period: "5s", max: "1m", mode:
    # "trailing"}) starts one task per burst of requests for `key`: "trailing" (the default)
    # `period` after the last, with its context (every request answers the same "scheduled"
    # task), "leading" at the first. InvalidRequestError `invalid_dedupe` or `invalid_debounce`
    # for a bad one. +deadline+ ({within: "15m", action: "cancel"}; "fail" by default) replaces
    # the template's deadline (InvalidRequestError `invalid_deadline`).
    def create_task(namespace, name, context = {}, version: nil, idempotency_key: nil, run_at: nil,
                    delay: nil, priority: nil, dedupe: nil, debounce: nil, deadline: nil)
      body = { namespace: namespace, name: name, version: version, context: context,
               idempotency_key: idempotency_key, run_at: run_at && timestamp(run_at),
               delay: delay && duration(delay), priority: priority, dedupe: dedupe && windows(dedupe),
               debounce: debounce && windows(debounce), deadline: deadline && windows(deadline) }.compact
      Task.from_json(@http.post("/v1/tasks", body))
    end

    # Creates many tasks in one request and one transaction (`POST /v1/tasks:batch`, at most the
    # server's `max_batch_tasks`, 10,000 by default). +tasks+ is an Array of Hashes, each what
    # #create_task sends (string or symbol keys): "namespace", "name" and optionally "version",
    # "context", "idempotency_key", "priority", "run_at" (a Time or an RFC 3339 String) and
    # "delay" (a duration String or seconds), "dedupe" and "debounce" (as #create_task takes them),
    # nils left out.
    #
    # Returns a BatchCreated with a BatchItemResult per item, in request order: "created",
    # "existing" (its idempotency key had created that task) or "refused" (nothing created for
    # it; its `error` has the code #create_task would raise, e.g. `unknown_template`). One refused
    # item does not fail the others. The whole request is refused, nothing created, with
    # InvalidRequestError `empty_batch`, `duplicate_idempotency_key` (two items share a key;
    # #details has "key" and "indexes"), `batch_too_large` (413; #details has "tasks" and
    # "limit") or `body_too_large`.
    def create_tasks(tasks)
      items = tasks.map do |task|
        task.to_h do |key, value|
          case key.to_s
          when "run_at" then [key, value && timestamp(value)]
          when "delay" then [key, value && duration(value)]
          when "dedupe", "debounce", "deadline" then [key, value && windows(value)]
          else [key, value]
          end
        end.compact
      end
      BatchCreated.from_json(@http.post("/v1/tasks:batch", { tasks: items }))
    end

    # The task +id+ now. NotFoundError `task_not_found` if there is none, TaskPurgedError
    # `task_purged` (410) if the retention policy purged it (every call on a task id raises it).
    def get_task(id)
      Task.from_json(@http.get(path("v1", "tasks", id)))
    end

    # Waits up to +timeout+ seconds for task +id+ to finish, and returns it as it is then:
    # terminal (Task#terminal?), or still running when the time ran out. Any +timeout+ works:
    # the wait is a series of long polls of at most LONGEST_POLL seconds, halved whenever a
    # server with a lower `max_wait_seconds` refuses one (`400 invalid_wait`). It rides through
    # restarts: a poll the connection drops or refuses (or a gateway's 502, 503, 504) is sent
    # again with backoff (0.1 s doubling to 2 s) until +timeout+ runs out, and only then raises
    # ConnectionError. An answer of the API (a 4xx) raises at once: a task the retention policy
    # purged raises TaskPurgedError.
    def wait(id, timeout)
      deadline = monotonic + timeout
      longest = LONGEST_POLL
      backoff = Retry::Backoff.new
      loop do
        left = [deadline - monotonic, 0].max
        begin
          task = long_poll(id, [left, longest].min)
        rescue InvalidRequestError => e
          raise unless e.code == "invalid_wait" && longest > 1

          longest /= 2.0
          next
        rescue Error => e
          remaining = deadline - monotonic
          raise unless Retry.transient?(e) && remaining.positive?

          sleep([backoff.next, remaining].min)
          next
        end
        return task if task.terminal? || left <= longest

        backoff.reset
      end
    end

    # One page of tasks, newest first: +limit+ of them (1–500, the API's default 50) older than
    # the task +before+ (the previous page's TaskPage#next_before), filtered by +state+
    # ("scheduled", "running", "complete", "error", "cancelled"), +namespace+, template +name+
    # and +parent+ (the child tasks of that task id).
    #
    # +created_after+ and +created_before+ (Times or RFC 3339 Strings) keep the tasks created at
    # or after, and strictly before, a time; +context+ (a Hash, sent as JSON text) the tasks
    # whose context contains it: `{ "order_id" => 42 }` matches `{ "order_id" => 42, "rush" =>
    # true }`, nested objects by subset, arrays by containment. InvalidRequestError
    # `invalid_time` for a String that is not RFC 3339, `invalid_context_filter` for a +context+
    # that is not an object. +counts: true+ also counts the tasks of each state the filter
    # matches (TaskPage#counts; see #task_counts). +id_prefix+ finds the tasks whose id begins
    # with these hexadecimal digits (4 to 32, hyphens allowed; `invalid_id_prefix` otherwise),
    # +idempotency_key+ the task started with that key.
    def list_tasks(state: nil, namespace: nil, name: nil, limit: nil, before: nil, parent: nil,
                   created_after: nil, created_before: nil, context: nil, counts: false,
                   id_prefix: nil, idempotency_key: nil)
      query = { state: state, namespace: namespace, name: name, limit: limit, before: before, parent: parent,
                created_after: created_after && timestamp(created_after),
                created_before: created_before && timestamp(created_before),
                context: context && JSON.generate(context), counts: counts ? true : nil,
                id_prefix: id_prefix, idempotency_key: idempotency_key }
      TaskPage.from_json(@http.get("/v1/tasks", query))
    end

    # Yields every task matching the filters (those of #list_tasks), newest first, reading
    # +page_size+ at a time as the iteration goes on; an Enumerator without a block
    # (`each_task(state: "error").first(10)` reads one page).
    def each_task(state: nil, namespace: nil, name: nil, parent: nil, created_after: nil, created_before: nil,
                  context: nil, page_size: nil, &block)
      filters = { state: state, namespace: namespace, name: name, parent: parent, created_after: created_after,
                  created_before: created_before, context: context }
      return enum_for(__method__, **filters, page_size: page_size) unless block

      before = nil
      loop do
        page = list_tasks(**filters, limit: page_size, before: before)
        page.tasks.each(&block)
        return self unless (before = page.next_before)
      end
    end

    # Cancels a running (or scheduled) task; returns it, `cancelled`. ConflictError
    # `task_not_running` if it has finished already.
    def cancel(id)
      Task.from_json(@http.post(path("v1", "tasks", id, "cancel")))
    end

    # Every step of task +id+ in id order, read +page_size+ steps at a time.
    def steps(id, page_size: STEP_PAGE)
      steps = []
      after = nil
      loop do
        page = steps_page(id, after: after, limit: page_size)
        steps.concat(page.steps)
        return steps unless (after = page.next)
      end
    end

    # One page of task +id+'s steps in id order: after the step +after+ (the previous page's
    # StepPage#next), at most +limit+ (1–5,000, the API's default 1,000) and a few MiB of them.
    def steps_page(id, after: nil, limit: nil)
      StepPage.from_json(@http.get(path("v1", "tasks", id, "steps"), { after: after, limit: limit }))
    end

    # Task +id+'s history, oldest first: an Array of Transition.
    def history(id)
      @http.get(path("v1", "tasks", id, "history")).fetch("transitions").map { |t| Transition.from_json(t) }
    end

    # One attempt of +step+ (its name or id; the latest unless +attempt+) of task +id+ as its
    # handler received it — context, parent results, batch, attempt — with the step's type,
    # retry policy and latest error, as a Hash (the API's JSON): what
    # Tasker::Testing.replay_inputs runs a local handler on. ConflictError `not_replayable` for
    # a wait or child step, or one that has not run.
    def step_inputs(id, step, attempt: nil)
      @http.get(path("v1", "tasks", id, "steps", step, "inputs"), { attempt: attempt })
    end

    # Retries a task that ended in error: the step that failed it (or +step+, its name or id,
    # which must be that step) runs again with its template's attempts, and the steps the
    # failure cancelled wait for their parents again. +by+ and +reason+ are recorded in the
    # history. Returns the task, running again. ConflictError `task_not_failed` (or
    # `step_not_failed`) otherwise.
    def retry(id, step: nil, by: nil, reason: nil)
      route = step ? path("v1", "tasks", id, "steps", step, "retry") : path("v1", "tasks", id, "retry")
      Task.from_json(@http.post(route, { by: by, reason: reason }.compact))
    end

    # Completes +step+ (its name or id), the step that failed task +id+, with +result+ as if its
    # handler had returned it, and lets the task go on from there; +by+ and +reason+ are
    # recorded in the history. InvalidRequestError `invalid_result` if the step's type cannot
    # take it (a decision's result must name its branches, a batchable step's list its batches).
    def resolve(id, step, result, by: nil, reason: nil)
      body = { result: result, by: by, reason: reason }.compact
      Task.from_json(@http.post(path("v1", "tasks", id, "steps", step, "resolve"), body))
    end

    # Sends the signal +name+ with +payload+ (any JSON, at most 64 KiB) to task +id+: the wait
    # step waiting for +name+ (now, or once one starts waiting) completes with +payload+ as its
    # result. Returns the Signal. With +signal_id+ (1–128 characters), sending it again with the
    # same payload returns the signal sent first and changes nothing, another payload raises
    # ConflictError `signal_conflict`; without one, the server makes one and each call is a new
    # signal. ConflictError `task_finished` for a finished task; InvalidRequestError
    # `invalid_signal_name` for a name that is not 1–64 of [A-Za-z0-9_.-].
    def signal(id, name, payload = nil, signal_id: nil)
      body = { signal_id: signal_id, payload: payload }.compact
      Signal.from_json(@http.post(path("v1", "tasks", id, "signals", name), body))
    end

    # Every Signal sent to task +id+, oldest first.
    def signals(id)
      @http.get(path("v1", "tasks", id, "signals")).fetch("signals").map { |s| Signal.from_json(s) }
    end

    # The workers the orchestrator knows (their heartbeats), as WorkerInfo records: the live
    # ones, or with +all+ also those not seen for longer than the liveness window (`live`
    # false). Which namespaces and handlers each serves.
    def workers(all: false)
      @http.get("/v1/workers", all ? { all: "true" } : {}).fetch("workers").map { |w| WorkerInfo.from_json(w) }
    end

    # The concurrency keys, those with a slot in use or a step throttled first, then the ones
    # used most recently (every page), as ConcurrencyLimit records: each one's `limit`, slots
    # `in_use` and steps `throttled`. +key_prefix+ keeps the keys that start with it
    # ("shop/charge_customer:").
    def concurrency_limits(key_prefix: nil)
      @http.every_page("/v1/concurrency-limits", { key: key_prefix }, "limits").map { |l| ConcurrencyLimit.from_json(l) }
    end

    # The rate keys (every page), as RateLimit records: each one's `limit` per `per_ms`,
    # `burst`, steps `throttled` and pause (`paused_until`, `pause_note`).
    def rate_limits
      @http.every_page("/v1/rate-limits", {}, "limits").map { |l| RateLimit.from_json(l) }
    end

    # Pauses the rate key +key+: no step of it starts before +until_time+ (a Time or an RFC 3339
    # String, in the future and at most a year ahead; else InvalidRequestError
    # `invalid_until`), with a +note+ saying why. Returns the RateLimit, paused. NotFoundError
    # `unknown_rate_limit` for a key no step ever used; it takes a token with the `write` scope
    # not restricted to namespaces (AuthError otherwise).
    def pause_rate_limit(key, until_time, note: nil)
      body = { until: timestamp(until_time), note: note }.compact
      RateLimit.from_json(@http.post(path("v1", "rate-limits", key, "pause"), body))
    end

    # Ends the pause of the rate key +key+ now; returns the RateLimit. The same errors and scope
    # as #pause_rate_limit.
    def resume_rate_limit(key)
      RateLimit.from_json(@http.delete(path("v1", "rate-limits", key, "pause")))
    end

    # Purges finished tasks whose completion is older than +older_than+ (a duration String such
    # as "90m", "36h" or "30d", at least an hour), with their steps, transitions, signals and dead
    # letters (`POST /v1/purge`), and returns a PurgeResult. +states+: of those finished states
    # ("complete", "error", "cancelled"; all three by default); never a task that is unfinished
    # or whose parent or child task is. +dry_run+ counts what would go and deletes nothing (`rows`
    # and `bytes` are then nil). +limit+ (1–100,000, the server's default 10,000) bounds the tasks
    # of one call: `more?` is true when it stopped there with more left, so call again.
    #
    # A purged task's id raises TaskPurgedError (`410 task_purged`) for as long as the server
    # keeps its tombstone. InvalidRequestError `invalid_older_than`, `invalid_state` or
    # `invalid_limit`; it takes a token not restricted to namespaces (AuthError `forbidden`
    # otherwise).
    def purge(older_than:, states: nil, dry_run: false, limit: nil)
      body = { older_than: older_than, states: states, dry_run: dry_run, limit: limit }.compact
      PurgeResult.from_json(@http.post("/v1/purge", body))
    end

    # The retention policy the orchestrator runs (`GET /v1/retention`), as a RetentionPolicy: how
    # long finished tasks of each state are kept before it purges them and purged ids raise
    # TaskPurgedError (durations such as "30d", or "never"), the purge's pace, and
    # `last_purged_at`, when the most recently purged task still remembered was purged (nil when
    # none is). Any valid token may read it.
    def retention
      RetentionPolicy.from_json(@http.get("/v1/retention"))
    end

    # One page of the audit log, newest first (`GET /v1/audit`), as an AuditPage: the requests
    # that asked to change something (every route but GET), refused ones included. Filters: a
    # +namespace+ the request named, the +token+ (name) it came with, its +route+ pattern
    # ("/v1/tasks/{id}/cancel") and +method+, +since+ and +until+ (Times or RFC 3339 Strings: at
    # or after, strictly before); +limit+ rows (1–500, default 50) older than +before+ (the
    # previous page's `next_before`). It takes an admin token (AuthError otherwise); one scoped to
    # namespaces reads the rows of its namespaces.
    def audit(namespace: nil, token: nil, route: nil, method: nil, since: nil, until: nil, limit: nil, before: nil)
      until_time = binding.local_variable_get(:until) # `until` is a keyword: read it so
      query = { namespace: namespace, token: token, route: route, method: method, limit: limit, before: before,
                since: since && timestamp(since), until: until_time && timestamp(until_time) }
      AuditPage.from_json(@http.get("/v1/audit", query))
    end

    # Closes the connections kept open for the next calls.
    def close
      @http.close
    end

    def inspect
      "#<#{self.class} #{@url}>"
    end

    private

    # GET the task, answered as soon as it is terminal or after +seconds+ (a long poll).
    def long_poll(id, seconds)
      Task.from_json(@http.get(path("v1", "tasks", id), { wait: format("%.3f", seconds) },
                               timeout: seconds + POLL_MARGIN))
    end

    # A route from its segments, each percent-encoded (a batch step's name has a `#`).
    def path(*segments)
      segments.map { |s| "/#{s.to_s.b.gsub(/[^A-Za-z0-9\-._~]/) { |c| format("%%%02X", c.ord) }}" }.join
    end

    # A time as the API takes it: RFC 3339 in UTC for a Time (or anything with #to_time), as
    # given for a String.
    def timestamp(time)
      return time if time.is_a?(String)

      time.to_time.utc.iso8601(6)
    end

    # A duration as the API takes it: as given for a String ("10m"); seconds become whole
    # seconds ("600s"), or milliseconds when there is a fraction ("1500ms").
    def duration(value)
      return value if value.is_a?(String)
      raise ArgumentError, "a duration is a String or seconds, not #{value.inspect}" unless value.is_a?(Numeric)

      value == value.to_i ? "#{value.to_i}s" : "#{(value * 1000).round}ms"
    end

    # A start control or a deadline as the API takes it: its durations (ttl, period, max, within)
    # as #duration writes them, nils left out.
    def windows(control)
      control.to_h do |key, value|
        [key, %w[ttl period max within].include?(key.to_s) && value ? duration(value) : value]
      end.compact
    end

    def env(name)
      value = ENV.fetch(name, nil)
      value unless value.nil? || value.empty?
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
