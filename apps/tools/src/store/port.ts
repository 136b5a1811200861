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
  /** The activities a run's model calls only once approved: `true` for all, else their names; absent for none. */
  approvalRequired?: true | string[];
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
 * secrets they name (the `SecretStore` part) and the runs of their servers'
 * activities (the `ToolRunsStore` part). Every read and write is scoped to
 * one organization: another's tools do not exist.
 */
export interface ToolsStore extends StoreLifecycle, SecretStore, ToolRunsStore {
  insert(tool: ToolRecord): Promise<void>;
  get(organizationId: string, id: string): Promise<ToolRecord | undefined>;
  /** The organization's tools among `ids` (lower-case uuids), in no set order; ids of no such tool are left out. */
  getMany(organizationId: string, ids: readonly string[]): Promise<ToolRecord[]>;
  /**
   * `get` for a call of the tool's server, whose tool run is inserted next: on SQLite it does not wait for the disk
   * (every earlier write, which the read may have seen, is on disk once that insert is), so that a call waits for one
   * flush, not two. A caller that answers without inserting waits for `durable()` first.
   */
  getForCall(organizationId: string, id: string): Promise<ToolRecord | undefined>;
  /** Resolves once every write made so far is on disk (SQLite; at once on MongoDB, whose writes are acknowledged). */
  durable(): Promise<void>;
  update(organizationId: string, id: string, patch: ToolPatch, at: Date): Promise<ToolRecord | undefined>;
  delete(organizationId: string, id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  list(organizationId: string, skip: number, limit: number): Promise<Page<ToolRecord>>;
}

/** Griptape Cloud's `ToolRunStatus` values. */
export type ToolRunStatus = "QUEUED" | "STARTING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "ERROR" | "CANCELLED";

/** One call of a tool's server (docs/behaviour.md, Tool runs). */
export interface ToolRunRecord {
  id: string;
  organizationId: string;
  toolId: string;
  status: ToolRunStatus;
  /** `/activities/<name>`, or `/openapi` for a listing that failed. */
  runtimePath: string;
  input: unknown;
  /** The result artifact, once the run ended. */
  output?: unknown;
  statusDetail?: string;
  assistantRunId?: string;
  /** What happened, oldest first: never a header or a secret value. */
  logs: string[];
  createdBy: string;
  createdAt: Date;
  startedAt?: Date;
  completedAt?: Date;
  updatedAt: Date;
}

/** How a run ends: its final status, its result, and the log lines to append. */
export interface ToolRunEnd {
  status: ToolRunStatus;
  output?: unknown;
  statusDetail?: string;
  logs: string[];
  at: Date;
}

/** Tool runs, in the tools store: every read and write scoped to one organization, like tools. */
export interface ToolRunsStore {
  insertRun(run: ToolRunRecord): Promise<void>;
  /** Ends a run still in progress; undefined when there is none with this id. */
  endRun(organizationId: string, id: string, end: ToolRunEnd): Promise<ToolRunRecord | undefined>;
  getRun(organizationId: string, id: string): Promise<ToolRunRecord | undefined>;
  /**
   * Ends runs of every organization still RUNNING that started before `startedBefore`, as `end` says; at most
   * `limit` of them, oldest first. Each is ended only if it is still RUNNING when written (a run ended meanwhile, by
   * its call or by another replica's sweep, is left as it is). Gives how many it ended.
   */
  endRunsStartedBefore(startedBefore: Date, end: ToolRunEnd, limit: number): Promise<number>;
  /** A tool's runs, newest first by created_at, ties by id; only those in `statuses` unless it is empty. */
  listRuns(
    organizationId: string,
    toolId: string,
    statuses: readonly ToolRunStatus[],
    skip: number,
    limit: number,
  ): Promise<Page<ToolRunRecord>>;
}
