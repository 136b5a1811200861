import type { Tool } from "@loom/proto/runs/v1/chat_pb";

/**
 * griptape names a native tool `<tool name>_<activity name>` (ToolAction
 * .to_native_tool_name) and splits a model's tool name back at the first
 * underscore; we look the request's own tools up first, so a tool whose name
 * has an underscore still comes back whole.
 */
export const nativeToolName = (name: string, path: string | undefined) =>
  path === undefined ? name : `${name}_${path}`;

export function toolActionName(native: string, tools: Tool[]): { name: string; path?: string } {
  for (const tool of tools) {
    for (const activity of tool.activities) {
      if (nativeToolName(tool.name, activity.name) === native) return { name: tool.name, path: activity.name };
    }
  }
  const underscore = native.indexOf("_");
  return underscore < 0 ? { name: native } : { name: native.slice(0, underscore), path: native.slice(underscore + 1) };
}

/** The tool griptape's "tool" structured-output strategy adds (griptape StructuredOutputTool.provide_output). */
export const structuredOutputTool = { name: "StructuredOutputTool", path: "provide_output" };
