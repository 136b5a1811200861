"""The griptape framework's own GriptapeCloudToolTool against Loom: a Loom tool
backed by a real MCP server (started by .ci/griptape-compat.ts; its URL in
MCP_URL) builds its activities from /api/tools/{id}/openapi, an agent's native
tool schema can be made of them, and calling one returns the server's answer
as griptape's own artifact. Run by .ci/griptape-compat.ts."""
import os

import requests
from griptape.artifacts import ErrorArtifact, ImageArtifact, JsonArtifact, TextArtifact
from griptape.tools import GriptapeCloudToolTool

from checks import Checks

url, key, mcp_url = os.environ["LOOM_URL"], os.environ["LOOM_KEY"], os.environ["MCP_URL"]
checks = Checks("griptape GriptapeCloudToolTool")
check = checks.check

res = requests.post(
    f"{url}/api/tools",
    json={"name": "Test Tools", "server": {"url": mcp_url, "transport": "mcp", "headers": {}}},
    headers={"Authorization": f"Bearer {key}"},
)
res.raise_for_status()
tool_id = res.json()["tool_id"]

tool = GriptapeCloudToolTool(tool_id=tool_id, base_url=url, api_key=key)
check("tool name from info.title", tool.name, "TestTools")
names = [tool.activity_name(a) for a in tool.activities()]
check("activities from /openapi", sorted(names), sorted(["add", "json", "image", "fail", "hang", "several", "say_hello", "huge"]))
add = tool.find_activity("add")
check("description, Jinja-safe", tool.activity_description(add), "Adds two numbers: { a } plus { b }.")
# What a prompt driver builds for native tool calling: a name griptape accepts and the input's JSON schema.
check("native tool name", tool.to_native_tool_name(add), "TestTools_add")
schema = tool.to_activity_json_schema(add, "add")
check("input schema properties", sorted(schema["properties"]), ["a", "b"])

result = add({"values": {"a": 2, "b": 3}})
check("add answers a TextArtifact", type(result), TextArtifact)
check("add's answer", result.value, "5")
result = tool.find_activity("json")({"values": {}})
check("json answers a JsonArtifact", type(result), JsonArtifact)
check("json's answer", result.value, {"items": [{"id": 1, "name": "one"}], "total": 1})
result = tool.find_activity("image")({"values": {}})
check("image answers an ImageArtifact", type(result), ImageArtifact)
check("image size and format", (result.format, result.width, result.height), ("png", 3, 2))
result = tool.find_activity("fail")({"values": {}})
check("fail answers an ErrorArtifact", type(result), ErrorArtifact)
check("fail's message", result.value, "boom: the tool failed")

checks.report("activities from /openapi; text, JSON, image and error results as griptape artifacts")
