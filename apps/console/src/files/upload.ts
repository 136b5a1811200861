import { errorMessage } from "../api/request.ts";
import type { AssetUrl } from "./api.ts";

/**
 * PUTs a file to a signed URL, reporting the bytes sent. XMLHttpRequest, not
 * fetch: only it reports an upload's progress. The File goes as the body
 * itself, so the browser streams it from disk rather than holding it in memory.
 */
export function putFile(
  signed: AssetUrl,
  file: File,
  onProgress: (sent: number, total: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", signed.url);
    for (const [name, value] of Object.entries(signed.headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(file.size, file.size);
        resolve();
      } else reject(new Error(errorMessage(xhr.status, xhr.statusText, xhr.responseText)));
    };
    xhr.onerror = () => reject(new Error("The upload failed: the connection was lost."));
    xhr.send(file);
  });
}
