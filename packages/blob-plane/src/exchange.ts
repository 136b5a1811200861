import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";

/**
 * The data plane between the gateway and the storage service: a request on a
 * signed blob URL (`/blobs/<token>`) and its answer, with the bytes as
 * streams — never inside an RPC message. The storage service implements
 * `ServeBlob`; the gateway calls it in process (the all-in-one process) or
 * over plain HTTP to the storage service (`remoteBlobs`), exactly as RPCs
 * go through an in-process or an HTTP transport.
 *
 * Failures are ConnectErrors (PERMISSION_DENIED for a bad token, NOT_FOUND,
 * OUT_OF_RANGE for a body over the limit, ...): the gateway's one table turns
 * them into HTTP answers.
 */
export interface BlobRequest {
  method: "GET" | "HEAD" | "PUT";
  /** The token exactly as it appears in the URL path. */
  token: string;
  /** The caller's headers (Range, If-None-Match, Content-Type, Content-Length). */
  headers: IncomingHttpHeaders;
  /** The upload's bytes, for PUT. */
  body?: Readable;
  /** Aborts when the caller goes away. */
  signal: AbortSignal;
}

export interface BlobResponse {
  status: number;
  headers: Record<string, string>;
  /** The bytes, for GET (none for HEAD, 304 or a PUT). */
  body?: Readable;
}

export type ServeBlob = (request: BlobRequest) => Promise<BlobResponse>;

/** Where blob URLs live, on the gateway and on the storage service alike. */
export const blobPathPrefix = "/blobs/";
