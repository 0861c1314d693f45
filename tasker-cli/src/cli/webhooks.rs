//! `tasker webhooks`: endpoints that turn requests other services sign (GitHub, Stripe, any
//! HMAC-SHA256 sender) into events of a namespace. Set one (Tasker makes its secret unless
//! given one, and prints it this once), list, show, delete.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use tasker_client::{Client, PutWebhook, Webhook, WebhookFormat};

use super::output;

#[derive(Debug, Subcommand)]
pub(super) enum WebhooksCommand {
    /// The webhooks of the namespaces your token covers.
    List,
    /// One webhook (never its secret).
    Show {
        /// The webhook's name.
        name: String,
    },
    /// Create webhook NAME, or replace all of its settings: its URL is
    /// `/v1/webhooks/NAME`, and each request signed with its secret becomes an event.
    Set {
        /// The webhook's name, the last part of its URL.
        name: String,
        /// The namespace its events go to.
        #[arg(long)]
        namespace: String,
        /// How its senders sign: generic, github or stripe.
        #[arg(long, default_value = "generic", value_parser = ["generic", "github", "stripe"])]
        format: String,
        /// The shared secret, `@FILE` to read it from a file, or `-` for stdin. Left out: a new
        /// webhook gets one made by Tasker (printed once), a saved one keeps its own.
        #[arg(long)]
        secret: Option<String>,
        /// The name of every event it makes (by default: the webhook's name,
        /// `github.<X-GitHub-Event>` or `stripe.<type>`).
        #[arg(long)]
        event: Option<String>,
        /// A JSON pointer into the body: the event's key (such as `/data/customer`).
        #[arg(long)]
        key: Option<String>,
        /// A JSON pointer into the body: the event's id (a request sent twice is one event).
        #[arg(long)]
        id: Option<String>,
        /// How far a signed timestamp may be from now (1s to 1h; `5m` by default).
        #[arg(long)]
        tolerance: Option<String>,
    },
    /// Remove a webhook: its URL answers 404 from now on.
    Delete {
        /// The webhook's name.
        name: String,
    },
}

pub(super) async fn run(
    client: &Client,
    action: Option<WebhooksCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(WebhooksCommand::List) {
        WebhooksCommand::List => {
            let hooks = client.webhooks().await?;
            if json {
                return output::list(&hooks, None::<String>).map(|()| ExitCode::SUCCESS);
            }
            super::table::print(
                &["NAME", "NAMESPACE", "FORMAT", "EVENT", ">RECEIVED", "LAST"],
                hooks.iter().map(|w| {
                    vec![
                        w.name.clone(),
                        w.namespace.clone(),
                        w.format.as_str().to_owned(),
                        w.event.clone().unwrap_or_else(|| default_event(w)),
                        w.received.to_string(),
                        w.last_received_at
                            .map(super::clock::time)
                            .unwrap_or_else(|| "-".into()),
                    ]
                }),
            );
        }
        WebhooksCommand::Show { name } => {
            let hook = client.webhook(&name).await?;
            if json {
                output::one(&hook)?;
            } else {
                print(&hook);
            }
        }
        WebhooksCommand::Set {
            name,
            namespace,
            format,
            secret,
            event,
            key,
            id,
            tolerance,
        } => {
            let spec = PutWebhook {
                namespace,
                format: WebhookFormat::parse(&format).unwrap_or_default(),
                secret: secret.map(|s| secret_arg(&s)).transpose()?,
                event,
                key,
                id,
                tolerance,
            };
            let (hook, created) = client.put_webhook(&name, &spec).await?;
            if json {
                output::one(&hook)?;
            } else {
                out!(
                    "webhook {} {}",
                    hook.name,
                    if created { "created" } else { "updated" }
                );
                print(&hook);
                if let Some(secret) = &hook.secret {
                    out!("secret      {secret}");
                    out!("            (shown this once: give it to the sender now)");
                }
            }
        }
        WebhooksCommand::Delete { name } => {
            client.delete_webhook(&name).await?;
            if !json {
                out!("webhook {name} removed");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--secret`: the value, `@FILE`'s first line, or stdin's.
pub(super) fn secret_arg(value: &str) -> anyhow::Result<String> {
    let text = if value == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading stdin")?
    } else if let Some(path) = value.strip_prefix('@') {
        std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?
    } else {
        return Ok(value.to_owned());
    };
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

fn default_event(w: &Webhook) -> String {
    match w.format {
        WebhookFormat::Generic => w.name.clone(),
        WebhookFormat::Github => "github.<X-GitHub-Event>".into(),
        WebhookFormat::Stripe => "stripe.<type>".into(),
    }
}

fn print(w: &Webhook) {
    out!("url         /v1/webhooks/{}", w.name);
    out!("namespace   {}", w.namespace);
    out!("format      {}", w.format.as_str());
    out!(
        "event       {}",
        w.event.clone().unwrap_or_else(|| default_event(w))
    );
    if let Some(key) = &w.key {
        out!("key         {key}");
    }
    if let Some(id) = &w.id {
        out!("id          {id}");
    }
    if w.format != WebhookFormat::Github {
        // GitHub signs no time: its redeliveries are one event by their delivery id.
        out!("tolerance   {}s", w.tolerance_seconds);
    }
    out!("received    {}", w.received);
    if let Some(at) = w.last_received_at {
        out!("last        {}", super::clock::time(at));
    }
}
