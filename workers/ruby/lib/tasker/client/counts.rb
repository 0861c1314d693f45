# frozen_string_literal: true

require_relative "task"

module Tasker
  class Client
    # Counts by state for a task filter (`GET /v1/tasks?counts=true`), Client's call. Semantics
    # follow the Rust client (tasker-client's `task_counts`).
    module Counts
      # How many tasks of each state the filters of #list_tasks match, as TaskCounts: a
      # +namespace+, template +name+, +parent+ (the child tasks of that task id),
      # +created_after+, +created_before+ and +context+. The errors of #list_tasks.
      def task_counts(namespace: nil, name: nil, parent: nil, created_after: nil, created_before: nil, context: nil)
        # A page of one task: the counts do not depend on the page.
        page = list_tasks(namespace: namespace, name: name, parent: parent, created_after: created_after,
                          created_before: created_before, context: context, limit: 1, counts: true)
        page.counts or raise Error, "GET /v1/tasks?counts=true: the answer has no counts"
      end
    end
  end
end
