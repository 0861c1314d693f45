//! A linear pre-scan of a template's text that refuses, before any YAML parser sees it, what
//! would make the parser spend far more than the text's size: deep nesting (libyaml's work per
//! token grows with the flow depth, so 200 kB of `[` took 17 s), more nodes than any template
//! needs, and anchors and aliases beyond a handful (each alias is a copy of its anchor's tree).
//!
//! The scan finds token boundaries the way libyaml's scanner does (the parser serde_norway
//! runs), so that no text the parser reads as structure is taken for the inside of a scalar:
//! a quote opens a quoted scalar only where a token starts (after indentation, `- `, `? `,
//! `: `, `[`, `{`, `,`, a tag or an anchor), never inside a plain scalar (`description: a "`)
//! nor on a continuation line of one; a block scalar (`|`, `>`) holds exactly the lines
//! libyaml gives it, with its indentation rules. Where the scan cannot follow the parser (a
//! character that starts no token, a tab where indentation is expected), the parser stops
//! with an error there, and the scan goes on reading what follows as plain structure: it
//! over-counts rather than under-counts. No template Tasker accepts comes near the bounds.

use super::ErrorKind;

mod scalars;
#[cfg(test)]
mod tests;

/// Deepest nesting of flow collections and block indentation together.
pub const MAX_DEPTH: usize = 64;
/// Most nodes (flow entries, block entries and mapping keys).
pub const MAX_NODES: usize = 50_000;
/// Most anchors and aliases together.
pub const MAX_ANCHORS: usize = 256;

/// How far libyaml looks for the `:` of a simple key, in characters.
const SIMPLE_KEY_REACH: usize = 1024;

/// Where the text first goes past a bound: the line (1-based) and why.
pub(crate) fn check(src: &str) -> Result<(), (usize, ErrorKind)> {
    let mut scan = Scan::new(src.as_bytes());
    scan.run().map_err(|problem| {
        (
            scan.line,
            ErrorKind::InvalidField {
                field: "(file)".into(),
                problem,
            },
        )
    })
}

/// A place a simple key (`key: value`) may start, in block context.
#[derive(Clone, Copy)]
struct KeyStart {
    line: usize,
    index: usize,
    column: usize,
}

struct Scan<'a> {
    text: &'a [u8],
    at: usize,
    /// 1-based line, column and character index of `at`, as libyaml counts them.
    line: usize,
    column: usize,
    index: usize,
    flow: usize,
    /// libyaml's block indentation (-1 at the top) and the ones it will return to.
    indent: isize,
    indents: Vec<isize>,
    /// Whether a simple key may start at the next token (libyaml's `simple_key_allowed`).
    key_allowed: bool,
    /// The block level's possible simple key: where a mapping starts if a `:` follows.
    key: Option<KeyStart>,
    nodes: usize,
    anchors: usize,
    /// The deepest nesting seen.
    deepest: usize,
}

impl<'a> Scan<'a> {
    fn new(text: &'a [u8]) -> Self {
        Scan {
            text,
            at: 0,
            line: 1,
            column: 0,
            index: 0,
            flow: 0,
            indent: -1,
            indents: Vec::new(),
            key_allowed: true,
            key: None,
            nodes: 0,
            anchors: 0,
            deepest: 0,
        }
    }

    fn byte(&self, ahead: usize) -> u8 {
        self.text.get(self.at + ahead).copied().unwrap_or(0)
    }

    /// Length in bytes of the line break at `at + ahead` (`\r\n`, `\r`, `\n`, NEL, LS, PS), or 0.
    fn break_len(&self, ahead: usize) -> usize {
        let at = self.at + ahead;
        match self.text.get(at..).unwrap_or_default() {
            [b'\r', b'\n', ..] => 2,
            [b'\r' | b'\n', ..] => 1,
            [0xC2, 0x85, ..] => 2,
            [0xE2, 0x80, 0xA8 | 0xA9, ..] => 3,
            _ => 0,
        }
    }

    fn is_end(&self) -> bool {
        self.at >= self.text.len()
    }

    fn blank(&self, ahead: usize) -> bool {
        matches!(self.byte(ahead), b' ' | b'\t')
    }

    /// A blank, a line break or the end of the text.
    fn blankz(&self, ahead: usize) -> bool {
        self.blank(ahead) || self.break_len(ahead) > 0 || self.at + ahead >= self.text.len()
    }

    /// Moves past one character (all of its UTF-8 bytes).
    fn skip(&mut self) {
        let width = match self.byte(0) {
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            b if b >= 0xC0 => 2,
            _ => 1,
        };
        self.at = (self.at + width).min(self.text.len());
        self.column += 1;
        self.index += 1;
    }

    /// Moves past the line break at `at`.
    fn skip_break(&mut self) {
        self.at += self.break_len(0);
        self.line += 1;
        self.column = 0;
        self.index += 1;
    }

    /// Moves to the end of the line (not past its break).
    fn skip_to_break(&mut self) {
        while !self.is_end() && self.break_len(0) == 0 {
            self.skip();
        }
    }

    fn document_marker(&self) -> bool {
        self.column == 0
            && (self.text[self.at..].starts_with(b"---")
                || self.text[self.at..].starts_with(b"..."))
            && self.blankz(3)
    }

    fn run(&mut self) -> Result<(), String> {
        loop {
            self.skip_to_token();
            if self.is_end() {
                return Ok(());
            }
            if self
                .key
                .is_some_and(|k| k.line < self.line || k.index + SIMPLE_KEY_REACH < self.index)
            {
                self.key = None;
            }
            self.unroll(self.column as isize);
            self.token()?;
        }
    }

    /// libyaml's `scan_skip_to_token`: blanks, comments and line breaks.
    fn skip_to_token(&mut self) {
        loop {
            if self.column == 0 && self.text[self.at..].starts_with(&[0xEF, 0xBB, 0xBF]) {
                self.skip();
            }
            while self.byte(0) == b' '
                || ((self.flow > 0 || !self.key_allowed) && self.byte(0) == b'\t')
            {
                self.skip();
            }
            if self.byte(0) == b'#' {
                self.skip_to_break();
            }
            if self.break_len(0) == 0 {
                return;
            }
            self.skip_break();
            if self.flow == 0 {
                self.key_allowed = true;
            }
        }
    }

    /// One token at `at`, as libyaml's `fetch_next_token` chooses it.
    fn token(&mut self) -> Result<(), String> {
        let c = self.byte(0);
        if self.column == 0 && c == b'%' {
            self.unroll(-1);
            self.key = None;
            self.key_allowed = false;
            self.skip_to_break();
            return Ok(());
        }
        if self.document_marker() {
            self.unroll(-1);
            self.key = None;
            self.key_allowed = false;
            (0..3).for_each(|_| self.skip());
            return Ok(());
        }
        match c {
            b'[' | b'{' => {
                self.save_key();
                self.flow += 1;
                self.key_allowed = true;
                self.skip();
                self.node()?;
                self.depth()
            }
            // libyaml takes `,`, `]` and `}` for flow indicators in block context too (and
            // the parser then fails): each still drops the block level's possible key, so a
            // `:` after one starts the mapping at its own column, not at the key's.
            b']' | b'}' => {
                self.drop_block_key();
                self.flow = self.flow.saturating_sub(1);
                self.key_allowed = false;
                self.skip();
                Ok(())
            }
            b',' => {
                self.drop_block_key();
                self.key_allowed = true;
                self.skip();
                self.node()
            }
            b'-' if self.blankz(1) => {
                self.entry()?;
                self.key_allowed = true;
                Ok(())
            }
            b'?' if self.flow > 0 || self.blankz(1) => {
                self.entry()?;
                self.key_allowed = self.flow == 0;
                Ok(())
            }
            b':' if self.flow > 0 || self.blankz(1) => self.value(),
            b'*' | b'&' => {
                self.save_key();
                self.key_allowed = false;
                self.skip();
                while self.byte(0).is_ascii_alphanumeric() || matches!(self.byte(0), b'_' | b'-') {
                    self.skip();
                }
                // A name followed by anything else is an error the parser stops at: what
                // follows is read as structure, not as a token (a quote) that could hide it.
                if !self.blankz(0) && !b"?:,]}%@`".contains(&self.byte(0)) {
                    self.skip();
                }
                self.anchors += 1;
                if self.anchors > MAX_ANCHORS {
                    return Err(format!(
                        "a template may hold at most {MAX_ANCHORS} anchors and aliases"
                    ));
                }
                Ok(())
            }
            b'!' => {
                self.save_key();
                self.key_allowed = false;
                self.tag();
                Ok(())
            }
            b'|' | b'>' if self.flow == 0 => {
                self.key = None;
                self.key_allowed = true;
                self.block_scalar();
                Ok(())
            }
            b'\'' | b'"' => {
                self.save_key();
                self.key_allowed = false;
                self.quoted(c);
                Ok(())
            }
            _ if self.plain_starts() => {
                self.save_key();
                self.key_allowed = false;
                self.plain();
                Ok(())
            }
            // A character that starts no token: the parser stops here with an error. Reading
            // on costs nothing and can only count more.
            _ => {
                self.skip();
                Ok(())
            }
        }
    }

    /// libyaml's condition for a plain scalar to start here.
    fn plain_starts(&self) -> bool {
        let c = self.byte(0);
        let indicator = self.blankz(0) || b"-?:,[]{}#&*!|>'\"%@`".contains(&c);
        !indicator
            || (c == b'-' && !self.blank(1))
            || (self.flow == 0 && matches!(c, b'?' | b':') && !self.blankz(1))
    }

    /// A block entry `- ` or an explicit key `? `: in block context, a collection starts at
    /// this column (a flow context's own keys never move the block's indentation).
    fn entry(&mut self) -> Result<(), String> {
        if self.flow == 0 {
            self.roll(self.column as isize)?;
            self.key = None;
        }
        self.skip();
        self.node()
    }

    /// A value indicator `:`: in block context, the mapping starts at its key's column.
    fn value(&mut self) -> Result<(), String> {
        if self.flow == 0 {
            match self.key.take() {
                Some(key) => {
                    self.roll(key.column as isize)?;
                    self.key_allowed = false;
                }
                None => {
                    self.roll(self.column as isize)?;
                    self.key_allowed = true;
                }
            }
        } else {
            self.key_allowed = false;
        }
        self.skip();
        self.node()
    }

    /// libyaml's `remove_simple_key` at the block level (a flow level's keys are not tracked).
    fn drop_block_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    fn save_key(&mut self) {
        if self.flow == 0 && self.key_allowed {
            self.key = Some(KeyStart {
                line: self.line,
                index: self.index,
                column: self.column,
            });
        }
    }

    fn roll(&mut self, column: isize) -> Result<(), String> {
        if self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            self.depth()?;
        }
        Ok(())
    }

    fn unroll(&mut self, column: isize) {
        if self.flow > 0 {
            return;
        }
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
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

    /// Checks the nesting: flow levels, block indentations, and the mapping a pending key
    /// would open (libyaml opens it before the key: `[a]: b` nests the flow inside it).
    fn depth(&mut self) -> Result<(), String> {
        let pending = self.key.is_some_and(|k| k.column as isize > self.indent);
        self.deepest = self
            .deepest
            .max(self.flow + self.indents.len() + usize::from(pending));
        if self.deepest > MAX_DEPTH {
            return Err(format!(
                "a template may nest collections at most {MAX_DEPTH} deep"
            ));
        }
        Ok(())
    }
}
