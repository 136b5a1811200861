import { useEffect, useRef, useState } from "preact/hooks";
import { followEvents } from "../api/event-stream.ts";
import { messageOf } from "../api/request.ts";
import { type AssistantRun, getAssistantRun, listAssistantRuns, runEventsPath } from "../runs/api.ts";
import { createRun, listMessages } from "./api.ts";
import { type Turn, turnOfMessage, turnOfRun, withEnd, withEvent } from "./turn.ts";

/**
 * The conversation of one thread: its stored messages, then its runs as they
 * happen, each followed through its event stream until it ends and then read
 * once more for its final output. `threadId` undefined is a conversation not
 * started yet. Opening another thread, or leaving, stops following.
 */
export function useConversation(apiKey: string, assistantId: string, threadId: string | undefined) {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  /** The thread whose turns are in `turns`: a thread this screen just made is not loaded again when the URL names it. */
  const shown = useRef<string | undefined>(undefined);
  const following = useRef(new AbortController());
  useEffect(() => () => following.current.abort(), []);

  const update = (key: string, change: (turn: Turn) => Turn) =>
    setTurns((all) => all.map((turn) => (turn.key === key ? change(turn) : turn)));

  /** Follows a run's events into its turn, then reads the run for its final output, status and citations. */
  const follow = async (run: AssistantRun) => {
    const { signal } = following.current;
    const id = run.assistant_run_id;
    try {
      await followEvents(apiKey, runEventsPath(id), (event) => update(id, (turn) => withEvent(turn, event)), signal);
      if (signal.aborted) return;
      const ended = await getAssistantRun(apiKey, id);
      if (!signal.aborted) update(id, (turn) => withEnd(turn, ended));
    } catch (e) {
      if (!signal.aborted) update(id, (turn) => ({ ...turn, running: false, error: messageOf(e) }));
    }
  };

  useEffect(() => {
    if (threadId === shown.current) return;
    following.current.abort();
    following.current = new AbortController();
    const { signal } = following.current;
    shown.current = threadId;
    setTurns([]);
    setError(null);
    setLoading(Boolean(threadId));
    if (!threadId) return;
    (async () => {
      const [{ messages }, { assistant_runs }] = await Promise.all([
        listMessages(apiKey, threadId),
        // The assistant's runs not yet ended, newest first (the API's largest page): one on this thread is followed again.
        listAssistantRuns(apiKey, assistantId, ["QUEUED", "STARTING", "RUNNING"], 1, 100),
      ]);
      if (signal.aborted) return;
      // A run still going on this thread (awaiting approval, say) is followed again, after the stored turns;
      // one that ended between the two reads is already among them (its message has its id).
      const stored = new Set(messages.map((m) => m.message_id));
      const unfinished = assistant_runs
        .filter((run) => run.thread_id === threadId && !stored.has(run.assistant_run_id))
        .reverse();
      setTurns([...messages.map(turnOfMessage), ...unfinished.map((run) => turnOfRun(run, run.input ?? ""))]);
      // Each followed until it ends or the screen leaves it; `follow` shows its own failure in its turn.
      for (const run of unfinished) void follow(run);
    })()
      .catch((e) => signal.aborted || setError(messageOf(e)))
      .finally(() => signal.aborted || setLoading(false));
  }, [apiKey, assistantId, threadId]);

  /** Sends a message on `thread` (the one shown, or one just made for it) and follows the run it starts. */
  const send = async (thread: string, input: string) => {
    shown.current = thread;
    const run = await createRun(apiKey, assistantId, thread, input);
    setTurns((all) => [...all, turnOfRun(run, input)]);
    // Sending is done once the run exists: following it goes on, its failure shown in its turn.
    void follow(run);
  };

  return { turns, loading, error, send };
}
