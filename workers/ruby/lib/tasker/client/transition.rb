# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # One entry of a task's history: a transition of the task (`step` nil) or of one of its
    # steps (`step` its name), `from` one state `to` another (`from` nil for the first), at
    # `at` (a Time). `by` names who asked for a repair and `reason` says why; both are nil for
    # the engine's own transitions (a step's `reason` may then be its error kind).
    Transition = Record.struct(:step, :from, :to, :attempt, :reason, :by, :at, times: %i[at])
  end
end
