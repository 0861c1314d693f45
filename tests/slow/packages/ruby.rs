//! The Ruby packages: the platform gem with the client gem it depends on, and the client gem
//! alone, each installed with `gem install --local` into a gem folder of its own.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::{client_alone, command, install_dir, packages, run, worker_and_client, write};

const RUBY_HANDLERS: &str = r#"# The packaged worker's handlers.
require "tasker"

Tasker.register("compose_greeting") { |ctx| { "greeting" => "Hello, #{ctx.context.fetch("name")}" } }

class Shout < Tasker::Handler
  handles "shout"

  def call(ctx)
    { "greeting" => ctx.parent_results.fetch("compose").fetch("greeting").upcase + "!" }
  end
end
"#;

const RUBY_CLIENT: &str = r#"# Submits a greet task with Tasker::Client, waits, prints the outcome as JSON.
require "json"
require "tasker/client"

client = Tasker::Client.new # TASKER_URL
task = client.create_task("pkg_ruby", "greet", { "name" => "Ada" })
task = client.wait(task.id, 60)
puts JSON.generate("id" => task.id, "state" => task.state, "result" => task.result,
                   "package" => Gem.loaded_specs.fetch("tasker-workflows-client").full_gem_path)
exit(task.state == "complete" ? 0 : 1)
"#;

const RUBY_CLIENT_ALONE: &str = r#"# Submits rust_examples/linear with the client-only gem, waits, reports what it loaded.
require "json"
require "tasker/client"

client = Tasker::Client.new # TASKER_URL
task = client.create_task("rust_examples", "linear", { "value" => 6 })
task = client.wait(task.id, 60)
# The worker's extension, required or mapped: neither for the client alone.
mapped = File.readlines("/proc/self/maps").map { |line| line.split.last.to_s }.grep(/tasker_rb/)
puts JSON.generate("id" => task.id, "state" => task.state, "result" => task.result,
                   "package" => Gem.loaded_specs.fetch("tasker-workflows-client").full_gem_path,
                   "native" => ($LOADED_FEATURES.grep(/tasker_rb/) + mapped).uniq)
exit(task.state == "complete" ? 0 : 1)
"#;

/// `gem install --local` into `dir/gems`, run in the packages folder, where RubyGems finds the
/// gems it installs by name (and a gem's dependencies). `gem` is a name or a path there.
async fn install_gem(dir: &Path, gem: &std::ffi::OsStr) -> anyhow::Result<PathBuf> {
    let gems = dir.join("gems");
    run(
        command("gem", &packages().await?.dir)
            .env("GEM_HOME", &gems)
            .env("GEM_PATH", &gems)
            .args(["install", "--local", "--no-document", "--install-dir"])
            .arg(&gems)
            .arg(gem),
        "gem install",
    )
    .await?;
    Ok(gems)
}

/// `program` in `dir` with the gems of `gems` only.
fn with_gems(program: &Path, dir: &Path, gems: &Path) -> Command {
    let mut cmd = command(program, dir);
    cmd.env("GEM_HOME", gems).env("GEM_PATH", gems);
    cmd
}

/// The platform gem, installed with `gem install --local` into a gem folder of its own, with the
/// client gem it depends on. By its file: RubyGems 3.3 (Ruby 3.1's) finds a platform gem by name
/// only on a server; the client gem it finds by name in the packages folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_gem() -> anyhow::Result<()> {
    let gem = packages().await?.file("tasker-workflows", ".gem")?;
    let dir = install_dir("ruby")?;
    let gems = install_gem(&dir, gem.as_os_str()).await?;
    write(
        &dir,
        &[("handlers.rb", RUBY_HANDLERS), ("client.rb", RUBY_CLIENT)],
    )?;
    let mut worker = with_gems(&gems.join("bin/tasker-worker-ruby"), &dir, &gems);
    worker.args(["--handlers", "handlers.rb"]);
    let mut client = with_gems(Path::new("ruby"), &dir, &gems);
    client.arg("client.rb");
    worker_and_client("ruby", &dir, worker, client).await
}

/// The client-only gem, installed by name with `gem install --local` into a gem folder of its
/// own: pure Ruby, the extension neither installed nor loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_client_gem() -> anyhow::Result<()> {
    packages().await?.file("tasker-workflows-client", ".gem")?;
    let dir = install_dir("ruby-client")?;
    let gems = install_gem(&dir, "tasker-workflows-client".as_ref()).await?;
    write(&dir, &[("client.rb", RUBY_CLIENT_ALONE)])?;
    let mut client = with_gems(Path::new("ruby"), &dir, &gems);
    client.arg("client.rb");
    client_alone("ruby", &dir, client).await
}
