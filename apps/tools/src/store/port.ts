import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";
import type { SecretStore } from "./secrets.ts";

/** A tool's `code`, in Griptape Cloud's wire form: one single-key wrapper of the kinds its clients know. */
export type ToolCode =
  | { github: { owner: string; name: string; push: { branch: string; tag?: string } } }
  | { data_lake: { bucket_id: string; asset_path: string } }
  | { default: Record<string, never> };

export type EnvVarSource = "manual" | "secret_ref";

export interface EnvVarRecord {
  name: string;
  value: string;
  source?: EnvVarSource;
}

/** A header sent to the tool server: a value as is, or the id of a secret (kept as given). */
export type HeaderValue = { value: string } | { secretRef: string };

export type ToolTransport = "mcp" | "griptape";

/** The tool server Loom calls (Loom's extension of ToolDetail). */
export interface ToolServerRecord {
  url: string;
  transport: ToolTransport;
  headers: Record<string, HeaderValue>;
}

export interface ToolRecord {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  code: ToolCode;
  envVars: EnvVarRecord[];
  toolConfigFile?: string;
  server?: ToolServerRecord;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type ToolPatch = Partial<
  Pick<ToolRecord, "name" | "description" | "code" | "envVars" | "toolConfigFile" | "server">
>;

/**
 * The tools service's whole store: its tools and, in the same database, the
 * secrets they name (the `SecretStore` part). Every read and write is scoped
 * to one organization: another's tools do not exist.
 */
export interface ToolsStore extends StoreLifecycle, SecretStore {
  insert(tool: ToolRecord): Promise<void>;
  get(organizationId: string, id: string): Promise<ToolRecord | undefined>;
  update(organizationId: string, id: string, patch: ToolPatch, at: Date): Promise<ToolRecord | undefined>;
  delete(organizationId: string, id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  list(organizationId: string, skip: number, limit: number): Promise<Page<ToolRecord>>;
}
