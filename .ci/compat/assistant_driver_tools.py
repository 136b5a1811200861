"""The griptape framework's own GriptapeCloudAssistantDriver against Loom: a
run of an assistant whose tool is backed by a real MCP server, the model a
local OpenAI-compatible server scripted to call the tool's `add` activity and
then to answer with the tool's result. Plain and streamed; every event the
driver reads must deserialize (it raises on any extra or missing key), the
actions-subtask events among them. Run by .ci/griptape-assistant-tools.ts."""
import logging
import os

from griptape.artifacts import TextArtifact
from griptape.drivers.assistant.griptape_cloud import GriptapeCloudAssistantDriver
from griptape.events import EventBus, EventListener

from checks import Checks

logging.getLogger("griptape").setLevel(logging.ERROR)
checks = Checks("griptape assistant driver with a tool (MCP)")
check = checks.check
seen = []
EventBus.add_event_listener(EventListener(on_event=lambda event: seen.append(type(event).__name__)))

for stream in (False, True):
    seen.clear()
    driver = GriptapeCloudAssistantDriver(
        base_url=os.environ["LOOM_URL"],
        api_key=os.environ["LOOM_KEY"],
        assistant_id=os.environ["LOOM_ASSISTANT"],
        stream=stream,
    )
    output = driver.run(TextArtifact("What is 19 + 23?"))
    what = "streamed" if stream else "plain"
    check(f"{what}: the answer built from the tool's result", output.value, "The answer is 42.")
    for event in ["StartActionsSubtaskEvent", "FinishActionsSubtaskEvent", "FinishStructureRunEvent"]:
        check(f"{what}: {event} received", event in seen, True)
    if stream:
        check("streamed: ActionChunkEvent received", "ActionChunkEvent" in seen, True)

checks.report("a run that calls an MCP tool, plain and streamed")
