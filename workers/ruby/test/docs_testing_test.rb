# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"
require "tmpdir"

# docs/testing.md's Ruby handler and workflow tests run as written, with minitest, in processes of
# their own.
class DocsTestingTest < Minitest::Test
  include TestSupport

  def test_the_docs_ruby_handler_test_passes
    docs = File.read(File.join(ROOT, "docs/testing.md"))
    block = docs[/```ruby\n(# route_test\.rb\n.*?)```/m, 1]
    refute_nil block, "docs/testing.md has no `# route_test.rb` block"
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "route_test.rb"), block)
      out, status = Open3.capture2e(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), "route_test.rb", chdir: dir)
      assert status.success?, out
      assert_match(/2 runs, \d+ assertions, 0 failures, 0 errors/, out)
    end
  end

  def test_the_docs_ruby_workflow_test_passes
    docs = File.read(File.join(ROOT, "docs/testing.md"))
    block = docs[/```ruby\n(# week_test\.rb\n.*?)```/m, 1]
    template = docs[/`templates\/week\.yaml`:\n\n```yaml\n(.*?)```/m, 1]
    refute_nil block, "docs/testing.md has no `# week_test.rb` block"
    refute_nil template, "docs/testing.md has no templates/week.yaml"
    Dir.mktmpdir do |dir|
      Dir.mkdir(File.join(dir, "templates"))
      File.write(File.join(dir, "templates", "week.yaml"), template)
      File.write(File.join(dir, "week_test.rb"), block)
      out, status = Open3.capture2e(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), "week_test.rb", chdir: dir)
      assert status.success?, out
      assert_match(/1 runs, \d+ assertions, 0 failures, 0 errors/, out)
    end
  end
end
