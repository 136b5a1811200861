import { limitSettings } from "@loom/gateway/config";
import { identitySettings, requireBillingUrls, requireOidcClaims } from "@loom/identity/config";
import { embeddingSettings } from "@loom/knowledge/embedding-models";
import { ingestSettings } from "@loom/knowledge/ingest/limits";
import { searchSettings } from "@loom/knowledge/query/search-model";
import { runSettings } from "@loom/runs/config";
import { env, httpSettings } from "@loom/runtime/config";
import { storageSettings } from "@loom/storage/config";
import { secretsSettings, toolCallSettings } from "@loom/tools/config";
import { z } from "zod";

/** Where the records are: read by the process and by its operator commands (`pnpm loom`). */
export const dataSettings = {
  /**
   * Where this process keeps its data: `loom.db` (SQLite: every service's
   * records, unless MONGODB_URL is set), `blobs/` (asset bytes on local disk,
   * unless BLOB_DIR or S3_BUCKET says otherwise), `signing-key` and `secrets-key`.
   */
  LOOM_DATA_DIR: z.string().min(1).default("./.loom"),
  /** Set: records live in MongoDB (several processes may share it) instead of the data directory's SQLite file. */
  MONGODB_URL: env.mongoUrl().optional(),
  MONGODB_DB_PREFIX: z.string().default("loom_"),
};

/** The all-in-one process: embedded defaults, every setting optional. */
export const loomConfigSchema = z
  .object({
    ...identitySettings,
    ...runSettings,
    ...limitSettings,
    ...storageSettings,
    ...secretsSettings,
    /** Unset: the key made once and kept in LOOM_DATA_DIR/secrets-key. */
    SECRETS_KEY: secretsSettings.SECRETS_KEY.optional(),
    ...toolCallSettings,
    ...embeddingSettings,
    ...ingestSettings,
    ...searchSettings,
    PORT: env.port(8080),
    // Loopback by default: a laptop's first start prints an admin key.
    HOST: z.string().default("127.0.0.1"),
    ...httpSettings,
    ...dataSettings,
    /** Asset bytes on local disk; unset: `blobs` in LOOM_DATA_DIR. */
    BLOB_DIR: z.string().min(1).optional(),
    /** Unset: the in-process bus. */
    NATS_URL: env.url().optional(),
    LOG_LEVEL: env.logLevel(),
    LOG_FORMAT: env.logFormat(),
    /**
     * Set: `GET /metrics` (Prometheus) on this port, on HOST, apart from the API
     * port (0: any free port). Unset: no metrics listener (docs/decisions.md,
     * "Metrics": a fixed default would collide between processes on one machine).
     */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  })
  .superRefine(requireOidcClaims)
  .superRefine(requireBillingUrls);

export type LoomConfig = z.infer<typeof loomConfigSchema>;
