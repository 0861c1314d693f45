# frozen_string_literal: true

require "io/wait"
require_relative "client_support"

# The step stream calls (Client#read_stream, #stream) against stand-ins: a page read from the
# API's JSON (client_support.rb), and Server-Sent Events from a TCPServer whose connections drop
# mid-way, close before the end or answer errors: the resume with `last-event-id`, no gap and no
# duplicate, and `children=true` (a child task's chunks merged in) asked for on every connection
# when wanted, never by default. streams_live_test.rb reads the streams of a real orchestrator.
class ClientStreamsWireTest < Minitest::Test
  Client = Tasker::Client

  TASK_ID = "019a0000-0000-7000-8000-0000000000f1"
  STEP_ID = "019a0000-0000-7000-8000-0000000000f2"
  # A child task of TASK_ID's (a `child:` step's), and its step.
  CHILD_ID = "019a0000-0000-7000-8000-0000000000f3"
  CHILD_STEP_ID = "019a0000-0000-7000-8000-0000000000f4"
  ROUTE = "/v1/tasks/#{TASK_ID}/stream".freeze
  END_EVENT = "event: end\ndata: {\"next\": 6}\n\n"

  # A chunk as the API writes it: text t<offset> unless given, of TASK_ID's step, in its attempt 1.
  def self.chunk(offset, **fields)
    { "offset" => offset, "task_id" => TASK_ID, "step_id" => STEP_ID, "step" => "generate", "attempt" => 1, "seq" => offset,
      "topic" => "tokens", "text" => "t#{offset}", "end" => false, "retry" => false,
      "at" => "2026-11-30T22:00:00.123456Z" }.merge(fields.transform_keys(&:to_s))
  end

  def chunk(offset, **fields)
    self.class.chunk(offset, **fields)
  end

  # A chunk of CHILD_ID's step, merged into TASK_ID's stream at +offset+.
  def self.child_chunk(offset)
    chunk(offset, task_id: CHILD_ID, step_id: CHILD_STEP_ID, step: "summarize", seq: 0)
  end

  def test_read_stream_sends_the_contracts_request_and_reads_a_page
    json_chunk = chunk(3, data: { "pct" => 40 }).tap { |c| c.delete("text") }
    end_chunk = chunk(4, end: true).tap { |c| c.delete("text") }
    api = ClientWire::StandIn.new(
      "GET #{ROUTE}" => [
        [200, { "task_id" => TASK_ID, "chunks" => [chunk(2), json_chunk], "next" => 4, "complete" => false }],
        [200, { "task_id" => TASK_ID, "chunks" => [end_chunk], "next" => 5, "complete" => true }],
        # Read with children=true: chunk 1 is a child task's.
        [200, { "task_id" => TASK_ID, "chunks" => [chunk(0), self.class.child_chunk(1)], "next" => 2,
                "complete" => false }]
      ],
      "GET /v1/tasks/#{STEP_ID}/stream" => [404, { "error" => { "code" => "task_not_found", "message" => "none" } }]
    )
    client = Client.new(url: api.url)

    page = client.read_stream(TASK_ID, from: 2, topic: "tokens", limit: 2)
    assert_kind_of Client::StreamPage, page
    assert_equal [TASK_ID, 4, false], [page.task_id, page.next, page.complete?]
    first, second = page.chunks
    assert_kind_of Client::StreamChunk, first
    assert_equal [2, TASK_ID, STEP_ID, "generate", 1, 2, "tokens", "t2", nil], first.to_h.values_at(
      :offset, :task_id, :step_id, :step, :attempt, :seq, :topic, :text, :data
    )
    refute_predicate first, :end?
    refute_predicate first, :retry?
    assert_equal Time.utc(2026, 11, 30, 22, 0, Rational(123_456, 1_000_000)), first.at
    assert_equal [nil, { "pct" => 40 }], [second.text, second.data]
    last = client.read_stream(TASK_ID)
    assert_predicate last, :complete?
    assert_predicate last.chunks.first, :end?
    error = assert_raises(Client::NotFoundError) { client.read_stream(STEP_ID) }
    assert_equal "task_not_found", error.code
    # With the children's chunks: each says whose task's step emitted it.
    family = client.read_stream(TASK_ID, topic: "tokens", children: true)
    assert_equal [[0, TASK_ID, STEP_ID, "generate"], [1, CHILD_ID, CHILD_STEP_ID, "summarize"]],
                 family.chunks.map { |c| [c.offset, c.task_id, c.step_id, c.step] }

    assert_equal [
      ["GET", "#{ROUTE}?from=2&topic=tokens&limit=2", nil],
      ["GET", "#{ROUTE}?from=0", nil],
      ["GET", "/v1/tasks/#{STEP_ID}/stream?from=0", nil],
      ["GET", "#{ROUTE}?from=0&topic=tokens&children=true", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end

  # --- Server-Sent Events ------------------------------------------------------------------------

  def self.event(chunk, newline = "\n")
    "event: chunk\nid: #{chunk["offset"]}\ndata: #{JSON.generate(chunk)}\n\n".gsub("\n", newline)
  end

  def self.head(chunked:, status: "200 OK", type: "text/event-stream")
    framing = chunked ? "transfer-encoding: chunked" : "connection: close"
    "HTTP/1.1 #{status}\r\ncontent-type: #{type}\r\n#{framing}\r\n\r\n"
  end

  # +data+ as one piece of a chunked body.
  def self.piece(data)
    "#{data.bytesize.to_s(16)}\r\n#{data}\r\n"
  end

  def self.json(status, body)
    data = JSON.generate(body)
    ->(s) { s.write("HTTP/1.1 #{status}\r\ncontent-type: application/json\r\ncontent-length: #{data.bytesize}\r\n\r\n#{data}") }
  end

  # Chunks 0, 1 (split across pieces; a child task's if +one_of_a_child+) and 2 after a
  # keep-alive, then half of chunk 3 and a piece cut short: the connection drops mid-body.
  DROPS_AFTER_THREE = lambda do |s, one_of_a_child = false|
    one = event(one_of_a_child ? child_chunk(1) : chunk(1))
    s.write(head(chunked: true) + piece(": keep-alive\n\n") + piece(event(chunk(0))))
    s.write(piece(one[0, 17]))
    s.write(piece(one[17..] + event(chunk(2))))
    s.write("c8\r\nevent: chunk\nid: 3\n")
  end

  # Chunk 2 again (skipped), 3 (the step's retry) and 4, with CR LF line ends; then the server
  # closes without an `end` event.
  CLOSES_BEFORE_THE_END = lambda do |s|
    retried = chunk(3, text: "r0", attempt: 2, seq: 0, retry: true)
    s.write(head(chunked: false) + event(chunk(2), "\r\n") + event(retried, "\r\n"))
    s.write(event(chunk(4, text: "r1", attempt: 2, seq: 1), "\r\n"))
  end

  # The attempt's end chunk and the `end` event, then the connection is held open until the client
  # closes it: the stream must end at the event, not at the close.
  ENDS = lambda do |s|
    s.write(head(chunked: true) + piece(event(chunk(5, end: true, attempt: 2, seq: 2).tap { |c| c.delete("text") })))
    s.write(piece(END_EVENT))
    s.wait_readable(10)
  end

  # A stand-in for the stream route (ClientWire::StandIn's server, given acts instead of
  # answers): each connection (its target and headers kept in #requests) is answered by the next
  # act, the last one again once the others are used.
  class SseStandIn < ClientWire::StandIn
    def last_event_ids
      @requests.map { |_, headers| headers["last-event-id"] }
    end

    private

    def serve(socket)
      Thread.new do
        target = socket.gets.split[1]
        headers = {}
        while (line = socket.gets) && line != "\r\n"
          key, value = line.split(":", 2)
          headers[key.downcase] = value.strip
        end
        @requests << [target, headers]
        (@answers.size > 1 ? @answers.shift : @answers.first).call(socket)
      rescue IOError, SystemCallError
        nil
      ensure
        socket.close
      end
    end
  end

  def test_a_stream_resumes_after_a_drop_and_a_close_with_no_gap_and_no_duplicate
    check_resumed(children: false)
  end

  def test_a_stream_with_its_children_asks_for_them_again_on_each_reconnection
    check_resumed(children: true)
  end

  def test_a_stream_from_an_offset_asks_for_it_and_rides_through_a_gateways_error
    unavailable = self.class.json("503 Service Unavailable",
                                  { "error" => { "code" => "storage_unavailable", "message" => "restarting" } })
    api = SseStandIn.new([unavailable, ENDS])
    client = Client.new(url: api.url)
    assert_equal [5], client.stream(TASK_ID, from: 5).map(&:offset)
    assert_equal [["#{ROUTE}?from=5", nil]] * 2, api.requests.map { |target, headers| [target, headers["last-event-id"]] }
  ensure
    client&.close
    api&.stop
  end

  def test_an_answer_of_the_api_raises_at_once_and_leaving_early_closes
    purged = self.class.json("410 Gone", { "error" => { "code" => "task_purged", "message" => "purged" } })
    too_many = self.class.json("429 Too Many Requests",
                               { "error" => { "code" => "too_many_streams", "message" => "as many as it may" } })
    page = self.class.json("200 OK", { "task_id" => TASK_ID, "chunks" => [], "next" => 0, "complete" => true })
    closed = Queue.new
    held = lambda do |s|
      DROPS_AFTER_THREE.call(s)
      closed << (s.wait_readable(10) && s.read_nonblock(1, exception: false).nil?)
    rescue SystemCallError, IOError
      closed << true # the client closed it while it was written
    end
    api = SseStandIn.new([purged, too_many, page, held])
    client = Client.new(url: api.url)

    assert_raises(Client::TaskPurgedError) { client.stream(TASK_ID) { flunk "no chunk" } }
    error = assert_raises(Client::ApiError) { client.stream(TASK_ID).to_a }
    assert_equal [429, "too_many_streams"], [error.status, error.code]
    # A server that answers the JSON page to an event stream's request is not followed.
    error = assert_raises(Client::Error) { client.stream(TASK_ID).to_a }
    assert_match(/not text\/event-stream/, error.message)
    assert_equal [0, 1], client.stream(TASK_ID).first(2).map(&:offset)
    assert_equal true, closed.pop, "the connection was left open"
    # What the block raises is raised as it is, never taken for the connection's failure.
    assert_raises(IOError) { client.stream(TASK_ID) { raise IOError, "the caller's own" } }
    assert_equal 5, api.requests.size
  ensure
    client&.close
    api&.stop
  end

  private

  # A stream's connections drop after chunk 2, close after 4 and end after 5 (with +children+,
  # chunk 1 is a child task's): no gap, no duplicate, and every connection asks for the same.
  def check_resumed(children:)
    first = ->(s) { DROPS_AFTER_THREE.call(s, children) }
    api = SseStandIn.new([first, CLOSES_BEFORE_THE_END, ENDS])
    client = Client.new(url: api.url, token: "s3cret")
    started = monotonic
    chunks = []
    # With children, read through the Enumerator: it must carry them too.
    returned = if children
                 client.stream(TASK_ID, topic: "tokens", children: true).each { |c| chunks << c }
               else
                 client.stream(TASK_ID, topic: "tokens") { |c| chunks << c }
               end
    assert_same client, returned
    assert_operator monotonic - started, :<, 5, "the stream did not end at the end event"

    assert_equal [0, 1, 2, 3, 4, 5], chunks.map(&:offset)
    assert_equal ["t0", "t1", "t2", "r0", "r1", nil], chunks.map(&:text)
    assert_equal [false, false, false, true, false, false], chunks.map(&:retry?)
    assert_equal [[2, 0, false], [2, 1, false], [2, 2, true]], chunks[3..].map { |c| [c.attempt, c.seq, c.end?] }
    assert_kind_of Time, chunks.first.at
    assert_equal [TASK_ID, children ? CHILD_ID : TASK_ID] + [TASK_ID] * 4, chunks.map(&:task_id)
    # Each connection after the first resumes after the last offset received, and asks for the
    # children's chunks again if it did (only then).
    assert_equal [nil, "2", "4"], api.last_event_ids
    api.requests.each do |target, headers|
      assert_equal "#{ROUTE}?from=0&topic=tokens#{"&children=true" if children}", target
      assert_equal "text/event-stream", headers["accept"]
      assert_equal "Bearer s3cret", headers["authorization"]
    end
  ensure
    client&.close
    api&.stop
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end
