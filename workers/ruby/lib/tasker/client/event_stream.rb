# frozen_string_literal: true

require "json"
require_relative "errors"

module Tasker
  class Client
    # A task's stream read as Server-Sent Events (`GET /v1/tasks/{id}/stream` with `accept:
    # text/event-stream`): the text of an answer into events (Parser), and where a stream stands
    # across its connections (Cursor). Client#stream (Client::Streams) opens the connections and
    # hands the text over.
    #
    # The events: `chunk` (its `id` the chunk's offset, its data the chunk as JSON), `end` (data
    # `{"next": N}`: the stream is complete and the server closes) and comments (keep-alives). A
    # connection that drops, or that the server closes before `end`, is opened again with
    # `last-event-id` set to the last offset received: the server resumes after it, and a chunk
    # at or below it is skipped, so the caller sees each chunk once and in order.
    module EventStream
      # The media type of an event stream.
      MEDIA_TYPE = "text/event-stream"

      # One event: its type ("message" when it names none), its `id` (nil when it has none) and
      # its data lines joined with "\n".
      Event = Struct.new(:event, :id, :data, keyword_init: true)

      # An event stream's bytes, in pieces as they arrive, into Events, as the HTML standard reads
      # them: lines ending in CR LF, LF or CR (UTF-8); `field: value` lines, one leading space of
      # the value dropped; `data` lines joined; comment lines (`:`) and unknown fields ignored; an
      # event dispatched at a blank line (none when it has no data).
      class Parser
        def initialize
          reset
        end

        # Reads a piece of the body; returns the Events it completes.
        def push(piece)
          @buffer << piece.b
          events = []
          while (i = @buffer.index(/[\r\n]/n))
            # A CR last in the piece may be the first half of a CR LF: wait for the next piece.
            break if @buffer.getbyte(i) == 13 && i + 1 == @buffer.bytesize

            line = @buffer.byteslice(0, i).force_encoding(Encoding::UTF_8)
            @buffer = @buffer.byteslice((@buffer.byteslice(i, 2) == "\r\n" ? i + 2 : i + 1)..)
            event = read_line(line)
            events << event if event
          end
          events
        end

        # Forgets a half-read event (a new connection starts afresh).
        def reset
          @buffer = "".b
          @event = nil
          @id = nil
          @data = []
        end

        private

        def read_line(line)
          return dispatch if line.empty?
          return if line.start_with?(":")

          name, value = line.split(":", 2)
          value = value.to_s.delete_prefix(" ")
          case name
          when "event" then @event = value
          when "data" then @data << value
          when "id" then @id = value unless value.include?("\0")
          end
          nil
        end

        def dispatch
          event = Event.new(event: @event.to_s.empty? ? "message" : @event, id: @id, data: @data.join("\n"))
          had_data = !@data.empty?
          @event = nil
          @id = nil
          @data = []
          event if had_data
        end
      end

      # Where one Client#stream stands across its connections: the headers of the next connection
      # (`last-event-id` once a chunk came), the offset of the last chunk yielded (#last, nil
      # before the first) and whether the `end` event came (#ended?). +read+ reads a chunk's JSON
      # (StreamChunk.from_json).
      class Cursor
        attr_reader :last

        def initialize(route, read)
          @route = route
          @read = read
          @parser = Parser.new
          @last = nil
          @ended = false
        end

        def ended?
          @ended
        end

        # The request headers of the next connection; it starts the text afresh.
        def headers
          @parser.reset
          headers = { "accept" => MEDIA_TYPE }
          headers["last-event-id"] = @last.to_s if @last
          headers
        end

        # Reads a piece of the body; yields each new chunk it completes. Ends at the `end` event.
        def push(piece)
          @parser.push(piece).each do |event|
            break if @ended

            case event.event
            when "end" then @ended = true
            when "chunk"
              chunk = read(event.data)
              # Sent again after a reconnection: yielded already.
              next if @last && chunk.offset <= @last

              @last = chunk.offset
              yield chunk
            end
          end
        end

        private

        def read(data)
          chunk = @read.call(JSON.parse(data))
          raise TypeError, "no offset" unless chunk.offset.is_a?(Integer)

          chunk
        rescue JSON::ParserError, KeyError, TypeError, ArgumentError, NoMethodError => e
          raise Error, "GET #{@route}: a chunk that is not the API's (#{e.message}): #{data[0, 200]}"
        end
      end
    end
  end
end
