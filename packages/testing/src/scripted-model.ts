/**
 * A model double for run tests: records every conversation it is given and
 * answers as the test scripts it — an answer, a wait that only an abort ends,
 * or a failure. Shaped like the runs service's Model port.
 */
export interface ScriptedTurn {
  role: "system" | "user" | "assistant";
  content: string;
}

type Script =
  | { answer: (messages: ScriptedTurn[]) => string; chunkDelayMs?: number }
  | { hang: true }
  | { fail: () => Error };

export function createScriptedModel(id = "test:scripted") {
  const calls: ScriptedTurn[][] = [];
  let script: Script = { answer: (m) => `answer to ${m.at(-1)?.content ?? ""}` };
  const started: Array<() => void> = [];
  return {
    id,
    calls,
    /** What the next calls do. */
    script(next: Script) {
      script = next;
    },
    /** Resolves once a call is in progress (for cancel-while-running tests). */
    whenCalled: () => new Promise<void>((resolve) => started.push(resolve)),
    async generate(req: {
      messages: ScriptedTurn[];
      signal: AbortSignal;
      onChunk?: (token: string) => void | Promise<void>;
    }) {
      calls.push(req.messages.map((m) => ({ ...m })));
      started.splice(0).forEach((resolve) => resolve());
      const current = script;
      if ("hang" in current) {
        await new Promise((_, reject) => {
          if (req.signal.aborted) reject(req.signal.reason);
          req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true });
        });
      }
      if ("fail" in current) throw current.fail();
      const text = (current as { answer: (m: ScriptedTurn[]) => string }).answer(req.messages);
      if (req.onChunk) {
        const parts = text.match(/\S+\s*/g) ?? [text];
        const delay = (current as { chunkDelayMs?: number }).chunkDelayMs ?? 0;
        for (const part of parts) {
          if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
          if (req.signal.aborted) throw req.signal.reason;
          await req.onChunk(part);
        }
      }
      return { text, inputTokens: req.messages.length, outputTokens: text.length };
    },
  };
}
