//! A parsed template checked as a whole and compiled: its fields and steps, its graph (known
//! dependencies, no cycle), decisions and their branches, batchable steps and their workers, and
//! its context schema.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::checks::{check_identifier, check_policy, check_text};
use super::positions::Positions;
use super::{Error, ErrorKind, FailurePolicy, Loaded, StepType, TaskTemplate, limits};
use crate::dag::{self, Dag};

/// Where problems are reported: the file, and each step's position in its text (read by the
/// YAML parser only once a problem needs it: a valid template is parsed once).
struct At<'a> {
    file: &'a str,
    src: Option<&'a str>,
    positions: OnceLock<Positions>,
}

impl At<'_> {
    /// A problem of the template as a whole.
    fn err(&self, kind: ErrorKind) -> Error {
        Error::of_file(self.file, kind)
    }

    /// Where step `i` (called `name`) is, when the template came as text.
    fn position(&self, name: &str, i: usize) -> Option<super::Position> {
        let src = self.src?;
        self.positions
            .get_or_init(|| Positions::scan(src))
            .step(name, i)
    }

    /// A problem of step `i` (called `name`), at its position.
    fn step(&self, name: &str, i: usize, kind: ErrorKind) -> Error {
        Error::at(self.file, self.position(name, i), kind)
    }
}

impl TaskTemplate {
    /// `src`: the text it was parsed from, if any (for the positions of problems).
    pub(super) fn compile(self, file: &str, src: Option<&str>) -> Result<Loaded, Error> {
        let at = At {
            file,
            src,
            positions: OnceLock::new(),
        };
        self.check_header().map_err(|k| at.err(k))?;
        let first_seen = self.check_steps(&at)?;
        let dag = self.graph(&at, &first_seen)?;
        self.check_branches(&at, &dag, &first_seen)?;
        self.check_batches(&at, &dag)?;
        let schema = match &self.context_schema {
            None => None,
            Some(schema) => Some(Arc::new(
                jsonschema::validator_for(schema)
                    .map_err(|e| at.err(ErrorKind::ContextSchema(e.to_string())))?,
            )),
        };
        let triggers = crate::triggers::compile(&self.triggers).map_err(|p| {
            at.err(ErrorKind::InvalidField {
                field: p.field,
                problem: p.problem,
            })
        })?;
        Ok(Loaded {
            template: self,
            dag,
            schema,
            triggers: triggers.into(),
            source: PathBuf::from(file),
        })
    }

    /// The task's own fields: its identifiers, the number of its steps, its description, its
    /// context schema's shape.
    fn check_header(&self) -> Result<(), ErrorKind> {
        for (field, value) in [
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("version", &self.version),
        ] {
            check_identifier(field, value)?;
        }
        if self.steps.is_empty() {
            return Err(ErrorKind::NoSteps);
        }
        if self.steps.len() > limits::MAX_STEPS {
            return Err(ErrorKind::InvalidField {
                field: "steps".into(),
                problem: format!(
                    "at most {} steps per template (got {})",
                    limits::MAX_STEPS,
                    self.steps.len()
                ),
            });
        }
        let children = self.steps.iter().filter(|s| s.child.is_some()).count();
        if children > limits::MAX_CHILD_STEPS {
            return Err(ErrorKind::InvalidField {
                field: "steps".into(),
                problem: format!(
                    "at most {} child steps (`child:`) per template (got {children})",
                    limits::MAX_CHILD_STEPS
                ),
            });
        }
        if let Some(d) = &self.description {
            check_text("description", d)?;
        }
        if let Some(c) = &self.concurrency {
            c.check("concurrency")
                .map_err(super::checks::flow_problem)?;
        }
        if let Some(r) = &self.rate_limit {
            r.check("rate_limit").map_err(super::checks::flow_problem)?;
        }
        if let Some(d) = &self.deadline {
            d.check().map_err(|e| ErrorKind::InvalidField {
                field: e.field,
                problem: e.problem,
            })?;
        }
        if let Some(schema) = &self.context_schema
            && let Err(problem) = crate::json_check::check(schema, crate::json_check::MAX_DEPTH)
        {
            return Err(ErrorKind::InvalidField {
                field: "context_schema".into(),
                problem: problem.to_string(),
            });
        }
        Ok(())
    }

    /// Each step on its own: its name (once), its handler, its policies. Returns each name's
    /// index.
    fn check_steps(&self, at: &At<'_>) -> Result<HashMap<&str, usize>, Error> {
        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let problem = |kind| at.step(&step.name, i, kind);
            check_identifier("step name", &step.name).map_err(problem)?;
            check_handler_or_wait(step).map_err(problem)?;
            if let Some(&first) = first_seen.get(step.name.as_str()) {
                return Err(problem(ErrorKind::DuplicateStep {
                    name: step.name.clone(),
                    first_line: at.position(&step.name, first).map_or(0, |p| p.line),
                }));
            }
            first_seen.insert(&step.name, i);
            check_policy(step).map_err(problem)?;
        }
        Ok(first_seen)
    }

    /// The steps' graph: every dependency a known step, no cycle.
    fn graph(&self, at: &At<'_>, first_seen: &HashMap<&str, usize>) -> Result<Dag, Error> {
        Dag::build(
            self.steps
                .iter()
                .map(|s| (s.name.as_str(), s.depends_on.iter().map(String::as_str))),
        )
        .map_err(|e| match e {
            dag::Error::UnknownDependency { step, dependency } => {
                let i = first_seen[step.as_str()];
                at.step(
                    &step.clone(),
                    i,
                    ErrorKind::UnknownDependency { step, dependency },
                )
            }
            // At the cycle's first step.
            dag::Error::Cycle(cycle) => {
                match cycle.first().and_then(|s| first_seen.get(s.as_str())) {
                    Some(&i) => at.step(&cycle[0].clone(), i, ErrorKind::Cycle(cycle)),
                    None => at.err(ErrorKind::Cycle(cycle)),
                }
            }
        })
    }

    /// Decisions declare branches, each a step that depends on the decision; no other step
    /// declares any.
    fn check_branches(
        &self,
        at: &At<'_>,
        dag: &Dag,
        first_seen: &HashMap<&str, usize>,
    ) -> Result<(), Error> {
        for (i, step) in self.steps.iter().enumerate() {
            let name = || step.name.clone();
            let problem = |kind| Err(at.step(&step.name, i, kind));
            match step.step_type {
                StepType::Decision if step.branches.is_empty() => {
                    return problem(ErrorKind::DecisionWithoutBranches { step: name() });
                }
                StepType::Decision => {
                    for branch in &step.branches {
                        let Some(&b) = first_seen.get(branch.as_str()) else {
                            return problem(ErrorKind::UnknownBranch {
                                step: name(),
                                branch: branch.clone(),
                            });
                        };
                        if !dag.parents(b).contains(&i) {
                            return problem(ErrorKind::BranchNotChild {
                                step: name(),
                                branch: branch.clone(),
                            });
                        }
                    }
                }
                _ if !step.branches.is_empty() => {
                    return problem(ErrorKind::BranchesOnNonDecision { step: name() });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A batch worker depends on exactly one batchable step, which has exactly one batch
    /// worker; only a batch worker may say `on_failure: continue`.
    fn check_batches(&self, at: &At<'_>, dag: &Dag) -> Result<(), Error> {
        let kind_of = |j: usize| self.steps[j].step_type;
        for (i, step) in self.steps.iter().enumerate() {
            let name = || step.name.clone();
            let problem = |kind| Err(at.step(&step.name, i, kind));
            if step.on_failure != FailurePolicy::FailTask && step.step_type != StepType::BatchWorker
            {
                return problem(ErrorKind::FailurePolicyOnNonBatch { step: name() });
            }
            match step.step_type {
                StepType::BatchWorker => {
                    let parents = dag.parents(i);
                    if parents.len() != 1 || kind_of(parents[0]) != StepType::Batchable {
                        return problem(ErrorKind::BatchWorkerParent { step: name() });
                    }
                }
                StepType::Batchable => {
                    let found = dag
                        .children(i)
                        .iter()
                        .filter(|&&c| kind_of(c) == StepType::BatchWorker)
                        .count();
                    if found != 1 {
                        return problem(ErrorKind::BatchableChildren {
                            step: name(),
                            found,
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A step has a handler, or is a wait step (`wait:`) or a child step (`child:`) with none; such
/// a step is plain otherwise, and goes to no worker (no `namespace:` or queue timeout).
fn check_handler_or_wait(step: &super::StepTemplate) -> Result<(), ErrorKind> {
    let invalid = |field: &str, problem: &str| {
        Err(ErrorKind::InvalidField {
            field: format!("steps.{}.{field}", step.name),
            problem: problem.into(),
        })
    };
    if let Some(ns) = &step.namespace {
        check_identifier(&format!("steps.{}.namespace", step.name), ns)?;
    }
    let (kind, own_type) = match (&step.wait, &step.child) {
        (None, None) => {
            if step.handler.trim().is_empty() {
                return invalid("handler", "must not be empty");
            }
            if step.handler.starts_with("tasker:") {
                return invalid("handler", "must not start with `tasker:` (reserved)");
            }
            if step.step_type == StepType::Wait {
                return invalid("type", "`wait` needs a `wait:` (sleep, until or signal)");
            }
            if step.step_type == StepType::Child {
                return invalid("type", "`child` needs a `child:` (the template to start)");
            }
            return Ok(());
        }
        (Some(_), Some(_)) => {
            return invalid(
                "child",
                "a step waits (`wait:`) or starts a child (`child:`), not both",
            );
        }
        (Some(_), None) => ("wait", StepType::Wait),
        (None, Some(_)) => ("child", StepType::Child),
    };
    if !step.handler.is_empty() {
        return invalid(
            "handler",
            &format!("must not be given for a {kind} step: the orchestrator resolves it"),
        );
    }
    if !matches!(step.step_type, StepType::Standard) && step.step_type != own_type {
        return invalid(
            "type",
            &format!("a {kind} step is not a decision, convergence or batch step"),
        );
    }
    if step.queue_timeout_seconds.is_some() {
        return invalid(
            "queue_timeout_seconds",
            &format!("does not apply to a {kind} step: no worker runs it"),
        );
    }
    if step.namespace.is_some() {
        return invalid(
            "namespace",
            &format!("does not apply to a {kind} step: no worker runs it"),
        );
    }
    for (field, given) in [
        ("concurrency", step.concurrency.is_some()),
        ("rate_limit", step.rate_limit.is_some()),
    ] {
        if given {
            return invalid(
                field,
                &format!("does not apply to a {kind} step: no worker runs it"),
            );
        }
    }
    let field = |field: String, problem: String| ErrorKind::InvalidField { field, problem };
    if let Some(child) = &step.child {
        return child
            .check(&format!("steps.{}.child", step.name), &step.depends_on)
            .map_err(|p| field(p.field, p.problem));
    }
    let wait = step.wait.as_ref().expect("a wait step");
    wait.compile(&format!("steps.{}.wait", step.name))
        .map(|_| ())
        .map_err(|e| field(e.field, e.problem))
}
