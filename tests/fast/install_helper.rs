//! `cargo-make/ensure-deps.sh`, the one helper that installs what a fresh machine lacks (from
//! `cargo-make/dependencies.txt`), run against fake `dpkg-query`, `apt-get` and `id` put first on
//! PATH. Nothing here touches the machine's packages: the fakes keep "installed" packages in a
//! temporary folder, `TASKER_DEPS_SYSROOT` moves policy-rc.d and the lock file there too, and
//! `TASKER_SUDO=` (empty) makes the helper run apt-get (the fake) as is, whoever runs the test.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, ensure};

/// `dpkg-query -W -f='${Status}' PKG`: "install ok installed" for the packages in installed.txt,
/// "unknown ok not-installed" for any other; with no package (a listing), nothing.
const FAKE_DPKG_QUERY: &str = r##"#!/usr/bin/env bash
pkg="${!#}"
case "$pkg" in -* | "") exit 0 ;; esac
if grep -qxF -- "$pkg" "$FAKES/installed.txt" 2>/dev/null; then
  printf 'install ok installed'
else
  printf 'unknown ok not-installed'
fi
"##;

/// Appends "<command> <packages...>" (options left out) to apt.log. `install` fails like apt for
/// a package listed in fail.txt and otherwise marks it installed; `purge` unmarks. Installing or
/// purging while services could start (no policy-rc.d in the sysroot), or without
/// DEBIAN_FRONTEND=noninteractive, is written to violations.log. `-s` (simulate) does nothing.
const FAKE_APT_GET: &str = r##"#!/usr/bin/env bash
cmd="" skip="" simulate=""
pkgs=()
for arg in "$@"; do
  if [[ -n "$skip" ]]; then skip=""; continue; fi
  case "$arg" in
    -o) skip=1 ;;
    -s | --simulate | --dry-run) simulate=1 ;;
    -*) ;;
    *) if [[ -z "$cmd" ]]; then cmd="$arg"; else pkgs+=("$arg"); fi ;;
  esac
done
[[ -z "$simulate" ]] || exit 0
echo "$cmd${pkgs[*]:+ ${pkgs[*]}}" >>"$FAKES/apt.log"
if [[ "$cmd" == install || "$cmd" == purge ]]; then
  [[ -x "$TASKER_DEPS_SYSROOT/usr/sbin/policy-rc.d" ]] || echo "$cmd without policy-rc.d" >>"$FAKES/violations.log"
  [[ "${DEBIAN_FRONTEND:-}" == noninteractive ]] || echo "$cmd without DEBIAN_FRONTEND=noninteractive" >>"$FAKES/violations.log"
fi
case "$cmd" in
  install)
    for p in "${pkgs[@]}"; do
      if grep -qxF -- "$p" "$FAKES/fail.txt" 2>/dev/null; then
        echo "E: Unable to locate package $p" >&2
        exit 100
      fi
    done
    printf '%s\n' "${pkgs[@]}" >>"$FAKES/installed.txt"
    ;;
  purge)
    grep -vxF -f <(printf '%s\n' "${pkgs[@]}") "$FAKES/installed.txt" >"$FAKES/installed.new" || true
    mv "$FAKES/installed.new" "$FAKES/installed.txt"
    ;;
esac
"##;

/// A user without root.
const FAKE_ID: &str = r##"#!/usr/bin/env bash
if [[ "${1:-}" == -u ]]; then echo 1000; else exec /usr/bin/id "$@"; fi
"##;

/// The list most tests use (the real one may grow; one test below reads it).
const TEST_LIST: &str = "\
# KIND  GROUP     NAME             WHY
apt     ruby      ruby             Ruby
apt     ruby      ruby-dev         its headers
apt     ruby      libclang-dev     bindgen
apt     services  rabbitmq-server  the broker
";

fn helper_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cargo-make/ensure-deps.sh")
}

fn write_executable(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

fn lines(items: &[&str]) -> String {
    items.iter().map(|item| format!("{item}\n")).collect()
}

fn read_lines(path: &Path) -> Result<Vec<String>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.lines().map(str::to_owned).collect())
}

/// The helper's stderr, after checking that it succeeded.
fn succeeded(out: &Output) -> Result<String> {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ensure!(
        out.status.success(),
        "helper failed ({}): {err}",
        out.status
    );
    Ok(err)
}

/// The helper's stderr, after checking that it failed.
fn failed(out: &Output) -> Result<String> {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ensure!(!out.status.success(), "helper succeeded: {err}");
    Ok(err)
}

/// A pretend machine: fakes in `<dir>/bin`, what dpkg reports installed in `<dir>/installed.txt`.
struct Machine {
    dir: PathBuf,
}

impl Machine {
    fn new(test: &str, installed: &[&str]) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "tasker-install-helper-{}-{test}",
            std::process::id()
        ));
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(dir.join("bin"))?;
        fs::create_dir_all(dir.join("sysroot"))?;
        write_executable(&dir.join("bin/dpkg-query"), FAKE_DPKG_QUERY)?;
        write_executable(&dir.join("bin/apt-get"), FAKE_APT_GET)?;
        fs::write(dir.join("installed.txt"), lines(installed))?;
        fs::write(dir.join("deps.txt"), TEST_LIST)?;
        Ok(Self { dir })
    }

    /// From now on `id -u` says 1000.
    fn not_root(&self) -> Result<()> {
        write_executable(&self.dir.join("bin/id"), FAKE_ID)
    }

    /// The fake `apt-get install` of these packages fails.
    fn failing(&self, packages: &[&str]) -> Result<()> {
        fs::write(self.dir.join("fail.txt"), lines(packages))?;
        Ok(())
    }

    /// The helper with the fakes first on PATH, the test list, a state folder and sysroot of the
    /// test's own, and `TASKER_SUDO=` (no root check).
    fn helper(&self, args: &[&str]) -> Command {
        let mut path = vec![self.dir.join("bin")];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path = std::env::join_paths(path).unwrap_or_else(|_| OsString::from("/usr/bin:/bin"));
        let mut cmd = Command::new("bash");
        cmd.arg(helper_path())
            .args(args)
            .env("PATH", path)
            .env("FAKES", &self.dir)
            .env("TASKER_DEPS_FILE", self.dir.join("deps.txt"))
            .env("TASKER_HOME", self.dir.join("home"))
            .env("TASKER_DEPS_SYSROOT", self.dir.join("sysroot"))
            .env("TASKER_SUDO", "")
            .env_remove("DEBIAN_FRONTEND");
        cmd
    }

    fn run(&self, args: &[&str]) -> Result<Output> {
        self.helper(args)
            .output()
            .context("running bash cargo-make/ensure-deps.sh")
    }

    /// What the fake apt-get was asked, one call a line: "update", "install ruby-dev", ...
    fn apt_calls(&self) -> Result<Vec<String>> {
        read_lines(&self.dir.join("apt.log"))
    }

    fn violations(&self) -> Result<Vec<String>> {
        read_lines(&self.dir.join("violations.log"))
    }

    fn policy_rc_left_behind(&self) -> bool {
        self.dir.join("sysroot/usr/sbin/policy-rc.d").exists()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_package_dpkg_does_not_report_installed_is_installed() -> Result<()> {
    let m = Machine::new("missing", &["ruby", "ruby-dev", "libclang-cpp14"])?;
    let out = m.run(&["ruby"])?;
    let err = succeeded(&out)?;
    assert_eq!(m.apt_calls()?, ["update", "install libclang-dev"], "{err}");
    ensure!(
        err.contains("installed libclang-dev in "),
        "no timing line: {err}"
    );
    let violations = m.violations()?;
    ensure!(violations.is_empty(), "{violations:?}");
    ensure!(
        !m.policy_rc_left_behind(),
        "the temporary policy-rc.d was left behind"
    );
    Ok(())
}

/// The bug this helper replaced: the base image has libclang-cpp14 (a libclang*.so file) but not
/// libclang-dev, and rb-sys' bindgen needs the latter. The real list must install it.
#[test]
fn the_real_list_installs_libclang_dev_beside_libclang_cpp() -> Result<()> {
    let m = Machine::new("real-list", &["ruby", "ruby-dev", "libclang-cpp14"])?;
    let out = m
        .helper(&["ruby"])
        .env_remove("TASKER_DEPS_FILE")
        .output()?;
    let err = succeeded(&out)?;
    let calls = m.apt_calls()?;
    ensure!(
        calls.iter().any(|c| c.as_str() == "install libclang-dev"),
        "{calls:?}\n{err}"
    );
    ensure!(
        calls.iter().filter(|c| c.as_str() == "update").count() == 1,
        "{calls:?}"
    );
    ensure!(
        calls.first().is_some_and(|c| c.as_str() == "update"),
        "{calls:?}"
    );
    Ok(())
}

#[test]
fn nothing_missing_needs_neither_apt_get_nor_root() -> Result<()> {
    let m = Machine::new("nothing-missing", &["ruby", "ruby-dev", "libclang-dev"])?;
    m.not_root()?;
    let out = m.helper(&["ruby"]).env_remove("TASKER_SUDO").output()?;
    let err = succeeded(&out)?;
    let calls = m.apt_calls()?;
    ensure!(calls.is_empty(), "apt-get was called: {calls:?}");
    ensure!(err.contains("nothing missing"), "{err}");
    Ok(())
}

#[test]
fn not_root_with_missing_packages_fails_with_the_sudo_command() -> Result<()> {
    let m = Machine::new("not-root", &["ruby"])?;
    m.not_root()?;
    let out = m.helper(&["ruby"]).env_remove("TASKER_SUDO").output()?;
    let err = failed(&out)?;
    ensure!(
        err.contains("sudo apt-get install -y ruby-dev libclang-dev"),
        "no sudo command: {err}"
    );
    let calls = m.apt_calls()?;
    ensure!(calls.is_empty(), "apt-get was called: {calls:?}");
    Ok(())
}

#[test]
fn a_failed_install_stops_at_once_naming_the_package() -> Result<()> {
    let m = Machine::new("failed-install", &[])?;
    m.failing(&["ruby-dev"])?;
    let out = m.run(&["ruby"])?;
    let err = failed(&out)?;
    ensure!(
        err.contains("could not install ruby-dev"),
        "package not named: {err}"
    );
    // ruby went in, ruby-dev failed, libclang-dev was never tried.
    assert_eq!(
        m.apt_calls()?,
        ["update", "install ruby", "install ruby-dev"],
        "{err}"
    );
    ensure!(
        !m.policy_rc_left_behind(),
        "the temporary policy-rc.d was left behind"
    );
    Ok(())
}

#[test]
fn update_runs_once_and_a_second_run_installs_nothing() -> Result<()> {
    let m = Machine::new("twice", &[])?;
    let out = m.run(&["ruby", "services"])?;
    let err = succeeded(&out)?;
    let expected = [
        "update",
        "install ruby",
        "install ruby-dev",
        "install libclang-dev",
        "install rabbitmq-server",
    ];
    assert_eq!(m.apt_calls()?, expected, "{err}");
    let violations = m.violations()?;
    ensure!(violations.is_empty(), "{violations:?}");

    let again = m.run(&["ruby", "services"])?;
    let err = succeeded(&again)?;
    assert_eq!(
        m.apt_calls()?,
        expected,
        "the second run called apt-get: {err}"
    );
    ensure!(err.contains("nothing missing"), "{err}");
    Ok(())
}

#[test]
fn group_colon_name_selects_one_entry() -> Result<()> {
    let m = Machine::new("one-entry", &[])?;
    let out = m.run(&["services:rabbitmq-server"])?;
    let err = succeeded(&out)?;
    assert_eq!(
        m.apt_calls()?,
        ["update", "install rabbitmq-server"],
        "{err}"
    );
    Ok(())
}

#[test]
fn an_unknown_group_fails_before_installing_anything() -> Result<()> {
    let m = Machine::new("unknown-group", &[])?;
    let out = m.run(&["ruby", "rubby"])?;
    let err = failed(&out)?;
    ensure!(err.contains("'rubby'"), "{err}");
    let calls = m.apt_calls()?;
    ensure!(calls.is_empty(), "apt-get was called: {calls:?}");
    Ok(())
}

#[test]
fn remove_purges_the_installed_packages_of_the_group_then_autoremoves() -> Result<()> {
    let m = Machine::new("remove", &["ruby", "ruby-dev", "rabbitmq-server"])?;
    let out = m.run(&["--remove", "ruby"])?;
    let err = succeeded(&out)?;
    assert_eq!(
        m.apt_calls()?,
        ["purge ruby ruby-dev", "autoremove"],
        "{err}"
    );
    ensure!(err.contains("removed ruby ruby-dev"), "{err}");
    let violations = m.violations()?;
    ensure!(violations.is_empty(), "{violations:?}");
    Ok(())
}
