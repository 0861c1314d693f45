// Riding through restarts: which failures are the connection's (worth sending again), and the
// backoff between attempts (what `Client.wait` retries with).
import { ApiError, ConnectionError } from "./client_errors";

/** Answers of a gateway, or of a service restarting behind it: worth asking again. */
const RETRIED_STATUSES = new Set([502, 503, 504]);

/** Node's codes of a TLS handshake that failed on its merits (a certificate): sending again cannot help. */
const CERTIFICATE = /^(CERT_|ERR_TLS_|ERR_SSL_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_)/;

/**
 * Whether `err` is the connection's and a new attempt may succeed: no answer (refused, reset,
 * dropped, timed out; not a certificate that failed to verify), or a 502, 503 or 504. Never an
 * answer of the API refusing the request (4xx).
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof ConnectionError) {
    let cause: unknown = err.cause;
    for (let depth = 0; depth < 16 && cause instanceof Error; depth++) {
      const code = (cause as { code?: unknown }).code;
      if (typeof code === "string" && CERTIFICATE.test(code)) return false;
      cause = cause.cause;
    }
    return true;
  }
  return err instanceof ApiError && RETRIED_STATUSES.has(err.status);
}

/**
 * Delays between attempts: 100 ms doubling up to 2 s, each between half and all of its step
 * (jitter, so clients cut off together do not come back together).
 */
export class Backoff {
  static readonly FIRST_MS = 100;
  static readonly MAX_MS = 2_000;
  #step = Backoff.FIRST_MS;

  next(): number {
    const step = this.#step;
    this.#step = Math.min(step * 2, Backoff.MAX_MS);
    return step * (0.5 + Math.random() / 2);
  }

  reset(): void {
    this.#step = Backoff.FIRST_MS;
  }
}

/** Resolves after `ms`; rejects with the signal's reason as soon as it aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
