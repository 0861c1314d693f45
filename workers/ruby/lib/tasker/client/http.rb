# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "uri"
require_relative "errors"
require_relative "event_stream"
require_relative "../version"

module Tasker
  class Client
    # The transport of a Client: JSON over keep-alive connections to one orchestrator. Each call
    # takes an idle connection (or opens one) and puts it back when the answer is read, so one
    # client serves any number of threads, and a long poll holds only its own connection.
    class Http
      # Seconds to open a connection (TCP and TLS): an unreachable address fails in seconds,
      # not at the OS's connect timeout.
      OPEN_TIMEOUT = 5

      # Every way a request can fail before an answer is read.
      UNREACHABLE = [
        SystemCallError, SocketError, IOError, Timeout::Error, OpenSSL::SSL::SSLError,
        Net::HTTPBadResponse, Net::ProtocolError
      ].freeze

      # How a kept-alive connection that the server has closed meanwhile fails.
      STALE = [EOFError, Errno::ECONNRESET, Errno::EPIPE, Errno::ECONNABORTED].freeze

      attr_reader :url

      def initialize(url, token:, tls_ca_file:, timeout:)
        @url = url.to_s
        @uri = URI(@url)
        unless @uri.is_a?(URI::HTTP) && @uri.host
          raise Error, "the Tasker API URL must be http:// or https://, not #{@url.inspect}"
        end

        @prefix = @uri.path.chomp("/")
        @timeout = timeout
        @cert_store = cert_store(tls_ca_file) if tls_ca_file
        @headers = { "accept" => "application/json", "user-agent" => "tasker-ruby/#{Tasker::VERSION}" }
        @headers["authorization"] = "Bearer #{token}" if token
        @idle = []
        @lock = Mutex.new
      end

      # GET +path+ (with +query+, nils left out) → the answer's JSON. +timeout+: seconds to wait
      # for the answer, instead of the client's.
      def get(path, query = {}, timeout: nil)
        query = URI.encode_www_form(query.compact)
        path = "#{path}?#{query}" unless query.empty?
        call(Net::HTTP::Get.new(@prefix + path, @headers), timeout || @timeout)
      end

      # Every item under +key+ of a list the API answers a page at a time (schedules,
      # concurrency and rate keys), following each page's `next` as the following one's `after`.
      def every_page(path, query, key)
        items = []
        after = nil
        loop do
          page = get(path, query.merge(after: after))
          items.concat(page.fetch(key))
          after = page["next"]
          return items if after.nil?
        end
      end

      # POST +body+ as JSON (none when nil) → the answer's JSON.
      def post(path, body = nil)
        request = Net::HTTP::Post.new(@prefix + path, @headers.merge("content-type" => "application/json"))
        request.body = body.nil? ? "" : JSON.generate(body)
        call(request, @timeout)
      end

      # PUT +body+ as JSON → the answer's JSON.
      def put(path, body)
        request = Net::HTTP::Put.new(@prefix + path, @headers.merge("content-type" => "application/json"))
        request.body = JSON.generate(body)
        call(request, @timeout)
      end

      # PATCH +body+ as JSON → the answer's JSON.
      def patch(path, body)
        request = Net::HTTP::Patch.new(@prefix + path, @headers.merge("content-type" => "application/json"))
        request.body = JSON.generate(body)
        call(request, @timeout)
      end

      # DELETE +path+ → the answer's JSON (nil for none).
      def delete(path)
        call(Net::HTTP::Delete.new(@prefix + path, @headers), @timeout)
      end

      # GET +path+ (with +query+, nils left out, and +headers+ over the client's: `accept:
      # text/event-stream`, `last-event-id`) answered as Server-Sent Events, on a connection of
      # its own, closed at the end: yields the body as it arrives, a piece (binary String) at a
      # time, until the server ends it. A read that waits longer than the client's timeout for
      # any byte (the server sends keep-alives) breaks it off. Raises the ApiError of an error
      # answer, Error for an answer that is not an event stream, and ConnectionError when there is
      # no answer or the body breaks off; what the block raises is raised as it is.
      def events(path, query, headers)
        query = URI.encode_www_form(query.compact)
        path = "#{path}?#{query}" unless query.empty?
        request = Net::HTTP::Get.new(@prefix + path, @headers.merge(headers))
        inside = answered = false
        http = connect
        http.read_timeout = @timeout
        http.request(request) do |response|
          answered = true
          event_stream!(response)
          response.read_body do |piece|
            inside = true
            yield piece
            inside = false
          end
        end
        nil
      rescue *UNREACHABLE => e
        raise if inside

        what = answered ? "the Tasker API's event stream at #{@url} broke off" : "cannot reach the Tasker API at #{@url}"
        raise ConnectionError, "#{what}: #{e.message} (#{e.class})"
      ensure
        finish(http)
      end

      # Closes the idle connections (a call after this opens new ones).
      def close
        connections = @lock.synchronize { @idle.slice!(0..) }
        connections.each { |http| finish(http) }
        nil
      end

      private

      def call(request, read_timeout)
        decode(exchange(request, read_timeout))
      end

      def exchange(request, read_timeout)
        stale_retried = false
        begin
          http, reused = checkout
          http.read_timeout = read_timeout
          response = http.request(request)
          @lock.synchronize { @idle.push(http) }
          response
        rescue *UNREACHABLE => e
          finish(http)
          # The server closed an idle connection we kept: a GET is safe to send again, once, on
          # a new connection. (A POST is not: it may have arrived.)
          if reused && !stale_retried && request.is_a?(Net::HTTP::Get) && STALE.any? { |c| e.is_a?(c) }
            stale_retried = true
            retry
          end
          raise ConnectionError, "cannot reach the Tasker API at #{@url}: #{e.message} (#{e.class})"
        end
      end

      # An idle connection and true, else a new one and false.
      def checkout
        http = @lock.synchronize { @idle.pop }
        return [http, true] if http

        [connect, false]
      end

      # A new connection, started.
      def connect
        http = Net::HTTP.new(@uri.host, @uri.port)
        http.use_ssl = @uri.scheme == "https"
        http.cert_store = @cert_store if @cert_store
        http.open_timeout = OPEN_TIMEOUT
        http.write_timeout = @timeout
        # Retries are decided in #exchange: Net::HTTP would also resend a GET that timed out.
        http.max_retries = 0
        http.start
      end

      def finish(http)
        http&.finish if http&.started?
      rescue IOError
        nil
      end

      # The answer +response+ of #events is an event stream: else the ApiError of an error answer
      # (its body read), or Error.
      def event_stream!(response)
        status = response.code.to_i
        decode(response.tap(&:read_body)) unless (200..299).cover?(status)
        type = response["content-type"].to_s
        return if type.split(";").first.to_s.strip.casecmp?(EventStream::MEDIA_TYPE)

        raise Error, "#{@url} answered #{status} #{type.empty? ? "untyped" : type}, not #{EventStream::MEDIA_TYPE}"
      end

      def decode(response)
        status = response.code.to_i
        if (200..299).cover?(status)
          return nil if response.body.nil? || response.body.empty?

          begin
            return JSON.parse(response.body)
          rescue JSON::ParserError
            raise Error, "#{@url} answered #{status} with a body that is not JSON: is it a Tasker orchestrator?"
          end
        end
        error = begin
          JSON.parse(response.body.to_s)["error"]
        rescue JSON::ParserError, NoMethodError, TypeError
          nil
        end
        error = {} unless error.is_a?(Hash)
        raise ApiError.for(status).new(
          status: status,
          code: error["code"] || "unknown",
          message: error["message"] || "HTTP #{status} #{response.message}".strip,
          details: error["details"]
        )
      end

      # The system's CA certificates and those of +file+ (PEM).
      def cert_store(file)
        certs = OpenSSL::X509::Certificate.load_file(file.to_s)
        store = OpenSSL::X509::Store.new
        store.set_default_paths
        certs.each { |cert| store.add_cert(cert) }
        store
      rescue SystemCallError, OpenSSL::OpenSSLError => e
        raise Error, "TLS: cannot use the CA file #{file}: #{e.message}"
      end
    end
  end
end
