import { Code, ConnectError } from "@connectrpc/connect";
import type { ServeBlob } from "@loom/blob-plane/exchange";

/** The blob data plane of a gateway built without a storage service. */
export const noBlobs: ServeBlob = async () => {
  throw new ConnectError("no storage service in this test", Code.Unimplemented);
};
