import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { failedPrecondition, invalidArgument, notFound, permissionDenied } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { jsonToValue } from "@loom/contracts/json-value";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { runStatuses } from "@loom/contracts/run-lifecycle";
import { ActivitiesService, type ToolRunSchema } from "@loom/proto/tools/v1/activities_pb";
import { requirePrincipal } from "@loom/server/principal";
import { errorArtifact } from "./calls/artifacts.ts";
import { type CallLimits, type CallScope, callScope } from "./calls/call-scope.ts";
import { griptapeClient } from "./calls/griptape-client.ts";
import { MissingSecret, redacted, serverHeaders } from "./calls/server-headers.ts";
import { type ToolServerClient, ToolServerFailed, UnknownActivity } from "./calls/tool-server.ts";
import type { SecretValues } from "./secret-values.ts";
import type { ToolRecord, ToolRunRecord, ToolRunStatus, ToolServerRecord, ToolsStore } from "./store/port.ts";

export interface ActivitiesDeps {
  store: ToolsStore;
  secrets: SecretValues;
  limits: CallLimits;
  now?: () => Date;
}

/** A tool run's statuses are an assistant run's (Griptape Cloud's `ToolRunStatus` has the same values). */
const statuses = new Set<string>(runStatuses);
const activityPattern = /^[A-Za-z0-9_]{1,200}$/;

/** How a call that did not answer ends: its run's status, the message its run and ErrorArtifact give, the RPC error. */
interface Failure {
  status: ToolRunStatus;
  message: string;
  rpcError?: ConnectError;
}

/**
 * Calling a tool's server (docs/behaviour.md, Tool runs): its activities, one activity's call recorded as a tool
 * run, and the runs. Every request goes through the call's scope: the outbound policy, the time and size limits, the
 * caller's cancel.
 */
export function createActivitiesHandlers(deps: ActivitiesDeps): ServiceImpl<typeof ActivitiesService> {
  const { store, secrets, limits } = deps;
  const now = deps.now ?? (() => new Date());

  /** The tool and its server; `forCall`: read for a call whose tool run is inserted next (`ToolsStore.getForCall`). */
  const toolWithServer = async (organizationId: string, toolId: string, forCall = false) => {
    const tool = forCall ? await store.getForCall(organizationId, toolId) : await store.get(organizationId, toolId);
    // No tool run follows: the answer waits for what the read may have seen to be on disk.
    if (forCall && !tool?.server) await store.durable();
    if (!tool) throw notFound("tool");
    if (!tool.server)
      throw failedPrecondition(
        "the tool has no server: set its server (an MCP server or a griptape tool server) first",
      );
    return { tool, server: tool.server };
  };

  /**
   * A client of the tool's server for one call, its headers' secrets read; `secretValues` gets them, so that a
   * failure's text can be cleared of them.
   */
  const serverClient = async (
    tool: ToolRecord,
    server: ToolServerRecord,
    scope: CallScope,
    secretValues: string[],
  ): Promise<ToolServerClient> => {
    const resolved = await serverHeaders(server.headers, secrets, tool.organizationId, now());
    secretValues.push(...resolved.secretValues);
    const target = { url: server.url, headers: resolved.headers };
    // The MCP client (and its SDK) is loaded on the first MCP call (docs/decisions.md, "Loading only what is used").
    return server.transport === "griptape"
      ? griptapeClient(target, scope)
      : (await import("./calls/mcp-client.ts")).mcpClient(target, scope, tool.organizationId);
  };

  const ended = (run: ToolRunRecord, status: ToolRunStatus, logs: string[], output?: unknown, statusDetail?: string) =>
    store.endRun(run.organizationId, run.id, {
      status,
      logs,
      at: now(),
      ...(output === undefined ? {} : { output }),
      ...(statusDetail === undefined ? {} : { statusDetail }),
    });

  return {
    async listActivities(req, ctx) {
      const principal = requirePrincipal(ctx);
      const { tool, server } = await toolWithServer(principal.organizationId, req.toolId);
      const scope = callScope(limits, ctx.signal);
      const secretValues: string[] = [];
      const started = performance.now();
      try {
        const activities = await (await serverClient(tool, server, scope, secretValues)).listActivities();
        return {
          toolName: toolNameOf(tool.name),
          activities: activities.map(({ name, description, inputSchema }) => ({
            name,
            description,
            inputSchemaJson: JSON.stringify(inputSchema),
            approvalRequired: needsApproval(server.approvalRequired, name),
          })),
        };
      } catch (error) {
        const failure = failureOf(error, scope, server.url, secretValues);
        if (failure.status === "CANCELLED" && failure.rpcError) throw failure.rpcError;
        // A listing that fails is recorded, so the answer can name the run (griptape's `{error, tool_run_id}`).
        const at = now();
        const run: ToolRunRecord = {
          id: newId(),
          organizationId: tool.organizationId,
          toolId: tool.id,
          status: failure.status,
          runtimePath: "/openapi",
          input: {},
          output: errorArtifact(failure.message),
          statusDetail: failure.message,
          logs: [
            `listed the activities of ${where(server.url)}`,
            `failed after ${since(started)} ms: ${failure.message}`,
          ],
          createdBy: principal.userId,
          createdAt: at,
          startedAt: at,
          completedAt: at,
          updatedAt: at,
        };
        await store.insertRun(run);
        if (failure.rpcError) throw failure.rpcError;
        return { toolName: toolNameOf(tool.name), activities: [], error: failure.message, toolRunId: run.id };
      } finally {
        scope.end();
      }
    },

    async invokeActivity(req, ctx) {
      const principal = requirePrincipal(ctx);
      if (!activityPattern.test(req.activity))
        throw invalidArgument([{ path: "path.activity", message: "must be an activity name: letters, digits and _" }]);
      const { tool, server } = await toolWithServer(principal.organizationId, req.toolId, true);
      const input = req.input ?? {};
      const at = now();
      const run: ToolRunRecord = {
        id: newId(),
        organizationId: tool.organizationId,
        toolId: tool.id,
        status: "RUNNING",
        runtimePath: `/activities/${req.activity}`,
        input,
        ...(req.assistantRunId === undefined ? {} : { assistantRunId: req.assistantRunId }),
        logs: [`called ${req.activity} on ${where(server.url)}`],
        createdBy: principal.userId,
        createdAt: at,
        startedAt: at,
        updatedAt: at,
      };
      await store.insertRun(run);
      const scope = callScope(limits, ctx.signal);
      const secretValues: string[] = [];
      const started = performance.now();
      try {
        const client = await serverClient(tool, server, scope, secretValues);
        const invocation = await client.invoke(req.activity, input);
        const { isError } = invocation;
        // A tool's error may echo what it was sent; its result is the tool's to give.
        const artifact = isError
          ? { ...invocation.artifact, value: redacted(String(invocation.artifact.value), secretValues) }
          : invocation.artifact;
        const answered = `answered in ${since(started)} ms`;
        if (isError)
          await ended(run, "FAILED", [answered, "the tool reported an error"], artifact, "the tool reported an error");
        else await ended(run, "SUCCEEDED", [answered], artifact);
        return { toolRunId: run.id, artifactJson: JSON.stringify(artifact), isError };
      } catch (error) {
        const failure = failureOf(error, scope, server.url, secretValues);
        const artifact = errorArtifact(failure.message);
        const log = `${failure.status === "CANCELLED" ? "stopped" : "failed"} after ${since(started)} ms: ${failure.message}`;
        await ended(run, failure.status, [log], failure.status === "CANCELLED" ? undefined : artifact, failure.message);
        if (failure.rpcError) throw failure.rpcError;
        return { toolRunId: run.id, artifactJson: JSON.stringify(artifact), isError: true };
      } finally {
        scope.end();
      }
    },

    async getToolRun(req, ctx) {
      const run = await store.getRun(requirePrincipal(ctx).organizationId, req.toolRunId);
      if (!run) throw notFound("tool run");
      return { toolRun: toolRunMessage(run) };
    },

    async listToolRuns(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const unknown = req.statuses.findIndex((status) => !statuses.has(status));
      if (unknown >= 0)
        throw invalidArgument([
          { path: `query.status[${unknown}]`, message: `must be one of ${[...statuses].join(", ")}` },
        ]);
      if (!(await store.get(organizationId, req.toolId))) throw notFound("tool");
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.listRuns(
        organizationId,
        req.toolId,
        req.statuses as ToolRunStatus[],
        window.skip,
        window.pageSize,
      );
      return { toolRuns: items.map(toolRunMessage), page: pageInfo(window, totalCount) };
    },

    async listToolRunLogs(req, ctx) {
      const run = await store.getRun(requirePrincipal(ctx).organizationId, req.toolRunId);
      if (!run) throw notFound("tool run");
      return { logs: run.logs };
    },
  };
}

/**
 * Why a call gave no answer, and how its run ends: the caller's cancel (CANCELLED); the outbound policy's refusal
 * (FAILED, PERMISSION_DENIED); a missing secret, an unknown activity or the server's own error (FAILED); the time or
 * size limit, or a server that cannot be reached (ERROR).
 */
function failureOf(error: unknown, scope: CallScope, url: string, secretValues: readonly string[]): Failure {
  const failure = failureOfError(error, scope, url);
  return { ...failure, message: redacted(failure.message, secretValues) };
}

function failureOfError(error: unknown, scope: CallScope, url: string): Failure {
  const stop = scope.stop();
  if (stop?.kind === "cancelled")
    return {
      status: "CANCELLED",
      message: "cancelled by the caller",
      rpcError: new ConnectError("cancelled", Code.Canceled),
    };
  if (stop?.kind === "refused")
    return { status: "FAILED", message: stop.error.message, rpcError: permissionDenied(stop.error.message) };
  if (stop) return { status: "ERROR", message: stop.message };
  if (error instanceof UnknownActivity)
    return { status: "FAILED", message: error.message, rpcError: notFound(`activity ${error.activity}`) };
  if (error instanceof MissingSecret || error instanceof ToolServerFailed)
    return { status: "FAILED", message: error.message };
  return { status: "ERROR", message: `could not reach ${hostOf(url)}${causeCode(error)}` };
}

/**
 * A connection error's code (ECONNREFUSED, ENOTFOUND, …) from the error or its causes; never their messages, which may
 * name an address a host name resolved to.
 */
function causeCode(error: unknown): string {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return ` (${code})`;
  }
  return "";
}

/** A griptape tool name: letters and digits only (griptape's native tool calling refuses any other). */
export const toolNameOf = (name: string) => name.replace(/[^A-Za-z0-9]/g, "") || "Tool";

/** The server's URL for a log line: its origin and path, without a query, which may hold a key. */
function where(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

const hostOf = (url: string) => new URL(url).host;
const since = (started: number) => Math.round(performance.now() - started);

function toolRunMessage(r: ToolRunRecord): MessageInitShape<typeof ToolRunSchema> {
  return {
    toolRunId: r.id,
    toolId: r.toolId,
    organizationId: r.organizationId,
    status: r.status,
    runtimePath: r.runtimePath,
    input: jsonToValue(r.input),
    output: r.output === undefined ? undefined : jsonToValue(r.output),
    statusDetail: r.statusDetail,
    assistantRunId: r.assistantRunId,
    createdBy: r.createdBy,
    createdAt: timestampFromDate(r.createdAt),
    startedAt: r.startedAt && timestampFromDate(r.startedAt),
    completedAt: r.completedAt && timestampFromDate(r.completedAt),
    updatedAt: timestampFromDate(r.updatedAt),
  };
}

/** Whether a run's model may call the activity only once a person approved (docs/behaviour.md §5, "Approval of tool calls"). */
const needsApproval = (approval: true | string[] | undefined, activity: string): boolean =>
  approval === true || (approval?.includes(activity) ?? false);
