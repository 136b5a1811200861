import { Counter, metricsRegistry } from "@loom/telemetry/metrics";

/** The storage service's series (infra/README.md, "Metrics and alerts"), in the process's one registry. */
export const blobBytesReceived = new Counter({
  name: "loom_blob_received_bytes_total",
  help: "Asset bytes stored by uploads through signed URLs",
  registers: [metricsRegistry],
});

export const blobBytesSent = new Counter({
  name: "loom_blob_sent_bytes_total",
  help: "Asset bytes answered to downloads through signed URLs (a download cut off counts whole; redirects to S3 count nothing)",
  registers: [metricsRegistry],
});
