import { useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { segment } from "../api/request.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { useAction } from "../ui/use-action.ts";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createThread, listThreads } from "./api.ts";
import { AssistantPicker } from "./assistant-picker.tsx";
import { Conversation } from "./conversation.tsx";
import { useConversation } from "./use-conversation.ts";
import "./chat.css";

/** A thread's own address, to reload or share: `/console/chat/<thread_id>?assistant=<assistant_id>`. */
const chatUrl = (assistantId: string, threadId?: string) =>
  `/console/chat${threadId ? `/${segment(threadId)}` : ""}${assistantId ? `?assistant=${segment(assistantId)}` : ""}`;

/** A new thread's name: the start of its first message (a name is 1..200 characters). */
const threadName = (message: string) => (message.length > 80 ? `${message.slice(0, 79)}…` : message);

/**
 * Chat with an assistant: pick it (or come with `?assistant=`), reopen one of
 * its earlier threads or start a new one, and talk; answers stream in as the
 * run's events arrive.
 */
export function Chat({ apiKey, threadId }: { apiKey: string; threadId?: string }) {
  const { query, route } = useLocation();
  const assistantId = query.assistant ?? "";
  const [threadsMade, setThreadsMade] = useState(0);
  const conversation = useConversation(apiKey, assistantId, threadId);

  /** Sends on the open thread, or makes the assistant's new thread first and moves to its address. */
  const send = async (text: string) => {
    const thread = threadId ?? (await createThread(apiKey, assistantId, threadName(text))).thread_id;
    // `send` takes the thread as the one shown before its first await: moving to its address then reloads nothing.
    const sent = conversation.send(thread, text);
    if (!threadId) {
      route(chatUrl(assistantId, thread), true);
      setThreadsMade((n) => n + 1);
    }
    await sent;
  };

  return (
    <section aria-labelledby="chat-heading">
      <h1 id="chat-heading">Chat</h1>
      <AssistantPicker apiKey={apiKey} value={assistantId} onChange={(id) => route(chatUrl(id))} />
      {assistantId && (
        <div class="chat">
          <Threads apiKey={apiKey} assistantId={assistantId} threadId={threadId} version={threadsMade} />
          <div class="talk">
            <ErrorNote error={conversation.error} />
            <Conversation apiKey={apiKey} turns={conversation.turns} loading={conversation.loading} />
            <MessageForm onSend={send} />
          </div>
        </div>
      )}
    </section>
  );
}

/** The assistant's earlier threads, newest first, each a link to reopen it; and a way to start afresh. */
function Threads({
  apiKey,
  assistantId,
  threadId,
  version,
}: {
  apiKey: string;
  assistantId: string;
  threadId?: string;
  version: number;
}) {
  const { view } = usePagedList("threads", (page, size) => listThreads(apiKey, assistantId, page, size), [
    apiKey,
    assistantId,
    version,
  ]);
  return (
    <nav aria-labelledby="threads-heading" class="threads">
      <h2 id="threads-heading">Threads</h2>
      {threadId && (
        <p>
          <a href={chatUrl(assistantId)}>New conversation</a>
        </p>
      )}
      <PagedItems
        label="Threads"
        {...view}
        empty="No threads yet."
        item={(thread) => (
          <li key={thread.thread_id}>
            <a
              href={chatUrl(assistantId, thread.thread_id)}
              aria-current={thread.thread_id === threadId ? "page" : undefined}
            >
              {thread.name}
            </a>
          </li>
        )}
      />
    </nav>
  );
}

/** The text box "Message" and "Send" (Enter sends); the box empties once the run is started. */
function MessageForm({ onSend }: { onSend: (text: string) => Promise<void> }) {
  const [text, setText] = useState("");
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const message = text.trim();
    if (message && (await run(() => onSend(message)))) setText("");
  };
  return (
    <form onSubmit={submit} aria-label="Send a message" class="message">
      <label for="chat-message">Message</label>
      <input
        id="chat-message"
        required
        autocomplete="off"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy}>
        Send
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
