import { Code, ConnectError } from "@connectrpc/connect";

/** How many times a call to storage is tried before the job fails (docs/decisions.md, "Ingest jobs"). */
export const storageAttempts = 3;

/** Codes that say the peer or the way to it failed, not the request: worth trying again. */
const passing = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Internal, Code.Unknown, Code.Aborted]);

/** A failure the job cannot get past: it ends FAILED with `message` in its status_detail. */
export class JobFailure extends Error {
  override name = "JobFailure";
}

/**
 * `call`, tried up to {@link storageAttempts} times, 0.5 s then 1 s apart, while it fails in a way that may pass
 * (storage down, a network error); the last failure becomes a {@link JobFailure} saying what could not be done.
 */
export async function withStorageRetries<T>(what: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const code = error instanceof ConnectError ? error.code : undefined;
      const mayPass = code === undefined || passing.has(code);
      if (!mayPass) throw error;
      if (attempt >= storageAttempts)
        throw new JobFailure(
          `storage did not answer (${what}) after ${storageAttempts} attempts: ${(error as Error).message}`,
          { cause: error },
        );
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}
