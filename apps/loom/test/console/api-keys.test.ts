import { needsChromium } from "@loom/testing/browser";
import { describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

/** The API keys screen: a key created, shown once, renamed and revoked. */
describe.skipIf(!needsChromium("the console's API keys screen"))("the console: API keys", () => {
  const session = consoleSession();

  it("creates an API key, shows its value once, renames it, and revokes it: the next request with it is refused", async () => {
    const { context, page, close } = await session.openTab();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(session.loom.url).origin });
    await session.signIn(page);
    await page.getByRole("link", { name: "API keys", exact: true }).click();
    const list = page.getByRole("list", { name: "API keys" });
    await list.getByRole("listitem").first().waitFor();
    const before = await list.getByRole("listitem").count();

    await page.getByLabel("Name", { exact: true }).fill("CI key");
    await page.getByRole("button", { name: "Create" }).click();
    const shown = page.getByRole("region", { name: "New key's value" });
    const value = (await shown.locator("code").textContent()) ?? "";
    expect(value).toMatch(/^loom_[A-Za-z0-9_-]{43}$/);
    await shown.getByRole("button", { name: "Copy" }).click();
    await shown.getByRole("status").getByText("Copied.").waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(value);
    await list.getByText("CI key", { exact: true }).waitFor();
    expect(await list.getByRole("listitem").count()).toBe(before + 1);
    // The new key works, from outside the page.
    expect((await session.api("GET", "/assistants", value)).status).toBe(200);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole("button", { name: "Rename CI key" }).click();
    await expect.poll(() => page.getByLabel("New name").and(page.locator(":focus")).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel("New name").fill("CI key, renamed");
    await page.getByRole("button", { name: "Save" }).click();
    await list.getByText("CI key, renamed", { exact: true }).waitFor();

    // Shown once: after leaving the screen and coming back, the value is nowhere on the page.
    await page.getByRole("link", { name: "Assistants", exact: true }).click();
    await page.getByRole("heading", { name: "Assistants" }).waitFor();
    await page.getByRole("link", { name: "API keys", exact: true }).click();
    await list.getByText("CI key, renamed", { exact: true }).waitFor();
    expect(await page.getByText(value).count()).toBe(0);
    expect(await page.content()).not.toContain(value);

    await page.getByRole("button", { name: "Revoke CI key, renamed" }).click();
    const confirm = page.getByRole("group", { name: "Revoke CI key, renamed?" });
    // The focus goes to the choice that keeps the key: Enter alone revokes nothing.
    await expect
      .poll(() => confirm.getByRole("button", { name: "Cancel" }).and(page.locator(":focus")).count())
      .toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await confirm.getByRole("button", { name: "Yes, revoke" }).click();
    await expect.poll(() => list.getByText("CI key, renamed", { exact: true }).count()).toBe(0);
    expect(await list.getByRole("listitem").count()).toBe(before);
    expect((await session.api("GET", "/assistants", value)).status).toBe(401);

    await close();
  }, 60_000);

  it("says why when the signed-in key is revoked elsewhere: the next screen shows the API's refusal, not a blank page", async () => {
    const users = (await (await session.api("GET", "/users")).json()) as { users: { organizations: string[] }[] };
    const organizationId = users.users[0]!.organizations[0]!;
    const made = (await (
      await session.api("POST", `/organizations/${organizationId}/api-keys`, undefined, { name: "Soon revoked" })
    ).json()) as { api_key_id: string; value: string };

    const { page, close } = await session.openTab();
    await session.signIn(page, made.value);
    await page.getByRole("heading", { name: "Assistants" }).waitFor();
    expect((await session.api("DELETE", `/api-keys/${made.api_key_id}`)).status).toBe(204);
    const refused = (await (await session.api("GET", "/buckets", made.value)).json()) as {
      errors: { message: string }[];
    };

    await page.getByRole("link", { name: "Files", exact: true }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe(refused.errors[0]!.message);
    expect(await page.getByText("Loading buckets…").count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    // Still able to leave: signing out brings the sign-in form back.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key").waitFor();

    await close();
  }, 60_000);
});
