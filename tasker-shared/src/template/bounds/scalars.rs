//! The scalars and tags of the pre-scan: where each ends, as libyaml's scanner finds it.

use super::Scan;

impl Scan<'_> {
    /// A tag (`!!str`, `!local`, `!<verbatim>`): URI characters, `'` and `*` among them.
    pub(super) fn tag(&mut self) {
        self.skip();
        let verbatim = self.byte(0) == b'<';
        if verbatim {
            self.skip();
        }
        loop {
            let c = self.byte(0);
            let uri = c.is_ascii_alphanumeric() || b"-_;/?:@&=+$.%!~*'()".contains(&c);
            if !(uri || (verbatim && matches!(c, b',' | b'[' | b']'))) || self.is_end() {
                break;
            }
            self.skip();
        }
        if verbatim && self.byte(0) == b'>' {
            self.skip();
        }
    }

    /// A single- or double-quoted scalar, to its closing quote (over lines).
    pub(super) fn quoted(&mut self, quote: u8) {
        self.skip();
        loop {
            if self.is_end() || self.document_marker() {
                // The parser stops with an error.
                return;
            }
            while !self.blankz(0) {
                let c = self.byte(0);
                if quote == b'\'' && c == b'\'' && self.byte(1) == b'\'' {
                    self.skip();
                    self.skip();
                } else if c == quote {
                    self.skip();
                    return;
                } else if quote == b'"' && c == b'\\' && self.break_len(1) > 0 {
                    self.skip();
                    self.skip_break();
                    break;
                } else if quote == b'"' && c == b'\\' {
                    self.skip();
                    if !self.is_end() {
                        self.skip();
                    }
                } else {
                    self.skip();
                }
            }
            while self.blank(0) || self.break_len(0) > 0 {
                if self.blank(0) {
                    self.skip();
                } else {
                    self.skip_break();
                }
            }
        }
    }

    /// A plain scalar: it ends at `: `, ` #`, a flow indicator in flow context, or a line
    /// less indented than its block (in block context).
    pub(super) fn plain(&mut self) {
        let indent = self.indent + 1;
        loop {
            if self.document_marker() || self.byte(0) == b'#' {
                return;
            }
            while !self.blankz(0) {
                let c = self.byte(0);
                let ends = (c == b':' && self.blankz(1))
                    || (self.flow > 0 && b",[]{}".contains(&c))
                    || (self.flow > 0 && c == b':' && b",?[]{}".contains(&self.byte(1)));
                if ends {
                    return;
                }
                self.skip();
            }
            if !(self.blank(0) || self.break_len(0) > 0) {
                return;
            }
            let mut broke = false;
            while self.blank(0) || self.break_len(0) > 0 {
                if self.blank(0) {
                    self.skip();
                } else {
                    self.skip_break();
                    broke = true;
                }
            }
            if broke {
                self.key_allowed = true;
            }
            if self.flow == 0 && (self.column as isize) < indent {
                return;
            }
        }
    }

    /// A literal (`|`) or folded (`>`) scalar: its header, then every line indented at least
    /// as its content (found from its first non-empty line, or given by the header's digit).
    pub(super) fn block_scalar(&mut self) {
        self.skip();
        let mut increment = 0isize;
        for _ in 0..2 {
            match self.byte(0) {
                b'+' | b'-' => self.skip(),
                d @ b'1'..=b'9' => {
                    increment = isize::from(d - b'0');
                    self.skip();
                }
                _ => {}
            }
        }
        while self.blank(0) {
            self.skip();
        }
        if self.byte(0) == b'#' {
            self.skip_to_break();
        }
        if self.break_len(0) == 0 {
            // No line break after the header: the parser stops with an error.
            return;
        }
        self.skip_break();
        let mut content = if increment == 0 {
            0
        } else if self.indent >= 0 {
            self.indent + increment
        } else {
            increment
        };
        if !self.scalar_breaks(&mut content) {
            return;
        }
        while self.column as isize == content && !self.is_end() {
            self.skip_to_break();
            if self.break_len(0) == 0 {
                return;
            }
            self.skip_break();
            if !self.scalar_breaks(&mut content) {
                return;
            }
        }
    }

    /// libyaml's `scan_block_scalar_breaks`: the indentation and empty lines before a line of
    /// content; settles the content's indentation when not known yet. False where the parser
    /// stops with an error (a tab in the indentation).
    fn scalar_breaks(&mut self, content: &mut isize) -> bool {
        let mut most = 0isize;
        loop {
            while (*content == 0 || (self.column as isize) < *content) && self.byte(0) == b' ' {
                self.skip();
            }
            most = most.max(self.column as isize);
            if (*content == 0 || (self.column as isize) < *content) && self.byte(0) == b'\t' {
                return false;
            }
            if self.break_len(0) == 0 {
                break;
            }
            self.skip_break();
        }
        if *content == 0 {
            *content = most.max(self.indent + 1).max(1);
        }
        true
    }
}
