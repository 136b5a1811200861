import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium } from "@loom/testing/browser";
import { startMcpServer } from "@loom/testing/mcp-server";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";

/**
 * `pnpm screenshots`: a picture of each console screen, for the README and
 * docs/console/. It starts the all-in-one process on a fresh data directory
 * and an MCP test server, fills an organization through the API as a user
 * would (an assistant with a ruleset, a tool and a knowledge base on a
 * bucket of files, a conversation), then opens each screen in chromium at a
 * laptop's size and saves it. Run it after changing a screen; commit the PNGs.
 */
const outDir = join(import.meta.dirname, "..", "..", "docs", "console");
const viewport = { width: 1100, height: 700 };

const key = `loom_shots-${randomBytes(24).toString("base64url")}`;
const port = await freePort();
const dataDir = await mkdtemp(join(tmpdir(), "loom-screenshots-"));
const loom = await startProcess(
  "apps/loom/src/main.ts",
  { PORT: String(port), BOOTSTRAP_API_KEY: key, LOOM_DATA_DIR: dataDir, TOOL_ALLOWED_HOSTS: "127.0.0.1" },
  `http://127.0.0.1:${port}/healthz`,
);
const mcp = await startMcpServer();
const origin = `http://127.0.0.1:${port}`;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(origin + path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

async function upload(bucketId: string, name: string, text: string) {
  await api("PUT", `/buckets/${bucketId}/assets`, { name });
  const signed = await api<{ url: string; headers: Record<string, string> }>(
    "POST",
    `/buckets/${bucketId}/asset-urls/${encodeURIComponent(name)}`,
    { operation: "PUT" },
  );
  const put = await fetch(signed.url, { method: "PUT", body: text, headers: signed.headers });
  if (!put.ok) throw new Error(`uploading ${name} answered ${put.status}`);
}

async function settled(path: string, done: (body: { status: string }) => boolean) {
  for (let i = 0; i < 200; i++) {
    const body = await api<{ status: string }>("GET", path);
    if (done(body)) return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${path} did not settle`);
}

try {
  // The organization's things, made as a user would through the API.
  const rules = [
    await api<{ rule_id: string }>("POST", "/rules", { name: "Be brief", rule: "Answer in three sentences or fewer." }),
    await api<{ rule_id: string }>("POST", "/rules", { name: "Cite", rule: "Name the document an answer comes from." }),
  ];
  const ruleset = await api<{ ruleset_id: string }>("POST", "/rulesets", {
    name: "Support tone",
    alias: "support-tone",
    description: "How the support assistant speaks",
    rule_ids: rules.map((r) => r.rule_id),
  });
  const tool = await api<{ tool_id: string }>("POST", "/tools", {
    name: "Calculator",
    description: "Adds numbers (an MCP server)",
    server: { url: mcp.url, transport: "mcp" },
  });
  const bucket = await api<{ bucket_id: string }>("POST", "/buckets", { name: "Handbook" });
  await upload(
    bucket.bucket_id,
    "policies/holidays.md",
    "# Holidays\n\nEmployees get thirty days of paid holiday a year, and the days between Christmas and New Year off.\n",
  );
  await upload(
    bucket.bucket_id,
    "policies/expenses.md",
    "# Expenses\n\nTravel is booked through the travel desk; receipts are filed within thirty days.\n",
  );
  await upload(bucket.bucket_id, "onboarding.txt", "Your first week: a laptop, a buddy, and a tour of the office.\n");
  const knowledgeBase = await api<{ knowledge_base_id: string }>("POST", "/knowledge-bases", {
    name: "Company handbook",
    description: "Policies and onboarding",
    asset_paths: [`${bucket.bucket_id}/`],
  });
  const job = await api<{ knowledge_base_job_id: string }>(
    "POST",
    `/knowledge-bases/${knowledgeBase.knowledge_base_id}/knowledge-base-jobs`,
  );
  await settled(`/knowledge-base-jobs/${job.knowledge_base_job_id}`, (j) => j.status === "SUCCEEDED");
  const assistant = await api<{ assistant_id: string }>("POST", "/assistants", {
    name: "Support bot",
    description: "Answers questions about company policy",
    ruleset_ids: [ruleset.ruleset_id],
    tool_ids: [tool.tool_id],
    knowledge_base_ids: [knowledgeBase.knowledge_base_id],
  });
  await api("POST", "/assistants", {
    name: "Release notes writer",
    description: "Drafts release notes from a changelog",
  });
  const run = await api<{ assistant_run_id: string }>("POST", `/assistants/${assistant.assistant_id}/runs`, {
    input: "How many days of holiday do we get?",
  });
  await settled(`/assistant-runs/${run.assistant_run_id}`, (r) => ["SUCCEEDED", "FAILED", "ERROR"].includes(r.status));

  const browser = await launchChromium();
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  await mkdir(outDir, { recursive: true });
  const shoot = async (name: string) => {
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: join(outDir, `${name}.png`) });
    console.log(`docs/console/${name}.png`);
  };

  await page.goto(`${origin}/console`);
  await page.getByLabel("API key").fill(key);
  await shoot("sign-in");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("list", { name: "Assistants" }).waitFor();
  await shoot("assistants");
  await page.goto(`${origin}/console/assistants/${assistant.assistant_id}`);
  await page.getByRole("group", { name: "Rulesets" }).waitFor();
  await shoot("assistant");

  await page.goto(`${origin}/console/chat?assistant=${assistant.assistant_id}`);
  await page.getByRole("textbox", { name: "Message" }).fill("What is the expenses policy?");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByRole("log").getByText("Sources").waitFor();
  await shoot("chat");

  await page.goto(`${origin}/console/runs?assistant=${assistant.assistant_id}`);
  await page.getByRole("heading", { name: "Runs" }).waitFor();
  await shoot("runs");
  await page.goto(`${origin}/console/runs/${run.assistant_run_id}`);
  await page.getByText("SUCCEEDED").first().waitFor();
  await shoot("run");

  await page.goto(`${origin}/console/files`);
  await page.getByRole("list", { name: "Buckets" }).waitFor();
  await shoot("files");
  await page.goto(`${origin}/console/files/${bucket.bucket_id}`);
  await page.getByRole("list", { name: "Files" }).waitFor();
  await shoot("bucket");

  await page.goto(`${origin}/console/knowledge`);
  await page.getByRole("heading", { name: "Knowledge" }).waitFor();
  await shoot("knowledge");
  await page.goto(`${origin}/console/knowledge/${knowledgeBase.knowledge_base_id}`);
  await page.getByRole("textbox", { name: "Query", exact: true }).fill("holiday");
  await page.getByRole("button", { name: "Search" }).click();
  await page.getByRole("list", { name: "Hits" }).waitFor();
  await shoot("knowledge-base");

  await page.goto(`${origin}/console/rulesets/${ruleset.ruleset_id}`);
  await page.getByText("Answer in three sentences or fewer.").waitFor();
  await shoot("ruleset");

  await page.goto(`${origin}/console/tools/${tool.tool_id}`);
  await page.getByRole("form", { name: "Try add" }).waitFor();
  await shoot("tool");

  await page.goto(`${origin}/console/api-keys`);
  await page.getByRole("list", { name: "API keys" }).waitFor();
  await shoot("api-keys");
  await browser.close();
} finally {
  await mcp.close();
  await stopProcess(loom);
  await rm(dataDir, { recursive: true, force: true });
}
