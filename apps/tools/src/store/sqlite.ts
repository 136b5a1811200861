import { dateOf, newestFirstOrder, optional, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import type { ToolRecord, ToolRunRecord, ToolRunStatus, ToolsStore } from "./port.ts";
import { createSqliteSecretStore, secretsMigration } from "./secrets-sqlite.ts";

/** Schema versions of the tools tables (kit `migrate`): append, never edit. */
const migrations = [
  `CREATE TABLE tools_tools (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
     code TEXT NOT NULL, env_vars TEXT NOT NULL, tool_config_file TEXT, server TEXT,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
   CREATE INDEX tools_tools_by_organization ON tools_tools (organization_id, created_at DESC, id DESC);`,
  secretsMigration,
  `CREATE TABLE tools_runs (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, tool_id TEXT NOT NULL, status TEXT NOT NULL,
     runtime_path TEXT NOT NULL, input TEXT NOT NULL, output TEXT, status_detail TEXT, assistant_run_id TEXT, logs TEXT NOT NULL,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER, completed_at INTEGER, updated_at INTEGER NOT NULL);
   CREATE INDEX tools_runs_by_tool ON tools_runs (organization_id, tool_id, created_at DESC, id DESC);`,
  // The sweep of runs a stopped process left RUNNING (endRunsStartedBefore): only the few in progress are read.
  "CREATE INDEX tools_runs_in_progress ON tools_runs (status, started_at);",
];

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
const parsed = <T>(text: unknown): T | undefined => (text === null ? undefined : (JSON.parse(text as string) as T));

const toolOf = (row: Row | undefined): ToolRecord | undefined => {
  if (!row) return undefined;
  const toolConfigFile = optional<string>(row.tool_config_file);
  const server = parsed<ToolRecord["server"]>(row.server);
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    description: row.description as string,
    code: parsed<ToolRecord["code"]>(row.code)!,
    envVars: parsed<ToolRecord["envVars"]>(row.env_vars)!,
    ...(toolConfigFile === undefined ? {} : { toolConfigFile }),
    ...(server === undefined ? {} : { server }),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };
};

const runOf = (row: Row | undefined): ToolRunRecord | undefined => {
  if (!row) return undefined;
  const fields = {
    output: parsed<unknown>(row.output),
    statusDetail: optional<string>(row.status_detail),
    assistantRunId: optional<string>(row.assistant_run_id),
    startedAt: dateOf(row.started_at),
    completedAt: dateOf(row.completed_at),
  };
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    toolId: row.tool_id as string,
    status: row.status as ToolRunStatus,
    runtimePath: row.runtime_path as string,
    input: parsed<unknown>(row.input),
    ...Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)),
    logs: parsed<string[]>(row.logs)!,
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };
};

/**
 * SQLite adapter (the embedded store), with the secrets part: one row per tool, its code, env vars and server as JSON text; one row per tool
 * run, its input, output and logs as JSON text; times as epoch milliseconds.
 */
export function createSqliteToolsStore(handle: SqliteHandle): ToolsStore {
  const { prepare } = handle;
  return {
    ...sqliteLifecycle(handle, "tools", migrations),
    ...createSqliteSecretStore(handle),

    async insert(t) {
      prepare(
        `INSERT INTO tools_tools (id, organization_id, name, description, code, env_vars, tool_config_file, server, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        t.id,
        t.organizationId,
        t.name,
        t.description,
        json(t.code),
        json(t.envVars),
        t.toolConfigFile ?? null,
        json(t.server),
        t.createdBy,
        t.createdAt.getTime(),
        t.updatedAt.getTime(),
      );
    },
    get: async (organizationId, id) =>
      toolOf(prepare("SELECT * FROM tools_tools WHERE id = ? AND organization_id = ?").get(id, organizationId)),
    getMany: async (organizationId, ids) =>
      // By primary key, the organization checked after: as rulesets are read (docs/decisions.md, "Runs obey their rulesets").
      prepare("SELECT * FROM tools_tools WHERE id IN (SELECT value FROM json_each(?))")
        .all(JSON.stringify(ids))
        .map((row) => toolOf(row)!)
        .filter((tool) => tool.organizationId === organizationId),
    getForCall: async (organizationId, id) =>
      toolOf(prepare("SELECT * FROM tools_tools WHERE id = ? AND organization_id = ?").get(id, organizationId)),
    durable: () => handle.durable(),
    // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
    update: async (organizationId, id, patch, at) =>
      toolOf(
        prepare(
          `UPDATE tools_tools SET name = coalesce(?, name), description = coalesce(?, description), code = coalesce(?, code),
             env_vars = coalesce(?, env_vars), tool_config_file = coalesce(?, tool_config_file), server = coalesce(?, server), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
        ).get(
          patch.name ?? null,
          patch.description ?? null,
          json(patch.code),
          json(patch.envVars),
          patch.toolConfigFile ?? null,
          json(patch.server),
          at.getTime(),
          id,
          organizationId,
        ),
      ),
    delete: async (organizationId, id) =>
      prepare("DELETE FROM tools_tools WHERE id = ? AND organization_id = ?").run(id, organizationId).changes === 1,
    async list(organizationId, skip, limit) {
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM tools_tools WHERE organization_id = ?").get(organizationId)!.n,
      );
      const items = prepare(
        `SELECT * FROM tools_tools WHERE organization_id = ? ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: items.map((row) => toolOf(row)!), totalCount };
    },

    async insertRun(r) {
      prepare(
        `INSERT INTO tools_runs (id, organization_id, tool_id, status, runtime_path, input, output, status_detail, assistant_run_id,
           logs, created_by, created_at, started_at, completed_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        r.id,
        r.organizationId,
        r.toolId,
        r.status,
        r.runtimePath,
        JSON.stringify(r.input ?? null),
        json(r.output),
        r.statusDetail ?? null,
        r.assistantRunId ?? null,
        JSON.stringify(r.logs),
        r.createdBy,
        r.createdAt.getTime(),
        r.startedAt?.getTime() ?? null,
        r.completedAt?.getTime() ?? null,
        r.updatedAt.getTime(),
      );
    },
    // Appends the log lines in the statement (json_each keeps their order), so no line written before is lost.
    endRun: async (organizationId, id, end) =>
      runOf(
        prepare(
          `UPDATE tools_runs SET status = ?, output = ?, status_detail = ?, completed_at = ?, updated_at = ?,
             logs = (SELECT json_group_array(value) FROM (SELECT value FROM json_each(tools_runs.logs)
                     UNION ALL SELECT value FROM json_each(?)))
           WHERE id = ? AND organization_id = ? AND completed_at IS NULL RETURNING *`,
        ).get(
          end.status,
          json(end.output),
          end.statusDetail ?? null,
          end.at.getTime(),
          end.at.getTime(),
          JSON.stringify(end.logs),
          id,
          organizationId,
        ),
      ),
    getRun: async (organizationId, id) =>
      runOf(prepare("SELECT * FROM tools_runs WHERE id = ? AND organization_id = ?").get(id, organizationId)),
    // One statement: a run its call ended meanwhile no longer matches `status = 'RUNNING'`, so two sweeps (or a sweep
    // and the call's own end) never both end it.
    endRunsStartedBefore: async (startedBefore, end, limit) =>
      Number(
        prepare(
          `UPDATE tools_runs SET status = ?, output = ?, status_detail = ?, completed_at = ?, updated_at = ?,
           logs = (SELECT json_group_array(value) FROM (SELECT value FROM json_each(tools_runs.logs)
                   UNION ALL SELECT value FROM json_each(?)))
         WHERE id IN (SELECT id FROM tools_runs WHERE status = 'RUNNING' AND started_at < ? ORDER BY started_at LIMIT ?)
           AND status = 'RUNNING'`,
        ).run(
          end.status,
          json(end.output),
          end.statusDetail ?? null,
          end.at.getTime(),
          end.at.getTime(),
          JSON.stringify(end.logs),
          startedBefore.getTime(),
          limit,
        ).changes,
      ),
    async listRuns(organizationId, toolId, statuses, skip, limit) {
      const where = statuses.length
        ? "organization_id = ? AND tool_id = ? AND status IN (SELECT value FROM json_each(?))"
        : "organization_id = ? AND tool_id = ?";
      const params = statuses.length ? [organizationId, toolId, JSON.stringify(statuses)] : [organizationId, toolId];
      const totalCount = Number(prepare(`SELECT count(*) AS n FROM tools_runs WHERE ${where}`).get(...params)!.n);
      const rows = prepare(`SELECT * FROM tools_runs WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`).all(
        ...params,
        limit,
        skip,
      );
      return { items: rows.map((row) => runOf(row)!), totalCount };
    },
  };
}
