//! A request body that must keep pace: whole within `body_deadline_ms`, never silent longer
//! than `body_timeout_ms`, and at least `body_min_bytes_per_second` on average from one second
//! after it starts. A client trickling a byte every few seconds is dropped at once by the
//! rate, not after the deadline; the handler reading it gets [`SlowBody`], which the API
//! answers with 408 `body_too_slow` naming the bound.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// What a body's pace must be.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Longest silence between two parts.
    pub silence: Duration,
    /// Longest the whole body may take.
    pub deadline: Duration,
    /// Fewest bytes a second, on average, after [`GRACE`] (0: no minimum).
    pub min_rate: u64,
}

/// How long a body may take to start coming before its rate counts.
pub const GRACE: Duration = Duration::from_secs(1);

/// A body refused for its pace: which bound, and what it says.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SlowBody {
    /// The configuration key of the bound it broke.
    pub bound: &'static str,
    pub message: String,
}

/// `inner`, refused once it falls behind its [`Pace`].
#[derive(Debug)]
pub struct PacedBody<B> {
    inner: B,
    pace: Pace,
    started: Instant,
    last: Instant,
    received: u64,
    timer: Pin<Box<Sleep>>,
}

impl<B> PacedBody<B> {
    pub fn new(inner: B, pace: Pace) -> Self {
        let now = Instant::now();
        let mut body = PacedBody {
            inner,
            pace,
            started: now,
            last: now,
            received: 0,
            timer: Box::pin(tokio::time::sleep_until(now)),
        };
        let due = body.due();
        body.timer.as_mut().reset(due);
        body
    }

    /// When the body falls behind if nothing more comes: the first of its three bounds.
    fn due(&self) -> Instant {
        let mut due = (self.started + self.pace.deadline).min(self.last + self.pace.silence);
        if self.pace.min_rate > 0 {
            let allowed = Duration::from_secs_f64(self.received as f64 / self.pace.min_rate as f64);
            due = due.min(self.started + GRACE + allowed);
        }
        due
    }

    /// Which bound it broke, now that [`Self::due`] has come.
    fn refusal(&self) -> SlowBody {
        let now = Instant::now();
        let ms = |d: Duration| d.as_millis();
        if now >= self.started + self.pace.deadline {
            SlowBody {
                bound: "orchestrator.body_deadline_ms",
                message: format!(
                    "the request body did not arrive whole within {} ms \
                     (orchestrator.body_deadline_ms)",
                    ms(self.pace.deadline)
                ),
            }
        } else if now >= self.last + self.pace.silence {
            SlowBody {
                bound: "orchestrator.body_timeout_ms",
                message: format!(
                    "the request body went silent for {} ms (orchestrator.body_timeout_ms)",
                    ms(self.pace.silence)
                ),
            }
        } else {
            SlowBody {
                bound: "orchestrator.body_min_bytes_per_second",
                message: format!(
                    "the request body came slower than {} bytes a second \
                     (orchestrator.body_min_bytes_per_second): {} bytes in {} ms",
                    self.pace.min_rate,
                    self.received,
                    ms(now - self.started)
                ),
            }
        }
    }
}

impl<B> Body for PacedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                }
                this.last = Instant::now();
                let due = this.due();
                this.timer.as_mut().reset(due);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(this.refusal())))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use http_body_util::channel::{Channel, Sender};

    type Chunks = Channel<Bytes, std::convert::Infallible>;

    fn body(pace: Pace) -> (Sender<Bytes, std::convert::Infallible>, PacedBody<Chunks>) {
        let (tx, inner) = Channel::new(16);
        (tx, PacedBody::new(inner, pace))
    }

    const PACE: Pace = Pace {
        silence: Duration::from_secs(30),
        deadline: Duration::from_secs(60),
        min_rate: 1024,
    };

    async fn bound_broken(mut b: PacedBody<Chunks>) -> Option<&'static str> {
        loop {
            match b.frame().await {
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.downcast_ref::<SlowBody>().map(|s| s.bound),
                None => return None,
            }
        }
    }

    /// Sends `chunk` every `every` until the body is dropped (or `times` chunks).
    fn trickle(
        mut tx: Sender<Bytes, std::convert::Infallible>,
        chunk: usize,
        every: u64,
        times: usize,
    ) {
        tokio::spawn(async move {
            for _ in 0..times {
                if tx.send_data(Bytes::from(vec![b'x'; chunk])).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(every)).await;
            }
        });
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_is_refused_by_the_rate_long_before_the_deadline() {
        let (tx, b) = body(PACE);
        let started = Instant::now();
        trickle(tx, 1, 20, usize::MAX);
        assert_eq!(
            bound_broken(b).await,
            Some("orchestrator.body_min_bytes_per_second")
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "refused after {took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_body_passes_and_a_slow_steady_one_meets_the_deadline() {
        let (tx, b) = body(PACE);
        trickle(tx, 4096, 1, 10);
        assert_eq!(bound_broken(b).await, None);
        let (tx, b) = body(Pace {
            min_rate: 0,
            ..PACE
        });
        trickle(tx, 1, 20, usize::MAX);
        assert_eq!(bound_broken(b).await, Some("orchestrator.body_deadline_ms"));
    }

    #[tokio::test(start_paused = true)]
    async fn silence_is_refused_by_the_silence_bound() {
        let (tx, b) = body(Pace {
            min_rate: 0,
            ..PACE
        });
        trickle(tx, 1, 3600, 2);
        assert_eq!(bound_broken(b).await, Some("orchestrator.body_timeout_ms"));
    }
}
