"""The griptape framework's own GriptapeCloudConversationMemoryDriver against
Loom: an Agent (GriptapeCloudPromptDriver, loom:echo) with conversation memory
on a thread found by alias runs twice; a fresh driver on the same alias then
loads both runs, inputs and outputs as artifacts. Run by .ci/griptape-compat.ts."""
import logging
import os
import uuid

from griptape.artifacts import TextArtifact
from griptape.drivers.memory.conversation.griptape_cloud import GriptapeCloudConversationMemoryDriver
from griptape.drivers.prompt.griptape_cloud import GriptapeCloudPromptDriver
from griptape.memory.structure import ConversationMemory
from griptape.structures import Agent

from checks import Checks

logging.getLogger("griptape").setLevel(logging.ERROR)  # the agent logs every step at INFO
url, key = os.environ["LOOM_URL"], os.environ["LOOM_KEY"]
checks = Checks("griptape conversation memory driver")
check = checks.check
alias = f"compat-{uuid.uuid4().hex[:8]}"


def memory_driver():
    return GriptapeCloudConversationMemoryDriver(base_url=url, api_key=key, alias=alias)


agent = Agent(
    prompt_driver=GriptapeCloudPromptDriver(base_url=url, api_key=key),
    conversation_memory=ConversationMemory(conversation_memory_driver=memory_driver()),
)
outputs = []
for prompt in ["My name is Ada.", "What is my name?"]:
    agent.run(prompt)
    outputs.append(agent.output.to_text())
check("the agent answered", all(o.startswith("Echo:") for o in outputs), True)

runs, _ = memory_driver().load()
check("runs loaded by a fresh driver", len(runs), 2)
check("inputs", [r.input.value for r in runs], ["My name is Ada.", "What is my name?"])
check("outputs", [r.output.value for r in runs], outputs)
check("artifact types", {type(a) for r in runs for a in (r.input, r.output)}, {TextArtifact})
check("run ids kept", [r.id for r in runs], [r.id for r in agent.conversation_memory.runs])

checks.report("an agent run twice on a thread by alias; a fresh driver loads both runs")
