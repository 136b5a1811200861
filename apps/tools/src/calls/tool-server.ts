import type { Artifact } from "./artifacts.ts";

/** One activity as a tool's server offers it. */
export interface ServerActivity {
  /** The name griptape can use: `[A-Za-z0-9_]+` (`activityName`). */
  name: string;
  /** The name the server gave, to call it by. */
  serverName: string;
  description: string;
  /** The input object's JSON Schema, self-contained (no `$ref` into a document Loom does not pass on). */
  inputSchema: Record<string, unknown>;
}

/** An activity's answer: the result as a griptape artifact, and whether the tool said it failed. */
export interface Invocation {
  artifact: Artifact;
  isError: boolean;
}

/** A client of one tool's server, for one call (its requests share the call's bounds, `CallScope`). */
export interface ToolServerClient {
  listActivities(): Promise<ServerActivity[]>;
  /** Throws `UnknownActivity` when the server has no activity of that name. */
  invoke(activity: string, input: Record<string, unknown>): Promise<Invocation>;
}

/** The connection to a tool's server, its headers' secrets already read. */
export interface ServerTarget {
  url: string;
  headers: Record<string, string>;
}

export class UnknownActivity extends Error {
  override name = "UnknownActivity";
  readonly activity: string;
  constructor(activity: string) {
    super(`the tool's server has no activity ${activity}`);
    this.activity = activity;
  }
}

/**
 * The server answered, with an error of its own (a JSON-RPC error, an HTTP error status, an answer that is not what
 * its protocol says): the tool failed. The message says what the server said, briefly.
 */
export class ToolServerFailed extends Error {
  override name = "ToolServerFailed";
}

/** A server's name for an activity as griptape takes it: letters, digits and `_`, anything else `_`. */
export const activityName = (serverName: string) => serverName.replace(/[^A-Za-z0-9_]/g, "_");

/** Activities by their griptape names: a name two server names share goes to the first. */
export function byName(activities: ServerActivity[]): ServerActivity[] {
  const seen = new Set<string>();
  return activities.filter(({ name }) => name !== "" && !seen.has(name) && seen.add(name));
}

/** At most this much of what a server said goes into a message. */
export const brief = (text: string, max = 300) => (text.length > max ? `${text.slice(0, max)}…` : text);
