//! Completions: one LISTEN connection for the whole generator, each task's completion
//! handed to whoever waits for it.

use super::*;

/// Task completions, from the orchestrator's `tasker_task_finished` notifications on one LISTEN
/// connection. A completion may arrive before its create request returned; it waits here.
#[derive(Clone)]
pub(crate) struct Completions(pub(crate) Arc<Mutex<HashMap<Uuid, Entry>>>);

pub(crate) enum Entry {
    Waiting(oneshot::Sender<String>),
    Done(String),
}

impl Completions {
    pub(crate) async fn listen(database_url: &str) -> anyhow::Result<Completions> {
        let mut listener = PgListener::connect(database_url).await?;
        listener.listen("tasker_task_finished").await?;
        let map: Arc<Mutex<HashMap<Uuid, Entry>>> = Arc::default();
        let shared = map.clone();
        tokio::spawn(async move {
            while let Ok(n) = listener.recv().await {
                let Some((id, state)) = n.payload().split_once(':') else {
                    continue;
                };
                let Ok(id) = id.parse::<Uuid>() else { continue };
                let mut map = shared.lock().unwrap();
                match map.remove(&id) {
                    Some(Entry::Waiting(tx)) => {
                        let _ = tx.send(state.to_owned());
                    }
                    _ => {
                        map.insert(id, Entry::Done(state.to_owned()));
                    }
                }
            }
        });
        Ok(Completions(map))
    }

    pub(crate) async fn wait(&self, id: Uuid, timeout: Duration) -> anyhow::Result<String> {
        let rx = {
            let mut map = self.0.lock().unwrap();
            if let Some(Entry::Done(state)) = map.remove(&id) {
                return Ok(state);
            }
            let (tx, rx) = oneshot::channel();
            map.insert(id, Entry::Waiting(tx));
            rx
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(state)) => Ok(state),
            _ => anyhow::bail!("task {id} did not finish within {timeout:?}"),
        }
    }
}
