import { needsChromium } from "@loom/testing/browser";
import { describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

/** Signing in and out, and the Assistants screen: create, list, page, names as text. */
describe.skipIf(!needsChromium("the console's sign-in and Assistants screen"))(
  "the console: sign-in and assistants",
  () => {
    const session = consoleSession();

    it("signs in with the key, lists the organization's assistants, creates one and lists it, and signs out", async () => {
      const { context, page, close } = await session.openTab();
      await session.signIn(page);

      await page.getByRole("link", { name: "Assistants", exact: true }).click();
      await page.getByText("No assistants yet.").waitFor();
      // By keyboard: the button opens the form with the focus in "Name", Enter creates.
      await page.getByRole("button", { name: "New assistant" }).focus();
      await page.keyboard.press("Enter");
      await expect.poll(() => page.getByLabel("Name").and(page.locator(":focus")).count()).toBe(1);
      expect(await seriousViolations(page)).toEqual([]);
      await page.keyboard.type("Support bot");
      await page.keyboard.press("Enter");
      const list = page.getByRole("list", { name: "Assistants" });
      await list.getByText("Support bot", { exact: true }).waitFor();
      expect(await list.getByRole("listitem").count()).toBe(1);
      expect(await seriousViolations(page)).toEqual([]);
      // Made through the API, in the key's organization.
      const listed = (await (await session.api("GET", "/assistants")).json()) as { assistants: { name: string }[] };
      expect(listed.assistants.map((a) => a.name)).toEqual(["Support bot"]);

      // The key lives in this tab's session only: never in the URL, nor in localStorage or a cookie.
      expect(page.url()).not.toContain(session.key);
      expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([session.key]);
      expect(await page.evaluate(() => localStorage.length)).toBe(0);
      expect(await context.cookies()).toEqual([]);
      // A reload keeps the session, on the screen's own path.
      await page.reload();
      expect(new URL(page.url()).pathname).toBe("/console/assistants");
      await list.getByText("Support bot", { exact: true }).waitFor();

      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("API key").waitFor();
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

      await close();
    }, 60_000);
    it("shows the API's own message for a wrong key, and keeps nothing", async () => {
      const wrong = "loom_not-a-key-0123456789abcdefghijklmnopqrstuv";
      const refused = (await (await session.api("GET", "/assistants", wrong)).json()) as {
        errors: { message: string }[];
      };
      expect(refused.errors[0]?.message).toBeTruthy();

      const { page, close } = await session.openTab();
      await session.signIn(page, wrong);
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toBe(refused.errors[0]!.message);
      expect(await seriousViolations(page)).toEqual([]);
      expect(await page.getByLabel("API key").isVisible()).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

      await close();
    }, 60_000);
    it("renders a name as text, running nothing in it, and pages through the list 20 at a time", async () => {
      const markup = "<img src=x onerror=window.__xss=1>";
      // 21 more: with the first test's, 23 assistants, two pages; the newest (this one) first.
      for (let i = 1; i <= 21; i++)
        expect((await session.api("POST", "/assistants", undefined, { name: `Paged ${i}` })).status).toBe(201);
      expect((await session.api("POST", "/assistants", undefined, { name: markup })).status).toBe(201);

      const { page, close } = await session.openTab();
      const pageSizes: string[] = [];
      page.on("request", (request) => {
        const url = new URL(request.url());
        if (url.pathname === "/assistants")
          pageSizes.push(`${url.searchParams.get("page")}/${url.searchParams.get("page_size")}`);
      });
      await session.signIn(page);
      const list = page.getByRole("list", { name: "Assistants" });
      await list.getByText(markup, { exact: true }).waitFor();
      expect(await list.locator("img").count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();

      expect(await list.getByRole("listitem").count()).toBe(20);
      await page.getByText("Page 1 of 2").waitFor();
      await page.getByRole("button", { name: "Next" }).click();
      await page.getByText("Page 2 of 2").waitFor();
      expect(await list.getByRole("listitem").allTextContents()).toEqual(["Paged 2", "Paged 1", "Support bot"]);
      expect(pageSizes).toContain("2/20");

      await close();
    }, 60_000);
  },
);
