import { Code, ConnectError } from "@connectrpc/connect";

export function logClosed(): ConnectError {
  return new ConnectError(
    "the run's event log is closed: its terminal event has been written",
    Code.FailedPrecondition,
  );
}
