# frozen_string_literal: true

require_relative "client_support"

# The client over https:// to an orchestrator that requires API tokens (no worker: the tasks
# stay running).
class ClientTlsTest < Minitest::Test
  include TestSupport
  extend TestSupport::Cluster::Shared

  Client = Tasker::Client

  def self.start_cluster
    @tls_dir = Dir.mktmpdir("tasker-ruby-tls")
    Minitest.after_run { FileUtils.rm_rf(@tls_dir) }
    @tls = TestSupport::Tls.write(@tls_dir)
    TestSupport::Cluster.new(
      templates: FIXTURE_TEMPLATES, token_scope: "write",
      env: { "TASKER_ORCHESTRATOR__AUTH" => "tokens", "TASKER_ORCHESTRATOR__TLS_CERT_FILE" => @tls[:cert],
             "TASKER_ORCHESTRATOR__TLS_KEY_FILE" => @tls[:key] }
    )
  end

  class << self
    attr_reader :tls
  end

  def cluster
    self.class.cluster
  end

  # The CA that signed the orchestrator's certificate (written when the cluster started).
  def ca_file
    cluster
    self.class.tls[:ca]
  end

  def test_https_with_the_ca_file_and_a_token
    client = cluster.client(tls_ca_file: ca_file)
    assert_match %r{\Ahttps://}, client.url
    task = client.create_task("ruby_examples", "linear", { "value" => 6 })
    assert_equal task.id, client.get_task(task.id).id
    assert_equal "cancelled", client.cancel(task.id).state
    assert_raises(Client::NotFoundError) { client.get_task(SecureRandom.uuid) }
  end

  def test_the_url_token_and_ca_file_are_read_from_the_environment
    with_env("TASKER_URL" => cluster.url, "TASKER_TOKEN" => cluster.token, "TASKER_TLS_CA_FILE" => ca_file) do
      assert_equal [], Tasker::Client.new.list_tasks(state: "error").tasks
    end
  end

  def test_a_missing_token_or_scope_is_an_auth_error
    error = assert_raises(Client::AuthError) { Client.new(url: cluster.url, tls_ca_file: ca_file).list_tasks }
    assert_equal ["unauthenticated", 401], [error.code, error.status]

    reader = Client.new(url: cluster.url, token: cluster.create_token("reader", "read"), tls_ca_file: ca_file)
    assert_kind_of Client::TaskPage, reader.list_tasks
    error = assert_raises(Client::AuthError) { reader.create_task("ruby_examples", "linear", { "value" => 1 }) }
    assert_equal ["forbidden", 403], [error.code, error.status]
    assert_equal "read", error.details["scope"]
  end

  def test_without_the_ca_the_certificate_is_refused
    client = Client.new(url: cluster.url, token: cluster.token)
    error = assert_raises(Client::ConnectionError) { client.list_tasks }
    assert_kind_of OpenSSL::SSL::SSLError, error.cause
    assert_match(/certificate verify failed/, error.message)
  end
end
