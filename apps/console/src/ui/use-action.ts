import { useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";

/**
 * One thing a person asks for (a form sent, a button pressed): `busy` while it
 * runs, so it is not sent twice, and its error to show if it fails. `run`
 * resolves to whether it succeeded.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (work: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await work();
      return true;
    } catch (e) {
      setError(messageOf(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}
