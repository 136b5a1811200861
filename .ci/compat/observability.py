"""The griptape framework's own GriptapeCloudObservabilityDriver against
Loom: an Agent (GriptapeCloudPromptDriver, loom:echo) runs under it, its
exporter posts the spans as a bare array and counts Loom's answer a success
(it takes exactly 200), and the structure run then lists them, one trace
whose root is the driver's "main" span. Run by .ci/griptape-compat.ts."""
import logging
import os
import uuid

import requests
from griptape.drivers.observability.griptape_cloud import GriptapeCloudObservabilityDriver
from griptape.drivers.prompt.griptape_cloud import GriptapeCloudPromptDriver
from griptape.observability import Observability
from griptape.structures import Agent
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from checks import Checks

logging.getLogger("griptape").setLevel(logging.ERROR)  # the agent logs every step at INFO
url, key = os.environ["LOOM_URL"], os.environ["LOOM_KEY"]
checks = Checks("griptape observability driver")
check = checks.check
run_id = str(uuid.uuid4())

driver = GriptapeCloudObservabilityDriver(base_url=url, api_key=key, structure_run_id=run_id)
# A copy of every finished span, to hand to the driver's own exporter below and read its verdict.
finished = InMemorySpanExporter()
driver.trace_provider.add_span_processor(SimpleSpanProcessor(finished))
with Observability(observability_driver=driver):
    Agent(prompt_driver=GriptapeCloudPromptDriver(base_url=url, api_key=key)).run("Hello")

res = requests.get(f"{url}/api/structure-runs/{run_id}/spans?page_size=100", headers={"Authorization": f"Bearer {key}"})
check("ListSpans status", res.status_code, 200)
spans = res.json().get("spans", []) if res.ok else []
sent = finished.get_finished_spans()
check("every span the agent made was stored", sorted(s["name"] for s in spans), sorted(s.name for s in sent))
roots = [s for s in spans if s["parent_id"] is None]
check("one root, the driver's main span", [s["name"] for s in roots], ["main"])
check("one trace", len({s["trace_id"] for s in spans}), 1)
check("every parent is a stored span", {s["parent_id"] for s in spans} - {s["span_id"] for s in spans}, {None})
check("statuses", {s["status"] for s in roots}, {"OK"})

exporter = GriptapeCloudObservabilityDriver.build_span_exporter(
    base_url=url, api_key=key, headers=driver.headers, structure_run_id=run_id
)
check("the exporter's verdict on Loom's answer", exporter.export(sent), SpanExportResult.SUCCESS)

checks.report("an agent's spans exported as a bare array (a success: 200) and listed as one trace")
