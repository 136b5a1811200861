import { needsChromium } from "@loom/testing/browser";
import { answer, type FakeOpenAI, hang, startFakeOpenAI, trickle } from "@loom/testing/fake-openai";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleSession, type Page, seriousViolations } from "./console-session.ts";

interface ApiRun {
  assistant_run_id: string;
  status: string;
  input?: string;
}
interface ApiEvent {
  type: string;
  payload: { token?: string };
}

/**
 * The Runs screens: an assistant's runs filtered by status, and a run's page
 * with its events as a live timeline and a cancel. The model is a scripted
 * OpenAI-compatible server (loom:echo answers in microseconds: no run of it
 * lasts long enough to be watched or cancelled), answering at once, slowly,
 * or never, as each test needs.
 */
describe.skipIf(!needsChromium("the console's Runs screens"))("the console: runs", () => {
  let model: FakeOpenAI;
  // Registered before the session's own beforeAll, so the model is up when Loom starts and reads this.
  beforeAll(async () => {
    model = await startFakeOpenAI();
    return () => model.close();
  });
  const session = consoleSession({
    DEFAULT_MODEL: "openai-compatible:fake-model",
    get OPENAI_COMPATIBLE_BASE_URL() {
      return model.baseUrl;
    },
  });

  const json = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await session.api(method, path, undefined, body);
    expect(response.ok, `${method} ${path}: ${response.status}`).toBe(true);
    return (await response.json()) as T;
  };
  const createAssistant = (name: string) =>
    json<{ assistant_id: string }>("POST", "/assistants", { name }).then((a) => a.assistant_id);
  const createRun = (assistantId: string, input: string) =>
    json<ApiRun>("POST", `/assistants/${assistantId}/runs`, { input, stream: true });
  async function finished(runId: string): Promise<ApiRun> {
    let run: ApiRun;
    await expect
      .poll(async () => (run = await json<ApiRun>("GET", `/assistant-runs/${runId}`)).status, { timeout: 10_000 })
      .toMatch(/^(SUCCEEDED|FAILED|ERROR|CANCELLED)$/);
    return run!;
  }
  const runsOf = async (assistantId: string, status = "") =>
    (
      await json<{ assistant_runs: ApiRun[] }>(
        "GET",
        `/assistants/${assistantId}/runs${status ? `?status=${status}` : ""}`,
      )
    ).assistant_runs;

  /** The timeline as the API's log should show it: consecutive TextChunkEvents one row, `TextChunkEvent ×n`. */
  async function expectedRows(runId: string): Promise<string[]> {
    const { events } = await json<{ events: ApiEvent[] }>("GET", `/assistant-runs/${runId}/events?limit=1000`);
    const rows: { type: string; count: number }[] = [];
    for (const event of events) {
      const last = rows.at(-1);
      if (event.type === "TextChunkEvent" && last?.type === event.type) last.count++;
      else rows.push({ type: event.type, count: 1 });
    }
    return rows.map((row) => (row.count > 1 ? `${row.type} ×${row.count}` : row.type));
  }
  const shownRows = (page: Page) => page.getByRole("log", { name: "Events" }).locator(".event-type").allTextContents();
  /** Signs in and waits until the console took the key: then a URL can be opened directly. */
  async function signedIn(page: Page, apiKey = session.key) {
    await session.signIn(page, apiKey);
    await page.getByRole("navigation", { name: "Main" }).waitFor();
  }
  const shownStatus = (page: Page) => page.getByRole("status").first().textContent();

  it("lists an assistant's runs newest first, narrows them by status as the API does, and shows a finished run's whole log, markup as text", async () => {
    const assistantId = await createAssistant("Runs bot");
    const markup = "<img src=x onerror=window.__xss=1>";
    // A long answer: 203 chunks, which the timeline shows as one row.
    const longAnswer = `Hello there, world!${" and more".repeat(100)}`;
    model.reply(answer(longAnswer));
    const done: ApiRun[] = [];
    for (const input of [markup, "second question", "third question"])
      done.push(await finished((await createRun(assistantId, input)).assistant_run_id));
    // One cancelled: the model never answers it, and the cancel ends it.
    model.reply(hang());
    const held = await createRun(assistantId, "never answered");
    await json("POST", `/assistant-runs/${held.assistant_run_id}/cancel`);
    expect((await finished(held.assistant_run_id)).status).toBe("CANCELLED");
    expect(done.map((run) => run.status)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);

    const { page, close } = await session.openTab();
    await signedIn(page);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }).click();
    await page.getByText("Choose an assistant to see its runs.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    const list = page.getByRole("list", { name: "Runs" });
    const shownInputs = () => list.locator(".run-input").allTextContents();
    await page.getByLabel("Assistant", { exact: true }).selectOption({ label: "Runs bot" });
    await list.waitFor();
    const all = await runsOf(assistantId);
    expect(all.map((run) => run.input)).toEqual(["never answered", "third question", "second question", markup]);
    expect(await shownInputs()).toEqual(all.map((run) => run.input));
    expect(await list.locator(".run-status").allTextContents()).toEqual(all.map((run) => run.status));
    expect(await seriousViolations(page)).toEqual([]);

    // The Status filter is the API's: the same runs as `?status=`, and it lands in the URL.
    await page.getByLabel("Status", { exact: true }).selectOption("SUCCEEDED");
    await expect.poll(shownInputs).toEqual((await runsOf(assistantId, "SUCCEEDED")).map((run) => run.input));
    expect(await shownInputs()).toHaveLength(3);
    expect(new URL(page.url()).search).toBe(`?assistant=${assistantId}&status=SUCCEEDED`);
    await page.getByLabel("Status", { exact: true }).selectOption("CANCELLED");
    await expect.poll(shownInputs).toEqual(["never answered"]);
    await page.getByLabel("Status", { exact: true }).selectOption("FAILED");
    await page.getByText("No FAILED runs of this assistant.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // The URL is shareable: opened afresh it shows the same view.
    await page.goto(`${session.loom.url}/console/runs?assistant=${assistantId}&status=SUCCEEDED`);
    await expect.poll(shownInputs).toEqual(["third question", "second question", markup]);

    // A finished run: its whole log at once, as ListAssistantEvents has it, the streamed answer one row.
    const first = done[0]!.assistant_run_id;
    await list.getByRole("listitem").filter({ hasText: markup }).getByRole("link").click();
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${first}`);
    const expected = await expectedRows(first);
    expect(expected).toContain("TextChunkEvent ×203");
    expect(expected.length).toBeLessThan(12);
    await expect.poll(() => shownRows(page)).toEqual(expected);
    expect(await shownStatus(page)).toBe("SUCCEEDED");
    const log = page.getByRole("log", { name: "Events" });
    await log
      .getByRole("listitem")
      .filter({ hasText: "TextChunkEvent" })
      .getByText(longAnswer, { exact: true })
      .waitFor();
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    // The input, as text everywhere: in the run's details, the events' summaries and a payload opened.
    await page.locator(".run-details").getByText(markup, { exact: true }).waitFor();
    await log.getByRole("listitem").filter({ hasText: "StartStructureRunEvent" }).getByText("Payload").click();
    await log.locator("details[open] pre").filter({ hasText: markup }).waitFor();
    expect(await page.locator("main img").count()).toBe(0);
    expect(await page.evaluate("window.__xss")).toBeUndefined();
    expect(await seriousViolations(page)).toEqual([]);

    await close();
  }, 60_000);

  it("shows a running run's events as they arrive, without reloading, then its end", async () => {
    const assistantId = await createAssistant("Slow bot");
    const answerText = "one two three four five six seven eight nine ten";
    const { page, close } = await session.openTab();
    await signedIn(page);
    // Ten words, 500 ms apart: the run goes on for about five seconds, watched from its start.
    model.reply(trickle(answerText, 500));
    const run = await createRun(assistantId, "take your time");
    await page.goto(`${session.loom.url}/console/runs/${run.assistant_run_id}`);
    await page.evaluate("window.__sameDocument = true");
    const log = page.getByRole("log", { name: "Events" });
    const streamed = log.getByRole("listitem").filter({ hasText: "TextChunkEvent" }).locator(".event-summary");
    // The answer grows in one row while the run is RUNNING, with a button to cancel it.
    await streamed.waitFor();
    const early = await streamed.textContent();
    expect(answerText.startsWith(early!) && early !== answerText, early!).toBe(true);
    expect(await shownStatus(page)).toBe("RUNNING");
    expect(await page.getByRole("button", { name: "Cancel run" }).isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await expect.poll(() => streamed.textContent(), { timeout: 15_000 }).toBe(answerText);
    await expect.poll(() => shownStatus(page), { timeout: 10_000 }).toBe("SUCCEEDED");
    await expect.poll(() => shownRows(page)).toEqual(await expectedRows(run.assistant_run_id));
    await page.locator(".run-details").getByText(answerText, { exact: true }).waitFor();
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    expect(await page.evaluate("window.__sameDocument")).toBe(true);

    await close();
  }, 60_000);

  it("pages an assistant's runs through the API, 20 at a time", async () => {
    const assistantId = await createAssistant("Busy bot");
    model.reply(answer("Done."));
    for (let i = 1; i <= 21; i++) await createRun(assistantId, `question ${i}`);
    // All ended before the next test scripts a model that never answers.
    await expect
      .poll(async () => (await runsOf(assistantId, "QUEUED,STARTING,RUNNING")).length, { timeout: 15_000 })
      .toBe(0);

    const { page, close } = await session.openTab();
    const pageSizes: string[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === `/assistants/${assistantId}/runs`)
        pageSizes.push(`${url.searchParams.get("page")}/${url.searchParams.get("page_size")}`);
    });
    await signedIn(page);
    await page.goto(`${session.loom.url}/console/runs?assistant=${assistantId}`);
    const list = page.getByRole("list", { name: "Runs" });
    await list.getByRole("link", { name: "question 21", exact: true }).waitFor();
    expect(await list.getByRole("listitem").count()).toBe(20);
    await page.getByText("Page 1 of 2").waitFor();
    await page.getByRole("button", { name: "Next" }).click();
    await list.getByRole("link", { name: "question 1", exact: true }).waitFor();
    expect(await list.getByRole("listitem").count()).toBe(1);
    expect(pageSizes).toEqual(["1/20", "2/20"]);
    expect(await seriousViolations(page)).toEqual([]);
    await close();
  }, 60_000);

  it("cancels a running run from its page, and shows the API's message for an unknown run and a refused cancel", async () => {
    const assistantId = await createAssistant("Stuck bot");
    model.reply(hang("Partial"));
    const run = await createRun(assistantId, "wait forever");

    const { page, close } = await session.openTab();
    await signedIn(page);
    await page.goto(`${session.loom.url}/console/runs/${run.assistant_run_id}`);
    const log = page.getByRole("log", { name: "Events" });
    await log.getByText("Partial", { exact: true }).waitFor();
    expect(await shownStatus(page)).toBe("RUNNING");
    await page.getByRole("button", { name: "Cancel run" }).click();
    await expect.poll(() => shownStatus(page), { timeout: 10_000 }).toBe("CANCELLED");
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    expect((await json<ApiRun>("GET", `/assistant-runs/${run.assistant_run_id}`)).status).toBe("CANCELLED");
    // The stream ends with the terminal event; the text streamed before the cancel stays.
    await expect.poll(() => shownRows(page)).toEqual(await expectedRows(run.assistant_run_id));
    expect((await shownRows(page)).at(-1)).toBe("AssistantRunCancelled");
    expect(await seriousViolations(page)).toEqual([]);

    // A run that does not exist (or is another organization's): the API's own message, once.
    const unknown = "0f2a4e6c-1b3d-4f5a-8c7e-9d0b1a2c3e4f";
    const missing = await session.api("GET", `/assistant-runs/${unknown}`);
    expect(missing.status).toBe(404);
    const notFound = ((await missing.json()) as { errors: { message: string }[] }).errors[0]!.message;
    await page.goto(`${session.loom.url}/console/runs/${unknown}`);
    await page.getByRole("alert").getByText(notFound, { exact: true }).waitFor();
    expect(await page.getByRole("alert").count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await close();

    // Refused: signed in with a key revoked while the run's page is open.
    const held = await createRun(assistantId, "wait again");
    const { users } = await json<{ users: { organizations: string[] }[] }>("GET", "/users");
    const minted = await json<{ api_key_id: string; value: string }>(
      "POST",
      `/organizations/${users[0]!.organizations[0]}/api-keys`,
      { name: "short-lived" },
    );
    const second = await session.openTab();
    await signedIn(second.page, minted.value);
    await second.page.goto(`${session.loom.url}/console/runs/${held.assistant_run_id}`);
    await second.page.getByRole("log", { name: "Events" }).getByText("Partial", { exact: true }).waitFor();
    expect((await session.api("DELETE", `/api-keys/${minted.api_key_id}`)).status).toBe(204);
    const refused = await session.api("POST", `/assistant-runs/${held.assistant_run_id}/cancel`, minted.value);
    const message = ((await refused.json()) as { errors: { message: string }[] }).errors[0]!.message;
    await second.page.getByRole("button", { name: "Cancel run" }).click();
    // The cancel's own note, under its button (the page may also say the run can no longer be read with this key).
    await second.page
      .locator("button:text-is('Cancel run') + [role=alert]")
      .getByText(message, { exact: true })
      .waitFor();
    expect(await shownStatus(second.page)).toBe("RUNNING");
    expect(await seriousViolations(second.page)).toEqual([]);
    await second.close();
    await json("POST", `/assistant-runs/${held.assistant_run_id}/cancel`);
  }, 60_000);
});
