# frozen_string_literal: true

require "test_helper"

# The README's handler example runs as written.
class ReadmeTest < Minitest::Test
  include TestSupport

  README = File.expand_path("../README.md", __dir__)

  def self.load_example
    @load_example ||= begin
      code = File.read(README)[/^```ruby\n(.*?)^```/m, 1] or raise "no ruby example in #{README}"
      eval(code, TOPLEVEL_BINDING, README) # rubocop:disable Security/Eval
      true
    end
  end

  def setup
    self.class.load_example
    @runner = Tasker::Runner.new(Tasker.registry)
  end

  def test_the_example_handlers_run
    out = JSON.parse(@runner.call(job("charge_card", context: { "amount" => 30 }, attempt: 2)))
    assert_equal({ "charged" => 30, "attempt" => 2 }, out["result"])
    out = JSON.parse(@runner.call(job("total", parents: { "a" => { "charged" => 30 }, "b" => { "charged" => 12 } })))
    assert_equal({ "value" => 42 }, out["result"])
  end

  def test_the_example_permanent_error_is_permanent
    out = JSON.parse(@runner.call(job("charge_card", context: { "amount" => -1 })))
    assert_equal false, out["retryable"]
    assert_equal "PermanentError", out["error"]["kind"]
    assert_equal "amount must be positive", out["error"]["message"]
  end
end
