# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"

# docs/testing.md's Ruby handler and workflow tests run as written, with minitest, in processes of
# their own.
class DocsTestingTest < Minitest::Test
  include TestSupport

  def test_the_docs_ruby_handler_test_passes
    run_docs_test("route_test.rb", {}, runs: 2)
  end

  def test_the_docs_ruby_workflow_test_passes
    template = docs[/`templates\/week\.yaml`:\n\n```yaml\n(.*?)```/m, 1]
    refute_nil template, "docs/testing.md has no templates/week.yaml"
    run_docs_test("week_test.rb", { "templates/week.yaml" => template }, runs: 1)
  end

  private

  def docs
    File.read(File.join(ROOT, "docs/testing.md"))
  end

  # Writes the docs' block headed `# name` (and `files`) into a folder of their own and runs it:
  # all `runs` of its tests pass.
  def run_docs_test(name, files, runs:)
    block = docs[/```ruby\n(# #{Regexp.escape(name)}\n.*?)```/m, 1]
    refute_nil block, "docs/testing.md has no `# #{name}` block"
    Dir.mktmpdir do |dir|
      files.merge(name => block).each do |path, text|
        FileUtils.mkdir_p(File.dirname(File.join(dir, path)))
        File.write(File.join(dir, path), text)
      end
      out, status = Open3.capture2e(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), name, chdir: dir)
      assert status.success?, out
      assert_match(/#{runs} runs, \d+ assertions, 0 failures, 0 errors/, out)
    end
  end
end
