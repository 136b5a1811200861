import { needsChromium } from "@loom/testing/browser";
import { describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

/** An assistant's page: edit its fields and pick its rulesets (in order), tools and knowledge bases; a refused save; delete. */
describe.skipIf(!needsChromium("the console's assistant page"))("the console: editing an assistant", () => {
  const session = consoleSession();

  /** Makes a resource through the API and answers its id field. */
  async function made(path: string, body: unknown, idField: string): Promise<string> {
    const response = await session.api("POST", path, undefined, body);
    expect(response.status, await response.clone().text()).toBe(201);
    return ((await response.json()) as Record<string, string>)[idField]!;
  }
  const assistantNow = async (id: string) =>
    (await (await session.api("GET", `/assistants/${id}`)).json()) as Record<string, unknown>;

  it("edits the fields, picks and orders rulesets, a tool and a knowledge base, saves, shows a refusal, and deletes", async () => {
    const assistantId = await made("/assistants", { name: "Helper", description: "Old words" }, "assistant_id");
    const tone = await made("/rulesets", { name: "Tone" }, "ruleset_id");
    const safety = await made("/rulesets", { name: "Safety" }, "ruleset_id");
    const doomed = await made("/rulesets", { name: "Doomed" }, "ruleset_id");
    // A tool is only a record until a run calls it: its server need not be up, nor even exist.
    const search = await made(
      "/tools",
      { name: "Search", server: { url: "http://127.0.0.1:9/mcp", transport: "mcp" } },
      "tool_id",
    );
    const docs = await made("/knowledge-bases", { name: "Docs" }, "knowledge_base_id");

    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("list", { name: "Assistants" }).getByRole("link", { name: "Helper" }).click();
    await page.getByRole("heading", { name: "Helper" }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/assistants/${assistantId}`);
    expect(await page.getByRole("link", { name: "Chat with Helper" }).getAttribute("href")).toBe(
      `/console/chat?assistant=${assistantId}`,
    );
    expect(await page.getByRole("link", { name: "Runs of Helper" }).getAttribute("href")).toBe(
      `/console/runs?assistant=${assistantId}`,
    );
    const rulesets = page.getByRole("group", { name: "Rulesets" });
    await rulesets.getByLabel("Safety").waitFor();
    await page.getByRole("group", { name: "Tools" }).getByLabel("Search").waitFor();
    await page.getByRole("group", { name: "Knowledge bases" }).getByLabel("Docs").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel("Name", { exact: true }).fill("Helper 2");
    await page.getByLabel("Description").fill("Answers questions");
    await page.getByLabel("Input template").fill("Hello {{ args[0] }}");
    // Picked Safety first, then Tone: the order list keeps that order, and Tone is moved up.
    await rulesets.getByLabel("Safety").check();
    await rulesets.getByLabel("Tone").check();
    const order = page.getByRole("list", { name: /Ruleset order/ });
    expect(await order.getByRole("listitem").locator(".name").allTextContents()).toEqual(["Safety", "Tone"]);
    await order.getByRole("button", { name: "Move Tone up" }).click();
    expect(await order.getByRole("listitem").locator(".name").allTextContents()).toEqual(["Tone", "Safety"]);
    await page.getByRole("group", { name: "Tools" }).getByLabel("Search").check();
    await page.getByRole("group", { name: "Knowledge bases" }).getByLabel("Docs").check();
    await rulesets.getByText("2 picked").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").getByText("Saved.").waitFor();
    await page.getByRole("heading", { name: "Helper 2" }).waitFor();

    const saved = await assistantNow(assistantId);
    expect(saved).toMatchObject({
      name: "Helper 2",
      description: "Answers questions",
      input: "Hello {{ args[0] }}",
      ruleset_ids: [tone, safety],
      tool_ids: [search],
      knowledge_base_ids: [docs],
    });

    // A ruleset deleted after the picker listed it: the save is refused with the API's own message, nothing changes.
    expect((await session.api("DELETE", `/rulesets/${doomed}`)).status).toBe(204);
    await page.getByLabel("Description").fill("Changed words");
    await rulesets.getByLabel("Doomed").check();
    const refusal = await session.api("PATCH", `/assistants/${assistantId}`, undefined, {
      description: "Changed words",
      ruleset_ids: [tone, safety, doomed],
    });
    expect(refusal.status).toBe(400);
    const message = ((await refusal.json()) as { errors: { message: string }[] }).errors.map((e) => e.message);
    await page.getByRole("button", { name: "Save" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe(message.join("; "));
    expect(await alert.textContent()).toContain(doomed);
    expect(await seriousViolations(page)).toEqual([]);
    expect(await assistantNow(assistantId)).toEqual(saved);

    // Delete asks first, with the focus on Cancel; then the list, and the API no longer has it.
    await page.getByRole("button", { name: "Delete Helper 2" }).click();
    const confirm = page.getByRole("group", { name: "Delete Helper 2?" });
    await expect
      .poll(() => confirm.getByRole("button", { name: "Cancel" }).and(page.locator(":focus")).count())
      .toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await confirm.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("No assistants yet.").waitFor();
    expect(new URL(page.url()).pathname).toBe("/console/assistants");
    expect((await session.api("GET", `/assistants/${assistantId}`)).status).toBe(404);

    await close();
  }, 60_000);

  it("pages through the rulesets in the picker, keeping what was picked on other pages, in the order picked", async () => {
    // With the first test's two, 24 rulesets: page 1 holds the 20 newest (R22 … R3), page 2 the rest.
    const ids: Record<string, string> = {};
    for (let i = 1; i <= 22; i++) ids[`R${i}`] = await made("/rulesets", { name: `R${i}` }, "ruleset_id");
    const assistantId = await made("/assistants", { name: "Paged" }, "assistant_id");

    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("list", { name: "Assistants" }).getByRole("link", { name: "Paged" }).click();
    const rulesets = page.getByRole("group", { name: "Rulesets" });
    const pages = rulesets.getByRole("navigation", { name: "Pages of rulesets" });
    await pages.getByText("Page 1 of 2").waitFor();
    await rulesets.getByLabel("R22", { exact: true }).check();
    await pages.getByRole("button", { name: "Next" }).click();
    await pages.getByText("Page 2 of 2").waitFor();
    await rulesets.getByLabel("R1", { exact: true }).check();
    await rulesets.getByLabel("R2", { exact: true }).check();
    await pages.getByRole("button", { name: "Previous" }).click();
    await pages.getByText("Page 1 of 2").waitFor();
    expect(await rulesets.getByLabel("R22", { exact: true }).isChecked()).toBe(true);
    await rulesets.getByText("3 picked").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").getByText("Saved.").waitFor();
    expect((await assistantNow(assistantId)).ruleset_ids).toEqual([ids.R22, ids.R1, ids.R2]);

    // Opened afresh, the order names each picked ruleset, those on page 2 too.
    await page.reload();
    const order = page.getByRole("list", { name: /Ruleset order/ });
    await expect.poll(() => order.locator(".name").allTextContents()).toEqual(["R22", "R1", "R2"]);

    await close();
  }, 60_000);
});
