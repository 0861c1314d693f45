//! How systemd reads a unit for `systemd_units.rs`: unit files and drop-ins, `%` specifiers,
//! command lines, environment files, time spans; and the installed paths mapped to the test's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::process::Command;
use uuid::Uuid;

use tasker::{repo_root, workspace_binary};

/// The `PATH` systemd gives a system service.
const SYSTEMD_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub(super) fn deploy() -> PathBuf {
    repo_root().join("deploy/systemd")
}

/// A unit file's settings in order: `(section, key, value)`.
pub(super) type Settings = Vec<(String, String, String)>;

/// Reads a unit file or drop-in as systemd does: `[Section]` headers, `Key=value` lines, `#` and
/// `;` comments, a line ending in `\` continued on the next.
pub(super) fn parse_unit(text: &str) -> anyhow::Result<Settings> {
    let mut settings = Vec::new();
    let mut section = String::new();
    let mut continued = String::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if continued.is_empty() && (line.is_empty() || line.starts_with(['#', ';'])) {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            continued.push_str(head);
            continued.push(' ');
            continue;
        }
        let line = std::mem::take(&mut continued) + line;
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .with_context(|| format!("line {}: neither [Section] nor Key=value: {raw}", n + 1))?;
        anyhow::ensure!(!section.is_empty(), "line {}: outside a section", n + 1);
        settings.push((
            section.clone(),
            key.trim().to_owned(),
            value.trim().to_owned(),
        ));
    }
    anyhow::ensure!(continued.is_empty(), "the last line ends with `\\`");
    Ok(settings)
}

/// Splits a command line or an `Environment=` value into words as systemd does: whitespace
/// separates, double or single quotes group, `\` escapes the next character.
fn words(line: &str) -> anyhow::Result<Vec<String>> {
    let (mut words, mut word, mut quote) = (Vec::new(), None::<String>, None::<char>);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (_, '\\') => {
                let next = chars.next().context("a line ending in `\\`")?;
                word.get_or_insert_with(String::new).push(next);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    anyhow::ensure!(quote.is_none(), "an unclosed quote in {line:?}");
    words.extend(word);
    Ok(words)
}

/// An environment file (`EnvironmentFile=`): `KEY=VALUE` lines, `#` and `;` comments, a value
/// in single or double quotes taken as it is inside them. Later lines win.
fn env_file(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let lines = text.lines().map(str::trim);
    lines
        .filter(|l| !l.is_empty() && !l.starts_with(['#', ';']))
        .map(|line| {
            let (key, value) = line
                .split_once('=')
                .with_context(|| format!("not KEY=VALUE: {line}"))?;
            let key = key.trim();
            anyhow::ensure!(
                !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "not a variable name: {key:?}"
            );
            let value = value.trim();
            let unquoted = ['"', '\''].into_iter().find_map(|q| {
                (value.len() >= 2 && value.starts_with(q) && value.ends_with(q))
                    .then(|| &value[1..value.len() - 1])
            });
            Ok((key.to_owned(), unquoted.unwrap_or(value).to_owned()))
        })
        .collect()
}

/// `$VAR` (a word of its own: split into words) and `${VAR}` (within a word) in a command's
/// words, as systemd expands them from the service's environment at start.
fn expand_variables(words: Vec<String>, env: &BTreeMap<String, String>) -> Vec<String> {
    let value = |name: &str| env.get(name).map_or("", String::as_str);
    let mut out = Vec::new();
    for word in words {
        if let Some(name) = word.strip_prefix('$').filter(|n| !n.starts_with('{')) {
            out.extend(value(name).split_whitespace().map(str::to_owned));
            continue;
        }
        let (mut expanded, mut rest) = (String::new(), word.as_str());
        while let Some((start, len)) = rest
            .find("${")
            .and_then(|s| rest[s..].find('}').map(|l| (s, l)))
        {
            expanded.push_str(&rest[..start]);
            expanded.push_str(value(&rest[start + 2..start + len]));
            rest = &rest[start + len + 1..];
        }
        expanded.push_str(rest);
        out.push(expanded);
    }
    out
}

/// A systemd time span (`60s`, `1min 30s`, `90`: seconds).
pub(super) fn timespan(text: &str) -> anyhow::Result<Duration> {
    let mut total = Duration::ZERO;
    for part in text.split_whitespace() {
        let digits = part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(part.len());
        let n: u64 = part[..digits]
            .parse()
            .with_context(|| format!("{text:?}"))?;
        let ms = match &part[digits..] {
            "" | "s" | "sec" => 1_000,
            "ms" | "msec" => 1,
            "m" | "min" => 60_000,
            "h" | "hr" => 3_600_000,
            unit => anyhow::bail!("{text:?}: unit {unit:?}"),
        };
        total += Duration::from_millis(n * ms);
    }
    anyhow::ensure!(!total.is_zero(), "{text:?} is no time span");
    Ok(total)
}

/// A template unit of deploy/systemd/ as one instance of it.
#[derive(Debug)]
pub(super) struct Unit {
    /// `tasker-worker@rust-examples.service`.
    pub(super) name: String,
    instance: String,
    settings: Settings,
}

impl Unit {
    pub(super) fn read(file: &str, instance: &str) -> anyhow::Result<Unit> {
        let path = deploy().join(file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(Unit {
            name: file.replacen("@.", &format!("@{instance}."), 1),
            instance: instance.to_owned(),
            settings: parse_unit(&text).with_context(|| path.display().to_string())?,
        })
    }

    /// The values of `key` in `[section]` as systemd lists them: an empty one empties the list.
    fn list(&self, section: &str, key: &str) -> Vec<&str> {
        let mut values = Vec::new();
        for (s, k, v) in &self.settings {
            if s == section && k == key {
                if v.is_empty() {
                    values.clear();
                } else {
                    values.push(v.as_str());
                }
            }
        }
        values
    }

    fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.list(section, key).last().copied()
    }

    pub(super) fn service(&self, key: &str) -> anyhow::Result<&str> {
        self.get("Service", key)
            .with_context(|| format!("{}: no {key}=", self.name))
    }

    /// `value` with its `%` specifiers replaced; one this test does not know is an error.
    fn specifiers(&self, value: &str) -> anyhow::Result<String> {
        let (mut out, mut chars) = (String::new(), value.chars());
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('i') => out.push_str(&self.instance),
                Some('n') => out.push_str(&self.name),
                Some('p') => out.push_str(self.name.split('@').next().unwrap_or_default()),
                Some('%') => out.push('%'),
                other => anyhow::bail!("{}: specifier %{other:?} in {value:?}", self.name),
            }
        }
        Ok(out)
    }

    /// The environment systemd gives the service: its own few variables (for `User=`, with no
    /// home), `Environment=`, then each `EnvironmentFile=` (`-`: may be missing), later winning.
    pub(super) fn environment(&self, root: &Installed) -> anyhow::Result<BTreeMap<String, String>> {
        let user = self.service("User")?;
        let mut env: BTreeMap<String, String> = [
            ("PATH", SYSTEMD_PATH),
            ("USER", user),
            ("LOGNAME", user),
            ("HOME", "/nonexistent"),
            ("SHELL", "/usr/sbin/nologin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        for line in self.list("Service", "Environment") {
            for assignment in words(&self.specifiers(line)?)? {
                let (k, v) = assignment.split_once('=').context("Environment=K=V")?;
                env.insert(k.to_owned(), v.to_owned());
            }
        }
        for file in self.list("Service", "EnvironmentFile") {
            let file = self.specifiers(file)?;
            let (optional, path) = match file.strip_prefix('-') {
                Some(path) => (true, path),
                None => (false, file.as_str()),
            };
            match std::fs::read_to_string(root.map(path)?) {
                Ok(text) => env.extend(env_file(&text).with_context(|| file.clone())?),
                Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("{}: {file}", self.name)),
            }
        }
        Ok(env)
    }

    /// Its `ExecStart=` as systemd would run it, with `env` and nothing else, in `/` (or its
    /// `WorkingDirectory=`).
    pub(super) fn command(
        &self,
        root: &Installed,
        env: &BTreeMap<String, String>,
    ) -> anyhow::Result<Command> {
        let exec = self.list("Service", "ExecStart");
        anyhow::ensure!(
            exec.len() == 1,
            "{}: one ExecStart=, not {exec:?}",
            self.name
        );
        let words = expand_variables(words(&self.specifiers(exec[0])?)?, env);
        let (program, args) = words.split_first().context("an empty ExecStart=")?;
        anyhow::ensure!(
            program.starts_with('/'),
            "{}: ExecStart= names its program by absolute path, with no prefix: {program}",
            self.name
        );
        let dir = match self.get("Service", "WorkingDirectory") {
            Some(dir) => root.map(&self.specifiers(dir)?)?,
            None => PathBuf::from("/"),
        };
        let mut cmd = Command::new(root.map(program)?);
        for arg in args {
            cmd.arg(root.map_arg(arg)?);
        }
        cmd.env_clear()
            .envs(env)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Ok(cmd)
    }

    /// What every unit says, whatever else changes; `graceful`: its program's longest graceful
    /// stop, which `TimeoutStopSec=` must outlast.
    pub(super) fn check(&self, graceful: Duration) -> anyhow::Result<()> {
        for (key, want) in [
            ("User", "tasker"),
            ("Restart", "on-failure"),
            ("KillSignal", "SIGTERM"),
            ("KillMode", "mixed"),
            ("NoNewPrivileges", "yes"),
            ("ProtectSystem", "strict"),
            ("ProtectHome", "yes"),
            ("PrivateTmp", "yes"),
        ] {
            let got = self.get("Service", key);
            anyhow::ensure!(
                got == Some(want),
                "{}: {key}={got:?}, not {want}",
                self.name
            );
        }
        let kind = self.get("Service", "Type");
        anyhow::ensure!(
            matches!(kind, None | Some("exec" | "simple")),
            "Type={kind:?}"
        );
        for key in ["Wants", "After"] {
            let targets = self.list("Unit", key).join(" ");
            anyhow::ensure!(
                targets
                    .split_whitespace()
                    .any(|t| t == "network-online.target"),
                "{}: {key}= lacks network-online.target",
                self.name
            );
        }
        let stop = timespan(self.service("TimeoutStopSec")?)?;
        anyhow::ensure!(
            stop >= graceful + Duration::from_secs(10),
            "{}: TimeoutStopSec={stop:?} leaves no margin past the graceful stop ({graceful:?})",
            self.name
        );
        let files = self.service("LimitNOFILE")?;
        let files: u64 = files.rsplit(':').next().unwrap_or(files).parse()?;
        let connections = tasker_shared::Config::default()
            .orchestrator
            .max_connections as u64;
        anyhow::ensure!(files > connections + 1_024, "LimitNOFILE={files}");
        Ok(())
    }
}

/// A folder removed when dropped.
#[derive(Debug)]
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new(what: &str) -> anyhow::Result<TempDir> {
        let dir = std::env::temp_dir().join(format!("tasker-{what}-{}", Uuid::now_v7()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The installed paths: `/usr/local/bin/` is this build's binaries, `/etc/tasker/` a folder of
/// the test's.
#[derive(Debug)]
pub(super) struct Installed {
    etc: TempDir,
}

impl Installed {
    pub(super) fn new() -> anyhow::Result<Installed> {
        Ok(Installed {
            etc: TempDir::new("systemd-etc")?,
        })
    }

    fn map(&self, path: &str) -> anyhow::Result<PathBuf> {
        if let Some(name) = path.strip_prefix("/usr/local/bin/") {
            return workspace_binary(name);
        }
        if let Some(name) = path.strip_prefix("/etc/tasker/") {
            return Ok(self.etc.0.join(name));
        }
        anyhow::bail!("{path}: not under /usr/local/bin/ or /etc/tasker/, which the test installs")
    }

    /// A command's argument: mapped if it is an installed path.
    fn map_arg(&self, arg: &str) -> anyhow::Result<String> {
        if !arg.starts_with("/usr/local/bin/") && !arg.starts_with("/etc/tasker/") {
            return Ok(arg.to_owned());
        }
        let path = self.map(arg)?;
        Ok(path.to_str().context("a UTF-8 path")?.to_owned())
    }

    /// Writes `/etc/tasker/<name>`: the example `example` of deploy/systemd/ as shipped, if any,
    /// then `values`, which win.
    pub(super) fn write_env(
        &self,
        name: &str,
        example: Option<&str>,
        values: &[(&str, &str)],
    ) -> anyhow::Result<()> {
        let mut text = match example {
            Some(file) => std::fs::read_to_string(deploy().join(file))?,
            None => String::new(),
        };
        text.push_str("\n# This test's services (later lines win)\n");
        for (key, value) in values {
            anyhow::ensure!(!value.contains('\''), "{key}: a value without quotes");
            text.push_str(&format!("{key}='{value}'\n"));
        }
        Ok(std::fs::write(self.etc.0.join(name), text)?)
    }

    /// Copies the example `example` of deploy/systemd/ to `/etc/tasker/<name>` as shipped.
    pub(super) fn install(&self, name: &str, example: &str) -> anyhow::Result<()> {
        std::fs::copy(deploy().join(example), self.etc.0.join(name))?;
        Ok(())
    }
}
