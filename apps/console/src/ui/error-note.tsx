/** An error, said where it happened and announced to screen readers; nothing when there is none. */
export function ErrorNote({ error }: { error: string | null }) {
  return error ? (
    <p role="alert" class="error">
      {error}
    </p>
  ) : null;
}
