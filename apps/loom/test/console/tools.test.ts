import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { needsChromium } from "@loom/testing/browser";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

/** The Tools screens: a tool on a real MCP server (on this machine), its activities listed and tried from forms. */
describe.skipIf(!needsChromium("the console's Tools screens"))("the console: tools", () => {
  // The tool servers are on loopback: allowed by name, so the test does not rest on the all-in-one's default.
  const session = consoleSession({ TOOL_ALLOWED_HOSTS: "127.0.0.1" });
  let mcp: McpTestServer;
  let griptape: Server;
  beforeAll(async () => {
    mcp = await startMcpServer();
    griptape = await startEchoToolServer();
  });
  afterAll(async () => {
    await mcp?.close();
    griptape?.close();
  });

  it("creates a tool, lists its activities, runs one from its generated form, shows an error result, edits and deletes", async () => {
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("link", { name: "Tools", exact: true }).click();
    await page.getByText("No tools yet.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole("button", { name: "New tool" }).click();
    const form = page.getByRole("form", { name: "New tool" });
    await expect.poll(() => form.getByLabel("Name").and(page.locator(":focus")).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByLabel("Name").fill("Calculator");
    await form.getByLabel("Server URL").fill(mcp.url);
    await form.getByLabel("Server URL").press("Enter");
    await page.getByRole("list", { name: "Tools" }).getByRole("link", { name: "Calculator" }).click();

    // The server's activities, as it lists them now: name, description, input schema.
    const activities = page.getByRole("list", { name: "Activities" });
    await activities.getByRole("heading", { name: "add", exact: true }).waitFor();
    await activities.getByText("Adds two numbers: { a } plus { b }.").waitFor();
    await activities.getByRole("heading", { name: "say_hello", exact: true }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // Fields from the input schema: numbers for `add`, sent as numbers.
    const tryAdd = page.getByRole("form", { name: "Try add" });
    await tryAdd.getByRole("spinbutton", { name: "a", exact: true }).fill("20");
    await tryAdd.getByRole("spinbutton", { name: "b", exact: true }).fill("22");
    await tryAdd.getByRole("button", { name: "Run" }).click();
    const addResult = page.getByRole("status", { name: "Result of add" });
    await addResult.getByText("42", { exact: true }).waitFor();
    expect(mcp.calls.at(-1)).toMatchObject({ tool: "add", arguments: { a: 20, b: 22 } });

    const tryHello = page.getByRole("form", { name: "Try say_hello" });
    await tryHello.getByRole("textbox", { name: "name", exact: true }).fill("<img src=x onerror=window.__xss=1>");
    await tryHello.getByRole("button", { name: "Run" }).click();
    const helloResult = page.getByRole("status", { name: "Result of say_hello" });
    await helloResult.getByText("Hello, <img src=x onerror=window.__xss=1>!", { exact: true }).waitFor();
    expect(await helloResult.locator("img").count()).toBe(0);

    // A tool's failure is its answer: shown as an error, with the tool's own words.
    await page.getByRole("form", { name: "Try fail" }).getByRole("button", { name: "Run" }).click();
    const failResult = page.getByRole("status", { name: "Result of fail" });
    await failResult.getByText("The tool answered with an error:").waitFor();
    await failResult.getByText("boom: the tool failed").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();

    // Edited: every call now waits for approval; the server and its headers stay.
    await page.getByRole("button", { name: "Edit" }).click();
    const edit = page.getByRole("form", { name: "Edit Calculator" });
    await edit.getByLabel("Approval required").selectOption("all");
    await edit.getByRole("button", { name: "Save" }).click();
    await page.getByText("all activities").waitFor();
    const tools = (await (await session.api("GET", "/tools")).json()) as { tools: { server: unknown }[] };
    expect(tools.tools.map((t) => t.server)).toEqual([
      { url: mcp.url, transport: "mcp", headers: {}, approval_required: true },
    ]);

    await page.getByRole("link", { name: "All tools" }).click();
    await page.getByRole("button", { name: "Delete Calculator" }).click();
    await page.getByRole("group", { name: "Delete Calculator?" }).getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("No tools yet.").waitFor();

    await close();
  }, 60_000);

  it("makes a checkbox for a boolean and a JSON text area for an array, and sends what they hold", async () => {
    const { port } = griptape.address() as AddressInfo;
    const created = await session.api("POST", "/tools", undefined, {
      name: "Echo",
      server: { url: `http://127.0.0.1:${port}`, transport: "griptape" },
    });
    const tool = (await created.json()) as { tool_id: string };
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("link", { name: "Tools", exact: true }).click();
    await page.getByRole("link", { name: "Echo" }).click();
    const form = page.getByRole("form", { name: "Try echo" });
    await form.getByRole("checkbox", { name: "loud" }).check();
    await form.getByRole("textbox", { name: "tags (JSON)" }).fill("[1, 2");
    await form.getByRole("button", { name: "Run" }).click();
    await form.getByRole("alert").getByText("tags: not valid JSON.").waitFor();
    await form.getByRole("textbox", { name: "tags (JSON)" }).fill('["a", "b"]');
    await form.getByRole("button", { name: "Run" }).click();
    // The server answers the input it was sent: a JSON object, shown as JSON.
    const result = page.getByRole("status", { name: "Result of echo" });
    await result.getByText("Result (JsonArtifact):").waitFor();
    expect(JSON.parse((await result.locator("pre").textContent())!)).toEqual({ loud: true, tags: ["a", "b"] });
    expect(await seriousViolations(page)).toEqual([]);
    await session.api("DELETE", `/tools/${tool.tool_id}`);
    await close();
  }, 60_000);

  it("says why a server's activities could not be listed", async () => {
    const created = await session.api("POST", "/tools", undefined, {
      name: "Gone",
      server: { url: "http://127.0.0.1:9/mcp", transport: "mcp" },
    });
    const tool = (await created.json()) as { tool_id: string };
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("link", { name: "Tools", exact: true }).click();
    await page.getByRole("link", { name: "Gone" }).click();
    const alert = page.getByRole("alert");
    await alert.getByText("The server's activities could not be listed:", { exact: false }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await session.api("DELETE", `/tools/${tool.tool_id}`);
    await close();
  }, 60_000);
});

/** A griptape-style tool server whose one activity, `echo`, answers the input it was sent. */
async function startEchoToolServer(): Promise<Server> {
  const openApi = {
    openapi: "3.1.0",
    info: { title: "Echo", version: "1" },
    paths: {
      "/activities/echo": {
        post: {
          operationId: "echo",
          description: "Answers its input.",
          requestBody: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: { loud: { type: "boolean" }, tags: { type: "array", items: { type: "string" } } },
                },
              },
            },
          },
        },
      },
    },
  };
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(req.url === "/openapi" ? JSON.stringify(openApi) : body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
