import { useState } from "preact/hooks";
import { listAssistants } from "./api.ts";

/** Checks the key with one small request before keeping it, so a wrong key says why at once. */
export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await listAssistants(key.trim(), 1, 1);
      onSignedIn(key.trim());
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
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
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </main>
  );
}
