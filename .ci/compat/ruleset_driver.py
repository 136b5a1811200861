"""The griptape framework's own GriptapeCloudRulesetDriver against Loom: a
ruleset made through the HTTP API (alias, a string rule, a JSON-schema rule)
loads by alias as griptape's Rule and JsonSchemaRule. Run by .ci/griptape-compat.ts."""
import os
import uuid

import requests
from griptape.drivers.ruleset.griptape_cloud import GriptapeCloudRulesetDriver
from griptape.rules import JsonSchemaRule, Rule, Ruleset

from checks import Checks

url, key = os.environ["LOOM_URL"], os.environ["LOOM_KEY"]
checks = Checks("griptape ruleset driver")
check = checks.check


def post(path, body):
    res = requests.post(f"{url}/api/{path}", json=body, headers={"Authorization": f"Bearer {key}"})
    res.raise_for_status()
    return res.json()


alias = f"compat-{uuid.uuid4().hex[:8]}"
text = "Answer in one short sentence."
schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
rule_ids = [post("rules", {"name": "brevity", "rule": text})["rule_id"], post("rules", {"name": "format", "rule": schema})["rule_id"]]
post("rulesets", {"name": "compat", "alias": alias, "rule_ids": rule_ids})

ruleset = Ruleset(name=alias, ruleset_driver=GriptapeCloudRulesetDriver(base_url=url, api_key=key))
check("rule kinds in order", [type(r) for r in ruleset.rules], [Rule, JsonSchemaRule])
check("string rule", [r.value for r in ruleset.rules if type(r) is Rule], [text])
check("JSON-schema rule", [r.value for r in ruleset.rules if type(r) is JsonSchemaRule], [schema])
check(
    "rules carry their Loom ids",
    [r.meta.get("griptape_cloud_rule_id") for r in ruleset.rules],
    rule_ids,
)
missing = Ruleset(name=f"{alias}-none", ruleset_driver=GriptapeCloudRulesetDriver(base_url=url, api_key=key, raise_not_found=False))
check("an unknown alias loads no rules", list(missing.rules), [])

checks.report("string and JSON-schema rules loaded by alias; unknown alias empty")
