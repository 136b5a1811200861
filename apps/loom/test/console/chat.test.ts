import { needsChromium } from "@loom/testing/browser";
import {
  answer,
  callTools,
  type FakeOpenAI,
  failWith,
  inTurn,
  startFakeOpenAI,
  trickle,
} from "@loom/testing/fake-openai";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleSession, type Page, seriousViolations } from "./console-session.ts";

const markup = "<img src=x onerror=window.__xss=1>";

/** Picks the assistant named `name` in the Chat screen's select. */
async function pick(page: Page, name: string) {
  await page.getByRole("link", { name: "Chat", exact: true }).click();
  await page.getByLabel("Assistant", { exact: true }).selectOption({ label: name });
}

/** From now on, records every distinct text the log's last answer shows, as the page sees it change. */
async function watchAnswers(page: Page) {
  await page.evaluate(`(() => {
    const log = document.querySelector('[role="log"]');
    window.__answers = [];
    new MutationObserver(() => {
      const answers = log.querySelectorAll('.answer .text');
      const text = answers.length ? answers[answers.length - 1].textContent : '';
      if (text && text !== window.__answers[window.__answers.length - 1]) window.__answers.push(text);
    }).observe(log, { subtree: true, childList: true, characterData: true });
  })()`);
}

/** Checks the answers watched grew token by token to `final`: at least 3 partial texts, each a longer start of it. */
async function expectGrewTo(page: Page, final: string) {
  const seen = ((await page.evaluate("window.__answers")) as string[]).filter((t) => t !== "…");
  expect(seen.at(-1)).toBe(final);
  const partial = seen.slice(0, -1);
  expect(partial.length, seen.join(" | ")).toBeGreaterThanOrEqual(3);
  partial.forEach((text, i) => {
    expect(final.startsWith(text), text).toBe(true);
    if (i > 0) expect(text.length).toBeGreaterThan(partial[i - 1]!.length);
  });
}

/** Sends `text` from the "Message" box with Enter, as a keyboard user does. */
async function send(page: Page, text: string) {
  const box = page.getByRole("textbox", { name: "Message", exact: true });
  await box.fill(text);
  await box.press("Enter");
}

/** The Chat screen with the built-in offline model: an answer, markup in it shown as text, the thread reopened. */
describe.skipIf(!needsChromium("the console's Chat screen"))("the console: chat with loom:echo", () => {
  const session = consoleSession();

  it("answers in the log, shows markup as text, lists the thread and reopens it with its messages after a reload", async () => {
    const made = await session.api("POST", "/assistants", undefined, { name: "Echo bot" });
    const assistantId = ((await made.json()) as { assistant_id: string }).assistant_id;
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await pick(page, "Echo bot");
    const log = page.getByRole("log", { name: "Conversation" });
    await log.getByText("No messages yet").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await send(page, `Hi ${markup}`);
    await log.getByText(`Echo: Hi ${markup}`, { exact: true }).waitFor();
    await log.getByRole("link", { name: "Run details" }).waitFor();
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
    expect(await page.getByRole("textbox", { name: "Message", exact: true }).inputValue()).toBe("");
    expect(await seriousViolations(page)).toEqual([]);

    // The thread has its own address, and is listed under the assistant.
    const url = new URL(page.url());
    const threadId = url.pathname.split("/").at(-1)!;
    expect(url.pathname).toBe(`/console/chat/${threadId}`);
    expect(url.searchParams.get("assistant")).toBe(assistantId);
    const threads = page.getByRole("list", { name: "Threads" });
    await threads.getByRole("link", { name: `Hi ${markup}` }).waitFor();

    // A second turn on the same thread: the model hears the first.
    await send(page, "again");
    await log.getByText("Echo: again", { exact: true }).waitFor();
    const runLinks = log.getByRole("link", { name: "Run details" });
    expect(await runLinks.count()).toBe(2);
    const runHref = await runLinks.nth(1).getAttribute("href");
    expect(runHref).toMatch(/^\/console\/runs\/[0-9a-f-]{36}$/);

    await page.reload();
    await log.getByText(`Echo: Hi ${markup}`, { exact: true }).waitFor();
    await log.getByText("Echo: again", { exact: true }).waitFor();
    expect(await log.getByText("again", { exact: true }).count()).toBe(1);
    expect(await log.getByRole("link", { name: "Run details" }).nth(1).getAttribute("href")).toBe(runHref);
    expect(await page.getByLabel("Assistant", { exact: true }).inputValue()).toBe(assistantId);
    expect(await threads.getByRole("listitem").count()).toBe(1);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
    expect(await seriousViolations(page)).toEqual([]);

    // A new conversation starts empty; the earlier one is reopened from the list.
    await page.getByRole("link", { name: "New conversation" }).click();
    await log.getByText("No messages yet").waitFor();
    await threads.getByRole("link", { name: `Hi ${markup}` }).click();
    await log.getByText("Echo: again", { exact: true }).waitFor();

    // A thread that is not there: the API's own message.
    const missing = "00000000-0000-4000-8000-000000000000";
    const refused = (await (await session.api("GET", `/threads/${missing}/messages`)).json()) as {
      errors: { message: string }[];
    };
    await page.goto(`${session.loom.url}/console/chat/${missing}?assistant=${assistantId}`);
    await page.getByRole("alert").waitFor();
    expect(await page.getByRole("alert").textContent()).toBe(refused.errors[0]!.message);
    expect(await seriousViolations(page)).toEqual([]);
    await close();
  }, 60_000);

  it("streams loom:echo's answer into the log token by token (its default pace, ECHO_TOKEN_INTERVAL_MS)", async () => {
    await session.api("POST", "/assistants", undefined, { name: "Streaming echo" });
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await pick(page, "Streaming echo");
    await page.getByRole("log", { name: "Conversation" }).getByText("No messages yet").waitFor();
    await watchAnswers(page);
    const question = "Which of the seven small looms wove the longest cloth this year";
    await send(page, question);
    await page.getByRole("log").getByText(`Echo: ${question}`, { exact: true }).waitFor();
    await expectGrewTo(page, `Echo: ${question}`);
    await close();
  }, 60_000);

  it("lists an answer's citations under it, each linked to its file's bucket", async () => {
    const bucketId = (
      (await (await session.api("POST", "/buckets", undefined, { name: "handbook" })).json()) as {
        bucket_id: string;
      }
    ).bucket_id;
    const name = "gateway.txt";
    await session.api("PUT", `/buckets/${bucketId}/assets`, undefined, { name });
    const signed = (await (
      await session.api("POST", `/buckets/${bucketId}/asset-urls/${name}`, undefined, { operation: "PUT" })
    ).json()) as { url: string };
    const put = await fetch(new URL(signed.url, session.loom.url), {
      method: "PUT",
      body: "The Umbermark gateway listens on port 7431 behind the north proxy.",
      headers: { "content-type": "text/plain" },
    });
    expect(put.status).toBe(200);
    // A keyword knowledge base: no embedding model, nothing leaves the machine.
    const kb = (await (
      await session.api("POST", "/knowledge-bases", undefined, {
        name: "Handbook",
        config: { gtc_pg_vector: { embedding_model: null } },
        asset_paths: [`${bucketId}/`],
      })
    ).json()) as { knowledge_base_id: string };
    const job = (await (
      await session.api("POST", `/knowledge-bases/${kb.knowledge_base_id}/knowledge-base-jobs`)
    ).json()) as { knowledge_base_job_id: string };
    await expect
      .poll(
        async () =>
          (
            (await (await session.api("GET", `/knowledge-base-jobs/${job.knowledge_base_job_id}`)).json()) as {
              status: string;
            }
          ).status,
        { timeout: 15_000 },
      )
      .toBe("SUCCEEDED");
    await session.api("POST", "/assistants", undefined, {
      name: "Handbook bot",
      knowledge_base_ids: [kb.knowledge_base_id],
    });

    const { page, close } = await session.openTab();
    await session.signIn(page);
    await pick(page, "Handbook bot");
    await send(page, "Which port does the Umbermark gateway listen on?");
    const log = page.getByRole("log", { name: "Conversation" });
    await log.getByText("Echo: Which port does the Umbermark gateway listen on?", { exact: true }).waitFor();
    const sources = log.getByRole("list", { name: "Sources" });
    const source = sources.getByRole("link", { name });
    await source.waitFor();
    expect(await source.getAttribute("href")).toBe(`/console/files/${bucketId}`);
    expect(await sources.getByRole("listitem").textContent()).toMatch(/^gateway\.txt passage 1, score [\d.e-]+$/);
    expect(await seriousViolations(page)).toEqual([]);
    await source.click();
    await page.getByRole("heading", { name: "Files in handbook" }).waitFor();
    await close();
  }, 60_000);
});

/**
 * The Chat screen with a scripted OpenAI-compatible model (loom:echo streams
 * its whole answer within a millisecond, too fast to see grow): the answer
 * arriving piece by piece, and a tool call that needs approval answered in place.
 */
describe.skipIf(!needsChromium("the console's Chat screen"))("the console: chat streaming and approvals", () => {
  let model: FakeOpenAI;
  let mcp: McpTestServer;
  // Filled before consoleSession's own beforeAll starts the process with it.
  const env: Record<string, string> = { TOOL_ALLOWED_HOSTS: "127.0.0.1" };
  beforeAll(async () => {
    model = await startFakeOpenAI();
    mcp = await startMcpServer();
    env.DEFAULT_MODEL = "openai-compatible:fake-model";
    env.OPENAI_COMPATIBLE_BASE_URL = model.baseUrl;
  });
  afterAll(async () => {
    await model?.close();
    await mcp?.close();
  });
  const session = consoleSession(env);

  it("shows the answer growing token by token in the log, then the final output", async () => {
    await session.api("POST", "/assistants", undefined, { name: "Storyteller" });
    const story = "Once upon a time there were seven small looms in a row";
    model.reply(trickle(story, 80));
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await pick(page, "Storyteller");
    await page.getByRole("log", { name: "Conversation" }).getByText("No messages yet").waitFor();
    await watchAnswers(page);
    await send(page, "Tell me a story");
    await page.getByRole("log").getByText(story, { exact: true }).waitFor();
    await expectGrewTo(page, story);
    expect(await seriousViolations(page)).toEqual([]);
    await close();
  }, 60_000);

  it("shows a failed run's reason in the log", async () => {
    await session.api("POST", "/assistants", undefined, { name: "Refuser" });
    model.reply(failWith(400, "this prompt is not accepted"));
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await pick(page, "Refuser");
    await send(page, "Hello?");
    const log = page.getByRole("log", { name: "Conversation" });
    await log.getByText(/^The run ended FAILED \(ProviderRejected: .*this prompt is not accepted/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await close();
  }, 60_000);

  it("asks for approval of tool calls in place, after a reload too; runs the approved one, tells the model of the denied one", async () => {
    const tool = (await (
      await session.api("POST", "/tools", undefined, {
        name: "Calc",
        server: { url: mcp.url, transport: "mcp", approval_required: ["add", "json"] },
      })
    ).json()) as { tool_id: string };
    const made = await session.api("POST", "/assistants", undefined, { name: "Calculator", tool_ids: [tool.tool_id] });
    const assistantId = ((await made.json()) as { assistant_id: string }).assistant_id;
    model.reply(
      inTurn(
        callTools([
          { id: "call_1", name: "Calc_add", arguments: { a: 2, b: 3 } },
          { id: "call_2", name: "Calc_json", arguments: {} },
        ]),
        answer("The sum is 5."),
      ),
    );

    const { page, close } = await session.openTab();
    await session.signIn(page);
    // Preselected by the address, as an assistant's own "Chat" link opens it.
    await page.goto(`${session.loom.url}/console/chat?assistant=${assistantId}`);
    expect(await page.getByLabel("Assistant", { exact: true }).inputValue()).toBe(assistantId);
    await send(page, "What is 2 + 3?");
    const approveAdd = page.getByRole("form", { name: "Approve Calc add?" });
    await approveAdd.getByRole("button", { name: "Approve" }).waitFor();
    expect(mcp.calls).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);

    // The paused run is found again on its thread's page, its calls still to decide.
    await page.reload();
    await approveAdd.getByRole("button", { name: "Approve" }).click();
    await page.getByText(/^Approved: Calc add/).waitFor();
    const denyJson = page.getByRole("form", { name: "Approve Calc json?" });
    await denyJson.getByLabel("Reason for denying").fill("not needed");
    await denyJson.getByLabel("Reason for denying").press("Enter");

    const log = page.getByRole("log", { name: "Conversation" });
    await log.getByText("The sum is 5.", { exact: true }).waitFor();
    await log.getByText("Denied: Calc json {} (not needed)", { exact: true }).waitFor();
    const calls = log.getByRole("list", { name: "Tool calls" }).getByRole("listitem");
    expect(await calls.nth(0).textContent()).toBe('Calc add {"a":2,"b":3} gave: 5');
    expect(await calls.nth(1).textContent()).toMatch(
      /^Calc json \{\} failed: the call was denied by a person \(user .+\): not needed$/,
    );
    expect(mcp.calls.map((c) => c.tool)).toEqual(["add"]);
    expect(await seriousViolations(page)).toEqual([]);
    await close();
  }, 60_000);
});
