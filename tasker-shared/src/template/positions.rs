//! Where things are in a template's (or schedule's) text, from the YAML parser's own positions
//! (block and flow style alike), so a problem found after parsing points at its line and column.

use saphyr_parser::{Event, Parser};

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// The entries of the top-level `steps` sequence in order, each with its `name` (when a plain
/// scalar) and where it starts; and where each top-level key is.
#[derive(Debug, Default)]
pub(crate) struct Positions {
    steps: Vec<(Option<String>, Position)>,
    keys: Vec<(String, Position)>,
}

/// What a mapping or sequence is, as far as positions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Top,
    Steps,
    Step,
    Other,
}

/// An open mapping or sequence: for a mapping, whether a key comes next and the last key read.
struct Frame {
    map: bool,
    key_next: bool,
    key: Option<String>,
    role: Role,
}

impl Positions {
    /// Reads `src` with the YAML parser; stops quietly at a syntax error (the deserializer reports
    /// those, with their own position).
    pub(crate) fn scan(src: &str) -> Positions {
        let mut found = Positions::default();
        let mut stack: Vec<Frame> = Vec::new();
        for item in Parser::new_from_str(src) {
            let Ok((event, span)) = item else { break };
            // The parser's lines count from 1, its columns from 0.
            let at = Position {
                line: span.start.line(),
                column: span.start.col() + 1,
            };
            match event {
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let map = matches!(event, Event::MappingStart(..));
                    let role = match stack.last() {
                        None if map => Role::Top,
                        Some(f)
                            if f.role == Role::Top && f.key.as_deref() == Some("steps") && !map =>
                        {
                            Role::Steps
                        }
                        Some(f) if f.role == Role::Steps && map => {
                            found.steps.push((None, at));
                            Role::Step
                        }
                        _ => Role::Other,
                    };
                    if let Some(parent) = stack.last_mut() {
                        parent.read_value(None);
                    }
                    stack.push(Frame {
                        map,
                        key_next: true,
                        key: None,
                        role,
                    });
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                Event::Scalar(value, ..) => {
                    let Some(f) = stack.last_mut() else { continue };
                    if f.map && f.key_next && f.role == Role::Top {
                        found.keys.push((value.to_string(), at));
                    }
                    let is_name =
                        f.role == Role::Step && !f.key_next && f.key.as_deref() == Some("name");
                    if is_name && let Some(step) = found.steps.last_mut() {
                        step.0 = Some(value.to_string());
                    }
                    f.read_value(Some(value.into_owned()));
                }
                Event::Alias(_) => {
                    if let Some(f) = stack.last_mut() {
                        f.read_value(None);
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// Where the `index`-th step starts, if it is the one called `name` (else the first step
    /// called `name`).
    pub(crate) fn step(&self, name: &str, index: usize) -> Option<Position> {
        let named = |(n, _): &&(Option<String>, Position)| n.as_deref() == Some(name);
        self.steps
            .get(index)
            .filter(named)
            .or_else(|| self.steps.iter().find(named))
            .map(|(_, p)| *p)
    }

    /// Where the top-level key `key` is.
    pub(crate) fn key(&self, key: &str) -> Option<Position> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, p)| *p)
    }
}

impl Frame {
    /// A node read inside this frame: in a mapping, a key (kept, when a scalar) or its value.
    fn read_value(&mut self, scalar: Option<String>) {
        if self.map {
            if self.key_next {
                self.key = scalar;
            }
            self.key_next = !self.key_next;
        }
    }
}
