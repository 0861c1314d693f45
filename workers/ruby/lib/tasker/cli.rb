# frozen_string_literal: true

require "optparse"
require "tasker"

module Tasker
  # `tasker-worker-ruby`: loads handler files, starts a Tasker::Worker, prints the ready line,
  # and runs until SIGTERM or SIGINT, then stops gracefully (the same flags and shutdown as every
  # language's worker: docs/handlers.md).
  class CLI
    Options = Struct.new(:templates, :handlers, :concurrency, :health_port, :config, :orchestrator_url,
                         :shutdown_timeout, keyword_init: true)

    def self.parse(argv)
      options = Options.new(handlers: [])
      parser = OptionParser.new do |o|
        o.banner = "Usage: tasker-worker-ruby --templates DIR [--handlers FILE_OR_LIBRARY]... [options]"
        o.on("--templates DIR", "Folder of task templates; the worker consumes their namespaces") { |v| options.templates = v }
        o.on("--handlers FILE", "Ruby file (or library on the load path) registering handlers; repeatable") { |v| options.handlers << v }
        o.on("--concurrency N", Integer, "Handler threads (steps run at once)") { |v| options.concurrency = v }
        o.on("--health-port N", Integer, "Port of /health (0 picks a free port; address: worker.health_bind, 127.0.0.1 by default)") { |v| options.health_port = v }
        o.on("--config FILE", "TOML configuration file (see config/tasker.reference.toml)") { |v| options.config = v }
        o.on("--orchestrator-url URL", "Orchestrator API the templates are registered with " \
                                             "(default http://127.0.0.1:8080, or TASKER_WORKER__ORCHESTRATOR_URL)") { |v| options.orchestrator_url = v }
        o.on("--shutdown-timeout SECONDS", Float,
             "How long handlers running at SIGTERM may take to finish and report (30 by default)") do |v|
          options.shutdown_timeout = v
        end
        o.on("-h", "--help", "Show this help") do
          puts o
          exit 0
        end
      end
      rest = parser.parse(argv)
      raise OptionParser::InvalidArgument, "unexpected arguments: #{rest.join(" ")}" unless rest.empty?
      raise OptionParser::MissingArgument, "--templates DIR is required" unless options.templates
      raise OptionParser::InvalidArgument, "--templates #{options.templates}: no such directory" unless File.directory?(options.templates)
      raise OptionParser::InvalidArgument, "--concurrency must be at least 1" if options.concurrency&.< 1
      if options.shutdown_timeout && !(0..86_400).cover?(options.shutdown_timeout)
        raise OptionParser::InvalidArgument, "--shutdown-timeout must be 0 to 86400 seconds"
      end
      if options.health_port && !(0..65_535).cover?(options.health_port)
        raise OptionParser::InvalidArgument, "--health-port must be 0..65535"
      end

      options
    end

    def self.load_handlers(paths)
      paths.each do |path|
        if File.exist?(path)
          require File.expand_path(path)
        else
          require path
        end
      end
    end

    def self.main(argv)
      options = parse(argv)
      load_handlers(options.handlers)
      worker = Worker.new(templates: options.templates, concurrency: options.concurrency,
                          health_port: options.health_port, config: options.config,
                          orchestrator_url: options.orchestrator_url,
                          shutdown_timeout: options.shutdown_timeout)
      worker.start
      # Mutexes are off limits in a trap handler: stop from a thread of its own.
      %w[TERM INT].each { |sig| trap(sig) { Thread.new { worker.stop } } }
      $stdout.puts "tasker worker ready: language=ruby health=#{worker.health_addr} " \
                   "namespaces=#{worker.namespaces.join(",")}"
      $stdout.flush
      worker.run
      # The last line of a graceful stop, as every language's worker ends.
      Tasker.logger.info("stopped")
      0
    rescue OptionParser::ParseError => e
      warn "tasker-worker-ruby: #{e.message} (see --help)"
      2
    rescue WorkerError, LoadError => e
      warn "tasker-worker-ruby: #{e.message}"
      1
    end
  end
end
