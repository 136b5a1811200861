/**
 * `AbortSignal.timeout`, cleared once the call is done: an unused one still fires when its time comes, building its
 * error and waking every signal that follows it, minutes after a call that took milliseconds.
 */
export function timeLimit(ms: number) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("The operation timed out.", "TimeoutError")), ms);
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}
