//! One confirm round of step messages: each step encoded once, grouped by namespace, packed
//! into broker messages of up to `steps_per_message` steps and `max_message_bytes`.

use tasker_broker::{Outgoing, topology};
use tasker_shared::StepMessage;
use tasker_shared::message::pack_batches;

use super::{Attempt, Limits, Refused};
use crate::metrics as m;

/// The broker messages of a round, and what each carries.
pub(super) struct Round<'a> {
    pub out: Vec<Outgoing>,
    /// The step attempts each message of `out` carries.
    pub carried: Vec<Vec<Attempt>>,
    /// The namespaces the round publishes to, in order of first appearance.
    pub namespaces: Vec<&'a str>,
    /// Steps whose own message is too large to send.
    pub refused: Vec<Refused>,
    /// Tracing on: a dispatch span per step of a traced task, to end with the round; each
    /// message carries its span as the parent of the handler's.
    pub spans: Vec<tasker_telemetry::Span>,
}

/// The encoded messages of one namespace's steps of one priority lane, with their indexes in
/// the published slice.
struct Group<'a> {
    namespace: &'a str,
    lane: Option<&'static str>,
    indexes: Vec<usize>,
    encoded: Vec<Vec<u8>>,
}

impl<'a> Round<'a> {
    pub fn pack(prefix: &str, limits: &Limits, messages: &'a [StepMessage]) -> Round<'a> {
        let mut spans = Vec::new();
        let groups = group(messages, &mut spans);
        let mut round = Round {
            out: Vec::new(),
            carried: Vec::new(),
            namespaces: Vec::new(),
            refused: Vec::new(),
            spans,
        };
        for Group {
            namespace: ns,
            lane,
            indexes: idx,
            encoded,
        } in groups
        {
            for packed in pack_batches(encoded, limits.steps_per_message, limits.max_message_bytes)
            {
                match packed {
                    Err((k, item)) => round.refused.push(Refused {
                        message: messages[idx[k]].clone(),
                        bytes: item.len(),
                    }),
                    Ok(batch) => {
                        metrics::histogram!(m::MESSAGE_STEPS.name).record(batch.items.len() as f64);
                        round.carried.push(
                            batch
                                .items
                                .iter()
                                .map(|&k| (messages[idx[k]].step_id, messages[idx[k]].attempt))
                                .collect(),
                        );
                        round.out.push(Outgoing {
                            queue: topology::lane_queue(prefix, ns, lane),
                            payload: batch.body,
                        });
                    }
                }
            }
            if !round.namespaces.contains(&ns) {
                round.namespaces.push(ns);
            }
        }
        round
    }
}

/// Each step encoded once (with its dispatch span's context when its task is traced), grouped
/// by namespace and priority lane in order of first appearance.
fn group<'a>(
    messages: &'a [StepMessage],
    spans: &mut Vec<tasker_telemetry::Span>,
) -> Vec<Group<'a>> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let encoded = match dispatch_span(m) {
            Some(span) => {
                let mut m = m.clone();
                m.traceparent = Some(span.traceparent());
                spans.push(span);
                serde_json::to_vec(&m)
            }
            None => serde_json::to_vec(m),
        };
        let payload = match encoded {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(step = %m.step_id, error = %e, "cannot encode step message");
                continue;
            }
        };
        let lane = m.priority.filter(|p| !p.is_normal()).map(|p| p.as_str());
        match groups
            .iter_mut()
            .find(|g| g.namespace == m.namespace && g.lane == lane)
        {
            Some(g) => {
                g.indexes.push(i);
                g.encoded.push(payload);
            }
            None => groups.push(Group {
                namespace: &m.namespace,
                lane,
                indexes: vec![i],
                encoded: vec![payload],
            }),
        }
    }
    groups
}

/// The span of a step's dispatch, a child of its task's trace, when the task has one.
fn dispatch_span(m: &StepMessage) -> Option<tasker_telemetry::Span> {
    use tasker_telemetry::attr;
    tasker_telemetry::Span::start(
        "tasker.step.dispatch",
        Some(m.traceparent.as_deref()?),
        vec![
            attr("tasker.task_id", m.task_id.to_string()),
            attr("tasker.step_id", m.step_id.to_string()),
            attr("tasker.step", m.step_name.clone()),
            attr("tasker.attempt", i64::from(m.attempt)),
        ],
    )
}
