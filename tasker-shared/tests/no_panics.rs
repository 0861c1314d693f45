//! Property tests: whatever bytes arrive — a template file, a step message, a result — loading or
//! decoding them answers `Ok` or a clear `Err`, never a panic.

use proptest::prelude::*;
use serde_json::Value;

use tasker_shared::{StepMessage, StepResult, TaskTemplate, json_check};

/// Lines a template is made of, so random documents are often close to valid.
const TEMPLATE_LINES: &[&str] = &[
    "namespace: n",
    "name: t",
    "version: '1'",
    "description: \"x\\0y\"",
    "context_schema: { type: object }",
    "steps:",
    "  - name: a",
    "  - name: b",
    "    handler: h",
    "    handler: \"\\x1b\"",
    "    depends_on: [a]",
    "    depends_on: [b]",
    "    type: decision",
    "    type: batchable",
    "    type: batch_worker",
    "    type: convergence",
    "    branches: [b]",
    "    retry: { max_attempts: 3000000000 }",
    "    retry: { max_attempts: 0, base_ms: 5, max_ms: 1 }",
    "    timeout_seconds: 10000000000000",
    "    queue_timeout_seconds: 0",
    "    on_failure: continue",
    "---",
    "- [",
    "{",
    "&a [*a]",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_template_text_loads_or_is_refused(src in ".{0,400}") {
        let _ = TaskTemplate::load(&src, "fuzz.yaml");
    }

    #[test]
    fn templates_near_valid_load_or_are_refused_with_a_message(
        lines in prop::collection::vec(prop::sample::select(TEMPLATE_LINES), 0..40)
    ) {
        let src = lines.join("\n");
        if let Err(e) = TaskTemplate::load(&src, "fuzz.yaml") {
            prop_assert!(!e.to_string().is_empty());
            prop_assert!(e.to_string().contains("fuzz.yaml"));
        }
    }

    #[test]
    fn any_bytes_decode_as_messages_or_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = serde_json::from_slice::<StepMessage>(&bytes);
        let _ = serde_json::from_slice::<StepResult>(&bytes);
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            let _ = json_check::check(&v, json_check::MAX_DEPTH);
        }
    }
}
