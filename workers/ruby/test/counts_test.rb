# frozen_string_literal: true

require_relative "client_support"

# Counts by state for a task filter (Client#task_counts, #list_tasks with +counts: true+)
# against a real orchestrator, with a Ruby worker running the ruby_examples fixture templates in
# this process.
class CountsTest < Minitest::Test
  include TestSupport
  extend TestSupport::Cluster::Shared

  Client = Tasker::Client
  NAMESPACE = "ruby_examples"

  def self.start_cluster
    TestSupport::Cluster.new(templates: FIXTURE_TEMPLATES, registry: Tasker.registry)
  end

  def client
    @client ||= self.class.cluster.client
  end

  def create(run, context = {}, **options)
    client.create_task(NAMESPACE, "retry_then_succeed", context.merge("run" => run), **options)
  end

  def test_task_counts_count_each_state_the_filter_matches_and_a_state_filter_narrows_none
    run = SecureRandom.uuid
    # `flaky` has three attempts: asked to succeed on the fourth, it fails on all of them.
    failing = Array.new(2) { create(run, { "succeed_on_attempt" => 4 }) }
    passing = Array.new(3) { create(run, { "succeed_on_attempt" => 1 }) }
    later = Array.new(2) { create(run, {}, delay: "1h") }
    client.cancel(later[1].id)
    failing.each { |t| assert_equal "error", client.wait(t.id, 30).state }
    passing.each { |t| assert_equal "complete", client.wait(t.id, 30).state }

    counts = client.task_counts(namespace: NAMESPACE, name: "retry_then_succeed", context: { "run" => run })
    assert_kind_of Client::TaskCounts, counts
    assert_equal({ scheduled: 1, running: 0, complete: 3, error: 2, cancelled: 1, total: 7 }, counts.to_h)

    # A state filter (and the page's limit) narrows the page, not its counts.
    page = client.list_tasks(state: "error", context: { "run" => run }, limit: 1, counts: true)
    assert_equal ["error"], page.tasks.map(&:state)
    refute_nil page.next_before
    assert_equal counts, page.counts
    # Without counts: true the page has none.
    assert_nil client.list_tasks(context: { "run" => run }, limit: 1).counts
    # Filters that match nothing count nothing.
    assert_equal 0, client.task_counts(name: "linear", context: { "run" => run }).total
    assert_equal 0, client.task_counts(context: { "run" => run }, created_after: Time.now + 3600).total
    error = assert_raises(Client::InvalidRequestError) { client.task_counts(context: ["run"]) }
    assert_equal [400, "invalid_context_filter"], [error.status, error.code]
  end

  def test_a_task_is_found_by_the_beginning_of_its_id_or_by_its_idempotency_key
    key = "lookup-#{SecureRandom.uuid}"
    task = create(SecureRandom.uuid, {}, idempotency_key: key, delay: "1h")
    assert_equal [task.id], client.list_tasks(id_prefix: task.id[0, 28]).tasks.map(&:id)
    assert_equal [task.id], client.list_tasks(idempotency_key: key).tasks.map(&:id)
    assert_empty client.list_tasks(idempotency_key: "#{key}-other").tasks
    error = assert_raises(Client::InvalidRequestError) { client.list_tasks(id_prefix: "nothex") }
    assert_equal [400, "invalid_id_prefix"], [error.status, error.code]
    client.cancel(task.id)
  end
end
