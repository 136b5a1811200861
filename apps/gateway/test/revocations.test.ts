import { describe, expect, it } from "vitest";
import { createRevocations } from "../src/revocations.ts";

describe("the replica's log of revoked keys", () => {
  it("tells a key revoked after a mark from one revoked before it, and from other keys", () => {
    const revocations = createRevocations();
    revocations.revoke("early");
    const mark = revocations.mark();
    revocations.revoke("late");
    expect(revocations.revokedSince("late", mark)).toBe(true);
    expect(revocations.revokedSince("early", mark)).toBe(false);
    expect(revocations.revokedSince("never", mark)).toBe(false);
  });

  it("tells every listener of each revocation, in order", () => {
    const revocations = createRevocations();
    const heard: string[] = [];
    revocations.onRevoke((id) => heard.push(`a:${id}`));
    revocations.onRevoke((id) => heard.push(`b:${id}`));
    revocations.revoke("k1");
    revocations.revoke("k2");
    expect(heard).toEqual(["a:k1", "b:k1", "a:k2", "b:k2"]);
  });

  it("answers yes, never no, for a mark older than what it has forgotten", () => {
    const revocations = createRevocations({ remember: 2 });
    const old = revocations.mark();
    for (const id of ["k1", "k2", "k3"]) revocations.revoke(id); // k1 forgotten
    expect(revocations.revokedSince("k1", old)).toBe(true);
    expect(revocations.revokedSince("unrelated", old)).toBe(true);
    // A mark taken after the forgotten revocation is answered exactly again.
    const recent = revocations.mark();
    expect(revocations.revokedSince("unrelated", recent)).toBe(false);
  });
});
