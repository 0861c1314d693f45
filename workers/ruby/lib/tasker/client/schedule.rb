# frozen_string_literal: true

require_relative "record"

module Tasker
  class Client
    # A schedule: tasks of `template` (`version`, nil for the newest when it fires) with
    # `context`, created at the times of `cron` in `timezone`. `overlap` ("skip", "allow",
    # "buffer_one" or "cancel_previous") says what a fire does while the previous task still
    # runs; fires missed longer ago than `catch_up` (a duration such as "1h") are skipped and
    # counted in `skipped`. `note` is the note of its pause. `next_fire_at`, `last_fire_at`,
    # `created_at` and `updated_at` are Times, and so is each of `upcoming`, the next fire times
    # (nil except from Client#get_schedule).
    Schedule = Record.struct(
      :namespace, :name, :template, :version, :cron, :timezone, :context, :overlap, :catch_up,
      :paused, :note, :next_fire_at, :last_fire_at, :last_task_id, :fires, :skipped,
      :created_at, :updated_at, :upcoming,
      times: %i[next_fire_at last_fire_at created_at updated_at upcoming]
    ) do
      # Whether it is paused (fires no more until Client#resume_schedule).
      def paused?
        paused == true
      end
    end

    # What Client#backfill_schedule did: tasks `created` for fire times that had none,
    # `existing` ones that had (a backfill is safe to repeat), and the ids of both, `task_ids`.
    Backfill = Record.struct(:created, :existing, :task_ids)
  end
end
