import { useState } from "preact/hooks";
import { listAssistants } from "../assistants/api.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { useAction } from "../ui/use-action.ts";

/** Checks the key with one small request before keeping it, so a wrong key says why at once. */
export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState("");
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (await run(() => listAssistants(key.trim(), 1, 1))) onSignedIn(key.trim());
  };

  return (
    <main class="sign-in">
      <h1>Loom console</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}
