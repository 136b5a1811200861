import { useState } from "preact/hooks";
import { LocationProvider, Route, Router } from "preact-iso";
import { ApiKeys } from "./api-keys/api-keys.tsx";
import { AssistantPage } from "./assistants/assistant-page.tsx";
import { Assistants } from "./assistants/assistants.tsx";
import { Chat } from "./chat/chat.tsx";
import { BucketFiles } from "./files/bucket-files.tsx";
import { Buckets } from "./files/buckets.tsx";
import { KnowledgeBasePage } from "./knowledge/knowledge-base.tsx";
import { KnowledgeBases } from "./knowledge/knowledge-bases.tsx";
import { RulesetPage } from "./rulesets/ruleset-page.tsx";
import { Rulesets } from "./rulesets/rulesets.tsx";
import { Run } from "./runs/run.tsx";
import { Runs } from "./runs/runs.tsx";
import { forgetKey, savedKey, saveKey } from "./sign-in/session.ts";
import { SignIn } from "./sign-in/sign-in.tsx";
import { ToolPage } from "./tools/tool.tsx";
import { Tools } from "./tools/tools.tsx";

/** Signed out: the sign-in form. Signed in: the navigation and the screen the URL names. */
export function App() {
  const [apiKey, setApiKey] = useState(savedKey);

  if (!apiKey)
    return (
      <SignIn
        onSignedIn={(key) => {
          saveKey(key);
          setApiKey(key);
        }}
      />
    );

  const signOut = () => {
    forgetKey();
    setApiKey(null);
  };
  return (
    <LocationProvider scope="/console">
      <header class="top">
        <span class="brand">Loom</span>
        <nav aria-label="Main">
          <a href="/console/assistants">Assistants</a>
          <a href="/console/chat">Chat</a>
          <a href="/console/runs">Runs</a>
          <a href="/console/files">Files</a>
          <a href="/console/knowledge">Knowledge</a>
          <a href="/console/rulesets">Rulesets</a>
          <a href="/console/tools">Tools</a>
          <a href="/console/api-keys">API keys</a>
        </nav>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        <Router>
          <Route path="/console/assistants" component={() => <Assistants apiKey={apiKey} />} />
          <Route
            path="/console/assistants/:assistantId"
            component={({ assistantId }: { assistantId: string }) => (
              <AssistantPage apiKey={apiKey} assistantId={assistantId} />
            )}
          />
          <Route
            path="/console/chat/:threadId?"
            component={({ threadId }: { threadId?: string }) => <Chat apiKey={apiKey} threadId={threadId} />}
          />
          <Route path="/console/runs" component={() => <Runs apiKey={apiKey} />} />
          <Route
            path="/console/runs/:runId"
            component={({ runId }: { runId: string }) => <Run apiKey={apiKey} runId={runId} />}
          />
          <Route path="/console/files" component={() => <Buckets apiKey={apiKey} />} />
          <Route
            path="/console/files/:bucketId"
            component={({ bucketId }: { bucketId: string }) => <BucketFiles apiKey={apiKey} bucketId={bucketId} />}
          />
          <Route path="/console/knowledge" component={() => <KnowledgeBases apiKey={apiKey} />} />
          <Route
            path="/console/knowledge/:knowledgeBaseId"
            component={({ knowledgeBaseId }: { knowledgeBaseId: string }) => (
              <KnowledgeBasePage apiKey={apiKey} knowledgeBaseId={knowledgeBaseId} />
            )}
          />
          <Route path="/console/rulesets" component={() => <Rulesets apiKey={apiKey} />} />
          <Route
            path="/console/rulesets/:rulesetId"
            component={({ rulesetId }: { rulesetId: string }) => <RulesetPage apiKey={apiKey} rulesetId={rulesetId} />}
          />
          <Route path="/console/tools" component={() => <Tools apiKey={apiKey} />} />
          <Route
            path="/console/tools/:toolId"
            component={({ toolId }: { toolId: string }) => <ToolPage apiKey={apiKey} toolId={toolId} />}
          />
          <Route path="/console/api-keys" component={() => <ApiKeys apiKey={apiKey} />} />
          <Route default component={() => <Assistants apiKey={apiKey} />} />
        </Router>
      </main>
    </LocationProvider>
  );
}
