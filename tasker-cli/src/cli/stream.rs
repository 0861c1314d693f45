//! `tasker stream TASK`: what a task's steps stream, printed as it arrives until the stream is
//! complete (docs/streams.md). Text chunks are written as they are (a token stream reads as
//! its text); `--json` prints every chunk, text or JSON, as one line of JSON. A retried step's
//! new attempt is said on stderr. A dropped connection is resumed where it stopped. With
//! `--children`, child tasks' streams are merged in (their text as it comes).

use std::io::Write;
use std::process::ExitCode;

use tasker_client::{Client, StreamQuery};
use uuid::Uuid;

/// `tasker stream` itself.
#[derive(Debug, clap::Args)]
pub(super) struct StreamArgs {
    /// The task's id.
    pub id: Uuid,
    /// Start at this offset (0: the beginning).
    #[arg(long, default_value_t = 0)]
    pub from: i64,
    /// Only this topic's chunks.
    #[arg(long)]
    pub topic: Option<String>,
    /// With the streams of the task's child tasks (`child:` steps, at any depth) merged in.
    #[arg(long)]
    pub children: bool,
}

pub(super) async fn run(client: &Client, args: StreamArgs, json: bool) -> anyhow::Result<ExitCode> {
    let q = StreamQuery {
        from: Some(args.from),
        topic: args.topic,
        limit: None,
        children: args.children,
    };
    let mut stream = client.stream(args.id, &q);
    let mut out = std::io::stdout().lock();
    let mut mid_line = false;
    loop {
        let chunk = tokio::select! {
            c = stream.next() => c?,
            _ = tokio::signal::ctrl_c() => {
                if mid_line {
                    writeln!(out)?;
                }
                eprintln!("stopped at offset {} (`tasker stream {} --from {}` goes on)",
                    stream.next_offset(), args.id, stream.next_offset());
                return Ok(ExitCode::from(130));
            }
        };
        let Some(chunk) = chunk else { break };
        if json {
            writeln!(out, "{}", serde_json::to_string(&chunk)?)?;
            out.flush()?;
            continue;
        }
        if chunk.retry {
            if mid_line {
                writeln!(out)?;
                mid_line = false;
            }
            out.flush()?;
            eprintln!(
                "[step {} started over: attempt {} streams again from here]",
                chunk.step, chunk.attempt
            );
        }
        if let Some(text) = &chunk.text {
            write!(out, "{text}")?;
            mid_line = !text.ends_with('\n');
            out.flush()?;
        }
    }
    if mid_line {
        writeln!(out)?;
    }
    Ok(ExitCode::SUCCESS)
}
