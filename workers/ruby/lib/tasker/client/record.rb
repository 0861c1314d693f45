# frozen_string_literal: true

require "time"

module Tasker
  class Client
    # The value types' shape: a keyword_init Struct of the JSON object's fields, built by
    # `.from_json(hash)`. Fields a newer server adds are ignored, fields it leaves out are nil
    # (or their value in +defaults+); the +times+ fields (ISO 8601 strings in the JSON, or arrays
    # of them) become Time objects, and the +records+ fields (JSON objects, or arrays of them)
    # the record type given for each.
    module Record
      def self.struct(*fields, times: [], records: {}, defaults: {}, &body)
        Struct.new(*fields, keyword_init: true) do
          const_set(:TIMES, times.freeze)
          const_set(:RECORDS, records.freeze)
          const_set(:DEFAULTS, defaults.freeze)

          # The value of one JSON object of the API.
          def self.from_json(object)
            new(**members.to_h do |m|
              value = Record.field(object[m.to_s], self::TIMES.include?(m), self::RECORDS[m])
              [m, value.nil? ? self::DEFAULTS[m] : value]
            end)
          end

          class_eval(&body) if body
        end
      end

      def self.field(value, time, record = nil)
        return value if value.nil?
        return value.is_a?(Array) ? value.map { |v| record.from_json(v) } : record.from_json(value) if record
        return value unless time

        value.is_a?(Array) ? value.map { |t| Time.iso8601(t) } : Time.iso8601(value)
      end
    end
  end
end
