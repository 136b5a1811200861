import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { nodeFlagsFor, repoRoot, serviceNodeFlags } from "@loom/testing/processes";
import { describe, expect, it } from "vitest";

const dockerfile = readFileSync(fileURLToPath(new URL("../../../infra/docker/Dockerfile", import.meta.url)), "utf8");

/** The Node flags the image's CMD gives the process of `app` (its shell picks the semi-space size). */
function imageFlags(app: string): string[] {
  const cmd = /^CMD \["sh", "-c", "(.*)"\]$/m.exec(dockerfile)?.[1]?.replaceAll('\\"', '"');
  if (!cmd) throw new Error("no CMD in infra/docker/Dockerfile");
  const semi = /if \[ "\$APP" = loom \] \|\| \[ "\$APP" = gateway \]; then semi=(\d+); else semi=(\d+); fi/.exec(cmd);
  const flags = /exec node((?:\s+--\S+)*)\s+apps\/\$\{APP\}\/src\/main\.ts/.exec(cmd)?.[1];
  if (!semi || flags === undefined) throw new Error(`the image's CMD is not the expected shape: ${cmd}`);
  return flags
    .trim()
    .split(/\s+/)
    .map((flag) => flag.replace("$semi", app === "loom" || app === "gateway" ? semi[1]! : semi[2]!));
}

/**
 * Every way Loom starts a process gives Node the same flags (docs/decisions.md,
 * "Node flags"): the image, `pnpm start`, and the tests and benches, which
 * start processes as those two do. One place without the pretenuring flag
 * leaves its processes a one-in-three chance of running 20–70% slower.
 */
describe("Node flags", () => {
  it("the image's all-in-one and `pnpm start` run with the same flags, pretenuring off", () => {
    const started = nodeFlagsFor(`${repoRoot}/apps/loom/src/main.ts`);
    expect(started).toEqual(imageFlags("loom"));
    expect(started).toContain("--no-allocation-site-pretenuring");
    expect(started).toContain("--max-semi-space-size=8");
  });

  it("a service runs in tests as in the image, pretenuring off", () => {
    expect(serviceNodeFlags).toEqual(imageFlags("identity"));
    expect(serviceNodeFlags).toContain("--no-allocation-site-pretenuring");
    expect(nodeFlagsFor("apps/identity/src/main.ts")).toEqual(serviceNodeFlags);
  });

  it("the gateway runs in tests as in the image: 8 MB semi-spaces, as the all-in-one", () => {
    expect(nodeFlagsFor("apps/gateway/src/main.ts")).toEqual(imageFlags("gateway"));
    expect(imageFlags("gateway")).toContain("--max-semi-space-size=8");
    expect(imageFlags("gateway")).toContain("--no-allocation-site-pretenuring");
  });
});
