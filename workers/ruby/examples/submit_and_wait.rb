# frozen_string_literal: true

# Submits a `linear` task and waits for its result: an app that only submits work needs
# tasker/client alone (no worker, no native extension). The orchestrator is TASKER_URL
# (default http://127.0.0.1:8080); a Ruby worker runs the workflow:
#   workers/ruby/bin/tasker-worker-ruby --templates tests/fixtures/task_templates/ruby \
#     --handlers workers/ruby/fixtures/handlers.rb
require "json"
require "tasker/client"

client = Tasker::Client.new
begin
  task = client.create_task("ruby_examples", "linear", { "value" => 6 })
  task = client.wait(task.id, 60)
rescue Tasker::Client::ApiError => e
  abort "refused: #{e.status} #{e.code}: #{e.message}"
rescue Tasker::Client::ConnectionError => e
  abort e.message
end
puts "#{task.id} #{task.state} #{JSON.generate(task.result)}"
exit(task.state == "complete" ? 0 : 1)
