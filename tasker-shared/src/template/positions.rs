//! Where each step is in a template's text, so a problem found after parsing points at its line.

/// Line numbers of `- name: X` entries, so semantic errors can point into the file.
#[derive(Debug, Default)]
pub(super) struct StepLines(Vec<(String, usize)>);

impl StepLines {
    pub(super) fn scan(src: &str) -> StepLines {
        let mut in_steps = false;
        let mut found = Vec::new();
        for (i, raw) in src.lines().enumerate() {
            if !raw.starts_with([' ', '\t', '-']) && !raw.trim().is_empty() {
                in_steps = raw.trim_end().starts_with("steps:");
                continue;
            }
            if !in_steps {
                continue;
            }
            let t = raw.trim_start().trim_start_matches('-').trim_start();
            if let Some(rest) = t.strip_prefix("name:") {
                let value = rest.trim().trim_matches(|c| c == '"' || c == '\'');
                found.push((value.to_owned(), i + 1));
            }
        }
        StepLines(found)
    }

    /// Line of the `index`-th step, if it is the one called `name`.
    pub(super) fn line(&self, name: &str, index: usize) -> Option<usize> {
        self.0
            .get(index)
            .filter(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .or_else(|| self.0.iter().find(|(n, _)| n == name).map(|(_, l)| *l))
    }
}
