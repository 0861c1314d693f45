# frozen_string_literal: true

require "securerandom"
require "tmpdir"
require "fileutils"
require "tasker/client"
require_relative "orchestrator"

module TestSupport
  # A Tasker cluster of its own: a fresh database on DATABASE_URL's PostgreSQL, a queue prefix of
  # its own on AMQP_URL's RabbitMQ, an orchestrator, and, given a registry, an in-process
  # Tasker::Worker running its handlers for the templates. More orchestrators may join
  # (#orchestrator). #stop removes it all.
  class Cluster
    # The worker's handler threads.
    CONCURRENCY = 4

    attr_reader :database_url, :prefix, :templates

    # An API token of the +token_scope:+ given to ::new (nil without).
    attr_reader :token

    # +templates+: a folder, or a Hash of file name => YAML (written to a temporary folder).
    # +registry+: handlers for an in-process worker (none if nil). +env+: configuration of every
    # orchestrator of the cluster (TASKER_ORCHESTRATOR__* variables). +token_scope+: create an
    # API token of this scope before the first orchestrator starts (one that requires tokens
    # refuses to start without one).
    def initialize(templates:, registry: nil, env: {}, token_scope: nil)
      @admin_url = ENV.fetch("DATABASE_URL") do
        raise "DATABASE_URL is not set: eval \"$(cargo-make/services.sh env)\" first, or run workers/ruby/test.sh"
      end
      @templates = templates.is_a?(Hash) ? write(templates) : templates
      @prefix = "rbtest_#{SecureRandom.hex(4)}"
      @database = "tasker_rbtest_#{SecureRandom.hex(6)}"
      psql("CREATE DATABASE #{@database}")
      @database_url = @admin_url.sub(%r{/[^/?]*(\?|\z)}) { "/#{@database}#{Regexp.last_match(1)}" }
      @env = { "DATABASE_URL" => @database_url, "TASKER_QUEUE_PREFIX" => @prefix }.merge(env)
      @orchestrators = []
      @token = create_token("ruby-tests", token_scope) if token_scope
      orchestrator
      @worker = start_worker(registry) if registry
    rescue StandardError
      stop
      raise
    end

    # The first orchestrator's base URL.
    def url
      @orchestrators.first.url
    end

    # Starts another orchestrator of the cluster (same database and queues), with +env+ over the
    # cluster's configuration; it stops with the cluster.
    def orchestrator(env = {})
      Orchestrator.new(@env.merge(env), templates: @templates).tap { |o| @orchestrators << o }
    end

    # A new API token named +name+ of +scope+ (read, write or admin).
    def create_token(name, scope)
      Orchestrator.run(@env, "token", "create", name, "--scope", scope).strip
    end

    # A client of the first orchestrator, with the cluster's token.
    def client(**options)
      Tasker::Client.new(url: url, token: @token, **options)
    end

    def stop
      @worker&.stop
      @orchestrators&.each(&:stop)
      psql("DROP DATABASE IF EXISTS #{@database} WITH (FORCE)") if @database
      FileUtils.rm_rf(@dir) if @dir
    end

    # Extended by a test class whose tests share one cluster, made by the class's
    # `self.start_cluster`: started by the first test that asks for it, stopped after the run. A
    # cluster that cannot start fails every test of the class at once, not after a wait each.
    module Shared
      def cluster
        raise @cluster_error if @cluster_error

        @cluster ||= start_cluster.tap { |c| Minitest.after_run { c.stop } }
      rescue StandardError => e
        @cluster_error = e
        raise
      end
    end

    # Extended by a test class that brings its own templates (its TEMPLATES) and handlers (its
    # `self.registry`): its shared cluster runs them, and each test's `client` speaks to it.
    module OwnHandlers
      include Shared

      def start_cluster
        TestSupport::Cluster.new(templates: self::TEMPLATES, registry: registry)
      end

      def self.extended(test_class)
        test_class.define_method(:client) { @client ||= self.class.cluster.client }
      end
    end

    private

    def write(templates)
      @dir = Dir.mktmpdir("tasker-ruby-templates")
      templates.each { |name, yaml| File.write(File.join(@dir, "#{name}.yaml"), yaml) }
      @dir
    end

    # The worker registers its templates with the orchestrator (it has them already); the core
    # reads its configuration while it starts, so the environment is restored after.
    def start_worker(registry)
      vars = { "TASKER_WORKER__ORCHESTRATOR_URL" => url, "TASKER_WORKER__REGISTER_TEMPLATES" => "true",
               "TASKER_QUEUE_PREFIX" => @prefix }
      TestSupport.with_env(vars) do
        Tasker::Worker.new(templates: @templates, registry: registry, concurrency: CONCURRENCY, health_port: 0).start
      end
    end

    def psql(sql)
      out = IO.popen(["psql", @admin_url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], err: %i[child out], &:read)
      raise "psql #{sql}: #{out}" unless $?.success?
    end
  end
end
