"""The griptape framework's own GriptapeCloudPromptDriver against Loom's chat
(loom:echo, offline): a plain reply, a streamed one, and a whole agent loop
with a client-side tool (echo answers `call <tool>_<activity> <json>` with that
tool call — the JSON is the activity's input — then the tool's result). Run by .ci/griptape-compat.ts."""
import logging
import os

from griptape.common import PromptStack
from griptape.drivers.prompt.griptape_cloud import GriptapeCloudPromptDriver
from griptape.structures import Agent
from griptape.tools import CalculatorTool

from checks import Checks

logging.getLogger("griptape").setLevel(logging.ERROR)  # the agent logs every step at INFO
checks = Checks("griptape prompt driver (loom:echo)")
check = checks.check


def driver(stream=False):
    return GriptapeCloudPromptDriver(base_url=os.environ["LOOM_URL"], api_key=os.environ["LOOM_KEY"], stream=stream)


stack = PromptStack()
stack.add_user_message("Hello there")
reply = driver().run(stack)
check("reply text", reply.to_text(), "Echo: Hello there")
check("reply has usage", reply.usage.input_tokens is not None, True)
streamed = driver(stream=True).run(stack)
check("streamed text", streamed.to_text(), "Echo: Hello there")

agent = Agent(prompt_driver=driver(), tools=[CalculatorTool()])
agent.run('call CalculatorTool_calculate {"expression": "6*7"}')
check("agent loop answer contains the tool's result", "42" in agent.output.to_text(), True)

checks.report("reply, stream, agent loop with a client-side tool")
