# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # A child task of a task (Task#children): the task `task_id` that its child step
    # `step_name` (`step_id`) started at its `attempt`, of the template `namespace`/`name`/
    # `version`, and that task's `state`.
    TaskChild = Record.struct(:task_id, :step_id, :step_name, :attempt, :state, :namespace, :name, :version)

    # A task's deadline (Task#deadline): it may run `within_ms` from its start; `action` ("fail",
    # "cancel" or "alert") is what it gets when it runs longer. `at` (a Time) is when it comes,
    # once the task started; `passed_at` when it passed.
    TaskDeadline = Record.struct(:within_ms, :action, :at, :passed_at, times: %i[at passed_at])

    # A task's priorities (Task#priority, Client#create_task's +priority:+).
    PRIORITIES = %w[high normal low].freeze

    # A task as the API shows it. `context`, `result` and `error` are parsed JSON (string keys);
    # `result` is the results of the steps no other step depends on, by step name, once the task
    # is complete. `created_at`, `completed_at` and `run_at` (the start of a task created with
    # +run_at:+ or +delay:+, nil for one that started at once) are Times; `duration_ms` is a
    # Float. `state` is "scheduled" (until `run_at`), "running", "complete", "error" or
    # "cancelled".
    #
    # A child task (started by a child-workflow step of another task) has `parent_task_id` and
    # `parent_step_id`; `depth` is 0 for a task nobody started and its parent's plus one for a
    # child. `children` lists the child tasks its child steps started, as TaskChild records
    # (only from Client#get_task; nil in a listed task).
    #
    # `priority` is "high", "normal" or "low" (PRIORITIES): the one it was created with, else its
    # template's, else "normal" (also from a server before priorities). `deadline` is its
    # TaskDeadline, nil without one.
    Task = Record.struct(
      :id, :namespace, :name, :version, :state, :context, :idempotency_key, :open_steps,
      :result, :error, :created_at, :completed_at, :duration_ms, :run_at,
      :parent_task_id, :parent_step_id, :depth, :children, :priority, :deadline,
      times: %i[created_at completed_at run_at],
      records: { children: TaskChild, deadline: TaskDeadline },
      defaults: { depth: 0, priority: "normal" }
    ) do
      # Whether the task has finished (complete, error or cancelled); only a repair changes it
      # then.
      def terminal?
        !%w[scheduled running].include?(state)
      end
    end

    # How many tasks of each state a filter matches (Client#task_counts, TaskPage#counts):
    # `scheduled`, `running`, `complete`, `error`, `cancelled`, and their `total`.
    TaskCounts = Record.struct(:scheduled, :running, :complete, :error, :cancelled, :total)

    # One page of Client#list_tasks, newest first. `next_before` is the `before:` of the next
    # page, nil on the last one. `counts` (with +counts: true+) is the TaskCounts of the filter,
    # its +state+, +before+ and +limit+ left out; nil without it.
    TaskPage = Struct.new(:tasks, :next_before, :counts, keyword_init: true) do
      def self.from_json(object)
        counts = object["counts"]
        new(tasks: object.fetch("tasks").map { |t| Task.from_json(t) }, next_before: object["next_before"],
            counts: counts && TaskCounts.from_json(counts))
      end
    end
  end
end
