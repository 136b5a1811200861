import type { Violation } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import {
  checkText,
  headerNamePatternSource,
  headerValuePatternSource,
  lengthProblem,
  nameProblem,
} from "@loom/contracts/text";
import { neverReachable } from "@loom/outbound/address";
import type { ApprovalRequired, EnvVar, ToolCode, ToolServer } from "@loom/proto/tools/v1/tools_pb";
import type {
  EnvVarRecord,
  EnvVarSource,
  HeaderValue,
  ToolCode as StoredCode,
  ToolServerRecord,
} from "./store/port.ts";

/** Bounds of a tool's fields (docs/api.md §8; why: docs/decisions.md, "Tools"). */
export const toolBounds = {
  envVars: 100,
  headers: 50,
  url: 2048,
  headerValue: 8192,
  envValue: 10_000,
  configFile: 1000,
  approvalActivities: 200,
};

const transports = new Set(["mcp", "griptape"]);
const envVarSources = new Set(["manual", "secret_ref"]);
const headerName = new RegExp(headerNamePatternSource);
const headerValue = new RegExp(headerValuePatternSource);

/** A create's or an update's text fields, each when present: name, description, tool_config_file. */
export function checkToolTexts(
  violations: Violation[],
  fields: { name?: string | undefined; description?: string | undefined; toolConfigFile?: string | undefined },
): void {
  checkText(violations, "body.name", fields.name, 200, nameProblem);
  checkText(violations, "body.description", fields.description, 200);
  checkText(violations, "body.tool_config_file", fields.toolConfigFile, toolBounds.configFile);
}

/** The code as stored (its wire form); undefined when absent, or when it names no kind (a violation). */
export function checkCode(violations: Violation[], path: string, code: ToolCode | undefined): StoredCode | undefined {
  const kind = code?.kind;
  switch (kind?.case) {
    case undefined:
      if (code) violations.push({ path, message: "must be one of github, data_lake or default" });
      return undefined;
    case "github": {
      const { owner, name, branch, tag } = kind.value;
      return { github: { owner, name, push: { branch, ...(tag === undefined ? {} : { tag }) } } };
    }
    case "dataLake":
      return { data_lake: { bucket_id: kind.value.bucketId, asset_path: kind.value.assetPath } };
    case "default":
      return { default: {} };
  }
}

export function checkEnvVars(violations: Violation[], path: string, envVars: EnvVar[]): EnvVarRecord[] {
  if (envVars.length > toolBounds.envVars)
    violations.push({ path, message: `must hold at most ${toolBounds.envVars} env vars` });
  return envVars.map(({ name, value, source }, i) => {
    checkText(violations, `${path}[${i}].name`, name, 200, nameProblem);
    checkText(violations, `${path}[${i}].value`, value, toolBounds.envValue, lengthProblem, 0);
    if (source !== undefined && !envVarSources.has(source))
      violations.push({ path: `${path}[${i}].source`, message: "must be manual or secret_ref" });
    // A secret's id in lower case, as ids are stored (a header's secret_ref likewise).
    const kept = source === "secret_ref" && isUuid(value) ? value.toLowerCase() : value;
    return { name, value: kept, ...(source === undefined ? {} : { source: source as EnvVarSource }) };
  });
}

/**
 * The tool server's shape: an absolute http(s) URL without credentials (they
 * belong in a header, which may name a secret), a known transport, headers
 * that are well-formed, and not an address no policy lets a tool reach (a
 * literal metadata or link-local one). Whether Loom may reach any other
 * address is the outbound network policy's to say, when a call is made.
 */
export function checkServer(
  violations: Violation[],
  path: string,
  server: ToolServer | undefined,
): ToolServerRecord | undefined {
  if (!server) return undefined;
  const urlProblem = problemOfUrl(server.url);
  if (urlProblem) violations.push({ path: `${path}.url`, message: urlProblem });
  if (!transports.has(server.transport))
    violations.push({ path: `${path}.transport`, message: "must be mcp or griptape" });
  const entries = Object.entries(server.headers);
  if (entries.length > toolBounds.headers)
    violations.push({ path: `${path}.headers`, message: `must hold at most ${toolBounds.headers} headers` });
  const headers: Record<string, HeaderValue> = {};
  for (const [name, { value }] of entries) {
    const at = `${path}.headers.${name}`;
    if (!headerName.test(name)) violations.push({ path: at, message: "the name must be an HTTP header name" });
    if (value.case === "plain") {
      if (!headerValue.test(value.value) || value.value.length > toolBounds.headerValue)
        violations.push({
          path: `${at}.value`,
          message: `must be at most ${toolBounds.headerValue} characters without CR, LF or NUL`,
        });
      headers[name] = { value: value.value };
    } else if (value.case === "secretRef") {
      if (!isUuid(value.value)) violations.push({ path: `${at}.secret_ref`, message: "must be a uuid" });
      headers[name] = { secretRef: value.value.toLowerCase() };
    } else violations.push({ path: at, message: "must hold a value or a secret_ref" });
  }
  const approvalRequired = checkApprovalRequired(violations, `${path}.approval_required`, server.approvalRequired);
  return {
    url: server.url,
    transport: server.transport as ToolServerRecord["transport"],
    headers,
    ...(approvalRequired === undefined ? {} : { approvalRequired }),
  };
}

/** An activity name as the tools service gives it (docs/api.md, Tools). */
const activityName = /^[A-Za-z0-9_]{1,200}$/;

/**
 * Which activities need approval (docs/decisions.md, "Approval of tool
 * calls"): `true` is every one; `false`, an empty list or none is none
 * (stored as absent); a list names activities, each once.
 */
function checkApprovalRequired(
  violations: Violation[],
  path: string,
  approval: ApprovalRequired | undefined,
): true | string[] | undefined {
  const which = approval?.which;
  if (which?.case === "all") return which.value ? true : undefined;
  if (which?.case !== "activities") return undefined;
  const names = which.value.names;
  if (names.length > toolBounds.approvalActivities)
    violations.push({ path, message: `must name at most ${toolBounds.approvalActivities} activities` });
  names.forEach((name, i) => {
    if (!activityName.test(name))
      violations.push({ path: `${path}[${i}]`, message: "must be an activity name: 1..200 letters, digits or _" });
    else if (names.indexOf(name) !== i) violations.push({ path: `${path}[${i}]`, message: "is named twice" });
  });
  return names.length > 0 ? [...names] : undefined;
}

function problemOfUrl(url: string): string | undefined {
  if (url.length > toolBounds.url) return `must be at most ${toolBounds.url} characters`;
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
    return "must be an absolute http or https URL";
  if (parsed.username || parsed.password) return "must not hold credentials: send them in a header";
  return neverReachable(parsed.hostname)?.message;
}
