//! Templates and schedules parsed in a child process killed at its budget
//! (`tasker_shared::template::child`), with this test program as the child, as Tasker's
//! binaries are: its `main` answers the hidden argument first.

use std::time::{Duration, Instant};

use tasker_shared::template::child::{self, PARSE_BUDGET};
use tasker_shared::template::{ErrorKind, TaskTemplate};

const GOOD: &str = "namespace: shop\nname: order\nversion: 1.0.0\nsteps:\n  - name: a\n    \
                    handler: h\n  - name: b\n    handler: h\n    depends_on: [a]\n";

fn main() {
    child::serve_if_asked();
    a_template_parsed_in_a_child_is_the_one_parsed_here();
    its_problems_keep_their_file_and_line();
    a_parse_past_its_budget_is_stopped_and_its_process_is_gone();
    schedules_are_parsed_the_same_way();
    println!("parse_child: 4 passed");
}

fn a_template_parsed_in_a_child_is_the_one_parsed_here() {
    let here = TaskTemplate::load(GOOD, "a.yaml").expect("valid");
    let there = child::load_template(GOOD, "a.yaml", PARSE_BUDGET).expect("valid");
    assert_eq!(here.template, there.template);
    assert_eq!(there.dag.len(), 2);
    let both = child::load_templates(
        vec![
            ("a.yaml".into(), GOOD.into()),
            ("b.yaml".into(), GOOD.replace("order", "refund")),
        ],
        PARSE_BUDGET,
    );
    assert_eq!(both.len(), 2);
    assert_eq!(both[1].as_ref().expect("valid").template.name, "refund");
}

fn its_problems_keep_their_file_and_line() {
    let bad = GOOD.replace("depends_on: [a]", "depends_on: [z]");
    let e = child::load_template(&bad, "bad.yaml", PARSE_BUDGET).expect_err("unknown step");
    assert_eq!(
        e,
        TaskTemplate::load(&bad, "bad.yaml").expect_err("unknown step")
    );
    assert_eq!((e.file.as_str(), e.line), ("bad.yaml", Some(7)), "{e}");
    let deep = format!("{GOOD}x: {}", "[".repeat(100));
    let e = child::load_template(&deep, "deep.yaml", PARSE_BUDGET).expect_err("too deep");
    assert_eq!(e.line, Some(10), "{e}");
}

/// The processes this one started that are still there (reaped or not).
fn children() -> Vec<String> {
    let mut all = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("procfs") {
        let path = task.expect("a thread").path().join("children");
        let listed = std::fs::read_to_string(path).unwrap_or_default();
        all.extend(listed.split_whitespace().map(str::to_owned));
    }
    all
}

fn a_parse_past_its_budget_is_stopped_and_its_process_is_gone() {
    // Valid, within the pre-scan's bounds, and far longer to parse than 10 ms.
    let values: Vec<String> = (0..45_000).map(|i| i.to_string()).collect();
    let big = format!("{GOOD}context_schema: {{enum: [{}]}}\n", values.join(", "));
    let budget = Duration::from_millis(10);
    let started = Instant::now();
    let e = child::load_template(&big, "big.yaml", budget).expect_err("stopped");
    let took = started.elapsed();
    assert_eq!(e.kind, ErrorKind::TooSlow(10), "{e}");
    assert!(e.to_string().contains("took longer than 10 ms"), "{e}");
    assert!(took < Duration::from_secs(1), "answered after {took:?}");
    assert_eq!(
        children(),
        Vec::<String>::new(),
        "a parser outlived its budget"
    );
    // The same text with time enough.
    assert!(child::load_template(&big, "big.yaml", PARSE_BUDGET * 10).is_ok());
}

fn schedules_are_parsed_the_same_way() {
    let spec = "namespace: shop\nname: nightly\ntemplate: order\ncron: '0 3 * * *'\n";
    let parsed = child::parse_schedules(vec![("s.yaml".into(), spec.into())], PARSE_BUDGET);
    let here = tasker_shared::time::parse_schedule(spec, "s.yaml");
    assert_eq!(parsed.len(), 1);
    assert_eq!(
        parsed[0].as_ref().ok(),
        here.as_ref().ok(),
        "{parsed:?} {here:?}"
    );
    assert!(here.is_ok(), "{here:?}");
}
