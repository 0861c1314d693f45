//! Which namespaces a credential covers: a list of patterns, each a namespace name in which `*`
//! stands for any run of characters (`shop`, `shop_*`, `*`). A token scoped to namespaces and
//! the broker user that speaks for it may touch the tasks, steps, templates and dead letters of
//! those namespaces only.

use std::fmt;

/// Most patterns one credential may list.
pub const MAX_PATTERNS: usize = 64;

/// A non-empty list of namespace patterns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Patterns(Vec<String>);

/// A pattern list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("no namespace pattern given")]
    Empty,
    #[error("at most {MAX_PATTERNS} namespace patterns")]
    TooMany,
    #[error(
        "{0:?} is not a namespace pattern: 1 to 128 ASCII letters, digits, `_`, `-`, `.` and `*`"
    )]
    Invalid(String),
}

impl Patterns {
    /// Patterns from a list (a comma-separated one is split by [`Patterns::parse`]).
    pub fn new<I, S>(patterns: I) -> Result<Patterns, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut list: Vec<String> = patterns.into_iter().map(Into::into).collect();
        if list.is_empty() {
            return Err(Error::Empty);
        }
        if list.len() > MAX_PATTERNS {
            return Err(Error::TooMany);
        }
        for p in &list {
            let fits = !p.is_empty()
                && p.len() <= 128
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'));
            if !fits {
                return Err(Error::Invalid(p.clone()));
            }
        }
        list.sort();
        list.dedup();
        Ok(Patterns(list))
    }

    /// Patterns from `a,b_*` (spaces around the commas are ignored).
    pub fn parse(list: &str) -> Result<Patterns, Error> {
        Self::new(
            list.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned),
        )
    }

    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// Whether `namespace` matches one of the patterns.
    pub fn covers(&self, namespace: &str) -> bool {
        self.0
            .iter()
            .any(|p| glob(p.as_bytes(), namespace.as_bytes()))
    }

    /// Whether every namespace these patterns match is matched by `other` too (so a token
    /// scoped by `other` may hand out a token scoped by these). Conservative: a pattern with
    /// `*` is inside `other` only if `other` has a pattern that matches it read literally and
    /// whose own `*`s cover it (`shop_*` is inside `shop_*` and `*`, not inside `shop_a`).
    pub fn within(&self, other: &Patterns) -> bool {
        self.0.iter().all(|p| {
            other
                .0
                .iter()
                .any(|o| glob(o.as_bytes(), p.as_bytes()) && (!p.contains('*') || o.contains('*')))
        })
    }

    /// A PostgreSQL regular expression (ARE) that matches exactly the namespaces these
    /// patterns cover; namespaces hold no character the expression treats specially but `.`,
    /// which is escaped.
    pub fn to_regex(&self) -> String {
        let alternatives: Vec<String> = self
            .0
            .iter()
            .map(|p| p.replace('.', "\\.").replace('*', ".*"))
            .collect();
        format!("^(?:{})$", alternatives.join("|"))
    }
}

impl fmt::Display for Patterns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of bytes (iterative, linear in
/// practice: the last `*` is the only backtracking point).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_cover_names_with_stars_as_any_run() {
        let p = Patterns::parse("shop, billing_*,*.eu").unwrap();
        for ns in ["shop", "billing_", "billing_refunds", "x.eu", ".eu"] {
            assert!(p.covers(ns), "{ns}");
        }
        for ns in ["shop2", "billing", "shop.us", "eu", "xshop"] {
            assert!(!p.covers(ns), "{ns}");
        }
        assert!(Patterns::parse("*").unwrap().covers("anything.at_all"));
        assert!(Patterns::parse("a*b*c").unwrap().covers("aXbYbZc"));
        assert!(!Patterns::parse("a*b*c").unwrap().covers("aXbYbZ"));
    }

    #[test]
    fn bad_patterns_are_refused_by_name() {
        assert_eq!(Patterns::parse(""), Err(Error::Empty));
        assert_eq!(Patterns::parse(" , "), Err(Error::Empty));
        assert_eq!(
            Patterns::parse("ok,no way"),
            Err(Error::Invalid("no way".into()))
        );
        assert!(matches!(
            Patterns::parse("a|b"),
            Err(Error::Invalid(p)) if p == "a|b"
        ));
        let many: Vec<String> = (0..65).map(|i| format!("n{i}")).collect();
        assert_eq!(Patterns::new(many), Err(Error::TooMany));
    }

    #[test]
    fn the_regex_matches_what_the_patterns_cover() {
        let p = Patterns::parse("a.b,c_*").unwrap();
        assert_eq!(p.to_regex(), r"^(?:a\.b|c_.*)$");
    }

    #[test]
    fn a_scope_is_within_another_only_if_every_name_it_covers_is_covered() {
        let team = Patterns::parse("shop_*").unwrap();
        assert!(Patterns::parse("shop_a,shop_b").unwrap().within(&team));
        assert!(Patterns::parse("shop_*").unwrap().within(&team));
        assert!(!Patterns::parse("shop").unwrap().within(&team));
        assert!(!Patterns::parse("*").unwrap().within(&team));
        assert!(team.within(&Patterns::parse("*").unwrap()));
        assert!(!team.within(&Patterns::parse("shop_a").unwrap()));
    }
}
