//! `tasker events`: send an event (it starts the tasks of the templates whose triggers match
//! it), list events, show one with what it started.

use std::process::ExitCode;

use clap::Subcommand;
use uuid::Uuid;

use tasker_client::{Client, Event, SendEvent};

use super::output;
use super::pages::{self, Listed};

#[derive(Debug, Subcommand)]
pub(super) enum EventsCommand {
    /// Send an event to NAMESPACE: every template there whose trigger (`on:`) matches it
    /// starts a task.
    Send {
        /// The namespace it is sent to.
        namespace: String,
        /// Its name (such as `order.created`).
        name: String,
        /// Its data as a JSON object, `@FILE` to read it from a file, or `-` for stdin.
        #[arg(long, default_value = "{}")]
        data: String,
        /// What it is about (a customer, an order).
        #[arg(long)]
        key: Option<String>,
        /// Your id for it: sending the same id again starts nothing new.
        #[arg(long)]
        id: Option<String>,
    },
    /// Newest first, a page at a time (`--all`: every page).
    List {
        /// Only this namespace's events.
        #[arg(long)]
        namespace: Option<String>,
        /// Only events of this name.
        #[arg(long)]
        name: Option<String>,
        /// Events per page (1 to 500).
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Start after this event (the `next` a previous page printed).
        #[arg(long)]
        before: Option<Uuid>,
        /// Every page, not just the first.
        #[arg(long)]
        all: bool,
    },
    /// One event: its data and the tasks it started (or why a template started none).
    Show {
        /// The event's id.
        id: Uuid,
    },
}

pub(super) async fn run(
    client: &Client,
    action: Option<EventsCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let action = action.unwrap_or(EventsCommand::List {
        namespace: None,
        name: None,
        limit: 20,
        before: None,
        all: false,
    });
    match action {
        EventsCommand::Send {
            namespace,
            name,
            data,
            key,
            id,
        } => {
            let data = super::args::json_arg("--data", &data)?;
            let event = SendEvent {
                namespace,
                name,
                data: Some(data),
                key,
                id,
            };
            let (event, created) = client.send_event(&event).await?;
            if json {
                output::one(&event)?;
            } else {
                if !created {
                    out!(
                        "event {} was sent already (same --id): nothing new started",
                        event.id
                    );
                }
                print(&event);
            }
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::List {
            namespace,
            name,
            limit,
            before,
            all,
        } => {
            let (namespace, name) = (namespace.as_deref(), name.as_deref());
            let fetch = |before| async move {
                let page = client.events(namespace, name, before, Some(limit)).await?;
                anyhow::Ok((page.events, page.next_before))
            };
            let every = match pages::read(before, all, json, "tasker events list", fetch).await? {
                Listed::Printed => return Ok(ExitCode::SUCCESS),
                Listed::Rows(rows) => rows,
            };
            super::table::print(
                &["ID", "RECEIVED", "NAMESPACE", "NAME", "KEY", ">STARTED"],
                every.iter().map(|e| {
                    vec![
                        e.id.to_string(),
                        super::clock::time(e.received_at),
                        e.namespace.clone(),
                        e.name.clone(),
                        e.key.clone().unwrap_or_default(),
                        e.started
                            .iter()
                            .filter(|s| s.task_id.is_some())
                            .count()
                            .to_string(),
                    ]
                }),
            );
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::Show { id } => {
            let event = client.event(id).await?;
            if json {
                output::one(&event)?;
            } else {
                print(&event);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print(e: &Event) {
    out!("event {}", e.id);
    out!("namespace   {}", e.namespace);
    out!("name        {}", e.name);
    if let Some(key) = &e.key {
        out!("key         {key}");
    }
    if let Some(id) = &e.sender_id {
        out!("sender id   {id}");
    }
    out!("received    {}", super::clock::time(e.received_at));
    out!("data        {}", e.data);
    if let Some(t) = &e.taken_by {
        out!(
            "taken by    step {} of task {} ({})",
            t.step,
            t.task_id,
            super::clock::time(t.at)
        );
    }
    if e.started.is_empty() {
        out!("started     nothing: no template's trigger matched it");
    }
    for s in &e.started {
        match (&s.task_id, &s.refused) {
            (Some(task), _) if s.debounced => {
                out!("debounced   {task} ({}: its burst's task)", s.template)
            }
            (Some(task), _) if s.deduplicated => {
                out!("deduplicated {task} ({}: its key's task)", s.template)
            }
            (Some(task), _) => out!("started     {task} ({})", s.template),
            (None, Some(why)) => out!("refused     {} ({}: {})", s.template, why.code, why.message),
            (None, None) => out!("refused     {}", s.template),
        }
    }
}
