//! A linear pre-scan of a template's text that refuses, before any YAML parser sees it, what
//! would make the parser spend far more than the text's size: deep nesting (libyaml's work per
//! token grows with the flow depth, so 200 kB of `[` took 17 s), more nodes than any template
//! needs, and anchors and aliases beyond a handful (each alias is a copy of its anchor's tree).
//!
//! The scan reads YAML's surface only: quotes, comments, flow brackets and commas, block
//! indentation and `- ` entries, `&anchor` and `*alias` tokens. It over-counts rather than
//! under-counts (a `[` inside a plain scalar counts), and no template Tasker accepts comes near
//! the bounds.

use super::ErrorKind;

/// Deepest nesting of flow collections and block indentation together.
pub const MAX_DEPTH: usize = 64;
/// Most nodes (flow entries, block entries and mapping keys).
pub const MAX_NODES: usize = 50_000;
/// Most anchors and aliases together.
pub const MAX_ANCHORS: usize = 256;

/// Where the text first goes past a bound: the line (1-based) and why.
pub(crate) fn check(src: &str) -> Result<(), (usize, ErrorKind)> {
    let mut scan = Scan::default();
    for (i, line) in src.split('\n').enumerate() {
        scan.line(line).map_err(|problem| {
            (
                i + 1,
                ErrorKind::InvalidField {
                    field: "(file)".into(),
                    problem,
                },
            )
        })?;
    }
    Ok(())
}

#[derive(Default)]
struct Scan {
    /// Open `[`/`{` (flow collections may span lines).
    flow: usize,
    /// Inside a quoted scalar that continues on the next line: its quote.
    quoted: Option<u8>,
    /// Indentations of the open block collections.
    blocks: Vec<usize>,
    nodes: usize,
    anchors: usize,
}

impl Scan {
    fn line(&mut self, line: &str) -> Result<(), String> {
        let bytes = line.as_bytes();
        let mut i = 0;
        if self.quoted.is_none() && self.flow == 0 {
            // Block structure: indentation, then each `- ` entry opens one more level.
            let indent = bytes.iter().take_while(|&&b| b == b' ').count();
            let rest = &bytes[indent..];
            if rest.is_empty() || rest[0] == b'#' {
                return Ok(());
            }
            while self.blocks.last().is_some_and(|&top| top > indent) {
                self.blocks.pop();
            }
            if self.blocks.last() != Some(&indent) {
                self.blocks.push(indent);
            }
            i = indent;
            while i < bytes.len() && bytes[i] == b'-' && bytes.get(i + 1).is_none_or(|b| *b == b' ')
            {
                self.blocks.push(i + 2);
                self.node()?;
                i += 2;
                while i < bytes.len() && bytes[i] == b' ' {
                    i += 1;
                }
            }
            self.depth()?;
        }
        let mut previous = b' ';
        while i < bytes.len() {
            let b = bytes[i];
            if let Some(q) = self.quoted {
                if b == b'\\' && q == b'"' {
                    i += 2;
                    continue;
                }
                if b == q {
                    // '' inside a single-quoted scalar is an escaped quote.
                    if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    self.quoted = None;
                }
                previous = b;
                i += 1;
                continue;
            }
            match b {
                b'#' if previous == b' ' || previous == b'\t' || i == 0 => return Ok(()),
                b'"' | b'\''
                    if matches!(previous, b' ' | b'[' | b'{' | b',' | b':' | b'-') || i == 0 =>
                {
                    self.quoted = Some(b)
                }
                b'[' | b'{' => {
                    self.flow += 1;
                    self.node()?;
                    self.depth()?;
                }
                b']' | b'}' => self.flow = self.flow.saturating_sub(1),
                b',' if self.flow > 0 => self.node()?,
                b':' if bytes.get(i + 1).is_none_or(|c| *c == b' ') => self.node()?,
                b'&' | b'*'
                    if matches!(previous, b' ' | b'[' | b'{' | b',' | b'-' | b':') || i == 0 =>
                {
                    self.anchors += 1;
                    if self.anchors > MAX_ANCHORS {
                        return Err(format!(
                            "a template may hold at most {MAX_ANCHORS} anchors and aliases"
                        ));
                    }
                }
                _ => {}
            }
            previous = b;
            i += 1;
        }
        Ok(())
    }

    fn node(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!(
                "a template may hold at most {MAX_NODES} entries and keys"
            ));
        }
        Ok(())
    }

    fn depth(&self) -> Result<(), String> {
        if self.flow + self.blocks.len() > MAX_DEPTH {
            return Err(format!(
                "a template may nest collections at most {MAX_DEPTH} deep"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(src: &str) -> Option<usize> {
        check(src).err().map(|(line, _)| line)
    }

    #[test]
    fn ordinary_templates_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/task_templates");
        let mut seen = 0;
        for lang in std::fs::read_dir(&dir).unwrap() {
            for file in std::fs::read_dir(lang.unwrap().path()).unwrap() {
                let path = file.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(check(&text).err(), None, "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen > 20, "only {seen} fixtures read");
        let flow = "namespace: a\nname: b\nversion: '1'\nsteps: [{name: x, handler: h, depends_on: [], retry: {max_attempts: 2}}]\n";
        assert_eq!(check(flow).err(), None);
    }

    #[test]
    fn deep_nesting_is_refused_at_its_line() {
        let brackets = format!("steps: {}", "[".repeat(200_000));
        assert_eq!(line_of(&brackets), Some(1));
        let maps = format!("a:\n  b: {}1{}", "{a: ".repeat(100), "}".repeat(100));
        assert_eq!(line_of(&maps), Some(2));
        let mut block = String::new();
        for depth in 0..100 {
            block.push_str(&format!("{}k{depth}:\n", "  ".repeat(depth)));
        }
        assert_eq!(line_of(&block), Some(MAX_DEPTH + 1));
        let dashes = format!("x:\n{}y\n", "- ".repeat(100));
        assert_eq!(line_of(&dashes), Some(2));
        // Brackets inside quotes and comments open nothing.
        let quoted = format!(
            "a: '{}'\nb: \"{}\" # {}\n",
            "[".repeat(500),
            "{".repeat(500),
            "[".repeat(500)
        );
        assert_eq!(check(&quoted).err(), None);
    }

    #[test]
    fn too_many_nodes_or_aliases_are_refused() {
        let wide = format!("a: [{}]", "1,".repeat(MAX_NODES + 10));
        assert!(check(&wide).is_err());
        let mut aliases = "base: &b {x: 1}\n".to_owned();
        for i in 0..300 {
            aliases.push_str(&format!("k{i}: *b\n"));
        }
        assert_eq!(line_of(&aliases), Some(MAX_ANCHORS + 1));
    }
}
