# frozen_string_literal: true

require "time"

module Tasker
  class Client
    # The value types' shape: a keyword_init Struct of the JSON object's fields, built by
    # `.from_json(hash)`. Fields a newer server adds are ignored, fields it leaves out are nil;
    # the +times+ fields (ISO 8601 strings in the JSON) become Time objects.
    module Record
      def self.struct(*fields, times: [], &body)
        Struct.new(*fields, keyword_init: true) do
          const_set(:TIMES, times.freeze)

          # The value of one JSON object of the API.
          def self.from_json(object)
            new(**members.to_h { |m| [m, Record.field(object[m.to_s], self::TIMES.include?(m))] })
          end

          class_eval(&body) if body
        end
      end

      def self.field(value, time)
        time && value ? Time.iso8601(value) : value
      end
    end
  end
end
