import { needsChromium } from "@loom/testing/browser";
import { describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

/** The Knowledge screens: a knowledge base on a bucket, ingested with its progress shown, and queried. */
describe.skipIf(!needsChromium("the console's Knowledge screens"))("the console: knowledge", () => {
  const session = consoleSession();

  /** A text file put in the bucket through the API and a signed URL, as a second client would. */
  async function upload(bucketId: string, name: string, text: string) {
    expect((await session.api("PUT", `/buckets/${bucketId}/assets`, undefined, { name })).ok).toBe(true);
    const signed = (await (
      await session.api("POST", `/buckets/${bucketId}/asset-urls/${encodeURIComponent(name)}`, undefined, {
        operation: "PUT",
      })
    ).json()) as { url: string; headers: Record<string, string> };
    const put = await fetch(signed.url, {
      method: "PUT",
      body: text,
      headers: { ...signed.headers, "content-type": "text/plain" },
    });
    expect(put.status).toBe(200);
  }

  it("creates a knowledge base on a bucket, ingests it with the job's progress, queries it and shows chunks as text", async () => {
    const bucket = (await (await session.api("POST", "/buckets", undefined, { name: "Handbook" })).json()) as {
      bucket_id: string;
    };
    const markup = "<img src=x onerror=window.__xss=1>";
    await upload(bucket.bucket_id, "guide/holidays.txt", "Employees get thirty days of paid holiday each year.");
    await upload(bucket.bucket_id, "guide/markup.txt", `Printers jam on Mondays. ${markup}`);
    const bytes = ("Employees get thirty days of paid holiday each year." + `Printers jam on Mondays. ${markup}`)
      .length;

    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("link", { name: "Knowledge", exact: true }).click();
    await page.getByText("No knowledge bases yet.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // The form takes the focus; an embedding model this deployment lacks is refused with the API's message.
    await page.getByRole("button", { name: "New knowledge base" }).click();
    const form = page.getByRole("form", { name: "New knowledge base" });
    await expect.poll(() => form.getByLabel("Name").and(page.locator(":focus")).count()).toBe(1);
    await form.getByLabel("Name").fill("Company handbook");
    await form.getByLabel("Files from bucket").selectOption({ label: "Handbook" });
    await form.getByLabel("Folder or file in the bucket").fill("guide/");
    await form.getByLabel("Embedding model").fill("openai:text-embedding-3-small");
    await form.getByRole("button", { name: "Create" }).click();
    await form.getByRole("alert").getByText("no embedding model is configured", { exact: false }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByLabel("Embedding model").fill("");
    await form.getByRole("button", { name: "Create" }).click();
    const list = page.getByRole("list", { name: "Knowledge bases" });
    await list.getByRole("link", { name: "Company handbook" }).click();

    // Its page: what it reads, made through the API with the bucket's id.
    await page.getByRole("heading", { name: "Company handbook" }).waitFor();
    await page.getByText("Handbook/guide/", { exact: true }).waitFor();
    await page.getByText("Not ingested yet.").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    const listed = (await (await session.api("GET", "/knowledge-bases")).json()) as {
      knowledge_bases: { asset_paths: string[] }[];
    };
    expect(listed.knowledge_bases.map((kb) => kb.asset_paths)).toEqual([[`${bucket.bucket_id}/guide/`]]);

    // Edited in place: the form keeps what it reads, and the page shows the change.
    await page.getByRole("button", { name: "Edit" }).click();
    const edit = page.getByRole("form", { name: "Edit Company handbook" });
    await edit.getByRole("listitem").getByText("Handbook/guide/").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await edit.getByLabel("Description").fill("Policies and office life");
    await edit.getByRole("button", { name: "Save" }).click();
    await page.getByText("Policies and office life").waitFor();
    await page.getByText("Handbook/guide/", { exact: true }).waitFor();

    await page.getByRole("button", { name: "Ingest" }).click();
    const progress = page.getByRole("status", { name: "Ingest progress" });
    await progress.getByText("SUCCEEDED").waitFor({ timeout: 30_000 });
    await progress.getByText(`${bytes.toLocaleString("en-US")} bytes ingested`).waitFor();
    await page.getByRole("list", { name: "Ingest jobs" }).getByText("SUCCEEDED").waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel("Query", { exact: true }).fill("holiday");
    await page.getByRole("button", { name: "Search" }).click();
    const hits = page.getByRole("list", { name: "Hits" });
    const first = hits.getByRole("listitem").first();
    await first.getByText("guide/holidays.txt", { exact: true }).waitFor();
    await first.getByText("Employees get thirty days of paid holiday each year.").waitFor();
    await first.getByText(/^score \d/).waitFor();
    await first.getByText("chunk 1", { exact: false }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // A chunk is text: the markup in a file is shown, and runs nothing.
    await page.getByLabel("Query", { exact: true }).fill("printers");
    await page.getByRole("button", { name: "Search" }).click();
    await hits.getByText(`Printers jam on Mondays. ${markup}`).waitFor();
    expect(await hits.getByRole("listitem").first().getByText("guide/markup.txt", { exact: true }).count()).toBe(1);
    expect(await hits.locator("img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();

    await page.getByRole("link", { name: "All knowledge bases" }).click();
    await page.getByRole("button", { name: "Delete Company handbook" }).click();
    await page
      .getByRole("group", { name: "Delete Company handbook?" })
      .getByRole("button", { name: "Yes, delete" })
      .click();
    await page.getByText("No knowledge bases yet.").waitFor();

    await close();
  }, 60_000);
});
