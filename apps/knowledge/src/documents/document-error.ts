/**
 * A file that cannot be read into chunks. The ingest job reports it in the job's per-file `errors` and goes on with the
 * next file: `message` is written for the person who uploaded the file.
 */
export type DocumentErrorReason = "unsupported_type" | "too_large" | "unreadable" | "no_text";

export class DocumentError extends Error {
  override name = "DocumentError";
  readonly reason: DocumentErrorReason;
  constructor(reason: DocumentErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}
