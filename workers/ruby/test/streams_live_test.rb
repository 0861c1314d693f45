# frozen_string_literal: true

require "test_helper"
require "support/cluster"

# The step stream calls against a real orchestrator (target/debug/tasker-orchestrator), PostgreSQL
# and RabbitMQ: a task's chunks followed as they come and read a page at a time, a step's retry
# marked, an unknown task refused. One cluster of this file's templates, and an in-process
# Tasker::Worker running their handlers (below), serve every test here; the handlers emit with
# `ctx.emit_text` (the worker's side of step streams).
class StreamsLiveTest < Minitest::Test
  include TestSupport

  NAMESPACE = "ruby_streams"
  TEXTS = %w[t0 t1 t2 t3 t4].freeze

  TEMPLATES = {
    "stream" => <<~YAML,
      namespace: ruby_streams
      name: stream
      version: 1.0.0
      description: One step that emits `count` text chunks (default 5) on the topic `tokens`
      steps:
        - { name: generate, handler: stream_emitter }
    YAML
    "stream_retry" => <<~YAML
      namespace: ruby_streams
      name: stream_retry
      version: 1.0.0
      description: One step that emits a chunk, fails its first attempt and emits again on its second
      steps:
        - name: generate
          handler: stream_retrier
          retry: { max_attempts: 2, backoff: none }
    YAML
  }.freeze

  def self.registry
    registry = Tasker::Registry.new
    # `stream_emitter`: the stream fixture handler every language's tests assume: `count` (from
    # the task's context, default 5) text chunks on the topic `tokens` with the text t<i>, then
    # {"emitted" => count}. `delay_ms` (default 0) between chunks lets a reader follow them live.
    registry.register("stream_emitter") do |c|
      count = c.context.fetch("count", 5)
      count.times do |i|
        sleep(c.context.fetch("delay_ms", 0) / 1000.0)
        c.emit_text("tokens", "t#{i}")
      end
      { "emitted" => count }
    end
    registry.register("stream_retrier") do |c|
      c.emit_text("tokens", "attempt #{c.attempt}")
      # An ordinary exception: retried by the template's policy.
      raise ArgumentError, "once more" if c.attempt == 1

      { "attempt" => c.attempt }
    end
    registry
  end

  extend TestSupport::Cluster::OwnHandlers

  def texts(chunks)
    chunks.reject(&:end?).map(&:text)
  end

  def test_a_tasks_stream_is_followed_to_its_end_and_read_a_page_at_a_time
    task = client.create_task(NAMESPACE, "stream", { "count" => 5 })
    # The stream ends once the task has ended and its step's stream has: every chunk is kept.
    followed = client.stream(task.id).to_a
    assert_equal TEXTS, texts(followed)
    done = client.wait(task.id, 60)
    assert_equal ["complete", { "generate" => { "emitted" => 5 } }], [done.state, done.result]

    page = client.read_stream(task.id)
    assert_kind_of Tasker::Client::StreamPage, page
    assert_equal [task.id, true, page.chunks.size], [page.task_id, page.complete?, page.next]
    assert_equal followed, page.chunks
    # Dense offsets from 0; the attempt's chunks in order, its end chunk last.
    assert_equal Array(0...page.chunks.size), page.chunks.map(&:offset)
    emitted = page.chunks.reject(&:end?)
    assert_equal [0, 1, 2, 3, 4], emitted.map(&:seq)
    emitted.each do |c|
      assert_equal ["generate", 1, "tokens", nil, false], [c.step, c.attempt, c.topic, c.data, c.retry?]
      assert_match(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/, c.step_id)
      assert_kind_of Time, c.at
    end
    assert_predicate page.chunks.last, :end?
    assert_nil page.chunks.last.text

    two = client.read_stream(task.id, from: 1, limit: 2)
    assert_equal [[1, 2], 3], [two.chunks.map(&:offset), two.next]
    rest = client.read_stream(task.id, from: page.next)
    assert_equal [[], page.next, true], [rest.chunks, rest.next, rest.complete?]
    assert_equal TEXTS, texts(client.read_stream(task.id, topic: "tokens").chunks)
    assert_empty texts(client.read_stream(task.id, topic: "no_such_topic").chunks)
    assert_equal page.chunks[3..].map(&:offset), client.stream(task.id, from: 3).map(&:offset)
  end

  def test_a_running_tasks_chunks_are_yielded_as_they_come
    task = client.create_task(NAMESPACE, "stream", { "count" => 5, "delay_ms" => 200 })
    seen = []
    client.stream(task.id, topic: "tokens") do |c|
      # Read while the task runs: its step has not finished when the first chunk comes.
      seen << [c.text, client.get_task(task.id).state] unless c.end?
    end
    assert_equal TEXTS, seen.map(&:first)
    assert_equal "running", seen.first.last
    assert_equal "complete", client.wait(task.id, 60).state
  end

  def test_a_steps_retry_is_marked_on_the_first_chunk_of_its_new_attempt
    task = client.create_task(NAMESPACE, "stream_retry")
    chunks = client.stream(task.id).reject(&:end?)
    assert_equal [["attempt 1", 1, false], ["attempt 2", 2, true]], chunks.map { |c| [c.text, c.attempt, c.retry?] }
    assert_equal({ "generate" => { "attempt" => 2 } }, client.wait(task.id, 60).result)
  end

  def test_an_unknown_task_is_refused_at_once
    error = assert_raises(Tasker::Client::NotFoundError) { client.stream(SecureRandom.uuid).first }
    assert_equal "task_not_found", error.code
    error = assert_raises(Tasker::Client::InvalidRequestError) { client.read_stream("not-an-id") }
    assert_equal "invalid_id", error.code
  end
end
