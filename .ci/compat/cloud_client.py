"""The generated griptape-cloud-client 0.2.0 against Loom: every thread,
message, ruleset, rule, tool, secret, knowledge base (with their queries and
their searches, answered by the scripted model .ci/griptape-compat.ts
configures), knowledge base job and data connector operation and GetUser answer with the status code the
client documents and a body it parses (a missing key raises KeyError in its
from_dict). Run by .ci/griptape-compat.ts."""
import os
import uuid

from griptape_cloud_client import AuthenticatedClient
from griptape_cloud_client.api.data_connectors import (
    create_data_connector,
    delete_data_connector,
    get_data_connector,
    list_data_connectors,
    update_data_connector,
)
from griptape_cloud_client.api.knowledge_base_jobs import (
    cancel_knowledge_base_job,
    create_knowledge_base_job,
    get_knowledge_base_job,
    list_knowledge_base_jobs,
)
from griptape_cloud_client.api.knowledge_bases import (
    create_knowledge_base,
    delete_knowledge_base,
    get_knowledge_base,
    get_knowledge_base_query,
    get_knowledge_base_search,
    list_knowledge_base_queries,
    list_knowledge_base_searches,
    list_knowledge_bases,
    query_knowledge_base,
    search_knowledge_base,
    update_knowledge_base,
)
from griptape_cloud_client.api.messages import create_message, delete_message, get_message, list_messages, update_message
from griptape_cloud_client.api.rules import create_rule, delete_rule, get_rule, list_rules, update_rule
from griptape_cloud_client.api.rulesets import create_ruleset, delete_ruleset, get_ruleset, list_rulesets, update_ruleset
from griptape_cloud_client.api.secrets import create_secret, delete_secret, get_secret, list_secrets, update_secret
from griptape_cloud_client.api.tools import create_tool, delete_tool, get_tool, list_tools, update_tool
from griptape_cloud_client.api.threads import create_thread, delete_thread, get_thread, list_threads, update_thread
from griptape_cloud_client.api.users import get_user
from griptape_cloud_client.models import (
    CreateDataConnectorRequestContent,
    CreateKnowledgeBaseRequestContent,
    QueryKnowledgeBaseRequestContent,
    SearchKnowledgeBaseRequestContent,
    CreateMessageRequestContent,
    CreateRuleRequestContent,
    CreateRulesetRequestContent,
    CreateSecretRequestContent,
    CreateThreadRequestContent,
    CreateToolRequestContent,
    EnvVar,
    DataConnectorConfigInputUnionType5,
    DataConnectorConfigUnionType5,
    DataLakeConnectorInput,
    EnvVarSource,
    GTCPGVectorKnowledgeBaseDetail,
    GTCPGVectorKnowledgeBaseInput,
    KnowledgeBaseConfigInputUnionType1,
    KnowledgeBaseConfigUnionType1,
    KnowledgeBaseJobStatus,
    MessageInput,
    Metadata,
    UpdateDataConnectorRequestContent,
    UpdateKnowledgeBaseRequestContent,
    UpdateMessageRequestContent,
    UpdateRuleRequestContent,
    UpdateRulesetRequestContent,
    UpdateSecretRequestContent,
    UpdateThreadRequestContent,
    UpdateToolRequestContent,
)

from checks import Checks

# The client's paths start with /api, so its base URL is the server's root.
client = AuthenticatedClient(base_url=os.environ["LOOM_URL"], token=os.environ["LOOM_KEY"])
checks = Checks("griptape-cloud-client 0.2.0")
check = checks.check
called = []


def call(operation, expected_status, **kwargs):
    """One operation: the status it documents for success, and for a body a
    parsed model of the operation's own response type (not an error body)."""
    name = operation.__name__.rsplit(".", 1)[-1]
    called.append(name)
    try:
        res = operation.sync_detailed(client=client, **kwargs)
    except Exception as error:  # the client's from_dict raising on a missing key
        checks.fail(f"{name}: {type(error).__name__}: {error}")
        return None
    check(f"{name} status", res.status_code, expected_status)
    if expected_status == 204:
        return None
    if res.parsed is None or type(res.parsed).__name__.endswith("ErrorResponseContent"):
        checks.fail(f"{name}: not parsed as its response ({res.content[:200]!r})")
        return None
    return res.parsed


def metadata(**values):
    return Metadata.from_dict(values)


suffix = uuid.uuid4().hex[:8]

# GetUser, of the key's own user (ListUsers is not among the client's operations)
me = client.get_httpx_client().get("/api/users").json()["users"][0]["user_id"]
user = call(get_user, 200, user_id=me)
check("GetUser's user", user and user.user_id, me)

# Threads and messages
thread = call(
    create_thread,
    201,
    body=CreateThreadRequestContent(
        name="compat thread",
        alias=f"compat-{suffix}",
        metadata=metadata(topic="compat"),
        messages=[MessageInput(input_="first question", output="first answer", metadata=metadata(run_id="r1"))],
    ),
)
if thread:
    tid = thread.thread_id
    check("created thread's message_count", thread.message_count, 1)
    got = call(get_thread, 200, thread_id=tid)
    check("got thread's metadata", got and got.metadata.to_dict(), {"topic": "compat"})
    listed = call(list_threads, 200, alias=f"compat-{suffix}")
    check("threads listed by alias", listed and [t.thread_id for t in listed.threads], [tid])
    updated = call(update_thread, 200, thread_id=tid, body=UpdateThreadRequestContent(name="renamed", metadata=metadata(topic="renamed")))
    check("updated thread's name", updated and updated.name, "renamed")

    message = call(create_message, 201, thread_id=tid, body=CreateMessageRequestContent(input_="second question", output="second answer"))
    check("created message's index", message and message.index, 1)
    messages = call(list_messages, 200, thread_id=tid)
    check("messages in order", messages and [m.input_ for m in messages.messages], ["first question", "second question"])
    if message:
        mid = message.message_id
        got = call(get_message, 200, message_id=mid)
        check("got message's output", got and got.output, "second answer")
        updated = call(update_message, 200, message_id=mid, body=UpdateMessageRequestContent(output="better answer"))
        check("updated message's output", updated and updated.output, "better answer")
        call(delete_message, 204, message_id=mid)
        check("deleted message is gone", get_message.sync_detailed(client=client, message_id=mid).status_code, 404)

    call(delete_thread, 204, thread_id=tid)
    check("deleted thread is gone", get_thread.sync_detailed(client=client, thread_id=tid).status_code, 404)

# Rulesets and rules
rule = call(create_rule, 201, body=CreateRuleRequestContent(name="brevity", rule="Be brief.", metadata=metadata(kind="style")))
ruleset = rule and call(
    create_ruleset, 201, body=CreateRulesetRequestContent(name="compat ruleset", alias=f"compat-{suffix}", rule_ids=[rule.rule_id])
)
if rule and ruleset:
    rid, sid = rule.rule_id, ruleset.ruleset_id
    got = call(get_rule, 200, rule_id=rid)
    check("got rule", got and got.rule, "Be brief.")
    rules = call(list_rules, 200, ruleset_id=sid)
    check("rules of the ruleset", rules and [r.rule_id for r in rules.rules], [rid])
    updated = call(update_rule, 200, rule_id=rid, body=UpdateRuleRequestContent(rule="Be very brief."))
    check("updated rule", updated and updated.rule, "Be very brief.")

    got = call(get_ruleset, 200, ruleset_id=sid)
    check("got ruleset's rule_ids", got and got.rule_ids, [rid])
    listed = call(list_rulesets, 200, alias=f"compat-{suffix}")
    check("rulesets listed by alias", listed and [r.ruleset_id for r in listed.rulesets], [sid])
    updated = call(update_ruleset, 200, ruleset_id=sid, body=UpdateRulesetRequestContent(description="for CI", rule_ids=[]))
    check("updated ruleset", updated and (updated.description, updated.rule_ids), ("for CI", []))

    call(delete_ruleset, 204, ruleset_id=sid)
    check("deleted ruleset is gone", get_ruleset.sync_detailed(client=client, ruleset_id=sid).status_code, 404)
    call(delete_rule, 204, rule_id=rid)
    check("deleted rule is gone", get_rule.sync_detailed(client=client, rule_id=rid).status_code, 404)

# Tools: the client knows nothing of Loom's `server`, sent as an additional property and read back from one
body = CreateToolRequestContent(name="compat tool", env_vars=[EnvVar(name="MODE", value="fast", source=EnvVarSource.MANUAL)])
body.additional_properties["server"] = {"url": "http://127.0.0.1:9/mcp", "transport": "mcp", "headers": {}}
tool = call(create_tool, 201, body=body)
if tool:
    toolid = tool.tool_id
    check("created tool's code", tool.code.to_dict(), {"default": {}})
    check("created tool's server", tool.additional_properties.get("server", {}).get("url"), "http://127.0.0.1:9/mcp")
    got = call(get_tool, 200, tool_id=toolid)
    check("got tool's env_vars", got and [(e.name, e.value, e.source.value) for e in got.env_vars], [("MODE", "fast", "manual")])
    listed = call(list_tools, 200, page_size=100)
    check("tool listed", listed and toolid in [t.tool_id for t in listed.tools], True)
    updated = call(update_tool, 200, tool_id=toolid, body=UpdateToolRequestContent(description="for CI"))
    check("updated tool's description", updated and updated.description, "for CI")
    call(delete_tool, 204, tool_id=toolid)
    check("deleted tool is gone", get_tool.sync_detailed(client=client, tool_id=toolid).status_code, 404)

# Secrets: the value goes in and never comes back, in any answer the client parses
secret_value = f"compat-secret-{uuid.uuid4()}"


def without_value(what, detail):
    check(f"{what} has no value", detail is not None and "value" not in detail.to_dict() and secret_value not in repr(detail.to_dict()), True)


secret = call(create_secret, 201, body=CreateSecretRequestContent(name="compat secret", value=secret_value))
if secret:
    secretid = secret.secret_id
    without_value("created secret", secret)
    check("created secret's last_used", secret.last_used, secret.created_at)
    got = call(get_secret, 200, secret_id=secretid)
    without_value("got secret", got)
    listed = call(list_secrets, 200, page_size=100)
    check("secret listed", listed and secretid in [s.secret_id for s in listed.secrets], True)
    for listed_secret in listed.secrets if listed else []:
        without_value("listed secret", listed_secret)
    updated = call(update_secret, 200, secret_id=secretid, body=UpdateSecretRequestContent(name="renamed", value=f"{secret_value}-2"))
    check("updated secret's name", updated and updated.name, "renamed")
    without_value("updated secret", updated)
    # A tool's env var names the secret by its id.
    ref = EnvVar(name="TOKEN", value=secretid, source=EnvVarSource.SECRET_REF)
    tool = call(create_tool, 201, body=CreateToolRequestContent(name="uses a secret", env_vars=[ref]))
    check("tool's secret_ref", tool and [(e.value, e.source.value) for e in tool.env_vars], [(secretid, "secret_ref")])
    if tool:
        call(delete_tool, 204, tool_id=tool.tool_id)
    call(delete_secret, 204, secret_id=secretid)
    check("deleted secret is gone", get_secret.sync_detailed(client=client, secret_id=secretid).status_code, 404)

# Knowledge bases: Loom's own index is the gtc_pg_vector kind, which the client's config union parses as its
# second member (the first, pg_vector, needs a key Loom never sends); no embedding model here: keyword search only
own_index = KnowledgeBaseConfigInputUnionType1(gtc_pg_vector=GTCPGVectorKnowledgeBaseInput())
bucket = os.environ["LOOM_BUCKET"]
kb = call(
    create_knowledge_base,
    201,
    body=CreateKnowledgeBaseRequestContent(
        name="compat knowledge", type_="gtc_pg_vector", config=own_index, asset_paths=[f"{bucket}/docs/", f"{bucket}/readme.md"]
    ),
)
# Data connectors: Loom's one kind is data_lake (a bucket of the organization), the last member of the client's union
connector = call(
    create_data_connector,
    201,
    body=CreateDataConnectorRequestContent(
        name="compat connector",
        type_="data_lake",
        config=DataConnectorConfigInputUnionType5(data_lake=DataLakeConnectorInput(bucket_id=bucket, asset_paths=["docs/"])),
    ),
)
if connector:
    dcid = connector.data_connector_id
    check("created connector's config kind", type(connector.config), DataConnectorConfigUnionType5)
    check("created connector's source", (connector.config.data_lake.bucket_id, connector.config.data_lake.asset_paths), (bucket, ["docs/"]))
    got = call(get_data_connector, 200, data_connector_id=dcid)
    check("got connector's type", got and got.type_, "data_lake")
    listed = call(list_data_connectors, 200, page_size=100)
    check("connector listed", listed and dcid in [c.data_connector_id for c in listed.data_connectors], True)
    updated = call(update_data_connector, 200, data_connector_id=dcid, body=UpdateDataConnectorRequestContent(description="for CI"))
    check("updated connector's description", updated and updated.description, "for CI")
    # A knowledge base names it in Loom's data_connector_ids, sent and read back as an additional property
    body = CreateKnowledgeBaseRequestContent(name="fed by a connector", type_="gtc_pg_vector", config=own_index)
    body.additional_properties["data_connector_ids"] = [dcid]
    fed = call(create_knowledge_base, 201, body=body)
    check("knowledge base's data_connector_ids", fed and fed.additional_properties.get("data_connector_ids"), [dcid])
    call(delete_data_connector, 204, data_connector_id=dcid)
    check("deleted connector is gone", get_data_connector.sync_detailed(client=client, data_connector_id=dcid).status_code, 404)
    if fed:
        after = call(get_knowledge_base, 200, knowledge_base_id=fed.knowledge_base_id)
        check("knowledge base no longer names the deleted connector", after and after.additional_properties.get("data_connector_ids"), [])
        call(delete_knowledge_base, 204, knowledge_base_id=fed.knowledge_base_id)

if kb:
    kbid = kb.knowledge_base_id
    check("created knowledge base's config kind", type(kb.config), KnowledgeBaseConfigUnionType1)
    check("created knowledge base's index", isinstance(kb.config.gtc_pg_vector, GTCPGVectorKnowledgeBaseDetail), True)
    check("created knowledge base's embedding model", kb.config.gtc_pg_vector.embedding_model, None)
    check("created knowledge base's asset_paths", kb.asset_paths, [f"{bucket}/docs/", f"{bucket}/readme.md"])
    got = call(get_knowledge_base, 200, knowledge_base_id=kbid)
    check("got knowledge base's type", got and got.type_, "gtc_pg_vector")
    listed = call(list_knowledge_bases, 200, page_size=100)
    check("knowledge base listed", listed and kbid in [k.knowledge_base_id for k in listed.knowledge_bases], True)
    updated = call(
        update_knowledge_base,
        200,
        knowledge_base_id=kbid,
        body=UpdateKnowledgeBaseRequestContent(type_="gtc_pg_vector", config=own_index, description="for CI", asset_paths=[f"{bucket}/"]),
    )
    check("updated knowledge base", updated and (updated.description, updated.asset_paths), ("for CI", [f"{bucket}/"]))
    # Nothing ingested: an empty list of entries, in the shape the client parses; kept and listed.
    asked = call(
        query_knowledge_base, 200, knowledge_base_id=kbid, body=QueryKnowledgeBaseRequestContent(query="anything", query_args={"count": 3})
    )
    check("query's entries", asked and asked.entries, [])
    kept = asked and call(get_knowledge_base_query, 200, knowledge_base_query_id=asked.knowledge_base_query_id)
    check("kept query", kept and kept.query, "anything")
    queries = call(list_knowledge_base_queries, 200, knowledge_base_id=kbid, page_size=10)
    check("queries listed", queries and [q.knowledge_base_query_id for q in queries.knowledge_base_queries], [asked and asked.knowledge_base_query_id])
    # A search: the model's answer as `result`; kept and listed.
    searched = call(search_knowledge_base, 200, knowledge_base_id=kbid, body=SearchKnowledgeBaseRequestContent(query="anything"))
    check("search's result", searched and searched.result, "From the knowledge base: the answer [1].")
    kept_search = searched and call(get_knowledge_base_search, 200, knowledge_base_search_id=searched.knowledge_base_search_id)
    check("kept search", kept_search and (kept_search.query, kept_search.result), ("anything", "From the knowledge base: the answer [1]."))
    searches = call(list_knowledge_base_searches, 200, knowledge_base_id=kbid, page_size=10)
    check(
        "searches listed",
        searches and [q.knowledge_base_search_id for q in searches.knowledge_base_searches],
        [searched and searched.knowledge_base_search_id],
    )

    # Ingest jobs: queued with 202; got, listed (with the status filter the client sends), cancelled
    job = call(create_knowledge_base_job, 202, knowledge_base_id=kbid)
    if job:
        jobid = job.knowledge_base_job_id
        check("created job's status", job.status, KnowledgeBaseJobStatus.QUEUED)
        got_job = call(get_knowledge_base_job, 200, knowledge_base_job_id=jobid)
        check("got job's knowledge base", got_job and got_job.knowledge_base_id, kbid)
        jobs = call(list_knowledge_base_jobs, 200, knowledge_base_id=kbid, page_size=100, status=list(KnowledgeBaseJobStatus))
        check("job listed", jobs and [j.knowledge_base_job_id for j in jobs.knowledge_base_jobs], [jobid])
        cancelled = call(cancel_knowledge_base_job, 200, knowledge_base_job_id=jobid)
        check("cancelled job's status", cancelled and cancelled.status.value in ("CANCELLED", "RUNNING", "SUCCEEDED"), True)
    call(delete_knowledge_base, 204, knowledge_base_id=kbid)
    check("deleted knowledge base is gone", get_knowledge_base.sync_detailed(client=client, knowledge_base_id=kbid).status_code, 404)

checks.report(f"{len(set(called))} operations ({', '.join(sorted(set(called)))})")
