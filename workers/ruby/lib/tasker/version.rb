# frozen_string_literal: true

module Tasker
  VERSION = "0.1.0"
end
