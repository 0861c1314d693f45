# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # A signal sent to a task (Client#signal): its `name`, `signal_id` (the sender's, or one the
    # server made) and `payload` (parsed JSON), the result of the wait step that takes it.
    # `consumed_by` names that step once one has (nil while the signal waits for a step to wait
    # for it); `received_at` and `consumed_at` are Times.
    Signal = Record.struct(
      :task_id, :name, :signal_id, :payload, :received_at, :consumed_by, :consumed_at,
      times: %i[received_at consumed_at]
    )
  end
end
