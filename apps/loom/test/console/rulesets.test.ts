import { needsChromium } from "@loom/testing/browser";
import { describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

interface Rule {
  rule_id: string;
  name: string;
  rule: string;
}

/** The Rulesets screen: a ruleset made, its rules added, edited, reordered and deleted; names as text; delete. */
describe.skipIf(!needsChromium("the console's Rulesets screen"))("the console: rulesets", () => {
  const session = consoleSession();

  it("creates a ruleset, adds three rules, edits one, reorders them, deletes one, edits its details, and deletes it", async () => {
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("link", { name: "Rulesets", exact: true }).click();
    await page.getByText("No rulesets yet.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "New ruleset" }).click();
    await expect.poll(() => page.getByLabel("Name").and(page.locator(":focus")).count()).toBe(1);
    await page.getByLabel("Name").fill("Tone");
    await page.getByLabel("Alias (optional)").fill("tone");
    await page.getByLabel("Description (optional)").fill("How to speak");
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("list", { name: "Rulesets" }).getByRole("link", { name: "Tone" }).click();
    await page.getByText("No rules yet.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    const rules = page.getByRole("list", { name: /^Rules/ });
    const texts = () => rules.locator(".rule-text").allTextContents();
    for (const text of ["Be brief.", "Be kind."]) {
      await page.getByLabel("New rule").fill(text);
      await page.getByRole("button", { name: "Add rule" }).click();
      await rules.getByText(text, { exact: true }).waitFor();
    }
    // From the keyboard: in the rule's text (several lines) Ctrl+Enter adds it.
    await page.getByLabel("New rule").focus();
    await page.keyboard.type("Cite sources.");
    await page.keyboard.press("Control+Enter");
    await rules.getByText("Cite sources.", { exact: true }).waitFor();
    expect(await texts()).toEqual(["Be brief.", "Be kind.", "Cite sources."]);
    expect(await page.getByLabel("New rule").inputValue()).toBe("");

    await page.getByRole("button", { name: "Edit rule 2" }).click();
    const field = page.getByLabel("Text of rule 2");
    await expect.poll(() => field.and(page.locator(":focus")).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await field.fill("Be kind and patient.");
    await page.getByRole("form", { name: "Edit rule 2" }).getByRole("button", { name: "Save" }).click();
    await rules.getByText("Be kind and patient.", { exact: true }).waitFor();
    // The focus goes back to the button that opened the form.
    await expect
      .poll(() => page.getByRole("button", { name: "Edit rule 2" }).and(page.locator(":focus")).count())
      .toBe(1);

    // Cite sources moves up, and the focus follows it, so the keyboard can keep moving it.
    await page.getByRole("button", { name: "Move rule 3 up" }).click();
    await expect.poll(texts).toEqual(["Be brief.", "Cite sources.", "Be kind and patient."]);
    await expect
      .poll(() => page.getByRole("button", { name: "Move rule 2 up" }).and(page.locator(":focus")).count())
      .toBe(1);

    await page.getByRole("button", { name: "Delete rule 1" }).click();
    const confirm = page.getByRole("group", { name: "Delete rule 1?" });
    await expect
      .poll(() => confirm.getByRole("button", { name: "Cancel" }).and(page.locator(":focus")).count())
      .toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await confirm.getByRole("button", { name: "Yes, delete" }).click();
    await expect.poll(texts).toEqual(["Cite sources.", "Be kind and patient."]);
    expect(await seriousViolations(page)).toEqual([]);

    // Its own details, edited in place: the focus goes into the form, and back to the button after.
    await page.getByRole("button", { name: "Edit details" }).click();
    await expect.poll(() => page.getByLabel("Name").and(page.locator(":focus")).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel("Name").fill("Tone of voice");
    await page.getByLabel("Description (optional)").fill("How we speak");
    await page.getByRole("form", { name: "Edit Tone" }).getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { name: "Tone of voice" }).waitFor();
    await expect
      .poll(() => page.getByRole("button", { name: "Edit details" }).and(page.locator(":focus")).count())
      .toBe(1);
    await page.getByText("How we speak").waitFor();

    // What the API holds: the ruleset's rule_ids in that order, the edited rule renamed after its text, the deleted one gone.
    const [ruleset] = (
      (await (await session.api("GET", "/rulesets")).json()) as { rulesets: Record<string, unknown>[] }
    ).rulesets;
    expect(ruleset).toMatchObject({ name: "Tone of voice", alias: "tone", description: "How we speak" });
    const held = (
      (await (await session.api("GET", `/rules?ruleset_id=${ruleset!.ruleset_id}`)).json()) as {
        rules: Rule[];
      }
    ).rules;
    expect(held.map((r) => r.rule)).toEqual(["Cite sources.", "Be kind and patient."]);
    expect(held.map((r) => r.name)).toEqual(["Cite sources.", "Be kind and patient."]);
    expect(ruleset!.rule_ids).toEqual(held.map((r) => r.rule_id));
    const everyRule = ((await (await session.api("GET", "/rules")).json()) as { rules: Rule[] }).rules;
    expect(everyRule.map((r) => r.rule).sort()).toEqual(["Be kind and patient.", "Cite sources."]);

    await page.getByRole("button", { name: "Delete Tone of voice" }).click();
    await page
      .getByRole("group", { name: "Delete Tone of voice?" })
      .getByRole("button", { name: "Yes, delete" })
      .click();
    await page.getByText("No rulesets yet.").waitFor();
    expect((await session.api("GET", `/rulesets/${ruleset!.ruleset_id}`)).status).toBe(404);

    await close();
  }, 60_000);

  it("renders a ruleset's name as text, running nothing in it, and shows the API's refusal to delete one in use", async () => {
    const markup = "<img src=x onerror=window.__xss=1>";
    const created = await session.api("POST", "/rulesets", undefined, { name: markup });
    const { ruleset_id } = (await created.json()) as { ruleset_id: string };
    expect(
      (await session.api("POST", "/assistants", undefined, { name: "Uses it", ruleset_ids: [ruleset_id] })).status,
    ).toBe(201);

    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("link", { name: "Rulesets", exact: true }).click();
    const list = page.getByRole("list", { name: "Rulesets" });
    await list.getByRole("link", { name: markup }).click();
    await page.getByRole("heading", { name: markup }).waitFor();
    expect(await page.locator("main img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();

    const refusal = await session.api("DELETE", `/rulesets/${ruleset_id}`);
    expect(refusal.status).toBe(409);
    const message = ((await refusal.json()) as { errors: { message: string }[] }).errors.map((e) => e.message);
    await page.getByRole("button", { name: `Delete ${markup}` }).click();
    await page
      .getByRole("group", { name: `Delete ${markup}?` })
      .getByRole("button", { name: "Yes, delete" })
      .click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe(message.join("; "));
    expect(await seriousViolations(page)).toEqual([]);
    expect((await session.api("GET", `/rulesets/${ruleset_id}`)).status).toBe(200);

    await close();
  }, 60_000);
});
