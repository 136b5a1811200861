import { artifactOfText, errorArtifact, knownArtifact } from "./artifacts.ts";
import type { CallScope } from "./call-scope.ts";
import {
  activityName,
  brief,
  byName,
  type ServerActivity,
  type ServerTarget,
  type ToolServerClient,
  ToolServerFailed,
  UnknownActivity,
} from "./tool-server.ts";

type Json = Record<string, unknown>;

/**
 * A client of a griptape tool server (as hosted griptape tools serve): `GET <url>/openapi` lists the activities
 * (its `/activities/<name>` POST operations), `POST <url>/activities/<name>` with the input object calls one, and
 * answers a griptape artifact.
 */
export function griptapeClient(target: ServerTarget, scope: CallScope): ToolServerClient {
  const base = target.url.replace(/\/+$/, "");
  const request = (path: string, init: RequestInit) =>
    scope.fetch(`${base}${path}`, {
      ...init,
      headers: { ...target.headers, accept: "application/json", ...init.headers },
      signal: scope.signal,
    });
  return {
    async listActivities() {
      const response = await request("/openapi", { method: "GET" });
      const text = await response.text();
      if (!response.ok) throw new ToolServerFailed(`the tool server answered HTTP ${response.status}: ${brief(text)}`);
      return activitiesOf(parseObject(text));
    },
    async invoke(name, input) {
      const response = await request(`/activities/${encodeURIComponent(name)}`, {
        method: "POST",
        body: JSON.stringify(input),
        headers: { "content-type": "application/json" },
      });
      const text = await response.text();
      if (response.status === 404) throw new UnknownActivity(name);
      if (!response.ok)
        return {
          artifact: errorArtifact(`the tool server answered HTTP ${response.status}: ${brief(text)}`),
          isError: true,
        };
      const artifact = knownArtifactOf(text) ?? artifactOfText(text);
      return { artifact, isError: artifact.type === "ErrorArtifact" };
    },
  };
}

function knownArtifactOf(text: string) {
  try {
    return knownArtifact(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function parseObject(text: string): Json {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) return parsed;
  } catch {
    // Reported below.
  }
  throw new ToolServerFailed("the tool server's /openapi is not an OpenAPI document (a JSON object)");
}

/** The document's `/activities/*` POST operations, as griptape's GriptapeCloudToolTool reads them. */
function activitiesOf(document: Json): ServerActivity[] {
  const paths = isObject(document.paths) ? document.paths : {};
  const activities: ServerActivity[] = [];
  for (const [path, item] of Object.entries(paths)) {
    const operation = isObject(item) && isObject(item.post) ? item.post : undefined;
    if (!path.startsWith("/activities/") || !operation) continue;
    const serverName = typeof operation.operationId === "string" ? operation.operationId : path.slice(12);
    const description = [operation.description, operation.summary].find((d) => typeof d === "string") ?? "";
    activities.push({
      name: activityName(serverName),
      serverName,
      description: description as string,
      inputSchema: inputSchemaOf(document, operation),
    });
  }
  return byName(activities);
}

/** The operation's JSON body schema, a `$ref` into `components.schemas` read; an empty object schema when none. */
function inputSchemaOf(document: Json, operation: Json): Json {
  const body = isObject(operation.requestBody) ? operation.requestBody : {};
  const content = isObject(body.content) ? body.content : {};
  const media = isObject(content["application/json"]) ? content["application/json"] : {};
  let schema = isObject(media.schema) ? media.schema : undefined;
  if (schema && typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop() ?? "";
    const components = isObject(document.components) ? document.components : {};
    const schemas = isObject(components.schemas) ? components.schemas : {};
    schema = isObject(schemas[name]) ? schemas[name] : undefined;
  }
  return schema ?? { type: "object", properties: {} };
}

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
