# frozen_string_literal: true

require_relative "schedule"
require_relative "task"

module Tasker
  class Client
    # Schedules (`/v1/schedules`, docs/time.md "Schedules"), Client's calls: tasks of a template
    # created at the times of a cron, listed, shown, created or updated, paused and resumed,
    # triggered now and backfilled. Semantics follow the Rust client (tasker-client/src/time.rs).
    module Schedules
      # Every Schedule (every page), or those of +namespace+.
      def list_schedules(namespace: nil)
        @http.every_page("/v1/schedules", { namespace: namespace }, "schedules").map { |s| Schedule.from_json(s) }
      end

      # The Schedule +namespace+/+name+, with its `upcoming` fire times. NotFoundError
      # `schedule_not_found` if there is none.
      def get_schedule(namespace, name)
        Schedule.from_json(@http.get(schedule_path(namespace, name)))
      end

      # Creates the schedule +definition+ describes, or updates the one of its namespace and name
      # (a paused one stays paused), and returns it. +definition+ has the fields of a schedule's
      # YAML file: "namespace", "name", "template", "cron" and optionally "version", "timezone",
      # "context", "overlap", "catch_up" (string or symbol keys). InvalidRequestError
      # `invalid_schedule`, `invalid_cron`, `invalid_timezone`, ... for a definition the API
      # refuses; NotFoundError `unknown_template`.
      def apply_schedule(definition)
        Schedule.from_json(@http.post("/v1/schedules", definition))
      end

      # Changes some fields of a schedule's definition (`{ "cron" => "0 3 * * *" }`); returns
      # the Schedule.
      def update_schedule(namespace, name, changes)
        Schedule.from_json(@http.patch(schedule_path(namespace, name), changes))
      end

      # Deletes a schedule; the tasks it created are left as they are. Returns nil.
      def delete_schedule(namespace, name)
        @http.delete(schedule_path(namespace, name))
        nil
      end

      # Pauses a schedule (it fires no more until #resume_schedule), with a +note+ saying why.
      def pause_schedule(namespace, name, note: nil)
        Schedule.from_json(@http.post("#{schedule_path(namespace, name)}/pause", { note: note }.compact))
      end

      # Resumes a paused schedule: its next fire is computed from now (the fires of the paused
      # time are not caught up).
      def resume_schedule(namespace, name)
        Schedule.from_json(@http.post("#{schedule_path(namespace, name)}/resume"))
      end

      # Creates a task of the schedule now, whatever its overlap policy; returns the Task.
      def trigger_schedule(namespace, name)
        Task.from_json(@http.post("#{schedule_path(namespace, name)}/trigger"))
      end

      # Creates the tasks of the schedule's fire times from +from+ to +to+ (Times or RFC 3339
      # Strings) that have none yet, and returns a Backfill: repeating it creates nothing new.
      # InvalidRequestError `backfill_too_large` for more than 1,000 fire times.
      def backfill_schedule(namespace, name, from, to)
        body = { from: timestamp(from), to: timestamp(to) }
        Backfill.from_json(@http.post("#{schedule_path(namespace, name)}/backfill", body))
      end

      private

      def schedule_path(namespace, name)
        path("v1", "schedules", namespace, name)
      end
    end
  end
end
